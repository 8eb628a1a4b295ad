"""`amlemu capacity` says what the api answers: each shortage with what it covers and until when, the seeded schedule
and its next windows, or that capacity is available; a seed without --every is a usage error."""

from typer.testing import CliRunner

from emulator.cli import capacity
from emulator.cli.main import app

OFF = {"every": None, "for": 60.0, "seed": None, "region": "*", "family": "*", "priority": "LowPriority",
       "since": None, "source": "settings", "windows": []}


def _shown(view: dict, capsys) -> str:
    capacity._show(view, as_json=False)
    return " ".join(capsys.readouterr().out.split())


def test_shortages_and_the_schedule_are_told_plainly(capsys):
    shortage = {"region": "eastus", "family": "standardDSv2Family", "priority": "LowPriority",
                "start": "2026-11-27T18:00:00+00:00", "end": None, "source": "request"}
    window = {"start": "2026-11-27T18:10:00+00:00", "end": "2026-11-27T18:11:00+00:00"}
    schedule = {**OFF, "every": 600.0, "seed": 7, "source": "request", "windows": [window]}
    text = _shown({"shortages": [shortage], "schedule": schedule}, capsys)
    assert "short: LowPriority VMs of standardDSv2Family in eastus, until restored" in text
    assert "on average every 600 s for 60 s, seed 7" in text and "2026-11-27T18:10:00+00:00 .." in text
    assert "available" not in text
    assert _shown({"shortages": [], "schedule": OFF}, capsys) == "random shortages: off capacity: available"


def test_a_seed_without_every_is_a_usage_error():
    result = CliRunner().invoke(app, ["capacity", "--seed", "3"])
    assert result.exit_code == 2 and "--seed goes with --every" in result.output
