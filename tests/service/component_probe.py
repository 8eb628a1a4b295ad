"""Runs in a fresh interpreter with the `amlemu env` variables: command components through the real SDK, in the
workspace and in a registry of the user's own (YAML as Microsoft's docs write it, CommandComponent, command(),
anonymous, explicit and next versions, get, list, archive, restore, refusals); prints JSON of what it saw.

Usage: python component_probe.py WORK_DIR
"""

import json
import os
import sys
from pathlib import Path

from azure.ai.ml import Input, MLClient, Output, command, load_component
from azure.ai.ml.entities import CommandComponent, Environment, Registry, RegistryRegionDetails
from azure.identity import DefaultAzureCredential
from registry_probe import _error  # beside this file, on the path of a script run from there

# cli/jobs/pipelines-with-components/basics/1b_e2e_registered_components/train.yml of Azure/azureml-examples, with
# an environment this emulator has and an optional flag
TRAIN = """$schema: https://azuremlschemas.azureedge.net/latest/commandComponent.schema.json
name: my_train
display_name: Train_upper_case
type: command
inputs:
  training_data:
    type: uri_folder
  max_epocs:
    type: integer
    min: 0
    max: 100
  learning_rate:
    type: number
    default: 0.01
  learning_rate_schedule:
    type: string
    default: time-based
    enum:
        - "step"
        - "time-based"
  early_stop:
    type: boolean
    optional: true
outputs:
  model_output:
    type: uri_folder
code: ./train_src
environment: azureml://registries/azureml/environments/sklearn-1.5/labels/latest
command: >-
  python train.py
  --training_data ${{inputs.training_data}}
  --max_epocs ${{inputs.max_epocs}}
  --learning_rate ${{inputs.learning_rate}}
  --learning_rate_schedule ${{inputs.learning_rate_schedule}}
  $[[--early_stop ${{inputs.early_stop}}]]
  --model_output ${{outputs.model_output}}
"""


def _inputs(component) -> dict:
    return {name: {k: v for k, v in {"type": i.type, "default": i.default, "min": i.min, "max": i.max,
                                     "enum": i.enum, "optional": i.optional}.items() if v is not None}
            for name, i in component.inputs.items()}


def _workspace(ml: MLClient, work: Path) -> dict:
    (work / "train_src").mkdir()
    (work / "train_src" / "train.py").write_text("print('training')\n")
    (work / "train.yml").write_text(TRAIN)
    first = ml.components.create_or_update(load_component(str(work / "train.yml")))
    again = load_component(str(work / "train.yml"))
    again.description = "second"
    second = ml.components.create_or_update(again)  # no version in the YAML: the next one
    env = ml.environments.create_or_update(Environment(name="probe-env", version="1", image="python:3.11-slim"))
    built = ml.components.create_or_update(command(
        name="hello_cmp", version="3", command="echo ${{inputs.x}} > ${{outputs.o}}/a.txt",
        inputs={"x": Input(type="integer", default=3, min=1, max=5), "m": Input(type="mlflow_model", optional=True)},
        outputs={"o": Output(type="uri_folder")}, environment="azureml:probe-env@latest", code=str(work / "train_src"),
        distribution={"type": "pytorch"}, resources={"instance_count": 2}).component)
    plain = ml.components.create_or_update(CommandComponent(
        name="plain_cmp", version="1", command="echo hi", environment=Environment(image="python:3.11-slim")))
    anonymous = ml.components.create_or_update(CommandComponent(
        name="anon", command="echo ${{inputs.n}}", inputs={"n": Input(type="string")},
        environment="azureml:AzureML-sklearn-1.5@latest"), is_anonymous=True)
    seen = {"first": [first.version, _inputs(first), "/codes/" in first.code],
            "second": second.version, "built": [built.version, built.resources.instance_count,
                                                 type(built.distribution).__name__,
                                                 built.environment.endswith(f"{env.name}/versions/{env.version}")],
            "plain": plain.environment.split("/environments/")[1].split("/")[0], "anonymous": anonymous.id,
            "latest": ml.components.get("my_train").version,
            "label": ml.components.get("my_train", label="latest").version,
            "by_version": [ml.components.get("my_train", version="1").description,
                           ml.components.get("my_train", version="2").description],
            "listed": sorted(c.name for c in ml.components.list()),
            "versions": [c.version for c in ml.components.list(name="my_train")]}
    ml.components.archive("my_train", version="2")
    seen["after_archive"] = [ml.components.get("my_train").version, [c.version for c in ml.components.list("my_train")]]
    ml.components.restore("my_train", version="2")
    ml.components.archive("plain_cmp")
    seen["archived_whole"] = sorted(c.name for c in ml.components.list())
    ml.components.restore("plain_cmp")
    typo = CommandComponent(name="my_train", version="9", command="python train.py ${{inputs.epochs}}",
                            environment="azureml:AzureML-sklearn-1.5@latest")
    seen["typo"] = _error(lambda: ml.components.create_or_update(typo, skip_validation=True))
    changed = load_component(str(work / "train.yml"))
    changed.command = "python train.py --model_output ${{outputs.model_output}}"
    seen["changed"] = _error(lambda: ml.components.create_or_update(changed, version="1"))
    seen["missing_env"] = _error(lambda: ml.components.create_or_update(CommandComponent(
        name="no_env", version="1", command="echo", environment="azureml:AzureML-sklearn-9.9@latest")))
    seen["unknown"] = _error(lambda: ml.components.get("nope", version="1"))
    return seen


def _registry(ml: MLClient, cred, sub: str, rg: str, work: Path) -> dict:
    ml.registries.begin_create(Registry(name="probe-comp-reg", location="eastus", replication_locations=[
        RegistryRegionDetails(location="eastus")])).result()
    reg = MLClient(cred, sub, rg, registry_name="probe-comp-reg")
    made = reg.components.create_or_update(load_component(str(work / "train.yml")))
    seen = {"id": made.id, "code": made.code.startswith("azureml://registries/probe-comp-reg/codes/"),
            "latest": reg.components.get("my_train", label="latest").version,
            "listed": [c.name for c in reg.components.list()],
            "versions": [c.version for c in reg.components.list(name="my_train")]}
    builtin = MLClient(cred, sub, rg, registry_name="azureml")
    seen["builtin"] = _error(lambda: builtin.components.create_or_update(CommandComponent(
        name="x", version="1", command="echo", environment="azureml:AzureML-sklearn-1.5@latest")))
    ml.registries.begin_delete(name="probe-comp-reg").result()
    return seen


def main(work: Path) -> None:
    cred = DefaultAzureCredential()
    sub, rg = os.environ["AMLEMU_SUBSCRIPTION_ID"], os.environ["AMLEMU_RESOURCE_GROUP"]
    ml = MLClient(cred, sub, rg, os.environ["AMLEMU_WORKSPACE"])
    seen = {"workspace": _workspace(ml, work), "registry": _registry(ml, cred, sub, rg, work)}
    print(json.dumps(seen))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
