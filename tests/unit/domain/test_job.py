"""The job status machine, the cancel rule and command placeholders."""

import pytest

from emulator.domain.jobs import placeholders
from emulator.domain.jobs.status import TERMINAL, advance, is_terminal, on_cancel
from emulator.domain.jobs.status import JobStatus as S
from emulator.errors import InvalidTransition, ValidationFailed

HAPPY_PATH = [S.NOT_STARTED, S.STARTING, S.PREPARING, S.QUEUED, S.RUNNING, S.FINALIZING, S.COMPLETED]


def test_the_happy_path_is_azures_order():
    status = HAPPY_PATH[0]
    for target in HAPPY_PATH[1:]:
        status = advance(status, target)
    assert status == S.COMPLETED and is_terminal(status)


@pytest.mark.parametrize("current,target", [
    (S.NOT_STARTED, S.RUNNING), (S.QUEUED, S.COMPLETED), (S.PREPARING, S.RUNNING), (S.FINALIZING, S.RUNNING),
    (S.CANCEL_REQUESTED, S.RUNNING), (S.QUEUED, S.QUEUED)])
def test_skipping_or_going_back_is_refused(current, target):
    with pytest.raises(InvalidTransition) as err:
        advance(current, target)
    assert err.value.status == 409 and err.value.target == "status"


@pytest.mark.parametrize("ended", sorted(TERMINAL))
@pytest.mark.parametrize("target", [S.RUNNING, S.FAILED, S.CANCELED, S.QUEUED])
def test_an_ended_job_never_moves(ended, target):
    with pytest.raises(InvalidTransition):
        advance(ended, target)


@pytest.mark.parametrize("current", [s for s in HAPPY_PATH if s not in TERMINAL])
def test_failure_and_cancel_request_reach_every_live_status(current):
    assert advance(current, S.FAILED) == S.FAILED
    assert advance(current, S.CANCEL_REQUESTED) == S.CANCEL_REQUESTED


def test_a_preempted_attempt_goes_back_to_queued():
    assert advance(S.RUNNING, S.QUEUED) == S.QUEUED


@pytest.mark.parametrize("current,after", [
    (S.NOT_STARTED, S.CANCELED), (S.STARTING, S.CANCELED), (S.PREPARING, S.CANCELED), (S.QUEUED, S.CANCELED),
    (S.RUNNING, S.CANCEL_REQUESTED), (S.FINALIZING, S.CANCEL_REQUESTED),
    (S.CANCEL_REQUESTED, S.CANCEL_REQUESTED), (S.COMPLETED, S.COMPLETED), (S.FAILED, S.FAILED),
    (S.CANCELED, S.CANCELED)])
def test_cancel(current, after):
    assert on_cancel(current) == after


INPUTS = {"x": {"jobInputType": "literal", "value": "3"}, "data": {"jobInputType": "uri_folder"}}
OUTPUTS = {"model": {"jobOutputType": "uri_folder"}}


def test_references_and_check_accept_declared_names():
    command = "python train.py --x ${{inputs.x}} --data ${{ inputs.data }} --out ${{outputs.model}}"
    assert placeholders.references(command) == {("inputs", "x"), ("inputs", "data"), ("outputs", "model")}
    placeholders.check(command, INPUTS, OUTPUTS)


@pytest.mark.parametrize("command,named", [
    ("python a.py ${{inputs.y}}", "inputs.y"),
    ("python a.py ${{outputs.nope}}", "outputs.nope"),
    ("python a.py ${{inputs.x}} ${{inputs.zz}} ${{outputs.model}}", "inputs.zz"),
])
def test_check_names_what_is_undeclared(command, named):
    with pytest.raises(ValidationFailed) as err:
        placeholders.check(command, INPUTS, OUTPUTS)
    assert named in err.value.message and err.value.target == "properties.command"


def test_optional_parts_may_name_missing_inputs():
    placeholders.check("python a.py $[[--lr ${{inputs.lr}}]]", INPUTS, OUTPUTS)


def test_resolve_substitutes_verbatim_and_drops_optional_parts_without_values():
    command = "python a.py --x ${{inputs.x}} $[[--lr ${{inputs.lr}}]] --out ${{outputs.model}}"
    values = {"inputs": {"x": "3"}, "outputs": {"model": "/mnt/outputs/model"}}
    assert placeholders.resolve(command, values) == "python a.py --x 3  --out /mnt/outputs/model"
    values["inputs"]["lr"] = "0.01"
    assert placeholders.resolve(command, values) == "python a.py --x 3 --lr 0.01 --out /mnt/outputs/model"


def test_resolve_refuses_a_reference_without_value():
    with pytest.raises(ValidationFailed):
        placeholders.resolve("echo ${{inputs.missing}}", {"inputs": {}})
