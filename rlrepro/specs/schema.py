"""The JSON schema of the spec models (``specs/spec.schema.json``, committed for editor completion).

Pydantic's schema carries two keywords that only pydantic/OpenAPI tools know: ``discriminator`` (on the
tagged unions of agents, networks, environments and claims) and ``gt`` (constraints that pass through a
``BeforeValidator``, e.g. ``PositiveCount``). Generic validators (editors' yaml-language-server,
``check-jsonschema``, ``jsonschema``) ignore unknown keywords, so they would accept ``frames: 0``. The
schema written here is standard JSON Schema 2020-12: every union is a ``oneOf`` whose branches fix
``kind`` with ``const`` (exactly one branch can match), and ``gt``/``ge``/``lt``/``le`` become
``exclusiveMinimum``/``minimum``/``exclusiveMaximum``/``maximum``.
"""

from __future__ import annotations

import json
from typing import Any

from rlrepro.specs.experiment import ExperimentSpec

DIALECT = "https://json-schema.org/draft/2020-12/schema"
#: pydantic's constraint names -> JSON Schema's.
_BOUNDS = {"gt": "exclusiveMinimum", "ge": "minimum", "lt": "exclusiveMaximum", "le": "maximum"}
#: Keywords of OpenAPI/pydantic, not of JSON Schema.
_NON_STANDARD = ("discriminator",)


def standard_json_schema(node: Any) -> Any:
    """``node`` with pydantic-only keywords rewritten into standard JSON Schema (a new object)."""
    if isinstance(node, list):
        return [standard_json_schema(item) for item in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        # "properties" maps field names to schemas: a field called "gt" or "discriminator" is not a keyword.
        if key in ("properties", "$defs", "patternProperties"):
            out[key] = {name: standard_json_schema(sub) for name, sub in value.items()}
        elif key in _NON_STANDARD and isinstance(value, dict):
            continue
        elif key in _BOUNDS and isinstance(value, (int, float)) and not isinstance(value, bool):
            out[_BOUNDS[key]] = value
        else:
            out[key] = standard_json_schema(value)
    return out


def spec_json_schema() -> dict[str, Any]:
    """The experiment-spec schema as standard JSON Schema 2020-12."""
    schema = standard_json_schema(ExperimentSpec.model_json_schema())
    schema["$schema"] = DIALECT
    schema["title"] = "rlrepro experiment spec"
    return schema


def schema_text() -> str:
    """The schema as formatted JSON text, ending with a newline."""
    return json.dumps(spec_json_schema(), indent=2, sort_keys=True) + "\n"


def schema_comment(spec_path: str, schema_path: str = "specs/spec.schema.json") -> str:
    """The first line of a spec that points yaml-language-server (VS Code, Neovim, ...) at the schema."""
    from os.path import relpath
    from pathlib import Path

    relative = relpath(Path(schema_path).resolve(), Path(spec_path).resolve().parent)
    return f"# yaml-language-server: $schema={relative}"
