"""The installed torch's namespaces are cached on disk per torch install, so that `kernelgen new`
does not import torch every time; a stale, foreign or damaged cache is asked again, never trusted."""

from __future__ import annotations

import json

import pytest

from kernelgen import torch_namespaces as torch_ns


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv(torch_ns.CACHE_DIR_ENV, str(tmp_path / "cache"))
    monkeypatch.delenv(torch_ns.NO_TORCH_QUERY_ENV, raising=False)
    asked = []

    def ask():
        asked.append(1)
        return frozenset({"aten", "prims", "sparse", "my_fresh_ns"})

    monkeypatch.setattr(torch_ns, "_ask_torch", ask)
    monkeypatch.setattr(torch_ns, "_torch_fingerprint", lambda: "2.14.1|/site/torch/__init__.py|1")
    torch_ns.live_torch_namespaces.cache_clear()
    yield tmp_path / "cache", asked
    torch_ns.live_torch_namespaces.cache_clear()


def test_torch_is_asked_once_per_install(cache):
    root, asked = cache
    assert "my_fresh_ns" in torch_ns.live_torch_namespaces()
    torch_ns.live_torch_namespaces.cache_clear()  # a new process
    assert "my_fresh_ns" in torch_ns.live_torch_namespaces()
    assert len(asked) == 1
    (path,) = root.iterdir()
    assert json.loads(path.read_text())["torch"] == "2.14.1|/site/torch/__init__.py|1"


@pytest.mark.parametrize("content", [
    "{not json",
    json.dumps({"torch": "2.14.1|/site/torch/__init__.py|1", "namespaces": ["ok", "bad name"]}),
    json.dumps({"torch": "2.14.1|/site/torch/__init__.py|1", "namespaces": "aten"}),
    json.dumps({"torch": "2.13.0|elsewhere|5", "namespaces": ["aten"]}),
    json.dumps(["aten"]),
])
def test_a_damaged_or_foreign_cache_is_asked_again_and_rewritten(cache, content):
    _, asked = cache
    path = torch_ns._cache_file("2.14.1|/site/torch/__init__.py|1")
    path.parent.mkdir(parents=True)
    path.write_text(content)
    assert "my_fresh_ns" in torch_ns.live_torch_namespaces()
    assert len(asked) == 1
    assert json.loads(path.read_text())["namespaces"] == ["aten", "my_fresh_ns", "prims", "sparse"]


def test_an_unwritable_cache_directory_is_not_an_error(cache, monkeypatch, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv(torch_ns.CACHE_DIR_ENV, str(blocker / "cache"))  # a path under a regular file
    assert "my_fresh_ns" in torch_ns.live_torch_namespaces()
    assert not (blocker / "cache").exists()


def test_the_check_refuses_a_namespace_found_in_the_cache(cache):
    from kernelgen.errors import SpecError
    from kernelgen.spec import check_namespace

    with pytest.raises(SpecError, match="'my_fresh_ns' is a namespace PyTorch owns"):
        check_namespace("my_fresh_ns", derived_from_op=False)
