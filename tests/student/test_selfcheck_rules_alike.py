"""Do both labs' public self-checks read the grading rules alike, and leave the second lab's honest code alone?

The rules are the grader's, the same for every exercise: a breach the first lab's self-check names, the second's
names too (source/selfcheck/rules.py is one source for both). The second lab's copy once lacked `private-torch` for
an import, the stand-in's name in text, `breakpoint` and `getattr` with a name in a string.
"""
from __future__ import annotations

import pytest

from support.paths import SUBMISSIONS
from support.public_selfcheck import load_public

pytestmark = pytest.mark.unit

GRADED = {"attention": "def scaled_dot_product_attention(Q, K, V, is_causal=True):",
          "kv_cache": "def repeat_kv(x, n_rep):"}
BREACHES = {  # a line in the first part's graded function -> the mistake both self-checks name
    "from torch import _C": "private-torch",
    'ok = str(x.device).startswith("me" + "ta")': "device-probing",
    "ok = x.is_meta": "device-probing",
    "breakpoint()": "introspection",
    'version = getattr(x, "_version")': "introspection",
    'torch.matmul = print': "tampering",
    "import os": "forbidden-import",
}
KV_CORRECT = sorted((SUBMISSIONS / "kv_cache" / "correct").glob("*.py"))


@pytest.fixture(scope="module")
def selfchecks():
    return {exercise: load_public(exercise)[0] for exercise in GRADED}


def breach(selfcheck, source: str, part: str) -> str | None:
    try:
        selfcheck.check_rules(part, {"__selfcheck_sources__": [source]})
    except selfcheck.SelfCheckFailure as failure:
        return failure.mistake
    return None


@pytest.mark.parametrize("line", BREACHES)
@pytest.mark.parametrize("exercise", GRADED)
def test_each_lab_names_the_same_breach(selfchecks, exercise, line):
    source = f"import torch\n{GRADED[exercise]}\n    {line}\n    return x\n"
    assert breach(selfchecks[exercise], source, "part1") == BREACHES[line]


@pytest.mark.parametrize("path", KV_CORRECT, ids=[p.stem for p in KV_CORRECT])
def test_no_rule_is_said_broken_in_the_second_labs_correct_code(selfchecks, path):
    selfcheck = selfchecks["kv_cache"]
    source = path.read_text(encoding="utf-8")
    assert [breach(selfcheck, source, part) for part in selfcheck.SELFCHECK_GRADED] == [None, None, None]
