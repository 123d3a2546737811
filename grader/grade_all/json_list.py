"""The JSON renderer: every report as one JSON list (the report's schema in one language, plus `submission` and `student`)."""
from __future__ import annotations

import json
from pathlib import Path

from grader.report import in_language


def write_reports(reports: list[dict], out: str | Path, lang: str) -> None:
    """Each report as `grade --json --lang LANG` prints it."""
    Path(out).write_text(json.dumps([in_language(r, lang) for r in reports], ensure_ascii=False, indent=1),
                         encoding="utf-8")
