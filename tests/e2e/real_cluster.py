"""A Ray cluster of a head and a worker node in token mode on loopback, started by the
commands of docs/airflow/real-cluster.md as written (``run: cluster-head``,
``run: cluster-token``, ``run: cluster-worker``), for the tests that need a real
multi-node cluster (tests/e2e/test_real_cluster.py; a node-kill test can reuse it).

Each node is a "machine" of its own: a private ``HOME`` (so neither reads the other's
``~/.ray``), no ``RAY_*`` variable from this process. What the tests change in the
commands, and why:

- the documented ports (6379, 8265) become free ports, ``<head>`` becomes 127.0.0.1
  and ``<the head token>`` the token ``ray get-auth-token`` printed on the head;
- ``ray start`` gets ``--node-ip-address=127.0.0.1`` and, on the head, a private
  ``--temp-dir`` and free ports for the Ray client server and the dashboard agent:
  on a machine shared with other Ray users their defaults may be taken.

Each block runs in a new session, so the node's processes (which ``ray start``
leaves running in the background) share its process group; stopping a node stops
that group, never with ``ray stop``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "docs"))

from deployment import free_port, kill_group, script
from doc_blocks import Block, one_block

PYTHON = sys.executable
BIN = str(Path(PYTHON).parent)


@dataclass
class Node:
    name: str
    home: Path
    pgid: int
    log: Path


@dataclass
class TokenCluster:
    """A running head and worker; ``address`` is the Jobs API (dashboard) URL."""

    root: Path
    gcs_port: int
    dashboard_port: int
    token: str
    nodes: list[Node] = field(default_factory=list)
    #: the head's private Ray temp dir (short, under /tmp: Ray's socket paths)
    temp_dir: str = field(default_factory=lambda: tempfile.mkdtemp(prefix="rayc", dir="/tmp"))

    @property
    def address(self) -> str:
        return f"http://127.0.0.1:{self.dashboard_port}"

    def substitute(self, text: str) -> str:
        """The documented placeholders and ports, for this cluster."""
        return (
            text.replace("<head>", "127.0.0.1")
            .replace("<the head token>", self.token)
            .replace("6379", str(self.gcs_port))
            .replace("8265", str(self.dashboard_port))
        )

    def logs(self) -> str:
        return "\n".join(
            f"----- {n.name} ({n.log}) -----\n{n.log.read_text(errors='replace')[-3000:]}"
            for n in self.nodes
        )

    def alive_nodes(self) -> int:
        """How many nodes the head counts alive (asked as a token-mode client)."""
        code = (
            "import ray, sys; ray.init(address=sys.argv[1], logging_level='ERROR');"
            "print(sum(1 for n in ray.nodes() if n['Alive']))"
        )
        env = node_environment(
            self.root / "client-home",
            RAY_AUTH_MODE="token",
            RAY_AUTH_TOKEN=self.token,
        )
        out = run_bash_argv(
            [PYTHON, "-c", code, f"127.0.0.1:{self.gcs_port}"], env=env, timeout=120
        )
        return int(out.strip().splitlines()[-1])

    def stop(self) -> None:
        for node in reversed(self.nodes):
            if script.group_alive(node.pgid):
                kill_group(node.pgid, grace=15.0)
        shutil.rmtree(self.temp_dir, ignore_errors=True)


def node_environment(home: Path, **extra: str) -> dict[str, str]:
    """A machine of its own: a private HOME, no ``RAY_*`` or ``AIRFLOW*`` variable, the
    venv's ``ray`` and ``python`` first on PATH."""
    home.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAY_", "AIRFLOW"))}
    env.update(
        HOME=str(home),
        PATH=os.pathsep.join([BIN, env.get("PATH", "")]),
        RAY_USAGE_STATS_ENABLED="0",
        **extra,
    )
    return env


def run_bash_argv(argv: list[str], *, env: dict[str, str], timeout: float) -> str:
    got = subprocess.run(
        argv, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    assert got.returncode == 0, f"{argv[:3]} exited {got.returncode}:\n{got.stdout}{got.stderr}"
    return got.stdout


def start_node_block(
    block: Block, text: str, *, home: Path, log: Path, timeout: float = 180
) -> tuple[int, int]:
    """Run a node's block with bash in a new session; returns (pgid, exit code)."""
    env = node_environment(home)
    with open(log, "ab") as out:
        proc = subprocess.Popen(
            ["bash", "-euo", "pipefail", "-c", text],
            env=env,
            cwd=home,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    try:
        code = proc.wait(timeout)
    except subprocess.TimeoutExpired:
        kill_group(proc.pid)
        raise AssertionError(f"{block.id} did not finish within {timeout:g}s") from None
    return proc.pid, code


def loopback(cluster: TokenCluster, text: str, *, head: bool) -> str:
    """Pin ``ray start`` to loopback and, on the head, to a private temp dir and free
    ports (see the module docstring)."""
    flags = ["--node-ip-address=127.0.0.1"]
    if head:
        flags += [
            f"--temp-dir={cluster.temp_dir}",
            f"--ray-client-server-port={free_port()}",
            f"--dashboard-agent-listen-port={free_port()}",
        ]
    start = "ray start --head" if head else "ray start"
    assert start in text, f"no `{start}` in the documented block:\n{text}"
    return text.replace(start, f"{start} {' '.join(flags)}", 1)


def start_token_cluster(root: Path, *, worker_block: Block | None = None) -> TokenCluster:
    """Head, token, worker, exactly as docs/airflow/real-cluster.md says (modulo the
    substitutions above); returns once the head counts both nodes alive."""
    cluster = TokenCluster(root, free_port(), free_port(), token="")
    head_block = one_block("cluster-head")
    head_home = root / "head-home"
    head_log = root / "head.log"
    text = loopback(cluster, cluster.substitute(head_block.text), head=True)
    pgid, code = start_node_block(head_block, text, home=head_home, log=head_log)
    cluster.nodes.append(Node("head", head_home, pgid, head_log))
    try:
        assert code == 0, f"{head_block.id} exited {code}:\n{cluster.logs()}"
        token_block = one_block("cluster-token")
        out = run_bash_argv(
            ["bash", "-euo", "pipefail", "-c", token_block.text],
            env=node_environment(head_home),
            timeout=60,
        )
        cluster.token = out.strip()
        assert len(cluster.token) >= 16, f"{token_block.id} printed no token: {out!r}"
        start_worker(cluster, worker_block or one_block("cluster-worker"))
    except BaseException:
        cluster.stop()
        raise
    return cluster


def start_worker(cluster: TokenCluster, block: Block) -> int:
    """Join a worker node with ``block``; fail with the node logs if it cannot."""
    home = cluster.root / f"worker{len(cluster.nodes)}-home"
    log = cluster.root / f"worker{len(cluster.nodes)}.log"
    text = loopback(cluster, cluster.substitute(block.text), head=False)
    pgid, code = start_node_block(block, text, home=home, log=log)
    cluster.nodes.append(Node(f"worker{len(cluster.nodes)}", home, pgid, log))
    assert code == 0, f"{block.id}: `ray start --address=...` exited {code}:\n{cluster.logs()}"
    return pgid


def cluster_summary(cluster: TokenCluster) -> str:
    return json.dumps({"address": cluster.address, "nodes": [n.name for n in cluster.nodes]})
