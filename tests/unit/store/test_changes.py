"""The after-commit hook: each committed transaction tells its Store's listeners, once, the tables it wrote."""

from datetime import UTC, datetime

import pytest

from emulator.store.db import Store
from emulator.store.tables import Compute, Node, Workspace

NOW = datetime.now(UTC)
COMPUTE = "/subscriptions/s/resourcegroups/r/providers/microsoft.machinelearningservices/workspaces/w/computes/c"


def _workspace(key: str = "w") -> Workspace:
    return Workspace(key=key, subscription="s", resource_group="r", name=key, location="l", body={},
                     created_at=NOW, modified_at=NOW)


def _cluster() -> Compute:
    return Compute(key=COMPUTE, workspace_key="w", name="c", compute_type="AmlCompute", location="l", body={},
                   provisioning_state="Succeeded", created_at=NOW, modified_at=NOW)


def _node(node_id: str) -> Node:
    return Node(node_id=node_id, compute_key=COMPUTE, state="idle", created_at=NOW, state_changed_at=NOW)


@pytest.fixture
def store(database_url):
    store = Store(database_url)
    yield store
    store.close()


@pytest.fixture
def heard(store) -> list[frozenset[str]]:
    calls: list[frozenset[str]] = []
    store.after_commit(calls.append)
    return calls


def test_a_committed_insert_is_told_once_with_its_tables(store, heard):
    with store.transaction() as repo:
        repo.add(_workspace())
        repo.session.flush()  # two flushes, one commit: one call
        repo.add(_cluster())
    assert heard == [{"workspaces", "computes"}]


def test_an_update_and_a_delete_are_told(store, heard):
    with store.transaction() as repo:
        repo.add(_workspace())
    with store.transaction() as repo:
        repo.workspace("w").body = {"tags": {"a": "b"}}
    with store.transaction() as repo:
        repo.remove(repo.workspace("w"))
    assert heard == [{"workspaces"}] * 3


def test_a_bulk_delete_is_told(store, heard):
    with store.transaction() as repo:
        repo.add(_workspace())
        repo.add(_cluster())
        repo.add(_node("n1"))
    heard.clear()
    with store.transaction() as repo:
        repo.drop_nodes(COMPUTE)
    assert heard == [{"nodes"}]


def test_a_transaction_that_only_reads_tells_nothing(store, heard):
    with store.transaction() as repo:
        repo.add(_workspace())
    heard.clear()
    with store.transaction() as repo:
        row = repo.workspace("w")
        row.name = row.name  # set to the value it has: no UPDATE
        repo.computes("w")
    assert heard == []


def test_a_rollback_tells_nothing_and_is_forgotten_by_the_next_commit(store, heard):
    with pytest.raises(RuntimeError), store.transaction() as repo:
        repo.add(_workspace())
        repo.session.flush()
        raise RuntimeError("undone")
    assert heard == []
    with store.transaction() as repo:
        repo.add(_cluster())
    assert heard == [{"computes"}]  # not the workspace the rollback undid


def test_a_savepoint_rolled_back_keeps_what_its_transaction_wrote_before(store, heard):
    with store.transaction() as repo:
        repo.add(_workspace())
        repo.session.flush()
        with pytest.raises(RuntimeError), repo.session.begin_nested():
            repo.add(_workspace("other"))
            raise RuntimeError("undone")
    assert heard == [{"workspaces"}]


def test_a_failing_listener_neither_undoes_the_commit_nor_silences_the_others(store, heard, caplog):
    def broken(_tables):
        raise OSError("the broker is down")
    store.after_commit(broken)
    also: list[frozenset[str]] = []
    store.after_commit(also.append)
    with store.transaction() as repo:
        repo.add(_workspace())
    with store.reading() as repo:
        assert repo.workspace("w") is not None
    assert heard == also == [{"workspaces"}]
    assert "a listener failed on a commit that wrote workspaces" in caplog.text


def test_another_store_s_commits_are_not_heard(store, heard, database_url):
    other = Store(database_url)  # the same database, as the controller's Store
    try:
        with other.transaction() as repo:
            repo.add(_workspace())
    finally:
        other.close()
    assert heard == []
