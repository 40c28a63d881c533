"""rlrepro.jobs.checkpoint: round trip of a pytree with every leaf kind, atomic writes, unreadable files."""

from __future__ import annotations

from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rlrepro.jobs import checkpoint


def _state(offset: int) -> dict:
    """A pytree like a training state: int, float, bool leaves, a typed PRNG key and a raw uint32 key."""
    return {
        "params": {"w": jnp.arange(6, dtype=jnp.float32).reshape(2, 3) + offset, "b": jnp.float32(0.5 + offset)},
        "count": jnp.int32(7 + offset),
        "frames": jnp.arange(3, dtype=jnp.int32) * (offset + 1),
        "done": jnp.array([True, False, bool(offset)]),
        "key": jax.random.key(offset),
        "raw_key": jax.random.PRNGKey(offset),
    }


def test_round_trip_restores_values_dtypes_and_key_types(tmp_path: Path):
    path = tmp_path / "ckpt" / "seeds0-1.npz"  # the parent folder does not exist yet
    saved = _state(offset=3)
    checkpoint.save(path, saved, {"chunk": 5, "config_hash": "abc"})

    restored = checkpoint.restore(path, _state(offset=0))

    assert jax.tree.structure(restored) == jax.tree.structure(saved)
    for name in ("count", "frames", "done", "raw_key"):
        assert restored[name].dtype == saved[name].dtype
        np.testing.assert_array_equal(restored[name], saved[name])
    for name in ("w", "b"):
        assert restored["params"][name].dtype == jnp.float32
        np.testing.assert_array_equal(restored["params"][name], saved["params"][name])
    assert jax.dtypes.issubdtype(restored["key"].dtype, jax.dtypes.prng_key)
    assert jax.random.key_impl(restored["key"]) == jax.random.key_impl(saved["key"])
    np.testing.assert_array_equal(jax.random.key_data(restored["key"]), jax.random.key_data(saved["key"]))
    # The restored key draws the same numbers as the saved one.
    np.testing.assert_array_equal(jax.random.uniform(restored["key"], (4,)), jax.random.uniform(saved["key"], (4,)))
    assert checkpoint.load_meta(path) == {"chunk": 5, "config_hash": "abc"}


def test_round_trip_of_a_seed_batched_key(tmp_path: Path):
    keys = jax.vmap(jax.random.key)(jnp.arange(3))
    checkpoint.save(tmp_path / "c.npz", {"rng": keys}, {})
    restored = checkpoint.restore(tmp_path / "c.npz", {"rng": jax.vmap(jax.random.key)(jnp.zeros(3, jnp.int32))})
    np.testing.assert_array_equal(jax.random.key_data(restored["rng"]), jax.random.key_data(keys))


def test_save_is_atomic_keeps_one_back_and_leaves_no_temporary_file(tmp_path: Path):
    path = tmp_path / "c.npz"
    checkpoint.save(path, _state(1), {"chunk": 1})
    checkpoint.save(path, _state(2), {"chunk": 2})  # overwrite in place; the first becomes c.npz.prev
    checkpoint.save(path, _state(3), {"chunk": 3})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.npz", "c.npz.prev"]
    assert checkpoint.load_meta(path) == {"chunk": 3}
    assert checkpoint.load_meta(checkpoint.previous_path(path)) == {"chunk": 2}
    assert int(checkpoint.restore(path, _state(0))["count"]) == 10


def test_a_save_that_fails_midway_keeps_the_previous_checkpoint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    path = tmp_path / "c.npz"
    checkpoint.save(path, _state(1), {"chunk": 1})

    def disk_full(fd):
        raise OSError("disk full")

    monkeypatch.setattr(checkpoint.os, "fsync", disk_full)  # the temporary file is written, never renamed
    with pytest.raises(OSError, match="disk full"):
        checkpoint.save(path, _state(2), {"chunk": 2})
    assert checkpoint.load_meta(path) == {"chunk": 1}
    assert int(checkpoint.restore(path, _state(0))["count"]) == 8


