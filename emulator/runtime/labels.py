"""The labels the emulator puts on what it starts: one spelling for every module that writes or reads them."""

MANAGED = "amlemu.managed"  # on everything: what `amlemu down` and the orphan sweep may remove
STACK = "amlemu.stack"  # which stack (settings.stack) a container, network or volume belongs to
ROLE = "amlemu.role"  # one of ROLES
COMPUTE = "amlemu.compute"  # the compute's name
COMPUTE_ID = "amlemu.compute-id"  # the compute's row key: a recreated compute of the same name is another one
GENERATION = "amlemu.generation"  # which start of an instance or deployment the container is
WORKSPACE = "amlemu.workspace"  # the workspace's name, lower-case
NODE = "amlemu.node"
HOST = "amlemu.host"  # on a node of a cluster pooled over attached hosts: the host's compute key
VM_SIZE = "amlemu.vm-size"
PRIORITY = "amlemu.priority"
JOB = "amlemu.job"  # the job's tag (dispatch.protocol.job_tag)
JOB_NAME = "amlemu.job-name"
ATTEMPT = "amlemu.attempt"
RANK = "amlemu.rank"
POOL = "amlemu.pool"  # a network sandbox's pool
SANDBOX = "amlemu.sandbox"  # the sandbox whose network namespace a job container shares
ENDPOINT = "amlemu.endpoint"
DEPLOYMENT = "amlemu.deployment"
DEPLOYMENT_ID = "amlemu.deployment-id"
NETWORK = "amlemu.network"  # on a workspace's network: its kind (domain/networks.py); on a sandbox: its network
WORKSPACE_KEY = "amlemu.workspace-key"  # on a workspace's network: the workspace's key (a lower-cased ARM id)
SERVICE = "amlemu.service"  # on the stack's own services that others must find (the api, which jobs reach)

VOLUME_LABELS = (STACK, COMPUTE, COMPUTE_ID)  # what a named volume keeps of its first container's labels: its owner

# What each container the emulator starts is, in its ROLE label.
ROLES = ("node", "job", "sandbox", "instance", "agent", "model-server")
