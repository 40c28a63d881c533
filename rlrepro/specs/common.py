"""Shared pieces of the spec models: the base model and value types."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

Scale = Literal["smoke", "cpu", "paper"]
SCALES: tuple[str, ...] = ("smoke", "cpu", "paper")

# Names that become folder names and Snakemake wildcards.
Name = Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.=+-]*$", max_length=120)]


class SpecModel(BaseModel):
    """Base of every spec model: unknown keys are errors, instances are immutable.

    Specs are validated from JSON-compatible data in strict mode, so ``"1e-3"`` (a string)
    is never silently turned into a number; the YAML loader already reads ``1e-3`` as a float.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, use_attribute_docstrings=False)


def _integral(value: Any) -> Any:
    """Accept ``2e8`` (a float with no fractional part) where a whole number is expected."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


# Frame and step counts: Python ints (int32 overflows at 2.1e9 frames), written as 200_000_000 or 2e8.
Count = Annotated[int, BeforeValidator(_integral), Field(ge=0)]
PositiveCount = Annotated[int, BeforeValidator(_integral), Field(gt=0)]
