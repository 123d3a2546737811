"""What an earlier `nbgrader zip_collect` left in submitted/ that this one no longer collects.

A re-collect with `--force` replaces the folders of the students it collects again, and nbgrader leaves every
other folder in place, where autograde would grade it: a student an earlier, mistaken collect invented (a whole
class read as one student `Attention`) would stay in the class. Each collect records whom it collected in
`downloaded/<assignment>/collected_students.json`; with `--force` a folder of the earlier list that this collect
does not make again is moved to `downloaded/<assignment>/set_aside/`, nothing deleted; without it, it is named.
A folder no collect recorded (put there by hand) is only named.
"""
from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

MANIFEST = "collected_students.json"
SET_ASIDE = "set_aside"


def reconcile(app, collected: dict[str, dict[str, str]], log: logging.Logger) -> None:
    """Set aside (with app.force) or name the submitted folders an earlier collect made and this one does not.
    `collected`: student id -> where their notebook came from (`layout`, `file` in extracted/), recorded for the
    feedback sent back through the LMS (grader.nbgrader.lms_feedback)."""
    students = set(collected)
    coursedir = app.coursedir
    assignment = coursedir.assignment_id
    downloaded = Path(coursedir.root) / app.downloaded_directory / assignment
    manifest = downloaded / MANIFEST
    earlier = read_manifest(manifest)
    submitted = Path(coursedir.root) / coursedir.submitted_directory
    for student in sorted(collected_folders(submitted, assignment) - students):
        folder = submitted / student / assignment
        if student in earlier and app.force:
            target = downloaded / SET_ASIDE / student
            suffix = 1
            while target.exists():
                target, suffix = downloaded / SET_ASIDE / f"{student}.{suffix}", suffix + 1
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.move(str(folder), str(target))
            log.warning("Set aside: %s came from an earlier collect and is not collected now; moved to %s, so it is "
                        "not graded", folder, target)
        else:
            log.warning("Not from this collect: %s stays and will be graded%s", folder,
                        "; re-run with --force to set it aside" if student in earlier
                        else " (no collect recorded it: remove it if it is no student of the class)")
    downloaded.mkdir(parents=True, exist_ok=True)
    still_there = set(earlier) & collected_folders(submitted, assignment) - students
    record = {**{student: earlier[student] for student in still_there}, **collected}
    manifest.write_text(json.dumps(dict(sorted(record.items())), ensure_ascii=False, indent=1), encoding="utf-8")


def read_manifest(path: Path) -> dict[str, dict[str, str]]:
    """student id -> where the last collect took their notebook from; empty when no collect recorded one."""
    try:
        found = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def collected_folders(submitted: Path, assignment: str) -> set[str]:
    return {folder.parent.name for folder in submitted.glob(f"*/{assignment}") if folder.is_dir()}
