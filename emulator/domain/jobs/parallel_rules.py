"""The parallel run's rules, as Azure ML's parallel run step applies them: how the input is cut into mini-batches,
when a mini-batch is tried again, when failures stop the job, how returned rows are written, and what the progress
overview says. Pure.

Standard library only, and nothing of the emulator: this module is copied beside the runner (emulator/in_job/) into
the job's container, where it runs on the user's Python (see in_job/__init__.py).

- File input (a uri_folder's files, or one uri_file): `mini_batch_size` files per mini-batch, in path order (or,
  given a size, as many files as it holds).
- Tabular input (mltable): rows, `mini_batch_size` of them, or as many as fit in `mini_batch_bytes` judged by the
  estimated physical size of a row (its file's size over its row count), as Azure estimates; a mini-batch may span
  files.
- A mini-batch that raises or outlives `timeout` is tried again, up to `max_retries` more times; after that its items
  all count as failed. A mini-batch whose run() returns fewer rows than it had items has that many failed items.
- Failed items over `error_threshold`, or failed mini-batches over `mini_batch_error_threshold`, stop the job; -1
  tolerates any number.
"""

from __future__ import annotations  # the user's Python may be older than 3.10

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

UNLIMITED = -1


@dataclass(frozen=True)
class Part:
    """A piece of one input file: the whole file, or rows [start, stop) of a table."""
    path: str  # relative to the input's root ("" for a uri_file: the file itself)
    start: int = 0
    stop: int | None = None  # None: the whole file


@dataclass(frozen=True)
class MiniBatch:
    index: int
    parts: tuple[Part, ...]
    items: int  # files, or rows

    def to_json(self) -> dict:
        return {"index": self.index, "items": self.items,
                "parts": [[p.path, p.start, p.stop] for p in self.parts]}

    @staticmethod
    def from_json(value: dict) -> "MiniBatch":
        return MiniBatch(value["index"], tuple(Part(*p) for p in value["parts"]), value["items"])


def plan_files(paths: Iterable[str], per_batch: int) -> list[MiniBatch]:
    """`per_batch` files per mini-batch, in path order (Azure's order is the listing's: a sorted one is stable)."""
    ordered = sorted(paths)
    return [MiniBatch(i, tuple(Part(p) for p in ordered[at:at + per_batch]), len(ordered[at:at + per_batch]))
            for i, at in enumerate(range(0, len(ordered), per_batch))]


def plan_file_sizes(sizes: dict[str, int], per_batch_bytes: int) -> list[MiniBatch]:
    """File input given a size rather than a count: files in path order, as many as fit (at least one each)."""
    batches: list[list[str]] = []
    room = 0
    for path in sorted(sizes):
        if not batches or sizes[path] > room:
            batches.append([])
            room = per_batch_bytes
        batches[-1].append(path)
        room -= sizes[path]
    return [MiniBatch(i, tuple(Part(p) for p in paths), len(paths)) for i, paths in enumerate(batches)]


@dataclass(frozen=True)
class Table:
    path: str
    rows: int
    size: int  # bytes


