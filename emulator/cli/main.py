"""The `amlemu` command line: bring the stack up and down, and connect the SDK to it."""

import json
import os
import shlex
import subprocess
import time
from pathlib import Path

import typer
from rich.console import Console

from emulator.cli import capacity, cost, data, demo, doctor, images, instance, quota, rest, roles, studio
from emulator.cli.stack import CHECKOUT, Stack, record_images
from emulator.errors import EmulatorError
from emulator.runtime import labels

app = typer.Typer(help="amlemu: a local emulator of Azure Machine Learning compute.", no_args_is_help=True,
                  add_completion=False, pretty_exceptions_enable=False)
console = Console(stderr=True)
app.add_typer(demo.app, name="demo")
app.add_typer(instance.app, name="instance")
app.add_typer(data.app, name="data")
app.add_typer(capacity.app, name="capacity")
app.command()(cost.cost)
app.command()(doctor.doctor)
app.command()(quota.quota)
app.command(name="studio")(studio.studio)
app.command(name="token")(roles.token)
app.command(name="roles")(roles.roles_table)


def _progress(status):
    def progress(line: str) -> None:
        status.update(f"[bold]building images[/] {line[:100]}")
        if line.startswith(("Step ", "built ", "building ", "debootstrap", "importing", "Successfully tagged")):
            console.print(f"  [dim]{line}[/]")

    return progress


ENV_COMMAND = ".venv/bin/amlemu env" if CHECKOUT else "amlemu env"  # make up's venv in a clone

MONITORING = typer.Option(False, "--monitoring", help="Prometheus with the amlemu dashboard too (compose profile "
                          "`monitoring`, http://127.0.0.1:9090/consoles/amlemu.html).")
POSTGRES = typer.Option(False, "--postgres", help="PostgreSQL too (compose profile `postgres`): `up` keeps the state "
                        "there (AMLEMU_DATABASE_URL, unless set, becomes the profile's database).")

HOSTS = typer.Option(False, "--hosts", help="The tests' stand-in remote hosts too (images/host: a Docker engine and "
                     "sshd, for the attached-compute tests; make test asks for it).")


@app.command()
def build(monitoring: bool = MONITORING, postgres: bool = POSTGRES, hosts: bool = HOSTS) -> None:
    """Build the images the stack needs (a Debian base from packages when none can be pulled)."""
    started = time.monotonic()
    with console.status("[bold]building images[/]") as status:
        image = images.build(_progress(status), monitoring=monitoring, postgres=postgres, hosts=hosts)
    if CHECKOUT:  # a plain `docker compose up` in the clone finds the image in .env
        record_images(image)
    console.print(f"[green]images ready[/] in {time.monotonic() - started:.0f}s")


@app.command()
def up(skip_build: bool = typer.Option(False, "--skip-build", help="Use the images already built."),
       monitoring: bool = MONITORING, postgres: bool = POSTGRES) -> None:
    """Build what is missing, start the stack, and wait until it is healthy."""
    if not skip_build:
        build(monitoring, postgres)
    stack = Stack.from_env()
    stack.home.mkdir(parents=True, exist_ok=True)
    profiles = ["--profile", "postgres"] if postgres else []
    if postgres:  # compose_env passes the environment on
        os.environ.setdefault("AMLEMU_DATABASE_URL", stack.postgres_url())
        console.print(f"state store: PostgreSQL (compose profile `postgres`), {stack.postgres_url(password=False)}")
    try:
        stack.compose(*profiles, "up", "-d", "--remove-orphans")
    except subprocess.CalledProcessError:
        console.print(f"[red]docker compose could not start the stack[/] (see above). If port {stack.port} is "
                      "in use, choose another: AMLEMU_PORT=9443 make up")
        raise typer.Exit(1) from None
    with console.status(f"[bold]waiting for the control plane on {stack.url}[/]"):
        if not stack.wait_healthy(timeout=120):
            console.print("[red]the control plane did not become ready within 120 s[/]; "
                          f"see `docker compose -p {stack.project} logs api mlflow`")
            raise typer.Exit(1)
        if not stack.wait_healthy(timeout=60, check=stack.scoring_healthy):
            console.print(f"[red]the scoring router did not answer on {stack.scoring_url} within 60 s[/]; "
                          f"see `docker compose -p {stack.project} logs scoring`")
            raise typer.Exit(1)
    if monitoring:  # once the api has made its CA and the controller the scrape token's folder
        stack.compose("--profile", "monitoring", "up", "-d", "prometheus")
        port = os.environ.get("AMLEMU_PROMETHEUS_PORT", "9090")
        console.print(f"Prometheus: [bold]http://127.0.0.1:{port}/consoles/amlemu.html[/]")
    console.print(f"[green]amlemu is up[/] at {stack.url} (data folder: {stack.home})\n"
                  "Connect the azure-ai-ml SDK with:  [bold]eval \"$(" + ENV_COMMAND + ")\"[/]")


