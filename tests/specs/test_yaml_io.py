"""The spec YAML loader reads numbers and booleans as researchers mean them (YAML 1.2, not PyYAML's 1.1)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from rlrepro.specs import SpecError, load_spec
from rlrepro.specs.yaml_io import load_yaml, loads_yaml

MINIMAL_YAML = """\
paper: toy
experiment: mini
reference: {title: T, citation: C, where: W}
agent:
  kind: impala
  optimizer: {learning_rate: 1e-3, epsilon: 0.01}
  loss: {entropy_cost: 0.01}
  unroll_length: 5
  batch_size: 4
environments:
  - {kind: jax, id: catch, name: catch}
budget: {frames: 2e8, seeds: 2}
scales:
  smoke: {frames: 100, seeds: 1}
  cpu: {frames: 200, seeds: 1}
"""


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1e-3", 0.001),
        ("3e6", 3_000_000.0),
        ("-2E-4", -0.0002),
        ("+1e3", 1000.0),
        ("1.5e3", 1500.0),
        ("2e8", 200_000_000.0),
        ("0.00048", 0.00048),
        (".5", 0.5),
        ("1_000.5", 1000.5),
    ],
)
def test_exponent_and_decimal_floats_load_as_floats(text: str, expected: float) -> None:
    value = loads_yaml(f"x: {text}")["x"]
    assert type(value) is float  # PyYAML's own SafeLoader returns the string '1e-3' here
    assert value == expected


def test_stock_pyyaml_reads_exponent_without_dot_as_a_string() -> None:
    """The reason the custom loader exists: if PyYAML ever changes, this documents what we rely on."""
    import yaml

    assert yaml.safe_load("x: 1e-3")["x"] == "1e-3"
    assert loads_yaml("x: 1e-3")["x"] == 0.001


@pytest.mark.parametrize(("text", "expected"), [("1_000_000", 1_000_000), ("12_800", 12_800), ("42", 42), ("-7", -7)])
def test_integers_with_underscores_load_as_ints(text: str, expected: int) -> None:
    value = loads_yaml(f"x: {text}")["x"]
    assert type(value) is int
    assert value == expected


@pytest.mark.parametrize("word", ["yes", "no", "on", "off", "Yes", "NO", "On", "y", "n", "Y"])
def test_yaml_11_boolean_words_stay_strings(word: str) -> None:
    assert loads_yaml(f"x: {word}")["x"] == word


@pytest.mark.parametrize(
    ("text", "expected"), [("true", True), ("false", False), ("True", True), ("FALSE", False)]
)
def test_true_and_false_are_booleans(text: str, expected: bool) -> None:
    assert loads_yaml(f"x: {text}")["x"] is expected


@pytest.mark.parametrize("text", ["'1e-3'", '"1e-3"', "'3e6'"])
def test_quoted_numbers_stay_strings(text: str) -> None:
    assert loads_yaml(f"x: {text}")["x"] == text.strip("'\"")


def test_null_and_nested_flow_mappings() -> None:
    data = loads_yaml("a: null\nb: ~\nc: {d: [1, 2e-1, true, on]}")
    assert data == {"a": None, "b": None, "c": {"d": [1, 0.2, True, "on"]}}


def test_load_yaml_reads_a_file(tmp_path: Path) -> None:
    path = tmp_path / "x.yaml"
    path.write_text("lr: 6e-4\nframes: 2_000_000\nflag: off\n", encoding="utf-8")
    assert load_yaml(path) == {"lr": 0.0006, "frames": 2_000_000, "flag": "off"}


def test_quoted_learning_rate_is_rejected_naming_the_field(tmp_path: Path) -> None:
    path = tmp_path / "mini.yaml"
    path.write_text(MINIMAL_YAML.replace("learning_rate: 1e-3", "learning_rate: '1e-3'"), encoding="utf-8")
    with pytest.raises(SpecError) as caught:
        load_spec(path)
    message = str(caught.value)
    assert str(path) in message
    assert "agent.optimizer.learning_rate" in message
    assert "number" in message  # what was expected
    assert "'1e-3' (str)" in message  # what was found


def test_unquoted_learning_rate_loads(tmp_path: Path) -> None:
    path = tmp_path / "mini.yaml"
    path.write_text(MINIMAL_YAML, encoding="utf-8")
    assert load_spec(path).agent.optimizer.learning_rate == 0.001


@pytest.mark.parametrize(("text", "expected"), [("010", 10), ("1:30", "1:30"), ("-.5", -0.5)])
def test_other_yaml_11_number_forms_read_as_yaml_12(text: str, expected: object) -> None:
    assert loads_yaml(f"x: {text}")["x"] == expected


@pytest.mark.parametrize(
    ("text", "key", "second", "first"),
    [
        ("agent:\n  batch_size: 4\n  unroll_length: 5\n  batch_size: 8\n", "batch_size", 4, 2),
        ("a: 1\nb: 2\na: 3\n", "a", 3, 1),
        ("x: {lr: 1, lr: 2}\n", "lr", 1, 1),  # flow style: both on one line
    ],
)
def test_a_duplicate_key_is_an_error_naming_both_lines(text: str, key: str, second: int, first: int) -> None:
    # PyYAML keeps the second value silently; a spec must not change meaning by a copy-paste.
    with pytest.raises(yaml.YAMLError, match=rf"duplicate key '{key}' at line {second} \(first at line {first}\)"):
        loads_yaml(text)


def test_a_duplicate_key_in_a_spec_file_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "mini.yaml"
    path.write_text(MINIMAL_YAML.replace("  batch_size: 4\n", "  batch_size: 4\n  batch_size: 8\n"))
    with pytest.raises(SpecError, match=r"duplicate key 'batch_size' at line 10 \(first at line 9\)") as error:
        load_spec(path)
    assert str(error.value).startswith(f"{path}: invalid spec")


def test_a_key_written_after_a_merge_overrides_it_without_error() -> None:
    assert loads_yaml("base: &b {x: 1, y: 2}\nuse: {<<: *b, x: 3}\n")["use"] == {"x": 3, "y": 2}


PAPER_TABLE = """\
paper_table:
  caption: reference scores
  columns: [agent, score, source]
  rows:
    - [Human, -4336.9, standard table]
    - [{cell}, 43.5e9 steps, paper]
"""


def test_a_paper_table_row_split_at_an_unquoted_comma_is_rejected_naming_the_row(tmp_path: Path) -> None:
    # YAML's flow list reads "[Agent57 (steps, best seed), ...]" as four cells: every later cell would sit under the
    # wrong heading of the rendered table.
    path = tmp_path / "mini.yaml"
    path.write_text(MINIMAL_YAML + PAPER_TABLE.format(cell="Agent57 (steps, best seed)"), encoding="utf-8")
    with pytest.raises(SpecError) as caught:
        load_spec(path)
    message = str(caught.value)
    assert str(path) in message and "paper_table" in message
    assert "one cell per column in every row (3: ['agent', 'score', 'source'])" in message
    assert "rows[1] has 4 cells: ['Agent57 (steps', 'best seed)', '43.5e9 steps', 'paper']" in message
    assert "quote a cell that contains a comma" in message
    path.write_text(MINIMAL_YAML + PAPER_TABLE.format(cell='"Agent57 (steps, best seed)"'), encoding="utf-8")
    assert load_spec(path).paper_table.rows[1] == ["Agent57 (steps, best seed)", "43.5e9 steps", "paper"]
