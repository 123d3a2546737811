"""Red team of issue 42: state one part's code leaves in the worker for the other part reaches that part too.

The parts' checks run in one worker, sdpa's first: a definition that stores into a module-level variable (or a class)
changes what every definition reading it sees afterwards, with no call between them. A regrade that kept the reading
part's original verdict let a hand-in whose multi-head attention compensates, through such a variable, for the bug
the fix mends in sdpa show that fix as verified and take its credit, where a regrade of both parts finds the fix
breaks the other part and earns nothing (15.0 without the fix, 19.0 with --fix-credit 1 before the defence). The
other way round, a multi-head attention that answers wrongly once sdpa has run got its own fix verified by a regrade
of its part alone, where sdpa never ran (20.0 instead of 10.0).
"""
import json

import pytest

from support.paths import SUBMISSIONS
from grader.fixes import reach
from grader.grade import grade_submission
from grader.exercises.attention import EXERCISE

SHARED = '''import torch

STATE = {}

def scaled_dot_product_attention(Q, K, V, is_causal=True):
    scores = Q @ K.mT
    STATE["attend"] = scaled_dot_product_attention
    return scores.softmax(-1) @ V, scores

class MultiHeadAttention(torch.nn.Module):
    def forward(self, q, k, v):
        return STATE["attend"](q, k, v)[0]
'''

WRITES_INTO_THE_CLASS = '''import torch

def scaled_dot_product_attention(Q, K, V, is_causal=True):
    scores = Q @ K.mT
    MultiHeadAttention.scale = 8
    return scores.softmax(-1) @ V, scores

class MultiHeadAttention(torch.nn.Module):
    scale = 1

    def forward(self, q, k, v):
        return q * self.scale
'''


def edit(text: str, old: str, new: str) -> str:
    assert old in text
    return text.replace(old, new)


@pytest.mark.unit
@pytest.mark.parametrize("program", [SHARED, WRITES_INTO_THE_CLASS], ids=["module-variable", "class-attribute"])
def test_an_edit_of_a_part_that_writes_shared_state_reaches_the_part_that_reads_it(program):
    assert reach.parts_reached(program, edit(program, "Q @ K.mT", "Q @ K.mT / 8"), EXERCISE.graded_name) == {"sdpa", "mha"}


@pytest.mark.unit
def test_an_edit_of_the_reading_part_reaches_the_part_that_writes_what_it_reads():
    """Run alone, the reading part would not find what the writer leaves: the writer's checks run too."""
    assert reach.parts_reached(SHARED, edit(SHARED, "[0]\n", "[0] * 1\n"), EXERCISE.graded_name) == {"sdpa", "mha"}


@pytest.mark.unit
def test_names_local_to_each_part_are_not_shared_state():
    program = edit(SHARED, '        return STATE["attend"](q, k, v)[0]\n', "        scores = q.softmax(-1)\n        return scores\n")
    program = edit(program, '    STATE["attend"] = scaled_dot_product_attention\n', "")
    assert reach.parts_reached(program, edit(program, "Q @ K.mT", "Q @ K.mT / 8"), EXERCISE.graded_name) == {"sdpa"}


def _compensating() -> str:
    """The wrong-scale mutant (sdpa divides by d_k) whose multi-head attention calls sdpa through a module-level
    dict sdpa fills, with q multiplied by sqrt(head_dim) so that its own result is right: mending sdpa breaks it."""
    text = (SUBMISSIONS / "mutants" / "wrong-scale.py").read_text()
    text = edit(text, "@dataclass", "STATE = {}\n\n\n@dataclass")
    text = edit(text, "    return torch.matmul(p_attn, V), p_attn\n",
                '    STATE["attend"] = scaled_dot_product_attention\n    return torch.matmul(p_attn, V), p_attn\n')
    start = text.index("        # 注意力计算 QK^T / sqrt(head_dim)\n")
    end = text.index("        output = torch.matmul(scores, xv)\n") + len("        output = torch.matmul(scores, xv)\n")
    return text[:start] + ('        attend = STATE["attend"]\n'
                           '        output, _ = attend(xq * math.sqrt(self.head_dim), xk, xv, is_causal=self.is_causal)\n') \
        + text[end:]


@pytest.mark.sandbox
def test_a_fix_that_breaks_the_part_reading_its_state_earns_no_credit(monkeypatch, tmp_path):
    path = tmp_path / "compensating.py"
    path.write_text(_compensating())
    monkeypatch.delenv("ATTENTION_KIT_REPORT_CACHE", raising=False)
    report = grade_submission(path, fix_credit=1.0)
    assert report["fixes"] == [] and report["fix_credit"]["points"] == 0 and report["score"] == 15.0, \
        (report["score"], report["fixes"], report["fix_credit"])
    monkeypatch.setattr(reach, "parts_reached", lambda before, after, graded_name: {"sdpa", "mha"})
    assert json.dumps(grade_submission(path, fix_credit=1.0), sort_keys=True) == json.dumps(report, sort_keys=True)


def _wrong_after_sdpa_ran() -> str:
    """The dropout-lowercase mutant (its fix is in multi-head attention) whose multi-head attention returns zeros once
    sdpa has left a mark in a module-level list."""
    text = (SUBMISSIONS / "mutants" / "dropout-lowercase.py").read_text()
    text = edit(text, "@dataclass", "STATE = []\n\n\n@dataclass")
    text = edit(text, "    return torch.matmul(p_attn, V), p_attn\n", "    STATE.append(1)\n    return torch.matmul(p_attn, V), p_attn\n")
    return edit(text, "        output = self.resid_dropout(output)\n        return output\n",
                "        output = self.resid_dropout(output)\n        return output * 0 if STATE else output\n")


@pytest.mark.sandbox
def test_a_fix_of_the_reading_part_is_regraded_after_the_part_that_writes_what_it_reads(monkeypatch, tmp_path):
    path = tmp_path / "wrong_after_sdpa_ran.py"
    path.write_text(_wrong_after_sdpa_ran())
    monkeypatch.delenv("ATTENTION_KIT_REPORT_CACHE", raising=False)
    report = grade_submission(path, fix_credit=1.0)
    assert report["fixes"] == [] and report["fix_credit"]["points"] == 0 and report["score"] == 10.0, \
        (report["score"], report["fixes"], report["fix_credit"])
    monkeypatch.setattr(reach, "parts_reached", lambda before, after, graded_name: {"sdpa", "mha"})
    assert json.dumps(grade_submission(path, fix_credit=1.0), sort_keys=True) == json.dumps(report, sort_keys=True)
