"""What the train and evaluate steps share: read a folder's flowers.csv into features and labels."""

import csv
import os

FEATURES = ("sepal_length", "sepal_width", "petal_length", "petal_width")


def read(folder: str) -> tuple[list[list[float]], list[str]]:
    with open(os.path.join(folder, "flowers.csv")) as f:
        rows = list(csv.DictReader(f))
    return [[float(r[k]) for k in FEATURES] for r in rows], [r["species"] for r in rows]
