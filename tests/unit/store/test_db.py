"""The store opens a data directory written by an earlier version: the nullable columns added since appear."""

import sqlite3

from emulator.store.db import Store
from emulator.store.tables import Node


def test_an_older_database_gains_the_new_nullable_columns(tmp_path):
    path = tmp_path / "amlemu.db"
    Store(f"sqlite:///{path}").close()
    with sqlite3.connect(path) as old:  # as an earlier version left it: without nodes.idle_since
        old.execute("ALTER TABLE nodes DROP COLUMN idle_since")
    assert "idle_since" not in {row[1] for row in sqlite3.connect(path).execute("PRAGMA table_info(nodes)")}
    store = Store(f"sqlite:///{path}")
    assert "idle_since" in {row[1] for row in sqlite3.connect(path).execute("PRAGMA table_info(nodes)")}
    with store.transaction() as repo:
        assert repo.session.query(Node).count() == 0
    store.close()
