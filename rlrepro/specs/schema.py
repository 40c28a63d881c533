"""The JSON schema of the spec models (``specs/spec.schema.json``, committed for editor completion)."""

from __future__ import annotations

import json

from rlrepro.specs.experiment import ExperimentSpec


def schema_text() -> str:
    """The schema as formatted JSON text, ending with a newline."""
    schema = ExperimentSpec.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "rlrepro experiment spec"
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"
