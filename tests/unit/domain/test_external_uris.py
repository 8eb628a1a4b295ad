"""Data outside the workspace: which URIs count, the URL each is fetched from, and the key that keeps it in the
mirror and the cache (never anywhere else)."""

import pytest

from emulator.domain.storage import external
from emulator.errors import ValidationFailed

T = "properties.inputs.rows.uri"


@pytest.mark.parametrize(("uri", "url", "key"), [
    ("https://example.com/data/iris.csv", "https://example.com/data/iris.csv", "example.com/data/iris.csv"),
    ("HTTPS://Example.COM:443/a%20b//c.csv?sv=1&sig=x#frag", "https://example.com:443/a%20b/c.csv?sv=1&sig=x",
     "example.com/a b/c.csv"),
    ("http://127.0.0.1:8000/x.csv", "http://127.0.0.1:8000/x.csv", "127.0.0.1:8000/x.csv"),
    ("wasbs://data@acct.blob.core.windows.net/path/f.csv", "https://acct.blob.core.windows.net/data/path/f.csv",
     "acct.blob.core.windows.net/data/path/f.csv"),
    ("abfss://files@acct.dfs.core.windows.net/p/", "https://acct.blob.core.windows.net/files/p",
     "acct.blob.core.windows.net/files/p"),
    ("https://acct.blob.core.windows.net/data/path/f.csv", "https://acct.blob.core.windows.net/data/path/f.csv",
     "acct.blob.core.windows.net/data/path/f.csv"),
])
def test_every_way_of_writing_a_url_has_one_key_and_one_fetch_url(uri, url, key):
    parsed = external.parse(uri, T)
    assert (parsed.url, parsed.key, parsed.written) == (url, key, uri)


@pytest.mark.parametrize(("uri", "why"), [
    ("https://h/a/../b", "'..'"),
    ("https://h/a/%2e%2e/b", "'..'"),
    ("https://h/%2E", "'.'"),
    ("https://h/a%2Fb", "'a/b'"),
    ("https://h/a%5Cb", "'a\\\\b'"),
    ("https://h/a%00b", "control characters"),
    ("https://h/%ff", "not UTF-8"),
    ("https://h/" + "x" * 256, "at most 255 bytes"),
    ("https://h/" + "a/" * 65, "deep"),
    ("https://u:p@h/x", "user name or password"),
    ("https://h:99999/x", "port"),
    ("https://[::1]/x", "DNS name or IPv4"),
    ("https:///x", "DNS name or IPv4"),
    ("https://../x", "DNS name or IPv4"),
    ("https://h..evil/x", "DNS name or IPv4"),
    ("wasbs://Bad@acct.blob.core.windows.net/x", "container"),
    ("wasbs://../x@acct.blob.core.windows.net/x", "container"),
    ("wasbs://c@acct.dfs.core.windows.net/x", "wasbs://<container>@<account>.blob"),
    ("abfss://files@acct.blob.core.windows.net/x", "abfss://<container>@<account>.dfs"),
    ("wasbs://acct.blob.core.windows.net/x", "wasbs://<container>@"),
    ("ftp://h/x", "not a URL amlemu reads"),
])
def test_urls_that_could_leave_the_mirror_or_hide_credentials_are_refused(uri, why):
    with pytest.raises(ValidationFailed) as caught:
        external.parse(uri, T)
    assert caught.value.target == T and why in caught.value.message


@pytest.mark.parametrize(("uri", "expected"), [
    ("https://h/x.csv", True), ("HTTP://h/x", True), ("wasbs://c@a.blob.core.windows.net/x", True),
    ("abfss://c@a.dfs.core.windows.net/x", True), ("azureml://datastores/workspaceblobstore/paths/x", False),
    ("file:///etc/passwd", False), ("https:/h/x", False), ("./local.csv", False), (3, False), (None, False),
])
def test_which_uris_are_outside_the_workspace(uri, expected):
    assert external.is_external(uri) is expected


