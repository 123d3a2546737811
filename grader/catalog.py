"""The mistake catalog: stable ids with a zh and an en explanation and fix (data in mistakes.json)."""
from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

CATALOG_FILE = Path(__file__).with_name("mistakes.json")


@lru_cache(maxsize=1)
def catalog() -> dict[str, dict[str, str]]:
    return json.loads(CATALOG_FILE.read_text(encoding="utf-8"))


def explain(mistake: str, lang: str) -> str:
    """One paragraph: title, what went wrong, how to fix it, in the requested language."""
    entry = catalog()[mistake]
    return f"[{mistake}] {entry['title_' + lang]}: {entry['explain_' + lang]} {entry['fix_' + lang]}"
