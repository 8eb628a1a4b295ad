"""docs/migrating.md shows docs/examples/test_train_job.py in full: the file tests/e2e/test_migration_guide.py runs
against amlemu is the one the guide shows."""

from pathlib import Path

DOCS = Path(__file__).resolve().parents[2] / "docs"
START, END = "<!-- example:start docs/examples/test_train_job.py -->\n```python\n", "```\n<!-- example:end -->"


def test_the_guide_shows_the_example_file_as_it_is():
    text = (DOCS / "migrating.md").read_text()
    start, end = text.find(START), text.find(END)
    assert 0 <= start < end, "docs/migrating.md lost its example markers"
    assert text[start + len(START):end] == (DOCS / "examples" / "test_train_job.py").read_text(), \
        "docs/migrating.md shows an older docs/examples/test_train_job.py: paste the file between the markers"
