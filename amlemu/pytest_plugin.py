"""The pytest plugin (registered by installing amlemu): fixtures that start an amlemu stack of their own and hand
the test an MLClient pointed at it.

    def test_training(ml_client):              # one stack for the whole session
        ml_client.compute.begin_create_or_update(...)

`amlemu` / `ml_client` are session-scoped, `amlemu_module` / `ml_client_module` start a stack per test module.
`--amlemu-keep` leaves the stacks up for debugging (how to reach and remove them is printed); `--amlemu-url URL`
(or AMLEMU_URL) uses a stack already running instead, with its data folder from AMLEMU_HOME.
"""

import contextlib
import os
import signal
from collections.abc import Iterator

import pytest

from amlemu.session import Emulator, connect, start


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("amlemu", "amlemu: Azure ML compute emulator")
    group.addoption("--amlemu-keep", action="store_true", default=False,
                    help="Leave the stacks the amlemu fixtures start running at the end (for debugging).")
    group.addoption("--amlemu-url", default=os.environ.get("AMLEMU_URL"),
                    help="Use the amlemu stack already running at this URL (its data folder: AMLEMU_HOME) "
                         "instead of starting one. Default: AMLEMU_URL.")


def _terminated(signum, frame):
    """SIGTERM (a CI runner cancelling, `timeout`) ends the session as Ctrl-C does: the fixtures' teardown runs."""
    raise KeyboardInterrupt(f"signal {signum}")


def _emulator(request: pytest.FixtureRequest) -> Iterator[Emulator]:
    config = request.config
    url, keep = config.getoption("--amlemu-url"), config.getoption("--amlemu-keep")
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    capture = config.pluginmanager.get_plugin("capturemanager")

    def progress(line: str) -> None:
        if reporter is None:
            return
        # Past the capture of the test whose setup starts the stack: else what is said while that capture holds
        # (the image build's first steps) is shown only if the test fails.
        with capture.global_and_fixture_disabled() if capture is not None else contextlib.nullcontext():
            reporter.write("\n")  # after a test's progress dot, which write_line's own check misses under -q
            reporter.write_line(f"amlemu: {line}")

    if not url and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _terminated)
    emulator = connect(url) if url else start(keep=keep, progress=progress)
    emulator.activate()
    try:
        yield emulator
    finally:
        if keep and emulator.owned:
            emulator.deactivate()
            stack = emulator.stack
            progress(f"kept {stack.project} at {stack.url}; remove it with: AMLEMU_HOME={stack.home} "
                     f"AMLEMU_PROJECT={stack.project} AMLEMU_STACK={stack.label} AMLEMU_NETWORK={stack.network} "
                     f"amlemu down --remove && rm -rf {stack.home}")
        else:
            emulator.stop()


@pytest.fixture(scope="session")
def amlemu(request: pytest.FixtureRequest) -> Iterator[Emulator]:
    """An amlemu stack for the test session (or the one at --amlemu-url), this process pointed at it."""
    yield from _emulator(request)


@pytest.fixture(scope="module")
def amlemu_module(request: pytest.FixtureRequest) -> Iterator[Emulator]:
    """An amlemu stack for one test module."""
    yield from _emulator(request)


@pytest.fixture(scope="session")
def ml_client(amlemu: Emulator):
    """azure.ai.ml.MLClient on the session stack's workspace."""
    return amlemu.ml_client()


@pytest.fixture(scope="module")
def ml_client_module(amlemu_module: Emulator):
    """azure.ai.ml.MLClient on the module's own stack."""
    return amlemu_module.ml_client()
