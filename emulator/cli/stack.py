"""The composed stack as the CLI drives it: paths, compose invocation, health, connection details."""

import importlib.util
import os
import shutil
import ssl
import subprocess
import time
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from urllib.parse import quote

import certifi
import httpx

from emulator import tokens
from emulator.domain.ids import CLOUD_NAME
from emulator.runtime import labels
from emulator.runtime.base import Networks
from emulator.settings import DEFAULT_SUBSCRIPTION

PACKAGE = Path(__file__).resolve().parents[1]
ROOT = PACKAGE.parent
# The compose file, the image recipes, pyproject and README (the emulator image's build context) and the demo's
# sample: links into the repository in a checkout, copies in an installed wheel.
BUNDLE = PACKAGE / "bundle"
# Run from a clone of the repository (make up, docker compose up there), rather than from an installed wheel.
CHECKOUT = (ROOT / "docker-compose.yml").is_file() and (ROOT / "pyproject.toml").is_file()
# A sitecustomize that resolves *.localhost names (the SDK's blob URLs) as localhost, per RFC 6761.
CLIENT_SHIM = PACKAGE / "client_shim"


def default_home() -> Path:
    """The data folder: ./.amlemu in a checkout (beside the compose file), else the user's data folder."""
    if CHECKOUT:
        return ROOT / ".amlemu"
    return Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share") / "amlemu"


def emulator_image() -> str:
    """AMLEMU_IMAGE, else `latest` in a checkout (make up builds it) and the package's version when installed (an
    upgrade builds its own)."""
    if os.environ.get("AMLEMU_IMAGE"):
        return os.environ["AMLEMU_IMAGE"]
    return "amlemu/emulator:latest" if CHECKOUT else f"amlemu/emulator:{metadata.version('amlemu')}"


def compose_file() -> Path:
    """The repository's own (compose reads .env beside it) in a checkout, the wheel's copy otherwise."""
    return ROOT / "docker-compose.yml" if CHECKOUT else BUNDLE / "docker-compose.yml"


def _answers(url: str, **options) -> bool:
    """The URL answers 200 within 2 s."""
    try:
        return httpx.get(url, timeout=2, **options).status_code == 200
    except httpx.HTTPError:
        return False


