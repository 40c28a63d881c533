"""YAML loading that reads what researchers naturally write as they mean it.

PyYAML implements YAML 1.1, where ``1e-3`` and ``3e6`` are strings (its float pattern needs a
dot), ``yes``/``no``/``on``/``off`` are booleans, ``010`` is octal 8 and ``1:30`` is 90. Specs are
loaded with YAML 1.2 semantics for these: exponent floats are numbers, only ``true``/``false`` are
booleans, ``010`` is 10 and ``1:30`` is a string.

The parser is libyaml's (``yaml.CSafeLoader``) where PyYAML was built with it, the pure-Python one otherwise: the
same documents and marks, parsed ten times faster (every spec is read each time Snakemake builds the DAG).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

_FLOAT_PATTERN = re.compile(
    r"""^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?
    |[-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)
    |[-+]?\.[0-9_]+(?:[eE][-+]?[0-9]+)?
    |[-+]?\.(?:inf|Inf|INF)
    |\.(?:nan|NaN|NAN))$""",
    re.X,
)
_BOOL_PATTERN = re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$")
# Decimal, 0x hex and 0o octal; no YAML 1.1 leading-zero octal (010 is 10) and no base-60 (1:30 is a string).
_INT_PATTERN = re.compile(r"^(?:[-+]?[0-9][0-9_]*|0x[0-9a-fA-F_]+|0o[0-7_]+)$")


#: libyaml's parser where PyYAML has it (about 0.05 s rather than 0.4 s for the repository's specs).
_BASE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class SpecLoader(_BASE_LOADER):  # type: ignore[misc,valid-type]
    """SafeLoader with YAML 1.2 floats and booleans, and duplicate keys as errors (YAML forbids them;
    PyYAML silently keeps the last value)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, yaml.Mark] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":  # '<<': keys written after it may override merged ones
                continue
            key = self.construct_object(key_node, deep=True)
            try:
                first = seen.setdefault(key, key_node.start_mark)
            except TypeError:  # an unhashable key: SafeLoader reports it
                continue
            if first is not key_node.start_mark:
                raise yaml.constructor.ConstructorError(
                    f"while constructing a mapping (line {node.start_mark.line + 1})",
                    node.start_mark,
                    f"duplicate key {key!r} at line {key_node.start_mark.line + 1} (first at line {first.line + 1}); "
                    "keys must be unique (the second value would silently replace the first)",
                    key_node.start_mark,
                )
        return super().construct_mapping(node, deep=deep)


def _replace_resolver(tag: str, pattern: re.Pattern[str], first: str) -> None:
    resolvers = {
        key: [(t, regexp) for t, regexp in values if t != tag]
        for key, values in SpecLoader.yaml_implicit_resolvers.items()
    }
    SpecLoader.yaml_implicit_resolvers = resolvers
    SpecLoader.add_implicit_resolver(tag, pattern, list(first))


_replace_resolver("tag:yaml.org,2002:float", _FLOAT_PATTERN, "-+0123456789.")
_replace_resolver("tag:yaml.org,2002:bool", _BOOL_PATTERN, "tTfF")
_replace_resolver("tag:yaml.org,2002:int", _INT_PATTERN, "-+0123456789")


def _construct_bool(loader: SpecLoader, node: yaml.ScalarNode) -> bool:
    return loader.construct_scalar(node).lower() == "true"


def _construct_int(loader: SpecLoader, node: yaml.ScalarNode) -> int:
    text = loader.construct_scalar(node).replace("_", "")
    if text.startswith(("0x", "0o")):
        return int(text, 0)
    return int(text, 10)


SpecLoader.add_constructor("tag:yaml.org,2002:bool", _construct_bool)
SpecLoader.add_constructor("tag:yaml.org,2002:int", _construct_int)


def load_yaml(path: Path) -> Any:
    """Parse a YAML file with :class:`SpecLoader`."""
    with open(path, encoding="utf-8") as handle:
        return yaml.load(handle, Loader=SpecLoader)  # noqa: S506 - SafeLoader subclass


def loads_yaml(text: str) -> Any:
    """Parse YAML text with :class:`SpecLoader`."""
    return yaml.load(text, Loader=SpecLoader)  # noqa: S506 - SafeLoader subclass
