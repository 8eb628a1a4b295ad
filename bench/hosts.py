"""A cluster's nodes spread over attached hosts (issue 23, point 7): --jobs one-second command jobs through the
unmodified azure-ai-ml SDK on a cluster of --nodes nodes (min = max) placed over two attached hosts, against the same
on one host, in one run on one stack of its own.

The hosts are stand-ins (tests/hosts.py): containers of amlemu/host, each with its own Docker engine and sshd, on a
private network the benchmark makes, attached through the SDK as VirtualMachineCompute (SSH address, user, key file).
The stack's api, Redis and controller join that network at the addresses it was started with (AMLEMU_NODE_API_URL,
AMLEMU_ADVERTISED_REDIS_URL), as README tells a user to set them. A cluster is placed on attached hosts by its tag
`amlemu.hostPool` (their compute names, comma-separated). Each scenario: the cluster made, its nodes idle (and
checked to be on the hosts' engines, none on the emulator's), a warm-up of one job per node (the environment image is
copied to the hosts then; not counted), then the burst, measured from just before the first submit to the last
`Completed` seen. All on this one machine: the hosts share its cores with the stack.

Writes hosts.json and a "Cluster over attached hosts" section of RESULTS.md next to this file, the stack's logs under
logs/hosts/.

    .venv/bin/python -m bench.hosts [--jobs 100] [--nodes 4]      (or: make bench-hosts)
"""

import argparse
import json
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # `python bench/hosts.py` as well as `python -m bench.hosts`

import docker  # noqa: E402
from rich.console import Console  # noqa: E402

from bench.run import burst, machine, node_states, own_stack, replace_section, show  # noqa: E402
from emulator.domain.compute.placement import POOL_TAG  # noqa: E402
from emulator.runtime import labels  # noqa: E402
from emulator.runtime.docker import DockerRuntime  # noqa: E402
from tests.hosts import StandInHosts, join_stack, key_pair, stack_addresses, stack_env  # noqa: E402
from tests.waiting import wait_until  # noqa: E402  (the project's one sleeper: polls with a deadline)

HERE = Path(__file__).resolve().parent
VMS = ("vm-a", "vm-b")
SCENARIOS = {"one host": VMS[:1], "two hosts": VMS}
SECTION = "## Cluster over attached hosts"
console = Console(width=None if sys.stdout.isatty() else 150)


def attach(ml, lab: StandInHosts) -> None:
    from azure.ai.ml.entities import VirtualMachineCompute, VirtualMachineSshSettings

    for name, host in zip(VMS, lab.hosts, strict=True):
        ml.compute.begin_attach(VirtualMachineCompute(
            name=name, resource_id=f"/subscriptions/{ml.subscription_id}/resourceGroups/{ml.resource_group_name}"
                                   f"/providers/Microsoft.Compute/virtualMachines/{host.address}",
            ssh_settings=VirtualMachineSshSettings(admin_username=host.username, ssh_port=host.ssh_port,
                                                   ssh_private_key_file=str(lab.keys.private_file)))).result()


def placement(lab: StandInHosts, stack_label: str, cluster: str) -> dict[str, int]:
    """The cluster's node containers on each host's engine, and on the emulator's own."""
    wanted = [f"{labels.STACK}={stack_label}", f"{labels.ROLE}=node", f"{labels.COMPUTE}={cluster}"]
    counts = {}
    for name, host in zip(VMS, lab.hosts, strict=True):
        with host.engine() as engine:
            counts[name] = len(engine.containers.list(filters={"label": wanted}))
    counts["local"] = len(DockerRuntime().list({labels.STACK: stack_label, labels.ROLE: "node",
                                                labels.COMPUTE: cluster}))
    return counts


def scenario(ml, lab: StandInHosts, stack_label: str, what: str, args: argparse.Namespace) -> dict:
    from azure.ai.ml.entities import AmlCompute

    pool, cluster = SCENARIOS[what], f"pool-{len(SCENARIOS[what])}"
    ml.compute.begin_create_or_update(AmlCompute(
        name=cluster, size="Standard_DS3_v2", min_instances=args.nodes, max_instances=args.nodes,
        idle_time_before_scale_down=600, tags={POOL_TAG: ",".join(pool)})).result()
    started = time.perf_counter()
    wait_until(lambda: node_states(ml, cluster) == ["idle"] * args.nodes, timeout=900, interval=0.5,
               message=f"{args.nodes} idle nodes on {cluster}")
    nodes_up = time.perf_counter() - started
    placed = placement(lab, stack_label, cluster)
    if placed["local"] or sum(placed[vm] for vm in pool) != args.nodes or any(placed[vm] == 0 for vm in pool):
        raise SystemExit(f"{cluster}'s nodes are not spread over {', '.join(pool)}: {placed} (is the tag "
                         f"{POOL_TAG} wired in this checkout?)")
    tag = uuid.uuid4().hex[:6]
    warm = burst(ml, cluster, [f"hosts-warm-{tag}-{i}" for i in range(args.nodes)], args.nodes)
    threads = 8 if args.jobs * warm["create_or_update_median"] > 0.1 * args.jobs / args.nodes else 1
    console.print(f"[bold]{what}[/] ({', '.join(pool)}): {args.nodes} nodes idle in {nodes_up:.0f} s, placed "
                  f"{placed}; warm-up {warm['seconds']:.1f} s; {args.jobs} jobs, {threads} submit thread(s)")
    measured = burst(ml, cluster, [f"hosts-{tag}-{i:03d}" for i in range(args.jobs)], threads, timeout=1800)
    console.print(f"  {args.jobs} × sleep 1: {measured['seconds']:.1f} s")
    ml.compute.begin_delete(cluster).result()
    wait_until(lambda: not any(placement(lab, stack_label, cluster).values()), timeout=180, interval=1.0,
               message=f"{cluster}'s nodes to leave the hosts")
    return {"hosts": list(pool), "placement": placed, "nodes_idle_after": nodes_up, "warmup": warm,
            "submit_threads": threads, **measured}


