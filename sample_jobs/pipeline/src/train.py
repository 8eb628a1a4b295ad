"""Step 2, train: fit a classifier on the training set, log its cross-validated accuracy with MLflow (the
step's job is the active run), and write the model to the `model` output."""

import argparse
import os
import pickle

import mlflow
from flowers import read
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import cross_val_score

parser = argparse.ArgumentParser()
parser.add_argument("--train-data", required=True)
parser.add_argument("--C", type=float, default=1.0)
parser.add_argument("--max-iter", type=int, default=200)
parser.add_argument("--model", required=True)
args = parser.parse_args()

features, labels = read(args.train_data)
model = LogisticRegression(C=args.C, max_iter=args.max_iter)
accuracy = float(cross_val_score(model, features, labels, cv=5).mean())
model.fit(features, labels)

with mlflow.start_run():
    mlflow.log_params({"C": args.C, "max_iter": args.max_iter})
    mlflow.log_metric("accuracy", accuracy)
print(f"trained on {len(labels)} rows, cross-validated accuracy {accuracy:.3f}")

os.makedirs(args.model, exist_ok=True)
with open(os.path.join(args.model, "model.pkl"), "wb") as f:
    pickle.dump(model, f)
