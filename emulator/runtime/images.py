"""Builds images locally, never pulling (no registry is reachable, DESIGN §5): the emulator's own (a Debian
base from packages, then the Dockerfiles under images/ on top of it) and jobs' environment images."""

import io
import subprocess
import tarfile
from collections.abc import Callable
from pathlib import Path

import docker
from docker.errors import BuildError, DockerException, ImageNotFound

from emulator.errors import RuntimeUnavailable, ValidationFailed

BASE_IMAGE = "amlemu/debian:bookworm"
Progress = Callable[[str], None]
LOG_TAIL = 20  # build log lines an environment build failure carries: pip's complaint is at the end


class _Engine:
    """The Docker engine as an image builder. One client serves concurrent builds (a pool of connections)."""

    def __init__(self, client: "docker.DockerClient | None" = None):
        try:
            self.client = client or docker.from_env(timeout=600)
            self.client.ping()
        except DockerException as exc:
            raise RuntimeUnavailable(f"Cannot reach the Docker engine: {exc}. Start Docker and retry.") from exc

    def exists(self, tag: str) -> bool:
        try:
            self.client.images.get(tag)
            return True
        except ImageNotFound:
            return False
        except DockerException as exc:
            raise RuntimeUnavailable(f"Docker engine error looking up image {tag}: {exc}") from exc

    def _build(self, progress: Progress, **build) -> list[str]:
        """docker build (pull=False: every base is local), each log line to `progress`; the log, or BuildError."""
        log: list[str] = []
        for chunk in self.client.api.build(rm=True, forcerm=True, pull=False, decode=True, **build):
            if "error" in chunk:
                raise BuildError(chunk["error"].strip(), log)
            for line in chunk.get("stream", "").splitlines():
                if line.strip():
                    log.append(line.rstrip())
                    progress(line.rstrip())
        return log


class ImageBuilder(_Engine):
    def __init__(self, root: Path, progress: Progress, client: "docker.DockerClient | None" = None):
        super().__init__(client)
        self.root, self.progress = root, progress

    def ensure_base(self) -> None:
        if self.exists(BASE_IMAGE):
            return
        self.progress(f"{BASE_IMAGE} is missing and no registry is reachable: building it from Debian packages")
        script = self.root / "images" / "base" / "debootstrap.sh"
        with subprocess.Popen(["bash", str(script), BASE_IMAGE], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True) as proc:
            for line in proc.stdout:
                self.progress(line.rstrip())
        if proc.returncode != 0:
            raise RuntimeUnavailable(f"building {BASE_IMAGE} failed (exit {proc.returncode}); see the lines above")

    def build(self, name: str, tag: str, context: Path | None = None, base: str = BASE_IMAGE) -> None:
        """docker build images/<name>/Dockerfile; cached layers make a rebuild take seconds."""
        dockerfile = self.root / "images" / name / "Dockerfile"
        context = context or dockerfile.parent
        try:
            self._build(self.progress, path=str(context), dockerfile=str(dockerfile), tag=tag,
                        buildargs={"BASE_IMAGE": base})
        except DockerException as exc:  # BuildError included
            raise RuntimeUnavailable(f"building {tag} failed: {exc}") from exc


def _context(files: dict[str, str]) -> io.BytesIO:
    """A build context in memory: nothing on disk to clean up, nothing shared between concurrent builds."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
    buffer.seek(0)
    return buffer


class EnvironmentImages(_Engine):
    """Jobs' environment images (base + pip requirements), built from a Dockerfile text and its files."""

    def build_environment(self, tag: str, dockerfile: str, files: dict[str, str], progress: Progress) -> str:
        """Build `tag`; the build log. A failing step raises ValidationFailed carrying the log's last lines."""
        try:
            log = self._build(progress, fileobj=_context({"Dockerfile": dockerfile, **files}), custom_context=True,
                              tag=tag)
        except BuildError as exc:
            tail = "\n".join(exc.build_log[-LOG_TAIL:])
            raise ValidationFailed(f"Building environment image {tag} failed: {exc.msg}\n"
                                   f"Last lines of the build log:\n{tail}") from exc
        except DockerException as exc:
            raise RuntimeUnavailable(f"building {tag} failed: Docker engine error: {exc}") from exc
        return "\n".join(log)
