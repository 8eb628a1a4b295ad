"""The api's services: one object per resource, each method one transaction on the store they share."""

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from emulator.services.facade.assets import Assets
from emulator.services.facade.batch_endpoints import BatchDeployments, BatchEndpoints
from emulator.services.facade.computes import Computes
from emulator.services.facade.datastores import Datastores
from emulator.services.facade.jobs import Jobs
from emulator.services.facade.locations import Locations
from emulator.services.facade.online_endpoints import OnlineDeployments, OnlineEndpoints
from emulator.services.facade.preemption import Preemption
from emulator.services.facade.registries import Registries
from emulator.services.facade.role_assignments import RoleAssignments
from emulator.services.facade.run_artifacts import RunArtifacts
from emulator.services.facade.schedules import Schedules
from emulator.services.facade.studio import Studio
from emulator.services.facade.studio_sessions import StudioSessions
from emulator.services.facade.timeline import Timeline
from emulator.services.facade.tracking import Tracking
from emulator.services.facade.workspaces import Workspaces
from emulator.services.metrics import Metrics
from emulator.services.node_files import NodeFiles
from emulator.services.studio_runs import StudioRuns
from emulator.settings import Settings
from emulator.store.db import Store
from emulator.tracking.mlflow_server import MlflowServer


@dataclass(frozen=True)
class Services:
    store: Store
    workspaces: Workspaces
    computes: Computes
    locations: Locations
    assets: Assets
    datastores: Datastores
    jobs: Jobs
    online_endpoints: OnlineEndpoints
    online_deployments: OnlineDeployments
    batch_endpoints: BatchEndpoints
    batch_deployments: BatchDeployments
    preemption: Preemption
    registries: Registries
    tracking: Tracking
    run_artifacts: RunArtifacts
    schedules: Schedules
    timeline: Timeline
    metrics: Metrics
    studio: Studio
    studio_sessions: StudioSessions
    role_assignments: RoleAssignments
    node_files: NodeFiles  # detached nodes' files (internal)

    @classmethod
    def build(cls, settings: Settings, store: Store, secret: bytes, clock: Callable[[], datetime]) -> "Services":
        def each(kind):
            return kind(settings, store, secret, clock)
        mlflow = MlflowServer(settings.mlflow_url)  # one client (and connection pool) for tracking and the Studio
        return cls(store, each(Workspaces), each(Computes), each(Locations), each(Assets), each(Datastores),
                   each(Jobs), each(OnlineEndpoints), each(OnlineDeployments), each(BatchEndpoints),
                   each(BatchDeployments), each(Preemption),
                   each(Registries), Tracking(settings, store, secret, clock, mlflow), each(RunArtifacts),
                   each(Schedules), each(Timeline), Metrics(store, clock),
                   Studio(settings, store, secret, clock, StudioRuns(settings.data_dir, store, mlflow)),
                   each(StudioSessions), each(RoleAssignments), NodeFiles(settings, secret))
