"""Copies the model's description next to the test data's file names: what the component's command runs."""

import argparse
import os
from pathlib import Path

parser = argparse.ArgumentParser()
parser.add_argument("--model_input")
parser.add_argument("--test_data")
parser.add_argument("--score_output")
args = parser.parse_args()
model = Path(args.model_input, "model.txt").read_text()
Path(args.score_output, "scores.txt").write_text(model + "\n".join(sorted(os.listdir(args.test_data))) + "\n")
