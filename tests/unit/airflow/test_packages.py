"""A job's local ``working_dir`` / ``py_modules`` become packages on the cluster:
the right files, one upload per content, the names the job server unpacks."""

from __future__ import annotations

import io
import os
import zipfile
from typing import TYPE_CHECKING, Any

import pytest

from airflow_provider_rayorch.exceptions import RayOrchPermanentError
from airflow_provider_rayorch.hooks.packages import prepare_runtime_env

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.timeout(60)


class FakeJobsApi:
    """The package routes of Ray's job server: GET answers 404 until a PUT stored it."""

    def __init__(self) -> None:
        self.stored: dict[str, bytes] = {}
        self.calls: list[tuple[str, str]] = []

    def request(
        self, method: str, path: str, *, what: str = "", allow_404: bool = False, **kw: Any
    ) -> object | None:
        self.calls.append((method, path))
        assert path.startswith("/api/packages/gcs/"), path
        name = path.rsplit("/", 1)[1]
        if method == "GET":
            assert allow_404
            return object() if name in self.stored else None
        assert method == "PUT", method
        self.stored[name] = kw["content"]
        return object()

    def zip_names(self, uri: str) -> set[str]:
        return set(zipfile.ZipFile(io.BytesIO(self.stored[uri.split("://", 1)[1]])).namelist())


def _tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        if rel.endswith("/"):
            path.mkdir(parents=True, exist_ok=True)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


WORKING_DIR = {
    "main.py": "print('main')\n",
    "pkg/__init__.py": "X = 1\n",
    "pkg/data.bin": "data",
    ".git/HEAD": "ref: main",
    "__pycache__/main.cpython-311.pyc": "",
    "sub/__pycache__/y.pyc": "",
    "logs/run.log": "noise",
    ".gitignore": "secret.txt\n",
    "secret.txt": "s3cr3t",
    "sub/.rayignore": "big/\n",
    "sub/big/weights.bin": "huge",
    "sub/keep.txt": "keep",
    "empty/": "",
}
SHIPPED = {
    ".gitignore",
    "main.py",
    "pkg/__init__.py",
    "pkg/data.bin",
    "sub/.rayignore",
    "sub/keep.txt",
    "empty/",
}


def test_a_working_dir_ships_its_files_less_the_excluded_ones(tmp_path: Path) -> None:
    root = _tree(tmp_path / "wd", WORKING_DIR)
    api = FakeJobsApi()
    env = prepare_runtime_env(api, {"working_dir": str(root), "excludes": ["*.log"]})
    uri = env["working_dir"]
    assert uri.startswith("gcs://_ray_pkg_"), uri
    assert uri.endswith(".zip"), uri
    assert api.zip_names(uri) == SHIPPED
    assert [m for m, _ in api.calls] == ["GET", "PUT"]


def test_the_files_chosen_are_the_ones_rays_own_client_ships(tmp_path: Path) -> None:
    """The same tree through Ray's packaging (what ``JobSubmissionClient`` uploads)."""
    from ray._private.runtime_env.packaging import create_package

    root = _tree(tmp_path / "wd", WORKING_DIR)
    ray_zip = tmp_path / "ray.zip"
    defaults = [".git", ".venv", "venv", "__pycache__"]
    create_package(str(root), ray_zip, include_gitignore=True, excludes=[*defaults, "*.log"])
    api = FakeJobsApi()
    env = prepare_runtime_env(api, {"working_dir": str(root), "excludes": ["*.log"]})
    assert api.zip_names(env["working_dir"]) == set(zipfile.ZipFile(ray_zip).namelist())


def test_a_package_is_uploaded_once_and_named_by_its_content(tmp_path: Path) -> None:
    root = _tree(tmp_path / "wd", {"main.py": "a\n", "run.sh": "echo\n"})
    api = FakeJobsApi()
    first = prepare_runtime_env(api, {"working_dir": str(root)})["working_dir"]
    again = prepare_runtime_env(api, {"working_dir": str(root)})["working_dir"]
    assert again == first
    assert [m for m, _ in api.calls] == ["GET", "PUT", "GET"]

    (root / "main.py").write_text("b\n")
    changed = prepare_runtime_env(api, {"working_dir": str(root)})["working_dir"]
    (root / "run.sh").chmod(0o755)
    executable = prepare_runtime_env(api, {"working_dir": str(root)})["working_dir"]
    assert len({first, changed, executable}) == 3


def test_what_the_job_server_unpacks_is_the_directory(tmp_path: Path) -> None:
    root = _tree(tmp_path / "wd", {"main.py": "a\n", "bin/run.sh": "echo\n", "d/e/f.txt": "f"})
    (root / "bin" / "run.sh").chmod(0o755)
    api = FakeJobsApi()
    uri = prepare_runtime_env(api, {"working_dir": str(root)})["working_dir"]
    out = tmp_path / "unpacked"
    with zipfile.ZipFile(io.BytesIO(api.stored[uri.split("://", 1)[1]])) as zf:
        zf.extractall(out)
        mode = zf.getinfo("bin/run.sh").external_attr >> 16
    assert {p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()} == {
        "main.py",
        "bin/run.sh",
        "d/e/f.txt",
    }
    assert (out / "d/e/f.txt").read_text() == "f"
    assert mode & 0o111, oct(mode)