def rows_per_batch(table: Table, rows: int | None, size: int | None) -> int:
    """A count of rows, or as many rows as `size` bytes hold at this table's estimated bytes per row."""
    if rows is not None:
        return rows
    per_row = table.size / table.rows if table.rows else 1
    return max(1, int((size or 0) // max(per_row, 1)))


def plan_rows(tables: Sequence[Table], rows: int | None, size: int | None) -> list[MiniBatch]:
    """Mini-batches of rows over the tables in path order; a mini-batch is filled from the next file when one ends."""
    batches: list[MiniBatch] = []
    parts: list[Part] = []
    room = 0
    for table in sorted(tables, key=lambda t: t.path):
        at, quota = 0, rows_per_batch(table, rows, size)
        while at < table.rows:
            if not parts:
                room = quota
            take = min(room, table.rows - at)
            parts.append(Part(table.path, at, at + take))
            at, room = at + take, room - take
            if room == 0:
                batches.append(_rows_batch(len(batches), parts))
                parts = []
    if parts:
        batches.append(_rows_batch(len(batches), parts))
    return batches


def _rows_batch(index: int, parts: list[Part]) -> MiniBatch:
    return MiniBatch(index, tuple(parts), sum((p.stop or 0) - p.start for p in parts))


def tries_allowed(max_retries: int) -> int:
    """The first try and `max_retries` more."""
    return 1 + max(0, max_retries)


def try_again(tries: int, max_retries: int) -> bool:
    """After `tries` failed tries (an exception or a timeout), whether the mini-batch gets another."""
    return tries < tries_allowed(max_retries)


@dataclass(frozen=True)
class Outcome:
    """A mini-batch's final result."""
    index: int
    items: int
    succeeded: int  # rows run() returned (at most `items` count as successes)
    tries: int
    error: str | None = None  # why it failed every try; None: run() returned

    @property
    def failed(self) -> bool:
        return self.error is not None

    @property
    def failed_items(self) -> int:
        return self.items if self.failed else max(0, self.items - self.succeeded)

    def to_json(self) -> dict:
        return {"index": self.index, "items": self.items, "succeeded": self.succeeded, "tries": self.tries,
                "error": self.error}

    @staticmethod
    def from_json(value: dict) -> "Outcome":
        return Outcome(value["index"], value["items"], value["succeeded"], value["tries"], value.get("error"))


def over(count: int, threshold: int) -> bool:
    return threshold != UNLIMITED and count > threshold


@dataclass(frozen=True)
class Verdict:
    failed_items: int
    failed_batches: tuple[int, ...]  # their indexes, in order
    stop: bool  # a threshold is passed: the job fails
    reason: str | None


def verdict(outcomes: Iterable[Outcome], error_threshold: int, mini_batch_error_threshold: int,
            allowed_failed_percent: float | None = None, total_items: int = 0) -> Verdict:
    """`allowed_failed_percent` (a parallel job's program argument, as Azure reads it): failed items tolerated as a
    share of all `total_items`."""
    done = sorted(outcomes, key=lambda o: o.index)
    items = sum(o.failed_items for o in done)
    batches = tuple(o.index for o in done if o.failed)
    reasons = []
    if over(items, error_threshold):
        reasons.append(f"{items} failed items exceed error_threshold {error_threshold}")
    if allowed_failed_percent is not None and total_items and items * 100 > allowed_failed_percent * total_items:
        reasons.append(f"{items} failed items of {total_items} exceed allowed_failed_percent {allowed_failed_percent:g}")
    if over(len(batches), mini_batch_error_threshold):
        reasons.append(f"{len(batches)} failed mini-batches exceed mini_batch_error_threshold "
                       f"{mini_batch_error_threshold}")
    return Verdict(items, batches, bool(reasons), "; ".join(reasons) or None)


def failure_message(result: Verdict, outcomes: Sequence[Outcome]) -> str:
    """What the job's error says: the threshold passed and the mini-batches that failed, with their errors."""
    errors = {o.index: o.error for o in outcomes if o.failed}
    named = ", ".join(f"mini-batch {i} ({(errors[i] or '').splitlines()[-1][:200] if errors[i] else 'failed'})"
                      for i in result.failed_batches[:10])
    more = f" and {len(result.failed_batches) - 10} more" if len(result.failed_batches) > 10 else ""
    failed = f" Failed: {named}{more}." if named else ""
    return f"The parallel run stopped: {result.reason}.{failed} See logs/user/error.txt and logs/job_progress_overview.txt."


def row_text(value: object) -> str:
    """One returned element as one line: a list or tuple's items separated by spaces, anything else as str()."""
    if isinstance(value, (list, tuple)):
        return " ".join(str(v) for v in value)
    return str(value).replace("\r\n", " ").replace("\n", " ")


def rows_text(values: Iterable[object]) -> str:
    return "".join(row_text(v) + "\n" for v in values)


def overview(total: int, outcomes: Sequence[Outcome], result: Verdict, finished: bool) -> str:
    """logs/job_progress_overview.txt: mini-batches made and processed, items, and the end."""
    processed = len(outcomes)
    succeeded = sum(1 for o in outcomes if not o.failed)
    items = sum(o.items for o in outcomes)
    lines = [f"Total mini batches: {total}",
             f"Processed mini batches: {processed} (succeeded: {succeeded}, failed: {processed - succeeded})",
             f"Processed items: {items} (failed: {result.failed_items})",
             f"Retried mini batches: {sum(1 for o in outcomes if o.tries > 1)}"]
    if result.stop:
        lines.append(f"The job failed: {result.reason}.")
    elif finished:
        lines.append("The job completed: every mini batch was processed.")
    else:
        lines.append("The job is running.")
    return "\n".join(lines) + "\n"
