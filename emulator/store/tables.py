"""The rows the emulator keeps. The store is the truth; containers are observed against it."""

from datetime import UTC, datetime

from sqlalchemy import JSON, DateTime, ForeignKey, Integer, String, TypeDecorator
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


class UtcDateTime(TypeDecorator):
    """Aware UTC datetimes in, aware UTC datetimes out (SQLite itself keeps no zone)."""
    impl = DateTime
    cache_ok = True

    def process_bind_param(self, value, dialect):
        return value.astimezone(UTC).replace(tzinfo=None) if value is not None else None

    def process_result_value(self, value, dialect):
        return value.replace(tzinfo=UTC) if value is not None else None


class Base(DeclarativeBase):
    type_annotation_map = {datetime: UtcDateTime, dict: JSON}


class Workspace(Base):
    __tablename__ = "workspaces"
    key: Mapped[str] = mapped_column(String, primary_key=True)  # lower-cased ARM id
    subscription: Mapped[str]
    resource_group: Mapped[str]
    name: Mapped[str]
    location: Mapped[str]
    body: Mapped[dict]  # tags, identity and properties as the user gave them
    created_at: Mapped[datetime]
    modified_at: Mapped[datetime]
    # The emulator's cost budget for the workspace (services/cost.py): {"dollars", "region", "exceededAt"}.
    budget: Mapped[dict | None] = mapped_column(JSON, default=None)


class Compute(Base):
    __tablename__ = "computes"
    key: Mapped[str] = mapped_column(String, primary_key=True)  # lower-cased ARM id
    workspace_key: Mapped[str] = mapped_column(String, index=True)
    name: Mapped[str]
    compute_type: Mapped[str]
    location: Mapped[str]
    body: Mapped[dict]  # the PUT body, validated
    provisioning_state: Mapped[str]
    provisioning_errors: Mapped[dict | None] = mapped_column(JSON, default=None)
    created_at: Mapped[datetime]
    modified_at: Mapped[datetime]
    # Written by the controller only.
    allocation_state: Mapped[str] = mapped_column(default="Steady")
    allocation_changed_at: Mapped[datetime | None] = mapped_column(default=None)
    target_nodes: Mapped[int] = mapped_column(Integer, default=0)
    # AmlCompute's `errors`: what kept its latest node from starting (ARM ErrorResponses); None once one starts.
    errors: Mapped[list | None] = mapped_column(JSON, default=None)
    # The emulator's own preemption settings for this cluster (domain.preemption.Policy.to_row), and the
    # random timeline's progress: {"seed", "since", "done"}. None: the global settings, nothing drawn yet.
    preemption: Mapped[dict | None] = mapped_column(JSON, default=None)
    chaos: Mapped[dict | None] = mapped_column(JSON, default=None)
    # A compute instance's own record (services.instances.Record): state, last operation, what was asked of
    # it, its container and ports, its idle clock. None for clusters.
    instance: Mapped[dict | None] = mapped_column(JSON, default=None)


class Node(Base):
    __tablename__ = "nodes"
    node_id: Mapped[str] = mapped_column(String, primary_key=True)
    compute_key: Mapped[str] = mapped_column(ForeignKey("computes.key", ondelete="CASCADE"), index=True)
    state: Mapped[str]
    container_id: Mapped[str | None] = mapped_column(default=None)
    private_ip: Mapped[str | None] = mapped_column(default=None)
    run_id: Mapped[str | None] = mapped_column(default=None)
    created_at: Mapped[datetime]
    state_changed_at: Mapped[datetime]
    idle_since: Mapped[datetime | None] = mapped_column(default=None)
    # A Scheduled Events Preempt notice on this node (domain.preemption.Notice.to_row); `noticed`: the
    # controller has told the node and signalled its job.
    notice: Mapped[dict | None] = mapped_column(JSON, default=None)
    noticed: Mapped[bool | None] = mapped_column(default=None)


