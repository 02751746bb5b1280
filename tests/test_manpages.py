from pathlib import Path

from samctl.cli.manpages import render_all

MAN = Path(__file__).resolve().parent.parent / "man"


def test_man_pages_are_current():
    pages = render_all()
    on_disk = {p.name: p.read_text(encoding="utf-8") for p in MAN.glob("samctl*.1")}
    stale = sorted(n for n in set(pages) | set(on_disk) if pages.get(n) != on_disk.get(n))
    assert not stale, f"man pages out of date: {stale}; run `python -m samctl.cli.manpages man/`"


def test_each_page_has_exit_codes_and_examples():
    for name, text in render_all().items():
        assert ".SH EXIT STATUS" in text and "\n.B 3\n" in text, name
        examples = text.partition(".SH EXAMPLES\n.RS 4\n.nf\n")[2].partition(".fi\n")[0]
        assert "samctl" in examples, name
        assert "Examples:" not in text, name  # moved out of DESCRIPTION into its own section
