"""Exported HTML in a real browser: headless Chromium, driven over the DevTools pipe (tests/cdp.py).

Checks what a person sees: the messages in order, a tool call that opens on a
click, "Expand all", the index filter, a phone-width layout without sideways
scrolling, a hostile transcript shown as text (no dialog, no extra script or
image), no console errors and no network request.  Screenshots go to
``test-artifacts/`` (gitignored).  Skipped when Chromium is not installed;
``.ci/run`` installs Debian's ``chromium`` so CI runs it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.cdp import Browser, CDPError, find_chromium
from tests.core.test_export import _hostile_sam

REPO = Path(__file__).resolve().parent.parent
ARTIFACTS = REPO / "test-artifacts"
SAM_ID = "8B58CBC4-ACA7-4811-AE66-C01921690310"

CHROMIUM = find_chromium()
if CHROMIUM is None and os.environ.get("SAMCTL_REQUIRE_BROWSER") == "1":  # .ci/run saw Chromium: never skip there
    raise RuntimeError("SAMCTL_REQUIRE_BROWSER=1 but no chromium on PATH")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None,
    reason="chromium is not installed; `apt-get install chromium` (what .ci/run does as root) to run the browser test",
)


@pytest.fixture
def site(run, tmp_path):
    base, hostile_id, evil = _hostile_sam(tmp_path)
    out = tmp_path / "site"
    r = run("--root", base, "export", "--all", "--to", "html", "-o", out)
    assert r.exit_code == 0, r.stderr
    return out, hostile_id, evil


@pytest.fixture
def browser(tmp_path):
    b = Browser(CHROMIUM, str(tmp_path / "chromium-profile"))
    try:
        b.open_page()
        b.call("Network.enable")
        yield b
    except CDPError as exc:  # pragma: no cover - a broken browser install, not a samctl bug
        pytest.fail(f"could not drive Chromium: {exc}")
    finally:
        b.close()


def _requests(b) -> list[str]:
    return [e["params"]["request"]["url"] for e in b.events if e.get("method") == "Network.requestWillBeSent"]


def _center(b, selector: str) -> tuple[float, float]:
    rect = b.eval(
        f"(() => {{ const el = document.querySelector({json.dumps(selector)}); el.scrollIntoView();"
        "const r = el.getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; })()"
    )
    return rect[0], rect[1]


def test_a_person_sees_the_conversation(site, browser):
    out, _, _ = site
    ARTIFACTS.mkdir(exist_ok=True)
    b = browser
    b.navigate((out / f"{SAM_ID}.html").as_uri())
    assert b.eval("document.title") == "Portland weekend trip"

    # the messages, in order, top to bottom, as rendered text
    msgs = b.eval(
        "Array.from(document.querySelectorAll('article.msg')).map(a => "
        "[a.dataset.role, a.innerText, a.getBoundingClientRect().top])"
    )
    assert [m[0] for m in msgs] == ["user", "assistant", "tool", "reasoning", "assistant"]
    assert [m[2] for m in msgs] == sorted(m[2] for m in msgs) and len({m[2] for m in msgs}) == 5
    assert "Plan a weekend trip to Portland within a $500 budget." in msgs[0][1]
    assert "Which neighborhood would you like to stay in?" in msgs[4][1]
    assert "USER" in msgs[0][1]  # the role label is styled (uppercase) and visible

    # a tool call is closed, and opens on a real click
    visible = "document.querySelector('details.call pre').checkVisibility()"
    closed_height = b.eval("document.querySelector('details.call').getBoundingClientRect().height")
    assert b.eval("document.querySelector('details.call').open") is False and b.eval(visible) is False
    assert "Portland, OR" not in b.eval("document.body.innerText")
    b.click(*_center(b, "details.call > summary"))
    assert b.eval("document.querySelector('details.call').open") is True and b.eval(visible) is True
    assert b.eval("document.querySelector('details.call').getBoundingClientRect().height") > closed_height + 40
    assert '"location": "Portland, OR"' in b.eval("document.querySelector('details.call pre').innerText")
    b.screenshot(str(ARTIFACTS / "export-conversation.png"))

    # "Expand all" opens the tool result and the reasoning too
    b.click(*_center(b, "#expand-all"))
    assert b.eval("Array.from(document.querySelectorAll('details')).every(d => d.open)") is True
    assert "Budget is tight" in b.eval("document.body.innerText")

    # a phone: no sideways scrolling
    b.call("Emulation.setDeviceMetricsOverride", {"width": 390, "height": 844, "deviceScaleFactor": 2, "mobile": True})
    b.navigate((out / f"{SAM_ID}.html").as_uri())
    assert b.eval("document.documentElement.scrollWidth <= window.innerWidth") is True
    b.screenshot(str(ARTIFACTS / "export-phone.png"))
    b.call("Emulation.clearDeviceMetricsOverride")

    assert b.problems() == []
    assert all(u.startswith("file://") for u in _requests(b)), _requests(b)


def test_a_hostile_transcript_stays_text(site, browser):
    out, hostile_id, evil = site
    b = browser
    b.navigate((out / f"{hostile_id}.html").as_uri())
    b.click(*_center(b, "#expand-all"))
    assert b.eval("document.title") == evil
    assert b.eval("document.scripts.length") == 1 and b.eval("document.images.length") == 0
    text = b.eval("document.body.innerText")
    assert text.count('<script>alert("x")</script>') >= 4
    assert b.eval("document.querySelectorAll('article.msg').length") == 4
    ARTIFACTS.mkdir(exist_ok=True)
    b.screenshot(str(ARTIFACTS / "export-hostile.png"))
    assert b.problems() == []  # no alert() dialog, no error
    assert all(u.startswith("file://") for u in _requests(b))


def test_the_index_lists_and_filters(site, browser):
    out, _, _ = site
    ARTIFACTS.mkdir(exist_ok=True)
    b = browser
    b.navigate((out / "index.html").as_uri())
    shown = "Array.from(document.querySelectorAll('#list li')).filter(li => li.offsetParent !== null).length"
    assert b.eval(shown) == 4 and b.eval("document.getElementById('count').innerText") == "4 conversations"
    b.click(*_center(b, "#filter"))
    b.call("Input.insertText", {"text": "portland"})
    assert b.eval(shown) == 1
    assert b.eval("document.getElementById('count').innerText") == "1 of 4 conversations"
    b.screenshot(str(ARTIFACTS / "export-index.png"))
    b.click(*_center(b, "#list li:not([hidden]) a"))
    b.wait_event("Page.loadEventFired")
    assert b.eval("document.title") == "Portland weekend trip"
    assert b.problems() == []
