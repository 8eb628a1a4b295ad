"""Each azure-ai-ml release the suite supports, and the newest one on the package index, drive the same flow: a
cluster's life, a command job streamed to Completed, a model. A failure names the release and the SDK call."""

import hashlib
import os
from pathlib import Path

import pytest

from tests.e2e.sdk_releases import RELEASES, newest_release, run_probe

pytestmark = pytest.mark.e2e
PROBE = Path(__file__).with_name("sdk_probe.py")


def _flow(release: str, work: Path) -> None:
    name = "e2e-v" + release.replace(".", "")
    seen, _ = run_probe(release, PROBE, name, work)
    assert seen["workspace"] == os.environ["AMLEMU_WORKSPACE"]
    assert seen["created"] == ["AmlCompute", "Succeeded", "Standard_DS2_v2", "low_priority", 1, 2, 60]
    assert seen["listed"] and seen["deleted"]
    assert seen["nodes"] == ["idle"]
    assert seen["ds2"] == [2, 0]
    assert seen["usages"] > 0
    assert seen["job"] == ["Completed", True]
    assert seen["updated_max"] == 3
    assert seen["model"] == {"versions": ["1", "2"], "latest": "2", "listed": ["1", "2"],
                             "downloaded": hashlib.sha256(bytes(range(256))).hexdigest()}


@pytest.mark.parametrize("release", [*RELEASES, "newest"])
def test_each_sdk_release_drives_the_flow(stack, tmp_path, release):
    """`newest` is the newest release on the package index, resolved now: it fails when a release newer than the
    supported ones breaks the flow, naming that release and the call."""
    if release == "newest":
        release = newest_release()
        if release in RELEASES:
            pytest.skip(f"the newest azure-ai-ml, {release}, is a supported release: its own case runs the flow")
    _flow(release, tmp_path)
