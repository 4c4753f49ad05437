"""FakeOpenAI: a local OpenAI-compatible API (chat, embeddings, models) for the real openai client to talk to."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import re
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from aiohttp import BodyPartReader, web

from fakes.base import FakeAPI, RecordedRequest
from fakes.limits import SlidingWindow

__all__ = [
    "FakeOpenAI",
    "RecordedRequest",
    "StreamFault",
    "StreamedReply",
    "Transcription",
    "fake_embedding",
    "image_urls",
]

# OpenAI's /audio/transcriptions takes files up to 25 MB (its 413 names 26214400 bytes).
MAX_AUDIO_BYTES = 25 * 1024 * 1024

_MALFORMED_STREAM = web.RequestKey("malformed_stream", bool)

# How a streamed answer goes wrong after its first content deltas (StreamFault.kind):
# "noise"   SSE comments and blank keep-alive lines between the events, which a client must ignore (no fault);
# "garbage" a data line that is not JSON (a proxy's HTML error page spliced into the stream);
# "error"   an error event, as OpenAI sends when the generation fails mid-stream;
# "cut"     the response ends cleanly with no finish_reason and no [DONE] (a proxy or server that gave up);
# "reset"   the connection is dropped mid-body (a crashed server or a killed connection).
StreamFaultKind = Literal["noise", "garbage", "error", "cut", "reset"]


@dataclass(frozen=True, slots=True)
class _MalformedStream:
    pass


@dataclass(frozen=True, slots=True)
class StreamFault:
    """A streamed answer that goes wrong (`kind`) once `after` content deltas are written."""

    kind: StreamFaultKind
    after: int


_STREAM_FAULT = web.RequestKey[StreamFault | None]("stream_fault")


@dataclass(frozen=True, slots=True)
class StreamedReply:
    """One streamed answer as the fake wrote it: its content deltas, when its request came, when each went out.

    Times are time.monotonic(), which on Linux is one clock for every process, so they compare with a client's.
    """

    reply: str
    deltas: tuple[str, ...]
    received: float
    sent: list[float]


@dataclass(frozen=True, slots=True)
class Transcription:
    """One transcription request as the fake read it: the model, the file's name, type and bytes, what it answered."""

    model: str
    filename: str
    content_type: str
    data: bytes
    text: str


def image_urls(body: Any) -> list[str]:
    """The image URLs (data: or http) in a chat request's messages, in order."""
    return [
        str(part["image_url"]["url"])
        for message in body.get("messages", [])
        if isinstance(message.get("content"), list)
        for part in message["content"]
        if part.get("type") == "image_url"
    ]


