"""What the parallel run reads: the input's items (a uri_folder's files, one uri_file, or an mltable's rows) and
what run() gets for a mini-batch of them (a list of file paths, or a pandas DataFrame of the rows).

An mltable folder's `MLTable` file names its files (`paths:` with `file`, `folder` or `pattern` entries) and how
they read (`read_delimited` with a `delimiter`, `read_parquet`); with no MLTable file, the folder's .csv and .parquet
files are the table. PyYAML reads the MLTable file when the environment has it (mltable needs it); otherwise its
few lines are read here.
"""

from __future__ import annotations  # the user's Python may be older than 3.10

import csv
import fnmatch
import os
from pathlib import Path

import amlemu_parallel_rules as rules

TABULAR = "mltable"
_TABLE_SUFFIXES = (".csv", ".tsv", ".txt", ".parquet")


def files(root: Path, input_type: str) -> list[str]:
    """Relative paths of the input's files, hidden ones left out ("" for a uri_file: the file itself)."""
    if input_type == "uri_file" or root.is_file():
        return [""]
    found = []
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        found += [os.path.relpath(os.path.join(folder, n), root) for n in names if not n.startswith(".")]
    return sorted(found)


def path_of(root: Path, relative: str) -> str:
    return str(root) if relative == "" else str(root / relative)


def _mltable_spec(root: Path) -> dict:
    text = (root / "MLTable").read_text()
    try:
        import yaml
        return yaml.safe_load(text) or {}
    except ImportError:
        return _read_spec_lines(text)


def _read_spec_lines(text: str) -> dict:
    """The MLTable keys the runner uses, read line by line: `- file|folder|pattern: x`, `delimiter: x`, `read_parquet`."""
    paths, options, kind = [], {}, "read_delimited"
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        key, _, value = line.lstrip("- ").partition(":")
        value = value.strip().strip("'\"")
        if line.startswith("-") and key in ("file", "folder", "pattern") and value:
            paths.append({key: value})
        elif key in ("read_parquet", "read_delimited"):
            kind = key
        elif key == "delimiter" and value:
            options["delimiter"] = value
    return {"paths": paths, "transformations": [{kind: options}]}


class Table:
    """An input's tabular files and how they read."""

    def __init__(self, root: Path):
        self.root, self.delimiter, self.parquet = root, ",", False
        if (root / "MLTable").is_file():
            spec = _mltable_spec(root)
            for step in spec.get("transformations") or []:
                name, options = next(iter(step.items())) if isinstance(step, dict) else (step, {})
                self.parquet = self.parquet or name == "read_parquet"
                self.delimiter = (options or {}).get("delimiter", self.delimiter)
            self.paths = self._listed(spec.get("paths") or [])
        else:
            self.paths = [p for p in files(root, "uri_folder") if p.lower().endswith(_TABLE_SUFFIXES)]
            self.parquet = bool(self.paths) and all(p.lower().endswith(".parquet") for p in self.paths)

    def _listed(self, entries: list) -> list[str]:
        every = [p for p in files(self.root, "uri_folder") if p != "MLTable"]
        chosen = []
        for entry in entries:
            kind, value = next(iter(entry.items()))
            value = os.path.normpath(value.split("://")[-1] if "://" in value else value)
            if kind == "file":
                chosen += [p for p in every if p == value]
            elif kind == "folder":
                chosen += [p for p in every if value in (".", "") or p.startswith(value.rstrip("/") + "/")]
            else:
                chosen += [p for p in every if fnmatch.fnmatch(p, value)]
        return sorted(set(chosen))

    def tables(self) -> list[rules.Table]:
        return [rules.Table(p, self._rows(p), (self.root / p).stat().st_size) for p in self.paths]

    def _rows(self, relative: str) -> int:
        path = self.root / relative
        if self.parquet:
            import pandas
            return len(pandas.read_parquet(path))
        with open(path, newline="") as handle:
            return max(0, sum(1 for _ in csv.reader(handle, delimiter=self.delimiter)) - 1)  # less the header

    def frame(self, batch: rules.MiniBatch, cache: dict):
        """The mini-batch's rows as one DataFrame (each file read once per worker)."""
        import pandas
        pieces = []
        for part in batch.parts:
            if part.path not in cache:
                path = self.root / part.path
                cache[part.path] = (pandas.read_parquet(path) if self.parquet
                                    else pandas.read_csv(path, sep=self.delimiter))
            pieces.append(cache[part.path].iloc[part.start:part.stop])
        return pandas.concat(pieces, ignore_index=True) if pieces else pandas.DataFrame()


def plan(root: Path, input_type: str, size: int | None, size_bytes: int | None) -> list[rules.MiniBatch]:
    if input_type == TABULAR:
        return rules.plan_rows(Table(root).tables(), size, size_bytes)
    found = files(root, input_type)
    if size is None:
        return rules.plan_file_sizes({p: os.path.getsize(path_of(root, p)) for p in found}, size_bytes or 1)
    return rules.plan_files(found, size)
