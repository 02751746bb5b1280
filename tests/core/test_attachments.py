"""A message's images and other parts (SAM contentParts, docs/formats/sam.md §4.4.1; mermaid images,
docs/formats/mermaid.md §3) are shown in every output, not exported as an empty message; a SAM package made
from a mermaid session says which images it could not carry."""

from __future__ import annotations

import base64
import json

from samctl.render import html
from samctl.render import text as render
from samctl.stores import open_store

SAM_ID = "8B58CBC4-ACA7-4811-AE66-C01921690310"
MERMAID_ID = "20260810_140307_512"
URL = "file:///Users/alex/SAM/cat.png"


def _sam_image(sam_demo):
    p = sam_demo / "conversations" / SAM_ID / "conversation.json"
    doc = json.loads(p.read_text())
    m = doc["messages"][1]
    m["content"] = ""
    m["contentParts"] = [
        {"type": "image_url", "image_url": {"url": URL, "detail": "auto"}},
        {"type": "text", "text": "a caption"},
    ]
    p.write_text(json.dumps(doc, indent=2))
    return open_store(str(sam_demo), cache=False).load(SAM_ID, [])


def test_a_sam_image_only_message_is_shown_everywhere(run, sam_demo):
    conv = _sam_image(sam_demo)
    msg = conv.messages[1]
    assert msg.attachments == [{"type": "image", "url": URL}, {"type": "text", "text": "a caption"}]
    assert not msg.hidden  # SAM shows a message with content parts (docs/formats/sam.md §10.4)
    assert f"*[image] {URL}*" in render.to_markdown(conv) and "a caption" in render.to_markdown(conv)
    page = html.conversation_page(conv, conv.messages)
    assert f"[image] {URL}" in page and "a caption" in page
    assert URL in render.to_text(conv)
    r = run("--root", sam_demo, "export", SAM_ID[:8], "--to", "json")
    assert json.loads(r.stdout)["messages"][1]["attachments"][0] == {"type": "image", "url": URL}


def test_a_mermaid_user_image_is_shown_and_its_loss_in_a_package_is_said(run, mermaid_demo):
    p = mermaid_demo / ".mermaid" / "conversations" / f"{MERMAID_ID}.json"
    doc = json.loads(p.read_text())
    user = next(m for m in doc["messages"] if m["role"] == "User")
    user["images"] = [base64.b64encode(b"\x89PNG" + b"\0" * 2996).decode()]
    user["image_numbers"] = [1]
    p.write_text(json.dumps(doc, indent=2))
    conv = open_store(str(mermaid_demo), cache=False).load(MERMAID_ID, [])
    msg = next(m for m in conv.messages if m.role == "user")
    assert msg.attachments == [{"type": "image", "bytes": 3000}]
    assert "[image, 3,000 bytes, in the file]" in render.to_markdown(conv)
    r = run("--root", mermaid_demo, "export", MERMAID_ID, "--to", "sam-package")
    assert r.exit_code == 0 and json.loads(r.stdout)["formatVersion"] == "1.0"
    assert "info: package-images: " in r.stderr and "1 image" in r.stderr


def test_a_mermaid_images_size_is_its_decoded_size_padding_or_not():
    from samctl.stores.mermaid.decode import images

    for raw in (b"x", b"xy", b"xyz", b"\x89PNG" + b"\0" * 2997):
        padded = base64.b64encode(raw).decode()
        assert images({"images": [padded, padded.rstrip("=")]}) == [{"type": "image", "bytes": len(raw)}] * 2
    assert images({"images": ["===="]}) == [{"type": "image", "bytes": 1}]  # not base64: never below zero
