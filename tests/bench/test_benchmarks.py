"""Every benchmark still runs (tiny sizes): a benchmark that rots is found here, not on a GPU machine. Its printout
reads in an 80-column terminal (the project's standard)."""

import pytest

from rlrepro.bench.__main__ import BENCHMARKS, main
from rlrepro.plan_text import WIDTH

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
    "sr-grad-norms": (["--updates", "2"], "SR/RL"),
    "sr-lstm-cost": (["--scale", "smoke", "--seeds", "2", "--lstm-sizes", "none", "8", "--updates-per-chunk", "1",
                      "--rounds", "1"], "s per chunk"),
    "frozen": (["--only", "td_lambda", "--chunks", "1", "--rounds", "1"], "frozen / training"),
}


def test_every_benchmark_has_a_tiny_setting():
    assert set(TINY) == set(BENCHMARKS)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(TINY))
def test_benchmark_runs_and_prints_its_figures(name: str, capsys: pytest.CaptureFixture[str]):
    arguments, expected = TINY[name]
    assert main([name, *arguments]) == 0
    out = capsys.readouterr().out
    assert expected in out
    too_wide = [line for line in out.splitlines() if len(line) > WIDTH]
    assert not too_wide, f"{name} prints {len(too_wide)} line(s) wider than {WIDTH} columns:\n" + "\n".join(
        f"  ({len(line)}) {line}" for line in too_wide
    )


def test_refer_memory_bookkeeping_benchmark_runs(capsys: pytest.CaptureFixture[str]):
    assert main(["refer", "--memory", "3000", "--rounds", "1", "--batch-size", "8"]) == 0
    out = capsys.readouterr().out
    assert "3,000 stored steps" in out and "ratio recount / incremental" in out
    assert max(map(len, out.splitlines())) <= WIDTH


def test_printouts_fit_80_columns_with_realistic_figures(monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]):
    """The tiny runs print small figures, a big machine large ones: through each benchmark's real ``main``, with its
    measurements replaced by large figures (tens of millions of frames/s, seconds per update, a 100,000-slot memory,
    the longest mode name), every line still fits 80 columns."""
    from rlrepro.bench import acer, impala_atari, impala_sr, impala_toy, slurm_startup
    from rlrepro.bench.timing import Timing

    monkeypatch.setattr(acer, "bench", lambda *_: {
        "env_steps_per_s": 987_654.3, "learner_calls_per_s": 123_456.7, "learner_ms_per_seed_step": 1_234.56,
        "allowed_steps_per_s": 987_654.3, "end_to_end_steps_per_s": 987_654.3, "ratio": 12.34})  # fmt: skip
    monkeypatch.setattr(impala_atari, "env_only", lambda *_: 98_765_432.0)
    monkeypatch.setattr(impala_atari, "learner_only", lambda *_, **__: 98_765_432.0)
    monkeypatch.setattr(impala_atari, "end_to_end", lambda *_: (98_765_432.0, 12.34))
    for part in ("env_only", "learner_only", "end_to_end"):
        monkeypatch.setattr(impala_toy, part, lambda *_: 98_765_432_109.0)
    monkeypatch.setattr(slurm_startup, "_time", lambda *_: 12_345.67)
    for argv in (["acer", "--seeds", "12", "--env", "HalfCheetah-v5"], ["impala-atari", "--mode", "a2c_sync_traj"],
                 ["impala-atari", "--table1"],
                 ["impala-toy"], ["slurm-startup", "--rounds", "1", "--snakemake"]):
        assert main(argv) == 0
    monkeypatch.setattr(slurm_startup.shutil, "which", lambda _: None)  # the note printed without Slurm's tools
    assert main(["slurm-startup", "--rounds", "1"]) == 0
    timings = {name: Timing(seconds, 12_345.6) for name, seconds in
               (("impala", 1e-4), ("sr_baseline", 1e-4), ("sr_memory100000", 12.3), ("sr_memory1", 1e-4))}
    print("\n".join(impala_sr.comparison(timings, 80 * 256 * 4, "sr_baseline", ms_per_update=True)))
    out = capsys.readouterr().out
    assert "98,765,432" in out and "98,765,432,109" in out and "12345.67" in out and "sr_memory100000" in out
    assert "IMPALA 48 actors" in out and "A3C 32 workers" in out and "Batched A2C (sync traj.)" in out  # --table1
    too_wide = [line for line in out.splitlines() if len(line) > WIDTH]
    assert not too_wide, f"{len(too_wide)} line(s) wider than {WIDTH} columns:\n" + "\n".join(too_wide)


def test_impala_atari_runs_the_actors_policy_where_asked_and_says_so_in_its_json(
        tmp_path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]):
    """``--actor-device cpu`` sets the placement a training job reads ($RLREPRO_ACTOR_DEVICE) before the trainer is
    built; ``--end-to-end-only`` skips the parts; the JSON carries both (the device check's rows read them)."""
    import json

    import jax

    from rlrepro.bench import impala_atari

    monkeypatch.setenv("RLREPRO_ACTOR_DEVICE", "learner")  # restored after the test: the bench sets it to cpu
    monkeypatch.setattr(impala_atari, "env_only", lambda *_: pytest.fail("--end-to-end-only measured the emulators"))
    built = []

    def end_to_end(trainer, chunks):
        built.append(trainer.actor_device)
        return 12.0, 1.0

    monkeypatch.setattr(impala_atari, "end_to_end", end_to_end)
    path = tmp_path / "figures.json"
    assert main(["impala-atari", "--envs", "4", "--actor-device", "cpu", "--end-to-end-only", "--json", str(path)]) == 0
    figures = json.loads(path.read_text())
    assert figures["actor_device"] == "cpu" and figures["env_only"] is None and figures["end_to_end"] == 12.0
    assert built == [jax.devices("cpu")[0]] and "acting on cpu" in capsys.readouterr().out


@pytest.mark.parametrize("name", ["", *sorted(BENCHMARKS)])
def test_help_reaches_the_benchmark_and_fits_80_columns(name: str, monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]):
    """``python -m rlrepro.bench NAME --help`` prints the benchmark's own options (not the launcher's), and every
    help fits an 80-column terminal (argparse wraps at $COLUMNS, but not inside a word such as a choices list)."""
    monkeypatch.setenv("COLUMNS", str(WIDTH))
    with pytest.raises(SystemExit) as exited:
        main([name, "--help"] if name else ["--help"])
    assert exited.value.code == 0
    out = capsys.readouterr().out
    usage = " ".join(["usage: python -m rlrepro.bench", *([name] if name else []), "[-h]"])
    assert out.startswith(usage), f"--help printed another usage than {usage!r}:\n{out[:200]}"
    too_wide = [line for line in out.splitlines() if len(line) > WIDTH]
    who = name or "the launcher"
    assert not too_wide, f"{who}'s help has line(s) wider than {WIDTH} columns:\n" + "\n".join(too_wide)
