"""Chat models: any OpenAI-compatible chat-completions API through openai.AsyncOpenAI.

openai is imported where a model is used (~0.18 s of start-up, and most processes have no chat model).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING, Any

from rag.config import ChatModelConfig
from rag.errors import ModelError, ModelTimeout
from rag.types import ChatMessage

if TYPE_CHECKING:
    import openai


def _retry_after(exc: openai.APIStatusError) -> float | None:
    value = exc.response.headers.get("retry-after")
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def _translate(exc: openai.APIError) -> ModelError:
    import openai

    if isinstance(exc, openai.APITimeoutError):
        return ModelTimeout(f"chat model timed out: {exc}")
    if isinstance(exc, openai.APIStatusError):
        return ModelError(
            f"chat model answered {exc.status_code}: {exc.message}",
            status=exc.status_code,
            retry_after=_retry_after(exc),
        )
    return ModelError(f"chat model failed: {exc}")


class OpenAIChatModel:
    """Streaming and non-streaming chat completions against `base_url` (OpenAI when unset)."""

    def __init__(self, config: ChatModelConfig) -> None:
        import openai

        self._model = config.model
        self._client = openai.AsyncOpenAI(
            base_url=config.base_url,
            api_key=config.api_key or "unused",
            timeout=config.timeout,
            max_retries=config.max_retries,
        )

    @property
    def model_id(self) -> str:
        """The model's name."""
        return self._model

    async def complete(self, messages: Sequence[ChatMessage]) -> str:
        """The whole answer; raises ModelError or ModelTimeout."""
        import openai

        try:
            response = await self._client.chat.completions.create(
                model=self._model, messages=_payload(messages), stream=False
            )
        except openai.APIError as exc:
            raise _translate(exc) from exc
        if not response.choices:
            raise ModelError("chat model returned no choices")
        return response.choices[0].message.content or ""

    async def stream(self, messages: Sequence[ChatMessage]) -> AsyncIterator[str]:
        """Text deltas as they arrive; raises ModelError or ModelTimeout, also mid-stream."""
        import openai

        try:
            chunks = await self._client.chat.completions.create(
                model=self._model, messages=_payload(messages), stream=True
            )
            # The context closes the HTTP response even when the caller stops reading early.
            async with chunks:
                async for chunk in chunks:
                    for choice in chunk.choices:
                        if choice.delta.content:
                            yield choice.delta.content
        except openai.APIError as exc:
            raise _translate(exc) from exc
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            # openai's SSE decoder lets an event that is not UTF-8 JSON escape as the decode error itself.
            raise ModelError(f"chat model sent a malformed stream: {exc}") from exc

    async def close(self) -> None:
        """Close the HTTP client."""
        await self._client.close()


def _payload(messages: Sequence[ChatMessage]) -> Any:
    return [{"role": message.role, "content": message.content} for message in messages]
