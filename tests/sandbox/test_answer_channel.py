"""Does the parent read a worker's answers within its deadlines, and refuse forged ones before they cost it anything?

Student code runs in the worker process, so it can write any bytes onto the worker's pipe. The
hostile submissions in `submissions/forged_answers/` do; they are graded one after another in a child
process, so that each one's wall time, CPU time and peak memory are measured, and so that a defence that
fails (a hang, an exponential walk) fails the tests instead of hanging them.
"""
import io
import json
import os
import resource
import socket
import struct
import subprocess
import sys
import threading
import time
import zipfile
from collections import OrderedDict

import pytest
import torch

from support.measures import CpuTime

from support.paths import REFERENCE, ROOT, SUBMISSIONS

from support.rules_off import BYPASS_RULES, grader_without_rules
from grader.exercises.attention import MAX_SCORE
from grader.checks import diagnosis
from grader.sandbox import answers, frames, worker

pytestmark = pytest.mark.sandbox

FORGED = SUBMISSIONS / "forged_answers"
PARTS = ("sdpa", "mha")
FORGED_NAMES = ("stalled_frame", "shared_reference_dag", "tuple_key_dag", "deflate_bomb")

# Grades each (file, limits) in turn in one child and prints, as each ends, its report with what it cost this
# process: wall and CPU time, and the peak memory so far (a high-water mark: the honest file goes first, the
# deflate bomb right after it). One worker is started first, so the fork server's torch import is charged to
# no submission. One child for all of them: each would otherwise pay its own torch import and fork server.
GRADE_IN_CHILD = BYPASS_RULES + """
import json, resource, sys, time
from grader.sandbox.confinement import Limits
from grader.grade import default_limits, grade_submission
from grader.sandbox.worker_process import Worker
Worker("", default_limits(), False).close()
for name, path, overrides in json.loads(sys.argv[1]):
    limits = Limits(**{**default_limits().__dict__, **overrides})
    wall, cpu = time.monotonic(), time.process_time()
    report = grade_submission(path, limits=limits)
    print(json.dumps({"name": name, "report": report, "wall": time.monotonic() - wall,
                      "cpu": time.process_time() - cpu,
                      "peak_rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss << 10}), flush=True)
"""
# In the order graded; the limits each file is graded with (over the defaults).
CHILD_GRADINGS = {
    "honest": (REFERENCE, {}),
    "deflate_bomb": (FORGED / "deflate_bomb.py", {"probe_seconds": 60.0, "submission_seconds": 120.0}),
    "stalled_frame": (FORGED / "stalled_frame.py", {"probe_seconds": 2.0, "submission_seconds": 8.0}),
    "shared_reference_dag": (FORGED / "shared_reference_dag.py", {}),
    "tuple_key_dag": (FORGED / "tuple_key_dag.py", {}),
    "oversized_frame": (FORGED / "oversized_frame.py", {}),
    "honest_oversized_constant": (FORGED / "honest_oversized_constant.py", {}),
}
CHILD_GIVES_UP_AFTER = 600


@pytest.fixture(scope="module")
def graded_in_child() -> dict:
    """{name: what GRADE_IN_CHILD printed} for each grading that ended before the child was given up on."""
    plan = [(name, str(path), limits) for name, (path, limits) in CHILD_GRADINGS.items()]
    try:
        done = subprocess.run([sys.executable, "-c", GRADE_IN_CHILD, json.dumps(plan)], cwd=ROOT,
                              capture_output=True, text=True, timeout=CHILD_GIVES_UP_AFTER)
        printed, failure = done.stdout, None if done.returncode == 0 else done.stderr[-3000:]
    except subprocess.TimeoutExpired as expired:
        printed = expired.stdout.decode() if isinstance(expired.stdout, bytes) else expired.stdout or ""
        failure = f"the child was given up on after {CHILD_GIVES_UP_AFTER} s"
    results = {line["name"]: line for line in map(json.loads, printed.splitlines())}
    return {"results": results, "failure": failure}


def grading(graded_in_child: dict, name: str) -> dict:
    """One file's grading, or a failure saying it never ended (a hang, an exponential walk) and why."""
    if name not in graded_in_child["results"]:
        pytest.fail(f"grading {name} did not end: {graded_in_child['failure']}")
    return graded_in_child["results"][name]


def points(report: dict, part: str) -> float:
    return sum(c["points"] for c in report["checks"] if c["part"] == part)


