"""Train a scikit-learn classifier on a CSV input and write the model to the job's outputs.

Runs the same on Azure ML and on amlemu: the data arrives as a mounted uri_file input, the model goes to
the named output `model` (and a copy to ./outputs, which Azure ML keeps with the job's artifacts).
"""

import argparse
import csv
import json
import os
import pickle

from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split

parser = argparse.ArgumentParser()
parser.add_argument("--data", required=True)
parser.add_argument("--C", type=float, default=1.0)
parser.add_argument("--model", required=True)
args = parser.parse_args()

with open(args.data) as f:
    rows = list(csv.DictReader(f))
features = [[float(r[k]) for k in ("sepal_length", "sepal_width", "petal_length", "petal_width")] for r in rows]
labels = [r["species"] for r in rows]
x_train, x_test, y_train, y_test = train_test_split(features, labels, test_size=0.3, random_state=0)

model = LogisticRegression(C=args.C, max_iter=500).fit(x_train, y_train)
accuracy = model.score(x_test, y_test)
print(f"trained on {len(x_train)} rows, test accuracy {accuracy:.3f}")

os.makedirs(args.model, exist_ok=True)
with open(os.path.join(args.model, "model.pkl"), "wb") as f:
    pickle.dump(model, f)
os.makedirs("outputs", exist_ok=True)
with open("outputs/metrics.json", "w") as f:
    json.dump({"accuracy": accuracy, "C": args.C}, f)
