"""A single-node Slurm on 127.0.0.1 for tests/test_cluster.py: munged, slurmctld and slurmd of Debian's slurm-wlm,
every file (config, key, sockets, state, logs) in one temporary folder, every process stopped by its PID.

Nothing is written under /etc: the daemons and the clients find the config through ``SLURM_CONF`` (in
``cluster.env`` only). A slurm.conf at /etc/slurm would make every later ``snakemake`` start on the machine wait
~10 s: the executor plugin runs ``scontrol show config`` when it is imported, and with a config naming a stopped
controller, scontrol waits for it (issue 15, item 9).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

DAEMONS = ("munged", "mungekey", "slurmctld", "slurmd", "sbatch", "squeue", "scontrol", "srun")
PARTITION = "rlrepro"


def missing_tools() -> list[str]:
    """The Slurm/munge programs not installed (`make test-cluster` installs them with apt)."""
    return [tool for tool in DAEMONS if shutil.which(tool) is None and not Path("/usr/sbin", tool).exists()]


def _tool(name: str) -> str:
    return shutil.which(name) or str(Path("/usr/sbin", name))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Cluster:
    """A running cluster: its folder, its config, the environment its clients need, its processes."""

    root: Path
    conf: Path
    env: dict[str, str]
    processes: dict[str, subprocess.Popen] = field(default_factory=dict)

    @property
    def jobcomp(self) -> Path:
        """One line per finished job (JobComp plugin filetxt): no accounting database needed."""
        return self.root / "jobcomp.txt"

    def log(self, name: str) -> str:
        path = self.root / f"{name}.log"
        return path.read_text(errors="replace") if path.exists() else f"(no {path})"

    def run(self, *command: str, timeout: float = 30) -> subprocess.CompletedProcess:
        return subprocess.run(list(command), capture_output=True, text=True, env=self.env, timeout=timeout)

    def completed_jobs(self) -> list[dict[str, str]]:
        """The JobComp records: JobId, JobName, JobState, TimeLimit, ... per finished job."""
        if not self.jobcomp.exists():
            return []
        records = []
        for line in self.jobcomp.read_text().splitlines():
            record = {}
            for item in line.split():
                key, _, value = item.partition("=")
                record[key] = value
            records.append(record)
        return records


def _config(root: Path, host: str, ports: tuple[int, int], cpus: int, memory_mb: int) -> str:
    # proctrack/linuxproc and task/none: no cgroups needed (containers, CI machines). MinJobAge stays at Slurm's
    # default (300 s) so squeue still lists finished jobs for the executor plugin's status checks.
    return f"""\
ClusterName=rlrepro-test
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={ports[0]}
SlurmdPort={ports[1]}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket={root}/munge.socket
CredType=cred/munge
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool
SlurmctldPidFile={root}/slurmctld.pid
SlurmdPidFile={root}/slurmd.pid
SlurmctldLogFile={root}/slurmctld.log
SlurmdLogFile={root}/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SwitchType=switch/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/filetxt
JobCompLoc={root}/jobcomp.txt
ReturnToService=2
MinJobAge=300
KillWait=5
OverTimeLimit=0
InactiveLimit=0
MessageTimeout=10
SchedulerParameters=sched_interval=5
NodeName={host} NodeAddr=127.0.0.1 CPUs={cpus} RealMemory={memory_mb} State=UNKNOWN
PartitionName={PARTITION} Nodes={host} Default=YES MaxTime=INFINITE State=UP
"""


def _wait(predicate, timeout: float, what: str, cluster: Cluster) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.5)
    raise TimeoutError(
        f"{what} not within {timeout:.0f} s\n--- slurmctld.log\n{cluster.log('slurmctld')[-3000:]}"
        f"\n--- slurmd.log\n{cluster.log('slurmd')[-3000:]}\n--- munged.log\n{cluster.log('munged')[-2000:]}"
    )


def _stop(process: subprocess.Popen, timeout: float = 15) -> None:
    if process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=timeout)


@contextmanager
def slurm_cluster(root: Path, *, cpus: int | None = None, memory_mb: int = 16000) -> Iterator[Cluster]:
    """Start munged, slurmctld and slurmd (in the foreground, children of this process) with files in ``root``;
    stop them by PID on exit. ``cpus`` defaults to this machine's."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "state").mkdir()
    (root / "spool").mkdir()
    host = socket.gethostname().split(".")[0]
    conf = root / "slurm.conf"
    conf.write_text(_config(root, host, (_free_port(), _free_port()), cpus or os.cpu_count() or 1, memory_mb))
    # The jobstep plugin runs the job's srun with every SLURM_* variable removed (SLURM_CONF included), so inside a
    # job srun would look for /etc/slurm/slurm.conf: an srun first on PATH puts SLURM_CONF back. A cluster with its
    # config at the default place (every real one) needs no such thing.
    bin_dir = root / "bin"
    bin_dir.mkdir()
    (bin_dir / "srun").write_text(f'#!/bin/sh\nSLURM_CONF={conf} exec {_tool("srun")} "$@"\n')
    (bin_dir / "srun").chmod(0o755)
    env = {**os.environ, "SLURM_CONF": str(conf), "PATH": f"{bin_dir}:{os.environ.get('PATH', '')}"}
    cluster = Cluster(root, conf, env)
    key = root / "munge.key"
    try:
        subprocess.run([_tool("mungekey"), "--create", f"--keyfile={key}"], check=True, timeout=30,
                       capture_output=True)
        key.chmod(0o600)
        # --force: the folder is a temporary one, not /etc/munge with munge's ownership checks.
        cluster.processes["munged"] = subprocess.Popen(
            [_tool("munged"), "--foreground", "--force", f"--socket={root}/munge.socket", f"--key-file={key}",
             f"--pid-file={root}/munged.pid", f"--log-file={root}/munged.log", f"--seed-file={root}/munged.seed"],
            stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, start_new_session=True,
        )
        _wait(lambda: (root / "munge.socket").exists(), 30, "munged's socket", cluster)
        cluster.processes["slurmctld"] = subprocess.Popen(
            [_tool("slurmctld"), "-D", "-i", "-f", str(conf)], env=env,
            stdout=open(root / "slurmctld.out", "w"), stderr=subprocess.STDOUT, start_new_session=True,
        )
        _wait(lambda: cluster.run(_tool("scontrol"), "ping", timeout=15).stdout.count("UP") > 0, 60,
              "slurmctld answering scontrol ping", cluster)
        cluster.processes["slurmd"] = subprocess.Popen(
            [_tool("slurmd"), "-D", "-f", str(conf), "-N", host], env=env,
            stdout=open(root / "slurmd.out", "w"), stderr=subprocess.STDOUT, start_new_session=True,
        )

        def node_idle() -> bool:
            states = cluster.run(_tool("sinfo"), "-h", "-o", "%t", timeout=15).stdout.split()
            return bool(states) and all(s.rstrip("*") == "idle" for s in states)

        _wait(node_idle, 60, "the node idle in sinfo", cluster)
        yield cluster
    finally:
        # Jobs first (their processes are slurmstepd's children), then the daemons, newest first.
        if "slurmctld" in cluster.processes and cluster.processes["slurmctld"].poll() is None:
            subprocess.run([_tool("scancel"), "--full", "--partition", PARTITION], env=env, capture_output=True,
                           timeout=30)
        for name in ("slurmd", "slurmctld", "munged"):
            if name in cluster.processes:
                _stop(cluster.processes[name])
