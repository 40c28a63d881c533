"""The committed JSON schema (specs/spec.schema.json) is generated from the models and checked for drift."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
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


def test_schema_carries_field_descriptions_and_kind_constants() -> None:
    defs = json.loads(schema_text())["$defs"]
    assert "learning rate" in defs["RMSPropSpec"]["properties"]["learning_rate"]["description"].lower()
    assert defs["ImpalaAgentSpec"]["properties"]["kind"]["const"] == "impala"
    environments = json.loads(schema_text())["properties"]["environments"]["items"]
    assert "discriminator" not in environments  # an OpenAPI keyword: generic validators ignore it
    assert len(environments["oneOf"]) == len(ENV_KINDS)


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


# --- standard JSON Schema: generic validators give the same answers as `rlrepro validate` -------------------------

SPEC_FILES = sorted((REPO / "specs").glob("*/*.yaml"))


def _walk_keys(node: object) -> set[str]:
    """Every keyword used in a schema (the names under "properties"/"$defs" are field names, not keywords)."""
    if isinstance(node, list):
        return set().union(*(_walk_keys(item) for item in node)) if node else set()
    if not isinstance(node, dict):
        return set()
    keys = set()
    for key, value in node.items():
        keys.add(key)
        if key in ("properties", "$defs"):
            keys |= set().union(*(_walk_keys(sub) for sub in value.values())) if value else set()
        elif key not in ("default", "const", "enum", "examples"):
            keys |= _walk_keys(value)
    return keys


def _validator():
    import jsonschema

    schema = json.loads(COMMITTED.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)  # a valid 2020-12 schema in the first place
    return jsonschema.Draft202012Validator(schema, format_checker=jsonschema.FormatChecker())


def test_schema_uses_only_standard_keywords() -> None:
    import jsonschema

    # The vocabulary of JSON Schema 2020-12 (core, applicator, validation, meta-data, unevaluated, format)
    # as the independent validator's meta-schema knows it, plus "title"/"description"/"default".
    meta = jsonschema.Draft202012Validator.META_SCHEMA
    vocabulary = set(jsonschema.Draft202012Validator.VALIDATORS) | {"$defs", "$schema", "title", "description",
                                                                     "default", "examples", "deprecated",
                                                                     "readOnly", "writeOnly", "$id", "$comment"}
    assert meta["$id"].startswith("https://json-schema.org/draft/2020-12")
    unknown = _walk_keys(json.loads(schema_text())) - vocabulary
    assert not unknown, f"keywords generic validators ignore: {sorted(unknown)}"


def test_unions_are_one_of_on_kind_constants() -> None:
    schema = json.loads(schema_text())
    environments = schema["properties"]["environments"]["items"]
    branches = [schema["$defs"][ref["$ref"].split("/")[-1]] for ref in environments["oneOf"]]
    assert {b["properties"]["kind"]["const"] for b in branches} == set(ENV_KINDS)
    assert all("kind" in b["required"] for b in branches)  # so no object matches two branches
    frames = schema["$defs"]["BudgetSpec"]["properties"]["frames"]
    assert frames["exclusiveMinimum"] == 0 and "gt" not in frames


def test_every_spec_starts_with_the_schema_line() -> None:
    assert SPEC_FILES, "no specs found"
    for path in SPEC_FILES:
        first = path.read_text(encoding="utf-8").splitlines()[0]
        assert first == "# yaml-language-server: $schema=../spec.schema.json", f"{path}: first line is {first!r}"
        target = (path.parent / first.split("$schema=", 1)[1]).resolve()
        assert target == COMMITTED


@pytest.mark.parametrize("path", SPEC_FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_repo_spec_is_valid_for_an_independent_validator(path: Path) -> None:
    from rlrepro.specs.yaml_io import load_yaml

    errors = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in _validator().iter_errors(load_yaml(path))]
    assert not errors, f"{path}: " + "; ".join(errors[:5])


def _bad(change: str) -> dict:
    """The toy spec with one mistake a user could make in an editor."""
    from tests.factories import toy_spec_data

    data = toy_spec_data()
    if change == "zero frames":
        data["budget"]["frames"] = 0  # PositiveCount: gt 0 (went through a BeforeValidator: was "gt" in the schema)
    elif change == "negative learning rate":
        data["agent"]["optimizer"]["learning_rate"] = -0.001
    elif change == "seeds as text":
        data["budget"]["seeds"] = "2"
    elif change == "unknown key":
        data["agent"]["learning_rat"] = 0.1
    elif change == "unknown agent kind":
        data["agent"]["kind"] = "impalla"
    elif change == "unknown environment kind":
        data["environments"][0]["kind"] = "jaxx"
    elif change == "field of another environment kind":
        data["environments"][0]["game"] = "Pong"  # an Atari field on a JAX environment
    elif change == "fraction above one":
        data["run"] = {"final_fraction": 1.5}
    return data


BAD = ("zero frames", "negative learning rate", "seeds as text", "unknown key", "unknown agent kind",
       "unknown environment kind", "field of another environment kind", "fraction above one")


@pytest.mark.parametrize("change", ("none", *BAD))
def test_independent_validator_agrees_with_rlrepro_validate(change: str, tmp_path: Path) -> None:
    from rlrepro.specs import SpecError, load_spec
    from tests.factories import toy_spec_data, write_spec

    data = toy_spec_data() if change == "none" else _bad(change)
    path = write_spec(tmp_path, data)
    try:
        load_spec(path)
        ours = True
    except SpecError:
        ours = False
    theirs = _validator().is_valid(data)
    assert ours == (change == "none"), f"rlrepro validate: {change}"
    assert theirs == ours, f"jsonschema says valid={theirs}, rlrepro validate says valid={ours} for {change!r}"


def _check_jsonschema(*files: Path) -> subprocess.CompletedProcess:
    """The check-jsonschema CLI (what pre-commit hooks and CI use); it parses the YAML itself, as editors do."""
    exe = Path(sys.executable).with_name("check-jsonschema")
    command = [str(exe), "--no-cache", "--schemafile", str(COMMITTED), *map(str, files)]
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


def test_check_jsonschema_accepts_every_repo_spec() -> None:
    result = _check_jsonschema(*SPEC_FILES)
    assert result.returncode == 0, result.stdout + result.stderr


def test_check_jsonschema_rejects_what_rlrepro_validate_rejects(tmp_path: Path) -> None:
    from tests.factories import write_spec

    for change in BAD:
        path = write_spec(tmp_path / change.replace(" ", "_"), _bad(change))
        result = _check_jsonschema(path)
        assert result.returncode == 1, f"check-jsonschema accepted {change!r}: {result.stdout}{result.stderr}"
        assert "Schema validation errors" in result.stdout + result.stderr
