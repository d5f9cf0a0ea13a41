"""The local side of shipping a job's ``working_dir`` / ``py_modules``: which files go,
the package's content-addressed name, and its zip.

Ray's public client (``JobSubmissionClient``) does this with helpers that live in
``ray._private``; the provider keeps its own upload on its one request path (httpx,
token, TLS), so it builds the package itself, by the rules Ray documents for
runtime_env packages:

- the ``excludes`` patterns (gitignore syntax, relative to the directory), every
  ``.gitignore`` (unless ``RAY_RUNTIME_ENV_IGNORE_GITIGNORE=1``) and ``.rayignore``
  on the way, and, for a ``working_dir``, Ray's default excludes (``.git``, ``.venv``,
  ``venv``, ``__pycache__``; ``RAY_OVERRIDE_RUNTIME_ENV_DEFAULT_EXCLUDES`` replaces
  them) leave files out;
- a ``working_dir`` is zipped from inside the directory, a ``py_modules`` directory
  with the directory itself as the zip's top level, a ``.py`` module as one file;
- a package is named ``_ray_pkg_<hash>.zip`` in the GCS protocol, the hash covering
  every path, file mode and file content in it, so a changed file is a new package
  and an unchanged tree is uploaded once; an archive the user built is named by the
  hash of its bytes, a wheel by its own file name (pip needs it).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import zipfile
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pathspec

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence
    from pathlib import Path

__all__ = [
    "ARCHIVE_EXTENSIONS",
    "Package",
    "archive_package",
    "default_excludes",
    "directory_package",
    "include_gitignore",
    "module_file_package",
    "wheel_package",
]

#: The URI scheme Ray's job server stores uploaded packages under (``gcs://<name>``).
PROTOCOL = "gcs"
PREFIX = "_ray_pkg_"
#: Archives a ``working_dir`` may be given as, and the extension each is stored with.
ARCHIVE_EXTENSIONS = {".zip": ".zip", ".tar.gz": ".tar.gz", ".tgz": ".tar.gz", ".tar.xz": ".tar.xz"}
#: What Ray leaves out of every ``working_dir`` unless the variable below says otherwise.
DEFAULT_EXCLUDES = (".git", ".venv", "venv", "__pycache__")
DEFAULT_EXCLUDES_VAR = "RAY_OVERRIDE_RUNTIME_ENV_DEFAULT_EXCLUDES"
IGNORE_GITIGNORE_VAR = "RAY_RUNTIME_ENV_IGNORE_GITIGNORE"
_CHUNK = 1 << 20


def default_excludes() -> list[str]:
    """Ray's default ``working_dir`` excludes, or the comma list the variable sets."""
    value = os.environ.get(DEFAULT_EXCLUDES_VAR)
    if value is None:
        return list(DEFAULT_EXCLUDES)
    return [part.strip() for part in value.split(",") if part.strip()]


def include_gitignore() -> bool:
    """Whether ``.gitignore`` files leave files out (Ray's variable turns it off)."""
    return os.environ.get(IGNORE_GITIGNORE_VAR, "0") != "1"


@dataclass(frozen=True)
class _Entry:
    arcname: str
    path: Path
    is_dir: bool


@dataclass(frozen=True)
class Package:
    """One package to ship: its name on the cluster and how to produce its bytes."""

    #: ``_ray_pkg_<hash>.zip`` (or the archive's or wheel's name)
    name: str
    #: the local directory, module or file it was made from (for messages)
    source: Path
    #: the files to zip; empty when ``source`` is uploaded as it is
    entries: tuple[_Entry, ...] = ()

    @property
    def uri(self) -> str:
        return f"{PROTOCOL}://{self.name}"

    @property
    def endpoint(self) -> str:
        """The Jobs API route that tells whether the package is stored, and stores it."""
        return f"/api/packages/{PROTOCOL}/{self.name}"

    def write(self, directory: Path) -> Path:
        """The package as a file under ``directory`` (the source itself when it is
        uploaded unchanged)."""
        if not self.entries:
            return self.source
        target = directory / self.name
        with zipfile.ZipFile(target, "w", compression=zipfile.ZIP_DEFLATED) as zf:
            for entry in self.entries:
                info = zipfile.ZipInfo.from_file(entry.path, entry.arcname, strict_timestamps=False)
                if entry.is_dir:
                    zf.writestr(info, b"")
                    continue
                info.compress_type = zipfile.ZIP_DEFLATED
                with entry.path.open("rb") as src, zf.open(info, "w") as dst:
                    shutil.copyfileobj(src, dst, _CHUNK)
        return target


