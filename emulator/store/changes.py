"""What a committed transaction changed, told to whoever listens on its Store; and the marker file through which
the api tells the scoring router (another process) that its routing table is stale."""

import logging
from collections.abc import Callable
from pathlib import Path

from sqlalchemy import event
from sqlalchemy.orm import ORMExecuteState, Session, SessionTransaction, sessionmaker

log = logging.getLogger("amlemu.store")
Listener = Callable[[frozenset[str]], None]  # called with the names of the tables a committed transaction wrote
_WRITTEN = "amlemu.written"  # session.info key: the tables written so far in the session's transaction
_COMMITTED = "amlemu.committed"  # session.info key: the tables its committed transaction wrote, not yet told


def _note(session: Session, table: str) -> None:
    session.info.setdefault(_WRITTEN, set()).add(table)


def _flushed(session: Session, _flush_context) -> None:
    # After a flush, new/dirty/deleted still hold what it wrote; dirty also holds rows set to the same values.
    for row in (*session.new, *session.deleted, *(r for r in session.dirty if session.is_modified(r))):
        _note(session, row.__table__.name)


def _executed(state: ORMExecuteState) -> None:
    """Bulk statements (repo.drop_nodes' DELETE) write without a flush."""
    if state.is_insert or state.is_update or state.is_delete:
        _note(state.session, state.statement.table.name)


def _rolled_back(session: Session, previous: SessionTransaction) -> None:
    # A savepoint's rollback keeps what the transaction wrote before it; a listener may then hear of a table
    # only the savepoint wrote: a needless nudge, never a missed one.
    if not previous.nested:
        session.info.pop(_WRITTEN, None)


class CommitHook:
    """Tells listeners, once per committed transaction of one Store, which tables it wrote (the Store calls
    `tell` with what `committed` took, once its writer lock is free).

    Listens on that Store's sessionmaker only, never on every Session: another Store (the controller's, a
    test's second one) tells its own listeners alone. A listener that fails is logged: the transaction is
    committed and stays so, whatever its listeners do."""

    def __init__(self, sessions: sessionmaker):
        self._sessions = sessions
        self._listeners: list[Listener] = []

    def listen(self, listener: Listener) -> None:
        if not self._listeners:  # a Store nobody listens to (the controller's) pays for no events
            event.listen(self._sessions, "after_flush", _flushed)
            event.listen(self._sessions, "do_orm_execute", _executed)
            event.listen(self._sessions, "after_commit", self._committed)
            event.listen(self._sessions, "after_soft_rollback", _rolled_back)
        self._listeners.append(listener)

    @staticmethod
    def _committed(session: Session) -> None:
        session.info[_COMMITTED] = frozenset(session.info.pop(_WRITTEN, ()))

    @staticmethod
    def committed(session: Session) -> frozenset[str]:
        """The tables the session's transaction wrote if it committed (empty if it rolled back), taken once."""
        return session.info.pop(_COMMITTED, frozenset())

    def tell(self, written: frozenset[str]) -> None:
        if not written:
            return
        for listener in self._listeners:
            try:
                listener(written)
            except Exception:  # noqa: BLE001 (committed already: the caller's answer must not turn into an error)
                log.exception("a listener failed on a commit that wrote %s", ", ".join(sorted(written)))


def mark_changed(marker: Path) -> None:
    """Keys, traffic or deployments changed (in a committed transaction): a request arriving after this reads them."""
    marker.touch()


def changed_at(marker: Path) -> int:
    try:
        return marker.stat().st_mtime_ns
    except FileNotFoundError:
        return 0
