"""The emulator's own preemption controls: preempt a node now, read or set a cluster's preemption policy."""

import uuid

from emulator.domain.compute import preemption as rules
from emulator.domain.ids import WorkspaceRef
from emulator.services import computes, preemption
from emulator.services.facade.base import Service
from emulator.store.tables import Node


class Preemption(Service):
    def preempt(self, ref: WorkspaceRef, compute_name: str, node_id: str | None) -> tuple[Node, rules.Notice]:
        """Give a low-priority node (`node_id`, else a running one, else any) a Preempt notice now."""
        with self.in_workspace(ref) as (repo, _):
            compute = computes.get(repo, ref, compute_name, serverless_too=True)
            node = preemption.preempt(compute, repo.nodes(compute.key), node_id, str(uuid.uuid4()), self.clock(),
                                      self.settings)
            return node, rules.Notice.from_row(node.notice)

    def policy(self, ref: WorkspaceRef, compute_name: str) -> rules.Policy:
        with self.in_workspace(ref) as (repo, _):
            return preemption.policy_of(computes.get(repo, ref, compute_name, serverless_too=True), self.settings)

    def set_policy(self, ref: WorkspaceRef, compute_name: str, body: object) -> rules.Policy:
        with self.in_workspace(ref) as (repo, _):
            return preemption.set_policy(computes.get(repo, ref, compute_name, serverless_too=True), body, self.settings)
