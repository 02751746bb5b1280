"""The shape of samctl/ (docs/ARCHITECTURE.md), read from its imports with an AST walk: data flows one way.

    cli -> core -> {search, attic, render, report} -> stores -> {model, timeparse, importance, safetext, lock, fs, errors}

Every import counts, at the top of a module or inside a function.  A layer imports only layers below it
(search, attic, render and report are siblings: none imports another); no import cycles; a concrete store package
(``stores/<name>/``) is imported only from inside ``stores/``, where the registry (``stores/__init__``) picks it;
nothing outside ``stores/`` compares a store's name with a literal.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "samctl"
RANK = {
    "__main__": 6,
    "cli": 5,
    "tui": 5,
    "core": 4,
    "search": 3,
    "attic": 3,
    "render": 3,
    "report": 3,
    "stores": 2,
}  # else 1 (bottom)


def modules(pkg: Path) -> dict[str, Path]:
    out = {}
    for p in pkg.rglob("*.py"):
        parts = list(p.relative_to(pkg.parent).with_suffix("").parts)
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = p
    return out


def imports(name: str, path: Path, known: set) -> set:
    """The samctl modules ``name`` imports (``from x import y`` counts as x.y when that is a module)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = name.split(".")[: len(name.split(".")) - node.level + (path.name == "__init__.py")]
                base = ".".join(up + ([node.module] if node.module else []))
            targets = [base] + [f"{base}.{a.name}" for a in node.names]
        else:
            continue
        for t in targets:
            while t and t not in known:
                t = t.rpartition(".")[0]
            if t and t != name:
                found.add(t)
    return found


def graph(pkg: Path = PKG) -> dict[str, set]:
    mods = modules(pkg)
    return {m: imports(m, p, set(mods)) for m, p in mods.items()}


def layer(mod: str) -> str:
    return mod.split(".")[1] if "." in mod else ""


def rank(mod: str) -> int:
    return RANK.get(layer(mod), 1 if "." in mod else 0)


def wrong_way(g: dict) -> list:
    """Imports of a layer at or above the importer's (the bottom modules may use each other: the cycle
    check keeps them in order)."""
    return sorted(
        (m, t)
        for m, ts in g.items()
        for t in ts
        if layer(t) != layer(m)
        and rank(t) >= rank(m)
        and rank(t) > 0
        and not rank(t) == rank(m) == 1
        and (m, layer(t)) not in BESIDE
    )


# tui/ (samctl browse's screens) sits beside cli/: only the command that starts it imports it.
BESIDE = {("samctl.cli.browse", "tui")}


def cycles(g: dict) -> list:
    """Strongly connected components of more than one module (a package's __init__ re-exporting its own
    submodules is not a cycle of design)."""
    g = {m: {t for t in ts if not t.startswith(m + ".")} for m, ts in g.items()}
    index, low, stack, out = {}, {}, [], []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in g.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while not comp or comp[-1] != v:
                comp.append(stack.pop())
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(g):
        if v not in index:
            visit(v)
    return out


def concrete(mod: str, pkg: Path = PKG) -> str | None:
    """The concrete store package ``mod`` belongs to (``stores/<name>/``), if any."""
    parts = mod.split(".")
    return parts[2] if len(parts) > 2 and parts[1] == "stores" and (pkg / "stores" / parts[2]).is_dir() else None


def store_imports(g: dict, pkg: Path = PKG) -> list:
    """Imports of a concrete store package from outside ``stores/`` (where the registry picks the store), or
    from another concrete store (what two stores share lives in ``stores/`` itself, e.g. ``stores/sqlite``)."""
    return sorted(
        (m, t)
        for m, ts in g.items()
        for t in ts
        if concrete(t, pkg) and (layer(m) != "stores" or concrete(m, pkg) not in (None, concrete(t, pkg)))
    )


