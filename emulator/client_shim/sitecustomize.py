"""Imported at interpreter start-up when this folder is on PYTHONPATH, as `amlemu env` puts it.

RFC 6761 makes every name under .localhost a loopback name, and the emulator's blob URLs rely on it: the
SDK builds them as https://<account>.blob.localhost:<port>. systemd-resolved, curl and browsers follow the
rule; glibc on its own does not, so getaddrinfo is wrapped to resolve those names as `localhost`. Then the
next sitecustomize on sys.path (a distro's, or the user's own) runs, as it would have without this one.

Standard library only, Python 3.9 and later: it runs in whatever interpreter the user's code runs in.
"""

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


if not getattr(socket.getaddrinfo, _MARK, False):
    socket.getaddrinfo = _wrap(socket.getaddrinfo)
_chain()
