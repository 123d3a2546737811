"""Where does the static reading look for the stand-in's name, and which attributes does a format template read?

The word "meta" in a string is read as probing for the grader's stand-in only where the string can meet a
device's text (a comparison, a `device=` value, `.to(...)`, text matching, a `case`): an assert message or a
log line that names Meta's LLaMA is text, which the run time allows, so the static reading finds nothing there.
A constant `str.format`/`format_map` template reads its fields' attributes through the worker's guard; the
static reading judges them as the same attributes written in the code.
"""
import textwrap

import pytest

from grader import rules
from grader.exercises.attention import EXERCISE

pytestmark = pytest.mark.unit

PROLOGUE = "import math\nimport torch\n\n\n"


def found(body: str) -> list[tuple[str, str]]:
    source = PROLOGUE + "def scaled_dot_product_attention(Q, K, V, is_causal=True):\n" + textwrap.indent(
        textwrap.dedent(body), "    ") + "    return Q, K\n"
    return [(v.mistake, v.en) for v in rules.violations(source, EXERCISE)]


TEXT_ONLY = {
    "an assert message": "assert Q.size(-1) == K.size(-1), \"one head size (Meta's LLaMA layout)\"\n",
    "an error message": "if Q.dim() < 2:\n    raise ValueError(f\"Meta's reference code needs (..., T, d), got {Q.dim()} dims\")\n",
    "a print": "print(\"masking as in Meta's LLaMA\", Q.shape)\n",
    "a name never matched": "note = \"Meta\" + \"'s layout\"\nprint(note)\n",
    "a dict key": "info = {\"meta\": Q.shape}\n",
}
DEVICE_TEXT = {
    "compared": "if Q.device.type == \"meta\":\n    pass\n",
    "built from pieces, then in": "if \"me\" + \"ta\" in str(Q.device):\n    pass\n",
    "a device argument": "x = torch.zeros(1, device=\"meta\")\n",
    "a move": "x = Q.to(\"meta\")\n",
    "text matching": "if repr(Q).find(\"meta\") >= 0:\n    pass\n",
    "held in a name, then compared": "kind = \"meta\"\nif Q.device.type == kind:\n    pass\n",
    "a case": "match Q.device.type:\n    case \"meta\":\n        pass\n",
}


@pytest.mark.parametrize("body", TEXT_ONLY.values(), ids=TEXT_ONLY.keys())
def test_a_string_that_only_says_meta_is_text_and_the_static_reading_finds_nothing(body):
    assert found(body) == []


@pytest.mark.parametrize("body", DEVICE_TEXT.values(), ids=DEVICE_TEXT.keys())
def test_the_word_where_it_can_meet_a_devices_text_is_read_as_probing_for_the_stand_in(body):
    assert [mistake for mistake, _ in found(body)] == ["device-probing"]


FORMAT_FIELDS = {
    "where a tensor's memory is": ("x = (\"{0.__cuda_\" + \"array_interface__[data][0]}\").format(Q)\n",
                                   "introspection", "__cuda_array_interface__"),
    "format_map": ("x = \"{t.is_meta}\".format_map({\"t\": Q})\n", "device-probing", "is_meta"),
    "str.format, unbound": ("x = str.format(\"{0.data_ptr}\", Q)\n", "device-probing", "data_ptr"),
    "a nested field": ("x = \"{0:{1.is_meta}}\".format(1, Q)\n", "device-probing", "is_meta"),
    "a private attribute": ("x = \"{0._version}\".format(Q)\n", "introspection", "_version"),
}


@pytest.mark.parametrize("body, mistake, attribute", FORMAT_FIELDS.values(), ids=FORMAT_FIELDS.keys())
def test_a_format_templates_fields_are_read_as_the_attributes_they_name(body, mistake, attribute):
    breaches = found(body)
    assert [m for m, _ in breaches] == [mistake] and attribute in breaches[0][1], breaches


def test_an_honest_format_template_reads_nothing_refused():
    assert found("x = \"{0.device.type} {n:>4} {1}\".format(Q, K.shape, n=3)\n") == []
