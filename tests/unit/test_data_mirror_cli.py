"""`amlemu data mirror`: a file or folder lands in the stack's mirror at the URL's key, replacing what was there
whole; a URL whose key would leave the mirror is refused and writes nothing."""

from typer.testing import CliRunner

from emulator.cli.main import app

runner = CliRunner()


def _mirror(home, url: str, source) -> object:
    return runner.invoke(app, ["data", "mirror", url, str(source)], env={"AMLEMU_HOME": str(home)})


def test_files_and_folders_land_at_the_urls_key(tmp_path):
    home, rows = tmp_path / "home", tmp_path / "rows.csv"
    rows.write_text("a,b\n")
    assert _mirror(home, "https://example.com/data/rows.csv", rows).exit_code == 0
    assert (home / "mirror" / "example.com" / "data" / "rows.csv").read_text() == "a,b\n"
    folder = tmp_path / "set"
    (folder / "part").mkdir(parents=True)
    (folder / "part" / "x.csv").write_text("1\n")
    assert _mirror(home, "wasbs://public@acct.blob.core.windows.net/sets/one", folder).exit_code == 0
    (folder / "part" / "x.csv").write_text("2\n")
    (folder / "y.csv").write_text("3\n")
    assert _mirror(home, "https://acct.blob.core.windows.net/public/sets/one/", folder).exit_code == 0  # same key
    kept = home / "mirror" / "acct.blob.core.windows.net" / "public" / "sets" / "one"
    assert sorted(p.relative_to(kept).as_posix() for p in kept.rglob("*")) == ["part", "part/x.csv", "y.csv"]
    assert (kept / "part" / "x.csv").read_text() == "2\n"
    assert [p.name for p in kept.parent.iterdir()] == ["one"]  # no staging left behind


def test_a_url_that_would_leave_the_mirror_writes_nothing(tmp_path):
    rows = tmp_path / "rows.csv"
    rows.write_text("a\n")
    for url in ("https://example.com/%2e%2e/%2e%2e/rows.csv", "https://example.com/", "ftp://example.com/x"):
        result = _mirror(tmp_path / "home", url, rows)
        assert result.exit_code == 2, result.output
    assert not (tmp_path / "home" / "mirror").exists()
