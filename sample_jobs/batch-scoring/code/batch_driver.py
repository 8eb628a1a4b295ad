"""Batch scoring script, Azure's contract: `init()` once per worker, `run(mini_batch)` with a list of file paths,
returning one row per file (the rows go, in order, into the deployment's output file, predictions.csv).

Each input is a CSV of flower measurements (sepal_length, sepal_width, petal_length, petal_width); its row says
how many flowers the file holds and how many the model calls each species.
"""

import csv
import glob
import os
import pickle
import time
from collections import Counter

FEATURES = ("sepal_length", "sepal_width", "petal_length", "petal_width")
SPECIES = ("setosa", "versicolor", "virginica")
model = None


def init():
    global model
    # A model registered from a folder lands under AZUREML_MODEL_DIR by the folder's name: find model.pkl in it.
    path = glob.glob(os.path.join(os.environ["AZUREML_MODEL_DIR"], "**", "model.pkl"), recursive=True)[0]
    with open(path, "rb") as f:
        model = pickle.load(f)


def run(mini_batch):
    rows = []
    for path in mini_batch:
        with open(path) as f:
            flowers = [[float(r[k]) for k in FEATURES] for r in csv.DictReader(f)]
        counts = Counter(model.predict(flowers)) if flowers else Counter()
        rows.append(",".join([os.path.basename(path), str(len(flowers))] + [str(counts[s]) for s in SPECIES]))
        # slows scoring so that a node can be preempted mid-run (score.py --preempt sets it); 0 by default
        time.sleep(float(os.environ.get("SECONDS_PER_FILE", "0")))  # noqa: TID251 (the work being stood in for)
    return rows
