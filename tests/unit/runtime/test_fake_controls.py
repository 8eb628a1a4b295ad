"""FakeRuntime's test controls, which the contract suite (tests/contract) cannot cover: Docker has none."""

import threading
from datetime import UTC, datetime

import pytest

from emulator.errors import RuntimeUnavailable, ValidationFailed
from emulator.runtime.base import ContainerSpec, Exit
from emulator.runtime.fake import FakeRuntime
from emulator.runtime.labels import ROLE

NOON = datetime(2026, 1, 1, 12, tzinfo=UTC)


def spec(name: str = "c", role: str = "node", **fields) -> ContainerSpec:
    return ContainerSpec(name=name, image="any", command=["sleep", "300"], labels={ROLE: role}, **fields)


@pytest.fixture
def fake() -> FakeRuntime:
    return FakeRuntime(clock=lambda: NOON, wait_timeout=5)


def test_the_clock_is_injected_and_any_image_runs_unless_told(fake):
    assert fake.run(spec()).started_at == NOON
    limited = FakeRuntime(images={"known"})
    with pytest.raises(ValidationFailed):
        limited.run(spec())
    limited.images.add("any")
    assert limited.run(spec()).running


def test_exit_ends_the_process_and_only_find_and_wait_tell_an_oom_kill(fake):
    obs = fake.run(spec())
    fake.exit(obs.id, 137, oom_killed=True)
    fake.exit(obs.id, 0)  # already ended: no change
    assert fake.wait(obs.id) == Exit(code=137, oom_killed=True)
    assert fake.find(obs.name).oom_killed and not fake.find(obs.name).running
    (listed,) = fake.list({})
    assert listed.exit_code == 137 and not listed.oom_killed  # as the engine's listing
    with pytest.raises(KeyError):
        fake.exit("nothing", 1)


def test_wait_blocks_until_the_container_ends_and_gives_up_at_its_timeout(fake):
    obs = fake.run(spec())
    ended: list[Exit] = []
    waiter = threading.Thread(target=lambda: ended.append(fake.wait(obs.id)))
    waiter.start()
    fake.signal(obs.id, "TERM")
    waiter.join(timeout=5)
    assert ended == [Exit(code=143, oom_killed=False)]

    hung = FakeRuntime(wait_timeout=0.01)
    with pytest.raises(TimeoutError):
        hung.wait(hung.run(spec()).id)


def test_fail_next_run_fails_the_next_matching_run_once_and_starts_nothing(fake):
    fake.fail_next_run(RuntimeUnavailable("engine down"), labels={ROLE: "job"})
    assert fake.run(spec("node-1")).running  # not a job: unaffected
    with pytest.raises(RuntimeUnavailable, match="engine down"):
        fake.run(spec("job-1", role="job"))
    assert fake.find("job-1") is None
    assert fake.run(spec("job-1", role="job")).running  # once only


def test_calls_record_what_was_asked_in_order(fake):
    obs = fake.run(spec())
    fake.signal(obs.id, "SIGTERM")
    fake.remove(obs.id)
    fake.remove("gone")
    assert fake.calls == [("run", spec()), ("signal", obs.id, "SIGTERM"), ("remove", obs.id), ("remove", "gone")]


def test_logs_and_exec_answer_what_the_test_scripted(fake):
    first, second = fake.run(spec("a")), fake.run(spec("b"))
    fake.write_logs(first.name, "one\ntwo\nthree\n")
    assert fake.logs(first.id) == "one\ntwo\nthree\n" and fake.logs(first.id, tail=1) == "three\n"
    assert fake.logs(first.id, tail=0) == ""

    fake.script_exec(["amlemu-activity"], 0, '{"idle": true}\n')
    fake.script_exec(["amlemu-activity"], 0, '{"idle": false}\n', container=second.id)
    assert fake.exec(first.id, ["amlemu-activity"]) == (0, '{"idle": true}\n')
    assert fake.exec(second.id, ["amlemu-activity"]) == (0, '{"idle": false}\n')
    assert fake.exec(first.id, ["other"])[0] == 126  # not scripted: not found, as the engine says


def test_gpus_are_given_only_when_the_fake_has_them(fake):
    assert not fake.has_gpus()
    with pytest.raises(RuntimeUnavailable):
        fake.run(spec(gpus=1))
    assert FakeRuntime(gpus=True).run(spec(gpus=1)).running


def test_a_trapped_signal_is_recorded_and_the_process_runs_on_until_an_untrapped_one(fake):
    obs = fake.run(spec())
    fake.trap(obs.id, "TERM", "SIGKILL")  # SIGKILL cannot be trapped
    fake.signal(obs.id, "SIGTERM")
    assert fake.find(obs.id).running and fake.calls[-1] == ("signal", obs.id, "SIGTERM")
    fake.signal(obs.id, "SIGKILL")
    assert fake.wait(obs.id) == Exit(code=137, oom_killed=False)
