"""Self-contained HTML pages for conversations, and an index page that lists and filters them.

Invariants:
- Every piece of text that comes from a transcript or a store (titles, ids,
  contents, tool names and arguments, reasoning, file names) goes through
  ``html.escape`` (``_e``) before it reaches the page; no other text is
  interpolated.  A transcript can therefore never inject markup or script.
- A page needs nothing but itself: the CSS and the small script are inline, and
  a Content-Security-Policy meta tag forbids everything else (no network, no
  frames, no forms, no plugins); the inline style and script are allowed by
  their SHA-256 hashes, not by ``'unsafe-inline'``.
- Without JavaScript everything still works: tool calls, tool results and
  reasoning are ``<details>`` blocks.  The script adds "expand/collapse all",
  opens every block for printing, and filters the index.
"""

from __future__ import annotations

import base64
import hashlib
import re
from datetime import datetime, timezone
from html import escape
from urllib.parse import quote

from samctl import __version__
from samctl.render import text as render
from samctl.render.text import args_json, result_label, resume_text
from samctl.timeparse import format_local
from samctl.toollabel import tool_label

CSS = """
:root{--fg:#1d1d1f;--muted:#6b6b70;--bg:#fff;--card:#f6f6f8;--line:#dedee3;--user:#0a6b3d;--assistant:#0b4f8a;
--tool:#8a5a00;--reasoning:#6b2f8a;--system:#444;--err:#b00020;--code:#f0f0f3}
@media (prefers-color-scheme:dark){:root{--fg:#e8e8ea;--muted:#a0a0a8;--bg:#161618;--card:#202024;--line:#38383e;
--user:#5fd19b;--assistant:#7db7ff;--tool:#e0b45a;--reasoning:#cf9bf0;--system:#bbb;--err:#ff7b8a;--code:#2a2a30}}
*{box-sizing:border-box}
html{-webkit-text-size-adjust:100%}
body{margin:0 auto;max-width:52rem;padding:1rem;font:16px/1.5 -apple-system,BlinkMacSystemFont,"Segoe UI",Roboto,
"Helvetica Neue",Arial,sans-serif;color:var(--fg);background:var(--bg);overflow-wrap:anywhere}
h1{font-size:1.5rem;line-height:1.25;margin:.5rem 0}
a{color:var(--assistant)}
code,pre{font:0.88em/1.45 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
code{background:var(--code);padding:0 .25em;border-radius:3px}
pre{background:var(--code);padding:.6rem .75rem;border-radius:6px;overflow-x:auto;white-space:pre-wrap;margin:.5rem 0}
pre code{background:none;padding:0}
.facts{display:flex;flex-wrap:wrap;gap:.25rem 1rem;margin:.25rem 0 1rem;padding:0;color:var(--muted);font-size:.9rem}
.facts div{display:flex;gap:.35rem}.facts dt{font-weight:600}.facts dd{margin:0}
.tools{display:flex;flex-wrap:wrap;gap:.5rem;align-items:center;margin-bottom:1rem}
button{font:inherit;font-size:.9rem;padding:.3rem .7rem;border:1px solid var(--line);border-radius:6px;
background:var(--card);color:var(--fg);cursor:pointer}
.msg{border-left:4px solid var(--line);background:var(--card);border-radius:6px;padding:.5rem .8rem;margin:.75rem 0}
.msg>header{display:flex;flex-wrap:wrap;gap:.5rem;align-items:baseline;font-size:.85rem;color:var(--muted)}
.role{font-weight:700;text-transform:uppercase;letter-spacing:.04em}
.role-user{border-left-color:var(--user)}.role-user .role{color:var(--user)}
.role-assistant{border-left-color:var(--assistant)}.role-assistant .role{color:var(--assistant)}
.role-tool{border-left-color:var(--tool)}.role-tool .role{color:var(--tool)}
.role-reasoning{border-left-color:var(--reasoning)}.role-reasoning .role{color:var(--reasoning)}
.role-system{border-left-color:var(--system)}.role-system .role{color:var(--system)}
.badge{border:1px solid var(--line);border-radius:999px;padding:0 .45rem;font-size:.75rem}
.text{white-space:pre-wrap;margin:.35rem 0}
details{margin:.4rem 0;border:1px solid var(--line);border-radius:6px;padding:.25rem .6rem;background:var(--bg)}
summary{cursor:pointer;font-size:.9rem;padding:.15rem 0}
details.reasoning summary{color:var(--reasoning)}
details.call summary,details.result summary,details.action summary{color:var(--tool)}
.error,.status-error{color:var(--err)}
.empty{color:var(--muted);font-style:italic}
footer{color:var(--muted);font-size:.85rem;margin:2rem 0 1rem;border-top:1px solid var(--line);padding-top:.5rem}
#filter{width:100%;font:inherit;padding:.5rem .7rem;border:1px solid var(--line);border-radius:6px;
background:var(--card);color:var(--fg)}
#list{list-style:none;padding:0}#list li{padding:.5rem 0;border-bottom:1px solid var(--line)}
#list .sub{display:block;color:var(--muted);font-size:.85rem}
@media (max-width:32rem){body{padding:.6rem;font-size:15px}.msg{padding:.4rem .55rem}h1{font-size:1.25rem}}
@media print{body{max-width:none;color:#000;background:#fff;font-size:11pt}.tools,#filter,nav{display:none}
.msg{break-inside:avoid;background:none;border:1px solid #ccc;border-left-width:4px}
details{border:none;padding:0}pre{white-space:pre-wrap;background:#f4f4f4}a{color:#000}}
""".strip()

