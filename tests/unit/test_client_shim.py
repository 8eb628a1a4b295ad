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
    # A fresh user's interpreter: nothing of an SDK session this test process may hold (the e2e suite's).
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "AZUREML_CURRENT_CLOUD", "ARM_CLOUD_METADATA_URL")}
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


# A metadata server in the user's interpreter, counting fetches, and the SDK asked for its cloud three times.
CLOUD_CALLS = """
import http.server, json, os, threading
fetches = []
class Metadata(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        fetches.append(self.path)
        body = json.dumps([{"name": "Amlemu", "portal": "https://portal.amlemu.localhost",
                            "resourceManager": "http://127.0.0.1/",
                            "authentication": {"loginEndpoint": "https://login.localhost"},
                            "suffixes": {"storage": "localhost"}}]).encode()
        self.send_response(200); self.send_header("Content-Length", str(len(body))); self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args): pass
server = http.server.HTTPServer(("127.0.0.1", 0), Metadata)
port = server.server_address[1]
threading.Thread(target=server.serve_forever, daemon=True).start()
os.environ["ARM_CLOUD_METADATA_URL"] = "http://127.0.0.1:%d/metadata/endpoints?api-version=2019-05-01" % port
from azure.ai.ml import _azure_environments as clouds
for _ in range(3):
    assert clouds._get_cloud_details("Amlemu")["storage_endpoint"] == "localhost"
print(len(fetches))
"""


def test_the_sdk_fetches_its_custom_cloud_once():
    # The SDK's own behaviour, without the shim: a fetch (or two) per call, the upstream slip the shim mends.
    assert int(run(CLOUD_CALLS)) >= 3
    assert run(CLOUD_CALLS, CLIENT_SHIM) == "1"


def test_a_running_process_can_apply_the_shim():
    code = "from emulator.cli.stack import apply_client_shim; apply_client_shim(); apply_client_shim()\n" + CLOUD_CALLS
    assert run(code) == "1"
