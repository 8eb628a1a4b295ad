"""`amlemu doctor --fix` on a Debian machine whose glibc does not resolve *.blob.localhost: a container of the
emulator image (Debian, amlemu installed, root), so the machine's own /etc/hosts and nsswitch.conf stay as they
are."""

import docker
import pytest

from emulator.domain.ids import WorkspaceRef
from emulator.domain.storage.blob_access import workspace_account
from emulator.settings import DEFAULT_SUBSCRIPTION

pytestmark = pytest.mark.docker
IMAGE = "amlemu/emulator:latest"
RESOLVE = "python -I -c 'import socket, sys; socket.getaddrinfo(sys.argv[1], 443)' {host} && echo RESOLVED {host}"


def _run(script: str, **options) -> str:
    client = docker.from_env()
    return client.containers.run(IMAGE, entrypoint=["sh", "-c", script], remove=True, stderr=True,
                                 labels={"amlemu.stack": "doctor-test"}, **options).decode()


def test_hosts_lines_make_the_default_workspace_account_resolve():
    host = f"{workspace_account(WorkspaceRef(DEFAULT_SUBSCRIPTION, 'amlemu', 'amlemu'))}.blob.localhost"
    out = _run(f"{RESOLVE.format(host=host)}; amlemu doctor --fix --yes --hosts; {RESOLVE.format(host=host)}",
               network_mode="none")
    assert out.count(f"RESOLVED {host}") == 1, out  # after the fix only
    assert "does not resolve" in out and "fixed" in out, out


def test_nss_myhostname_makes_every_localhost_name_resolve():
    host = "any-account.blob.localhost"
    out = _run(f"{RESOLVE.format(host=host)}; amlemu doctor --fix --yes; {RESOLVE.format(host=host)}; "
               "grep '^hosts:' /etc/nsswitch.conf")  # the default bridge: the Debian mirror, as image builds use
    assert out.count(f"RESOLVED {host}") == 1, out
    assert "install nss-myhostname" in out and "fixed" in out and "myhostname" in out.splitlines()[-1], out
