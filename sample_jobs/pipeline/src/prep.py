"""Step 1, prepare: split the flowers CSV into a training and a test set (two uri_folder outputs)."""

import argparse
import csv
import os

from sklearn.model_selection import train_test_split

parser = argparse.ArgumentParser()
parser.add_argument("--raw-data", required=True)
parser.add_argument("--test-size", type=float, default=0.3)
parser.add_argument("--train-data", required=True)
parser.add_argument("--test-data", required=True)
args = parser.parse_args()

with open(args.raw_data) as f:
    rows = list(csv.DictReader(f))
train, test = train_test_split(rows, test_size=args.test_size, random_state=0,
                               stratify=[r["species"] for r in rows])
for folder, part in ((args.train_data, train), (args.test_data, test)):
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "flowers.csv"), "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(part)
print(f"{len(rows)} rows: {len(train)} to train, {len(test)} to test")
