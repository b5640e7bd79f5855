"""findings: a finding's fields survive a table row, its words and numbers as shown, bad fields refused."""

import math

import pytest

from arrank.common.findings import Finding, decide, holm_cell, interval_text, p_text


def test_a_finding_survives_a_table_row_with_nan_for_none():
    """``from_dict`` inverts ``as_dict``: the interval from two columns, the family size an int, NaN as None."""
    f = Finding("c", "holds", "n", 0.03, 0.0, "<", (0.01, 0.05), 0.9, 0.02, 0.04, "holds", 3)
    row = f.as_dict() | {"family_size": 3.0, "p_holm": math.nan}
    back = Finding.from_dict(row)
    assert back == Finding("c", "holds", "n", 0.03, 0.0, "<", (0.01, 0.05), 0.9, 0.02, None, "holds", 3)
    assert isinstance(back.family_size, int)


def test_numbers_are_shown_at_their_level_and_p_values_to_their_digits():
    f = decide("c", 0.032, (0.011, 0.05), level=0.9)
    assert (f.verdict, f.level) == ("holds", 0.9) and interval_text(f) == "+3.2 points, 90% CI [+1.1, +5.0]"
    assert [p_text(p) for p in (None, 0.0005, 0.001, 0.0123, 0.31)] == ["", "< 0.001", "0.001", "0.012", "0.31"]
    changed = Finding("c", "holds", p_holm=0.061, holm_verdict="undecided", family_size=2)
    assert holm_cell(changed) == "holds → **undecided** (p 0.061)" and holm_cell(Finding("c", "holds")) == ""


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: decide("c", 0.0, (0.2, 0.1)), r"interval=\(0.2, 0.1\) must be \(low, high\) with low <= high"),
        (lambda: Finding("c", "holds", side=">="), r"side='>=' is not allowed; choose one of \['>', '<'\]"),
        (lambda: Finding("c", "true"), r"verdict='true' is not allowed"),
    ],
)
def test_bad_fields_are_refused_in_one_line(make, message):
    with pytest.raises(ValueError, match=message):
        make()
