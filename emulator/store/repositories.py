"""Reads and writes per aggregate. No business rules live here."""

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime

from sqlalchemy import delete, func, or_, select
from sqlalchemy.orm import Session

from emulator.store.tables import (
    AssetVersion,
    BatchDeployment,
    BatchEndpoint,
    CapacityState,
    Compute,
    Event,
    Job,
    Node,
    OnlineDeployment,
    OnlineEndpoint,
    Operation,
    QuotaOverride,
    Registry,
    RoleAssignment,
    Schedule,
    TrackedExperiment,
    TrackedRun,
    Workspace,
)


class Repository:
    def __init__(self, session: Session):
        self.session = session

    def add(self, row) -> None:
        self.session.add(row)

    def _listed(self, model, owner_column, owner_key: str | None) -> list:
        """Rows of `model`, oldest first; only one owner's when `owner_key` is given."""
        query = select(model).order_by(model.created_at)
        if owner_key is not None:
            query = query.where(owner_column == owner_key.lower())
        return list(self.session.scalars(query))

    def remove(self, row) -> None:
        self.session.delete(row)

    @contextmanager
    def savepoint(self, keep: bool = True) -> Iterator[None]:
        """Writes inside the block go if it ends without raising and `keep` (False: a dry run); the rest of the
        transaction stands either way."""
        nested = self.session.begin_nested()
        try:
            yield
        except BaseException:
            nested.rollback()
            raise
        if keep:
            nested.commit()
        else:
            nested.rollback()

    # workspaces
    def workspace(self, key: str) -> Workspace | None:
        return self.session.get(Workspace, key.lower())

    def all_workspaces(self) -> list[Workspace]:
        return list(self.session.scalars(select(Workspace).order_by(Workspace.created_at)))

    def workspaces(self, subscription: str, resource_group: str | None = None) -> list[Workspace]:
        query = select(Workspace).where(func.lower(Workspace.subscription) == subscription.lower())
        if resource_group is not None:
            query = query.where(func.lower(Workspace.resource_group) == resource_group.lower())
        return list(self.session.scalars(query.order_by(Workspace.created_at)))

    def subscriptions(self) -> list[str]:
        return list(self.session.scalars(select(Workspace.subscription).distinct()))

    # computes
    def compute(self, key: str) -> Compute | None:
        return self.session.get(Compute, key.lower())

    def computes(self, workspace_key: str | None = None) -> list[Compute]:
        return self._listed(Compute, Compute.workspace_key, workspace_key)

    def computes_of_type(self, subscription: str, compute_type: str) -> list[Compute]:
        prefix = f"/subscriptions/{subscription}/".lower()
        query = select(Compute).where(Compute.key.startswith(prefix), Compute.compute_type == compute_type)
        return list(self.session.scalars(query))

    def quota_override(self, scope: str) -> QuotaOverride | None:
        return self.session.get(QuotaOverride, scope.lower())

    def capacity(self) -> CapacityState | None:
        return self.session.get(CapacityState, "*")

    # nodes
    def nodes(self, compute_key: str) -> list[Node]:
        query = select(Node).where(Node.compute_key == compute_key.lower()).order_by(Node.created_at)
        return list(self.session.scalars(query))

    def all_nodes(self) -> list[Node]:
        return list(self.session.scalars(select(Node)))

    def drop_nodes(self, compute_key: str) -> None:
        self.session.execute(delete(Node).where(Node.compute_key == compute_key.lower()))

    # operations
    def operation(self, op_id: str) -> Operation | None:
        return self.session.get(Operation, op_id)

    def open_operations(self, resource_key: str) -> list[Operation]:
        query = select(Operation).where(Operation.resource_key == resource_key.lower(),
                                        Operation.status == "InProgress")
        return list(self.session.scalars(query))

    # registries
    def registry(self, key: str) -> Registry | None:
        return self.session.get(Registry, key.lower())

    def registry_named(self, name: str) -> Registry | None:
        query = select(Registry).where(func.lower(Registry.name) == name.lower())
        return self.session.scalars(query).first()

    def registries(self, subscription: str, resource_group: str | None = None) -> list[Registry]:
        query = select(Registry).where(func.lower(Registry.subscription) == subscription.lower())
        if resource_group is not None:
            query = query.where(func.lower(Registry.resource_group) == resource_group.lower())
        return list(self.session.scalars(query.order_by(Registry.created_at)))

    # versioned assets (codes, environments, models, data) of a workspace or a registry
    def asset_version(self, key: str) -> AssetVersion | None:
        return self.session.get(AssetVersion, key.lower())

    def asset_versions(self, workspace_key: str, kind: str, name: str | None = None) -> list[AssetVersion]:
        """Oldest first; name matches case-insensitively, as ARM names do."""
        query = select(AssetVersion).where(AssetVersion.workspace_key == workspace_key.lower(),
                                           AssetVersion.kind == kind)
        if name is not None:
            query = query.where(func.lower(AssetVersion.name) == name.lower())
        return list(self.session.scalars(query.order_by(AssetVersion.created_at, AssetVersion.key)))

    def all_asset_versions(self, owner_key: str) -> list[AssetVersion]:
        return list(self.session.scalars(select(AssetVersion).where(AssetVersion.workspace_key == owner_key)))

    def assets_by_hash(self, workspace_key: str, kind: str, content_hash: str,
                       hash_version: str | None) -> list[AssetVersion]:
        query = select(AssetVersion).where(AssetVersion.workspace_key == workspace_key.lower(),
                                           AssetVersion.kind == kind, AssetVersion.content_hash == content_hash)
        if hash_version is not None:
            query = query.where(AssetVersion.hash_version == hash_version)
        return list(self.session.scalars(query.order_by(AssetVersion.created_at, AssetVersion.key)))

    # jobs
    def job(self, key: str) -> Job | None:
        return self.session.get(Job, key.lower())

    # jobs' MLflow runs
    def tracked_run(self, job_key: str) -> TrackedRun | None:
        return self.session.get(TrackedRun, job_key.lower())

    def tracked_runs_by_mlflow_id(self, workspace_key: str, run_ids: set[str]) -> list[TrackedRun]:
        query = select(TrackedRun).where(TrackedRun.workspace_key == workspace_key.lower(),
                                         TrackedRun.run_id.in_(sorted(run_ids)))
        return list(self.session.scalars(query))

    def tracked_experiment(self, workspace_key: str, guid: str) -> TrackedExperiment | None:
        return self.session.get(TrackedExperiment, TrackedExperiment.key_of(workspace_key, guid))

    def tracked_experiments_by_mlflow_id(self, workspace_key: str, ids: set[str]) -> list[TrackedExperiment]:
        query = select(TrackedExperiment).where(TrackedExperiment.workspace_key == workspace_key.lower(),
                                                TrackedExperiment.mlflow_id.in_(sorted(ids)))
        return list(self.session.scalars(query))

    def jobs(self, workspace_key: str) -> list[Job]:
        query = select(Job).where(Job.workspace_key == workspace_key.lower())
        return list(self.session.scalars(query.order_by(Job.created_at.desc(), Job.key)))

    def orphan_jobs(self) -> list[Job]:
        """Jobs whose workspace is gone (deleted with it), oldest first."""
        query = select(Job).where(Job.workspace_key.not_in(select(Workspace.key)))
        return list(self.session.scalars(query.order_by(Job.created_at, Job.key)))

    def jobs_in(self, statuses: tuple[str, ...], compute_key: str | None = None,
                dispatched: bool | None = None) -> list[Job]:
        """Jobs that run themselves (no parent jobs) in the given statuses (and with an attempt out, or not), oldest
        queued first."""
        query = select(Job).where(Job.status.in_(statuses), Job.driver.is_(None))
        if dispatched is not None:
            query = query.where(Job.dispatched_at.isnot(None) if dispatched else Job.dispatched_at.is_(None))
        if compute_key is not None:
            query = query.where(Job.compute_key == compute_key.lower())
        return list(self.session.scalars(query.order_by(Job.queued_at, Job.created_at, Job.key)))

    def parents_in(self, statuses: tuple[str, ...]) -> list[Job]:
        """Parent jobs (sweeps) in the given statuses, oldest first."""
        query = select(Job).where(Job.status.in_(statuses), Job.driver.isnot(None))
        return list(self.session.scalars(query.order_by(Job.created_at, Job.key)))

    def children(self, parent_key: str) -> list[Job]:
        """A parent's children in the order they were made (`<parent>_2` before `<parent>_10`)."""
        query = select(Job).where(Job.parent_key == parent_key.lower())
        return list(self.session.scalars(query.order_by(Job.created_at, func.length(Job.key), Job.key)))

    # online endpoints and their deployments
    def online_endpoint(self, key: str) -> OnlineEndpoint | None:
        return self.session.get(OnlineEndpoint, key.lower())

    def online_endpoint_named(self, name: str) -> OnlineEndpoint | None:
        query = select(OnlineEndpoint).where(func.lower(OnlineEndpoint.name) == name.lower())
        return self.session.scalars(query).first()

    def online_endpoints(self, workspace_key: str | None = None) -> list[OnlineEndpoint]:
        return self._listed(OnlineEndpoint, OnlineEndpoint.workspace_key, workspace_key)

    def online_deployment(self, key: str) -> OnlineDeployment | None:
        return self.session.get(OnlineDeployment, key.lower())

    def online_deployments(self, endpoint_key: str | None = None) -> list[OnlineDeployment]:
        return self._listed(OnlineDeployment, OnlineDeployment.endpoint_key, endpoint_key)

    # batch endpoints and their deployments
    def batch_endpoint(self, key: str) -> BatchEndpoint | None:
        return self.session.get(BatchEndpoint, key.lower())

    def batch_endpoints(self, workspace_key: str | None = None) -> list[BatchEndpoint]:
        return self._listed(BatchEndpoint, BatchEndpoint.workspace_key, workspace_key)

    def batch_deployment(self, key: str) -> BatchDeployment | None:
        return self.session.get(BatchDeployment, key.lower())

    def batch_deployments(self, endpoint_key: str) -> list[BatchDeployment]:
        return self._listed(BatchDeployment, BatchDeployment.endpoint_key, endpoint_key)

    # job schedules
    def schedule(self, key: str) -> Schedule | None:
        return self.session.get(Schedule, key.lower())

    def schedules(self, workspace_key: str | None = None) -> list[Schedule]:
        return self._listed(Schedule, Schedule.workspace_key, workspace_key)

    def enabled_schedules(self) -> list[Schedule]:
        return list(self.session.scalars(select(Schedule).where(Schedule.enabled.is_(True))
                                         .order_by(Schedule.created_at)))

    # role assignments
    def role_assignment(self, key: str) -> RoleAssignment | None:
        return self.session.get(RoleAssignment, key.lower())

    def role_assignments(self, workspace_key: str | None = None) -> list[RoleAssignment]:
        return self._listed(RoleAssignment, RoleAssignment.workspace_key, workspace_key)

    def role_assignments_of(self, principal_id: str) -> list[RoleAssignment]:
        return self._listed(RoleAssignment, RoleAssignment.principal_id, principal_id)

    # the event timeline
    def events_after(self, workspace_key: str | None, after_id: int, limit: int, kinds: tuple[str, ...] = (),
                     subject: str | None = None, newest: bool = False) -> list[Event]:
        """Events with ids above `after_id`, oldest first (`newest`: the last `limit` of them, newest first): one
        workspace's (None: all), of `kinds` (empty: all), about `subject` or what is under it (an endpoint's
        deployments)."""
        query = select(Event).where(Event.id > after_id)
        if workspace_key is not None:
            query = query.where(Event.workspace_key == workspace_key.lower())
        if kinds:
            query = query.where(Event.kind.in_(kinds))
        if subject is not None:
            subject = subject.lower().rstrip("/")
            query = query.where(or_(Event.subject == subject, Event.subject.startswith(subject + "/")))
        return list(self.session.scalars(query.order_by(Event.id.desc() if newest else Event.id).limit(limit)))

    def event_counts(self, kind: str) -> list[tuple[str, str, int]]:
        """(workspace key, subject, how many) of the retained events of one kind."""
        query = select(Event.workspace_key, Event.subject, func.count()).where(Event.kind == kind)
        return [tuple(row) for row in self.session.execute(query.group_by(Event.workspace_key, Event.subject))]

    def job_counts(self) -> list[tuple[str, str, str, int, datetime | None]]:
        """(workspace key, compute key, status, how many, the earliest queued_at) of the jobs that run themselves."""
        query = (select(Job.workspace_key, Job.compute_key, Job.status, func.count(), func.min(Job.queued_at))
                 .where(Job.driver.is_(None)).group_by(Job.workspace_key, Job.compute_key, Job.status))
        return [tuple(row) for row in self.session.execute(query)]

    def ended_jobs(self) -> list[Job]:
        return list(self.session.scalars(select(Job).where(Job.ended_at.isnot(None), Job.started_at.isnot(None),
                                                           Job.driver.is_(None))))

    def _prune_below(self, keep: int) -> int | None:
        """The id at and below which events go to keep the newest `keep`; None when none goes."""
        newest, oldest = self.session.execute(select(func.max(Event.id), func.min(Event.id))).one()
        return newest - keep if newest is not None and oldest <= newest - keep else None

    def events_to_prune(self, keep: int) -> bool:
        return self._prune_below(keep) is not None

    def prune_events(self, keep: int) -> int:
        """Drop all but the newest `keep` events; how many went."""
        below = self._prune_below(keep)
        return 0 if below is None else self.session.execute(delete(Event).where(Event.id <= below)).rowcount