def name_branches(pkg: Path = PKG) -> list:
    names = {p.name for p in (pkg / "stores").iterdir() if p.is_dir()} | {"sam", "mermaid", "claude-code"}
    out = []
    for mod, path in modules(pkg).items():
        if layer(mod) == "stores":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Compare):
                sides = [node.left, *node.comparators]
                literals = {
                    e.value
                    for s in sides
                    for e in ([s] + list(getattr(s, "elts", [])))
                    if isinstance(e, ast.Constant) and isinstance(e.value, str)
                }
                if (
                    any(isinstance(s, ast.Attribute) and s.attr in ("name", "store") for s in sides)
                    and literals & names
                ):
                    out.append(f"{mod}:{node.lineno}")
    return out


def test_every_import_goes_down_the_layers():
    assert wrong_way(graph()) == []


def test_no_import_cycles():
    assert cycles(graph()) == []


def test_only_the_registry_imports_a_concrete_store():
    assert store_imports(graph()) == []


def test_nothing_outside_the_stores_branches_on_a_store_name():
    assert name_branches() == []


def _tree(tmp_path, files: dict) -> Path:
    for rel, text in files.items():
        p = tmp_path / "samctl" / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    for name in ("sam", "llm"):
        (tmp_path / "samctl" / "stores" / name).mkdir(parents=True, exist_ok=True)
    return tmp_path / "samctl"


@pytest.mark.parametrize(
    "files,check",
    [
        ({"stores/base.py": "from samctl.core import check\n", "core/check.py": ""}, wrong_way),
        ({"search/a.py": "from samctl.attic import b\n", "attic/b.py": ""}, wrong_way),
        ({"report/a.py": "from samctl.core import b\n", "core/b.py": ""}, wrong_way),
        ({"core/a.py": "def f():\n    from samctl.core import b\n", "core/b.py": "import samctl.core.a\n"}, cycles),
        ({"core/a.py": "from samctl.stores.sam import store\n", "stores/sam/store.py": ""}, store_imports),
        ({"stores/llm/a.py": "from samctl.stores.sam import store\n", "stores/sam/store.py": ""}, store_imports),
        ({"cli/ls.py": "from samctl.tui import app\n", "tui/app.py": ""}, wrong_way),  # only cli/browse.py
        ({"tui/app.py": "from samctl.cli import common\n", "cli/common.py": ""}, wrong_way),
        ({"core/a.py": "from samctl.tui import app\n", "tui/app.py": ""}, wrong_way),
    ],
)
def test_the_checks_catch_what_they_forbid(tmp_path, files, check):
    pkg = _tree(tmp_path, files)
    g = graph(pkg)
    assert check(g, pkg) if check is store_imports else check(g)


def test_browse_alone_may_start_the_tui(tmp_path):
    pkg = _tree(
        tmp_path,
        {"cli/browse.py": "from samctl.tui import app\n", "tui/app.py": "from samctl.core import a\n", "core/a.py": ""},
    )
    assert wrong_way(graph(pkg)) == []


def test_a_name_branch_is_caught(tmp_path):
    pkg = _tree(tmp_path, {"core/a.py": "def f(store):\n    return store.name == 'sam'\n"})
    assert name_branches(pkg) == ["samctl.core.a:2"]


def unexplained_lazy_imports(pkg: Path = PKG) -> list:
    """Imports inside a function outside ``cli/`` (where they keep start-up fast) without a one-line reason
    (``# (lazy: ...)``): the others belong at the top of the module."""
    out = []
    for mod, path in modules(pkg).items():
        if layer(mod) == "cli":
            continue
        lines = path.read_text(encoding="utf-8").splitlines()
        for f in ast.walk(ast.parse("\n".join(lines))):
            if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)):
                out += [
                    f"{mod}:{n.lineno}"
                    for n in ast.walk(f)
                    if isinstance(n, (ast.Import, ast.ImportFrom)) and "# (lazy: " not in lines[n.lineno - 1]
                ]
    return sorted(set(out))


def test_every_lazy_import_says_why():
    assert unexplained_lazy_imports() == []
