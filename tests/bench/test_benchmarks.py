"""Every benchmark still runs (tiny sizes): a benchmark that rots is found here, not on a GPU machine."""

import pytest

from rlrepro.bench.__main__ import BENCHMARKS, main

# name -> (tiny arguments, a word its printout must contain)
TINY = {
    "impala-toy": (["--batch-size", "4", "--unroll-length", "5", "--repeats", "1"], "frames/s"),
    "impala-atari": (["--chunks", "1", "--updates-per-chunk", "2", "--env-seconds", "1"], "frames/s"),
    "frodo": (["--kind", "atari", "--inner-steps", "1", "--batch-size", "2", "--unroll-length", "2", "--repeats", "1"], "ratio"),
    "evolving-rl": (["--updates", "10"], "ratio"),
    "planning": (["--repeats", "1"], "snakemake -n"),
    "refer": (["--seeds", "1", "--steps", "5", "--rounds", "1", "--batch-size", "8", "--n-start", "50"], "ratio"),
    "acer": (["--seeds", "1", "--steps", "3", "--rounds", "1", "--batch-episodes", "2", "--window", "4", "--n-start", "50"],
             "ratio"),
    "impala-sr": (["--batch-size", "4", "--unroll", "5", "--big-capacity", "20", "--repeats", "1", "--rounds", "1",
                   "--atari-batch", "2", "--atari-unroll", "3", "--atari-capacity", "20", "--atari-repeats", "1"],
                  "memory read share"),
    "slurm-startup": (["--rounds", "1"], "no slurm"),
}


def test_every_benchmark_has_a_tiny_setting():
    assert set(TINY) == set(BENCHMARKS)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(TINY))
def test_benchmark_runs_and_prints_its_figures(name: str, capsys: pytest.CaptureFixture[str]):
    arguments, expected = TINY[name]
    assert main([name, *arguments]) == 0
    assert expected in capsys.readouterr().out


def test_refer_memory_bookkeeping_benchmark_runs(capsys: pytest.CaptureFixture[str]):
    assert main(["refer", "--memory", "3000", "--rounds", "1", "--batch-size", "8"]) == 0
    out = capsys.readouterr().out
    assert "3,000 stored steps" in out and "ratio recount / incremental" in out