def test_py_modules_directories_are_shipped_under_their_own_names(tmp_path: Path) -> None:
    """Two modules with the same files are two packages (Ray's client hashes a
    directory without its name, so it shipped the first one twice)."""
    alpha = _tree(tmp_path / "alpha", {"__init__.py": "X = 1\n"})
    beta = _tree(tmp_path / "beta", {"__init__.py": "X = 1\n"})
    api = FakeJobsApi()
    a, b = prepare_runtime_env(api, {"py_modules": [str(alpha), str(beta)]})["py_modules"]
    assert a != b
    assert api.zip_names(a) == {"alpha/__init__.py"}
    assert api.zip_names(b) == {"beta/__init__.py"}


def test_a_single_file_py_module_is_shipped(tmp_path: Path) -> None:
    helper = tmp_path / "helper.py"
    helper.write_text("def f():\n    return 1\n")
    api = FakeJobsApi()
    (uri,) = prepare_runtime_env(api, {"py_modules": [str(helper)]})["py_modules"]
    assert api.zip_names(uri) == {"helper.py"}


def test_archives_and_wheels_are_uploaded_as_they_are(tmp_path: Path) -> None:
    archive = tmp_path / "code.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("main.py", "print(1)\n")
    wheel = tmp_path / "mylib-1.0-py3-none-any.whl"
    wheel.write_bytes(b"wheel bytes")
    api = FakeJobsApi()
    env = prepare_runtime_env(api, {"working_dir": str(archive), "py_modules": [str(wheel)]})
    name = env["working_dir"].split("://", 1)[1]
    assert name.startswith("_ray_pkg_"), name
    assert name.endswith(".zip"), name
    assert api.stored[name] == archive.read_bytes()
    assert env["py_modules"] == ["gcs://mylib-1.0-py3-none-any.whl"]
    assert api.stored["mylib-1.0-py3-none-any.whl"] == b"wheel bytes"


def test_uris_pass_through_without_a_request() -> None:
    api = FakeJobsApi()
    env = {
        "working_dir": "s3://bucket/code.zip",
        "py_modules": ["gcs://_ray_pkg_abc.zip", "https://host/lib.whl"],
        "env_vars": {"A": "1"},
    }
    out = prepare_runtime_env(api, env)
    assert out["working_dir"] == env["working_dir"]
    assert out["py_modules"] == env["py_modules"]
    assert api.calls == []
    assert prepare_runtime_env(api, None) == {}


@pytest.mark.parametrize(
    ("env", "words"),
    [
        pytest.param({"working_dir": "{missing}"}, ["working_dir", "{missing}"], id="missing-dir"),
        pytest.param({"working_dir": "{notes}"}, ["working_dir", ".zip"], id="not-an-archive"),
        pytest.param({"py_modules": ["{notes}"]}, ["py_modules", ".whl"], id="bad-module"),
        pytest.param({"py_modules": "{missing}"}, ["py_modules", "list"], id="not-a-list"),
    ],
)
def test_a_bad_local_package_fails_at_once_naming_it(
    tmp_path: Path, env: dict[str, Any], words: list[str]
) -> None:
    (tmp_path / "notes.txt").write_text("x")
    paths = {"missing": str(tmp_path / "nope"), "notes": str(tmp_path / "notes.txt")}
    env = {
        k: [v.format(**paths) for v in val] if isinstance(val, list) else val.format(**paths)
        for k, val in env.items()
    }
    with pytest.raises(RayOrchPermanentError) as info:
        prepare_runtime_env(FakeJobsApi(), env)
    for word in words:
        assert word.format(**paths) in str(info.value), str(info.value)


def test_gitignore_is_ignored_when_rays_variable_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = _tree(tmp_path / "wd", {".gitignore": "secret.txt\n", "secret.txt": "s"})
    monkeypatch.setenv("RAY_RUNTIME_ENV_IGNORE_GITIGNORE", "1")
    api = FakeJobsApi()
    uri = prepare_runtime_env(api, {"working_dir": str(root)})["working_dir"]
    assert "secret.txt" in api.zip_names(uri)
    assert os.environ["RAY_RUNTIME_ENV_IGNORE_GITIGNORE"] == "1"


def test_imported_modules_ship_from_where_they_live(tmp_path: Path) -> None:
    """``py_modules`` may hold module objects, as with Ray: a package by its one
    directory, a single-file module by its file."""
    import types

    pkg_dir = _tree(tmp_path / "modpkg", {"__init__.py": "", "core.py": "X = 1\n"})
    package = types.ModuleType("modpkg")
    package.__path__ = [str(pkg_dir)]
    single = types.ModuleType("solo")
    single.__file__ = str(_tree(tmp_path, {"solo.py": "Y = 2\n"}) / "solo.py")
    api = FakeJobsApi()
    a, b = prepare_runtime_env(api, {"py_modules": [package, single]})["py_modules"]
    assert api.zip_names(a) == {"modpkg/__init__.py", "modpkg/core.py"}
    assert api.zip_names(b) == {"solo.py"}
