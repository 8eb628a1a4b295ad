"""A sweep trial: logs `accuracy` = C / 10 once a second for a few steps (the job is its MLflow run)."""

import sys
import threading

import mlflow

C, steps = float(sys.argv[1]), int(sys.argv[2])
with mlflow.start_run():
    for step in range(steps):
        mlflow.log_metric("accuracy", C / 10, step=step)
        threading.Event().wait(1)  # a second between steps
print(f"trial C={C} done")
