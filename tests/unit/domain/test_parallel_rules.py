"""The parallel run's pure rules: mini-batch planning, retries, thresholds, rows and the progress overview."""

import ast
from pathlib import Path

import pytest

from emulator.domain.jobs import parallel_rules as rules
from emulator.domain.jobs.parallel_rules import MiniBatch, Outcome, Part, Table


def paths(batch: MiniBatch) -> list[str]:
    return [p.path for p in batch.parts]


def test_files_are_cut_by_count_in_path_order():
    batches = rules.plan_files([f"d/{n}.txt" for n in "edcba"] + ["z.txt", "a.txt"], 3)
    assert [paths(b) for b in batches] == [["a.txt", "d/a.txt", "d/b.txt"], ["d/c.txt", "d/d.txt", "d/e.txt"],
                                           ["z.txt"]]
    assert [b.index for b in batches] == [0, 1, 2] and [b.items for b in batches] == [3, 3, 1]


def test_one_uri_file_is_one_mini_batch_and_no_files_none():
    assert [paths(b) for b in rules.plan_files([""], 10)] == [[""]]
    assert rules.plan_files([], 10) == []


def test_files_given_a_size_hold_as_many_as_fit_at_least_one_each():
    sizes = {"a": 400, "b": 400, "c": 400, "d": 5000, "e": 10}
    assert [paths(b) for b in rules.plan_file_sizes(sizes, 1024)] == [["a", "b"], ["c"], ["d"], ["e"]]


def test_rows_by_count_fill_a_mini_batch_across_files():
    batches = rules.plan_rows([Table("b.csv", 3, 30), Table("a.csv", 4, 40)], rows=3, size=None)
    assert [list(b.parts) for b in batches] == [
        [Part("a.csv", 0, 3)], [Part("a.csv", 3, 4), Part("b.csv", 0, 2)], [Part("b.csv", 2, 3)]]
    assert [b.items for b in batches] == [3, 3, 1]


def test_rows_by_size_take_the_estimated_bytes_of_a_row():
    # 100 rows in 10 kB: 100 bytes a row, so 1 kB holds 10 rows; a size below a row still takes one
    assert [b.items for b in rules.plan_rows([Table("t.csv", 100, 10_000)], rows=None, size=1024)] == [10] * 10
    assert len(rules.plan_rows([Table("t.csv", 5, 10_000)], rows=None, size=10)) == 5
    assert rules.plan_rows([Table("empty.csv", 0, 20)], rows=None, size=1024) == []


def test_a_plan_survives_its_json():
    batch = MiniBatch(4, (Part("a.csv", 0, 3), Part("b.csv", 0, None)), 7)
    assert MiniBatch.from_json(batch.to_json()) == batch


@pytest.mark.parametrize(("tries", "max_retries", "again"), [(1, 0, False), (1, 3, True), (3, 3, True),
                                                             (4, 3, False), (1, -1, False)])
def test_a_failed_try_is_followed_by_max_retries_more(tries, max_retries, again):
    assert rules.try_again(tries, max_retries) is again


def test_failed_items_are_a_failed_mini_batch_s_all_or_the_rows_run_did_not_return():
    assert Outcome(0, 10, 0, 4, "ValueError: bad").failed_items == 10
    assert Outcome(1, 10, 7, 1).failed_items == 3
    assert Outcome(2, 10, 12, 1).failed_items == 0


@pytest.mark.parametrize(("error_threshold", "batch_threshold", "stop"), [
    (-1, -1, False), (12, -1, False), (11, -1, True), (-1, 1, False), (-1, 0, True), (20, 0, True)])
def test_thresholds_stop_the_job_when_passed_and_minus_one_ignores(error_threshold, batch_threshold, stop):
    outcomes = [Outcome(0, 10, 0, 3, "boom"), Outcome(1, 10, 8, 1), Outcome(2, 10, 10, 2)]
    result = rules.verdict(outcomes, error_threshold, batch_threshold)
    assert (result.failed_items, result.failed_batches, result.stop) == (12, (0,), stop)


def test_the_failure_names_the_threshold_and_the_mini_batches():
    outcomes = [Outcome(3, 2, 0, 2, "Traceback ...\nValueError: no such row"), Outcome(1, 2, 2, 1)]
    message = rules.failure_message(rules.verdict(outcomes, 0, -1), outcomes)
    assert "2 failed items exceed error_threshold 0" in message
    assert "mini-batch 3 (ValueError: no such row)" in message


def test_a_list_s_elements_are_lines_and_a_sequence_s_items_are_spaced():
    assert rules.rows_text(["a.png cat", ("b.png", 0.5), 7, "two\nlines"]) == "a.png cat\nb.png 0.5\n7\ntwo lines\n"


def test_the_overview_counts_what_is_done():
    outcomes = [Outcome(0, 10, 10, 1), Outcome(1, 5, 0, 4, "boom")]
    text = rules.overview(3, outcomes, rules.verdict(outcomes, -1, -1), finished=False)
    assert "Total mini batches: 3" in text and "Processed mini batches: 2 (succeeded: 1, failed: 1)" in text
    assert "Processed items: 15 (failed: 5)" in text and "The job is running." in text


def test_the_rules_need_only_the_standard_library():
    """They are copied into jobs' containers, where nothing of the emulator is installed."""
    source = Path(rules.__file__).read_text()
    imported = {alias.name.split(".")[0] for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Import)
                for alias in node.names}
    imported |= {node.module.split(".")[0] for node in ast.walk(ast.parse(source))
                 if isinstance(node, ast.ImportFrom) and node.module}
    assert imported <= {"__future__", "collections", "dataclasses"}


def test_allowed_failed_percent_is_a_share_of_all_items():
    outcomes = [Outcome(0, 10, 7, 1), Outcome(1, 10, 10, 1)]  # 3 of 40 items failed: 7.5 %
    assert not rules.verdict(outcomes, -1, -1, allowed_failed_percent=10, total_items=40).stop
    stopped = rules.verdict(outcomes, -1, -1, allowed_failed_percent=5, total_items=40)
    assert stopped.stop and "3 failed items of 40 exceed allowed_failed_percent 5" in stopped.reason
