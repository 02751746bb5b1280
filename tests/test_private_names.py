"""No module uses another module's ``_private`` names (issue #21): what a module offers to others is public.

The rule, read with an AST walk of ``samctl/``: a ``_name`` belongs to the module that defines it, also
inside one package (``stores/sam/*`` share helpers through public names).  So ``from samctl.x import _y``
is forbidden, and so is ``obj._y`` unless this module itself defines ``_y`` (a function, class, assignment
or ``self._y = ...``: a class reading its own attributes on another instance).  ``self``/``cls`` and the
standard library's modules (``os._exit``) are not checked.
"""

from __future__ import annotations

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parents[1] / "samctl"


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def violations(path: Path, where: str = "") -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    own, foreign_modules = set(), set()
    for n in ast.walk(tree):
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            own.add(n.name)
        elif isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            own.add(n.id)
        elif isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store):
            own.add(n.attr)
        elif isinstance(n, ast.Import):
            foreign_modules |= {(a.asname or a.name).split(".")[0] for a in n.names if not a.name.startswith("samctl")}
    out = []
    for n in ast.walk(tree):
        if isinstance(n, ast.ImportFrom) and (n.level or (n.module or "").startswith("samctl")):
            out += [f"{where}:{n.lineno}: import {a.name}" for a in n.names if _private(a.name)]
        elif isinstance(n, ast.Attribute) and _private(n.attr) and n.attr not in own:
            base = n.value
            if isinstance(base, ast.Name) and (base.id in ("self", "cls") or base.id in foreign_modules):
                continue
            out.append(f"{where}:{n.lineno}: {ast.unparse(base)}.{n.attr}")
    return out


def test_no_module_uses_another_modules_private_names():
    found = []
    for p in sorted(PKG.rglob("*.py")):
        found += violations(p, str(p.relative_to(PKG.parent)))
    assert found == []


def test_the_check_catches_what_it_forbids(tmp_path):
    p = tmp_path / "m.py"
    p.write_text(
        "import os\nfrom samctl import fsafe\nfrom samctl.x import _y\n"
        "def f(store):\n    os._exit(0)\n    fsafe._step('a')\n    return store._parse()\n"
    )
    assert violations(p) == [":3: import _y", ":6: fsafe._step", ":7: store._parse"]
    p.write_text(
        "class C:\n    def __init__(self):\n        self._post = {}\n"
        "    def merge(self, other):\n        return other._post\n"
    )
    assert violations(p) == []
