"""Each workspace's own Docker networks: one for its jobs (job containers, network sandboxes, and the nodes and
api they reach) and one the host reaches (its model servers and compute instances' workstations). Bridges are isolated from one another by the
engine, so a workspace's containers cannot reach another's. The names are the only thing shared between the
controller, which makes them, and whoever removes them (workspace deletion, `amlemu down`)."""

import hashlib

JOBS, SCORING = "jobs", "scoring"  # a network's kind, in its amlemu.network label


def workspace_tag(workspace_key: str) -> str:
    """A short stable id of the workspace (its key is a lower-cased ARM id: too long, and full of slashes)."""
    return hashlib.sha256(workspace_key.lower().encode()).hexdigest()[:12]


def network_name(base: str, kind: str, workspace_key: str) -> str:
    """`base`: the stack's own network (settings.docker_network); `kind`: JOBS or SCORING."""
    return f"{base}-{kind}-{workspace_tag(workspace_key)}"
