"""The JSON renderer: every report as one JSON list (DESIGN.md's schema, plus `submission` and `student`)."""
from __future__ import annotations

import json
from pathlib import Path


def write_reports(reports: list[dict], out: str | Path) -> None:
    Path(out).write_text(json.dumps(reports, ensure_ascii=False, indent=1), encoding="utf-8")
