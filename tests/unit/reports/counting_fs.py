"""A local filesystem that counts the reads made through it (file opens and listings)."""

from __future__ import annotations

from typing import Any

import pyarrow.fs as pafs


class CountingHandler(pafs.FileSystemHandler):
    """Delegates to the local filesystem; ``reads`` counts opens for reading and
    metadata/listing calls, ``paths`` the paths they named, ``opened`` the files opened."""

    def __init__(self) -> None:
        self.fs = pafs.LocalFileSystem()
        self.reads = 0
        self.paths: list[str] = []
        self.opened: list[str] = []

    def _read(self, path: Any) -> None:
        self.reads += 1
        self.paths.append(str(getattr(path, "base_dir", path)))

    def __eq__(self, other: object) -> bool:
        return self is other

    def __ne__(self, other: object) -> bool:
        return self is not other

    def __hash__(self) -> int:
        return id(self)

    def get_type_name(self) -> str:
        return "counting-local"

    def normalize_path(self, path: str) -> str:
        return self.fs.normalize_path(path)

    def get_file_info(self, paths: list[str]) -> list[pafs.FileInfo]:
        for path in paths:
            self._read(path)
        return list(self.fs.get_file_info(paths))

    def get_file_info_selector(self, selector: pafs.FileSelector) -> list[pafs.FileInfo]:
        self._read(selector)
        return list(self.fs.get_file_info(selector))

    def create_dir(self, path: str, recursive: bool) -> None:
        self.fs.create_dir(path, recursive=recursive)

    def delete_dir(self, path: str) -> None:
        self.fs.delete_dir(path)

    def delete_dir_contents(self, path: str, missing_dir_ok: bool = False) -> None:
        self.fs.delete_dir_contents(path, missing_dir_ok=missing_dir_ok)

    def delete_root_dir_contents(self) -> None:
        raise NotImplementedError

    def delete_file(self, path: str) -> None:
        self.fs.delete_file(path)

    def move(self, src: str, dest: str) -> None:
        self.fs.move(src, dest)

    def copy_file(self, src: str, dest: str) -> None:
        self.fs.copy_file(src, dest)

    def open_input_stream(self, path: str) -> Any:
        self._read(path)
        self.opened.append(path)
        return self.fs.open_input_stream(path)

    def open_input_file(self, path: str) -> Any:
        self._read(path)
        self.opened.append(path)
        return self.fs.open_input_file(path)

    def open_output_stream(self, path: str, metadata: Any) -> Any:
        return self.fs.open_output_stream(path, metadata=metadata)

    def open_append_stream(self, path: str, metadata: Any) -> Any:
        return self.fs.open_append_stream(path, metadata=metadata)


def counting(store: Any) -> CountingHandler:
    """Route ``store``'s file access through a counting handler; returns it."""
    handler = CountingHandler()
    store.fs = pafs.PyFileSystem(handler)
    return handler
