"""Load, validate and resolve specs; errors name the file, the field, what was expected and what was found."""

from __future__ import annotations

import copy
import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

import yaml
from pydantic import BaseModel, TypeAdapter, ValidationError

from rlrepro.specs.control import CONTROL_OVERRIDES
from rlrepro.specs.agents import AgentSpec
from rlrepro.specs.environments import EnvSpec
from rlrepro.specs.common import Scale
from rlrepro.specs.experiment import ExperimentSpec, VariantSpec
from rlrepro.specs.cache import cached
from rlrepro.specs.yaml_io import load_yaml



def _models(model: type[BaseModel]) -> list[type[BaseModel]]:
    """``model`` and every model below it (through fields, lists, unions and optionals), each once."""
    found: list[type[BaseModel]] = []
    pending = [model]
    while pending:
        current = pending.pop()
        if current in found:
            continue
        found.append(current)
        for field in current.model_fields.values():
            stack = [field.annotation]
            while stack:
                annotation = stack.pop()
                if isinstance(annotation, type) and issubclass(annotation, BaseModel):
                    pending.append(annotation)
                else:
                    stack.extend(get_args(annotation))
    return found


_SPEC_MODELS = _models(ExperimentSpec)
# Pydantic puts the tag of a discriminated union into an error's location; error paths leave it out.
_UNION_TAGS = {str(tag) for m in _SPEC_MODELS if "kind" in m.model_fields
               and get_origin(annotation := m.model_fields["kind"].annotation) is Literal for tag in get_args(annotation)}
# Every field name of the spec's models: the words a misspelt key is matched against.
_FIELD_NAMES = sorted({name for m in _SPEC_MODELS for name in m.model_fields})
# The class names of the spec's models: pydantic names a member of a plain (untagged) union by its class in an error's
# location.
_MODEL_NAMES = {m.__name__ for m in _SPEC_MODELS}


def _did_you_mean(key: object, names: Iterable[str] = ()) -> str:
    """' (did you mean 'learning_rate'?)' for a key close to a field's name: one of ``names`` (the fields its block
    lacks) first, else any spec field's; never the key itself (a field of another model); '' otherwise."""
    import difflib  # noqa: PLC0415

    for candidates in (list(names), _FIELD_NAMES):
        close = difflib.get_close_matches(str(key), [n for n in candidates if n != str(key)], n=1, cutoff=0.75)
        if close:
            return f"; did you mean '{close[0]}'?"
    return ""

_AGENT_ADAPTER: TypeAdapter[Any] = TypeAdapter(AgentSpec)
_ENV_ADAPTER: TypeAdapter[Any] = TypeAdapter(EnvSpec)


class SpecError(ValueError):
    """A spec that does not validate. ``problems`` holds one line per error."""

    def __init__(self, source: str, problems: list[str]):
        self.source = source
        self.problems = problems
        super().__init__(f"{source}: invalid spec\n" + "\n".join(f"  {p}" for p in problems))


def load_spec(path: str | Path) -> ExperimentSpec:
    """Read and validate one spec file."""
    path = Path(path)
    try:
        data = load_yaml(path)
    except UnicodeDecodeError as error:
        raise SpecError(str(path), [f"not UTF-8 text: byte 0x{error.object[error.start]:02x} at offset {error.start} "
                                    "(save the file as UTF-8)"]) from None
    except (OSError, yaml.YAMLError) as error:
        raise SpecError(str(path), [f"cannot read YAML: {error}"]) from error
    if not isinstance(data, dict):
        raise SpecError(str(path), [f"expected a mapping at the top level, found {type(data).__name__}"])
    try:
        spec = validate_spec(data, source=str(path))
    except SpecError as error:
        raise SpecError(str(path), _located(error, path, data)) from None
    if spec.experiment != path.stem:
        raise SpecError(str(path), [f"experiment: expected the file name '{path.stem}', found '{spec.experiment}'"])
    for scale in ("smoke", "cpu", "paper"):
        for variant in spec.variant_list():
            resolve_agent(spec, variant, scale, source=str(path))  # type: ignore[arg-type]
        for env in spec.environments:
            resolve_env(spec, env.id, scale, source=str(path))  # type: ignore[arg-type]
    return spec


def _located(error: SpecError, path: Path, data: Mapping[str, Any]) -> list[str]:
    """Each problem with the claim's id where it is about a claim, and its line in the YAML file."""
    lines = []
    for problem in error.problems:
        field = problem.partition(":")[0]
        where = []
        if (m := re.match(r"claims\[(\d+)\]", field)) and int(m.group(1)) < len(data.get("claims") or []):
            claim = data["claims"][int(m.group(1))]
            if isinstance(claim, dict) and claim.get("id"):
                where.append(f"claim '{claim['id']}'")
        if (line := _yaml_line(path, field)) is not None:
            where.append(f"line {line}")
        lines.append(f"{problem} ({', '.join(where)})" if where else problem)
    return lines