def test_a_stalled_half_frame_ends_within_the_submission_limit(graded_in_child):
    """Part 1 writes a length header only, Part 2 a long header and 4 body bytes; both then sleep."""
    limits = CHILD_GRADINGS["stalled_frame"][1]
    honest, graded = grading(graded_in_child, "honest"), grading(graded_in_child, "stalled_frame")
    report = graded["report"]
    # a ratio in one run: the honest grading, in the same child, is the ruler of this machine's speed under its load
    assert graded["wall"] < limits["submission_seconds"] + 2 * honest["wall"], (graded["wall"], honest["wall"])
    assert "timeout" in report["mistakes"]
    for part in PARTS:
        assert points(report, part) == 0
        first = next(c for c in report["checks"] if c["part"] == part)
        assert "no answer within 2 s" in first["message_en"] and "timeout" in first["mistakes"], first["message_en"]


def test_a_shared_reference_dag_is_refused_in_bounded_parent_time(graded_in_child):
    """A ~1 KB well-formed frame: a list DAG 64 levels deep (Part 1) or 12 levels of 10-fold fan-out (Part 2)."""
    graded = grading(graded_in_child, "shared_reference_dag")
    report = graded["report"]
    assert graded["cpu"] < 10, graded["cpu"]
    assert "tampering" in report["mistakes"]
    integrity = next(c for c in report["checks"] if c["id"] == "integrity.tampering")
    assert "forged answer" in integrity["message_en"] and "more than 100000 values" in integrity["message_en"]
    for part in PARTS:
        assert points(report, part) == 0
        failed = [c["message_en"] for c in report["checks"] if c["part"] == part and not c["passed"]]
        assert failed and "more than 100000 values" in failed[0], failed[:1]


def test_a_tuple_dag_dict_key_is_refused_before_torch_hashes_it(graded_in_child):
    """A hand-written pickle whose dict key is 60 levels of shared tuples: hashing it is exponential, in C."""
    graded = grading(graded_in_child, "tuple_key_dag")
    report = graded["report"]
    assert graded["cpu"] < 10, graded["cpu"]
    assert "tampering" in report["mistakes"] and points(report, "sdpa") == points(report, "mha") == 0
    assert any("key is not a string" in c["message_en"] for c in report["checks"] if c["id"] == "integrity.tampering")


def test_a_frame_declared_over_the_cap_is_tampering(graded_in_child):
    """A 40 MiB length header and four body bytes: no honest worker writes a frame over the 16 MiB cap."""
    report = grading(graded_in_child, "oversized_frame")["report"]
    assert "tampering" in report["mistakes"] and points(report, "sdpa") == points(report, "mha") == 0
    integrity = next(c for c in report["checks"] if c["id"] == "integrity.tampering")
    assert "a message declared as 41943040 bytes, above the 16777216-byte cap" in integrity["message_en"]


def test_honest_constants_too_large_to_check_are_too_costly_not_tampering(graded_in_child):
    """A 20 MB module-level table read whole by Part 1: its answer is over the cap, which the worker says
    instead of sending it; Part 2 keeps its marks."""
    report = grading(graded_in_child, "honest_oversized_constant")["report"]
    assert "tampering" not in report["mistakes"] and "submission-too-costly" in report["mistakes"]
    assert points(report, "sdpa") == 0 and points(report, "mha") == MAX_SCORE / 2
    failed = next(c for c in report["checks"] if c["part"] == "sdpa" and not c["passed"])
    assert "register_buffer" in failed["message_en"] and "register_buffer" in failed["message_zh"]


def test_a_deflate_bomb_is_refused_before_inflating(graded_in_child):
    """A 4.7 MB frame whose deflated storage record inflates to 1 GiB inside torch.load; graded right after the
    honest file in one process, so the peak it may reach is the honest grading's peak plus a margin."""
    honest, graded = grading(graded_in_child, "honest"), grading(graded_in_child, "deflate_bomb")
    report = graded["report"]
    assert graded["peak_rss"] < honest["peak_rss"] + (256 << 20), (graded["peak_rss"] >> 20, honest["peak_rss"] >> 20)
    assert "tampering" in report["mistakes"] and points(report, "sdpa") == 0
    assert any("compressed" in c["message_en"] for c in report["checks"] if c["id"] == "integrity.tampering")
    assert honest["report"]["score"] == MAX_SCORE


# grade-all without the rules, each probe limited to 3 s (the stalled frame waits out its probes' limit, and
# the limit is not what this test is about: the honest neighbour's 20/20 is); the submission keeps 30 s.
GRADE_ALL_SHORT_PROBES = grader_without_rules(
    "import grader.grade as grade; from grader.sandbox.confinement import Limits; grade.default_limits = "
    "lambda: Limits(visible=grade.python_paths(), probe_seconds=3.0, submission_seconds=30.0)")


