"""Builds the emulator's images locally: a Debian base from packages when none can be pulled (DESIGN §5),
then the Dockerfiles under images/ on top of it."""

import subprocess
from collections.abc import Callable
from pathlib import Path

import docker
from docker.errors import BuildError, DockerException, ImageNotFound

from emulator.errors import RuntimeUnavailable

BASE_IMAGE = "amlemu/debian:bookworm"
Progress = Callable[[str], None]


class ImageBuilder:
    def __init__(self, root: Path, progress: Progress):
        self.root, self.progress = root, progress
        try:
            self.client = docker.from_env(timeout=600)
            self.client.ping()
        except DockerException as exc:
            raise RuntimeUnavailable(f"Cannot reach the Docker engine: {exc}. Start Docker and retry.") from exc

    def exists(self, tag: str) -> bool:
        try:
            self.client.images.get(tag)
            return True
        except ImageNotFound:
            return False

    def ensure_base(self) -> None:
        if self.exists(BASE_IMAGE):
            return
        self.progress(f"{BASE_IMAGE} is missing and no registry is reachable: building it from Debian packages")
        script = self.root / "images" / "base" / "debootstrap.sh"
        with subprocess.Popen([str(script), BASE_IMAGE], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
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
            for chunk in self.client.api.build(path=str(context), dockerfile=str(dockerfile), tag=tag, rm=True,
                                               buildargs={"BASE_IMAGE": base}, decode=True):
                if "error" in chunk:
                    raise BuildError(chunk["error"], [chunk])
                line = chunk.get("stream", "").strip()
                if line:
                    self.progress(line)
        except (BuildError, DockerException) as exc:
            raise RuntimeUnavailable(f"building {tag} failed: {exc}") from exc
