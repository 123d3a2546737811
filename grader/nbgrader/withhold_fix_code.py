"""Feedback step: until the day a course sets, each verified fix says where and for how many points, not the code.

A verified fix quotes the student's line as it should read ("第 57 行 → `y = y.reshape(B, T, C)`"). Where the
LMS takes a new hand-in after feedback, that line is the answer: `WithholdFixCode.until` (nbgrader_config.py)
keeps it off every page generated before that day; a page generated on or after it shows the fix whole.
The test cells' text was written at autograde from the report kept in the notebook's metadata, so each fix's
own message is found there and rewritten without its code.
"""
from __future__ import annotations

import datetime

from nbconvert.exporters.exporter import ResourcesDict
from nbconvert.preprocessors import Preprocessor
from nbformat import NotebookNode
from traitlets import Bool, TraitError, Unicode, validate

NOTE = {"zh": "（改好的代码 {day} 起在反馈里给出）", "en": " (the corrected code is shown in feedback from {day})"}


def withheld(fix: dict, lang: str, day: str) -> str:
    """The fix's message without the code each edited line should read, and when it will be shown."""
    message = fix[f"message_{lang}"]
    for edit in fix.get("edits") or [fix]:
        message = message.replace(f" → `{edit['after']}`", "", 1)
    return message + NOTE[lang].format(day=day)


class WithholdFixCode(Preprocessor):
    """nbconvert's Preprocessor, as FoldSelfcheckCell (nbgrader's base redeclares a trait the exporter configures)."""

    enabled = Bool(True, help="On unless configured off (nbconvert's default is off); `until` decides.").tag(config=True)

    until = Unicode("", help=(
        "A day as YYYY-MM-DD: feedback pages generated before it give each verified fix's line and points but "
        "not its code; from that day on, the code too. Empty (the default): the code is always shown.")).tag(config=True)

    @validate("until")
    def _a_day(self, proposal):
        if proposal["value"]:
            try:
                datetime.date.fromisoformat(proposal["value"])
            except ValueError:
                raise TraitError(f"WithholdFixCode.until wants a day as YYYY-MM-DD, got {proposal['value']!r}") from None
        return proposal["value"]

    def preprocess(self, nb: NotebookNode, resources: ResourcesDict) -> tuple[NotebookNode, ResourcesDict]:
        if not self.until or datetime.date.today() >= datetime.date.fromisoformat(self.until):
            return nb, resources
        report = nb.metadata.get("attention_kit", {}).get("report") or {}
        rewrites = [(fix[f"message_{lang}"], withheld(fix, lang, self.until))
                    for fix in report.get("fixes") or [] for lang in ("zh", "en")]
        for cell in nb.cells:
            for output in cell.get("outputs", []) if cell.cell_type == "code" else []:
                if output.get("output_type") == "stream":
                    for shown, kept in rewrites:
                        output.text = output.text.replace(shown, kept)
        return nb, resources
