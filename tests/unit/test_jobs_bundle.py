"""The CA bundle jobs mount: written once, kept as the same file while its content holds (a job staged before an
api restart holds it by its inode), replaced whole when the CA changes."""

from emulator import pki


def test_the_bundle_keeps_its_inode_across_restarts_and_changes_when_the_ca_does(tmp_path):
    first = pki.write_jobs_bundle(tmp_path)
    inode = first.stat().st_ino
    assert "BEGIN CERTIFICATE" in first.read_text() and (tmp_path / "ca" / "ca.crt").read_text() in first.read_text()
    assert pki.write_jobs_bundle(tmp_path).stat().st_ino == inode  # an api restart: the same file
    for name in ("ca.crt", "ca.key"):
        (tmp_path / "ca" / name).unlink()
    again = pki.write_jobs_bundle(tmp_path)  # a new CA: a new bundle that carries it
    assert (tmp_path / "ca" / "ca.crt").read_text() in again.read_text()
    assert not list((tmp_path / "ca").glob(".jobs-bundle*"))
