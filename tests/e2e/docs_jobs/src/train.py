"""A small scikit-learn training script, as the docs' examples write them: it needs the curated environment's
packages (scikit-learn, pandas, MLflow) and writes its model under ./outputs."""

import argparse
import json
import os

import mlflow
import pandas as pd
import sklearn
from sklearn.datasets import load_iris
from sklearn.linear_model import LogisticRegression

parser = argparse.ArgumentParser()
parser.add_argument("--C", type=float, default=1.0)
args = parser.parse_args()
X, y = load_iris(return_X_y=True, as_frame=True)
model = LogisticRegression(C=args.C, max_iter=500).fit(X, y)
accuracy = float(model.score(X, y))
print(f"scikit-learn {sklearn.__version__}, pandas {pd.__version__}, mlflow {mlflow.__version__}: "
      f"training accuracy {accuracy:.3f}")
os.makedirs("outputs", exist_ok=True)
with open("outputs/metrics.json", "w") as out:
    json.dump({"accuracy": accuracy}, out)
