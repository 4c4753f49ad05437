"""Chat models: any OpenAI-compatible chat-completions API through openai.AsyncOpenAI.

openai is imported where a model is used (~0.18 s of start-up, and most processes have no chat model).
Each call's tokens and each failure are told to an optional ModelObserver (the service's /metrics).
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from rag.config import ChatModelConfig
from rag.errors import ModelError, ModelTimeout
from rag.prompt import count_messages
from rag.tokens import TokenCounter
from rag.types import ChatMessage

if TYPE_CHECKING:
    import openai
    from openai.types import CompletionUsage
    from openai.types.chat import ChatCompletionChunk

log = logging.getLogger(__name__)


class ModelObserver(Protocol):
    """What a chat model reports for metrics (bot.metrics.ModelMetrics implements it)."""

    def tokens(self, model: str, direction: str, count: int) -> None:
        """`count` tokens of `model` went `direction`: "in" (the prompt) or "out" (the answer)."""
        ...

    def error(self, kind: str) -> None:
        """A call failed: timeout, rate_limited, server, auth, refused, connection or malformed."""
        ...


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


def _error_kind(exc: openai.APIError) -> str:
    """A failure's kind, one of a few words (each is a series in /metrics)."""
    import openai

    if isinstance(exc, openai.APITimeoutError):
        return "timeout"
    if isinstance(exc, openai.APIConnectionError):
        return "connection"
    if isinstance(exc, openai.APIStatusError):
        if exc.status_code == 429:
            return "rate_limited"
        if exc.status_code >= 500:
            return "server"
        return "auth" if exc.status_code in (401, 403) else "refused"
    return "malformed"


class OpenAIChatModel:
    """Streaming and non-streaming chat completions against `base_url` (OpenAI when unset).

    Tokens are counted as the API reports them (a streamed answer asks for its usage with stream_options); where
    it reports none, `tokens` (tiktoken) counts the prompt and the answer.
    """

    def __init__(
        self, config: ChatModelConfig, *, observer: ModelObserver | None = None, tokens: TokenCounter | None = None
    ) -> None:
        import openai

        self._observer = observer
        self._tokens = tokens
        # Cleared for good once the API refuses stream_options (one that predates it, such as older Azure versions).
        self._stream_usage = True
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
            raise self._failed(exc) from exc
        if not response.choices:
            self._report_error("malformed")
            raise ModelError("chat model returned no choices")
        answer = response.choices[0].message.content or ""
        self._count(messages, response.usage, answer)
        return answer

    async def stream(self, messages: Sequence[ChatMessage]) -> AsyncIterator[str]:
        """Text deltas as they arrive; raises ModelError or ModelTimeout, also mid-stream (and for a stream cut off)."""
        import openai

        chunks = await self._open_stream(messages)
        usage: CompletionUsage | None = None
        written: list[str] = []
        finished = False
        try:
            # The context closes the HTTP response even when the caller stops reading early.
            async with chunks:
                async for chunk in chunks:
                    # With include_usage the last chunk carries the usage and no choices.
                    usage = chunk.usage or usage
                    for choice in chunk.choices:
                        finished = finished or choice.finish_reason is not None
                        if choice.delta.content:
                            written.append(choice.delta.content)
                            yield choice.delta.content
        except openai.APIError as exc:
            raise self._failed(exc) from exc
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            # openai's SSE decoder lets an event that is not UTF-8 JSON escape as the decode error itself.
            self._report_error("malformed")
            raise ModelError(f"chat model sent a malformed stream: {exc}") from exc
        finally:
            # Also when the caller stopped early or the stream broke: what was generated so far was paid for.
            self._count(messages, usage, "".join(written))
        if not finished:
            # A response that ends cleanly but without its finish_reason was cut off (a proxy or server gave up):
            # what came is not the whole answer, and the openai client reads that end as a normal one.
            self._report_error("malformed")
            raise ModelError("chat model stream ended before the answer did (no finish_reason)")

    async def _open_stream(self, messages: Sequence[ChatMessage]) -> openai.AsyncStream[ChatCompletionChunk]:
        import openai

        try:
            try:
                return await self._create_stream(messages)
            except openai.BadRequestError as exc:
                if not self._stream_usage or "stream_options" not in exc.message:
                    raise
                log.warning("chat_model=stream_usage_refused model=%s; tokens counted with tiktoken", self._model)
                self._stream_usage = False
                return await self._create_stream(messages)
        except openai.APIError as exc:
            raise self._failed(exc) from exc

    async def _create_stream(self, messages: Sequence[ChatMessage]) -> openai.AsyncStream[ChatCompletionChunk]:
        if self._stream_usage:
            return await self._client.chat.completions.create(
                model=self._model, messages=_payload(messages), stream=True, stream_options={"include_usage": True}
            )
        return await self._client.chat.completions.create(model=self._model, messages=_payload(messages), stream=True)

    def _failed(self, exc: openai.APIError) -> ModelError:
        """The ModelError for `exc`, its kind reported."""
        self._report_error(_error_kind(exc))
        return _translate(exc)

    def _report_error(self, kind: str) -> None:
        if self._observer is not None:
            self._observer.error(kind)

    def _count(self, messages: Sequence[ChatMessage], usage: CompletionUsage | None, answer: str) -> None:
        """Report a call's tokens: the API's usage, else tiktoken's count (nothing without a counter)."""
        if self._observer is None:
            return
        if usage is not None:
            tokens_in, tokens_out = usage.prompt_tokens, usage.completion_tokens
        elif self._tokens is not None:
            tokens_in, tokens_out = count_messages(messages, self._tokens), self._tokens.count(answer)
        else:
            return
        self._observer.tokens(self._model, "in", tokens_in)
        self._observer.tokens(self._model, "out", tokens_out)

    async def close(self) -> None:
        """Close the HTTP client."""
        await self._client.close()


def _payload(messages: Sequence[ChatMessage]) -> Any:
    return [{"role": message.role, "content": message.content} for message in messages]
