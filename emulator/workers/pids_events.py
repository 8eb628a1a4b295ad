"""How many forks the kernel has refused a container at its pids limit: the `max` count in its cgroup's
pids.events, read where the node sees the host's cgroup file system (job_container.CGROUP_ROOT). A fork bomb's
count grows by hundreds a second; a pool of threads that grew until it was refused adds one and stops."""

from pathlib import Path

# Where the engine puts a container's pids cgroup: cgroup v1 and v2, with the cgroupfs or the systemd driver.
PLACES = ("pids/docker/{id}", "pids/system.slice/docker-{id}.scope", "docker/{id}", "system.slice/docker-{id}.scope")


def refused_forks(cgroup_root: Path, container_id: str) -> int | None:
    """The container's refused forks so far; None where its cgroup cannot be read (gone, or not seen here)."""
    for place in PLACES:
        try:
            text = (cgroup_root / place.format(id=container_id) / "pids.events").read_text()
        except (OSError, ValueError):
            continue
        for line in text.splitlines():
            key, _, value = line.partition(" ")
            if key == "max" and value.strip().isdigit():
                return int(value)
    return None
