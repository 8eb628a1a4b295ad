"""Conda files read without conda: pip requirements, conda packages mapped to pip, content-hash tags."""

import re

import pytest

from emulator.domain.assets.environments import (
    CondaSpec,
    dockerfile,
    image_tag,
    parse_conda,
    python_note,
    requirements_txt,
)
from emulator.domain.assets.images import PYTHON_STAND_IN
from emulator.errors import ValidationFailed

# Microsoft's docs: "Manage Azure Machine Learning environments" (conda file for an environment).
DOCS_MODEL_ENV = """\
name: model-env
channels:
  - conda-forge
dependencies:
  - python=3.8
  - numpy=1.21.2
  - pip=21.2.4
  - scikit-learn=0.24.2
  - scipy=1.7.1
  - pandas>=1.1,<1.2
  - pip:
    - inference-schema[numpy-support]==1.3.0
    - xlrd==2.0.1
    - mlflow== 2.4.1
    - azureml-mlflow==1.51.0
    - psutil>=5.8,<5.9
    - tqdm>=4.59,<4.60
    - ipykernel~=6.0
    - matplotlib
"""
# The docs' command-job samples: everything in the pip section.
DOCS_SKLEARN_ENV = """\
name: sklearn-env
channels:
  - conda-forge
dependencies:
  - python=3.8
  - pip=21.2.4
  - pip:
    - scikit-learn==0.24.2
    - scipy==1.7.1
    - 'azureml-mlflow==1.42.0'
    - 'mlflow-skinny==2.3.2'
"""
DOCS_PYTORCH_ENV = """\
name: pytorch-env
channels:
  - pytorch
  - anaconda
  - defaults
  - conda-forge
dependencies:
  - python=3.8
  - pytorch
  - torchvision
  - cudatoolkit=11.1.1
  - pip
  - pip:
    - azureml-mlflow
"""
# What the SDK sends for `Environment(image=..., conda_file=path)`: the YAML text, as yaml.dump writes it.
SDK_SENT = ("channels:\n- conda-forge\ndependencies:\n- python=3.10\n- pip\n- pip:\n  - scikit-learn==1.5.1\n"
            "  - pandas\n")


def test_the_docs_model_env_maps_conda_packages_and_keeps_the_pip_section():
    spec = parse_conda(DOCS_MODEL_ENV)
    assert spec.name == "model-env" and spec.python == "3.8"
    assert spec.mapped == ("numpy==1.21.2.*", "scikit-learn==0.24.2.*", "scipy==1.7.1.*", "pandas<1.2,>=1.1")
    assert spec.pip == ("inference-schema[numpy-support]==1.3.0", "xlrd==2.0.1", "mlflow==2.4.1",
                        "azureml-mlflow==1.51.0", "psutil<5.9,>=5.8", "tqdm<4.60,>=4.59", "ipykernel~=6.0",
                        "matplotlib")
    assert spec.requirements == spec.mapped + spec.pip
    (note,) = spec.notes
    assert "no conda" in note and "numpy=1.21.2 -> numpy==1.21.2.*" in note and "pandas>=1.1,<1.2" in note
    assert "pip=21.2.4" not in note and "python" not in note  # the base image provides both


def test_a_pip_only_conda_file_needs_no_mapping_and_says_nothing_about_it():
    spec = parse_conda(DOCS_SKLEARN_ENV)
    assert spec.mapped == () and spec.notes == ()
    assert spec.pip == ("scikit-learn==0.24.2", "scipy==1.7.1", "azureml-mlflow==1.42.0", "mlflow-skinny==2.3.2")


def test_the_sdk_sent_text_parses():
    spec = parse_conda(SDK_SENT)
    assert spec == CondaSpec(name=None, python="3.10", pip=("scikit-learn==1.5.1", "pandas"), mapped=(), notes=())


