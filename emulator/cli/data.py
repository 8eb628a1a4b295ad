"""`amlemu data mirror URL FILE_OR_FOLDER`: data outside the workspace, kept for offline jobs.

A job input naming an https, wasbs or abfss URL reads the mirror's copy first (services/external_data), so
jobs run with no network. The copy lands in <data folder>/mirror/<host>/<path> (the layout of
domain/storage/external.py), whole or not at all: written beside its place, then renamed there.
"""

import os
import shutil
import uuid
from pathlib import Path

import typer
from rich.console import Console

from emulator.cli.stack import Stack
from emulator.domain.storage import external
from emulator.errors import ValidationFailed

app = typer.Typer(help="Data outside the workspace: mirror a URL's file or folder for offline jobs.",
                  no_args_is_help=True)
console = Console(stderr=True)


def _place(source: Path, dest: Path) -> None:
    """Copy `source` (a file or a folder; links are copied as what they point at) to `dest`, atomically."""
    staging = dest.with_name(f".staging-{uuid.uuid4().hex}-{dest.name}"[:255])
    try:
        if source.is_dir():
            shutil.copytree(source, staging)
            old = dest.with_name(f".old-{uuid.uuid4().hex}")
            if dest.exists() or dest.is_symlink():
                os.rename(dest, old)
            os.rename(staging, dest)
            if old.exists() or old.is_symlink():
                shutil.rmtree(old) if old.is_dir() and not old.is_symlink() else old.unlink()
        else:
            shutil.copyfile(source, staging)
            if dest.is_dir() and not dest.is_symlink():
                shutil.rmtree(dest)
            os.replace(staging, dest)
    finally:
        if staging.is_dir() and not staging.is_symlink():
            shutil.rmtree(staging, ignore_errors=True)
        elif staging.exists() or staging.is_symlink():
            staging.unlink()


def mirror_path(home: Path, url: str) -> Path:
    """Where the mirror of the stack in `home` keeps `url` (refused like a job input would be)."""
    try:
        parsed = external.parse(url, "URL")
    except ValidationFailed as exc:
        console.print(exc.message, style="red", markup=False)
        raise typer.Exit(2) from None
    if not parsed.segments:
        console.print(f"{url} names no path: mirror a file or folder of the site, e.g. https://host/data.csv",
                      style="red", markup=False)
        raise typer.Exit(2)
    return home / external.MIRROR_DIR / parsed.key


@app.command()
def mirror(url: str = typer.Argument(..., help="The URL as the job names it: https://, wasbs:// or abfss://."),
           source: Path = typer.Argument(..., help="The file (a uri_file input) or folder (uri_folder) to serve.",
                                         exists=True, readable=True)) -> None:
    """Serve SOURCE as the data of URL to job inputs, with no network: uri_file takes a file, uri_folder a folder."""
    stack = Stack.from_env()
    dest = mirror_path(stack.home, url)
    dest.parent.mkdir(parents=True, exist_ok=True)
    _place(source, dest)
    kind = "folder" if source.is_dir() else "file"
    console.print(f"mirrored {kind} {source} as {url}\n  in {dest}", markup=False)
