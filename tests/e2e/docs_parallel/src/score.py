# A scoring script as Microsoft's parallel-job docs write one: init() once per worker, run(mini_batch) per
# mini-batch of file paths, one returned row per file. It fails the first try of img04.txt, to show the retry.
import argparse
import os
from pathlib import Path


def init():
    global suffix
    parser = argparse.ArgumentParser()
    parser.add_argument("--suffix", default="scored")
    suffix = parser.parse_known_args()[0].suffix
    print("init in process", os.getpid(), flush=True)


def run(mini_batch):
    rows = []
    for path in mini_batch:
        name = os.path.basename(path)
        mark = Path("outputs") / f"tried-{name}"
        if name == "img04.txt" and not mark.exists():
            mark.write_text("once")
            raise RuntimeError(f"a transient failure on {name}")
        rows.append(f"{name} {Path(path).read_text().strip()} {suffix}")
    return rows
