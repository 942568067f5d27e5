"""Nothing reaches for the network: models load and route with sockets forbidden."""

from __future__ import annotations

import io
import json
import socket

import pytest

from explorer.cli.commands.hook import run_hook
from explorer.engine.cache import EmbeddingCache
from explorer.engine.config import Config
from explorer.engine.models import load_models
from explorer.engine.pipeline import decide
from explorer.engine.snapshot import build_index
from tests.conftest import SAMPLE_SKILLS


class NetworkUsed(AssertionError):
    pass


@pytest.fixture
def no_sockets(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise NetworkUsed(f"network access attempted: {args!r}")

    monkeypatch.setattr(socket, "socket", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)


def test_the_guard_really_blocks() -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(socket, "socket", lambda *a, **k: (_ for _ in ()).throw(NetworkUsed()))
        with pytest.raises(NetworkUsed):
            socket.socket()


def test_load_index_route_and_hook_offline(no_sockets: None, tmp_path) -> None:
    config = Config()
    cache = EmbeddingCache(tmp_path)
    models = load_models(config, cache)
    assert models.embedder is not None, models.status.dense_error
    index = build_index([SAMPLE_SKILLS], config, models, cache)
    assert decide("merge two pdf files", index, config).injected_ids == ("pdf",)
    out = io.StringIO()
    payload = json.dumps({"prompt": "merge two pdf files"})
    run_hook(
        io.StringIO(payload),
        out,
        io.StringIO(),
        cli_roots=[str(SAMPLE_SKILLS)],
        cache_dir=str(tmp_path),
    )
    assert "pdf" in out.getvalue()
