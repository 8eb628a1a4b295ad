"""`amlemu doctor`: is this machine ready for amlemu, and can it resolve the blob host names the SDK builds
(https://<account>.blob.localhost:<port>) without the client shim, which only a process started with `amlemu env`'s
PYTHONPATH loads? If not, it fixes that, with the user's consent: Debian's nss-myhostname resolves every name
under .localhost (RFC 6761) for every program; an /etc/hosts line per storage account is the fallback."""

import ctypes.util
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import typer
from rich.console import Console

from emulator.cli.stack import CLIENT_SHIM, Stack
from emulator.domain.ids import WorkspaceRef
from emulator.domain.registries.ids import RegistryRef
from emulator.domain.storage import blob_access

console = Console(stderr=True)
PROBE_HOST = "amlemu-doctor.blob.localhost"
HOSTS_MARK = "# amlemu: storage accounts (amlemu doctor --fix)"
NSSWITCH = Path("/etc/nsswitch.conf")


def resolves(host: str) -> bool:
    """Whether a Python that never loads the shim (-I: no PYTHONPATH, no user site) resolves `host`."""
    probe = "import socket, sys; socket.getaddrinfo(sys.argv[1], 443)"
    return subprocess.run([sys.executable, "-I", "-c", probe, host], capture_output=True).returncode == 0


def myhostname_plan(nsswitch: Path = NSSWITCH) -> list[list[str]] | None:
    """Commands that make nss-myhostname answer for *.localhost, or None where there is no apt to install it."""
    installed = ctypes.util.find_library("nss_myhostname") is not None
    if installed and nsswitch.exists() and _with_myhostname(nsswitch.read_text()) == nsswitch.read_text():
        return []  # in place already: whatever fails is elsewhere
    if not installed and shutil.which("apt-get") is None:
        return None
    plan = [] if installed else [["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", "libnss-myhostname"]]
    # Debian's package adds `myhostname` to the hosts line itself; an edited nsswitch.conf may need it by hand.
    return plan + [[sys.executable, "-m", "emulator.cli.doctor", "nsswitch", str(nsswitch)]]


def _with_myhostname(text: str) -> str:
    """nsswitch.conf with `myhostname` on its hosts line, right after `files` (so /etc/hosts still wins)."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        words = line.split()
        if words and words[0] == "hosts:" and "myhostname" not in words:
            at = words.index("files") + 1 if "files" in words else 1
            lines[i] = " ".join(words[:at] + ["myhostname"] + words[at:])
    return "\n".join(lines) + "\n"


def hosts_lines(accounts: list[str]) -> list[str]:
    return [HOSTS_MARK] + [f"127.0.0.1 {account}.blob.localhost" for account in sorted(set(accounts))]


def with_hosts_lines(text: str, accounts: list[str]) -> str:
    """/etc/hosts with a line per account, each once however often doctor runs."""
    present = {word for line in text.splitlines() for word in line.split()[1:] if not line.startswith("#")}
    missing = [a for a in accounts if f"{a}.blob.localhost" not in present]
    if not missing:
        return text
    lines = hosts_lines(missing) if HOSTS_MARK not in text else hosts_lines(missing)[1:]
    return text.rstrip("\n") + "\n" + "\n".join(lines) + "\n"


def stack_accounts(stack: Stack) -> list[str]:
    """The storage accounts of the running stack's workspaces and registries (each has its own)."""
    if not stack.healthy():
        return [blob_access.workspace_account(WorkspaceRef(stack.subscription, stack.resource_group, stack.workspace))]
    found = []
    with stack.client() as client:
        for kind, ref_of, account in (("workspaces", WorkspaceRef, blob_access.workspace_account),
                                      ("registries", RegistryRef, blob_access.registry_account)):
            listing = client.get(f"/subscriptions/{stack.subscription}/providers/"
                                 f"Microsoft.MachineLearningServices/{kind}")
            for item in listing.json().get("value", []) if listing.status_code == 200 else []:
                group = item["id"].split("/")[4]
                found.append(account(ref_of(stack.subscription, group, item["name"])))
    return found


