"""Settings, built once by each entry point and passed down (never a module-level instance)."""

import urllib.parse
from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from emulator.domain import networks
from emulator.domain.assets import images
from emulator.domain.compute import vm_sizes

DEFAULT_SUBSCRIPTION = "00000000-0000-0000-0000-000000000000"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="AMLEMU_", extra="ignore")

    data_dir: Path = Path("/var/lib/amlemu")
    # Where data_dir lives on the Docker host: bind mounts into containers the emulator starts use it. Unset,
    # the controller reads it off its own container's mounts (controller.main.run).
    host_data_dir: Path | None = None
    database_url: str = ""
    redis_url: str = "redis://redis:6379/0"
    # How nodes on attached hosts (VirtualMachine compute, issue 23) reach this stack's Redis over the network, e.g.
    # redis://10.0.0.5:6379/0 with Redis published on an address those hosts reach. Unset: attached computes are
    # attached and checked, but no node runs there (jobs cannot target them).
    advertised_redis_url: str | None = None

    # What clients see: the HTTPS address of the control plane.
    public_host: str = "localhost"
    public_port: int = 8443
    listen_host: str = "0.0.0.0"
    listen_port: int = 8443

    subscription_id: str = DEFAULT_SUBSCRIPTION
    resource_group: str = "amlemu"
    workspace: str = "amlemu"
    location: str = "local"

    # Multiplies every platform timer (idle scale-down, notices, schedules, provisioning delay).
    time_scale: float = Field(1.0, gt=0)
    # Scales VM-size CPUs and memory so a small machine can host several "VMs".
    resource_scale: float = Field(0.25, gt=0)
    provisioning_delay_seconds: float = Field(0.0, ge=0)
    reconcile_interval_seconds: float = Field(0.5, gt=0)
    # The api serves once the controller has reconciled since the api started, or after this long in any case
    # (0: at once, for an api run on its own).
    controller_wait_seconds: float = Field(60.0, ge=0)

    # The workspaces' MLflow tracking server (the `mlflow` service), reached by the api only.
    mlflow_url: str = "http://mlflow:5000"
    # The name jobs reach the api by on the jobs network (the controller joins it there; its certificate names it).
    jobs_api_host: str = "api"

    node_image: str = "amlemu/emulator:latest"
    # Cluster nodes with a data folder of their own (a volume of their engine) instead of the emulator's: they fetch
    # a job's files from the api and send its log and outputs back (workers/file_sync.py), as nodes on another
    # machine must. Per cluster, the tag `amlemu.detached_nodes` ("true"/"false") overrides it.
    detached_nodes: bool = False
    node_api_url: str = "https://api:8443"  # where detached nodes reach the api (its certificate names `api`)
    instance_image: str = images.INSTANCE_IMAGE  # compute instances: JupyterLab, a terminal, sshd
    instance_job_slots: int = Field(1, ge=1, le=8)  # jobs a compute instance runs at once (the rest queue)
    docker_network: str = "amlemu"
    # What user code on a workspace's jobs network reaches beyond it (its peers, its nodes and the api as `api`).
    # "none": nothing, the host's own ports included (the host has no address on a sealed bridge). "internet": the
    # engine's usual outbound through the host, as Azure's jobs have by default; but that way every port the host
    # listens on beyond loopback is open to the jobs too (the engine does not filter traffic to the host itself).
    # Read when a workspace's network is made: `amlemu down` and `up` again to change an existing one.
    jobs_outbound: Literal["none", "internet"] = "none"
    docker_socket: str = "/var/run/docker.sock"  # on the Docker host: nodes start job containers through it
    # The engine's data root on the Docker host (`docker info`: Docker Root Dir; unset, the controller asks the
    # engine). Nodes see it read-only, without the mounts under it, to measure what a job writes into its
    # container's own files (its writable layer).
    docker_root: Path | None = None
    # Job containers run unprivileged, as this uid:gid, on their own network (no route to redis or the api).
    job_user: str = "1000:1000"
    # GPU sizes on a host without GPUs: "simulate" runs the job on CPU and says so, "refuse" fails it.
    gpu_mode: Literal["simulate", "refuse"] = "simulate"
    # Bounds on a job's container that its VM size does not set (README, "Job containers"). Processes and threads
    # at once: a fork bomb stops there, and a job that stays at the limit this long is stopped and fails.
    job_pids_limit: int = Field(4096, ge=16)
    job_pids_sustain_seconds: float = Field(5.0, gt=0)
    # Disk a job may fill (its working directory, outputs, logs and container files), measured this often: the
    # engine enforces no size on most storage drivers, so the node measures and stops the job past it.
    job_disk_limit_gb: float = Field(32.0, gt=0)
    job_disk_check_seconds: float = Field(5.0, gt=0)
    # Low-priority preemption (per cluster through /_emulator or `amlemu chaos`; these are the defaults).
    # Random preemption is off unless a mean gap is set; a seed replays the same timeline.
    preemption_mean_seconds: float | None = Field(None, gt=0)
    preemption_seed: int | None = None
    preemption_notice_seconds: float = Field(30.0, ge=0)  # Azure's Preempt notice, scaled by time_scale
    on_preemption: Literal["requeue", "fail"] = "requeue"
    # Also SIGTERM the job when the notice comes. Azure sends none: its notice is the only sign, and SIGTERM
    # comes when the node is taken (at NotBefore or on acknowledgement). True suits code that only traps SIGTERM.
    signal_on_notice: bool = False
    # Distinguishes containers of one emulator stack from another's (tests run several).
    stack: str = "amlemu"
    # Online endpoints: the scoring router's port on 127.0.0.1 (scoring URLs name it) and inside its container.
    scoring_port: int = 8444
    scoring_listen_port: int = 8444
    scoring_refresh_seconds: float = Field(0.25, gt=0)  # how often the router rereads keys, traffic, instances
    # A scoring request's body is held whole (an instance that drops the connection gets it again): bounded.
    # Azure documents no payload cap for managed online endpoints, only 5 MBPS per endpoint for 180 s at most.
    scoring_max_request_bytes: int = Field(100 << 20, gt=0)
    # Mirrored copies in flight at once; past that a copy is dropped and counted, as Azure mirrors best-effort.
    scoring_max_mirrors: int = Field(32, ge=0)
    # Job inputs outside the workspace (https, wasbs, abfss) not in the mirror are fetched at submit, bounded
    # (a connect or read timeout; ten times it for the whole file; a size cap). Off: the mirror only, offline.
    external_fetch: bool = True
    external_timeout_seconds: float = Field(30.0, gt=0)
    external_max_bytes: int = Field(2 << 30, gt=0)
    # Fetch from loopback and private addresses too (a test server of yours); Azure reaches public ones only.
    external_private_hosts: bool = False

    # Core quotas (vCPUs) of every region, Azure's defaults (semantics §1.5): each dedicated CPU family, each GPU
    # family, all dedicated families together, and low priority across families. /_emulator/quotas (`amlemu quota`)
    # overrides them for all workspaces or caps one workspace.
    quota_family_cores: int = Field(24, ge=0)
    quota_gpu_family_cores: int = Field(0, ge=0)
    quota_total_dedicated_cores: int = Field(24, ge=0)
    quota_low_priority_cores: int = Field(100, ge=0)
    # Capacity shortages (Azure out of VMs: clusters stay Resizing, their jobs Queued). On demand through
    # /_emulator/capacity (`amlemu capacity`); these set what is short (region and VM family, "*" for all, and the
    # priority), a standing shortage from the start (until `amlemu capacity restore`), and random shortages on
    # average every `capacity_every_seconds`, each lasting `capacity_for_seconds` on average (both scaled by
    # time_scale; off unless set); a seed replays the same windows.
    capacity_region: str = "*"
    capacity_family: str = "*"
    capacity_priority: Literal["LowPriority", "Dedicated"] = "LowPriority"
    capacity_short: bool = False
    capacity_every_seconds: float | None = Field(None, gt=0)
    capacity_for_seconds: float = Field(60.0, gt=0)
    capacity_seed: int | None = None

    # The event timeline keeps this many events (the oldest go); budgets and pruning are looked at this often.
    events_keep: int = Field(100_000, ge=1000)
    meter_interval_seconds: float = Field(5.0, gt=0)

    @field_validator("host_data_dir", "capacity_every_seconds", "capacity_seed", "docker_root", mode="before")
    @classmethod
    def _unset_when_empty(cls, value):
        """An empty value (a compose file's `${VAR:-}`) is unset, not the relative path '.'."""
        return value or None

    @field_validator("capacity_family")
    @classmethod
    def _known_family(cls, value: str) -> str:
        families = {size.family for size in vm_sizes.VM_SIZES}
        if value != "*" and value not in families:
            raise ValueError(f"unknown VM family {value!r}: one of {', '.join(sorted(families))}, or *")
        return value

    @property
    def db_url(self) -> str:
        return self.database_url or f"sqlite:///{self.data_dir / 'amlemu.db'}"

    def jobs_network(self, workspace_key: str) -> str:
        """The workspace's jobs network: its job containers, sandboxes, instances, its nodes and the api (as `api`)."""
        return networks.network_name(self.docker_network, networks.JOBS, workspace_key)

    def scoring_network(self, workspace_key: str) -> str:
        """The workspace's model servers (the scoring router, on the host's network, reaches them by address)."""
        return networks.network_name(self.docker_network, networks.SCORING, workspace_key)

    @property
    def shared_jobs_network(self) -> str:
        """The one jobs network of stacks before each workspace had its own: containers adopted from such a
        stack are still on it until replaced; `amlemu down` removes it."""
        return f"{self.docker_network}-jobs"

    @property
    def routes_changed(self) -> Path:
        """Touched by the api on every change of keys, traffic or deployments: the router rereads before routing."""
        return self.data_dir / "routes.changed"

    @property
    def scoring_traffic(self) -> Path:
        """Each deployment's recent traffic, rewritten by the scoring router every second, for the Studio's pages."""
        return self.data_dir / "scoring.traffic.json"

    @property
    def controller_alive(self) -> Path:
        """Touched by the controller after each reconcile pass (gone while it starts)."""
        return self.data_dir / "controller.alive"

    @property
    def scoring_url(self) -> str:
        return f"http://127.0.0.1:{self.scoring_port}"

    @property
    def host_dir(self) -> Path:
        """data_dir as the Docker host sees it: bind mounts into containers the emulator starts use it."""
        return self.host_data_dir or self.data_dir

    @property
    def public_netloc(self) -> str:
        return f"{self.public_host}:{self.public_port}"

    @property
    def public_url(self) -> str:
        return f"https://{self.public_netloc}"

    @property
    def served_hosts(self) -> list[str]:
        """The names the api's certificate carries, its public one first; the address detached nodes use too (an
        attached host's node reaches the api at an address of a network the hosts share)."""
        node_host = urllib.parse.urlparse(self.node_api_url).hostname
        return list(dict.fromkeys([self.public_host, "localhost", "127.0.0.1", "::1", "api", self.jobs_api_host,
                                   *([node_host] if node_host else [])]))

    @property
    def own_urls(self) -> list[str]:
        """The api's URL under each of its names: what a client may ask a management token for."""
        return [f"https://{f'[{host}]' if ':' in host else host}:{self.public_port}" for host in self.served_hosts]

    @property
    def ca_dir(self) -> Path:
        return self.data_dir / "ca"

    def scaled(self, seconds: float) -> float:
        """A platform timer in real seconds after the time scale."""
        return seconds * self.time_scale
