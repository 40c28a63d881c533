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
    "sr-grad-norms": "rlrepro.bench.sr_grad_norms",
    "sr-lstm-cost": "rlrepro.bench.sr_lstm_cost",
    "slurm-startup": "rlrepro.bench.slurm_startup",
    "frozen": "rlrepro.bench.frozen",
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rlrepro.bench", description=__doc__)
    # NAME, not the choices, in the usage: their list is one unbreakable word too wide for 80 columns
    names = sorted(BENCHMARKS)
    parser.add_argument("name", metavar="NAME", choices=names, help=f"one of: {', '.join(names)}")
    # everything after NAME, --help included, goes to the benchmark's own parser
    parser.add_argument("arguments", nargs=argparse.REMAINDER, help="the benchmark's options (NAME --help lists them)")
    args = parser.parse_args(argv)
    return importlib.import_module(BENCHMARKS[args.name]).main(args.arguments)


if __name__ == "__main__":
    raise SystemExit(main())
