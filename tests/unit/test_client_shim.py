"""The client shim `amlemu env` puts on PYTHONPATH: *.localhost names resolve to loopback (RFC 6761), and any
other sitecustomize still runs. Each check is a fresh interpreter, as the user's would be."""

import ipaddress
import json
import os
import subprocess
import sys

from emulator.cli import stack
from emulator.cli.stack import CLIENT_SHIM

RESOLVE = ("import json, socket; print(json.dumps(sorted({a[4][0] for a in socket.getaddrinfo(%r, 443)})))")


def run(code: str, *path) -> str:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = os.pathsep.join(str(p) for p in path)
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_localhost_subdomains_resolve_to_loopback():
    for host in ("x.blob.localhost", "AMLEMUSTORE.BLOB.LOCALHOST.", "localhost"):
        addresses = json.loads(run(RESOLVE % host, CLIENT_SHIM))
        assert addresses and all(ipaddress.ip_address(a).is_loopback for a in addresses), (host, addresses)


def test_other_names_are_left_to_the_system_resolver():
    # A literal address takes no DNS, so this holds offline.
    assert json.loads(run(RESOLVE % "192.0.2.7", CLIENT_SHIM)) == ["192.0.2.7"]
    # What reaches the wrapped resolver, recorded instead of asking DNS.
    code = ("import sitecustomize; seen = []\n"
            "resolve = sitecustomize._wrap(lambda host, *args, **kwargs: seen.append(host) or [])\n"
            "for host in ('example.com', 'localhost.example', b'x.localhost', 'a.blob.localhost.', None):\n"
            "    resolve(host, 443)\n"
            "print(seen)")
    assert run(code, CLIENT_SHIM) == "['example.com', 'localhost.example', 'localhost', 'localhost', None]"


def test_a_later_sitecustomize_still_runs(tmp_path):
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / "sitecustomize.py").write_text("import os\nos.environ['THEIRS_RAN'] = __file__\n")
    code = "import os, socket; socket.getaddrinfo('a.blob.localhost', 443); print(os.environ['THEIRS_RAN'])"
    # Listed twice, to show the shim neither runs itself again nor loops.
    assert run(code, CLIENT_SHIM, CLIENT_SHIM, theirs) == str(theirs / "sitecustomize.py")


def test_python_path_puts_the_shim_first_once():
    assert stack.python_path(None) == str(CLIENT_SHIM)
    mine = os.pathsep.join(["/opt/mine", "/opt/other"])
    assert stack.python_path(mine) == os.pathsep.join([str(CLIENT_SHIM), mine])
    assert stack.python_path(stack.python_path(mine)) == stack.python_path(mine)
    assert (CLIENT_SHIM / "sitecustomize.py").is_file() and not (CLIENT_SHIM / "__init__.py").exists()
