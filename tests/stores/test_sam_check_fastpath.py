"""check's SAM validation asks the compiled predicates first and walks the schema only for a document
with an error (issue #32): its problems are ``schema.validate_conversation``'s, warnings included,
in the same order, on every document orjson can give."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from samctl.stores.sam import checks, schema
from tests.stores.test_sam_decodable import RICH_PATHS, _strict, rich
from tests.stores.test_sam_schema import DELETE, ERROR_CASES, example, json_values, mutate


def agrees(doc) -> None:
    strict = _strict(doc)
    if isinstance(strict, dict):
        assert checks._problems(strict) == schema.validate_conversation(strict)


def test_documents_with_warnings_and_errors_agree():
    doc = rich()
    m = doc["messages"][0]
    m["isStreaming"] = True
    m["toolStatus"] = "running"
    doc["enabledMiniPromptIds"] = []
    assert schema.validate_conversation(_strict(doc)), "the warnings are there"
    agrees(doc)
    for path, value, _code, _where in ERROR_CASES:
        agrees(mutate(example(), path, value))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(RICH_PATHS), json_values | st.just(DELETE))
def test_random_mutations_agree(path, value):
    doc = rich()
    try:
        mutate(doc, path, value)
    except (KeyError, IndexError, TypeError):
        return
    agrees(doc)


def test_the_schema_answer_is_kept_per_schema_never_across_two(tmp_path):
    """check reads the schema of thousands of memory.db files SAM wrote alike: the answer is kept by
    the text of sqlite_master, so a database whose schema differs is still examined."""
    import sqlite3

    from samctl.stores.sam import memorydb, sqlitefile

    clean, extra, again = (tmp_path / f"{n}.db" for n in ("clean", "extra", "again"))
    for p in (clean, extra, again):
        memorydb.create_memory_db(p)
    with sqlite3.connect(extra) as db:
        db.execute(f'ALTER TABLE "{memorydb.MEMORY_TABLE}" ADD COLUMN surplus TEXT')
    answers = []
    for p in (clean, extra, again, extra):
        conn = sqlite3.connect(f"file:{p}?mode=ro", uri=True)
        try:
            answers.append(sqlitefile.schema_problems(conn, memorydb.MEMORY_TABLE))
        finally:
            conn.close()
    assert answers[0] == answers[2] == [] and answers[1] == answers[3] == ["unexpected column surplus"]
    answers[1].append("a caller's own change")
    assert sqlitefile.schema_problems(sqlite3.connect(extra), memorydb.MEMORY_TABLE) == ["unexpected column surplus"]


def test_the_write_check_is_kept_per_schema_never_across_two(tmp_path):
    import sqlite3

    from samctl.stores.sam import memorydb, sqlitefile

    clean, trigger = tmp_path / "clean.db", tmp_path / "trigger.db"
    for p in (clean, trigger):
        memorydb.create_memory_db(p)
    with sqlite3.connect(trigger) as db:
        db.execute(f'CREATE TRIGGER t AFTER DELETE ON "{memorydb.MEMORY_TABLE}" BEGIN SELECT 1; END')
    got = [sqlitefile.exact_schema_problem(sqlite3.connect(p), memorydb.MEMORY_TABLE) for p in (clean, trigger, clean)]
    assert got == [None, "unexpected trigger t", None]
