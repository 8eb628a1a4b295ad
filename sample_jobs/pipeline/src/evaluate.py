"""Step 3, evaluate: score the model on the test set and write metrics.json to the `metrics` output."""

import argparse
import json
import os
import pickle

from flowers import read
from sklearn.metrics import accuracy_score, f1_score

parser = argparse.ArgumentParser()
parser.add_argument("--model", required=True)
parser.add_argument("--test-data", required=True)
parser.add_argument("--metrics", required=True)
args = parser.parse_args()

with open(os.path.join(args.model, "model.pkl"), "rb") as f:
    model = pickle.load(f)
features, labels = read(args.test_data)
predicted = model.predict(features)
metrics = {"test_accuracy": accuracy_score(labels, predicted),
           "test_f1_macro": f1_score(labels, predicted, average="macro"), "test_rows": len(labels)}

os.makedirs(args.metrics, exist_ok=True)
with open(os.path.join(args.metrics, "metrics.json"), "w") as f:
    json.dump(metrics, f, indent=2)
print(json.dumps(metrics))
