"""What installing Slurm's client tools does to every ``snakemake`` start on a machine (issue 15, item 9).

The Slurm executor plugin (pinned 2.8.0) runs ``scontrol show config`` when it is imported (its settings' help
text asks for MinJobAge), and Snakemake imports every installed executor plugin at start, so every run pays for
it, even ``snakemake -n`` with no Slurm profile. Three states, timed interleaved in rounds:

- ``no slurm``: sinfo not on PATH (the plugin skips the query), as before ``apt-get install slurm-wlm``;
- ``slurm, no config``: the tools installed, no slurm.conf anywhere (what ``make test-cluster`` leaves:
  its config lives in a temporary folder); scontrol fails at once;
- ``slurm, controller down``: a slurm.conf naming a controller that does not answer (what a config under
  /etc/slurm would do once a test cluster stopped); scontrol waits for it.

    python -m rlrepro.bench slurm-startup [--rounds 3] [--snakemake]
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rlrepro.plan_text import table, wrap

SLURM_TOOLS = ("sinfo", "scontrol", "squeue", "sacct", "sbatch", "srun", "scancel")


def _path_without_slurm(folder: Path) -> str:
    """A PATH on which the Slurm tools are missing: the other programs of /usr/bin linked into ``folder``."""
    for entry in Path("/usr/bin").iterdir():
        if entry.name not in SLURM_TOOLS:
            (folder / entry.name).symlink_to(entry)
    return f"{Path(sys.executable).parent}:{folder}"


def _dead_controller_config(folder: Path) -> Path:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    conf = folder / "slurm.conf"
    conf.write_text(
        f"ClusterName=down\nSlurmctldHost=localhost(127.0.0.1)\nSlurmctldPort={port}\nAuthType=auth/munge\n"
        "NodeName=localhost CPUs=1 State=UNKNOWN\nPartitionName=p Nodes=localhost Default=YES State=UP\n"
    )
    return conf


def _time(command: list[str], env: dict[str, str], cwd: Path) -> float:
    started = time.perf_counter()
    subprocess.run(command, env=env, cwd=cwd, capture_output=True, timeout=300)
    return time.perf_counter() - started


def report(seconds: dict[tuple[str, str], list[float]], rounds: int) -> list[str]:
    """Per command and state, the median seconds and their ratio to the command's 'no slurm' median, in aligned
    columns for an 80-column terminal."""
    rows = []
    for what, state in seconds:
        median, reference = statistics.median(seconds[(what, state)]), statistics.median(seconds[(what, "no slurm")])
        rows.append((what, state, f"{median:.2f}", f"x{median / reference:.2f}"))
    return [*wrap(f"median seconds over {rounds} interleaved round(s); machine shared, load may vary"),
            *table(("command", "state", "median s", "of 'no slurm'"), rows, left=(0, 1))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rlrepro.bench slurm-startup", description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--snakemake", action="store_true", help="time `snakemake -n` too (seconds more per call)")
    args = parser.parse_args(argv)
    installed = shutil.which("sinfo") is not None
    if not installed:
        print("\n".join(wrap("sinfo is not installed: only the 'no slurm' state is timed "
                             "(apt-get install slurm-wlm for the others)")))
    repo = Path(__file__).resolve().parents[2]
    base = {k: v for k, v in os.environ.items() if k != "SLURM_CONF"}
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "bin").mkdir()
        states = {"no slurm": {**base, "PATH": _path_without_slurm(Path(tmp) / "bin")}}
        if installed:
            states["slurm, no config"] = base
            states["slurm, controller down"] = {**base, "SLURM_CONF": str(_dead_controller_config(Path(tmp)))}
        commands = {"import plugin": [sys.executable, "-c", "import snakemake_executor_plugin_slurm"]}
        if args.snakemake:
            commands["snakemake -n"] = [sys.executable, "-m", "snakemake", "-n", "-q"]
        seconds: dict[tuple[str, str], list[float]] = {}
        for _ in range(args.rounds):
            for what, command in commands.items():
                for state, env in states.items():
                    seconds.setdefault((what, state), []).append(_time(command, env, repo))
    print("\n".join(report(seconds, args.rounds)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
