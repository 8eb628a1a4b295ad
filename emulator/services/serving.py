"""Serving images: a deployment's environment (image, or image + conda file, built once by content hash
through the environment resolver jobs use), then the inference server on top, built once per environment."""

import threading
from collections.abc import Callable

from emulator.domain import serving
from emulator.services.environments import EnvironmentResolver, ImageEngine, Prepared

Progress = Callable[[str], None]


class ServingImages:
    def __init__(self, resolver: EnvironmentResolver, engine: ImageEngine):
        self.resolver, self.engine = resolver, engine
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()

    def prepare(self, env_body: dict, progress: Progress) -> Prepared:
        environment = self.resolver.prepare(env_body, progress)
        tag = serving.image_tag(environment.image)
        with self._guard:
            lock = self._locks.setdefault(tag, threading.Lock())
        with lock:
            if self.engine.exists(tag):
                return Prepared(tag, environment.notes)
            progress(f"amlemu: building serving image {tag}: {environment.image} plus {serving.SERVER_PACKAGE}")
            self.engine.build_environment(tag, serving.dockerfile(environment.image),
                                          {"amlemu-serve": serving.START_SCRIPT}, progress)
        return Prepared(tag, environment.notes, built=True)
