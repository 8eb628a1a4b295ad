"""Azure RBAC for the management API: Azure's built-in roles (as data), the ARM operation a request performs
(derived from its method and path), and whether a role granted at a scope allows it.

The role table copies Azure's built-in role definitions (`az role definition list --name ...`): ids, names,
actions and notActions. The README's table of roles is generated from it (`amlemu roles --markdown`).
"""

import re
from dataclasses import dataclass
from functools import cache

MLS = "Microsoft.MachineLearningServices"


@dataclass(frozen=True)
class RoleDefinition:
    id: str  # Azure's GUID for the built-in role
    name: str
    description: str
    actions: tuple[str, ...]
    not_actions: tuple[str, ...] = ()


ROLES = (
    RoleDefinition("8e3af657-a8ff-443c-a75c-2fe8c4bcb635", "Owner",
                   "Grants full access to manage all resources, including the ability to assign roles in Azure RBAC.",
                   ("*",)),
    RoleDefinition("b24988ac-6180-42a0-ab88-20f7382dd24c", "Contributor",
                   "Grants full access to manage all resources, but does not allow you to assign roles in Azure "
                   "RBAC, manage assignments in Azure Blueprints, or share image galleries.",
                   ("*",),
                   ("Microsoft.Authorization/*/Delete", "Microsoft.Authorization/*/Write",
                    "Microsoft.Authorization/elevateAccess/Action", "Microsoft.Blueprint/blueprintAssignments/write",
                    "Microsoft.Blueprint/blueprintAssignments/delete", "Microsoft.Compute/galleries/share/action",
                    "Microsoft.Purview/consents/write", "Microsoft.Purview/consents/delete")),
    RoleDefinition("acdd72a7-3385-48ef-bd42-f606fba81ae7", "Reader",
                   "View all resources, but does not allow you to make any changes.",
                   ("*/read",)),
    RoleDefinition("f6c7c914-8db3-469d-8ca1-694a8f32e121", "AzureML Data Scientist",
                   "Can perform all actions within an Azure Machine Learning workspace, except for creating or "
                   "deleting compute resources and modifying the workspace itself.",
                   (f"{MLS}/workspaces/*/read", f"{MLS}/workspaces/*/action", f"{MLS}/workspaces/*/delete",
                    f"{MLS}/workspaces/*/write"),
                   (f"{MLS}/workspaces/delete", f"{MLS}/workspaces/write", f"{MLS}/workspaces/computes/*/write",
                    f"{MLS}/workspaces/computes/*/delete", f"{MLS}/workspaces/computes/listKeys/action",
                    f"{MLS}/workspaces/listKeys/action", f"{MLS}/workspaces/hubs/write", f"{MLS}/workspaces/hubs/delete",
                    f"{MLS}/workspaces/featurestores/write", f"{MLS}/workspaces/featurestores/delete")),
    RoleDefinition("e503ece1-11d0-4e8e-8e2c-7a6c3bf38815", "AzureML Compute Operator",
                   "Can access and perform CRUD operations on Machine Learning Services managed compute resources "
                   "(including Notebook VMs).",
                   (f"{MLS}/workspaces/computes/*", f"{MLS}/workspaces/notebooks/vm/*")),
)
ROLE_NAMES = tuple(r.name for r in ROLES)
DEFAULT_ROLE = "Owner"  # the emulated identity `amlemu env` gives: nothing changes for whoever asks for no role


def role_named(name: str) -> RoleDefinition | None:
    return next((r for r in ROLES if r.name.lower() == name.strip().lower()), None)


@cache
def _pattern(permission: str) -> re.Pattern:
    """Azure matches operations case-insensitively, `*` standing for any text; a `/*/` may also stand for no
    segment at all, so that Data Scientist's `computes/*/write` denies `computes/write` as Azure does."""
    parts = [re.escape(p) for p in permission.split("*")]
    body = ".*".join(parts).replace("/.*/", "/(?:.*/)?")
    return re.compile(body + r"\Z", re.IGNORECASE)


def _matches(permission: str, action: str) -> bool:
    return _pattern(permission).match(action) is not None


def allows(role: RoleDefinition, action: str) -> bool:
    return (any(_matches(p, action) for p in role.actions)
            and not any(_matches(p, action) for p in role.not_actions))


@dataclass(frozen=True)
class Operation:
    action: str  # e.g. Microsoft.MachineLearningServices/workspaces/computes/start/action
    scope: str  # the resource it acts on, e.g. /subscriptions/.../workspaces/w/computes/c


METHOD_VERBS = {"GET": "read", "HEAD": "read", "PUT": "write", "PATCH": "write", "DELETE": "delete", "POST": "action"}


