"""The parallel run's shared folder: how a job's ranks split the work with no service between them, and how a rerun
of the job (a new attempt, after a preemption or a lost node) finds what was done.

It lives in the job's `logs/` (every rank's container mounts the same folder, kept across attempts), under
`sys/mini_batches/`:
- `plan.json`: the mini-batches, made once by the first rank to get there (an exclusive link), read by the others
  and by every later attempt, so a rerun cuts the input the same way;
- `claims/<attempt>/<index>`: a mini-batch taken by a rank of that attempt (an exclusive create: one rank has it);
  a rerun's attempt starts with no claims, so what a lost node held is taken again;
- `results/<index>.json`: a mini-batch's outcome and rows, renamed into place whole; a mini-batch with a result is
  never run again, so every item is scored once;
- `ranks/<attempt>/<rank>`: a rank of that attempt has ended (rank 0 waits for all before it writes the output).
"""

from __future__ import annotations  # the user's Python may be older than 3.10

import json
import os
from collections.abc import Callable
from pathlib import Path

import amlemu_parallel_rules as rules  # beside this file in the job's container (in_job/__init__.py)

STATE = "sys/mini_batches"


def write_whole(path: Path, text: str) -> None:
    """Written to a draft, then renamed: a reader sees the old file or the new one, never half of one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    draft = path.with_name(f".{path.name}.{os.getpid()}.draft")
    draft.write_text(text)
    draft.replace(path)


def append(path: Path, text: str) -> None:
    """One write on a file opened to append: lines from several processes and ranks do not interleave."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


class SharedFolder:
    def __init__(self, logs: Path, attempt: str, rank: int):
        self.logs, self.attempt, self.rank = logs, attempt, rank
        self.state = logs / STATE
        self.claims = self.state / "claims" / attempt
        self.results_dir = self.state / "results"
        self.ranks = self.state / "ranks" / attempt
        self._seen: dict[int, rules.Outcome] = {}
        for folder in (self.claims, self.results_dir, self.ranks):
            folder.mkdir(parents=True, exist_ok=True)

    def plan(self, make: Callable[[], list[rules.MiniBatch]]) -> list[rules.MiniBatch]:
        """The plan made once: whoever links it first wins, everyone (every attempt) reads that one."""
        path = self.state / "plan.json"
        if not path.exists():
            draft = self.state / f".plan.{self.rank}.{os.getpid()}.draft"
            draft.write_text(json.dumps([b.to_json() for b in make()]))
            try:
                os.link(draft, path)
            except FileExistsError:
                pass
            finally:
                draft.unlink()
        return [rules.MiniBatch.from_json(b) for b in json.loads(path.read_text())]

    def claim(self, index: int) -> bool:
        """Take a mini-batch for this rank, unless it has a result or another rank of this attempt took it."""
        if (self.results_dir / f"{index}.json").exists():
            return False
        try:
            fd = os.open(self.claims / str(index), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            return False
        os.write(fd, str(self.rank).encode())
        os.close(fd)
        # a rank of an earlier attempt, still ending, may have written it meanwhile: then it is done
        return not (self.results_dir / f"{index}.json").exists()

    def record(self, outcome: rules.Outcome, rows: str) -> None:
        write_whole(self.results_dir / f"{outcome.index}.json", json.dumps({**outcome.to_json(), "rows": rows}))

    def outcomes(self) -> dict[int, rules.Outcome]:
        """Every result written so far (each file read once: results never change)."""
        for name in os.listdir(self.results_dir):
            if name.endswith(".json") and not name.startswith("."):
                index = int(name[:-len(".json")])
                if index not in self._seen:
                    self._seen[index] = rules.Outcome.from_json(self._read(index))
        return dict(self._seen)

    def rows(self, index: int) -> str:
        return self._read(index)["rows"]

    def _read(self, index: int) -> dict:
        return json.loads((self.results_dir / f"{index}.json").read_text())

    def rank_ended(self) -> None:
        write_whole(self.ranks / str(self.rank), "ended\n")

    def ranks_ended(self) -> set[int]:
        return {int(name) for name in os.listdir(self.ranks) if name.isdigit()}
