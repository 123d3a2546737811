"""The JSON renderer: every report as one JSON list (the report's schema in one language, plus `submission` and `student`)."""
from __future__ import annotations

import json
from pathlib import Path

from grader.handin.clean_text import printable_data
from grader.report.text import in_language


def write_reports(reports: list[dict], out: str | Path, lang: str) -> None:
    """Each report as `grade --json --lang LANG` prints it; a file name or message a writer could not encode
    (a lone surrogate from the byte 0xff of a name) or a terminal would obey is a visible escape."""
    Path(out).write_text(json.dumps(printable_data([in_language(r, lang) for r in reports]), ensure_ascii=False,
                                    indent=1), encoding="utf-8")
