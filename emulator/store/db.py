"""The one module that opens the database. SQLite (WAL) by default, any SQLAlchemy URL otherwise."""

import contextlib
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import create_engine, event, inspect
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session, sessionmaker

from emulator.store.changes import CommitHook, Listener
from emulator.store.repositories import Repository
from emulator.store.tables import Base


def _sqlite_engine(url: str) -> Engine:
    # The api and the controller share the file: WAL lets readers run beside the writer, and
    # BEGIN IMMEDIATE takes the write lock up front so two writers queue instead of deadlocking.
    engine = create_engine(url, connect_args={"timeout": 30, "check_same_thread": False})

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn, _record):
        dbapi_conn.isolation_level = None
        cursor = dbapi_conn.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA busy_timeout=30000")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn):
        # A read-only snapshot (Store.reading) takes no lock: it must never wait for, nor hold up, a writer.
        conn.exec_driver_sql("BEGIN" if conn.get_execution_options().get("read_only") else "BEGIN IMMEDIATE")

    return engine


def _add_new_columns(conn) -> None:
    """A data directory from an earlier version gains the nullable columns added since (create_all only
    creates missing tables). Anything beyond adding a nullable column needs a real migration."""
    existing = inspect(conn)
    for table in Base.metadata.sorted_tables:
        if not existing.has_table(table.name):
            continue
        have = {column["name"] for column in existing.get_columns(table.name)}
        for column in table.columns:
            if column.name not in have and column.nullable:
                kind = column.type.compile(dialect=conn.dialect)
                conn.exec_driver_sql(f'ALTER TABLE {table.name} ADD COLUMN "{column.name}" {kind}')


class Store:
    def __init__(self, url: str):
        sqlite = url.startswith("sqlite")
        self.engine = _sqlite_engine(url) if sqlite else create_engine(url, pool_pre_ping=True)
        # SQLite has one writer at a time. Left to its busy handler, a process's threads poll for the lock with
        # sleeps of up to 100 ms and leave it idle meanwhile (the api's requests waited a second and more under
        # a burst of submissions); queued on a lock of the process, the next one goes the moment it is free.
        self._writers = threading.RLock() if sqlite else contextlib.nullcontext()
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)
        self._commits = CommitHook(self._sessions)
        with self.engine.begin() as conn:
            Base.metadata.create_all(conn)
            _add_new_columns(conn)

    @contextmanager
    def transaction(self) -> Iterator[Repository]:
        with self._writers:
            session: Session = self._sessions()
            try:
                with session.begin():
                    yield Repository(session)
            finally:
                written = self._commits.committed(session)
                session.close()
        self._commits.tell(written)  # once the writer lock is free: a slow listener holds up no other writer

    def after_commit(self, listener: Listener) -> None:
        """Have `listener` told the tables each committed transaction() of this Store wrote, once the commit is
        done and the writer lock released, before transaction() returns to its caller."""
        self._commits.listen(listener)

    @contextmanager
    def reading(self) -> Iterator[Repository]:
        """A read-only snapshot, for readers that poll often (the scoring router): no write lock taken."""
        session = Session(self.engine.execution_options(read_only=True))
        try:
            yield Repository(session)
        finally:
            session.close()  # rolls the snapshot back: nothing was written

    def close(self) -> None:
        self.engine.dispose()