class Operation(Base):
    """An ARM long-running operation, polled through Azure-AsyncOperation."""
    __tablename__ = "operations"
    id: Mapped[str] = mapped_column(String, primary_key=True)
    resource_key: Mapped[str] = mapped_column(String, index=True)
    action: Mapped[str]  # Create, Update, Delete, Start, Stop, Restart
    status: Mapped[str]  # InProgress, Succeeded, Failed, Canceled
    error: Mapped[dict | None] = mapped_column(JSON, default=None)
    created_at: Mapped[datetime]
    finished_at: Mapped[datetime | None] = mapped_column(default=None)


class Registry(Base):
    """A user's registry: assets shared by every workspace (its versions are AssetVersion rows it owns)."""
    __tablename__ = "registries"
    key: Mapped[str] = mapped_column(String, primary_key=True)  # lower-cased ARM id
    subscription: Mapped[str]
    resource_group: Mapped[str]
    name: Mapped[str] = mapped_column(String, unique=True)  # global, as Azure's: discovery finds one by name alone
    location: Mapped[str]
    body: Mapped[dict]  # the PUT body, validated (domain/registries/resource.py)
    created_at: Mapped[datetime]
    modified_at: Mapped[datetime]


class AssetVersion(Base):
    """A versioned asset (code, environment, model, data) of a workspace or a registry: the validated PUT body,
    keyed by its ARM id."""
    __tablename__ = "asset_versions"
    key: Mapped[str] = mapped_column(String, primary_key=True)  # lower-cased ARM id of the version
    workspace_key: Mapped[str] = mapped_column(String, index=True)  # its owner's key: a workspace's or a registry's
    kind: Mapped[str]  # the ARM collection: "codes", "environments"
    name: Mapped[str]
    version: Mapped[str]
    body: Mapped[dict]
    content_hash: Mapped[str | None] = mapped_column(String, index=True, default=None)
    hash_version: Mapped[str | None] = mapped_column(default=None)
    created_at: Mapped[datetime]
    modified_at: Mapped[datetime]


class Job(Base):
    """A job: the validated PUT body, its status, and what the controller knows of its current attempt."""
    __tablename__ = "jobs"
    key: Mapped[str] = mapped_column(String, primary_key=True)  # lower-cased ARM id
    workspace_key: Mapped[str] = mapped_column(String, index=True)
    name: Mapped[str]
    compute_key: Mapped[str] = mapped_column(String, index=True)
    body: Mapped[dict]  # `properties` as the user gave them, normalised
    status: Mapped[str] = mapped_column(String, index=True)
    created_at: Mapped[datetime]
    modified_at: Mapped[datetime]
    status_changed_at: Mapped[datetime]
    started_at: Mapped[datetime | None] = mapped_column(default=None)
    ended_at: Mapped[datetime | None] = mapped_column(default=None)
    queued_at: Mapped[datetime | None] = mapped_column(default=None)  # the order Queued jobs get nodes in
    # Written by the controller only.
    attempt: Mapped[int] = mapped_column(Integer, default=0)  # the latest dispatched attempt; 0 before any
    dispatched_at: Mapped[datetime | None] = mapped_column(default=None)  # None: the attempt is not out yet
    image: Mapped[str | None] = mapped_column(default=None)  # the image it runs on, once prepared
    notes: Mapped[list] = mapped_column(JSON, default=list)  # said at the top of its log
    ranks: Mapped[dict] = mapped_column(JSON, default=dict)  # rank -> node, state, exit code of this attempt
    error: Mapped[dict | None] = mapped_column(JSON, default=None)
    history: Mapped[list] = mapped_column(JSON, default=list)  # status changes, for RunHistory
    # A child job (a sweep's trial): its parent's key. A parent job (a sweep): `driver` is the controller's record of
    # its children (services/parents.py), None for a job that runs itself.
    parent_key: Mapped[str | None] = mapped_column(String, index=True, default=None)
    driver: Mapped[dict | None] = mapped_column(JSON, default=None)