JS = """
(function(){"use strict";
function all(s){return Array.prototype.slice.call(document.querySelectorAll(s));}
function setAll(open){all("details").forEach(function(d){d.open=open;});}
var ex=document.getElementById("expand-all"),co=document.getElementById("collapse-all");
if(ex){ex.addEventListener("click",function(){setAll(true);});}
if(co){co.addEventListener("click",function(){setAll(false);});}
var closed=null;
window.addEventListener("beforeprint",function(){closed=all("details:not([open])");
closed.forEach(function(d){d.open=true;});});
window.addEventListener("afterprint",function(){if(closed){closed.forEach(function(d){d.open=false;});}closed=null;});
var f=document.getElementById("filter");
if(f){var items=all("#list li"),count=document.getElementById("count");
var apply=function(){var q=f.value.trim().toLowerCase(),n=0;items.forEach(function(li){
var ok=!q||(li.getAttribute("data-text")||"").indexOf(q)>=0;li.hidden=!ok;if(ok){n++;}});
count.textContent=q?(n+" of "+items.length+" conversations"):(items.length+" conversations");};
f.addEventListener("input",apply);apply();}
})();
""".strip()


def _sha256(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii") + "'"


CSP = (
    "default-src 'none'; "
    f"style-src {_sha256(CSS)}; script-src {_sha256(JS)}; "
    "img-src data:; base-uri 'none'; form-action 'none'"
)


def _e(s) -> str:
    return escape("" if s is None else str(s), quote=True)


def _head(title: str) -> str:
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        '<meta name="referrer" content="no-referrer">\n'
        f'<meta name="generator" content="samctl {_e(__version__)}">\n'
        f"<title>{_e(title)}</title>\n<style>{CSS}</style>\n</head>\n<body>\n"
    )


_TAIL = f"<script>{JS}</script>\n</body>\n</html>\n"

_FENCE = re.compile(r"^(`{3,}|~{3,})[ \t]*([^\n`]*)\n(.*?)(?:^\1[ \t]*$|\Z)", re.M | re.S)
_INLINE_CODE = re.compile(r"`([^`\n]+)`")


