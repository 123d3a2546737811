"""Public self-check tests: `pytest exercises -m part1` runs Part 1 only, `-m part2` Part 2."""
import pytest

from conftest import public_check_ids


def assert_check_passed(report: dict, check_id: str) -> None:
    entry = next(c for c in report["checks"] if c["id"] == check_id)
    assert entry["passed"], f"{check_id}\n{entry['message_zh']}\n\n{entry['message_en']}"


@pytest.mark.part1
@pytest.mark.parametrize("check_id", public_check_ids("sdpa"))
def test_part1_scaled_dot_product_attention(public_report, check_id):
    assert_check_passed(public_report, check_id)


@pytest.mark.part2
@pytest.mark.parametrize("check_id", public_check_ids("mha"))
def test_part2_multi_head_attention(public_report, check_id):
    assert_check_passed(public_report, check_id)
