"""What the parallel runner reads of its input, imported as a job's container imports it (installed, by its installed
name): a folder's files, one file, and an mltable's tables (its MLTable file read with PyYAML or without)."""

import importlib
import sys

import pytest

from emulator import in_job

MLTABLE = """\
type: mltable
paths:
  - pattern: ./part-*.csv   # both parts
  - file: ./extra.csv
transformations:
  - read_delimited:
      delimiter: ';'
      header: all_files_same_headers
"""


@pytest.fixture
def inputs(tmp_path):
    folder = in_job.install(tmp_path / "runner")
    sys.path.insert(0, str(folder))
    try:
        yield importlib.import_module("amlemu_parallel_inputs")
    finally:
        sys.path.remove(str(folder))
        for name in [n for n in sys.modules if n.startswith("amlemu_parallel")]:
            del sys.modules[name]


def test_a_folder_s_files_are_its_items_hidden_ones_left_out(inputs, tmp_path):
    data = tmp_path / "data"
    (data / "sub").mkdir(parents=True)
    for name in ("b.txt", "a.txt", "sub/c.txt", ".hidden"):
        (data / name).write_text("x")
    (data / ".cache").mkdir()
    (data / ".cache" / "d.txt").write_text("x")
    assert inputs.files(data, "uri_folder") == ["a.txt", "b.txt", "sub/c.txt"]
    assert inputs.files(data / "a.txt", "uri_file") == [""]
    assert [b.items for b in inputs.plan(data, "uri_folder", 2, None)] == [2, 1]


@pytest.mark.parametrize("with_yaml", [True, False])
def test_an_mltable_s_rows_are_its_items(inputs, tmp_path, monkeypatch, with_yaml):
    if not with_yaml:  # an environment without PyYAML: the MLTable file's few lines are read by hand
        monkeypatch.setitem(sys.modules, "yaml", None)
    table = tmp_path / "table"
    table.mkdir()
    (table / "MLTable").write_text(MLTABLE)
    (table / "part-1.csv").write_text("a;b\n1;2\n3;4\n5;6\n")
    (table / "part-2.csv").write_text('a;b\n7;"multi\nline"\n')
    (table / "extra.csv").write_text("a;b\n9;10\n")
    (table / "ignored.csv").write_text("a;b\n0;0\n")
    found = inputs.Table(table)
    assert found.paths == ["extra.csv", "part-1.csv", "part-2.csv"] and found.delimiter == ";"
    assert [(t.path, t.rows) for t in found.tables()] == [("extra.csv", 1), ("part-1.csv", 3), ("part-2.csv", 1)]
    assert [b.items for b in inputs.plan(table, "mltable", 2, None)] == [2, 2, 1]


def test_a_folder_of_csv_files_without_an_mltable_file_is_the_table(inputs, tmp_path):
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "x.csv").write_text("a\n1\n2\n")
    (tmp_path / "t" / "notes.md").write_text("not data")
    assert [(t.path, t.rows) for t in inputs.Table(tmp_path / "t").tables()] == [("x.csv", 2)]
