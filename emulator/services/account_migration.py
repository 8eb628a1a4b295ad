"""Start-up migration: every workspace onto a storage account of its own.

Earlier versions named a workspace's account after the first 14 letters and digits of its name
(`blob_access.legacy_account`), so workspaces whose names agree that far, or that share a name in two resource
groups, shared an account and each other's files. Now each has `blob_access.workspace_account`. This moves the
blob folders (and their property sidecars) of each legacy account to the account of the workspace that owns
them, and rewrites the blob URLs stored in code and environment versions. It runs before the api serves,
and running it again does nothing: what has moved is no longer where it is looked for.

What belongs to whom in a shared legacy account:
- azureml-blobstore-<workspace guid>: the workspace with that guid;
- a pending-upload container (a code snapshot): the workspaces whose versions name it;
- azureml (the artifact store): ExperimentRun/dcid.<job> to the workspace with that job;
- anything else: the only workspace of the legacy account; with several, it stays where it is (logged).
"""

import json
import logging
import os
from collections import defaultdict
from pathlib import Path

from emulator.domain.ids import WorkspaceRef
from emulator.domain.storage import blob_access, datastores
from emulator.store.repositories import Repository
from emulator.store.tables import Workspace

log = logging.getLogger("amlemu.migration")


def _merge(src: Path, dst: Path) -> None:
    """Move `src` to `dst`, merging folders; a file already at `dst` wins (an earlier, interrupted run put it
    there). Links are moved as links, never followed."""
    if not os.path.lexists(src):
        return
    if not os.path.lexists(dst):
        dst.parent.mkdir(parents=True, exist_ok=True)
        os.rename(src, dst)
        return
    if src.is_dir() and not src.is_symlink() and dst.is_dir() and not dst.is_symlink():
        for child in os.listdir(src):
            _merge(src / child, dst / child)
        _remove_if_empty(src)
    else:
        log.warning("migration: %s is already at %s; the old copy stays", src, dst)


def _remove_if_empty(folder: Path) -> None:
    try:
        folder.rmdir()
    except OSError:
        pass


def _rewrite_uris(repo: Repository, ref: WorkspaceRef, old: str, new: str) -> set[str]:
    """Stored blob URLs on `old` (code snapshots, build contexts) moved to `new`; returns the containers
    they named."""
    containers = set()

    def moved(uri: object) -> object:
        rewritten = blob_access.with_account(uri, old, new) if isinstance(uri, str) else None
        if rewritten is None:
            return uri
        containers.add(blob_access.blob_location(uri)[1])
        return rewritten

    for row in repo.asset_versions(ref.key, "codes"):
        if (uri := moved(row.body.get("codeUri"))) != row.body.get("codeUri"):
            row.body = {**row.body, "codeUri": uri}
    for row in repo.asset_versions(ref.key, "environments"):
        build = row.body.get("build") or {}
        if (uri := moved(build.get("contextUri"))) != build.get("contextUri"):
            row.body = {**row.body, "build": {**build, "contextUri": uri}}
    return containers


def _prune_empty(folder: Path) -> None:
    """Remove the empty folders left under `folder`, and it if it ends up empty."""
    for parent, dirs, _files in os.walk(folder, topdown=False):
        for name in dirs:
            _remove_if_empty(Path(parent) / name)
    _remove_if_empty(folder)


def _move_container(data_dir: Path, old: str, new: str, container: str) -> None:
    for root in (data_dir / "blobs", data_dir / "blobs.meta"):
        _merge(root / old / container, root / new / container)


def _split_artifacts(data_dir: Path, old: str, owners: dict[str, str]) -> None:
    """The shared artifact store: each job's folder (and the sidecars of its blobs) to its workspace."""
    base = data_dir / "blobs" / old / datastores.ARTIFACT_CONTAINER / "ExperimentRun"
    for folder in sorted(os.listdir(base)) if base.is_dir() else []:
        new = owners.get(folder.removeprefix("dcid.").lower())
        if folder.startswith("dcid.") and new:
            _merge(base / folder, data_dir / "blobs" / new / datastores.ARTIFACT_CONTAINER / "ExperimentRun" / folder)
    meta = data_dir / "blobs.meta" / old / datastores.ARTIFACT_CONTAINER
    for sidecar in sorted(meta.rglob("*.json")) if meta.is_dir() else []:
        name = json.loads(sidecar.read_text()).get("name", "")
        parts = name.split("/")
        new = owners.get(parts[1].removeprefix("dcid.").lower()) if len(parts) > 2 and parts[0] == "ExperimentRun" \
            else None
        if new:
            _merge(sidecar, data_dir / "blobs.meta" / new / sidecar.relative_to(meta.parent))


def _migrate_group(repo: Repository, data_dir: Path, old: str, group: list[Workspace]) -> None:
    refs = [WorkspaceRef.of(w) for w in group]
    accounts = {ref.key: blob_access.workspace_account(ref) for ref in refs}
    owner_of: dict[str, set[str]] = defaultdict(set)  # container -> new accounts
    for ref in refs:
        for container in _rewrite_uris(repo, ref, old, accounts[ref.key]):
            owner_of[container].add(accounts[ref.key])
        owner_of[f"azureml-blobstore-{datastores.workspace_guid(ref.key)}"].add(accounts[ref.key])
    root = data_dir / "blobs" / old
    if not root.is_dir():
        return
    jobs = {job.name.lower(): accounts[ref.key] for ref in refs for job in repo.jobs(ref.key)}
    if len(refs) > 1:
        _split_artifacts(data_dir, old, jobs)
    only = accounts[refs[0].key] if len(refs) == 1 else None
    for container in sorted(os.listdir(root)):
        owners = owner_of.get(container, set()) or ({only} if only else set())
        if len(owners) == 1:
            _move_container(data_dir, old, owners.pop(), container)
        else:
            log.warning("migration: container %s of the shared account %s belongs to %s; it stays", container,
                        old, "several workspaces" if owners else "no one workspace")
    for folder in (root, data_dir / "blobs.meta" / old):
        _prune_empty(folder)
    log.info("migration: storage account %s moved to %s", old, ", ".join(sorted(set(accounts.values()))))


def migrate(repo: Repository, data_dir: Path) -> None:
    """Move every workspace's blobs and stored blob URLs off the account earlier versions gave it."""
    groups: dict[str, list[Workspace]] = defaultdict(list)
    for row in repo.all_workspaces():
        groups[blob_access.legacy_account(row.name)].append(row)
    for old, group in groups.items():
        _migrate_group(repo, data_dir, old, group)
