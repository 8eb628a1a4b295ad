"""amlemu for testcontainers users, on that library's conventions:

    from amlemu.testcontainers import AmlEmuContainer

    with AmlEmuContainer().with_env("AMLEMU_TIME_SCALE", "10") as emu:
        ml_client = emu.get_ml_client()
        ...

Not a single container but a stack (redis, MLflow, api, controller, scoring router, and the nodes and jobs the
controller starts), so it is not a DockerContainer: it has the same surface (start/stop, with_env, a context
manager, get_container_host_ip, get_exposed_port, get_connection_url) and removes every container, network and
volume it made at stop. Ryuk, testcontainers' reaper, needs its image pulled; the stack's own owner label does that
work here (a stack whose process was killed is removed by the next one started).
"""

from amlemu.session import Emulator, start

API_PORT, SCORING_PORT = 8443, 8444  # the ports inside: the api's HTTPS, the scoring router's HTTP


class AmlEmuContainer:
    def __init__(self, **env: str) -> None:
        self.env: dict[str, str] = dict(env)
        self._emulator: Emulator | None = None

    def with_env(self, key: str, value: str) -> "AmlEmuContainer":
        self.env[key] = value
        return self

    def start(self) -> "AmlEmuContainer":
        self._emulator = start(self.env)
        return self

    def stop(self, force: bool = True, delete_volume: bool = True) -> None:
        if self._emulator is not None:
            self._emulator.stop()
            self._emulator = None

    def __enter__(self) -> "AmlEmuContainer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def emulator(self) -> Emulator:
        if self._emulator is None:
            raise RuntimeError("AmlEmuContainer is not started: call start() or use it in a with block")
        return self._emulator

    def get_container_host_ip(self) -> str:
        return "localhost"

    def get_exposed_port(self, port: int) -> int:
        stack = self.emulator.stack
        ports = {API_PORT: stack.port, SCORING_PORT: stack.scoring_port}
        if port not in ports:
            raise ValueError(f"amlemu exposes {API_PORT} (the Azure ML REST API) and {SCORING_PORT} (scoring)")
        return ports[port]

    def get_connection_url(self) -> str:
        """The control plane's base URL (ARM and the Azure ML data planes)."""
        return self.emulator.url

    def get_env(self) -> dict[str, str]:
        """What `amlemu env` would export for this stack, for subprocesses (az, a notebook kernel, another SDK)."""
        return self.emulator.env()

    def get_ml_client(self, workspace: str | None = None):
        """azure.ai.ml.MLClient on the stack's workspace; this process is pointed at the stack from then on."""
        return self.emulator.ml_client(workspace)
