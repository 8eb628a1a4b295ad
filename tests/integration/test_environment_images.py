"""Environment images on the real engine: a conda file's pip packages installed on the python:3.11-slim
stand-in, built once and found again by content hash, and pip's own complaint when a package cannot install.

Each run's requirements carry an always-true marker unique to the run, so its tags are its own: the first
prepare really builds, and the teardown removes only images this run made.
"""

import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import docker
import pytest
from docker.errors import ImageNotFound

from emulator.domain.assets.images import PYTHON_STAND_IN
from emulator.errors import ValidationFailed
from emulator.runtime.base import ContainerSpec
from emulator.runtime.docker import DockerRuntime
from emulator.runtime.images import EnvironmentImages
from emulator.services.environments import EnvironmentResolver, Prepared

RUN = uuid.uuid4().hex[:12]


def _environment(*pip_lines: str, python: str = "3.10") -> dict:
    marker = f'; platform_release != "amlemu-it-{RUN}"'
    lines = "".join(f"  - '{line}{marker}'\n" for line in pip_lines)
    conda = f"name: it\nchannels:\n- conda-forge\ndependencies:\n- python={python}\n- pip\n- pip:\n{lines}"
    return {"image": "python:3.11-slim", "condaFile": conda, "build": None}


class Recorder:
    """prepare() with its progress lines and duration; every tag it built is removed at the end."""

    def __init__(self, client: docker.DockerClient):
        self.client, self.resolver, self.made = client, EnvironmentResolver(EnvironmentImages(client)), set()

    def prepare(self, env: dict) -> tuple[Prepared, list[str], float]:
        lines: list[str] = []
        started = time.monotonic()
        try:
            prepared = self.resolver.prepare(env, lines.append)
        finally:
            self.made.update(line.split()[4] for line in lines if line.startswith("amlemu: building environment"))
        return prepared, lines, time.monotonic() - started

    def cleanup(self) -> None:
        for tag in self.made:
            try:
                self.client.images.remove(tag)
            except ImageNotFound:
                pass


@pytest.fixture(scope="module")
def recorder(docker_client):
    try:
        docker_client.images.get(PYTHON_STAND_IN)
    except ImageNotFound:
        pytest.skip(f"{PYTHON_STAND_IN} is missing; build it with `make build`")
    recorder = Recorder(docker_client)
    yield recorder
    recorder.cleanup()


@pytest.fixture(scope="module")
def six_env(recorder):
    """The first prepare of a new environment: (environment, prepared, progress lines, seconds)."""
    env = _environment("six==1.16.0")
    return (env, *recorder.prepare(env))


def _python(runtime: DockerRuntime, stack: str, image: str, code: str) -> str:
    spec = ContainerSpec(name=f"amlemu-{stack}-env-{uuid.uuid4().hex[:8]}", image=image,
                         command=["python", "-c", code], labels={"amlemu.stack": stack}, network="none")
    container = runtime.run(spec)
    try:
        exit_ = runtime.wait(container.id)
        output = runtime.logs(container.id)
        assert exit_.code == 0, output
        return output.strip()
    finally:
        runtime.remove(container.id)


def test_a_conda_environment_builds_on_the_stand_in_and_its_package_imports(six_env, docker_client, runtime,
                                                                             stack):
    _, prepared, lines, seconds = six_env
    print(f"\nfirst build of the six environment: {seconds:.1f}s")
    assert prepared.built and prepared.image.startswith("amlemu/env:")
    labels = docker_client.images.get(prepared.image).labels
    assert labels["amlemu.environment"] == prepared.image.split(":")[1]
    log = "\n".join(lines)
    assert "Python 3.11" in log and "Successfully installed six-1.16.0" in log
    notes = "\n".join(prepared.notes)
    assert "python:3.11-slim" in notes and PYTHON_STAND_IN in notes       # the stand-in, said in the job log
    assert "python 3.10" in notes and "3.11 runs instead" in notes         # a different Python is a note
    assert _python(runtime, stack, prepared.image, "import six, sys; print(six.__version__, sys.version_info[:2])") \
        == "1.16.0 (3, 11)"


def test_the_same_environment_again_is_found_not_built(six_env, recorder):
    env, first, _, build_seconds = six_env
    again, lines, seconds = recorder.prepare(env)
    print(f"\ncached prepare: {seconds * 1000:.0f}ms (first build {build_seconds:.1f}s)")
    assert again == Prepared(first.image, first.notes, built=False)
    assert lines == [] and seconds < 2.0 and seconds < build_seconds / 5


def test_a_requirement_pip_cannot_find_fails_with_pips_complaint(recorder, docker_client):
    env = _environment("six==1.16.0", "amlemu-no-such-package-xyz==0.0.1")
    with pytest.raises(ValidationFailed) as err:
        recorder.prepare(env)
    assert err.value.target == "properties.condaFile"
    assert "No matching distribution found for amlemu-no-such-package-xyz==0.0.1" in err.value.message
    assert "returned a non-zero code" in err.value.message
    tag = err.value.message.split()[3]
    assert tag.startswith("amlemu/env:")
    with pytest.raises(ImageNotFound):
        docker_client.images.get(tag)


def test_concurrent_prepares_build_each_environment_once(recorder, runtime, stack):
    tomli, six = _environment("tomli==2.0.1", python="3.11"), _environment("six==1.15.0", python="3.11")
    with ThreadPoolExecutor(3) as pool:
        results = [r[0] for r in pool.map(recorder.prepare, [tomli, six, tomli])]
    assert results[0].image == results[2].image != results[1].image
    assert sorted([results[0].built, results[2].built]) == [False, True] and results[1].built
    assert _python(runtime, stack, results[0].image, "import tomli; print(tomli.loads('a = 1'))") == "{'a': 1}"
    assert _python(runtime, stack, results[1].image, "import six; print(six.__version__)") == "1.15.0"
