"""How an answer looks in Slack (sources in a context block, feedback buttons) and the app manifest's promises."""

from __future__ import annotations

from pathlib import Path

import yaml

import adapters.slack
from adapters.slack.app import BOT_SCOPES
from adapters.slack.native import split
from adapters.slack.render import body, escape, feedback_block, parse_feedback, sources_block, trailing_blocks
from bot.app.settings import Settings
from bot.types import Answer, SourceLink

MANIFEST = Path(adapters.slack.__file__).parent / "manifest.yaml"


def test_sources_are_one_context_block_with_links_for_web_pages() -> None:
    block = sources_block(
        [SourceLink(1, "Guide <v2> & more", url="https://example.com/guide"), SourceLink(2, "notes.md")]
    )
    assert block == {
        "type": "context",
        "elements": [
            {"type": "mrkdwn", "text": "*Sources:*"},
            {"type": "mrkdwn", "text": "[1] <https://example.com/guide|Guide &lt;v2&gt; &amp; more>"},
            {"type": "mrkdwn", "text": "[2] notes.md"},
        ],
    }


def test_many_sources_stay_within_the_ten_elements_of_a_context_block() -> None:
    block = sources_block([SourceLink(n, f"doc{n}") for n in range(1, 15)])
    assert block is not None
    assert len(block["elements"]) == 10
    assert "[14] doc14" in block["elements"][-1]["text"]


def test_only_a_stored_answer_gets_feedback_buttons() -> None:
    assert trailing_blocks(Answer("hi")) == []
    assert trailing_blocks(Answer("hi", message_id="m1")) == [feedback_block("m1")]
    assert parse_feedback("up:m1") == ("up", "m1")
    assert parse_feedback("maybe:m1") is None
    assert parse_feedback("down:") is None


def test_the_body_is_the_answer_and_its_notice_without_sources() -> None:
    answer = Answer("The answer.", sources=(SourceLink(1, "a"),), notice="(stopped)")
    assert body(answer) == "The answer.\n\n_(stopped)_"
    assert escape("a<b>&c") == "a&lt;b&gt;&amp;c"


def test_long_text_is_split_at_a_paragraph_within_the_room() -> None:
    text = "first paragraph\n\nsecond paragraph that is longer"
    assert split(text, 25) == ("first paragraph\n\n", "second paragraph that is longer")
    assert split("short", 25) == ("short", "")
    assert split("x" * 30, 25) == ("x" * 25, "x" * 5)


def test_the_manifest_asks_for_exactly_the_scopes_events_and_command_ragbot_uses() -> None:
    manifest = yaml.safe_load(MANIFEST.read_text())
    assert sorted(manifest["oauth_config"]["scopes"]["bot"]) == sorted(BOT_SCOPES)
    assert sorted(manifest["settings"]["event_subscriptions"]["bot_events"]) == [
        "app_home_opened",
        "app_mention",
        "app_uninstalled",
        "message.channels",
        "message.groups",
        "message.im",
        "tokens_revoked",
    ]
    assert manifest["features"]["agent_view"]["agent_description"]
    assert manifest["features"]["app_home"]["home_tab_enabled"] is True
    commands = [command["command"] for command in manifest["features"]["slash_commands"]]
    assert commands == [Settings.model_fields["SLACK_COMMAND"].default]
    assert manifest["settings"]["interactivity"]["is_enabled"] is True
