"""The one module that opens the database. SQLite (WAL) by default, PostgreSQL by URL
(postgresql+psycopg://user:password@host/db); either way one writer at a time across the stack's processes."""

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import create_engine, event, inspect, text
from sqlalchemy.engine import Engine
from sqlalchemy.exc import OperationalError
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


# pg_advisory_xact_lock's key for the store's writers: "amlemu" in ASCII.
WRITER_LOCK = 0x616D6C656D75
CONNECT_TIMEOUT_SECONDS = 60.0  # a PostgreSQL starting beside the stack (compose) has this long to accept connections


def _postgres_engine(url: str) -> Engine:
    # The code reads then writes (a job's ranks, a cluster's nodes) as SQLite's one writer lets it: each write
    # transaction takes one advisory lock first, so writers of every process queue as on SQLite and each sees
    # what the one before it committed (READ COMMITTED). Held until commit or rollback; waited for at most 30 s,
    # as SQLite's busy timeout, then the transaction fails rather than hang.
    engine = create_engine(url, pool_pre_ping=True)

    @event.listens_for(engine, "begin")
    def _on_begin(conn):
        if not conn.get_execution_options().get("read_only"):
            conn.exec_driver_sql("SET LOCAL lock_timeout = '30s'")
            conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock({WRITER_LOCK})")

    @event.listens_for(engine, "before_cursor_execute", retval=True)
    def _without_nul(conn, cursor, statement, parameters, context, executemany):
        # PostgreSQL's text holds no NUL (SQLite's does): one in a name looked up (a %00 in a URL) or written becomes
        # U+FFFD, so the lookup finds nothing and the write is kept, instead of the driver's error. One mapping, or a
        # list of them (executemany; insertmanyvalues' batches come as one mapping though flagged executemany).
        return statement, _nul_free(parameters)

    return engine


def _nul_free(value):
    if isinstance(value, str):
        return value.replace("\x00", "\ufffd") if "\x00" in value else value
    if isinstance(value, dict):
        return {key: _nul_free(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_nul_free(item) for item in value)
    return value


def _wait_for_server(engine: Engine, timeout: float = CONNECT_TIMEOUT_SECONDS) -> None:
    """A database server started beside the stack may not accept connections yet."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with engine.connect() as conn:
                conn.execute(text("SELECT 1"))
            return
        except OperationalError:
            if time.monotonic() >= deadline:
                raise
            time.sleep(1)


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
        self.engine = _sqlite_engine(url) if sqlite else _postgres_engine(url)
        # One writer at a time (SQLite's lock, PostgreSQL's advisory lock). Left to SQLite's busy handler, a
        # process's threads poll for the lock with sleeps of up to 100 ms and leave it idle meanwhile (the api's
        # requests waited a second and more under a burst of submissions); queued on a lock of the process, the next
        # one goes the moment it is free, and holds no pooled connection while it waits.
        self._writers = threading.RLock()
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)
        self._commits = CommitHook(self._sessions)
        # A snapshot for readers: SQLite's deferred transaction is one; PostgreSQL's READ COMMITTED is not.
        self._reader = self.engine.execution_options(read_only=True) if sqlite else self.engine.execution_options(
            read_only=True, isolation_level="REPEATABLE READ", postgresql_readonly=True)
        if not sqlite:
            _wait_for_server(self.engine)
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
        session = Session(self._reader)
        try:
            yield Repository(session)
        finally:
            session.close()  # rolls the snapshot back: nothing was written

    def close(self) -> None:
        self.engine.dispose()
