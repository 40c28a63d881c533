"""The committed JSON schema (specs/spec.schema.json) is generated from the models and checked for drift."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from rlrepro.cli import main
from rlrepro.specs.schema import schema_text
from rlrepro.specs.environments import ENV_KINDS

REPO = Path(__file__).resolve().parents[2]
COMMITTED = REPO / "specs" / "spec.schema.json"


def test_committed_schema_equals_the_models() -> None:
    assert COMMITTED.read_text(encoding="utf-8") == schema_text(), "run `python -m rlrepro schema` and commit it"


def test_schema_text_is_deterministic_json_with_a_trailing_newline() -> None:
    text = schema_text()
    assert text == schema_text()
    assert text.endswith("}\n")
    schema = json.loads(text)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["title"] == "rlrepro experiment spec"
    assert schema["additionalProperties"] is False  # extra="forbid" reaches editors too
    assert set(schema["required"]) >= {"paper", "experiment", "agent", "environments", "budget", "scales"}


def test_schema_carries_field_descriptions_and_discriminators() -> None:
    defs = json.loads(schema_text())["$defs"]
    assert "learning rate" in defs["RMSPropSpec"]["properties"]["learning_rate"]["description"].lower()
    assert defs["ImpalaAgentSpec"]["properties"]["kind"]["const"] == "impala"
    environments = json.loads(schema_text())["properties"]["environments"]["items"]
    assert environments["discriminator"]["propertyName"] == "kind"
    assert set(environments["discriminator"]["mapping"]) == set(ENV_KINDS)


def test_schema_check_passes_on_the_committed_file(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(REPO)
    assert main(["schema", "--check"]) == 0
    assert "up to date" in capsys.readouterr().out


def test_schema_check_fails_on_a_modified_copy(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    copy = tmp_path / "spec.schema.json"
    schema = json.loads(COMMITTED.read_text(encoding="utf-8"))
    schema["$defs"]["RMSPropSpec"]["properties"]["learning_rate"]["description"] = "edited by hand"
    copy.write_text(json.dumps(schema, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    assert main(["schema", "--check", "--output", str(copy)]) == 1
    captured = capsys.readouterr()
    assert f"{copy} is out of date" in captured.err
    assert copy.read_text(encoding="utf-8") != schema_text()  # --check never rewrites the file


def test_schema_check_fails_when_the_file_is_missing(tmp_path: Path) -> None:
    assert main(["schema", "--check", "--output", str(tmp_path / "absent.json")]) == 1


def test_schema_writes_the_file_that_then_checks(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "out" / "spec.schema.json"
    assert main(["schema", "--output", str(target)]) == 0
    assert target.read_text(encoding="utf-8") == schema_text()
    assert main(["schema", "--check", "--output", str(target)]) == 0
    shutil.copy(COMMITTED, tmp_path / "committed.json")
    assert main(["schema", "--check", "--output", str(tmp_path / "committed.json")]) == 0
    assert "wrote" in capsys.readouterr().out
