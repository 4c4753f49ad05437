"""Slack's agent view: prompts and titles within Slack's limits, the Home tab, the viewed channel, the most asked."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from adapters.slack import words as slack_words
from adapters.slack.agent import (
    MAX_PROMPTS,
    PROMPT_MESSAGE_MAX,
    PROMPT_TITLE_MAX,
    THREAD_TITLE_MAX,
    OptionalCalls,
    prompts_of,
    shorten,
    thread_title,
)
from adapters.slack.home import HEADER_MAX, MAX_BLOCKS, SECTION_MAX, home_view
from adapters.slack.translate import Place, command_style, conversation_key, place
from adapters.slack.viewing import ViewedChannels, is_agent_view, thread_context, viewed_channel
from bot.errors import PlatformError, PlatformRateLimited, PlatformUnavailable
from bot.types import ConversationKey

SLACK = command_style("/kb")


@pytest.mark.parametrize(
    ("text", "limit", "expected"),
    [
        ("How do I reset my VPN password?", 60, "How do I reset my VPN password?"),
        ("  spaced \n  out\tquestion ", 60, "spaced out question"),
        ("How do I reset the password of the VPN client on a laptop?", 30, "How do I reset the password…"),
        ("x" * 100, 10, "x" * 9 + "…"),
    ],
)
def test_a_text_is_shortened_to_its_limit_at_a_word_with_an_ellipsis(text: str, limit: int, expected: str) -> None:
    shortened = shorten(text, limit)
    assert shortened == expected
    assert len(shortened) <= limit


def test_prompts_are_at_most_four_and_each_within_slacks_lengths() -> None:
    long = "Where can I find the travel policy " + "for trips that last longer than two weeks " * 20 + "?"
    prompts = prompts_of(["", long, "When is lunch?", "Who waters the plants?", "VPN?", "Parking?"])
    assert len(prompts) == MAX_PROMPTS
    assert [prompt.title for prompt in prompts[1:]] == ["When is lunch?", "Who waters the plants?", "VPN?"]
    first = prompts[0]
    assert len(first.title) <= PROMPT_TITLE_MAX
    assert first.title.endswith("…")
    assert len(first.message) <= PROMPT_MESSAGE_MAX
    assert first.message.startswith("Where can I find the travel policy for trips")
    assert prompts_of([]) == []


def test_a_thread_title_is_the_first_question_on_one_line_within_the_limit() -> None:
    assert thread_title("When is\nlunch served?") == "When is lunch served?"
    assert len(thread_title("why " * 100)) <= THREAD_TITLE_MAX
    assert thread_title("   ") == ""


def test_an_agent_view_dm_message_is_the_root_of_a_conversation_of_its_own() -> None:
    event = {"type": "message", "channel": "D1", "channel_type": "im", "ts": "1.5", "user": "U1", "app_context": {}}
    assert is_agent_view(event)
    where = place(event, "T1", threads_apart=True)
    assert where == Place("T1", "D1", "1.5", True, apart=True)
    assert conversation_key(where) == ConversationKey("slack", "T1", "D1", "1.5")
    reply = place({**event, "ts": "1.9", "thread_ts": "1.5"}, "T1", threads_apart=True)
    assert conversation_key(reply) == conversation_key(where)
    # Without the agent view the DM is one conversation, as before.
    legacy = {key: value for key, value in event.items() if key != "app_context"}
    assert not is_agent_view(legacy)
    assert conversation_key(place(legacy, "T1")) == ConversationKey("slack", "T1", "D1", "")


@pytest.mark.parametrize(
    ("context", "expected"),
    [
        ({"entities": [{"type": "slack#/types/channel_id", "value": "C0HR", "team_id": "T1"}]}, "C0HR"),
        (
            {
                "entities": [
                    {"type": "slack#/types/canvas_id", "value": "F0CANVAS"},
                    {"type": "slack#/types/channel_id", "value": "G0PRIVATE"},
                ]
            },
            "G0PRIVATE",
        ),
        ({"entities": [{"type": "slack#/types/channel_id", "value": "D0OTHERDM"}]}, ""),
        ({"entities": [{"type": "slack#/types/channel_id", "value": "C0X<script>"}]}, ""),
        ({}, ""),
        ("nonsense", ""),
    ],
)
def test_the_viewed_channel_is_the_first_channel_the_agent_view_names(context: Any, expected: str) -> None:
    assert viewed_channel({"app_context": context}) == expected


def test_an_assistant_thread_remembers_the_channel_viewed_beside_it() -> None:
    started = {
        "type": "assistant_thread_started",
        "assistant_thread": {
            "user_id": "U1",
            "context": {"channel_id": "C0HR"},
            "channel_id": "D1",
            "thread_ts": "2.0",
        },
    }
    assert thread_context(started) == ("D1", "2.0", "C0HR")
    threads = ViewedChannels()
    threads.remember(*thread_context(started))
    assert (threads.known("D1", "2.0"), threads.of("D1", "2.0")) == (True, "C0HR")
    threads.remember("D1", "2.0", "")
    assert (threads.known("D1", "2.0"), threads.of("D1", "2.0")) == (True, "")
    assert not threads.known("D1", "3.0")


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_home_tab_says_how_to_ask_lists_the_knowledge_bases_and_the_commands(lang: str) -> None:
    view = home_view(["handbook", "R&D <notes>"], "- `/kb help`: what I can do", lang, SLACK)
    assert view["type"] == "home"
    texts = [block["text"]["text"] for block in view["blocks"] if "text" in block]
    assert texts[0] == slack_words.home_title(lang)
    assert slack_words.home_how(lang, SLACK) in texts
    assert "• handbook\n• R&amp;D &lt;notes&gt;" in texts
    assert "- `/kb help`: what I can do" in texts
    assert slack_words.home_no_kbs(lang, SLACK) in [
        block["text"]["text"] for block in home_view([], "", lang, SLACK)["blocks"] if "text" in block
    ]


def test_a_home_tab_with_very_much_to_say_stays_within_slacks_blocks_and_lengths() -> None:
    view = home_view([f"kb-{n}-" + "x" * 80 for n in range(2_000)], "- `/kb x`: y\n" * 5_000, "en", SLACK)
    blocks = view["blocks"]
    assert len(blocks) <= MAX_BLOCKS
    for block in blocks:
        limit = HEADER_MAX if block["type"] == "header" else SECTION_MAX
        assert len(block.get("text", {}).get("text", "")) <= limit


class _Slack:
    """A Web API method answering `error` (a platform error, as adapters.slack.calls raises them) or ok."""

    def __init__(self, error: PlatformError | None) -> None:
        self.error = error
        self.calls = 0

    async def request(self) -> dict[str, bool]:
        self.calls += 1
        await asyncio.sleep(0)  # another opening of the DM arrives meanwhile
        if self.error is not None:
            raise self.error
        return {"ok": True}


async def test_a_workspace_refusing_a_feature_is_asked_once_even_by_people_arriving_together(
    caplog: pytest.LogCaptureFixture,
) -> None:
    calls, slack = OptionalCalls(), _Slack(PlatformError("not_allowed"))
    made = await asyncio.gather(*(calls.make("T1", "m", slack.request) for _ in range(5)))
    assert made == [False] * 5
    assert slack.calls == 1
    assert calls.refused("T1", "m")
    assert not calls.refused("T2", "m")
    assert len([r for r in caplog.records if "slack=feature_unavailable" in r.getMessage()]) == 1


@pytest.mark.parametrize(
    "error", [PlatformError("internal_error"), PlatformRateLimited(5.0, "slack"), PlatformUnavailable("down")]
)
async def test_a_passing_fault_is_not_taken_for_a_missing_feature(error: PlatformError) -> None:
    calls, slack = OptionalCalls(), _Slack(error)
    assert not await calls.make("T1", "m", slack.request)
    slack.error = None
    assert await calls.make("T1", "m", slack.request)
    assert not calls.refused("T1", "m")
