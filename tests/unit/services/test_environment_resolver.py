"""EnvironmentResolver with a fake engine: which image a job runs, what gets built, and how often."""

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from emulator.domain.assets.images import PYTHON_STAND_IN
from emulator.errors import ValidationFailed
from emulator.services.environments import EnvironmentResolver, Prepared
from tests.waiting import wait_until

CONDA = "dependencies:\n- python=3.10\n- numpy=1.26\n- pip:\n  - six==1.16.0\n"


class FakeEngine:
    def __init__(self, present=(PYTHON_STAND_IN,), build=None):
        self.present, self.builds, self.lookups = set(present), [], []
        self._build = build or (lambda tag: None)
        self._mutex = threading.Lock()

    def exists(self, tag: str) -> bool:
        with self._mutex:
            self.lookups.append(tag)
            return tag in self.present

    def build_environment(self, tag, dockerfile, files, progress) -> str:
        with self._mutex:
            self.builds.append((tag, dockerfile, files))
        self._build(tag)
        progress("Successfully built")
        with self._mutex:
            self.present.add(tag)
        return "Successfully built"


def _env(conda=CONDA, image="python:3.11-slim") -> dict:
    return {"image": image, "condaFile": conda, "build": None}


def test_an_image_alone_resolves_to_its_stand_in_without_building():
    engine = FakeEngine()
    prepared = EnvironmentResolver(engine).prepare(_env(conda=None), print)
    assert prepared == Prepared(PYTHON_STAND_IN, [prepared.notes[0]], built=False)
    assert "stand-in" in prepared.notes[0] and engine.builds == []


def test_a_conda_file_builds_once_then_reuses_the_tag():
    engine, lines = FakeEngine(), []
    resolver = EnvironmentResolver(engine)
    first = resolver.prepare(_env(), lines.append)
    assert first.built and first.image.startswith("amlemu/env:")
    (tag, dockerfile, files), = engine.builds
    assert tag == first.image and f"FROM {PYTHON_STAND_IN}" in dockerfile
    assert files == {"requirements.txt": "numpy==1.26.*\nsix==1.16.0\n"}
    assert any(tag in line for line in lines) and "Successfully built" in lines
    notes = " ".join(first.notes)
    assert "stand-in" in notes and "numpy=1.26 -> numpy==1.26.*" in notes and "3.11 runs instead" in notes
    second = resolver.prepare(_env(), lines.append)
    assert second == Prepared(first.image, first.notes, built=False) and len(engine.builds) == 1


def test_a_conda_file_with_only_python_and_pip_runs_on_the_base():
    engine = FakeEngine()
    prepared = EnvironmentResolver(engine).prepare(_env(conda="dependencies: [python=3.11, pip]"), print)
    assert prepared.image == PYTHON_STAND_IN and not prepared.built and engine.builds == []


def test_concurrent_prepares_of_one_environment_build_once():
    release = threading.Event()
    engine = FakeEngine(build=lambda tag: release.wait(10))
    resolver = EnvironmentResolver(engine)
    with ThreadPoolExecutor(4) as pool:
        futures = [pool.submit(resolver.prepare, _env(), lambda line: None) for _ in range(4)]
        wait_until(lambda: engine.builds, timeout=10, message="the first build to start")
        # Every caller has resolved its base, so each is at the tag's lock or past it.
        wait_until(lambda: engine.lookups.count(PYTHON_STAND_IN) >= 4, timeout=10, message="all callers")
        release.set()
        results = [f.result(timeout=10) for f in futures]
    assert len(engine.builds) == 1
    assert {r.image for r in results} == {engine.builds[0][0]}
    assert sorted(r.built for r in results) == [False, False, False, True]


def test_different_environments_build_at_the_same_time():
    both_building = threading.Barrier(2, timeout=10)  # breaks (and the test fails) if builds were serialised
    engine = FakeEngine(build=lambda tag: both_building.wait())
    resolver = EnvironmentResolver(engine)
    with ThreadPoolExecutor(2) as pool:
        futures = [pool.submit(resolver.prepare, _env(conda=CONDA + f"  - tomli=={v}\n"), lambda line: None)
                   for v in ("2.0.1", "2.0.2")]
        results = [f.result(timeout=20) for f in futures]
    assert all(r.built for r in results) and len({r.image for r in results}) == 2


def test_a_build_context_environment_is_not_supported_yet():
    env = {"image": None, "condaFile": None, "build": {"contextUri": "https://x/y", "dockerfilePath": "Dockerfile"}}
    with pytest.raises(ValidationFailed) as err:
        EnvironmentResolver(FakeEngine()).prepare(env, print)
    assert err.value.target == "properties.build" and "not supported" in err.value.message


def test_errors_carry_their_field():
    with pytest.raises(ValidationFailed) as err:
        EnvironmentResolver(FakeEngine(present=())).prepare(_env(), print)
    assert err.value.target == "properties.image"
    with pytest.raises(ValidationFailed) as err:
        EnvironmentResolver(FakeEngine()).prepare(_env(conda="dependencies: [{pip: ['-r r.txt']}]"), print)
    assert err.value.target == "properties.condaFile"

    def failing(tag):
        raise ValidationFailed("Building environment image failed: pip says no")
    with pytest.raises(ValidationFailed) as err:
        EnvironmentResolver(FakeEngine(build=failing)).prepare(_env(), print)
    assert err.value.target == "properties.condaFile" and "pip says no" in err.value.message