def _yaml_line(path: Path, field: str) -> int | None:
    """The line of ``field`` ('claims[2].better', 'agent.optimizer.lr') in the YAML file: the deepest key found."""
    try:
        node = yaml.compose(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError, UnicodeDecodeError):
        return None
    line = None
    for part in re.findall(r"[^.\[\]]+|\[\d+\]", field):
        if isinstance(node, yaml.SequenceNode) and part.startswith("["):
            index = int(part[1:-1])
            if index >= len(node.value):
                break
            node = node.value[index]
        elif isinstance(node, yaml.MappingNode):
            found = next(((k, v) for k, v in node.value if k.value == part), None)
            if found is None:
                break
            line, node = found[0].start_mark.line + 1, found[1]
        else:
            break
    return line


def validate_spec(data: Mapping[str, Any], *, source: str = "<spec>") -> ExperimentSpec:
    """Validate a parsed spec (strict JSON semantics: strings are never coerced to numbers)."""
    try:
        return ExperimentSpec.model_validate_json(json.dumps(data, allow_nan=True))
    except ValidationError as error:
        raise SpecError(source, format_errors(error)) from None
    except (TypeError, ValueError) as error:
        raise SpecError(source, [f"not JSON-compatible data: {error}"]) from None


def format_errors(error: ValidationError, prefix: str = "") -> list[str]:
    """One line per mistake: field path, what was expected, what was found.

    A block whose type is a plain union (an optimiser: RMSProp or Adam) is reported against the member it comes
    closest to (fewest errors), not once per member; a misspelt key and the required field it was meant to be are
    one line, at the misspelt key (its YAML line): "unknown key (...; did you mean 'epsilon', a required field this
    block lacks?)".
    """
    items = _closest_union_members(error.errors(include_url=False))
    missing: dict[tuple, list[str]] = {}
    for item in items:
        if item["type"] == "missing" and item["loc"]:
            missing.setdefault(_block(item["loc"]), []).append(str(item["loc"][-1]))
    meant: set[tuple] = set()  # (block, field): a missing field named by a misspelt key's line
    lines = []
    for item in items:
        field = _field_path(item["loc"], prefix)
        if item["type"] == "extra_forbidden":
            block, key = _block(item["loc"]), item["loc"][-1]
            hint = _did_you_mean(key, missing.get(block, []))
            guess = hint.partition("'")[2].rpartition("'")[0]
            if guess in missing.get(block, []) and (block, guess) not in meant:
                meant.add((block, guess))
                hint = f"; did you mean '{guess}', a required field this block lacks?"
            lines.append(f"{field}: unknown key (not a field of this model{hint})")
    for item in items:
        if item["type"] == "extra_forbidden" or (
                item["type"] == "missing" and item["loc"] and (_block(item["loc"]), str(item["loc"][-1])) in meant):
            continue
        field = _field_path(item["loc"], prefix)
        if item["type"] == "union_tag_invalid":
            expected = item.get("ctx", {}).get("expected_tags", "")
            found = item.get("ctx", {}).get("tag")
            lines.append(f"{field}.kind: expected one of {expected}; found {found!r}")
            continue
        if item["type"] == "value_error" and not item["loc"]:
            lines.append(_expected(item["msg"]))  # cross-field checks name their own fields
            continue
        found = item.get("input")
        found_text = "missing" if item["type"] == "missing" else f"{found!r} ({type(found).__name__})"
        lines.append(f"{field}: expected {_expected(item['msg'])}; found {found_text}")
    return lines


def _is_member(element: object) -> bool:
    """A location element naming a member of a plain union (a model's class, or 'list[VariantSpec]')."""
    return isinstance(element, str) and (element in _MODEL_NAMES or element.startswith("list["))


def _block(loc: tuple[Any, ...]) -> tuple[Any, ...]:
    """The block an error's field is in: its location without the field and without union members' names."""
    return tuple(e for e in loc[:-1] if not _is_member(e))


