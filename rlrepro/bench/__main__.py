"""``python -m rlrepro.bench NAME [options]``: run a benchmark and print its figures and ratios."""

from __future__ import annotations

import argparse
import importlib

# name -> module with a main(argv) function (imported only when chosen)
BENCHMARKS = {
    "impala-toy": "rlrepro.bench.impala_toy",
    "impala-atari": "rlrepro.bench.impala_atari",
    "evolving-rl": "rlrepro.bench.evolving_rl",
    "frodo": "rlrepro.bench.frodo",
    "planning": "rlrepro.bench.planning",
    "refer": "rlrepro.bench.refer",
    "acer": "rlrepro.bench.acer",
    "impala-sr": "rlrepro.bench.impala_sr",
    "slurm-startup": "rlrepro.bench.slurm_startup",
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rlrepro.bench", description=__doc__)
    parser.add_argument("name", choices=sorted(BENCHMARKS))
    known, rest = parser.parse_known_args(argv)
    return importlib.import_module(BENCHMARKS[known.name]).main(rest)


if __name__ == "__main__":
    raise SystemExit(main())