def rows(report: dict) -> list[tuple[str, str]]:
    one, two, ideal = report["one host"], report["two hosts"], report["setup"]["ideal_seconds"]
    return [(f"{what}: first submit → last Completed", f"{run['seconds']:.1f} s ({run['seconds'] / ideal:.2f}× ideal)")
            for what, run in (("one host", one), ("two hosts", two))] + [
        ("two hosts / one host", f"{report['ratio']:.2f}×"),
        ("nodes per host (two hosts)", ", ".join(f"{vm}: {two['placement'][vm]}" for vm in two["hosts"])),
        ("nodes all idle after the cluster's create returned (one host / two hosts)",
         f"{one['nodes_idle_after']:.0f} s / {two['nodes_idle_after']:.0f} s")]


def notes(report: dict) -> str:
    s, m = report["setup"], report["machine"]
    return (f"{s['jobs']} × `sleep 1` (`python:3.11-slim`) on an AmlCompute cluster of {s['nodes']} nodes "
            f"(min = max) tagged `{POOL_TAG}`; ideal {s['jobs']} × 1 s / {s['nodes']} = {s['ideal_seconds']:.0f} s. "
            f"The hosts are stand-ins (`tests/hosts.py`: a Docker engine and sshd in a container each) on this same "
            f"machine, attached through the SDK; both scenarios in one run on one stack, one host first. Machine: "
            f"{m['cpus']} × {m['cpu']}, {m['memory_gib']} GiB RAM, Docker {m['docker']}, azure-ai-ml "
            f"{m['azure_ai_ml']}; {m['date']}; load average {report['load'][0]:.2f} before, {report['load'][1]:.2f} "
            f"after.")


def report_out(report: dict, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "hosts.json").write_text(json.dumps(report, indent=2) + "\n")
    replace_section(out / "RESULTS.md", SECTION, [
        SECTION, "", "`make bench-hosts` (`bench/hosts.py`): a cluster's nodes over two attached hosts against one "
        "host, in one run; figures in `bench/hosts.json`.", "", "| | |", "| --- | --- |",
        *(f"| {what} | {value} |" for what, value in rows(report)), "", notes(report)])
    show("A cluster's nodes over attached hosts", ["", ""], rows(report), notes(report))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=100)
    parser.add_argument("--nodes", type=int, default=4, help="the cluster's node count (min = max)")
    parser.add_argument("--out", type=Path, default=HERE, help="where hosts.json and RESULTS.md go")
    args = parser.parse_args()
    report: dict = {"load": [os.getloadavg()[0]],
                    "setup": {"jobs": args.jobs, "nodes": args.nodes, "ideal_seconds": args.jobs / args.nodes}}
    client = docker.from_env(timeout=300)
    with tempfile.TemporaryDirectory(prefix="amlemu-bench-hosts-") as folder:
        lab = StandInHosts(client, key_pair(Path(folder)), fixed_subnet=True)
        try:
            lab.start(len(VMS))
            addresses = stack_addresses(lab)
            with own_stack(HERE / "logs" / "hosts", stack_env(addresses),
                           lambda stack: join_stack(lab, stack.project, addresses)) as stack:
                from azure.ai.ml import MLClient  # after the amlemu env variables are set
                from azure.identity import DefaultAzureCredential

                ml = MLClient(DefaultAzureCredential(), stack.subscription, stack.resource_group, stack.workspace)
                attach(ml, lab)
                for what in SCENARIOS:
                    report[what] = scenario(ml, lab, stack.label, what, args)
                for name in VMS:
                    ml.compute.begin_delete(name, action="Detach").result()
        finally:
            lab.close()
            client.close()
    report["load"].append(os.getloadavg()[0])
    report["ratio"] = report["two hosts"]["seconds"] / report["one host"]["seconds"]
    report["machine"] = machine()
    report_out(report, args.out)


if __name__ == "__main__":
    main()
