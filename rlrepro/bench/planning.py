"""How long building the DAG takes: planning every spec in a fresh interpreter, and ``snakemake -n``.

Snakemake plans on every invocation (including ``--lint`` and dry runs), so planning must stay light: the
planner imports neither JAX nor MLflow. Prints the wall seconds of each, imports included.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

_PLAN = """
import sys
from rlrepro.workflow import cannot_run, plan
plans = [p for scale in ("smoke", "cpu", "paper") for p in plan([sys.argv[1]], scale)]
[cannot_run(p) for p in plans]
print(sum(len(p.jobs) for p in plans), sorted(m for m in ("jax", "mlflow") if m in sys.modules))
"""


def _wall(command: list[str], cwd: Path) -> tuple[float, str]:
    started = time.perf_counter()
    result = subprocess.run(command, capture_output=True, text=True, cwd=cwd, check=True)
    return time.perf_counter() - started, result.stdout


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rlrepro.bench planning", description=__doc__.splitlines()[0])
    parser.add_argument("--specs", default="specs")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    root = Path.cwd()
    python_start = min(_wall([sys.executable, "-c", "pass"], root)[0] for _ in range(args.repeats))
    plan_runs = [_wall([sys.executable, "-c", _PLAN, args.specs], root) for _ in range(args.repeats)]
    jobs, heavy = plan_runs[0][1].split(maxsplit=1)
    snakemake = Path(sys.executable).with_name("snakemake")
    dry = min(_wall([str(snakemake), "-n", "--quiet", "--config", f"specs={args.specs}"], root)[0] for _ in range(args.repeats))
    print(f"planning every spec at every scale ({jobs} jobs; heavy modules imported: {heavy.strip()})")
    print(f"  python start-up only        {python_start:6.2f} s")
    print(f"  plan, imports included      {min(s for s, _ in plan_runs):6.2f} s (best of {args.repeats})")
    print(f"  snakemake -n (default DAG)  {dry:6.2f} s (best of {args.repeats})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