class TrackedRun(Base):
    """A job's MLflow run: the job's name is its run id to clients, MLflow knows it by an id of its own."""
    __tablename__ = "tracked_runs"
    key: Mapped[str] = mapped_column(String, primary_key=True)  # the job's key (lower-cased ARM id)
    workspace_key: Mapped[str] = mapped_column(String, index=True)
    run_id: Mapped[str] = mapped_column(String, index=True)  # MLflow's
    experiment_id: Mapped[str]
    created_at: Mapped[datetime]


class TrackedExperiment(Base):
    """An experiment of a workspace: clients know it by a GUID (tracking.experiment_guid), MLflow by an id of its
    own, made when MLflow first needs it (a job's experiment is recorded when the job is submitted)."""
    __tablename__ = "tracked_experiments"
    key: Mapped[str] = mapped_column(String, primary_key=True)  # <workspace key>/experiments/<guid>
    workspace_key: Mapped[str] = mapped_column(String, index=True)
    name: Mapped[str]
    mlflow_id: Mapped[str | None] = mapped_column(String, index=True)

    @staticmethod
    def key_of(workspace_key: str, guid: str) -> str:
        return f"{workspace_key}/experiments/{guid}".lower()


class OnlineEndpoint(Base):
    """A managed online endpoint: its keys and traffic, read by the scoring router."""
    __tablename__ = "online_endpoints"
    key: Mapped[str] = mapped_column(String, primary_key=True)  # lower-cased ARM id
    workspace_key: Mapped[str] = mapped_column(String, index=True)
    name: Mapped[str] = mapped_column(String, unique=True)  # scoring URLs name endpoints alone, as Azure's do
    location: Mapped[str]
    body: Mapped[dict]  # the PUT body, validated (authMode, traffic and mirrorTraffic included)
    keys: Mapped[dict]  # {"primaryKey", "secondaryKey"}
    provisioning_state: Mapped[str]
    created_at: Mapped[datetime]
    modified_at: Mapped[datetime]


class OnlineDeployment(Base):
    """A deployment of an endpoint. `generation` rises when an update needs new containers (a rolling
    replacement); `instances` is written by the controller only: what runs and which are ready."""
    __tablename__ = "online_deployments"
    key: Mapped[str] = mapped_column(String, primary_key=True)  # lower-cased ARM id
    endpoint_key: Mapped[str] = mapped_column(ForeignKey("online_endpoints.key", ondelete="CASCADE"), index=True)
    name: Mapped[str]
    body: Mapped[dict]  # the PUT body, validated, with Azure's defaults
    provisioning_state: Mapped[str]
    error: Mapped[dict | None] = mapped_column(JSON, default=None)
    generation: Mapped[int] = mapped_column(Integer, default=1)
    image: Mapped[str | None] = mapped_column(default=None)  # the serving image of this generation, once built
    instances: Mapped[list] = mapped_column(JSON, default=list)
    created_at: Mapped[datetime]
    modified_at: Mapped[datetime]


class BatchEndpoint(Base):
    """A batch endpoint: a name, its auth mode and its default deployment; invoking it makes a batch job."""
    __tablename__ = "batch_endpoints"
    key: Mapped[str] = mapped_column(String, primary_key=True)  # lower-cased ARM id
    workspace_key: Mapped[str] = mapped_column(String, index=True)
    name: Mapped[str]
    location: Mapped[str]
    body: Mapped[dict]  # the PUT body, validated (domain/serving/batch_endpoints.py)
    provisioning_state: Mapped[str]
    created_at: Mapped[datetime]
    modified_at: Mapped[datetime]


class BatchDeployment(Base):
    """A deployment of a batch endpoint: what its jobs run (a model and its parallel settings, or a pipeline
    component), on which cluster. No containers: its jobs' steps run on the cluster as any job does."""
    __tablename__ = "batch_deployments"
    key: Mapped[str] = mapped_column(String, primary_key=True)  # lower-cased ARM id
    endpoint_key: Mapped[str] = mapped_column(ForeignKey("batch_endpoints.key", ondelete="CASCADE"), index=True)
    name: Mapped[str]
    body: Mapped[dict]  # the PUT body, validated, with Azure's defaults (domain/serving/batch_deployments.py)
    provisioning_state: Mapped[str]
    created_at: Mapped[datetime]
    modified_at: Mapped[datetime]


