"""Does hostile student code end in a complete report, within its limits, changing no one else's grade?"""
import hashlib
import json
import socket
import subprocess
import sys
import time

import pytest

from support.capabilities import needs_root

from support.hand_ins import header

from support.measures import short_memory

from support.paths import REFERENCE, ROOT, SUBMISSIONS

from support.rules_off import GRADER_WITHOUT_RULES
from grader.exercises.attention import MAX_SCORE, PART
from grader.checks import checks_for
import grader.grade as grade_module
from grader.grade import default_limits, grade_submission
from grader.grade_all.folder import grade_class
from grader.exercises.attention import EXERCISE

pytestmark = pytest.mark.sandbox

HOSTILE = sorted((SUBMISSIONS / "hostile").glob("*.py"))
ALL_CHECK_IDS = {c.id for c in checks_for(exercise=EXERCISE)}


@pytest.fixture(scope="module")
def listener():
    """A server on loopback that a sandboxed submission must not be able to reach."""
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", 47291))
    server.listen()
    yield server
    server.close()


@pytest.fixture(scope="module")
def honest_grading() -> tuple[dict, float]:
    """An honest grading here, now: its report, and its wall time, the ruler of this machine's speed under its
    present load."""
    started = time.monotonic()
    report = grade_submission(REFERENCE, limits=short_memory())
    return report, time.monotonic() - started


@pytest.mark.usefixtures("rules_bypassed")  # the sandbox on its own, as if a trick got past the rules
@pytest.mark.parametrize("path", HOSTILE, ids=[p.stem for p in HOSTILE])
def test_hostile_submission_gets_a_complete_report_within_its_limit(path, listener, honest_grading):
    _, honest_seconds = honest_grading
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    started = time.monotonic()
    report = grade_submission(path, limits=short_memory())
    elapsed = time.monotonic() - started
    assert {c["id"] for c in report["checks"]} >= ALL_CHECK_IDS, "every check must have a row"
    # a ratio, not a fixed margin: the limit waited out, plus what the same grading work costs on this machine now
    assert elapsed < default_limits().submission_seconds + 2 * honest_seconds, (elapsed, honest_seconds)
    expected, affected = header(path, "expect") or "not-implemented", header(path, "affected") or "both"
    parts = {"both": ["sdpa", "mha"], "none": [], "twin": []}.get(affected, [affected])
    if affected == "twin":  # tricks on top of wrong code must earn exactly what the wrong code earns
        twin = grade_submission(path.parent / header(path, "twin"), limits=short_memory())
        assert report["score"] == twin["score"], (report["score"], twin["score"])
    for part in parts:
        lost = [c for c in report["checks"] if c["part"] == part and c["points"] > 0]
        assert not lost, f"{path.name}: {part} should score 0, got points for {[c['id'] for c in lost]}"
    if affected == "none":  # these files implement Part 1 only, correctly
        assert all(c["passed"] for c in report["checks"] if c["part"] == "sdpa"), json.dumps(report["checks"])[:3000]
    if expected not in ("-", "none"):
        assert expected in report["mistakes"], f"{path.name}: expected {expected}, got {report['mistakes']}"
    assert hashlib.sha256(path.read_bytes()).hexdigest() == digest, "grading must never modify a submission"


def test_the_solutions_reader_finds_the_solutions_outside_the_sandbox():
    """The positive control of hostile/read_solutions.py: unconfined, from the repo, it borrows the reference."""
    hostile = SUBMISSIONS / "hostile" / "read_solutions.py"
    result = subprocess.run([sys.executable, "-c", "import runpy, sys; found = runpy.run_path(sys.argv[1])['_reference']();"
                             "print(found['scaled_dot_product_attention'].__code__.co_filename)", str(hostile)],
                            cwd=ROOT / "tests", capture_output=True, text=True, timeout=120)
    assert result.stdout.strip() == "<string>" and result.returncode == 0, result.stderr[-2000:]


def test_memory_bomb_is_stopped_by_the_limit_not_by_the_machine(tmp_path):
    """1 GiB fits this machine easily; under a 512 MiB limit the same allocation must fail."""
    bomb = tmp_path / "bomb.py"
    bomb.write_text("import torch\n\ndef scaled_dot_product_attention(Q, K, V, is_causal=True):\n"
                    "    big = torch.ones(1 << 30, dtype=torch.uint8)\n    return big, big\n")
    unconfined = subprocess.run([sys.executable, "-c", "import torch; print(int(torch.ones(1 << 30, dtype=torch.uint8).sum()))"],
                                capture_output=True, text=True, timeout=120)
    assert unconfined.stdout.strip() == str(1 << 30), "the machine itself can afford the allocation"
    report = grade_submission(bomb, limits=short_memory())
    assert "memory-limit" in report["mistakes"]
    assert all(c["points"] == 0 for c in report["checks"] if c["part"] == "sdpa")


@needs_root("the full isolation layers need root (CI runs as root)")
def test_all_isolation_layers_are_in_place_as_root(honest_grading):
    report, _ = honest_grading
    assert "isolation_missing" not in report, report.get("isolation_missing")


@pytest.mark.usefixtures("rules_bypassed")
def test_hostile_neighbours_change_no_one_elses_grade(tmp_path, monkeypatch):
    monkeypatch.setattr(grade_module, "default_limits", short_memory)  # the bomb trips it at once: 8 calls, not 8 × 3 GiB
    for name in ("infinite_loop", "fork_bomb", "exit_in_function", "memory_bomb", "patched_comparisons"):
        (tmp_path / f"{name}.py").write_bytes((SUBMISSIONS / "hostile" / f"{name}.py").read_bytes())
    for n in range(2):  # students `honest-0`, `honest-1` (`<id>_...` would name student `<id>`, as zip_collect does)
        (tmp_path / f"honest-{n}.py").write_bytes(REFERENCE.read_bytes())
    reports = {r["student"]: r for r in grade_class(tmp_path, jobs=2)}
    assert len(reports) == 7
    assert reports["honest-0"]["score"] == reports["honest-1"]["score"] == MAX_SCORE


def test_cli_json_stays_clean_when_the_submission_prints(tmp_path):
    result = subprocess.run([*GRADER_WITHOUT_RULES, "grade", str(SUBMISSIONS / "hostile" / "huge_output.py"),
                             "--json"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0
    report = json.loads(result.stdout)
    # Part 1 floods stdout on every call (its probes time out); Part 2 is correct and scores in full
    assert report["score"] == PART["mha"].points and "x" * 100 not in result.stdout and "y" * 100 not in result.stderr
