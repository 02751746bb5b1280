"""The plain text table every listing prints (``cli.common.table``).

The expected layouts are what tabulate's "plain" format printed for the same
rows, which samctl used until it grew too slow for 100,000-row listings: the
output a user's scripts and eyes are used to stays byte for byte the same.
"""

import pytest

from samctl.cli.common import display_width, table


def test_columns_two_spaces_apart_each_as_wide_as_its_widest_cell_or_header_plus_two():
    rows = [("a", 5, "x"), ("bbbb", "-", "yy"), ("c", 123, "")]
    assert table(rows, ["ID", "N", "T"]) == "ID    N    T\na     5    x\nbbbb  -    yy\nc     123"


def test_a_long_header_sets_its_column_width_plus_two():
    assert table([("a", "b")], ["LONGHEADER", "N"]) == "LONGHEADER    N\na             b"


def test_numbers_are_left_aligned_like_text_and_none_is_empty():
    rows = [("a", 5.5, None), ("bbbb", 17, "yy")]
    assert table(rows, ["ID", "N", "TITLE"]) == "ID    N    TITLE\na     5.5\nbbbb  17   yy"


def test_cells_are_stripped_and_no_line_ends_in_spaces():
    out = table([("a  ", "b"), (" x", "")], ["I", "N"])
    assert out == "I    N\na    b\nx"
    assert all(line == line.rstrip() for line in out.splitlines())


def test_no_rows_is_the_header_line():
    assert table([], ["ID", "N", "TITLE"]) == "ID    N    TITLE"


def test_wide_and_combining_characters_are_measured_as_a_terminal_shows_them():
    # a CJK character takes two columns, a combining accent none: the next column still lines up
    rows = [("漢字", "x"), ("e\u0301", "y"), ("ab", "z")]
    lines = table(rows, ["T", "N"]).splitlines()
    assert lines == ["T     N", "漢字  x", "e\u0301     y", "ab    z"]
    assert {display_width(ln[: ln.rindex(" ") + 1]) for ln in lines} == {6}


@pytest.mark.parametrize(
    "text, width", [("", 0), ("abc", 3), ("漢字", 4), ("e\u0301", 1), ("ｱ", 1), ("👍", 2), ("a\u200bb", 2)]
)
def test_display_width(text, width):
    assert display_width(text) == width


def test_a_cell_with_a_line_break_is_refused():
    # every caller passes file text through one_line first; a break would tear the row apart silently
    with pytest.raises(ValueError):
        table([("a\nb", "c")], ["ID", "N"])
