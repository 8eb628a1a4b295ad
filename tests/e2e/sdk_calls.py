"""Names the SDK call a probe failed in: `FAILED ml_client.compute.begin_create_or_update: HttpResponseError: ...`.

A probe (a script run inside a venv holding one azure-ai-ml release) takes its client from `ml_client()`: each call
made through it, on an operations group (`ml_client.jobs.stream`), on the poller a call returns
(`ml_client.compute.begin_create_or_update().result`) or while iterating a listing (`ml_client.compute.list`), raises
what it raised as a CallFailed naming that call. `run(main, *args)` prints the FAILED line as stderr's last line, and
names the probe's own line for a failure outside an SDK call (an entity the release no longer takes, a wait that timed
out). Imports only the SDK and the stdlib: any release's venv runs it with the repo on its path.
"""

import os
import sys
import traceback
from collections.abc import Callable, Iterable
from pathlib import Path

from azure.core.paging import ItemPaged
from azure.core.polling import LROPoller

FAILED = "FAILED "


class CallFailed(Exception):
    def __init__(self, call: str, error: BaseException):
        super().__init__(f"{FAILED}{call}: {type(error).__name__}: {_one_line(error)}")
        self.call = call


def _one_line(error: BaseException) -> str:
    return " ".join(str(error).split())[:500]


class Named:
    """An SDK object whose calls are named after the path that reached them."""

    def __init__(self, target: object, name: str):
        self._target, self._name = target, name

    def __getattr__(self, attr: str):
        value = getattr(self._target, attr)
        name = f"{self._name}.{attr}"
        if callable(value):
            return lambda *args, **kwargs: _call(name, value, *args, **kwargs)
        if type(value).__module__.startswith("azure.ai.ml.operations"):
            return Named(value, name)
        return value


class _NamedListing:
    def __init__(self, pages: Iterable, name: str):
        self._pages, self._name = pages, name

    def __iter__(self):
        try:
            yield from self._pages
        except Exception as error:
            raise CallFailed(self._name, error) from error


def _call(name: str, function: Callable, /, *args, **kwargs):
    try:
        value = function(*args, **kwargs)
    except CallFailed:
        raise
    except Exception as error:
        raise CallFailed(name, error) from error
    if isinstance(value, LROPoller):
        return Named(value, f"{name}()")
    if isinstance(value, ItemPaged):
        return _NamedListing(value, name)
    return value


def ml_client() -> Named:
    """The workspace's MLClient, from the `amlemu env` variables."""
    from azure.ai.ml import MLClient
    from azure.identity import DefaultAzureCredential

    client = _call("MLClient", MLClient, DefaultAzureCredential(), os.environ["AMLEMU_SUBSCRIPTION_ID"],
                   os.environ["AMLEMU_RESOURCE_GROUP"], os.environ["AMLEMU_WORKSPACE"])
    return Named(client, "ml_client")


def run(main: Callable, *args) -> None:
    """main(*args), exiting 1 with the FAILED line last on stderr (the traceback before it) if it raises."""
    try:
        main(*args)
    except Exception as error:
        traceback.print_exc()
        line = str(error) if isinstance(error, CallFailed) else \
            f"{FAILED}{_probe_line(error)}: {type(error).__name__}: {_one_line(error)}"
        print("\n" + line, file=sys.stderr, flush=True)
        sys.exit(1)


def _probe_line(error: BaseException) -> str:
    """Where in the probes (this folder) it failed: `sdk_probe.py:41 AmlCompute(...)`."""
    here = Path(__file__).parent
    frames = [f for f in traceback.extract_tb(error.__traceback__) if Path(f.filename).parent == here]
    if not frames:
        return "the probe"
    frame = frames[-1]
    return f"{Path(frame.filename).name}:{frame.lineno} {(frame.line or '').strip()}"