def directory_package(
    directory: Path, *, excludes: Sequence[str], gitignore: bool, top_level: bool
) -> Package:
    """A directory's package; ``top_level`` keeps the directory's own name as the
    zip's top level (``py_modules``), else its contents are the top (``working_dir``)."""
    root = directory.absolute()
    prefix = f"{root.name}/" if top_level else ""
    entries = tuple(
        _Entry(prefix + rel, path, is_dir)
        for rel, path, is_dir in _walk(root, _spec(excludes), gitignore)
    )
    return Package(_content_name(entries), root, entries)


def module_file_package(module: Path) -> Package:
    """A single-file module (``py_modules`` entry ending in ``.py``), zipped alone."""
    path = module.absolute()
    entries = (_Entry(path.name, path, False),)
    return Package(_content_name(entries), path, entries)


def archive_package(archive: Path) -> Package | None:
    """An archive the user built, named by the hash of its bytes; ``None`` when its
    extension is not one a ``working_dir`` may be."""
    name = archive.name.lower()
    ext = next((ARCHIVE_EXTENSIONS[e] for e in ARCHIVE_EXTENSIONS if name.endswith(e)), None)
    if ext is None:
        return None
    return Package(f"{PREFIX}{_file_digest(archive).hex()}{ext}", archive.absolute())


def wheel_package(wheel: Path) -> Package:
    """A wheel, stored under its own file name: pip installs it by that name, and
    the name carries its version (as Ray's client does; rebuild with a new version)."""
    return Package(wheel.name, wheel.absolute())


# -- which files go -------------------------------------------------------------------
def _spec(patterns: Sequence[str]) -> pathspec.PathSpec | None:
    lines = [p for p in patterns if p.strip()]
    return pathspec.GitIgnoreSpec.from_lines(lines) if lines else None


def _ignore_files(directory: Path, gitignore: bool) -> list[pathspec.PathSpec]:
    names = [".gitignore", ".rayignore"] if gitignore else [".rayignore"]
    specs = []
    for name in names:
        file = directory / name
        if file.is_file():
            spec = _spec(file.read_text(encoding="utf-8", errors="replace").splitlines())
            if spec is not None:
                specs.append(spec)
    return specs


def _walk(
    root: Path, excludes: pathspec.PathSpec | None, gitignore: bool
) -> Iterator[tuple[str, Path, bool]]:
    """``(path relative to root, path, is a directory)`` of every file, and every empty
    directory, that no pattern leaves out, in a stable order. Each ignore file's
    patterns apply below its own directory; symbolic links are followed (a loop is not)."""
    rules: list[tuple[Path, pathspec.PathSpec]] = [(root, excludes)] if excludes else []

    def excluded(path: Path, is_dir: bool) -> bool:
        for base, spec in rules:
            rel = path.relative_to(base).as_posix() + ("/" if is_dir else "")
            if spec.match_file(rel):
                return True
        return False

    def visit(directory: Path, seen: frozenset[Path]) -> Iterator[tuple[str, Path, bool]]:
        added = [(directory, spec) for spec in _ignore_files(directory, gitignore)]
        rules.extend(added)
        try:
            for child in sorted(directory.iterdir(), key=lambda p: p.name):
                is_dir = child.is_dir()
                if not (is_dir or child.is_file()) or excluded(child, is_dir):
                    continue
                rel = child.relative_to(root).as_posix()
                if not is_dir:
                    yield rel, child, False
                    continue
                real = child.resolve()
                if real in seen:
                    continue
                if next(child.iterdir(), None) is None:
                    yield rel, child, True
                else:
                    yield from visit(child, seen | {real})
        finally:
            del rules[len(rules) - len(added) :]

    yield from visit(root, frozenset({root.resolve()}))


# -- its name -------------------------------------------------------------------------
def _content_name(entries: Sequence[_Entry]) -> str:
    """``_ray_pkg_<sha256>.zip`` over each entry's zip path, kind, mode and content."""
    digest = hashlib.sha256()
    for entry in entries:
        mode = stat.S_IMODE(entry.path.stat().st_mode)
        digest.update(f"{entry.arcname}\0{'d' if entry.is_dir else 'f'}{mode:o}\0".encode())
        if not entry.is_dir:
            digest.update(_file_digest(entry.path))
    return f"{PREFIX}{digest.hexdigest()}.zip"


def _file_digest(path: Path) -> bytes:
    with path.open("rb") as fh:
        return hashlib.file_digest(fh, "sha256").digest()
