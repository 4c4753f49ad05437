"""Models that turn a question's media into text: a vision model describes an image, a speech model transcribes audio.

Both speak the OpenAI API through openai.AsyncOpenAI (chat completions with an image_url content part, and
/audio/transcriptions), configured as a chat model is (ChatModelConfig); openai is imported where a model is made.
"""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING

from rag.config import ChatModelConfig
from rag.errors import ModelError, ModelTimeout

if TYPE_CHECKING:
    import openai

# What the vision model is asked: the text in the image first (that is what a search finds), then what it shows.
VISION_PROMPT = (
    "A person sent this image with a question for a company's knowledge base. Copy out any text in the image "
    "exactly (error messages, labels, headings), then say in one or two sentences what the image shows. "
    "Write only that, in the language of the image's text."
)


def _client(config: ChatModelConfig) -> openai.AsyncOpenAI:
    import openai

    return openai.AsyncOpenAI(
        base_url=config.base_url,
        api_key=config.api_key or "unused",
        timeout=config.timeout,
        max_retries=config.max_retries,
    )


def _failed(what: str, exc: openai.APIError) -> ModelError:
    import openai

    if isinstance(exc, openai.APITimeoutError):
        return ModelTimeout(f"{what} timed out: {exc}")
    if isinstance(exc, openai.APIStatusError):
        return ModelError(f"{what} answered {exc.status_code}: {exc.message}", status=exc.status_code)
    return ModelError(f"{what} failed: {exc}")


class OpenAIVision:
    """Describes an image with a vision chat model (the image sent inline as a data: URL)."""

    def __init__(self, config: ChatModelConfig) -> None:
        self._model = config.model
        self._client = _client(config)

    async def describe(self, data: bytes, mime_type: str, question: str) -> str:
        """The image's text and a short description; raises ModelError or ModelTimeout."""
        import openai

        url = f"data:{mime_type};base64,{base64.b64encode(data).decode()}"
        prompt = f"{VISION_PROMPT}\n\nTheir question: {question}" if question else VISION_PROMPT
        try:
            response = await self._client.chat.completions.create(
                model=self._model,
                messages=[
                    {
                        "role": "user",
                        "content": [
                            {"type": "text", "text": prompt},
                            {"type": "image_url", "image_url": {"url": url}},
                        ],
                    }
                ],
                stream=False,
            )
        except openai.APIError as exc:
            raise _failed("vision model", exc) from exc
        if not response.choices:
            raise ModelError("vision model returned no choices")
        return (response.choices[0].message.content or "").strip()

    async def close(self) -> None:
        """Close the HTTP client."""
        await self._client.close()


class OpenAITranscriber:
    """Transcribes speech through an OpenAI-compatible /audio/transcriptions endpoint."""

    def __init__(self, config: ChatModelConfig) -> None:
        self._model = config.model
        self._client = _client(config)

    async def transcribe(self, data: bytes, name: str, mime_type: str) -> str:
        """What was said ("" for silence); raises ModelError or ModelTimeout."""
        import openai

        try:
            result = await self._client.audio.transcriptions.create(model=self._model, file=(name, data, mime_type))
        except openai.APIError as exc:
            raise _failed("transcription model", exc) from exc
        return result.text.strip()

    async def close(self) -> None:
        """Close the HTTP client."""
        await self._client.close()
