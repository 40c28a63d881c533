"""``python -m rlrepro.bench NAME``: run a benchmark and print its figures."""

from __future__ import annotations

import argparse

from rlrepro.bench import impala_toy

BENCHMARKS = {"impala-toy": impala_toy}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rlrepro.bench", description=__doc__)
    parser.add_argument("name", choices=sorted(BENCHMARKS))
    known, rest = parser.parse_known_args(argv)
    return BENCHMARKS[known.name].main(rest)


if __name__ == "__main__":
    raise SystemExit(main())
