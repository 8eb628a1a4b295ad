"""Drives job schedules through the SDK on a stack whose time scale runs a minute in a few seconds; prints what the
SDK saw as JSON. Usage: python schedule_probe.py (connection from the `amlemu env` variables).

A cron schedule with a command job makes jobs that complete; disabled, it makes no more (a second schedule, which
copies the first's job by name, keeps firing meanwhile: the proof that time passed); deleted, its jobs stay.
A command job as create_job is a private-preview feature of the SDK: AZURE_ML_CLI_PRIVATE_FEATURES_ENABLED=true.
"""

import json
import os

from azure.ai.ml import MLClient, command
from azure.ai.ml.entities import AmlCompute, CronTrigger, Environment, JobSchedule, RecurrencePattern, RecurrenceTrigger
from azure.identity import DefaultAzureCredential

from tests.waiting import wait_until  # stdlib only: importable from any venv with the repo on the path


def _client() -> MLClient:
    return MLClient(DefaultAzureCredential(), os.environ["AMLEMU_SUBSCRIPTION_ID"],
                    os.environ["AMLEMU_RESOURCE_GROUP"], os.environ["AMLEMU_WORKSPACE"])


def _made(ml: MLClient, schedule: str) -> dict[str, str]:
    return {job.name: job.status for job in ml.jobs.list(scheduled_job_name=schedule)}


def _ended(jobs: dict[str, str]) -> dict[str, str] | None:
    return jobs if jobs and all(s in ("Completed", "Failed", "Canceled") for s in jobs.values()) else None


def main() -> dict:
    ml = _client()
    ml.compute.begin_create_or_update(AmlCompute(name="cpu", size="Standard_DS2_v2", max_instances=2,
                                                 idle_time_before_scale_down=600)).result()
    job = command(command="echo scheduled at $AZUREML_RUN_ID", environment=Environment(image="python:3.11-slim"),
                  compute="cpu", experiment_name="schedules")
    made = ml.schedules.begin_create_or_update(JobSchedule(
        name="every-minute", trigger=CronTrigger(expression="* * * * *", time_zone="Pacific Standard Time"),
        create_job=job)).result()
    seen = {"created": [made.name, made.is_enabled, made.trigger.expression, made.provisioning_state]}
    done = wait_until(lambda: (jobs := _made(ml, "every-minute")) and
                      sum(s == "Completed" for s in jobs.values()) >= 2 and jobs,
                      timeout=240, interval=1, message="two jobs of the schedule to complete")
    seen["completed"] = sum(s == "Completed" for s in done.values())
    disabled = ml.schedules.begin_disable("every-minute").result()
    seen["disabled"] = disabled.is_enabled
    at_disable = set(_made(ml, "every-minute"))
    witness = ml.schedules.begin_create_or_update(JobSchedule(
        name="witness", trigger=RecurrenceTrigger(frequency="minute", interval=1,
                                                  schedule=RecurrencePattern(hours=[], minutes=[])),
        create_job=sorted(done)[0])).result()
    seen["witness"] = [witness.trigger.frequency, witness.create_job.id if witness.create_job else None]
    wait_until(lambda: len(_made(ml, "witness")) >= 2, timeout=120, interval=1,
               message="the witness schedule to fire twice")
    seen["after_disable"] = sorted(set(_made(ml, "every-minute")) - at_disable)
    seen["listed"] = {view: sorted(s.name for s in ml.schedules.list(list_view_type=view))
                      for view in ("EnabledOnly", "DisabledOnly", "All")}
    ml.schedules.begin_delete("every-minute").result()
    ml.schedules.begin_delete("witness").result()
    seen["kept_after_delete"] = len(_made(ml, "every-minute")) >= len(at_disable)
    seen["witness_jobs_complete"] = wait_until(lambda: _ended(_made(ml, "witness")), timeout=180, interval=1,
                                               message="the witness's jobs to end")
    return seen


if __name__ == "__main__":
    print(json.dumps(main()))
