"""The event timeline, the cost meter and budgets, as the /_emulator routes ask for them. A workspace is named by
its name (in the emulator's subscription and resource group) or by its ARM id; none: every workspace."""

from emulator.domain.ids import WorkspaceRef
from emulator.errors import ValidationFailed
from emulator.services import cost, events, workspaces
from emulator.services.facade.base import Service
from emulator.store.repositories import Repository
from emulator.store.tables import Event, Workspace


class Timeline(Service):
    def ref(self, workspace: str) -> WorkspaceRef:
        if workspace.lower().startswith("/subscriptions/"):
            try:
                return WorkspaceRef.from_key(workspace.lower())
            except (IndexError, ValueError) as exc:
                raise ValidationFailed(f"'{workspace}' is not a workspace's ARM id.", target="workspace") from exc
        return WorkspaceRef(self.settings.subscription_id, self.settings.resource_group, workspace)

    def _workspaces(self, repo: Repository, workspace: str | None) -> list[Workspace]:
        if workspace is None:
            return repo.all_workspaces()
        return [workspaces.get(repo, self.ref(workspace))]

    def events(self, workspace: str | None, after: int, limit: int, kinds: tuple[str, ...] = (),
               subject: str | None = None, newest: bool = False) -> list[Event]:
        """Events after id `after`, oldest first (a page of at most `limit`; `newest`: the last page, newest first),
        of `kinds`, about `subject` (an ARM id, or the name of a compute or job of `workspace`)."""
        with self.store.reading() as repo:
            key = self._workspaces(repo, workspace)[0].key if workspace is not None else None
            if subject is not None and not subject.startswith("/"):
                if key is None:
                    raise ValidationFailed("A subject named without its ARM id needs its workspace.", target="subject")
                subject = next((k for k in (f"{key}/computes/{subject}", f"{key}/jobs/{subject}")
                                if repo.compute(k) or repo.job(k)), f"{key}/{subject}")
            return events.after(repo, key, after, limit, kinds, subject, newest)

    def cost(self, workspace: str | None, region: str | None) -> list[cost.Report]:
        with self.store.reading() as repo:
            now = self.clock()
            return [cost.report(repo, row, region, now) for row in self._workspaces(repo, workspace)]

    def set_budget(self, workspace: str, body: object) -> dict:
        with self.store.transaction() as repo:
            return cost.set_budget(self._workspaces(repo, workspace)[0], body)
