"""README's "Supported operations" table is the list the read-back sweep runs (tests/sdk_surface.py): they
cannot disagree."""

from pathlib import Path

from tests import sdk_surface

README = Path(__file__).resolve().parents[2] / "README.md"


def test_readme_table_is_the_sweeps_list():
    text = README.read_text()
    start, end = text.find(sdk_surface.README_START), text.find(sdk_surface.README_END)
    assert 0 <= start < end, "README lost its supported-operations markers"
    shown = text[start:end + len(sdk_surface.README_END)]
    assert shown == sdk_surface.readme_table(), "README's table differs: run `python -m tests.sdk_surface`"


def test_every_group_lists_each_operation_once():
    attrs = [g.attr for g in sdk_surface.SURFACE]
    assert len(attrs) == len(set(attrs))
    for group in sdk_surface.SURFACE:
        assert group.operations and len(group.operations) == len(set(group.operations)), group.attr
