"""Imported at interpreter start-up when this folder is on PYTHONPATH, as `amlemu env` puts it.

RFC 6761 makes every name under .localhost a loopback name, and the emulator's blob URLs rely on it: the
SDK builds them as https://<account>.blob.localhost:<port>. systemd-resolved, curl and browsers follow the
rule; glibc on its own does not, so getaddrinfo is wrapped to resolve those names as `localhost`. Then the
next sitecustomize on sys.path (a distro's, or the user's own) runs, as it would have without this one.

Standard library only, Python 3.9 and later: it runs in whatever interpreter the user's code runs in.
"""

import importlib.abc
import importlib.machinery
import importlib.util
import os
import socket
import sys

_MARK = "_amlemu_localhost"


def _is_localhost_subdomain(host):
    if isinstance(host, bytes):
        host = host.decode("ascii", "replace")
    return isinstance(host, str) and host.rstrip(".").lower().endswith(".localhost")


def _wrap(original):
    def getaddrinfo(host, *args, **kwargs):
        # Straight to localhost, without asking DNS first: the answer is fixed, and a miss can be slow.
        return original("localhost" if _is_localhost_subdomain(host) else host, *args, **kwargs)

    getaddrinfo.__wrapped__ = original
    setattr(getaddrinfo, _MARK, True)
    return getaddrinfo


_CLOUDS_MODULE = "azure.ai.ml._azure_environments"


def _memoise_cloud_metadata(module):
    fetch = getattr(module, "_get_clouds_by_metadata_url", None)
    if fetch is None or getattr(fetch, _MARK, False):
        return
    answers = {}

    def get_clouds_by_metadata_url(metadata_url):
        if metadata_url not in answers:
            clouds = fetch(metadata_url)
            if not clouds:  # a failed fetch answers {}: ask again next time
                return clouds
            answers[metadata_url] = clouds
        return answers[metadata_url]

    get_clouds_by_metadata_url.__wrapped__ = fetch
    setattr(get_clouds_by_metadata_url, _MARK, True)
    module._get_clouds_by_metadata_url = get_clouds_by_metadata_url


class _PatchOnImport(importlib.abc.MetaPathFinder):
    """Finds nothing itself; when the SDK's cloud module is found, patches it right after it runs."""

    _amlemu_localhost = True  # _MARK: known as ours even when this file was loaded twice under two names

    def find_spec(self, fullname, path, target=None):
        if fullname != _CLOUDS_MODULE:
            return None
        for finder in sys.meta_path:
            if getattr(finder, _MARK, False) or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None and spec.loader is not None and hasattr(spec.loader, "exec_module"):
                run = spec.loader.exec_module

                def exec_module(module, _run=run):
                    _run(module)
                    _memoise_cloud_metadata(module)

                spec.loader.exec_module = exec_module
                return spec
            if spec is not None:
                return spec
        return None


def _chain():
    """Run the sitecustomize this one hides: the first found on sys.path after this folder."""
    here = os.path.realpath(os.path.dirname(os.path.abspath(__file__)))
    entries = [os.path.realpath(entry or os.curdir) for entry in sys.path]
    start = entries.index(here) + 1 if here in entries else 0
    later = [entry for entry in entries[start:] if entry != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", later)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)


def install():
    """Both mends, once however often this runs; also for a process that loads this file by path."""
    if not getattr(socket.getaddrinfo, _MARK, False):
        socket.getaddrinfo = _wrap(socket.getaddrinfo)
    if _CLOUDS_MODULE in sys.modules:
        _memoise_cloud_metadata(sys.modules[_CLOUDS_MODULE])
    elif not any(getattr(finder, _MARK, False) for finder in sys.meta_path):
        sys.meta_path.insert(0, _PatchOnImport())


if __name__ == "sitecustomize":
    install()
    _chain()
