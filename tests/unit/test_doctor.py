"""amlemu doctor's edits of nsswitch.conf and /etc/hosts, and its plan, on files of the test's own (the fixes
themselves run in a container: tests/package/test_doctor_fixes.py)."""

import pytest

from emulator.cli import doctor


def test_myhostname_goes_after_files_once():
    debian = "passwd: files\nhosts:          files dns\nnetworks: files\n"
    edited = doctor._with_myhostname(debian)
    assert "hosts: files myhostname dns" in edited and edited.startswith("passwd: files\n")
    assert doctor._with_myhostname(edited) == edited
    assert "hosts: myhostname dns" in doctor._with_myhostname("hosts: dns\n")


def test_hosts_lines_are_added_once_per_account():
    text = "127.0.0.1 localhost\n"
    once = doctor.with_hosts_lines(text, ["abc123", "def456"])
    assert once.startswith(text) and doctor.HOSTS_MARK in once
    assert "127.0.0.1 abc123.blob.localhost" in once and "127.0.0.1 def456.blob.localhost" in once
    assert doctor.with_hosts_lines(once, ["abc123", "def456"]) == once
    more = doctor.with_hosts_lines(once, ["abc123", "ghi789"])
    assert more.count(doctor.HOSTS_MARK) == 1 and more.count("abc123") == 1 and "ghi789.blob.localhost" in more


def test_the_plan_edits_nsswitch_by_command(tmp_path):
    nsswitch = tmp_path / "nsswitch.conf"
    nsswitch.write_text("hosts: files dns\n")
    plan = doctor.myhostname_plan(nsswitch)
    if plan is None:
        pytest.skip("no apt-get and no nss-myhostname here: doctor offers the /etc/hosts fix instead")
    assert plan[-1][-2:] == ["nsswitch", str(nsswitch)]
    doctor._edit(plan[-1][-2:])
    assert nsswitch.read_text() == "hosts: files myhostname dns\n"


def test_localhost_itself_resolves_without_the_shim():
    assert doctor.resolves("localhost")
