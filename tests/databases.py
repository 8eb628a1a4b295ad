"""The state store's two databases for the tests: SQLite in the test's folder, and PostgreSQL, one server per test
session in a container of the locally built image (`amlemu build --postgres`), a fresh schema per test.

AMLEMU_TEST_POSTGRES_URL (a server's URL whose user may create databases) takes the place of the container."""

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import create_engine, text
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import OperationalError

from tests.cleanup import engine_with, remove_containers
from tests.waiting import wait_until

POSTGRES_IMAGE = os.environ.get("AMLEMU_POSTGRES_IMAGE", "amlemu/postgres:latest")
PASSWORD = "amlemu-tests"
# Durability is the engine's, not the tests': fsync off keeps a test's CREATE DATABASE in milliseconds.
FAST = ["-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off", "-c", "max_connections=200"]


def _answers(engine: Engine) -> bool:
    try:
        with engine.connect() as conn:
            return conn.execute(text("SELECT 1")).scalar() == 1
    except OperationalError:
        return False


@contextmanager
def postgres_container() -> Iterator[str]:
    """A PostgreSQL server in a container on a port of 127.0.0.1, for this session only: its admin URL."""
    client = engine_with(POSTGRES_IMAGE, "PostgreSQL", "--postgres")
    label = f"tests-postgres-{uuid.uuid4().hex[:10]}"
    # The cluster in the container's /dev/shm (a tmpfs it may write): nothing of it outlives the container.
    container = client.containers.run(POSTGRES_IMAGE, FAST, detach=True, shm_size="512m",
                                      environment={"POSTGRES_PASSWORD": PASSWORD, "PGDATA": "/dev/shm/pgdata"},
                                      labels={"amlemu.stack": label, "amlemu.it": "true"},
                                      ports={"5432/tcp": ("127.0.0.1", None)})
    try:
        container.reload()
        port = container.ports["5432/tcp"][0]["HostPort"]
        url = f"postgresql+psycopg://amlemu:{PASSWORD}@127.0.0.1:{port}/amlemu"
        engine = create_engine(url)
        wait_until(lambda: _answers(engine), timeout=60, message=f"PostgreSQL in {container.short_id} to answer")
        engine.dispose()
        yield url
    finally:
        remove_containers(client, {"label": [f"amlemu.stack={label}"]})
        client.close()


class Databases:
    """Fresh, empty schemas in the server's database, one per test, each dropped when its test ends: a schema and the
    store's tables in it take a third of a second, a database of its own a second and more."""

    def __init__(self, admin_url: str):
        self.admin_url = make_url(admin_url)
        self._admin = create_engine(admin_url, isolation_level="AUTOCOMMIT")

    @contextmanager
    def fresh(self) -> Iterator[str]:
        name = f"t_{uuid.uuid4().hex[:16]}"
        with self._admin.connect() as conn:
            conn.execute(text(f"CREATE SCHEMA {name}"))
        try:  # the store's connections find their tables (and make them) in the schema alone
            yield self.admin_url.update_query_dict({"options": f"-csearch_path={name}"}).render_as_string(
                hide_password=False)
        finally:
            with self._admin.connect() as conn:
                conn.execute(text(f"DROP SCHEMA {name} CASCADE"))

    def close(self) -> None:
        self._admin.dispose()


def sqlite_url(folder: Path) -> str:
    return f"sqlite:///{folder / 'amlemu.db'}"
