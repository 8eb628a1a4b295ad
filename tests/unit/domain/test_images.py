"""Environment images resolve to themselves, to a stand-in, or to an error that says what to do."""

import pytest

from emulator.domain.assets.images import AZUREML_STAND_IN, PYTHON_STAND_IN, resolve
from emulator.errors import ValidationFailed

STAND_INS_BUILT = {PYTHON_STAND_IN, AZUREML_STAND_IN}


@pytest.mark.parametrize("requested,stand_in", [
    ("python:3.11-slim", PYTHON_STAND_IN), ("python:3.10-slim", PYTHON_STAND_IN), ("python:3.12", PYTHON_STAND_IN),
    ("docker.io/library/python:3.11-slim-bookworm", PYTHON_STAND_IN),
    # as Microsoft's docs write them: Docker Hub's names, with and without a tag
    ("python", PYTHON_STAND_IN), ("library/python:latest", PYTHON_STAND_IN), ("python:latest", PYTHON_STAND_IN),
    ("docker.io/library/python:3.10-slim", PYTHON_STAND_IN), ("library/python", PYTHON_STAND_IN),
    ("python:slim", PYTHON_STAND_IN), ("docker.io/python", PYTHON_STAND_IN), ("python:3.9-bullseye", PYTHON_STAND_IN),
    ("mcr.microsoft.com/azureml/openmpi4.1.0-ubuntu22.04:latest", AZUREML_STAND_IN),
    ("mcr.microsoft.com/azureml/openmpi4.1.0-ubuntu20.04", AZUREML_STAND_IN),
    ("mcr.microsoft.com/azureml/openmpi3.1.2-ubuntu18.04:20230509.v1", AZUREML_STAND_IN),
    ("mcr.microsoft.com/azureml/minimal-ubuntu22.04-py39-cpu-inference:latest", AZUREML_STAND_IN),
])
def test_known_bases_run_on_their_stand_in_and_say_so(requested, stand_in):
    resolved = resolve(requested, STAND_INS_BUILT.__contains__)
    assert resolved.image == stand_in
    assert requested in resolved.note and stand_in in resolved.note


def test_an_image_present_under_its_own_name_wins():
    present = STAND_INS_BUILT | {"python:3.11-slim"}
    assert resolve("python:3.11-slim", present.__contains__).image == "python:3.11-slim"
    assert resolve("python:3.11-slim", present.__contains__).note is None


@pytest.mark.parametrize("requested", ["ubuntu:22.04", "myregistry.azurecr.io/team/train:1", "python:2.7",
                                       "library/pythonx", "python:3.11-alpine",
                                       "mcr.microsoft.com/azureml/curated/sklearn-1.5:3"])
def test_anything_else_fails_with_what_to_do(requested):
    with pytest.raises(ValidationFailed) as err:
        resolve(requested, STAND_INS_BUILT.__contains__)
    assert requested in err.value.message and "docker load" in err.value.message
    assert err.value.target == "properties.image"


def test_a_stand_in_that_was_not_built_is_no_answer():
    with pytest.raises(ValidationFailed):
        resolve("python:3.11-slim", set().__contains__)