def _closest_union_members(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Of a plain union's members (errors located ``(..., 'RMSPropSpec', ...)``), the errors of the member with the
    fewest (the first such member on a tie): the one the block was meant to be."""
    counts: dict[tuple, dict[str, int]] = {}
    for item in items:
        for j, element in enumerate(item["loc"]):
            if _is_member(element):
                members = counts.setdefault(tuple(item["loc"][:j]), {})
                members[element] = members.get(element, 0) + 1
    best = {at: min(members, key=lambda m: (members[m], list(members).index(m))) for at, members in counts.items()}
    return [item for item in items
            if all(best.get(tuple(item["loc"][:j]), element) == element
                   for j, element in enumerate(item["loc"]) if _is_member(element))]


def _expected(message: str) -> str:
    for lead in ("Input should be ", "Value error, "):
        if message.startswith(lead):
            return message[len(lead):]
    return message[0].lower() + message[1:] if message else message


def _field_path(loc: tuple[Any, ...], prefix: str) -> str:
    parts: list[str] = [prefix] if prefix else []
    for i, element in enumerate(loc):
        if isinstance(element, int):
            parts[-1:] = [f"{parts[-1]}[{element}]"] if parts else [f"[{element}]"]
        elif element in _UNION_TAGS and i < len(loc) - 1:
            continue
        elif _is_member(element):  # a plain union's member: the closest one's errors are the ones left
            continue
        else:
            parts.append(element)
    return ".".join(parts) or "<top level>"


def resolve_agent(
    spec: ExperimentSpec, variant: VariantSpec, scale: Scale, *, source: str = "<spec>", control: str | None = None
) -> Any:
    """The agent of one variant at one scale: spec agent, then variant overrides, then scale overrides (the scale's
    ``agent``, then its ``variant_agent`` entry for this variant), then a ``control`` arm's (``learning: false``;
    ``rlrepro.specs.control``).

    A variant whose overrides set another ``kind`` (e.g. FRODO's TD(lambda) baselines) gives the whole agent:
    its mapping replaces the spec's agent instead of being merged into it.
    """
    data = spec.agent.model_dump(mode="json")
    if variant.agent.get("kind", data["kind"]) != data["kind"]:
        data = {}
    data = apply_overrides(data, variant.agent, source=source, where=f"variants '{variant.name}' agent")
    if scale != "paper":
        data = apply_overrides(data, spec.scales[scale].agent, source=source, where=f"scales.{scale}.agent")
        if own := spec.scales[scale].variant_agent.get(variant.name):
            data = apply_overrides(data, own, source=source, where=f"scales.{scale}.variant_agent.{variant.name}")
    if control is not None:
        data = apply_overrides(data, CONTROL_OVERRIDES[control], source=source, where=f"control arm '{control}'")
    try:
        return _AGENT_ADAPTER.validate_json(json.dumps(data))
    except ValidationError as error:
        where = f"agent (variant '{variant.name}' at scale '{scale}')"
        raise SpecError(source, format_errors(error, prefix=where)) from None


def resolve_env(spec: ExperimentSpec, env_id: str, scale: Scale, *, source: str = "<spec>") -> Any:
    """The environment ``env_id`` at one scale: the spec's, then the scale's ``env`` overrides."""
    env = next(e for e in spec.environments if e.id == env_id)
    if scale == "paper" or not spec.scales[scale].env:
        return env
    data = apply_overrides(env.model_dump(mode="json"), spec.scales[scale].env, source=source, where=f"scales.{scale}.env")
    try:
        return _ENV_ADAPTER.validate_json(json.dumps(data))
    except ValidationError as error:
        raise SpecError(source, format_errors(error, prefix=f"environment '{env_id}' at scale '{scale}'")) from None


def apply_overrides(
    data: dict[str, Any], overrides: Mapping[str, Any], *, source: str = "<overrides>", where: str = ""
) -> dict[str, Any]:
    """Deep-merge overrides (nested mappings or dotted keys) into a copy of ``data``.

    Raises:
        SpecError: a key sets a field below a value that is not a mapping (``batch_size.x`` where
            ``batch_size`` is a number); the error names ``source`` (the spec file) and the key under ``where``.
    """
    result = copy.deepcopy(data)
    for key, value in overrides.items():
        target = result
        parts = key.split(".")
        for depth, part in enumerate(parts[:-1]):
            target = target.setdefault(part, {})
            if not isinstance(target, dict):
                parent = ".".join(parts[: depth + 1])
                field = f"{where}.{key}" if where else key
                raise SpecError(
                    source,
                    [f"{field}: cannot set a field below '{parent}', which is {target!r} ({type(target).__name__}), "
                     "not a mapping"],
                )
        leaf = parts[-1]
        if isinstance(value, Mapping) and isinstance(target.get(leaf), dict):
            prefix = ".".join(part for part in (where, key) if part)
            target[leaf] = apply_overrides(target[leaf], value, source=source, where=prefix)
        else:
            target[leaf] = copy.deepcopy(value)
    return result


def spec_hash(spec: ExperimentSpec) -> str:
    """A short, stable hash of the validated spec (canonical JSON)."""
    canonical = json.dumps(spec.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:12]


def find_spec_files(paths: Iterable[str | Path]) -> list[Path]:
    """Spec files under the given files or directories (``*.yaml``/``*.yml``, schema files excluded), sorted."""
    found: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found.extend(p for p in path.rglob("*.y*ml") if p.suffix in (".yaml", ".yml"))
        elif path.exists():
            found.append(path)
        else:
            raise SpecError(str(path), ["no such file or directory"])
    return sorted(set(found))


def load_specs(paths: Iterable[str | Path]) -> list[tuple[Path, ExperimentSpec]]:
    """Load every spec under ``paths``; raise one SpecError listing all invalid files."""
    loaded, problems = [], []
    for path in find_spec_files(paths):
        try:
            loaded.append((path, cached(path, load_spec)))  # read back when unchanged (use_spec_cache)
        except SpecError as error:
            problems.append(str(error))
    if problems:
        raise SpecError(f"{len(problems)} invalid spec file(s)", problems)
    keys = [(s.paper, s.experiment) for _, s in loaded]
    duplicates = sorted({k for k in keys if keys.count(k) > 1})
    if duplicates:
        raise SpecError("specs", [f"paper/experiment defined twice: {'/'.join(d)}" for d in duplicates])
    return loaded
