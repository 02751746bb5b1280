"""`samctl index` names --no-cache only when it was given (issue #31, finding 23)."""

from tests.cli.readonly_stores import demo_copy
from tests.conftest import fingerprint


def test_index_names_no_cache_only_when_given(run, tmp_path, monkeypatch):
    from samctl.stores.base import Store

    llm = demo_copy(tmp_path, "llm")
    r = run("--no-cache", "--root", llm, "index")
    assert r.exit_code == 2 and "--no-cache turns caches off" in r.stderr
    init = Store.__init__

    def without_cache(self, *a, **kw):  # a store that runs without the cache for no reason the user gave
        init(self, *a, **kw)
        self.use_cache = False
    monkeypatch.setattr(Store, "__init__", without_cache)
    before = fingerprint(llm)
    r = run("--root", llm, "index")
    assert r.exit_code == 2 and "--no-cache" not in r.stderr and "uses no cache" in r.stderr, r.stderr
    assert fingerprint(llm) == before
