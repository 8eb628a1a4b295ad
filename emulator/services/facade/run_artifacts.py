"""A run's artifacts as RunHistory serves them to the azureml-mlflow plugin: `mlflow.log_artifact` and `log_model`
ask for an upload URL per file, downloads for a read URL, listings for the file names. They live where Azure keeps
them and `jobs.download` finds them: the artifact store's ExperimentRun/dcid.<run>/."""

from pathlib import PurePosixPath
from urllib.parse import quote, urlparse

from emulator import tokens
from emulator.domain.ids import WorkspaceRef
from emulator.domain.jobs import artifacts
from emulator.domain.storage import blob_access
from emulator.errors import Forbidden, NotFound, ValidationFailed
from emulator.services.blobs import BlobStore
from emulator.services.facade.base import Service

ORIGIN = "ExperimentRun"


class RunArtifacts(Service):
    def authorize(self, ref: WorkspaceRef, run: str, authorization: str | None, writing: bool) -> dict | None:
        """A job's run token reads its workspace's runs and writes its own run's artifacts only (its claims); None
        for a management token, whose role the caller checks."""
        claims = tokens.workspace_caller(self.secret, authorization, ref.key,
                                         tokens.management_audiences(self.settings.own_urls))
        if claims is not None and writing and claims.get("run") != run:
            raise Forbidden(f"A job's token writes its own run's artifacts only, not run '{run}'.",
                            code="AuthorizationFailed", target="runId")
        return claims

    def upload_urls(self, ref: WorkspaceRef, run: str, paths: list[str], base_url: str) -> dict:
        self._workspace(ref)
        where = artifacts.location(ref, run)  # the artifact store's container, there before any job made it
        BlobStore(self.settings.data_dir).create_container(where.account, where.container)
        return self._batch(ref, run, [self._path(p) for p in paths], base_url, "cw")

    def content_info(self, ref: WorkspaceRef, run: str, path: str, base_url: str) -> dict:
        self._workspace(ref)
        path = self._path(path)
        where = artifacts.location(ref, run)
        if not BlobStore(self.settings.data_dir).list_blobs(where.account, where.container, f"{where.blob}/{path}"):
            raise NotFound(f"Run '{run}' has no artifact '{path}'.", target="path")
        return self._batch(ref, run, [path], base_url, "r")["artifactContentInformation"][path]

    def listing(self, ref: WorkspaceRef, run: str, prefix: str = "") -> dict:
        self._workspace(ref)
        where = artifacts.location(ref, run)
        found = BlobStore(self.settings.data_dir).list_blobs(where.account, where.container, f"{where.blob}/{prefix}")
        names = sorted(PurePosixPath(p.name).relative_to(where.blob).as_posix() for p in found)
        return {"value": [self._artifact(run, name) for name in names], "continuationToken": None, "nextLink": None}

    @staticmethod
    def _path(path: str) -> str:
        if not isinstance(path, str) or path.startswith("/"):
            raise ValidationFailed("An artifact path is relative to its run, as 'model/MLmodel'.", target="path")
        return blob_access.blob_name(path)

    @staticmethod
    def _artifact(run: str, path: str) -> dict:
        container = f"dcid.{run}"
        return {"artifactId": f"{ORIGIN}/{container}/{path}", "origin": ORIGIN, "container": container,
                "path": path}

    def _blob_base(self, base_url: str, account: str) -> str:
        """Host-style for the user's machine, as the plugin downloads only URLs of the cloud's storage suffix
        (`<account>.blob.<suffix>`, which the client shim resolves); path-style for jobs, which reach the api by
        its name on the jobs network, or from an attached host at the nodes' address of it."""
        scheme, _, netloc = base_url.partition("://")
        node_host = urlparse(self.settings.node_api_url).netloc.rsplit(":", 1)[0]
        if netloc.split(":")[0] == self.settings.jobs_api_host or netloc.rsplit(":", 1)[0] == node_host:
            return f"{base_url}/blob/{account}"
        return f"{scheme}://{account}.blob.{netloc}"

    def _batch(self, ref: WorkspaceRef, run: str, paths: list[str], base_url: str, permissions: str) -> dict:
        where, now = artifacts.location(ref, run), self.clock()
        info = {}
        for path in paths:
            blob = f"{where.blob}/{path}"
            sas = blob_access.mint(self.secret, where.account, where.container, now, permissions=permissions,
                                   blob=blob)
            url = f"{self._blob_base(base_url, where.account)}/{where.container}/{quote(blob)}?{sas}"
            info[path] = {"contentUri": url, "origin": ORIGIN, "container": f"dcid.{run}", "path": path}
        return {"artifacts": {p: self._artifact(run, p) for p in paths}, "artifactContentInformation": info,
                "errors": {}}