def operation(method: str, path: str) -> Operation | None:
    """The ARM operation of a management request; None for a path that is not an ARM resource's (the data
    plane: run history, MLflow, blobs).

    ARM paths alternate resource types and names after `/providers/<namespace>`; a trailing segment after a
    name on POST is the action's name (computes/c/start → computes/start/action).
    """
    segments = [s for s in path.split("/") if s]
    if segments[:1] == ["_emulator"]:  # the emulator's own operations on ARM resources (preempt a node)
        segments = segments[1:]
    if len(segments) < 2 or segments[0].lower() != "subscriptions":
        return None
    verb = METHOD_VERBS.get(method.upper())
    if verb is None:
        return None
    if "providers" not in (s.lower() for s in segments):
        # the subscription or a resource group itself
        kind = "Microsoft.Resources/subscriptions" + ("/resourceGroups" if len(segments) > 2 else "")
        return Operation(f"{kind}/{verb if verb != 'action' else 'read'}", "/" + "/".join(segments[:4]))
    at = max(i for i, s in enumerate(segments) if s.lower() == "providers")
    if at + 1 >= len(segments):
        return None
    namespace, rest = segments[at + 1], segments[at + 2:]
    types, names = rest[0::2], rest[1::2]
    action_name = None
    if verb == "action" and types and len(types) > len(names) and names:
        action_name = types.pop()  # POST .../computes/c/start
    # a named resource is its own scope; a collection's (a list) is its parent's
    scope_parts = segments[:at + 2 + 2 * len(names)]
    suffix = f"{action_name}/action" if action_name else ("write" if verb == "action" else verb)
    return Operation("/".join([namespace, *types, suffix]), "/" + "/".join(scope_parts))


WORKSPACE_IN_PATH = re.compile(r"/subscriptions/[^/]+/resourceGroups/[^/]+/providers/"
                               rf"{MLS}/workspaces/[^/]+", re.IGNORECASE)


def data_plane_operation(method: str, path: str) -> Operation | None:
    """A data-plane request in a workspace (run history, MLflow tracking, run artifacts): Azure's data actions on
    the workspace's experiment runs, read for GET, write otherwise; None for a path naming no workspace."""
    found = WORKSPACE_IN_PATH.search(path)
    if found is None:
        return None
    reading = method.upper() in ("GET", "HEAD") or (method.upper() == "POST" and _read_by_post(path))
    return Operation(f"{MLS}/workspaces/experiments/runs/{'read' if reading else 'write'}", found.group(0))


# Data-plane calls that read with a POST body: MLflow's searches (runs/search, experiments/search,
# logged-models/search, ...), RunHistory's rundata (what `jobs.stream` and Studio read of a run), the data
# service's batchGetResolvedUris.
READ_BY_POST = frozenset({"search", "rundata", "batchgetresolveduris"})


def _read_by_post(path: str) -> bool:
    last = path.rstrip("/").rsplit("/", 1)[-1].lower()
    return last in READ_BY_POST or last.startswith("get-")


def scope_covers(granted: str, scope: str) -> bool:
    """An assignment at `granted` applies to `scope` and everything under it (ARM ids compare case-insensitively)."""
    granted, scope = granted.rstrip("/").lower(), scope.rstrip("/").lower()
    return granted == "" or scope == granted or scope.startswith(granted + "/")


def authorization_failed_message(principal: str, object_id: str, op: Operation) -> str:
    return (f"The client '{principal}' with object id '{object_id}' does not have authorization to perform action "
            f"'{op.action}' over scope '{op.scope}' or the scope is invalid. If access was recently granted, "
            "please refresh your credentials.")


def _short(action: str) -> str:
    return action.replace(f"{MLS}/", "")


# What a user asks of a role, each as the ARM operation the api checks (the README's columns)
EXAMPLES = (("read", f"{MLS}/workspaces/computes/read"), ("submit jobs", f"{MLS}/workspaces/jobs/write"),
            ("create/delete clusters", f"{MLS}/workspaces/computes/write"),
            ("start/stop instances", f"{MLS}/workspaces/computes/start/action"),
            ("change the workspace", f"{MLS}/workspaces/write"),
            ("assign roles", "Microsoft.Authorization/roleAssignments/write"))


def markdown_table() -> str:
    """The README's table of roles, from the same definitions the api checks."""
    lines = ["| Role | " + " | ".join(name for name, _ in EXAMPLES) + " | actions | notActions |",
             "|---" * (len(EXAMPLES) + 3) + "|"]
    for role in ROLES:
        marks = " | ".join("yes" if allows(role, action) else "no" for _, action in EXAMPLES)
        allowed = ", ".join(f"`{_short(a)}`" for a in role.actions)
        denied = ", ".join(f"`{_short(a)}`" for a in role.not_actions) or "none"
        lines.append(f"| {role.name} | {marks} | {allowed} | {denied} |")
    return "\n".join(lines) + "\n"


def permits(role_name: str, granted_scope: str, op: Operation) -> bool:
    """Whether a role assigned at `granted_scope` allows `op`; an unknown role allows nothing."""
    role = role_named(role_name)
    return role is not None and scope_covers(granted_scope, op.scope) and allows(role, op.action)