def test_an_honest_neighbour_scores_full_marks_beside_forged_answers(tmp_path):
    classroom = tmp_path / "class"
    classroom.mkdir()
    for name in FORGED_NAMES:
        # hyphens: a file named `<id>_<rest>` belongs to student <id>, as zip_collect reads it
        (classroom / f"{name.replace('_', '-')}.py").write_bytes((FORGED / f"{name}.py").read_bytes())
    (classroom / "honest.py").write_bytes(REFERENCE.read_bytes())
    out = tmp_path / "reports.json"
    children_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    result = subprocess.run([*GRADE_ALL_SHORT_PROBES, "grade-all", str(classroom), "--jobs", "2",
                             "--json", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    reports = {r["student"]: r for r in json.loads(out.read_text())}
    assert reports["honest"]["score"] == MAX_SCORE, reports["honest"]["mistakes"]
    assert all(reports[name.replace("_", "-")]["score"] == 0.0 for name in FORGED_NAMES)
    children_after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_seconds = sum(getattr(children_after, f) - getattr(children_before, f) for f in ("ru_utime", "ru_stime"))
    assert cpu_seconds < 300, f"grade-all used {cpu_seconds:.0f} s of CPU"


# --- the layers one by one, on frames built here ---------------------------------------------------

def honest_answer() -> dict:
    value = torch.randn(2, 4, 16, 16)
    return {"out": {"kind": "tensor", "shape": list(value.shape), "dtype": "float32", "device": "cpu",
                    "requires_grad": False, "subclass": False, "value": value},
            "calls": [{"ops": 41, "op_names": ["mm", "softmax"], "grads": None}], "cuda_peak_bytes": 3 << 30,
            "error": {"type": "RuntimeError", "message": "x" * 4000, "where": {"line": 3, "text": "y", "function": "f"}},
            "gradcheck": {"passed": True}, "scale": 0.125, "forbidden_calls": [], "tampered": []}


def test_what_the_worker_encodes_decodes_to_the_same_answer():
    answer = honest_answer()
    decoded = answers.decode(worker.encode(answer))
    assert torch.equal(decoded["out"]["value"], answer["out"]["value"])
    assert {k: v for k, v in decoded.items() if k != "out"} == {k: v for k, v in answer.items() if k != "out"}


def nested(levels: int) -> list:
    value = []
    for _ in range(levels):
        value = [value]
    return value


def saved(value) -> bytes:
    buffer = io.BytesIO()
    torch.save(value, buffer)
    return buffer.getvalue()


# README's limits on an answer's values, as literals (*Untrusted input*): strings up to 8192 characters, 4096 items
# per list or dict, depth 16.
@pytest.mark.parametrize("value, rule", [
    ({"t": torch.zeros(1).expand(1 << 23)}, "elements"),  # 4 bytes stored, 8 M elements claimed
    ({"t": torch.zeros(3).to_sparse()}, "the global"),
    ({"p": torch.nn.Parameter(torch.zeros(2))}, "the global"),
    ({"s": {1, 2}}, "the global"),
    ({1: "x"}, "key is not a string"),
    ({"s": "x" * (8192 + 1)}, "string of"),
    ({"n": 1 << 70}, "more than 64 bits"),
    ({"t": (1, 2)}, "a value of type tuple"),
    ({"h": OrderedDict(a=1)}, "other than a plain dict"),
    (["not", "a", "dict"], "not one dict"),
    ({"l": [None] * (4096 + 1)}, "items, above"),
    ({"l": nested(16)}, "nests deeper than"),
])
def test_values_no_probe_sends_are_refused(value, rule):
    with pytest.raises(answers.AnswerRefused, match=rule):
        answers.decode(saved(value))


def test_diagnosing_the_longest_message_an_answer_may_carry_is_cheap():
    """The device-mismatch pattern is cubic in the message length: 0.7 s on 8 k characters, per failed check."""
    message = ("Expected  to be on " * 8192)[:8192]  # the longest string README lets an answer carry
    with CpuTime() as cpu:  # a full collection of a test worker's heap alone costs more than the bound
        assert diagnosis.from_error({"type": "RuntimeError", "message": message}, {}) == []
    assert cpu.seconds < 0.2


def test_overlapping_records_are_refused_before_any_is_copied():
    """One 1 MB record listed 900 times would be 900 MB once each listing is read."""
    frame = saved({"t": torch.zeros(1 << 18)})
    _, _, _, here, count, cd_size, cd_offset, _ = struct.unpack_from("<4s4H2LH", frame, len(frame) - 22)
    directory = frame[cd_offset:cd_offset + cd_size]
    at = directory.index(b"archive/data/0") - 46
    entry = directory[at:at + 46 + sum(struct.unpack_from("<3H", directory, at + 28))]
    forged = frame[:cd_offset] + directory + entry * 900
    forged += struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, here + 900, count + 900, cd_size + 900 * len(entry),
                          cd_offset, 0)
    with pytest.raises(answers.AnswerRefused, match="overlap"):
        answers.decode(forged)


def test_a_second_pickle_named_in_other_case_is_refused():
    """A zip reader that ignores case could read the unchecked one of two such records: torch.save never writes them."""
    checked = io.BytesIO()
    with zipfile.ZipFile(checked, "w") as archive:
        archive.writestr("archive/data.pkl", b"\x80\x02}.")
        archive.writestr("archive/DATA.PKL", b"\x80\x02c__builtin__\neval\n.")
    with pytest.raises(answers.AnswerRefused, match="ignoring case"):
        answers.decode(checked.getvalue())


def test_a_frame_with_too_many_records_is_refused_from_its_end_record():
    forged = struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, 60_000, 60_000, 0, 0, 0)
    with pytest.raises(answers.AnswerRefused, match="records, above"):
        answers.decode(forged)


