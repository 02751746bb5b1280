"""`samctl index` names --no-cache only when it was given (issue #31, finding 23)."""

from tests.cli.readonly_stores import demo_copy
from tests.conftest import fingerprint


def test_index_names_no_cache_only_when_given(run, tmp_path):
    llm = demo_copy(tmp_path, "llm")
    r = run("--no-cache", "--root", llm, "index")
    assert r.exit_code == 2 and "--no-cache turns caches off" in r.stderr
    export = demo_copy(tmp_path, "chatgpt")  # a store samctl keeps no cache for, --no-cache or not
    before = fingerprint(export)
    r = run("--root", export / "chatgpt-export.zip", "index")
    assert r.exit_code == 2 and "--no-cache" not in r.stderr and "keeps none for this store" in r.stderr, r.stderr
    assert fingerprint(export) == before
