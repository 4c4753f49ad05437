"""The concurrency benchmarks' conversations: one document, numbered questions, the fake model's known answers."""

from __future__ import annotations

import random
import re
from typing import Any, Protocol

from fakes.openai_api import StreamedReply

KB = "handbook"

DOCUMENT_NAME = "vpn.md"

DOCUMENT = (
    "# VPN client\n\nThe VPN client is installed from the Software Center app on your laptop. Open the Software "
    "Center, search for VPN and press Install. Sign in with your company account when the client first starts.\n"
)

# The one source under every answer, named by the document's file name.
SOURCE_TITLE = DOCUMENT_NAME

MODEL_TTFT = 0.2

ANSWER_WORDS = 120

# A conversation not done by then counts as timed out; 1,000 at once on today's code take minutes.
RUN_TIMEOUT = 600.0

_TICKET = re.compile(r"[Tt]icket (\d+)")
# rag.rewrite's prompt ends with the question to rewrite and this line.
_REWRITE = re.compile(r"Latest question: (.+)\nRewritten question:\s*$")

# The answers' words: the document's own, so they read like answers about it.
_VOCABULARY = tuple(dict.fromkeys(re.findall(r"[a-z]+", DOCUMENT.lower())))


def question(number: int) -> str:
    """Conversation `number`'s question: the same topic for all, a ticket number of its own."""
    return f"How do I install the VPN client on my laptop? This is ticket {number}."


def known_answer(number: int) -> str:
    """The fake model's answer to ticket `number`: ANSWER_WORDS words, distinct per ticket, plain text."""
    rng = random.Random(number)
    words = ["Ticket", f"{number}:", *(rng.choice(_VOCABULARY) for _ in range(ANSWER_WORDS - 3)), "done."]
    for at in range(12, len(words) - 1, 12):
        words[at] += "."
    return " ".join(words)


def reply_for(body: Any) -> str:
    """The fake model's reply: a rewrite prompt gets its question back (it stands alone), a question its ticket's
    known answer."""
    last = str(body.get("messages", [{}])[-1].get("content", ""))
    if rewrite := _REWRITE.search(last):
        return rewrite[1]
    found = _TICKET.findall(last)
    return known_answer(int(found[-1])) if found else "No ticket number in the question."


class Streams(Protocol):
    """A fake model's record of what it streamed (FakeOpenAI in this process, or bench.model_process's child)."""

    streamed: list[StreamedReply]


def streams_by_ticket(fake: Streams) -> dict[int, StreamedReply]:
    """The fake model's streamed answers that wrote anything, by the ticket number they answer."""
    return {int(_TICKET.findall(record.reply)[0]): record for record in fake.streamed if record.sent}