class Schedule(Base):
    """A job schedule: its `properties` as the SDK reads them back, and how far the controller has fired it."""
    __tablename__ = "schedules"
    key: Mapped[str] = mapped_column(String, primary_key=True)  # lower-cased ARM id
    workspace_key: Mapped[str] = mapped_column(String, index=True)
    name: Mapped[str]
    body: Mapped[dict]  # `properties`, validated
    enabled: Mapped[bool] = mapped_column(index=True)
    created_at: Mapped[datetime]  # also where its calendar starts (domain.calendar.emulated)
    modified_at: Mapped[datetime]
    # Copies of the job definition's inputs outside the workspace, read when the schedule was written.
    outside: Mapped[dict] = mapped_column(JSON, default=dict)
    # Written by the controller only, each time with the jobs it created: every occurrence up to here (on the
    # schedule's calendar) has fired or was let go, so none fires twice, whatever restarts.
    fired_through: Mapped[datetime]
    last_fired: Mapped[datetime | None] = mapped_column(default=None)
    last_job: Mapped[str | None] = mapped_column(default=None)
    last_error: Mapped[dict | None] = mapped_column(JSON, default=None)  # why its latest firing made no job


class Event(Base):
    """One platform event of the timeline (services/events.py), written in the transaction that made it happen;
    read by the Studio, the CLI demo, the metrics and the cost meter. Ids rise: a reader resumes after the last."""
    __tablename__ = "events"
    __table_args__ = {"sqlite_autoincrement": True}  # never reuse a pruned id: readers resume after the last seen
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    workspace_key: Mapped[str] = mapped_column(String, index=True)
    time: Mapped[datetime]
    kind: Mapped[str] = mapped_column(String, index=True)  # dotted: node.up, job.status, node.preempted
    subject: Mapped[str] = mapped_column(String, index=True)  # the ARM key of the compute, job or deployment
    data: Mapped[dict] = mapped_column(JSON, default=dict)


class QuotaOverride(Base):
    """Core quotas set through /_emulator/quotas (services/quotas.py) over the settings' defaults: `scope` is "*"
    for every workspace's region, or a workspace's key for that workspace's own caps."""
    __tablename__ = "quota_overrides"
    scope: Mapped[str] = mapped_column(String, primary_key=True)
    limits: Mapped[dict] = mapped_column(JSON, default=dict)  # {"totalDedicatedCores"?, "lowPriorityCores"?, "families"?}


class CapacityState(Base):
    """Capacity shortages set through /_emulator/capacity (services/capacity.py), one row ("*"): the shortages asked
    for (domain.compute.capacity.Shortage.to_row), the seeded schedule in force ({"policy", "seed", "since",
    "source"}; None: the settings', not drawn yet), and when the settings' standing shortage was lifted."""
    __tablename__ = "capacity"
    scope: Mapped[str] = mapped_column(String, primary_key=True)
    shortages: Mapped[list] = mapped_column(JSON, default=list)
    schedule: Mapped[dict | None] = mapped_column(JSON, default=None)
    restored_at: Mapped[datetime | None] = mapped_column(default=None)


class RoleAssignment(Base):
    """An Azure role assignment (Microsoft.Authorization/roleAssignments) at a workspace's scope."""
    __tablename__ = "role_assignments"
    key: Mapped[str] = mapped_column(String, primary_key=True)  # lower-cased ARM id
    workspace_key: Mapped[str] = mapped_column(String, index=True)  # its scope
    name: Mapped[str]  # a GUID
    principal_id: Mapped[str] = mapped_column(String, index=True)
    principal_type: Mapped[str]
    role_id: Mapped[str]  # the built-in role definition's GUID
    created_at: Mapped[datetime]
    created_by: Mapped[str]