@app.command()
def down(remove: bool = typer.Option(False, "--remove", help="Remove its volumes too (Redis's queue, compute "
                                     "instances' homes): the stack is gone but for its data folder.")) -> None:
    """Stop the stack and its node containers; data is kept."""
    from emulator.runtime.base import ROLES
    from emulator.runtime.docker import DockerRuntime

    stack = Stack.from_env()
    runtime = DockerRuntime()
    stack.compose("stop", "controller")  # first, so that no node starts while they are removed
    containers = [c for c in runtime.list({labels.STACK: stack.label}) if c.labels.get(labels.ROLE) in ROLES]
    with console.status(f"[bold]removing {len(containers)} node, job, sandbox and model-server container(s)[/]"):
        for container in containers:
            runtime.remove(container.id)  # jobs that ran go back to the queue at the next `amlemu up`
    # Prometheus and PostgreSQL too, if started
    stack.compose("--profile", "monitoring", "--profile", "postgres", "down", *(["-v"] if remove else []))
    if remove:
        for volume in runtime.volumes({labels.STACK: stack.label}):
            runtime.remove_volume(volume)
    stack.remove_networks(runtime)
    console.print(f"[green]amlemu is {'removed' if remove else 'down'}[/]; its data is kept in {stack.home}")


@app.command()
def env() -> None:
    """Print the export lines that point the azure-ai-ml SDK at the emulator."""
    stack = Stack.from_env()
    if not (stack.home / "token.key").exists():
        console.print("[red]the emulator has not been started yet[/]: run `make up` first")
        raise typer.Exit(1)
    for name, value in stack.env_vars().items():
        print(f"export {name}={shlex.quote(value)}")
    if not doctor.resolves(doctor.PROBE_HOST):  # on stderr: `eval "$(amlemu env)"` shows it, runs only the exports
        console.print("note: names under .blob.localhost resolve here only in processes that load the client shim "
                      "(PYTHONPATH above); where a tool replaces PYTHONPATH, uploads fail with \"Failed to resolve\": "
                      "run `amlemu doctor --fix` once.")


@app.command()
def status() -> None:
    """Show the workspaces, clusters (with their nodes) and compute instances the emulator holds."""
    from rich.table import Table

    stack = Stack.from_env()
    client = rest.running_client(stack)
    table = Table("workspace", "cluster", "size", "priority", "state", "nodes (idle/running/preparing/leaving)",
                  "min..max")
    rg = f"/subscriptions/{stack.subscription}/resourceGroups/{stack.resource_group}"
    labs: list[tuple[str, str]] = []
    serving: list[str] = []
    problems: list[str] = []  # why a compute's nodes or containers would not start
    for ws in client.get(f"{rg}/providers/Microsoft.MachineLearningServices/workspaces").json()["value"]:
        serving += _endpoint_lines(client, ws["id"])
        computes = client.get(f"{ws['id']}/computes").json()["value"]
        for c in computes or [None]:
            if c is None:
                table.add_row(ws["name"], "-", "", "", "", "", "")
                continue
            p = c["properties"]["properties"]
            problems += [f"{c['name']}: {e['error']['code']}: {e['error']['message']}" for e in p.get("errors") or []]
            if c["properties"]["computeType"] == "ComputeInstance":
                table.add_row(ws["name"], f"{c['name']} (instance)", p.get("vmSize"), "Dedicated",
                              f"{c['properties']['provisioningState']} / {p.get('state')}", "", "")
                labs += [(c["name"], a["endpointUri"]) for a in p.get("applications") or []
                         if a["displayName"] == "Jupyter Lab"]
                continue
            counts = p.get("nodeStateCounts", {})
            scale = p.get("scaleSettings", {})
            table.add_row(ws["name"], c["name"], p.get("vmSize"), p.get("vmPriority"),
                          f"{c['properties']['provisioningState']} / {p.get('allocationState')}",
                          "/".join(str(counts.get(k, 0)) for k in ("idleNodeCount", "runningNodeCount",
                                                                   "preparingNodeCount", "leavingNodeCount")),
                          f"{scale.get('minNodeCount')}..{scale.get('maxNodeCount')}")
    Console().print(table)
    for name, url in labs:
        Console().print(f"{name}: JupyterLab at {url}  (terminal: amlemu instance shell {name})")
    for line in serving:
        Console().print(line)
    for line in problems:
        Console().print(f"[red]{line}[/]", highlight=False)


