"""A class too big for one machine: two workers, each with its own copy of the course, grade disjoint
shares of the students (`grade-all --nbgrader attention --shard K/2 --db-url postgresql://...`) at the
same time into one PostgreSQL gradebook, as docs/instructors/big-class.md describes.

The server is Debian's PostgreSQL (installed by `make test-setup`, as root), started privately
on 127.0.0.1 from a temporary folder and stopped at the end. The test is skipped, saying why, only
when PostgreSQL is not installed.
"""
from __future__ import annotations

import json
import os
import pwd
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from support.capabilities import lacking

from support.paths import ROOT
from support import colab_notebooks as cn
from support import e2e_tools
from grader.process import nbgrader_env, open_gradebook
from grader.grade_all.parallel import in_shard
from support.nbgrader_course import Course, colab_cases, mutant_notebook

pytestmark = pytest.mark.e2e

STUDENTS = ("ana", "dmitri", "eve", "hana")  # two per share (in_shard): the test is the sharing, not the class size


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def postgres_url():
    """A private PostgreSQL server on 127.0.0.1 with an empty database `gradebook`; its URL."""
    psycopg2 = pytest.importorskip("psycopg2", reason="psycopg2-binary (a dependency in pyproject.toml) is missing")
    bindir = e2e_tools.postgres_bin()
    if bindir is None:
        lacking("postgresql", f"PostgreSQL is not installed: {e2e_tools.SETUP_HINT}")
    folder = Path(tempfile.mkdtemp(prefix="attention-kit-postgres-"))
    user = None
    if os.geteuid() == 0:  # the server refuses to run as root: the Debian package's `postgres` user runs it
        try:
            account = pwd.getpwnam("postgres")
        except KeyError:
            account = pwd.getpwnam("nobody")
        os.chown(folder, account.pw_uid, account.pw_gid)
        user = account.pw_name
    data, port = folder / "data", free_port()

    def run(*command: str) -> None:
        done = subprocess.run(command, user=user, cwd=folder, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, f"{' '.join(command)}:\n{done.stdout}{done.stderr}"

    run(str(bindir / "initdb"), "-D", str(data), "-U", "kit", "--auth=trust", "-E", "UTF8", "--no-sync")
    run(str(bindir / "pg_ctl"), "-D", str(data), "-l", str(folder / "server.log"), "-w", "-t", "60",
        "-o", f"-p {port} -h 127.0.0.1 -k {folder} -c fsync=off", "start")
    try:
        connection = psycopg2.connect(host="127.0.0.1", port=port, user="kit", dbname="postgres")
        connection.autocommit = True
        with connection.cursor() as cursor:
            cursor.execute("CREATE DATABASE gradebook")
        connection.close()
        # SQLAlchemy 2.1 takes a bare postgresql:// for psycopg 3; the kit installs psycopg2
        yield f"postgresql+psycopg2://kit@127.0.0.1:{port}/gradebook"
    finally:
        subprocess.run([str(bindir / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop"], user=user, cwd=folder,
                       capture_output=True, timeout=120)
        shutil.rmtree(folder, ignore_errors=True)


def class_notebooks(course: Course) -> dict:
    files = [None, "mask-diagonal", "bare-matmul"]
    notebooks = {student: (cn.answered(course.release, cn.reference_answers()) if mutant is None
                           else mutant_notebook(course, mutant)) for student, mutant in zip(STUDENTS, files)}
    notebooks[STUDENTS[-1]] = colab_cases(course)["stripped"]  # one that needs nbgrader's (and the kit's) repairs
    return notebooks


def test_two_workers_fill_one_postgresql_gradebook(postgres_url, tmp_path):
    shares = {k: [s for s in STUDENTS if in_shard(s, (k, 2))] for k in (1, 2)}
    assert shares[1] and shares[2], shares  # both workers have work

    # the instructor, once: the course, and the assignment recorded in the shared gradebook
    course = Course.create(tmp_path / "course")
    course.nbgrader("generate_assignment", "attention", "--force", f"--CourseDirectory.db_url={postgres_url}",
                    f"--CourseDirectory.release_directory={tmp_path / 'scratch-release'}")
    for student, nb in class_notebooks(course).items():
        cn.write(nb, course.submitted(student))
    expected = {s: course_report for s, course_report in
                ((r["student"], r) for r in json.loads(plain_grades(course.root / "submitted", tmp_path)))}

    # two machines: each its own copy of the course (submissions included), one share of the students each
    workers = {}
    for k in (1, 2):
        copy = tmp_path / f"machine{k}"
        shutil.copytree(course.root, copy, ignore=shutil.ignore_patterns("gradebook.db"))
        command = [sys.executable, "-m", "grader", "grade-all", str(copy), "--nbgrader", "attention", "--jobs", "1",
                   "--db-url", postgres_url, "--shard", f"{k}/2", "--json", str(copy / "reports.json"), "--lang", "en"]
        workers[k] = (copy, subprocess.Popen(command, cwd=ROOT, env=nbgrader_env(), stdout=subprocess.PIPE,
                                             stderr=subprocess.STDOUT, text=True))
    outputs = {k: process.communicate(timeout=1200)[0] for k, (_, process) in workers.items()}
    for k, (copy, process) in workers.items():
        assert process.returncode == 0, outputs[k]
        reports = json.loads((copy / "reports.json").read_text(encoding="utf-8"))
        assert sorted(r["student"] for r in reports) == sorted(shares[k])
        autograded = sorted(p.name for p in (copy / "autograded").iterdir() if not p.name.startswith("."))
        assert autograded == sorted(shares[k]), "each machine autogrades its own share only"
        assert not (copy / "gradebook.db").exists(), "nothing went to a SQLite gradebook"

    with open_gradebook(postgres_url, "attention-kit") as gradebook:
        graded = {s.student.id: s.score for s in gradebook.assignment_submissions("attention")}
    assert graded == {s: expected[s]["score"] for s in STUDENTS}


def plain_grades(folder: Path, tmp_path: Path) -> str:
    """`grade-all` on the submitted notebooks themselves: the scores every gradebook row must hold. Through
    the session's report cache, which the two workers then read: what is tested is the sharing of the
    class and of the gradebook, and the workers' nbgrader autograde still writes every row."""
    out = tmp_path / "plain.json"
    done = subprocess.run([sys.executable, "-m", "grader", "grade-all", str(folder), "--jobs", "2", "--json", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stderr
    return out.read_text(encoding="utf-8")
