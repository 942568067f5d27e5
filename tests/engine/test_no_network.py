"""Nothing reaches for the network: models load and route with sockets forbidden."""

from __future__ import annotations

import contextlib
import io
import json
import socket
from pathlib import Path

import pytest

from explorer.cli.commands.hook import run_hook
from explorer.engine.base.config import Config
from explorer.engine.index.snapshot import build_index
from explorer.engine.inference.cache import EmbeddingCache
from explorer.engine.inference.models import load_models
from explorer.engine.route.pipeline import decide
from tests.conftest import SAMPLE_SKILLS


class NetworkUsed(AssertionError):
    pass


@pytest.fixture
def no_sockets(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Refuse every socket, and remember each attempt: code that catches the refusal
    (the hook fails open, model loading degrades) must not hide that it tried."""
    attempts: list[str] = []

    def refuse(name: str):  # type: ignore[no-untyped-def]
        def refused(*args: object, **kwargs: object) -> None:
            attempts.append(f"{name}{args!r}")
            raise NetworkUsed(f"network access attempted: {name}{args!r}")

        return refused

    for name in ("socket", "create_connection", "getaddrinfo", "socketpair"):
        monkeypatch.setattr(socket, name, refuse(name))
    return attempts


def test_the_guard_really_blocks(no_sockets: list[str]) -> None:
    with pytest.raises(NetworkUsed):
        socket.create_connection(("127.0.0.1", 9), timeout=1)
    with pytest.raises(NetworkUsed):
        socket.getaddrinfo("huggingface.co", 443)
    with contextlib.suppress(Exception):  # what a library that degrades on errors does
        socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    assert [attempt.split("(")[0] for attempt in no_sockets] == [
        "create_connection",
        "getaddrinfo",
        "socket",
    ]


@pytest.mark.parametrize(
    "cold",
    [False, pytest.param(True, marks=pytest.mark.slow)],
    ids=["warm cache", "cold cache"],
)
def test_load_index_route_and_hook_offline(
    no_sockets: list[str], tmp_path: Path, warm_cache_dir: Path, cold: bool
) -> None:
    """Models loaded, a library indexed, a prompt routed and the hook answered with every
    socket refused: from the run's warm cache by default; from an empty one (the models'
    graphs optimised, every description embedded) in the slow set."""
    config = Config()
    cache_dir = tmp_path / "cache" if cold else warm_cache_dir
    cache = EmbeddingCache(cache_dir)
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
        cache_dir=str(cache_dir),
    )
    context = json.loads(out.getvalue())["hookSpecificOutput"]["additionalContext"]
    assert "pdf (confidence" in context
    assert no_sockets == []  # not even an attempt that something caught
