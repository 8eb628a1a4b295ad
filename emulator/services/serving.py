"""Serving images: a deployment's environment (image, or image + conda file, built once by content hash
through the environment resolver jobs use), then the inference server on top, built once per environment."""

from collections.abc import Callable

from emulator.domain.serving import model_server
from emulator.services.environments import EnvironmentResolver, Prepared

Progress = Callable[[str], None]


class ServingImages:
    def __init__(self, resolver: EnvironmentResolver):
        self.resolver, self.engine = resolver, resolver.engine

    def prepare(self, env_body: dict, progress: Progress) -> Prepared:
        environment = self.resolver.prepare(env_body, progress)
        tag = model_server.image_tag(environment.image)
        with self.resolver.lock(tag):
            if self.engine.exists(tag):
                return Prepared(tag, environment.notes)
            progress(f"amlemu: building serving image {tag}: {environment.image} plus {model_server.SERVER_PACKAGE}")
            self.engine.build_environment(tag, model_server.dockerfile(environment.image),
                                          {"amlemu-serve": model_server.START_SCRIPT,
                                           "amlemu-serve-gunicorn.py": model_server.GUARD_CONFIG}, progress)
        return Prepared(tag, environment.notes, built=True)
