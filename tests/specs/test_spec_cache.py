"""The DAG's spec cache (issue 49): a validated spec is read back while its file and the code are unchanged, and
validated again as soon as either changes."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlrepro.specs import cache, loading
from rlrepro.specs.loading import load_specs
from tests.factories import toy_spec_data, write_spec


@pytest.fixture()
def counted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The spec files validated (load_spec calls), with the cache under tmp_path/cache."""
    calls: list[Path] = []
    real = loading.load_spec
    monkeypatch.setattr(loading, "load_spec", lambda path: (calls.append(path), real(path))[1])
    cache.use_spec_cache(tmp_path / "cache")
    yield calls
    cache.use_spec_cache(None)


def test_an_unchanged_spec_is_read_back_and_a_changed_one_validated_again(tmp_path: Path, counted: list[Path],
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    path = write_spec(tmp_path / "specs", toy_spec_data())
    [(_, first)] = load_specs([tmp_path / "specs"])
    [(_, again)] = load_specs([tmp_path / "specs"])
    assert counted == [path] and again == first  # validated once, read back equal
    path.write_text(path.read_text() + "\n# edited\n")
    load_specs([tmp_path / "specs"])
    assert counted == [path, path]  # the file changed: validated again
    entries = sorted((tmp_path / "cache").glob("*.pickle"))
    assert len(entries) == 2
    entries[-1].write_bytes(b"torn")
    entries[0].write_bytes(b"torn")
    load_specs([tmp_path / "specs"])
    assert len(counted) == 3  # an unreadable entry: validated again
    monkeypatch.setattr(cache, "code_stamp", lambda: "another-code")
    load_specs([tmp_path / "specs"])
    assert len(counted) == 4  # the code changed: validated again, the old stamp's entries removed
    assert [p.name.split("-")[0] for p in (tmp_path / "cache").glob("*.pickle")] == ["another"]


def test_without_a_folder_every_load_validates(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    real = loading.load_spec
    monkeypatch.setattr(loading, "load_spec", lambda path: (calls.append(path), real(path))[1])
    write_spec(tmp_path / "specs", toy_spec_data())
    load_specs([tmp_path / "specs"])
    load_specs([tmp_path / "specs"])
    assert len(calls) == 2 and not list(tmp_path.rglob("*.pickle"))


def test_the_code_stamp_changes_with_a_module() -> None:
    stamp = cache.code_stamp()
    cache.code_stamp.cache_clear()
    assert cache.code_stamp() == stamp  # stable while nothing changes
    module = Path(cache.__file__)
    before = module.stat()
    try:
        import os

        os.utime(module, ns=(before.st_atime_ns, before.st_mtime_ns + 1_000_000_000))
        cache.code_stamp.cache_clear()
        assert cache.code_stamp() != stamp
    finally:
        os.utime(module, ns=(before.st_atime_ns, before.st_mtime_ns))
        cache.code_stamp.cache_clear()