def test_pytorch_is_torch_on_pypi_and_native_libraries_are_skipped_with_a_note():
    spec = parse_conda(DOCS_PYTORCH_ENV)
    assert spec.mapped == ("torch", "torchvision") and spec.pip == ("azureml-mlflow",)
    assert any("pytorch -> torch" in n for n in spec.notes)
    assert any("cudatoolkit=11.1.1" in n and "skipped" in n for n in spec.notes)


@pytest.mark.parametrize("conda,pip", [
    ("numpy=1.26", "numpy==1.26.*"),             # conda's '=' is a prefix match: 1.26.0, 1.26.4, ...
    ("numpy==1.26.4", "numpy==1.26.4"),
    ("numpy=1.26.*", "numpy==1.26.*"),
    ("numpy 1.26*", "numpy==1.26.*"),
    ("numpy 1.26.4", "numpy==1.26.4"),           # the space form without a star is exact
    ("numpy 1.26.4 py311h64a7726_0", "numpy==1.26.4"),
    ("numpy=1.26.4=py311h64a7726_0", "numpy==1.26.4.*"),  # the build string has no pip meaning
    ("conda-forge::numpy=1.26", "numpy==1.26.*"),
    ("scikit-learn>=1.3", "scikit-learn>=1.3"),
    ("scikit-learn >=1.3,<2", "scikit-learn<2,>=1.3"),
    ("Scikit_Learn!=1.4", "scikit-learn!=1.4"),
    ("py-xgboost=2.0", "xgboost==2.0.*"),
    ("requests", "requests"),
])
def test_plain_conda_specs_become_pip_requirements(conda, pip):
    spec = parse_conda(f"dependencies:\n  - '{conda}'\n")
    assert spec.mapped == (pip,) and spec.pip == ()
    assert f"{conda} -> {pip}" in spec.notes[0]


@pytest.mark.parametrize("line,python", [("python=3.10", "3.10"), ("python==3.11.4", "==3.11.4"),
                                         ("python>=3.8", ">=3.8"), ("python", None), ("python 3.9", "3.9")])
def test_python_is_recorded_not_installed(line, python):
    spec = parse_conda(f"dependencies: ['{line}']")
    assert spec.python == python and spec.requirements == ()


def test_a_different_python_is_a_note_not_an_error():
    asks_310 = parse_conda("dependencies: [python=3.10, pip]")
    assert "3.10" in python_note(asks_310, "3.11") and "3.11 runs instead" in python_note(asks_310, "3.11")
    assert "build log" in python_note(asks_310, None)  # a base of the user's: its own Python, whichever it is
    assert python_note(parse_conda("dependencies: [python=3.11]"), "3.11") is None
    assert python_note(parse_conda("dependencies: ['python>=3.8']"), "3.11") is None
    assert python_note(parse_conda("dependencies: [numpy]"), "3.11") is None


def test_pip_lines_are_normalized_comments_dropped_and_safe_options_kept():
    spec = parse_conda("dependencies:\n- pip:\n  - 'Tqdm >= 4.59  # progress bars'\n  - '# a comment'\n"
                       "  - '--extra-index-url=https://example.org/simple'\n  - '-i https://example.org/pypi'\n"
                       "  - 'mypkg @ https://example.org/mypkg-1.0-py3-none-any.whl'\n"
                       "  - 'pywin32; sys_platform == \"win32\"'\n")
    assert spec.pip == ("tqdm>=4.59", "--extra-index-url https://example.org/simple",
                        "--index-url https://example.org/pypi",
                        "mypkg @ https://example.org/mypkg-1.0-py3-none-any.whl",
                        'pywin32; sys_platform == "win32"')