@dataclass(frozen=True)
class Stack:
    """One stack: its compose project, port and data folder, all from AMLEMU_* environment variables."""
    home: Path
    port: int
    project: str
    scoring_port: int = 8444  # online endpoints' scoring URLs, plain HTTP on 127.0.0.1
    label: str = "amlemu"  # the amlemu.stack label on every container of this stack
    network: str = "amlemu"  # the compose network; job containers get <network>-jobs
    subscription: str = DEFAULT_SUBSCRIPTION
    resource_group: str = "amlemu"
    workspace: str = "amlemu"
    settings: tuple[tuple[str, str], ...] = ()  # more AMLEMU_* variables its services start with

    @classmethod
    def from_env(cls, env: "os._Environ[str] | dict[str, str] | None" = None) -> "Stack":
        env = os.environ if env is None else env
        home = Path(env.get("AMLEMU_HOME") or default_home()).resolve()
        return cls(home=home, port=int(env.get("AMLEMU_PORT", "8443")),
                   scoring_port=int(env.get("AMLEMU_SCORING_PORT", "8444")),
                   project=env.get("AMLEMU_PROJECT", "amlemu"), label=env.get("AMLEMU_STACK", "amlemu"),
                   network=env.get("AMLEMU_NETWORK", "amlemu"))

    @property
    def url(self) -> str:
        return f"https://localhost:{self.port}"

    @property
    def ca_file(self) -> Path:
        return self.home / "ca" / "ca.crt"

    @property
    def bundle_file(self) -> Path:
        """The emulator CA plus the public roots, so one process can talk to the emulator and to the internet."""
        return self.home / "ca" / "bundle.pem"

    def postgres_url(self, password: bool = True) -> str:
        """The compose profile `postgres`'s database, as the stack's services reach it."""
        secret = quote(os.environ.get("AMLEMU_POSTGRES_PASSWORD", "amlemu"), safe="") if password else "***"
        return f"postgresql+psycopg://amlemu:{secret}@postgres:{os.environ.get('AMLEMU_POSTGRES_PORT', '5432')}/amlemu"

    def compose_env(self) -> dict[str, str]:
        """What compose interpolates: this stack's folder, ports and names. The rest (uid, host data path) the
        services read off their own mounts, as under a plain `docker compose up`."""
        image = {} if CHECKOUT else {"AMLEMU_IMAGE": emulator_image()}  # a checkout's is in .env
        return {**os.environ, **image, **dict(self.settings), "AMLEMU_HOME": str(self.home), "AMLEMU_PORT": str(self.port),
                "AMLEMU_SCORING_PORT": str(self.scoring_port), "AMLEMU_PROJECT": self.project,
                "AMLEMU_STACK": self.label, "AMLEMU_NETWORK": self.network}

    def compose(self, *args: str, capture: bool = False) -> subprocess.CompletedProcess:
        command = compose_command() + ["-f", str(compose_file()), "-p", self.project, *args]
        return subprocess.run(command, env=self.compose_env(), check=True, text=True,
                              capture_output=capture)

    def healthy(self) -> bool:
        """The control plane answers."""
        return self.ca_file.exists() and _answers(f"{self.url}/_emulator/health", verify=str(self.ca_file))

    def ready(self) -> bool:
        """It serves everything, MLflow tracking too (whose server starts after the api on a fresh stack)."""
        return self.ca_file.exists() and _answers(f"{self.url}/_emulator/ready", verify=str(self.ca_file))

    @property
    def scoring_url(self) -> str:
        return f"http://127.0.0.1:{self.scoring_port}"

    def scoring_healthy(self) -> bool:
        """The scoring router of online endpoints answers (it starts after the api)."""
        return _answers(f"{self.scoring_url}/health")

    def wait_healthy(self, timeout: float, check=None) -> bool:
        """Until the control plane is ready (or what `check` checks answers), at most `timeout` seconds."""
        check = check or self.ready
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if check():
                return True
            time.sleep(0.5)
        return False

    def client(self) -> httpx.Client:
        """An ARM client with a token from the emulated managed identity, as the SDK would get one."""
        token = httpx.get(f"{self.url}/msi/token", params={"api-version": "2019-08-01", "resource": self.url},
                          headers={"X-IDENTITY-HEADER": self.identity_header()}, verify=str(self.ca_file),
                          timeout=10).json()["access_token"]
        return httpx.Client(base_url=self.url, verify=str(self.ca_file), timeout=30,
                            headers={"Authorization": f"Bearer {token}"},
                            params={"api-version": "2023-08-01-preview"})

    def write_bundle(self) -> Path:
        """REQUESTS_CA_BUNDLE replaces the default roots, so keep the machine's own (which may hold a
        proxy's CA) and certifi's next to the emulator's."""
        system = ssl.get_default_verify_paths().cafile
        roots = [self.ca_file, *(Path(p) for p in (system, certifi.where()) if p and Path(p).exists())]
        self.bundle_file.write_text("\n".join(path.read_text() for path in roots))
        return self.bundle_file

    def identity_header(self) -> str:
        return tokens.identity_header((self.home / "token.key").read_bytes())

    def remove_networks(self, runtime: Networks) -> None:
        """The networks the stack's controller made (each workspace's jobs and scoring networks), and the one
        jobs network of an older stack; once the containers on them are gone."""
        for network in [*runtime.networks({labels.STACK: self.label}), f"{self.network}-jobs"]:
            runtime.remove_network(network)

    def env_vars(self) -> dict[str, str]:
        return {"ARM_CLOUD_METADATA_URL": f"{self.url}/metadata/endpoints?api-version=2019-05-01",
                "REQUESTS_CA_BUNDLE": str(self.write_bundle()),
                # the same roots for urllib: the Azure CLI reads ARM_CLOUD_METADATA_URL with it as it starts
                "SSL_CERT_FILE": str(self.bundle_file),
                # the Azure CLI's logins and clouds for this stack, apart from those of your own ~/.azure
                "AZURE_CONFIG_DIR": str(self.home / "azure-cli"),
                "IDENTITY_ENDPOINT": f"{self.url}/msi/token",
                "IDENTITY_HEADER": self.identity_header(),
                # the SDK finds registries here (the cloud metadata has no field for it)
                "REGISTRY_DISCOVERY_ENDPOINT_URL": f"{self.url}/",
                # azureml-mlflow takes its cloud (the storage suffix of artifact URLs) by this name from the metadata
                # above; unset, it asks management.azure.com first
                "AZUREML_CURRENT_CLOUD": CLOUD_NAME,
                "AMLEMU_SUBSCRIPTION_ID": self.subscription,
                "AMLEMU_RESOURCE_GROUP": self.resource_group,
                "AMLEMU_WORKSPACE": self.workspace,
                "PYTHONPATH": python_path(os.environ.get("PYTHONPATH"))}


def record_images(image: str, dotenv: Path = ROOT / ".env") -> None:
    """Name the emulator image in .env, which a plain `docker compose up` reads: until the images are built,
    compose stops at once and says to run `make up` (the compose file requires AMLEMU_IMAGE). Other lines stay."""
    lines = dotenv.read_text().splitlines() if dotenv.exists() else [
        "# amlemu: written by `amlemu build` (make up, make build) once the images exist; docker compose reads it."]
    lines = [line for line in lines if not line.startswith("AMLEMU_IMAGE=")] + [f"AMLEMU_IMAGE={image}"]
    dotenv.write_text("\n".join(lines) + "\n")


def apply_client_shim() -> None:
    """What the shim on PYTHONPATH does at start-up, for a process already running (benchmarks, tests)."""
    spec = importlib.util.spec_from_file_location("amlemu_client_shim", CLIENT_SHIM / "sitecustomize.py")
    shim = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(shim)
    shim.install()


def python_path(existing: str | None) -> str:
    """The client shim ahead of the caller's own PYTHONPATH, once however often the exports are applied."""
    entries = existing.split(os.pathsep) if existing else []
    if str(CLIENT_SHIM) in entries:
        return existing
    return os.pathsep.join([str(CLIENT_SHIM), *entries])


def compose_command() -> list[str]:
    """`docker compose` (v2) where it exists, else a standalone docker-compose of v2 (v1 cannot read the file)."""
    if subprocess.run(["docker", "compose", "version"], capture_output=True).returncode == 0:
        return ["docker", "compose"]
    standalone = shutil.which("docker-compose")
    if standalone:
        found = subprocess.run([standalone, "version"], capture_output=True, text=True).stdout
        if "version v2" in found:
            return [standalone]
    raise SystemExit("Docker Compose v2 is missing" + (f" ({standalone} is v1)" if standalone else "") +
                     ": install docker-compose-plugin (Docker's or your distribution's packages), or, in a clone of "
                     "amlemu, run `make compose` (it installs the plugin from PyPI).")