def _docker_ready() -> bool:
    """The engine answers and Compose v2 is there; what to do is printed when not."""
    from emulator.cli.stack import compose_command
    from emulator.errors import RuntimeUnavailable
    from emulator.runtime.docker import DockerRuntime

    try:
        DockerRuntime()
        compose_command()
    except (RuntimeUnavailable, SystemExit) as exc:
        console.print(f"[red]docker:[/] {getattr(exc, 'message', None) or exc}")
        return False
    console.print("[green]ok[/]: the Docker engine answers and Docker Compose v2 is installed")
    return True


def doctor(fix: bool = typer.Option(False, "--fix", help="Make the blob host names resolve for every program "
                                    "(asks first; needs root)."),
           yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask before fixing."),
           hosts: bool = typer.Option(False, "--hosts", help="Fix with /etc/hosts lines (one per storage account of "
                                      "the running stack) rather than nss-myhostname."),
           hosts_file: Path = typer.Option(Path("/etc/hosts"), "--hosts-file", hidden=True)) -> None:
    """Check this machine for amlemu: Docker, and the SDK's blob host names without the client shim."""
    ready = _docker_ready()
    shim = str(CLIENT_SHIM) in os.environ.get("PYTHONPATH", "").split(os.pathsep)
    console.print(f"client shim on this shell's PYTHONPATH: {'yes' if shim else 'no'} (`amlemu env` puts it there)")
    if resolves(PROBE_HOST):
        console.print("[green]ok[/]: names under .blob.localhost resolve without the shim")
        raise typer.Exit(0 if ready else 1)
    console.print(f"[yellow]{PROBE_HOST} does not resolve[/] without the shim: a process whose PYTHONPATH was "
                  "replaced (IDEs, Jupyter kernels, tox) fails to upload with \"Failed to resolve\".")
    plan = None if hosts else myhostname_plan()
    if plan:
        commands = plan
        what = "install nss-myhostname (every name under .localhost resolves, for every program)"
    else:
        accounts = stack_accounts(Stack.from_env())
        commands = [[sys.executable, "-m", "emulator.cli.doctor", "hosts", str(hosts_file), *accounts]]
        what = f"add {len(accounts)} line(s) to {hosts_file} (run doctor again for workspaces made later)"
    console.print(f"fix: {what}:\n" + "\n".join(f"  {shlex.join(c)}" for c in commands))
    if not fix:
        console.print("run `amlemu doctor --fix` to apply it")
        raise typer.Exit(1)
    if not (yes or typer.confirm("apply it now?", default=False)):
        raise typer.Exit(1)
    if os.geteuid() != 0 and (plan or not os.access(hosts_file, os.W_OK)):
        console.print("[red]root is needed[/]: run them with sudo, or `sudo $(which amlemu) doctor --fix`")
        raise typer.Exit(1)
    for command in commands:
        if subprocess.run(command).returncode != 0:
            console.print(f"[red]failed:[/] {shlex.join(command)}")
            raise typer.Exit(1)
    if not resolves(PROBE_HOST) and plan:
        console.print("[red]still unresolved[/]: try `amlemu doctor --fix --hosts`")
        raise typer.Exit(1)
    console.print("[green]fixed[/]")
    raise typer.Exit(0 if ready else 1)


def _edit(argv: list[str]) -> None:
    """The file edits the fix runs as their own commands (shown to the user, run with root)."""
    kind, path, *accounts = argv
    target = Path(path)
    text = target.read_text() if target.exists() else ""
    target.write_text(_with_myhostname(text) if kind == "nsswitch" else with_hosts_lines(text, accounts))


if __name__ == "__main__":
    _edit(sys.argv[1:])
