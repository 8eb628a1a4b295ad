"""The SDK-release probes name the call that failed (tests/e2e/sdk_calls.py) and the newest release pip sees."""

import pytest
from azure.core.exceptions import HttpResponseError, ResourceNotFoundError
from azure.core.paging import ItemPaged
from azure.core.polling import LROPoller, NoPolling

from tests.e2e.sdk_calls import FAILED, CallFailed, Named, run
from tests.e2e.sdk_releases import failed_call, newest_in


def _refused(_):
    raise HttpResponseError(message="(BadRequest) properties.vmSize is not a size\nCode: BadRequest")


class ComputeOperations:
    """Stands where the SDK's own operations group would: its class lives in azure.ai.ml.operations."""

    def begin_create_or_update(self, cluster):
        return LROPoller(None, cluster, _refused, NoPolling())

    def get(self, name, function=None):
        raise ResourceNotFoundError(f"no cluster {name}")

    def list(self):
        def next_page(token):
            raise HttpResponseError(message="page two is gone")
        return ItemPaged(next_page, lambda page: (None, []))


ComputeOperations.__module__ = "azure.ai.ml.operations._compute_operations"


class Client:
    compute = ComputeOperations()
    workspace_name = "amlemu"


def test_a_failing_call_is_named_by_the_path_that_reached_it():
    ml = Named(Client(), "ml_client")
    with pytest.raises(CallFailed) as failed:
        ml.compute.get(name="gone", function="the SDK's own keyword")
    assert str(failed.value) == "FAILED ml_client.compute.get: ResourceNotFoundError: no cluster gone"
    assert ml.workspace_name == "amlemu"


def test_a_pollers_result_and_a_listings_pages_are_named_too():
    ml = Named(Client(), "ml_client")
    poller = ml.compute.begin_create_or_update("c1")
    with pytest.raises(CallFailed) as failed:
        poller.result()
    assert str(failed.value) == ("FAILED ml_client.compute.begin_create_or_update().result: HttpResponseError: "
                                 "(BadRequest) properties.vmSize is not a size Code: BadRequest")
    with pytest.raises(CallFailed, match=r"^FAILED ml_client\.compute\.list: HttpResponseError: page two is gone$"):
        list(ml.compute.list())


def test_the_probe_ends_on_the_failed_line_and_the_test_shows_it(capsys):
    def main():
        Named(Client(), "ml_client").compute.get("gone")

    with pytest.raises(SystemExit) as exited:
        run(main)
    stderr = capsys.readouterr().err
    assert exited.value.code == 1 and "Traceback" in stderr
    assert stderr.splitlines()[-1] == "FAILED ml_client.compute.get: ResourceNotFoundError: no cluster gone"
    assert failed_call(stderr) == stderr.splitlines()[-1]


def test_a_failure_outside_a_call_is_shown_by_its_last_line():
    stderr = ("Traceback (most recent call last):\n  File \"sdk_probe.py\", line 12\n"
              "ImportError: cannot import name 'AmlCompute' from 'azure.ai.ml.entities'\n")
    assert failed_call(stderr) == "ImportError: cannot import name 'AmlCompute' from 'azure.ai.ml.entities'"
    assert not failed_call(stderr).startswith(FAILED)


def test_the_newest_release_is_the_one_pip_index_names_first():
    said = ("azure-ai-ml (1.36.0)\nAvailable versions: 1.36.0, 1.35.2, 1.35.1\n"
            "  INSTALLED: 1.35.2\n  LATEST:    1.36.0\n")
    assert newest_in(said) == "1.36.0"
    assert newest_in("ERROR: No matching distribution found for azure-ai-ml\n") is None
