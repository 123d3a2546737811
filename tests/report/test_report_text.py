"""Does showing a stored report need nothing of the grader: no torch, no sandbox, no checks?"""
import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.unit

STORED = {"score": 17.0, "max_score": 20.0, "mistakes": ["mask-diagonal"], "advice": [],
          "checks": [{"id": "sdpa.causal_zeros", "part": "sdpa", "passed": False, "points": 0.0, "max_points": 2.0,
                      "title_zh": "因果掩码", "title_en": "causal mask", "message_zh": "对角线被遮蔽", "message_en": "diagonal masked",
                      "mistakes": ["mask-diagonal"]}],
          "fixes": [{"line": 3, "edits": [{"line": 3, "before": "triu(o)", "after": "triu(o, diagonal=1)"}],
                     "mistake": "mask-diagonal", "mistakes": ["mask-diagonal"], "checks": ["sdpa.causal_zeros"],
                     "points": 2.0, "message_zh": "只需改一行即可多得 2 分", "message_en": "Change one line to gain 2 points"}]}


def test_a_stored_report_is_rendered_without_importing_torch():
    code = ("import json, sys; from grader.report.text import render_text; "
            "print(render_text(json.loads(sys.stdin.read()), 'en')); "
            "print('torch loaded' if 'torch' in sys.modules else 'no torch')")
    shown = subprocess.run([sys.executable, "-c", code], input=json.dumps(STORED), capture_output=True, text=True,
                           check=True).stdout
    assert shown.rstrip().endswith("no torch"), shown
    assert "Verified fixes" in shown and "Change one line to gain 2 points" in shown and "Score: 17 / 20" in shown