def fake_embedding(text: str, dimension: int = 8) -> list[float]:
    """The fake's vector for `text`: SHA-256 bytes mapped to [-1, 1), exact in float32."""
    digest = b"".join(hashlib.sha256(f"{block}:{text}".encode()).digest() for block in range(dimension // 32 + 1))
    return [byte / 128 - 1 for byte in digest[:dimension]]


class FakeOpenAI(FakeAPI):
    """An aiohttp app on 127.0.0.1 speaking OpenAI's wire protocol, with auth, rate limits and scripted faults."""

    auth_error = "Incorrect API key provided."
    # Room for a transcription upload at OpenAI's 25 MB limit, so the fake itself answers one past it.
    max_body = MAX_AUDIO_BYTES + 1024**2

    def __init__(
        self,
        *,
        api_key: str = "test-key",
        dimension: int = 8,
        rate_limit: tuple[int, float] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(api_key=api_key)
        self.reply = "Hello from the fake model."
        # Seconds between the start of a streamed answer and its first content delta (a model's TTFT).
        self.first_token_delay = 0.0
        # Content deltas (one per word) per second after the first, as a model writes; 0 sends them at once.
        self.tokens_per_second = 0.0
        # The reply to a request, from its JSON body; None answers every request with `reply`.
        self.reply_for: Callable[[Any], str] | None = None
        # Every streamed answer, with the time each of its content deltas was written.
        self.streamed: list[StreamedReply] = []
        # Whether a stream asked for its usage (stream_options.include_usage) ends with a usage chunk, as OpenAI's
        # does; False is a compatible server that ignores the option.
        self.stream_usage = True
        # Answer a request naming stream_options with a 400, as an API that predates it does (older Azure versions).
        self.refuse_stream_options = False
        # What a transcription answers: `transcript`, or transcript_for(filename, data) when set ("" for silence).
        self.transcript = "Hello from the fake transcriber."
        self.transcript_for: Callable[[str, bytes], str] | None = None
        self.transcriptions: list[Transcription] = []
        self._dimension = dimension
        self._window = SlidingWindow(*rate_limit) if rate_limit is not None else None
        self._clock = clock
        self._ids = 0

    def malformed_stream_next(self) -> None:
        """Answer the next chat request with an event stream whose second event is not JSON."""
        self._faults.append(_MalformedStream())

    def stream_fault_next(self, kind: StreamFaultKind, *, after: int = 2) -> None:
        """Answer the next chat request with a stream that goes wrong (see StreamFaultKind) after `after` deltas."""
        self._faults.append(StreamFault(kind, after))

    def add_routes(self, app: web.Application) -> None:
        """Chat completions (text and image parts), embeddings, transcriptions and the model list."""
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_post("/v1/audio/transcriptions", self._transcriptions)
        app.router.add_post("/v1/embeddings", self._embeddings)
        app.router.add_get("/v1/models", self._models)

    def error(self, status: int, message: str, *, retry_after: float | None = None) -> web.Response:
        """An OpenAI-style error answer."""
        return _error(status, message, retry_after=retry_after)

    async def admit(self, request: web.Request, body: Any, fault: object | None) -> web.StreamResponse | None:
        """The rate limit, the JSON body check, and the malformed-stream fault."""
        wait = self._rate_limit_wait()
        if wait is not None:
            return _error(429, "Rate limit reached for requests.", retry_after=wait)
        if body is None and request.method == "POST" and not request.content_type.startswith("multipart/"):
            return _error(400, "We could not parse the JSON body of your request.")
        request[_MALFORMED_STREAM] = isinstance(fault, _MalformedStream)
        request[_STREAM_FAULT] = fault if isinstance(fault, StreamFault) else None
        return None

    def _rate_limit_wait(self) -> float | None:
        """None when the request fits in the window (and is counted), else seconds until a slot frees."""
        if self._window is None:
            return None
        now = self._clock()
        wait = self._window.wait(now)
        if wait is None:
            self._window.count(now)
        return wait

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        received = time.monotonic()
        body = await request.json()
        self._ids += 1
        head = {"id": f"chatcmpl-fake{self._ids}", "created": int(time.time()), "model": body.get("model", "")}
        if (refused := _content_refused(body)) is not None:
            return _error(400, refused)
        reply = self.reply if self.reply_for is None else self.reply_for(body)
        if "stream_options" in body and self.refuse_stream_options:
            return _error(400, "Unrecognized request argument supplied: stream_options")
        # Tokens are counted as words, in the non-streamed answer's usage and in a stream's.
        words = sum(len(str(message.get("content", "")).split()) for message in body.get("messages", []))
        if not body.get("stream") and not request[_MALFORMED_STREAM]:
            return web.json_response(
                {
                    **head,
                    "object": "chat.completion",
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": reply},
                            "logprobs": None,
                            "finish_reason": "stop",
                        }
                    ],
                    "usage": _usage(words, len(reply.split())),
                }
            )
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
        await response.prepare(request)

        async def send(delta: dict[str, str], finish_reason: str | None = None) -> None:
            choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
            chunk = {**head, "object": "chat.completion.chunk", "choices": [choice]}
            await response.write(f"data: {json.dumps(chunk)}\n\n".encode())

        await send({"role": "assistant", "content": ""})
        if self.first_token_delay:
            await asyncio.sleep(self.first_token_delay)
        fault = request[_STREAM_FAULT]
        if request[_MALFORMED_STREAM]:
            await response.write(b'data: {"choices": [\n\n')
        else:
            record = StreamedReply(reply, tuple(_deltas(reply)), received, [])
            self.streamed.append(record)
            started = time.monotonic()
            for index, delta in enumerate(record.deltas):
                if fault is not None and index == fault.after and fault.kind != "noise":
                    await _break_stream(request, response, fault.kind)
                    return response
                if self.tokens_per_second and index:
                    # Paced from the first delta, so a late wake-up does not push every later delta back.
                    await asyncio.sleep(max(0.0, started + index / self.tokens_per_second - time.monotonic()))
                if fault is not None and fault.kind == "noise":
                    await response.write(b": keep-alive\n\n\n")
                await send({"content": delta})
                record.sent.append(time.monotonic())
            await send({}, finish_reason="stop")
            if self.stream_usage and (body.get("stream_options") or {}).get("include_usage"):
                usage = {
                    **head,
                    "object": "chat.completion.chunk",
                    "choices": [],
                    "usage": _usage(words, len(reply.split())),
                }
                await response.write(f"data: {json.dumps(usage)}\n\n".encode())
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        return response

    async def _transcriptions(self, request: web.Request) -> web.StreamResponse:
        if not request.content_type.startswith("multipart/form-data"):
            return _error(400, "Could not parse multipart form")
        fields: dict[str, str] = {}
        upload: tuple[str, str, bytes] | None = None
        reader = await request.multipart()
        while (part := await reader.next()) is not None:
            if not isinstance(part, BodyPartReader):
                continue
            if part.name == "file":
                data = bytearray()
                while chunk := await part.read_chunk(1 << 16):
                    data += chunk
                    if len(data) > MAX_AUDIO_BYTES:
                        return _error(413, f"Maximum content size limit ({MAX_AUDIO_BYTES}) exceeded.")
                upload = (part.filename or "", part.headers.get("Content-Type", ""), bytes(data))
            elif part.name:
                fields[part.name] = (await part.read()).decode()
        if not fields.get("model"):
            return _error(400, "you must provide a model parameter")
        if upload is None:
            return _error(400, "1 validation error for Request body -> file field required")
        filename, content_type, data = upload
        text = self.transcript if self.transcript_for is None else self.transcript_for(filename, data)
        self.transcriptions.append(Transcription(fields["model"], filename, content_type, data, text))
        self._notify()
        if fields.get("response_format") == "text":
            return web.Response(text=text)
        return web.json_response({"text": text, "usage": {"type": "duration", "seconds": 1}})

    async def _embeddings(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        texts = body.get("input")
        if isinstance(texts, str):
            texts = [texts]
        if not isinstance(texts, list) or not texts or not all(isinstance(text, str) for text in texts):
            return _error(400, "'input' must be a string or a non-empty list of strings.")
        as_base64 = body.get("encoding_format") == "base64"  # the openai client asks for base64 by default
        data = []
        for index, text in enumerate(texts):
            vector = fake_embedding(text, self._dimension)
            encoded: Any = base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode() if as_base64 else vector
            data.append({"object": "embedding", "index": index, "embedding": encoded})
        tokens = sum(len(text.split()) for text in texts)
        return web.json_response(
            {"object": "list", "data": data, "model": body.get("model", ""), "usage": _usage(tokens, 0)}
        )

    async def _models(self, request: web.Request) -> web.StreamResponse:
        models = [{"id": name, "object": "model", "created": 0, "owned_by": "fake"} for name in ("chat", "embed")]
        return web.json_response({"object": "list", "data": models})


async def _break_stream(request: web.Request, response: web.StreamResponse, kind: StreamFaultKind) -> None:
    """End a stream the way `kind` says a broken one ends."""
    if kind == "garbage":
        await response.write(b"data: <html><body>502 Bad Gateway</body></html>\n\n")
        await response.write(b"data: [DONE]\n\n")
    elif kind == "error":
        error = {"message": "The server had an error while processing your request.", "type": "server_error"}
        await response.write(f"data: {json.dumps({'error': error})}\n\n".encode())
    elif kind == "reset":
        # Drop the connection with the chunked body unfinished: the client reads a body that stops mid-message.
        transport = request.transport
        if transport is not None:
            transport.abort()
        return
    await response.write_eof()


def _content_refused(body: Any) -> str | None:
    """Why a chat request's content parts are refused, as OpenAI words it; None when every part is text or an image."""
    for message in body.get("messages", []):
        content = message.get("content")
        if not isinstance(content, list):
            continue
        for part in content:
            kind = part.get("type") if isinstance(part, dict) else None
            if kind == "image_url":
                url = str((part.get("image_url") or {}).get("url", ""))
                if not url.startswith(("data:image/", "http://", "https://")):
                    return "Invalid image URL: expected a base64 data URL or an http(s) URL."
            elif kind != "text":
                return f"Invalid content type: {kind!r}."
    return None


def _deltas(text: str) -> list[str]:
    """The reply cut before each word, so the pieces join back to it exactly."""
    return [piece for piece in re.split(r"(?<=\s)(?=\S)", text) if piece]


def _usage(prompt_tokens: int, completion_tokens: int) -> dict[str, int]:
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }


def _error(status: int, message: str, *, retry_after: float | None = None) -> web.Response:
    """An OpenAI-style error answer; the type and code follow what api.openai.com sends for that status."""
    if status == 401:
        kind, code = "invalid_request_error", "invalid_api_key"
    elif status == 429:
        kind, code = "requests", "rate_limit_exceeded"
    elif status >= 500:
        kind, code = "server_error", None
    else:
        kind, code = "invalid_request_error", None
    headers = {"retry-after": f"{retry_after:g}"} if retry_after is not None else None
    return web.json_response(
        {"error": {"message": message, "type": kind, "param": None, "code": code}}, status=status, headers=headers
    )
