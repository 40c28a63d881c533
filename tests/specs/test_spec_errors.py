"""Spec errors a user can act on: the claim's id, the YAML line, 'did you mean' for a misspelt key, non-UTF-8 text."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlrepro.cli import main
from rlrepro.specs import SpecError, load_spec

REPO = Path(__file__).resolve().parents[2]
TOY = REPO / "specs" / "impala" / "offpolicy_correction_toy.yaml"


def _broken(tmp_path: Path, old: str, new: str) -> Path:
    text = TOY.read_text(encoding="utf-8")
    assert old in text
    path = tmp_path / "impala" / TOY.name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    return path


def test_a_misspelt_key_gets_did_you_mean_and_its_line(tmp_path: Path) -> None:
    path = _broken(tmp_path, "\n  unroll_length:", "\n  unrol_length:")
    line = 1 + path.read_text().splitlines().index(next(x for x in path.read_text().splitlines() if "unrol_length" in x))
    with pytest.raises(SpecError) as excinfo:
        load_spec(path)
    assert excinfo.value.problems == [  # one line: the required unroll_length it was meant to be is not another
        f"agent.unrol_length: unknown key (not a field of this model; did you mean 'unroll_length', a required field "
        f"this block lacks?) (line {line})"]


def test_a_claim_error_names_the_claim_id(tmp_path: Path) -> None:
    path = _broken(tmp_path, "better: corr=vtrace__lag=32__replay=0.0__B=32", "better: corr=vtrace__lag=33")
    with pytest.raises(SpecError) as excinfo:
        load_spec(path)
    [problem] = excinfo.value.problems
    assert problem.startswith("claims[0].better: unknown ['corr=vtrace__lag=33']")
    assert problem.endswith("(claim 'vtrace_best_at_large_lag', line 95)") or "claim 'vtrace_best_at_large_lag', line" in problem


def test_a_spec_that_is_not_utf8_is_one_clear_message(tmp_path: Path, capsys) -> None:
    path = tmp_path / "impala" / "enc.yaml"
    path.parent.mkdir(parents=True)
    path.write_bytes("paper: impala\nexperiment: enc  # caf\xe9\n".encode("latin-1"))
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert "not UTF-8 text: byte 0xe9 at offset" in err and "save the file as UTF-8" in err and "Traceback" not in err


def test_a_full_disk_is_one_message_that_says_the_same_command_resumes(tmp_path: Path, monkeypatch, capsys) -> None:
    import errno

    import rlrepro.cli as cli

    def full(args):
        raise OSError(errno.ENOSPC, "No space left on device", str(tmp_path / "results" / "x"))

    monkeypatch.setattr(cli, "cmd_validate", full)
    assert main(["validate"]) == 6
    err = capsys.readouterr().err
    assert err.startswith("error: no space left on the device writing") and "run the same command again" in err


def test_a_typo_inside_a_nested_union_block_is_one_line_on_its_line(tmp_path: Path) -> None:
    """Synthetic Returns' optimiser is RMSProp or Adam (a plain union): a misspelt 'epsilon' is one line at the
    misspelt key, not one per union member plus a 'missing' line at the block, and never 'did you mean' itself."""
    chain = REPO / "specs" / "synthetic_returns" / "chain.yaml"
    text = chain.read_text(encoding="utf-8")
    lines = text.splitlines()
    at = next(i for i, x in enumerate(lines) if x.strip().startswith("epsilon:"))
    assert lines[at - 2].strip() == "optimizer:"  # the first epsilon is the optimiser's
    lines[at] = lines[at].replace("epsilon:", "epsilom:", 1)
    path = tmp_path / "synthetic_returns" / chain.name
    path.parent.mkdir(parents=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(SpecError) as excinfo:
        load_spec(path)
    assert excinfo.value.problems == [
        "agent.optimizer.epsilom: unknown key (not a field of this model; did you mean 'epsilon', a required field "
        f"this block lacks?) (line {at + 1})"]


def test_a_misspelt_required_field_is_one_line_at_the_misspelt_key(tmp_path: Path) -> None:
    path = _broken(tmp_path, "\n    epsilon: 0.01", "\n    epsilom: 0.01")
    line = 1 + path.read_text().splitlines().index("    epsilom: 0.01")
    with pytest.raises(SpecError) as excinfo:
        load_spec(path)
    assert excinfo.value.problems == [
        "agent.optimizer.epsilom: unknown key (not a field of this model; did you mean 'epsilon', a required field "
        f"this block lacks?) (line {line})"]
