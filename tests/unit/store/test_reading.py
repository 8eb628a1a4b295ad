"""Store.reading: a snapshot that neither waits for nor holds up a writer."""

import threading
from datetime import UTC, datetime

from emulator.store.db import Store
from emulator.store.tables import Workspace


def test_a_reader_proceeds_while_a_writer_holds_the_lock(database_url):
    store = Store(database_url)
    now = datetime.now(UTC)
    seen = []
    with store.transaction() as repo:
        repo.add(Workspace(key="k", subscription="s", resource_group="r", name="n", location="l", body={},
                           created_at=now, modified_at=now))
        repo.session.flush()

        def read() -> None:
            with store.reading() as snapshot:
                seen.append(len(snapshot.workspaces("s")))
        reader = threading.Thread(target=read)
        reader.start()
        reader.join(timeout=10)
        assert not reader.is_alive()
    assert seen == [0]  # the writer's row is not committed yet
    with store.reading() as snapshot:
        assert [w.name for w in snapshot.workspaces("s")] == ["n"]
    store.close()
