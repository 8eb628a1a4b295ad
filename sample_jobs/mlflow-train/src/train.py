"""Trains a classifier and logs it with MLflow the way Azure ML jobs do: no tracking URI set here (the job's
MLFLOW_* variables say where), the job is the active run. Parameters, a metric per epoch, a file and the model."""

import argparse
import json

import mlflow
import mlflow.sklearn
from sklearn.datasets import load_iris
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split

parser = argparse.ArgumentParser()
parser.add_argument("--C", type=float, default=1.0)
parser.add_argument("--epochs", type=int, default=5)
args = parser.parse_args()

X, y = load_iris(return_X_y=True, as_frame=True)
X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.3, random_state=0)

with mlflow.start_run():
    mlflow.log_params({"C": args.C, "epochs": args.epochs})
    model = LogisticRegression(C=args.C, max_iter=1, warm_start=True)
    for epoch in range(args.epochs):  # one more pass over the data each epoch: a curve to look at
        model.fit(X_train, y_train)
        mlflow.log_metric("test_accuracy", float(model.score(X_test, y_test)), step=epoch)
    accuracy = float(model.score(X_test, y_test))
    mlflow.log_metric("accuracy", accuracy)
    mlflow.log_dict({"classes": [int(c) for c in model.classes_]}, "classes.json")
    # registered as the workspace's model (an mlflow_model), as Azure ML does: ml_client.models.get("amlemu-iris")
    mlflow.sklearn.log_model(model, "model", registered_model_name="amlemu-iris")
    print(f"logged to MLflow run {mlflow.active_run().info.run_id}: accuracy {accuracy:.3f}")
    print(json.dumps({"accuracy": accuracy}))
