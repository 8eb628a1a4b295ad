"""The attached hosts' kept connections (controller/host_engines.py): a host whose ping goes unanswered is found
unreachable within that ping, with no second wait on a fresh connection; one that refuses or resets at once (its
engine or sshd restarted) is connected afresh in the same pass."""

from datetime import timedelta

from emulator.controller.host_engines import RETRY_SECONDS, SILENT, HostEngines
from emulator.runtime.hosts import HostAccess, HostCheckFailed

ACCESS = HostAccess(address="10.1.0.5", username="azureuser", password="secret")


class Engine:
    """A host's engine whose ping fails, once it is told to, after `silent_for` on the clock."""

    def __init__(self, clock):
        self.clock, self.failing, self.silent_for = clock, False, timedelta(0)

    def answers(self) -> None:
        if self.failing:
            self.clock.advance(self.silent_for.total_seconds())
            raise ConnectionResetError("reset") if not self.silent_for else TimeoutError("timed out")


def engines_of(clock):
    made: list[Engine] = []

    def runtime_of(_access):
        made.append(Engine(clock))
        return made[-1]
    return HostEngines(clock, runtime_of), made


def test_a_silent_host_is_unreachable_at_once_and_tried_again_after_the_retry_time(clock):
    engines, made = engines_of(clock)
    first = engines.get("k", "vm", ACCESS)
    first.failing, first.silent_for = True, SILENT
    assert engines.get("k", "vm", ACCESS) is None
    assert len(made) == 1  # no fresh connection tried in that pass
    assert engines.connected() == {}
    assert engines.get("k", "vm", ACCESS) is None  # nor before the retry time
    clock.advance(RETRY_SECONDS)
    assert engines.get("k", "vm", ACCESS) is made[1]


def test_a_connection_reset_is_connected_afresh_in_the_same_pass(clock):
    engines, made = engines_of(clock)
    engines.get("k", "vm", ACCESS).failing = True
    assert engines.get("k", "vm", ACCESS) is made[1]
    assert engines.connected() == {"k": made[1]}


def test_a_host_that_cannot_be_connected_is_left_until_the_retry_time(clock):
    tried = []

    def runtime_of(_access):
        tried.append(clock())
        raise HostCheckFailed("address", "no route")
    engines = HostEngines(clock, runtime_of)
    assert engines.get("k", "vm", ACCESS) is None
    clock.advance(RETRY_SECONDS - 1)
    assert engines.get("k", "vm", ACCESS) is None and len(tried) == 1
    clock.advance(1)
    assert engines.get("k", "vm", ACCESS) is None and len(tried) == 2
