"""Azure ML's scoring contract: init() once per server, run() per request.

AZUREML_MODEL_DIR is the registered model's folder: the `model` output of ../sklearn-train, with model.pkl in
it (Azure may nest it one folder deeper, under the output's name, so it is looked for).
"""

import json
import os
import pickle
from pathlib import Path

model = None


def init():
    global model
    path = next(Path(os.environ["AZUREML_MODEL_DIR"]).rglob("model.pkl"))
    model = pickle.loads(path.read_bytes())
    print(f"loaded {path}")


def run(raw_data):
    rows = json.loads(raw_data)["data"]
    return {"predictions": model.predict(rows).tolist(), "deployment": os.environ.get("DEPLOYMENT_COLOR")}
