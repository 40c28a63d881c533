"""Where a host actor-learner's actors run their policy: a placement setting, never part of what is computed.

IMPALA's actors were CPU machines that received the learner's parameters (section 3); on one host with a GPU the
actors' batched forward passes can run on the learner's device (``learner``, the default) or on the host CPU
(``cpu``: the parameters and the actors' keys are copied to ``jax.devices("cpu")[0]`` at every publish, so each
acting step runs on the CPU without a round trip to the accelerator). Set by ``$RLREPRO_ACTOR_DEVICE`` (Snakemake:
``--config actor_device=cpu``, ``rlrepro.workflow.CLUSTER_CONFIG_ENV``), read here only; it is in no spec and no
config hash, and every job records it in its ``device`` record (``spec.resolved.json``). On a machine whose only
devices are CPUs both values are the same device. Imports no JAX (the Snakefile validates the setting).
"""

from __future__ import annotations

import os

ACTOR_DEVICE_ENV = "RLREPRO_ACTOR_DEVICE"
ACTOR_DEVICES = ("learner", "cpu")


def actor_device_setting(value: str | None = None) -> str:
    """``value`` (default: ``$RLREPRO_ACTOR_DEVICE``, else ``learner``), checked.

    Raises:
        ValueError: the value is not one of ``ACTOR_DEVICES``; names the variable and the allowed values.
    """
    value = (os.environ.get(ACTOR_DEVICE_ENV, "") if value is None else value).strip() or "learner"
    if value not in ACTOR_DEVICES:
        raise ValueError(f"${ACTOR_DEVICE_ENV}={value!r}: expected one of {', '.join(ACTOR_DEVICES)} "
                         "(where the host actors run their policy; Snakemake: --config actor_device=...)")
    return value