def test_restore_rejects_a_state_of_another_shape(tmp_path: Path):
    checkpoint.save(tmp_path / "c.npz", {"w": jnp.zeros((2, 3))}, {})
    with pytest.raises(ValueError, match=r"leaf shape \(2, 3\) != expected \(4,\)"):
        checkpoint.restore(tmp_path / "c.npz", {"w": jnp.zeros(4)})


def test_load_meta_of_a_missing_file_is_none(tmp_path: Path):
    assert checkpoint.load_meta(tmp_path / "nothing.npz") is None


def test_load_meta_of_a_file_that_is_not_a_checkpoint_is_none(tmp_path: Path):
    path = tmp_path / "c.npz"
    path.write_bytes(b"\x00\x01 not a numpy file" * 10)
    assert checkpoint.load_meta(path) is None
    np.savez(path, leaf0=np.zeros(3))  # an npz without the metadata entry
    assert checkpoint.load_meta(path) is None
    np.savez(path, __meta__=np.frombuffer(b"{not json", dtype=np.uint8))
    assert checkpoint.load_meta(path) is None


@pytest.mark.parametrize("damage", ["empty", "truncated"])
def test_load_meta_of_an_empty_or_truncated_checkpoint_is_none(tmp_path: Path, damage: str):
    path = tmp_path / "c.npz"
    checkpoint.save(path, _state(1), {"chunk": 1})
    data = path.read_bytes()
    path.write_bytes(b"" if damage == "empty" else data[: len(data) // 2])
    assert checkpoint.load_meta(path) is None


def test_non_array_leaves_such_as_host_environments_round_trip(tmp_path: Path):
    import random

    env = random.Random(3)  # stands in for a host environment object with its own RNG state
    env.random()
    state = {"params": jnp.ones(2), "env": env, "buffer": np.arange(5, dtype=np.int16)}
    checkpoint.save(tmp_path / "c.ckpt", state, {"chunk": 1})
    restored = checkpoint.restore(tmp_path / "c.ckpt", {"params": jnp.zeros(2), "env": random.Random(0), "buffer": np.zeros(5, np.int16)})
    assert restored["env"].random() == env.random()  # the object's state came back, not a fresh one
    assert restored["buffer"].dtype == np.int16 and isinstance(restored["params"], jax.Array)


# --------------------------------------------------------------------------------------------------
# checksums: a damaged checkpoint is reported and the previous one is used


def _flip_byte(path: Path, offset_from_end: int = 20) -> None:
    """Flip one byte near the end of the file: inside the pickled arrays, where the old format loaded it silently."""
    data = bytearray(path.read_bytes())
    data[-offset_from_end] ^= 0xFF
    path.write_bytes(bytes(data))


def test_a_flipped_byte_in_the_arrays_is_detected_and_the_previous_checkpoint_is_used(tmp_path: Path, capsys):
    path = tmp_path / "c.ckpt"
    checkpoint.save(path, {"w": jnp.arange(64, dtype=jnp.float32)}, {"chunk": 1})
    checkpoint.save(path, {"w": jnp.arange(64, dtype=jnp.float32) + 1}, {"chunk": 2})
    _flip_byte(path)

    with pytest.raises(checkpoint.CorruptCheckpointError, match="checksum mismatch"):
        checkpoint.restore(path, {"w": jnp.zeros(64)})
    found = checkpoint.load_latest(path)
    assert found is not None and found.path == checkpoint.previous_path(path) and found.meta == {"chunk": 1}
    restored = checkpoint.restore_leaves(found.path, found.leaves, {"w": jnp.zeros(64)})
    np.testing.assert_array_equal(restored["w"], np.arange(64, dtype=np.float32))
    err = capsys.readouterr().err
    assert f"checkpoint {path}: checksum mismatch" in err and "trying the previous one" in err


@pytest.mark.parametrize("damage", ["empty", "truncated"])
def test_an_empty_or_truncated_checkpoint_is_reported_and_the_previous_one_used(tmp_path: Path, capsys, damage: str):
    path = tmp_path / "c.ckpt"
    checkpoint.save(path, _state(1), {"chunk": 1})
    checkpoint.save(path, _state(2), {"chunk": 2})
    data = path.read_bytes()
    path.write_bytes(b"" if damage == "empty" else data[: len(data) // 2])
    found = checkpoint.load_latest(path)
    assert found is not None and found.meta == {"chunk": 1}
    assert str(path) in capsys.readouterr().err


def test_only_the_kept_back_checkpoint_is_used_when_the_newest_is_missing(tmp_path: Path):
    path = tmp_path / "c.ckpt"
    checkpoint.save(path, _state(1), {"chunk": 1})
    checkpoint.save(path, _state(2), {"chunk": 2})
    path.unlink()  # e.g. deleted by hand
    found = checkpoint.load_latest(path)
    assert found is not None and found.meta == {"chunk": 1}


def test_both_checkpoints_damaged_means_a_fresh_start_with_both_reported(tmp_path: Path, capsys):
    path = tmp_path / "c.ckpt"
    checkpoint.save(path, _state(1), {"chunk": 1})
    checkpoint.save(path, _state(2), {"chunk": 2})
    _flip_byte(path)
    _flip_byte(checkpoint.previous_path(path))
    assert checkpoint.load_latest(path) is None
    err = capsys.readouterr().err
    assert str(path) in err and str(checkpoint.previous_path(path)) in err and "from the start" in err


def test_a_checkpoint_written_before_its_classes_moved_resumes_with_them_where_they_are_now(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """A ReF-ER run stopped before ``agents/refer`` moved (its host state, memories and priorities pickled under
    the old module paths) resumes after the move: every class is read from the module in ``checkpoint.MOVED``."""
    import sys
    import types

    from rlrepro.replay.episodes import EpisodeReplay
    from rlrepro.replay.priority import RankPriorities
    from rlrepro.training.refer_host import HostState

    replay = EpisodeReplay(8, 4, 3, 2, 0.99, seed=1, priority=(0.7, 10))
    host = HostState(["an environment"], [replay], np.zeros((1, 3), np.float32), np.ones(1, np.float32))
    old = {cls: module for module, new in checkpoint.MOVED.items()
           for cls in (HostState, EpisodeReplay, RankPriorities) if cls.__module__ == new}
    assert len(old) == 3 and set(old.values()) == {m for m in checkpoint.MOVED if m.startswith("rlrepro.agents.refer.")}
    for cls, module in old.items():
        monkeypatch.setitem(sys.modules, module, types.SimpleNamespace(**{cls.__qualname__: cls}))
        monkeypatch.setattr(cls, "__module__", module)
    path = tmp_path / "ckpt"
    checkpoint.save(path, {"host": host}, {"chunk": 1})
    assert all(module.encode() in path.read_bytes() for module in old.values())
    monkeypatch.undo()  # the old modules are gone, as after the move

    restored = checkpoint.restore(path, {"host": "a host state"})["host"]

    assert type(restored) is HostState and type(restored.replays[0]) is EpisodeReplay
    assert any(type(v) is RankPriorities for v in vars(restored.replays[0]).values())
    assert restored.bank is not None and restored.envs == ["an environment"]


@pytest.mark.parametrize("kind", ["dqn", "ppo", "acer"])
def test_a_host_state_pickled_under_trainer_resumes_from_loop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str):
    """The host loops of DQN, PPO and ACER moved from ``trainer.py`` to ``loop.py``: a checkpoint of their host state
    written before the move is read from the new module."""
    import importlib
    import sys
    import types

    old_module = f"rlrepro.agents.{kind}.trainer"
    new = importlib.import_module(checkpoint.MOVED[old_module])
    assert new.__name__ == f"rlrepro.agents.{kind}.loop"
    host = new.HostState.__new__(new.HostState)
    host.__dict__.update(steps=17, episode_returns=[[1.0, 2.0]])
    monkeypatch.setitem(sys.modules, old_module, types.SimpleNamespace(HostState=new.HostState))
    monkeypatch.setattr(new.HostState, "__module__", old_module)
    path = tmp_path / "ckpt"
    checkpoint.save(path, {"host": host}, {"chunk": 1})
    assert old_module.encode() in path.read_bytes()
    monkeypatch.undo()

    restored = checkpoint.restore(path, {"host": "a host state"})["host"]

    assert type(restored) is new.HostState and restored.steps == 17 and restored.episode_returns == [[1.0, 2.0]]
