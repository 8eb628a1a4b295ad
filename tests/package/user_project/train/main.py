"""A user's training step: reads its data input, writes a model to ./outputs."""

import sys
from pathlib import Path

rows = Path(sys.argv[1]).read_text().split()[1:]
mean = sum(float(r) for r in rows) / len(rows)
Path("outputs").mkdir(exist_ok=True)
Path("outputs/model.txt").write_text(f"mean={mean}\n")
print(f"trained on {len(rows)} rows: mean={mean}")
