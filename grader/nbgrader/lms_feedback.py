"""`python -m grader.nbgrader.lms_feedback ASSIGNMENT --lms moodle|canvas`: the feedback pages, zipped for the LMS.

After `nbgrader generate_feedback`, each student's pages are in `feedback/<student>/<assignment>/*.html`. The last
`nbgrader zip_collect` recorded whom it collected and from which file of the LMS's download
(downloaded/<assignment>/collected_students.json, grader.nbgrader.earlier_collect): that file's LMS name says
under which name the LMS takes a student's feedback back.

- Moodle, Assignment → View all submissions → "Upload multiple feedback files in a zip": Moodle splits each path in
  the zip at its first four `_` into `<anything>_<participant id>_<plugin type>_<plugin name>_<file name>` and
  attaches the file to that participant. Written as `<full name>_<participant id>_assignfeedback_file_/<page>`,
  with `_` taken out of the full name (Moodle ignores that part, but a `_` in it would shift the others).
- Canvas, Assignment → "Re-Upload Submissions": the files keep the names of Canvas's download,
  `<name>[_LATE]_<user id>_<attachment id>_<file>`, which Canvas reads back to the student. Written as the collected
  file's own prefix followed by the page's name.
A student without a page, or collected from another LMS's download, is named on stderr and left out.
"""
from __future__ import annotations

import argparse
import sys
import zipfile
from pathlib import Path, PurePosixPath

from grader.lms import names

from .earlier_collect import MANIFEST, read_manifest

LMS_NAMES = ("moodle", "canvas")


def entry_name(lms: str, source: PurePosixPath, page: str) -> str | None:
    """The name `lms` takes a feedback page back under, for a student collected from `source`; None if none."""
    hand_in = names.hand_in(lms, source)
    if isinstance(hand_in, str):
        return None
    if lms == "moodle":
        full_name = hand_in.name.replace("_", " ").replace("/", " ").strip() or "participant"
        return f"{full_name}_{hand_in.who}_assignfeedback_file_/{page}"
    prefix = source.name[: len(source.name) - len(hand_in.file_name)]
    return f"{prefix}{page}"


def feedback_zip(course: Path, assignment: str, lms: str, out: Path) -> tuple[int, list[str]]:
    """Write the zip; (pages written, the students left out, each with why)."""
    collected = read_manifest(course / "downloaded" / assignment / MANIFEST)
    written, left_out = 0, []
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for student, source in sorted(collected.items()):
            pages = sorted((course / "feedback" / student / assignment).glob("*.html"))
            if source.get("layout") != lms:
                left_out.append(f"{student}: collected from a {source.get('layout')} download, not {lms}'s")
                continue
            if not pages:
                left_out.append(f"{student}: no feedback page in feedback/{student}/{assignment}/ "
                                f"(run nbgrader generate_feedback {assignment})")
                continue
            for page in pages:
                name = entry_name(lms, PurePosixPath(source["file"]), f"{Path(page).stem}_feedback.html")
                if name is None:
                    left_out.append(f"{student}: {source['file']!r} is not named as {lms} names its files")
                    break
                archive.write(page, name)
                written += 1
    return written, left_out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m grader.nbgrader.lms_feedback", description=__doc__.split("\n")[0])
    parser.add_argument("assignment")
    parser.add_argument("--lms", choices=LMS_NAMES, required=True)
    parser.add_argument("--course", default=".", help="the nbgrader course folder (default: here)")
    parser.add_argument("--out", help="the zip to write (default: <lms>_feedback.zip)")
    args = parser.parse_args(argv)
    course = Path(args.course)
    if not (course / "downloaded" / args.assignment / MANIFEST).is_file():
        print(f"no {MANIFEST} in {course / 'downloaded' / args.assignment}: collect with `nbgrader zip_collect "
              f"{args.assignment}` first", file=sys.stderr)
        return 2
    out = Path(args.out or f"{args.lms}_feedback.zip")
    written, left_out = feedback_zip(course, args.assignment, args.lms, out)
    for why in left_out:
        print(f"Not in the zip: {why}", file=sys.stderr)
    print(f"Wrote {written} feedback page(s) to {out}" + (f"; {len(left_out)} student(s) left out" if left_out else ""),
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
