"""Checks that run before anything is written, so a bad setting stops start-up cleanly."""

from __future__ import annotations

import errno
import os
import socket
from pathlib import Path

from bot.app.exposure import exposure_of
from bot.app.settings import Settings, platform_settings
from bot.errors import StartupError
from bot.knowledge.schedules import EveryError, parse_every


def nearest_existing(path: Path) -> Path:
    """The path itself or its closest ancestor that exists."""
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def check_writable_dir(setting: str, path: Path) -> None:
    """Raise unless `path` is, or could be created as, a writable directory."""
    existing = nearest_existing(path)
    if not existing.is_dir():
        raise StartupError(
            setting, f"{existing} is not a directory, so {path} cannot be created", "choose another folder"
        )
    if not os.access(existing, os.W_OK | os.X_OK):
        raise StartupError(setting, f"{existing} is not writable", "fix its permissions or choose another folder")


def check_port_free(host: str, port: int) -> None:
    """Raise unless the HTTP server could bind host:port."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as exc:
            reason = "is in use" if exc.errno == errno.EADDRINUSE else f"cannot be bound ({exc.strerror})"
            raise StartupError(
                "RAGBOT_PORT",
                f"port {port} on {host} {reason}",
                "set RAGBOT_PORT to a free port or stop the other process",
            ) from exc


def check_settings(settings: Settings, *, serving: bool) -> None:
    """Every check that needs no server: folders, binary, model folder and (when serving) the port."""
    check_writable_dir("RAGBOT_DATA_DIR", settings.data_dir)
    if settings.WEAVIATE_URL is None:
        check_writable_dir("RAGBOT_DATA_DIR", settings.weaviate_server().data_dir)
        binary = settings.weaviate_server().binary
        if not binary.is_file() or not os.access(binary, os.X_OK):
            raise StartupError(
                "WEAVIATE_BINARY",
                f"weaviate-server not found at {binary}",
                "run `make weaviate` to build it, or set WEAVIATE_URL to an existing Weaviate",
            )
    model_dir = settings.EMBEDDING_MODEL_DIR
    if settings.EMBEDDING_PROVIDER == "local" and model_dir is not None and not model_dir.expanduser().is_dir():
        raise StartupError(
            "EMBEDDING_MODEL_DIR",
            f"{model_dir} does not exist",
            "point it at a model folder, or unset it to download the model",
        )
    if settings.EMBEDDING_PROVIDER == "openai" and not settings.EMBEDDING_BASE_URL:
        raise StartupError(
            "EMBEDDING_BASE_URL", "not set while EMBEDDING_PROVIDER=openai", "set the embeddings API URL"
        )
    if settings.RERANK_PROVIDER == "api" and not settings.RERANK_BASE_URL:
        raise StartupError("RERANK_BASE_URL", "not set while RERANK_PROVIDER=api", "set the rerank API URL")
    if settings.ANSWER_FALLBACK == "model" and not settings.CHAT_MODEL:
        raise StartupError(
            "ANSWER_FALLBACK", "is model but no CHAT_MODEL is configured", "set CHAT_MODEL or use extractive"
        )
    check_platforms(settings, serving=serving)
    try:
        parse_every(settings.RETENTION_EVERY)
    except EveryError as exc:
        raise StartupError("RETENTION_EVERY", exc.user_message, "write a period such as 6h or 1d") from exc
    if serving:
        check_port_free(settings.RAGBOT_HOST, settings.RAGBOT_PORT)


def check_platforms(settings: Settings, *, serving: bool) -> None:
    """Each chat platform's own checks of its settings (a webhook without its secret, a public chat without a token)."""
    exposure = exposure_of(settings)
    for model in platform_settings():
        platform = model.of(settings)
        platform.check(serving=serving, host=settings.RAGBOT_HOST)
        if serving and exposure.public:
            platform.check_public(exposure.reason)