@pytest.mark.parametrize("uri", ["https://h/", "https://h/data/", "https://acct.blob.core.windows.net/c",
                                 "wasbs://cont@acct.blob.core.windows.net/"])
def test_a_file_input_must_name_a_file(uri):
    with pytest.raises(ValidationFailed, match="names no file"):
        external.check_kind(external.parse(uri, T), "uri_file", T)
    external.check_kind(external.parse(uri, T), "uri_folder", T)  # a folder may be the site's root


def test_the_refusal_names_the_url_the_mirror_command_and_where_the_mirror_keeps_it():
    uri = external.parse("wasbs://c1c@acct.blob.core.windows.net/d/x.csv", T)
    error = external.unavailable(uri, "uri_file", T, "fetching is off")
    assert error.target == T
    assert "wasbs://c1c@acct.blob.core.windows.net/d/x.csv is not in the mirror and fetching is off." in error.message
    assert "`amlemu data mirror 'wasbs://c1c@acct.blob.core.windows.net/d/x.csv' <file or folder>`" in error.message
    assert "mirror/acct.blob.core.windows.net/c1c/d/x.csv" in error.message
    assert "come from the mirror" not in external.unavailable(uri, "uri_folder", T, "no").message  # listed, fetched
    site = external.parse("https://example.com/sets/", T)
    assert "others come from the mirror" in external.unavailable(site, "uri_folder", T, "no").message


def test_snapshots_are_named_by_a_digest_only():
    digest = "ab" * 32
    assert external.snapshot_path(digest, "x.csv") == f".amlemu-external/{digest}/x.csv"
    assert external.snapshot_path(digest, None) == f".amlemu-external/{digest}"
    with pytest.raises(ValueError):
        external.snapshot_path("../../etc", "x")


def test_a_blob_storage_folder_is_listed_with_its_sas_and_prefix():
    uri = external.parse("wasbs://public@acct.blob.core.windows.net/sets/iris/?sv=1&sig=a%2Bb", "t")
    assert external.listing_url(uri) == ("https://acct.blob.core.windows.net/public?sv=1&sig=a%2Bb&restype=container"
                                         "&comp=list&prefix=sets%2Firis%2F")
    whole = external.parse("abfss://public@acct.dfs.core.windows.net/", "t")
    assert external.listing_url(whole, "m 2") == ("https://acct.blob.core.windows.net/public?restype=container"
                                                  "&comp=list&marker=m+2")
    with pytest.raises(ValueError):
        external.listing_url(external.parse("https://example.com/sets/iris", "t"))


def test_listed_blobs_become_the_folders_files_and_markers_none():
    xml = (b"<EnumerationResults><Blobs><Blob><Name>sets/iris/a.csv</Name><Properties><Content-Length>4"
           b"</Content-Length></Properties></Blob><Blob><Name>sets/iris/part</Name></Blob><Blob><Name>sets/iris/"
           b"part/b c.csv</Name></Blob><Blob><Name>sets/irises/x</Name></Blob></Blobs><NextMarker>n</NextMarker>"
           b"</EnumerationResults>")
    blobs, marker = external.listed_blobs(xml)
    assert marker == "n" and blobs[0] == ("sets/iris/a.csv", 4) and blobs[1] == ("sets/iris/part", 0)
    uri = external.parse("https://acct.blob.core.windows.net/public/sets/iris?sig=s", "t")
    assert external.folder_files(uri, blobs, "t") == {
        ("a.csv",): "https://acct.blob.core.windows.net/public/sets/iris/a.csv?sig=s",
        ("part", "b c.csv"): "https://acct.blob.core.windows.net/public/sets/iris/part/b%20c.csv?sig=s"}
    with pytest.raises(ValidationFailed, match="'..'"):
        external.folder_files(uri, [("sets/iris/../../etc/passwd", 1)], "t")
    with pytest.raises(ValueError, match="not XML"):
        external.listed_blobs(b"<html>")
