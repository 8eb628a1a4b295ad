"""The store opens a data directory written by an earlier version: the nullable columns added since appear."""

from datetime import UTC, datetime

from sqlalchemy import create_engine, inspect

from emulator.store.db import Store
from emulator.store.tables import Event, Node, Workspace


def _columns(url: str, table: str) -> set[str]:
    engine = create_engine(url)
    try:
        return {column["name"] for column in inspect(engine).get_columns(table)}
    finally:
        engine.dispose()


def test_an_older_database_gains_the_new_nullable_columns(database_url):
    Store(database_url).close()
    old = create_engine(database_url)
    with old.begin() as conn:  # as an earlier version left it: without nodes.idle_since
        conn.exec_driver_sql("ALTER TABLE nodes DROP COLUMN idle_since")
    old.dispose()
    assert "idle_since" not in _columns(database_url, "nodes")
    store = Store(database_url)
    assert "idle_since" in _columns(database_url, "nodes")
    with store.transaction() as repo:
        assert repo.session.query(Node).count() == 0
    store.close()


def test_a_nul_in_a_name_finds_nothing_and_is_kept_when_written(database_url):
    """PostgreSQL's text holds no NUL: a %00 in a URL's name is looked up and written without a server error."""
    store = Store(database_url)
    now = datetime.now(UTC)
    with store.transaction() as repo:
        assert repo.workspace("/subscriptions/s/workspaces/\x00") is None
        assert repo.workspaces("s\x00") == []
        repo.add(Workspace(key="w\x00", subscription="s", resource_group="r", name="w\x00", location="l",
                           body={"tags": {"t": "\x00"}}, created_at=now, modified_at=now))
    with store.transaction() as repo:
        assert repo.workspace("w\x00").body == {"tags": {"t": "\x00"}}
    store.close()


def test_rows_added_together_are_inserted_in_one_statement(database_url):
    """The ORM's batched INSERT (insertmanyvalues on PostgreSQL) of rows with database-made ids."""
    store = Store(database_url)
    with store.transaction() as repo:
        for kind in ("node.added", "node.up", "job.status"):
            repo.add(Event(workspace_key="w", time=datetime.now(UTC), kind=kind, subject="s", data={"k": "\x00"}))
    with store.transaction() as repo:
        assert [e.kind for e in repo.events_after(None, 0, 10)] == ["node.added", "node.up", "job.status"]
    store.close()