def _prose(text: str) -> str:
    """Escaped text with `inline code` marked up; newlines kept by CSS (pre-wrap)."""
    return _INLINE_CODE.sub(lambda m: f"<code>{m.group(1)}</code>", _e(text))


def body_html(text: str) -> str:
    """Message text as HTML: fenced code blocks become <pre><code>, the rest stays text."""
    if not text:
        return ""
    out = []
    pos = 0
    for m in _FENCE.finditer(text):
        before = text[pos : m.start()].strip("\n")
        if before:
            out.append(f'<div class="text">{_prose(before)}</div>')
        lang = m.group(2).strip().split(" ")[0]
        cls = f' class="lang-{_e(lang)}"' if lang else ""
        out.append(f"<pre><code{cls}>{_e(m.group(3).rstrip(chr(10)))}</code></pre>")
        pos = m.end()
    rest = text[pos:].strip("\n")
    if rest:
        out.append(f'<div class="text">{_prose(rest)}</div>')
    return "\n".join(out)


def _pretty_args(arguments) -> str:
    return args_json(arguments, 2)


def _iso_utc(ts) -> str:
    if ts is None:
        return ""

    try:
        return datetime.fromtimestamp(ts, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    except (OverflowError, OSError, ValueError):
        return ""


def _action_html(a: dict) -> str:
    status, output = render.action_outcome(a)
    label = f"{a.get('action_type', '?')} {a.get('target', '')}".strip()
    details = a.get("details")
    extra = ""
    if isinstance(details, dict):
        for key, field in (("Preview", "text"), ("FileContent", "content"), ("Diff", "diff")):
            if isinstance(details.get(key), dict) and isinstance(details[key].get(field), str):
                extra = details[key][field]
    body = "".join(f"<pre>{_e(x)}</pre>" for x in (output, extra) if isinstance(x, str) and x)
    st = f' <span class="status-{_e(status)}">{_e(status)}</span>' if status else ""
    return f'<details class="action"><summary>⚙ {_e(label)}{st}</summary>{body}</details>'


def message_html(msg, n: int) -> str:
    role = msg.role if msg.role in ("user", "assistant", "tool", "reasoning", "system") else "system"
    badges = []
    if msg.pinned:
        badges.append('<span class="badge">pinned</span>')
    if msg.hidden:
        badges.append('<span class="badge">hidden in the app</span>')
    when = format_local(msg.timestamp_ts) if msg.timestamp_ts is not None else (msg.timestamp or "")
    head = (
        f'<header><span class="role">{_e(role)}</span>'
        + (f'<span class="tool-name"><code>{_e(msg.tool_name)}</code></span>' if msg.tool_name else "")
        + f'<time datetime="{_e(_iso_utc(msg.timestamp_ts))}">{_e(when)}</time>{"".join(badges)}</header>'
    )
    parts = [f'<article class="msg role-{role}" id="m{n}" data-role="{role}">', head]
    if msg.reasoning:
        parts.append(f'<details class="reasoning"><summary>Reasoning</summary>{body_html(msg.reasoning)}</details>')
    if role == "tool":
        status = msg.tool_status or ""
        label = "Result" + (f" of {msg.tool_name}" if msg.tool_name else "")
        facts = result_label(msg).split(" · ")[1:]  # exit code and wall time, where known
        label += "".join(f" · {x}" for x in facts)
        st = f' · <span class="status-{_e(status)}">{_e(status)}</span>' if status else ""
        inner = f"<pre>{_e(msg.content)}</pre>" if msg.content else '<p class="empty">(no output)</p>'
        parts.append(f'<details class="result"><summary>{_e(label)}{st}</summary>{inner}</details>')
    elif msg.content:
        parts.append(body_html(msg.content))
    elif not msg.reasoning and not msg.tool_calls and not msg.attachments:
        parts.append('<p class="empty">(empty)</p>')
    for a in msg.attachments:  # shown as text: the page loads nothing (its CSP allows no images)
        parts.append(
            body_html(a["text"])
            if a.get("type") == "text"
            else f'<p class="attachment"><code>{_e(render.attachment_line(a))}</code></p>'
        )
    for tc in msg.tool_calls:  # labelled as the app shows it (Bash(git status)); the call id only in JSON
        parts.append(
            f'<details class="call"><summary><code>{_e(tool_label(tc.name, tc.arguments))}</code></summary>'
            f"<pre><code>{_e(_pretty_args(tc.arguments))}</code></pre></details>"
        )
    for a in msg.actions:
        if isinstance(a, dict):
            parts.append(_action_html(a))
    parts.append("</article>")
    return "\n".join(parts)


def conversation_page(conv, messages, hidden_count: int = 0, index_link: bool = False) -> str:
    """One conversation as a complete HTML document (``messages``: the ones to show, in order)."""
    m = conv.meta
    facts = [("id", f"<code>{_e(m.id)}</code>"), ("store", _e(m.store))]
    if conv.model:
        facts.append(("model", _e(conv.model)))
    facts.append(("created", _e(format_local(m.created_ts) if m.created_ts is not None else (m.created or "-"))))
    facts.append(("updated", _e(format_local(m.updated_ts) if m.updated_ts is not None else (m.updated or "-"))))
    facts.append(("messages", str(len(messages))))
    for key, value in (("project", m.project), ("branch", m.branch), ("continues", m.continues)):
        if value:
            facts.append((key, f"<code>{_e(value)}</code>"))
    if resume_text(conv):
        facts.append(("resume", f"<code>{_e(resume_text(conv))}</code>"))
    out = [
        _head(m.title or m.id),
        '<header class="conv">',
        f"<h1>{_e(m.title)}</h1>",
        '<dl class="facts">' + "".join(f"<div><dt>{k}</dt><dd>{v}</dd></div>" for k, v in facts) + "</dl>",
        '<nav class="tools"><button type="button" id="expand-all">Expand all</button>'
        '<button type="button" id="collapse-all">Collapse all</button>'
        + ('<a href="index.html">All conversations</a>' if index_link else "")
        + "</nav>",
        "</header>",
        '<main id="transcript">',
    ]
    for n, msg in enumerate(messages, 1):
        out.append(message_html(msg, n))
    out.append("</main>")
    note = (
        f" {hidden_count} message{'s' if hidden_count != 1 else ''} the app hides "
        f"{'were' if hidden_count != 1 else 'was'} left out (export with --all-messages to include them)."
        if hidden_count
        else ""
    )
    out.append(f"<footer>Exported by samctl {_e(__version__)}.{_e(note)}</footer>")
    out.append(_TAIL)
    return "\n".join(out)


def index_page(entries, title: str = "Conversations") -> str:
    """An index of exported pages: ``entries`` are dicts with file, id, title, updated_ts, messages, store."""
    out = [
        _head(title),
        f"<h1>{_e(title)}</h1>",
        '<input type="search" id="filter" placeholder="Filter by title or id" '
        'aria-label="Filter conversations" autocomplete="off">',
        f'<p id="count">{len(entries)} conversations</p>',
        '<ul id="list">',
    ]
    for en in entries:
        when = format_local(en.get("updated_ts")) if en.get("updated_ts") is not None else ""
        text = f"{en.get('title', '')} {en.get('id', '')}".lower()
        sub = " · ".join(x for x in (when, f"{en.get('messages', 0)} messages", en.get("store", "")) if x)
        out.append(
            f'<li data-text="{_e(text)}"><a href="{_e(quote(en["file"]))}">{_e(en.get("title"))}</a>'
            f'<span class="sub"><code>{_e(en.get("id"))}</code> · {_e(sub)}</span></li>'
        )
    out.append("</ul>")
    out.append(_TAIL)
    return "\n".join(out)
