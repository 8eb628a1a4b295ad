"""A job input outside the workspace (http(s), wasbs, abfss), made a datastore path the job mounts like any
other: from the user's mirror first, then the cache of what was fetched before, then fetched now
(services/external_fetch). The data is copied, following no link, into the workspace's default datastore
under its content's digest, so the job reads what was there at submit. With none of these the submit is
refused, naming the URL and the mirror command. Layouts: domain/storage/external.py.
"""

import copy
import hashlib
import os
import shutil
import stat
import uuid
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath

from emulator import confined
from emulator.domain.ids import WorkspaceRef
from emulator.domain.jobs import artifacts, command_job
from emulator.domain.storage import datastores, external
from emulator.errors import EmulatorError, PathEscape, ValidationFailed
from emulator.services import external_fetch
from emulator.settings import Settings

_CHUNK = 1 << 20
MAX_FILES = 10_000  # in a folder fetched from blob storage


@dataclass(frozen=True)
class ExternalData:
    data_dir: Path
    fetching: bool
    limits: external_fetch.Limits

    @classmethod
    def of(cls, settings: Settings) -> "ExternalData":
        return cls(settings.data_dir, settings.external_fetch,
                   external_fetch.Limits(settings.external_timeout_seconds, settings.external_max_bytes,
                                         settings.external_private_hosts))

    def copies(self, ref: WorkspaceRef, inputs: dict[str, dict]) -> dict[str, str | None]:
        """{input: its copy's datastore URI (None: Direct)} for the inputs outside the workspace."""
        return {name: self.input_uri(ref, entry, f"{command_job.P}.inputs.{name}.uri")
                for name, entry in inputs.items()
                if entry["jobInputType"] != "literal" and external.is_external(entry.get("uri"))}

    def copies_of(self, ref: WorkspaceRef, body: object) -> dict[str, str | None]:
        """copies() for a job's PUT body not checked yet: a body `parse` refuses is left for the transaction to
        refuse (nothing is copied)."""
        try:
            _props, spec = command_job.parse(copy.deepcopy(body))  # parse normalises what it is given
        except EmulatorError:
            return {}
        return self.copies(ref, spec.inputs)

    def input_uri(self, ref: WorkspaceRef, entry: dict, target: str) -> str | None:
        """The datastore URI of the input's copy; None for a Direct input, which hands the job its URL."""
        uri = external.parse(entry["uri"], target)
        input_type = entry["jobInputType"]
        external.check_kind(uri, input_type, target)
        if entry.get("mode") == "Direct":
            return None
        is_file = input_type in external.FILE_TYPES
        try:
            source = self._source(uri, is_file, input_type, target)
            return self._snapshot(ref, source, uri.name if is_file else None, is_file, target)
        except PathEscape as exc:
            raise ValidationFailed(f"{target}: {uri.written[:200]}: {exc.message}", target=target) from exc

    def _kind(self, rel: str) -> str | None:
        """'file', 'folder', 'link' or 'other' for what is at `rel` (no link followed on the way), None if nothing."""
        parent, name = PurePosixPath(rel).parent, PurePosixPath(rel).name
        try:
            with confined.directory(self.data_dir, parent) as folder:
                mode = os.stat(name, dir_fd=folder, follow_symlinks=False).st_mode
        except (FileNotFoundError, NotADirectoryError):
            return None
        return ("file" if stat.S_ISREG(mode) else "folder" if stat.S_ISDIR(mode)
                else "link" if stat.S_ISLNK(mode) else "other")

    def _source(self, uri: external.ExternalUri, is_file: bool, input_type: str, target: str) -> str:
        """Where, under the data folder, the input's data is now: the mirror, or the cache (fetched if need be)."""
        wanted = "file" if is_file else "folder"
        mirrored = f"{external.MIRROR_DIR}/{uri.key}"
        found = self._kind(mirrored)
        if found == wanted:
            return mirrored
        if found is not None:
            raise ValidationFailed(f"{target}: the mirror holds {'a ' + found if found != 'other' else 'something'} "
                                   f"at {mirrored}, and a {input_type} input needs a {wanted} (amlemu follows no "
                                   f"links). Replace it with `{external.mirror_command(uri.written)}`.", target=target)
        cached = f"{external.CACHE_DIR}/{uri.key}"
        if not is_file and not uri.in_blob_storage:
            raise external.unavailable(uri, input_type, target, "a web server lists no folder")
        if self._kind(cached) == wanted:
            return cached
        if not self.fetching:
            raise external.unavailable(uri, input_type, target, "fetching is off (AMLEMU_EXTERNAL_FETCH=false)")
        try:
            if is_file:
                with confined.directory(self.data_dir, PurePosixPath(cached).parent, create=True) as folder:
                    external_fetch.fetch(uri.url, folder, uri.name, self.limits)
            else:
                self._fetch_folder(uri, PurePosixPath(cached), target)
        except external_fetch.FetchFailed as exc:
            raise external.unavailable(uri, input_type, target, str(exc)) from exc
        return cached

    def _listed(self, uri: external.ExternalUri) -> list[tuple[str, int]]:
        blobs, marker = [], ""
        while len(blobs) <= MAX_FILES:
            try:
                page, marker = external.listed_blobs(external_fetch.read(external.listing_url(uri, marker),
                                                                         self.limits))
            except ValueError as exc:
                raise external_fetch.FetchFailed(str(exc)) from exc
            blobs += page
            if not marker:
                break
        return blobs

    def _fetch_folder(self, uri: external.ExternalUri, cached: PurePosixPath, target: str) -> None:
        """The folder's blobs, listed and fetched into a staging folder beside its place in the cache, which then
        takes that place whole. Its total size and file count are bounded as one file's size is."""
        blobs = self._listed(uri)
        files, total = external.folder_files(uri, blobs, target), sum(size for _name, size in blobs)
        if not files or len(files) > MAX_FILES or total > self.limits.max_bytes:
            raise external_fetch.FetchFailed(
                f"the folder holds {len(files)} files of {total} bytes in all; amlemu fetches folders of 1 to "
                f"{MAX_FILES} files, {self.limits.max_bytes} bytes at most (AMLEMU_EXTERNAL_MAX_BYTES)")
        staging, left = cached.parent / f".partial-{uuid.uuid4().hex}", self.limits.max_bytes
        try:
            for rel, url in files.items():  # the listing's sizes are the server's word: each file counts as read
                with confined.directory(self.data_dir, staging.joinpath(*rel[:-1]), create=True) as folder:
                    external_fetch.fetch(url, folder, rel[-1], replace(self.limits, max_bytes=left))
                    left -= os.stat(rel[-1], dir_fd=folder, follow_symlinks=False).st_size
            with confined.directory(self.data_dir, cached.parent) as parent:
                try:
                    os.rename(staging.name, cached.name, src_dir_fd=parent, dst_dir_fd=parent)
                except OSError:
                    pass  # the same folder, put there meanwhile by another submit
        finally:
            shutil.rmtree(self.data_dir / staging, ignore_errors=True)


    def _snapshot(self, ref: WorkspaceRef, source: str, name: str | None, is_file: bool, target: str) -> str:
        """Copy `source` into the default datastore's snapshot folder under its digest; its datastore URI."""
        store = next(d for d in datastores.defaults(ref) if d.is_default)
        base = artifacts.blob_dir(datastores.BlobLocation(store.account, store.container, external.SNAPSHOT_FOLDER))
        confined.make_dir(self.data_dir, base, 0o755)
        staging = self.data_dir / base / f".staging-{uuid.uuid4().hex}"
        try:
            copy = confined.copy_file if is_file else confined.copy_tree
            skipped = copy(self.data_dir, source, staging)
            if skipped:
                raise ValidationFailed(f"{target}: {source} holds what amlemu does not copy: "
                                       f"{', '.join(skipped[:5])}. Keep plain files and folders there.", target=target)
            digest = tree_digest(staging)
            final = self.data_dir / base / digest
            if not final.exists():
                try:
                    os.rename(staging, final)
                except OSError:  # the same content, put there meanwhile by another submit
                    pass
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        path = external.snapshot_path(digest, name)
        return f"azureml://datastores/{datastores.BLOB_STORE}/paths/{path}" + ("" if is_file else "/")


def tree_digest(root: Path) -> str:
    """sha256 over the folder's names and contents, in a fixed order (the folder holds no links: just copied)."""
    total = hashlib.sha256()
    for folder, dirs, files in os.walk(root):
        dirs.sort()
        here = Path(folder).relative_to(root).as_posix()
        total.update(f"d:{here}\0".encode())
        for name in sorted(files):
            digest = hashlib.sha256()
            with open(Path(folder) / name, "rb") as file:
                while chunk := file.read(_CHUNK):
                    digest.update(chunk)
            total.update(f"f:{here}/{name}\0{digest.hexdigest()}\0".encode())
    return total.hexdigest()
