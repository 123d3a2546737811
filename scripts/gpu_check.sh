#!/usr/bin/env bash
# GPU check of the hidden graders, for a machine with CUDA (CI has none).
#
# Grades the reference solution and the device mutants with real CUDA: the device checks then
# run the student's code on the GPU (inputs and module there, output must stay there and match
# the float64 reference), besides the meta-device and fake-CUDA runs used on CPU-only machines.
# Expected: the reference gets 20/20; each mutant loses its device points with its mistake id.
#
#   PY=.venv/bin/python scripts/gpu_check.sh        # PY: an interpreter with a CUDA build of torch
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
"$PY" - <<'PYTHON'
import sys, time, torch
if not torch.cuda.is_available():
    sys.exit("gpu_check: torch.cuda.is_available() is False; run this on a CUDA machine")
print(f"torch {torch.__version__}, CUDA {torch.version.cuda}, {torch.cuda.get_device_name(0)}")
from grader.grade import grade_submission

cases = [("solutions/attention/attention.py", None)] + [
    (f"tests/submissions/mutants/{name}.py", name.split("__")[0])
    for name in ("mask-device", "mask-device__2", "hardcoded-device", "hardcoded-device__2", "hardcoded-device__3",
                 "mask-not-buffer", "mask-not-buffer__2")]
failures = 0
for path, expected in cases:
    started = time.monotonic()
    report = grade_submission(path, cuda=True)
    seconds = time.monotonic() - started
    device = {c["id"]: c["passed"] for c in report["checks"] if c["id"].endswith(".device")}
    ok = report["score"] == report["max_score"] if expected is None else expected in report["mistakes"]
    failures += not ok
    print(f"{'ok ' if ok else 'BAD'} {path:50} {report['score']:5g}/20 {seconds:5.1f}s device={device} "
          f"mistakes={report['mistakes']}")
    if not ok:
        for check in report["checks"]:
            if not check["passed"]:
                print("      ", check["id"], check["message_en"].splitlines()[0][:200])
print(f"{len(cases) - failures} of {len(cases)} as expected")
sys.exit(1 if failures else 0)
PYTHON
