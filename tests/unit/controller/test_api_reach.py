"""The api joins the jobs network (under the name jobs reach it by) once per container, and again when recreated."""

from datetime import UTC, datetime, timedelta

from emulator.controller.reconcilers.api_reach import RECHECK, ApiReach
from emulator.runtime.base import ContainerSpec
from emulator.runtime.fake import FakeRuntime
from emulator.runtime.labels import SERVICE, STACK
from emulator.settings import Settings

NOON = datetime(2026, 1, 1, 12, tzinfo=UTC)


def _api(runtime: FakeRuntime, settings: Settings, name: str):
    return runtime.run(ContainerSpec(name=name, image="amlemu/emulator:latest", command=["api"],
                                     labels={STACK: settings.stack, SERVICE: "api"}, network=settings.docker_network))


def test_the_api_joins_the_jobs_network_under_its_jobs_name_and_a_new_one_joins_too(tmp_path):
    settings = Settings(data_dir=tmp_path, stack="t")
    runtime = FakeRuntime()
    runtime.ensure_network(settings.docker_network, {})
    first = _api(runtime, settings, "t-api-1")
    reach = ApiReach(settings, runtime, runtime)

    reach.tick(NOON)
    assert runtime._get(first.id).aliases == {settings.jobs_network: settings.jobs_api_host}
    assert settings.jobs_network in runtime.networks

    runtime.remove(first.id)
    second = _api(runtime, settings, "t-api-2")
    reach.tick(NOON + RECHECK / 2)  # not looked at again yet
    assert settings.jobs_network not in runtime._get(second.id).ips
    reach.tick(NOON + RECHECK + timedelta(seconds=1))
    assert runtime._get(second.id).aliases == {settings.jobs_network: settings.jobs_api_host}
