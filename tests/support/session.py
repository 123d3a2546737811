"""The test session's shared state, set when conftest imports this module: one folder of reports and a shorter
probe limit for every grading of the session, and which files share a costly session fixture."""
import os
import tempfile
from pathlib import Path

from grader.process import PROBE_SECONDS_ENV, REPORT_CACHE_ENV

# One folder of reports for the session, shared with every `grader`/nbgrader subprocess through the
# environment (the entry points read REPORT_CACHE_ENV). Its key holds everything that changes a verdict
# (grader.report.cache); a test that must grade afresh removes the variable (monkeypatch.delenv).
# The session that makes the folder names it in SESSION_REPORTS_ENV; pytest-xdist's workers (started by
# it, with its environment) and any pytest a test starts use that folder too and leave it to its maker
# (the cache writes atomically, so parallel workers share it).
SESSION_REPORTS_ENV = "ATTENTION_KIT_TEST_SESSION_REPORTS"
MADE_HERE = SESSION_REPORTS_ENV not in os.environ
SESSION_REPORTS = Path(os.environ.get(SESSION_REPORTS_ENV) or tempfile.mkdtemp(prefix="attention-kit-test-reports-"))
os.environ[SESSION_REPORTS_ENV] = os.environ[REPORT_CACHE_ENV] = str(SESSION_REPORTS)

# Every grading of the session, here and in the subprocesses tests start, gives one probe call 3 s instead of 10:
# the timeout fixtures (an endless loop) wait the limit out, and it is the limit they test. The margin, from
# benchmarks/probe_times.py beside two busy loops: honest and mutant calls at most 0.10 s, 30 times under it.
# The 3 GiB memory bomb's calls took up to 1.94 s there: under the default limits it may end in memory-limit or,
# on a slower machine, in timeout, and no test holds which (those that name its memory-limit grade it with
# 512 MiB). Tests that set their own Limits keep them.
SESSION_PROBE_SECONDS = "3"
os.environ[PROBE_SECONDS_ENV] = SESSION_PROBE_SECONDS

# Every process a test starts (a Colab-like self-check, a notebook's kernel, nbgrader, the grader's CLI) runs torch
# on one thread, as the grader's own entry points do (grader.process.single_threaded_torch): on this suite's tiny
# tensors a second OpenMP thread only spins, and with the suite's two workers on two cores each spin takes a core
# from the other worker. The mutant self-check test beside one busy loop: 38.1 s of CPU with the default, 29.6 s
# with one thread. No result depends on it: tiny tensors are never split across threads.
os.environ["OMP_NUM_THREADS"] = "1"

# Files that share a session fixture too costly to build twice (a class of notebooks through nbgrader's
# zip_collect, autograde and generate_feedback: about a minute of CPU): `make test`'s `--dist loadfile`
# hands each group to one xdist worker, as it hands each other file.
SHARED_FIXTURE_GROUPS = {
    "tests/nbgrader_plugins/test_nbgrader_colab.py": "nbgrader_course.shared_class",
    "tests/nbgrader_plugins/test_nbgrader_feedback_browser.py": "nbgrader_course.shared_class",
    "tests/nbgrader_plugins/test_nbgrader_release_solutions.py": "nbgrader_course.shared_class",
}
