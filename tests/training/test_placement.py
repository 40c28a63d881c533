"""Where the host actors' policy runs: ``$RLREPRO_ACTOR_DEVICE`` (placement, never in a config hash)."""

from __future__ import annotations

import pytest

from rlrepro.training.placement import ACTOR_DEVICE_ENV, actor_device_setting
from rlrepro.workflow import cluster_environment


def test_the_setting_defaults_to_the_learner_and_rejects_what_it_does_not_know(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv(ACTOR_DEVICE_ENV, raising=False)
    assert actor_device_setting() == "learner"
    monkeypatch.setenv(ACTOR_DEVICE_ENV, " cpu ")
    assert actor_device_setting() == "cpu"
    monkeypatch.setenv(ACTOR_DEVICE_ENV, "tpu")
    with pytest.raises(ValueError, match=r"\$RLREPRO_ACTOR_DEVICE='tpu': expected one of learner, cpu"):
        actor_device_setting()


def test_snakemake_config_actor_device_becomes_the_jobs_environment():
    assert cluster_environment({"scale": "cpu", "actor_device": "cpu"}) == {ACTOR_DEVICE_ENV: "cpu"}
    with pytest.raises(ValueError, match="actor_device=gpu: expected one of learner, cpu"):
        cluster_environment({"actor_device": "gpu"})


def test_every_job_records_the_actor_device_in_its_device_record(monkeypatch: pytest.MonkeyPatch):
    from rlrepro.jobs.runner import device_placement

    monkeypatch.setenv(ACTOR_DEVICE_ENV, "cpu")
    assert device_placement()["actor_device"] == "cpu"
    monkeypatch.delenv(ACTOR_DEVICE_ENV)
    assert device_placement()["actor_device"] == "learner"
    monkeypatch.setenv(ACTOR_DEVICE_ENV, "gpu")
    with pytest.raises(ValueError, match="RLREPRO_ACTOR_DEVICE"):
        device_placement()
