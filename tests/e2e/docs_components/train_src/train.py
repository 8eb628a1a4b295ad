"""Writes a model file: what the component's command runs."""

import argparse
from pathlib import Path

parser = argparse.ArgumentParser()
parser.add_argument("--training_data")
parser.add_argument("--max_epocs", type=int)
parser.add_argument("--learning_rate", type=float)
parser.add_argument("--learning_rate_schedule")
parser.add_argument("--model_output")
args = parser.parse_args()
Path(args.model_output, "model.txt").write_text(f"{args.max_epocs} epochs at {args.learning_rate}\n")