def closed_later(end: socket.socket, seconds: float) -> threading.Timer:
    """A hang guard, not a measurement: the peer closes after `seconds`, so a wait that ignored its deadline ends in
    FrameClosed (a failure) instead of hanging the suite."""
    timer = threading.Timer(seconds, end.close)
    timer.start()
    return timer


class SteppingClock:
    """frames' clock, each reading 0.1 s after the one before: how late a wait gives up is counted in readings
    of its own clock, whatever the machine's load."""

    def __init__(self) -> None:
        self.readings = 0

    def monotonic(self) -> float:
        self.readings += 1
        return self.readings * 0.1


@pytest.fixture
def clock(monkeypatch) -> SteppingClock:
    stepping = SteppingClock()
    monkeypatch.setattr(frames, "time", stepping)
    return stepping


def test_a_half_written_frame_times_out_at_its_deadline(clock):
    parent, worker = socket.socketpair()
    worker.sendall(struct.pack("!i", 1000) + b"PK")
    guard = closed_later(worker, 60)
    with pytest.raises(frames.FrameTimeout):
        frames.read_frame(parent.fileno(), 1 << 20, clock.monotonic() + 0.5)
    guard.cancel()
    assert clock.readings <= 8, clock.readings  # 0.5 s is 5 readings: it gave up once the deadline had passed
    parent.close(), worker.close()


def test_a_frame_completed_before_its_deadline_is_read_whole():
    """Not too early either: the rest of the frame, sent a moment later, arrives well within a 60 s deadline."""
    parent, worker = socket.socketpair()
    worker.sendall(struct.pack("!i", 6) + b"an")
    rest = threading.Timer(0.2, worker.sendall, args=(b"swer",))
    rest.start()
    assert frames.read_frame(parent.fileno(), 1 << 20, time.monotonic() + 60) == b"answer"
    rest.join()
    parent.close(), worker.close()


def test_a_declared_length_above_the_cap_is_refused_before_its_body():
    parent, worker = socket.socketpair()
    worker.sendall(struct.pack("!iQ", -1, 1 << 40))
    with pytest.raises(frames.FrameTooLarge):
        frames.read_frame(parent.fileno(), 16 << 20, time.monotonic() + 5)  # README: a frame is at most 16 MiB
    parent.close(), worker.close()


def test_a_request_to_a_worker_that_never_reads_times_out(clock):
    parent, worker = socket.socketpair()
    guard = closed_later(worker, 60)
    with pytest.raises(frames.FrameTimeout):
        frames.write_frame(parent.fileno(), bytes(64 << 20), clock.monotonic() + 0.5)
    guard.cancel()
    assert clock.readings <= 8, clock.readings
    parent.close(), worker.close()


def test_frames_round_trip_with_multiprocessing_connections():
    """The worker keeps its multiprocessing Connection: both framings must agree."""
    from multiprocessing.connection import Connection

    parent, worker = socket.socketpair()
    connection = Connection(os.dup(worker.fileno()))
    connection.send_bytes(b"answer")
    assert frames.read_frame(parent.fileno(), 100, time.monotonic() + 5) == b"answer"
    frames.write_frame(parent.fileno(), b"request", time.monotonic() + 5)
    assert connection.recv_bytes() == b"request"
    connection.close(), parent.close(), worker.close()