@pytest.mark.parametrize("text,problem", [
    ("dependencies: [", "not valid YAML (line 1"),
    ("- numpy\n- pip\n", "must be a YAML mapping"),
    ("", "must be a YAML mapping"),
    ("name: [1]\n", "'name' must be a string"),
    ("dependencies: numpy\n", "'dependencies' must be a list"),
    ("dependencies:\n- 3.10\n", "each dependency must be"),
    ("dependencies:\n- conda: [numpy]\n", "the only mapping allowed"),
    ("dependencies:\n- pip: numpy\n", "must be a list of requirement strings"),
    ("dependencies:\n- pip: [1.0]\n", "must be a list of requirement strings"),
    ("dependencies:\n- pip: ['-r requirements.txt']\n", "'-r requirements.txt' refers to files"),
    ("dependencies:\n- pip: ['--requirement=requirements.txt']\n", "refers to files"),
    ("dependencies:\n- pip: ['-c constraints.txt']\n", "refers to files"),
    ("dependencies:\n- pip: ['-e .']\n", "refers to files"),
    ("dependencies:\n- pip: ['--find-links ./wheels']\n", "needs a local folder"),
    ("dependencies:\n- pip: ['--hash=sha256:00']\n", "'--hash' is not supported"),
    ("dependencies:\n- pip: [./dist/mypkg-1.0-py3-none-any.whl]\n", "refers to a local path"),
    ("dependencies:\n- pip: ['mypkg @ file:///tmp/mypkg.whl']\n", "local file"),
    ("dependencies:\n- pip: ['numpy=1.26']\n", "'numpy=1.26' is not a valid pip requirement"),
    ("dependencies:\n- pip: ['git+https://github.com/o/r']\n", "a URL needs a name"),
    ("dependencies:\n- 'numpy=1.26|1.27'\n", "conda spec 'numpy=1.26|1.27'"),
    ("dependencies:\n- \"numpy[version='>=1.2']\"\n", "no pip equivalent"),
    ("dependencies:\n- 'numpy='\n", "no pip equivalent"),
    ("dependencies:\n- '!!numpy'\n", "is not a conda package spec"),
    ("dependencies:\n- 'python=three'\n", "conda spec 'python=three'"),
])
def test_malformed_conda_files_name_the_problem_and_the_field(text, problem):
    with pytest.raises(ValidationFailed) as err:
        parse_conda(text)
    assert problem in err.value.message and err.value.target == "properties.condaFile"
    assert err.value.status == 400
    with pytest.raises(ValidationFailed) as err:
        parse_conda(text, target="jobs.train.environment.condaFile")
    assert err.value.target == "jobs.train.environment.condaFile"


def test_the_tag_is_a_content_hash_of_base_and_requirements():
    tag = image_tag(PYTHON_STAND_IN, parse_conda(SDK_SENT))
    assert re.fullmatch(r"amlemu/env:[0-9a-f]{16}", tag)
    assert tag == image_tag(PYTHON_STAND_IN, parse_conda(SDK_SENT))
    # The same requirements in another order, spelling or with other metadata: the image already built.
    same = "name: other\ndependencies:\n- python=3.11\n- pip:\n  - Pandas\n  - scikit_learn == 1.5.1\n"
    assert image_tag(PYTHON_STAND_IN, parse_conda(same)) == tag
    # Any change of requirement or of (resolved) base: another image.
    assert image_tag(PYTHON_STAND_IN, parse_conda(SDK_SENT.replace("1.5.1", "1.5.2"))) != tag
    assert image_tag(PYTHON_STAND_IN, parse_conda(SDK_SENT + "  - six\n")) != tag
    assert image_tag("amlemu/azureml-stand-in:latest", parse_conda(SDK_SENT)) != tag


def test_the_dockerfile_installs_the_requirements_file_on_the_local_base():
    spec = parse_conda(DOCS_MODEL_ENV)
    text = dockerfile(PYTHON_STAND_IN, spec)
    assert f"FROM {PYTHON_STAND_IN}\n" in text
    assert "COPY requirements.txt /opt/amlemu/requirements.txt" in text
    assert "pip install --no-cache-dir -r /opt/amlemu/requirements.txt" in text
    assert "python --version" in text  # the build log says which Python the packages went into
    digest = image_tag(PYTHON_STAND_IN, spec).split(":")[1]
    assert text.rstrip().endswith(f"LABEL amlemu.environment={digest}")
    # Requirements travel in the file, never through a shell line.
    assert "numpy" not in text and "mlflow" not in text
    assert requirements_txt(spec).splitlines() == list(spec.requirements)