def _endpoint_lines(client, workspace_id: str) -> list[str]:
    """Each online endpoint: its scoring URL and traffic, then its deployments' states and sizes."""
    lines = []
    for endpoint in client.get(f"{workspace_id}/onlineEndpoints").json()["value"]:
        props = endpoint["properties"]
        lines.append(f"endpoint {endpoint['name']} ({props['authMode']}, {props['provisioningState']}): "
                     f"{props['scoringUri']}  traffic {props['traffic'] or 'none'}")
        for d in client.get(f"{endpoint['id']}/deployments").json()["value"]:
            error = d["properties"].get("provisioningErrors")
            lines.append(f"  deployment {d['name']}: {d['properties']['provisioningState']}, "
                         f"{d['sku']['capacity']} × {d['properties']['instanceType']}"
                         + (f"  {error['code']}: {error['message'].splitlines()[0]}" if error else ""))
    return lines


@app.command()
def preempt(cluster: str = typer.Argument(..., help="A low-priority cluster."),
            node: str | None = typer.Option(None, "--node", help="The node to preempt (default: a running one)."),
            workspace: str | None = typer.Option(None, help="The workspace (default: AMLEMU_WORKSPACE).")) -> None:
    """Preempt a low-priority node now: its jobs see Azure's Scheduled Events notice, then the node goes."""
    stack = Stack.from_env()
    answer = rest.answer(rest.running_client(stack).post(rest.emulator_url(stack, workspace, cluster, "preempt"),
                                                 json={"nodeId": node} if node else None))
    console.print(f"node [bold]{answer['nodeId']}[/] of {cluster}: Preempt notice {answer['eventId']}, "
                  f"taken at {answer['notBefore']} or as soon as its job acknowledges the event")


@app.command()
def chaos(cluster: str = typer.Argument(..., help="A low-priority cluster."),
          mean_seconds: float | None = typer.Option(None, "--every", help="Preempt a node at random, on average "
                                                    "every this many seconds (scaled by AMLEMU_TIME_SCALE)."),
          off: bool = typer.Option(False, "--off", help="Stop random preemption."),
          seed: int | None = typer.Option(None, help="Replay the same timeline with the same seed."),
          on_preemption: str | None = typer.Option(None, "--on-preemption", help="requeue (default) or fail."),
          workspace: str | None = typer.Option(None, help="The workspace (default: AMLEMU_WORKSPACE).")) -> None:
    """Show or set a low-priority cluster's preemption policy."""
    stack = Stack.from_env()
    client, url = rest.running_client(stack), rest.emulator_url(stack, workspace, cluster, "preemption")
    body = {k: v for k, v in {"meanSecondsBetweenPreemptions": mean_seconds, "seed": seed,
                              "onPreemption": on_preemption}.items() if v is not None}
    if off:
        body["meanSecondsBetweenPreemptions"] = None
    policy = rest.answer(client.put(url, json=body) if body else client.get(url))
    every, seed_now = policy["meanSecondsBetweenPreemptions"], policy["seed"]
    random_part = "off" if every is None else f"on average every {every:g} s"
    seed_part = "" if seed_now is None else f", seed {seed_now}"
    outcome = "failed" if policy["onPreemption"] == "fail" else "requeued"
    console.print(f"{cluster}: random preemption {random_part}{seed_part}; a preempted job is {outcome}")


@app.command()
def config(path: Path = typer.Option(Path("config.json"), help="Where to write the workspace config.")) -> None:
    """Write an Azure ML config.json for MLClient.from_config()."""
    stack = Stack.from_env()
    path.write_text(json.dumps({"subscription_id": stack.subscription, "resource_group": stack.resource_group,
                                "workspace_name": stack.workspace}, indent=2) + "\n")
    console.print(f"wrote {path}")


def main() -> None:
    try:
        app()
    except EmulatorError as exc:
        console.print(f"[red]error:[/] {exc.message}")
        raise SystemExit(1) from None
