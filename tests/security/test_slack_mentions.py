"""Drill: nothing ragbot posts in Slack notifies @channel, @here or a person, or hides a link, unless ragbot wrote
that syntax itself: not a member's words echoed back, not a document's, not the model's."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from adapters.slack.render import neutralise, settled
from fakes.openai_api import FakeOpenAI
from fakes.slack import events
from tests.conftest import EmbeddedSettings
from tests.e2e.test_slack import BOB, TEAM, Slack
from tests.security.slack_support import live_syntax, mark, slack_scene

ALARM = (
    b"# Fire alarm\n\nWhen the fire alarm rings, tell <!channel> and <!here>, ping <@U0VICTIM> in <#C0SECRET>, "
    b"and open <https://evil.example/steal|the evacuation map> before leaving by the stairs.\n"
)
# The model quoting the document as it stands.
QUOTED = (
    "When the fire alarm rings, tell <!channel> and <!here>, ping <@U0VICTIM> in <#C0SECRET>, and open "
    "<https://evil.example/steal|the evacuation map> before leaving by the stairs [1]."
)
# How Slack delivers what a member typed: a literal "<" arrives as "&lt;"; a mention they picked arrives live.
TYPED = "&lt;!channel&gt; &lt;@U0VICTIM&gt; <!here> <@U0VICTIM> &lt;https://evil.example|x&gt;"


@pytest_asyncio.fixture(scope="module")
async def slack(tmp_path_factory: pytest.TempPathFactory, embedded_settings: EmbeddedSettings) -> AsyncIterator[Slack]:
    data_dir = tmp_path_factory.mktemp("slack-mentions")
    async with FakeOpenAI() as model:
        model.reply = QUOTED
        model.tokens_per_second = 20.0  # word by word over about a second: the answer streams
        async with slack_scene(data_dir, embedded_settings, {"alarm.md": ALARM}, model=model) as scene:
            yield scene


async def _slash(slack: Slack, text: str, channel: str) -> str:
    hook = slack.fake.response_url(team_id=TEAM, channel=channel, user=BOB)
    fields = events.slash_command(
        command="/kb", text=text, user_id=BOB, channel_id=channel, team_id=TEAM, response_url=hook
    )
    assert (await slack.post(fields, form=True))[0] == 200
    return hook


async def test_a_question_asked_with_the_slash_command_cannot_post_a_live_channel_mention(slack: Slack) -> None:
    since = mark(slack.fake)
    await _slash(slack, f"what should I do when the fire alarm rings? {TYPED}", "C0SLASH")
    await slack.fake.wait_for(lambda: slack.fake.visible("C0SLASH"), timeout=30)
    (root,) = [m for m in slack.fake.visible("C0SLASH") if m.thread_ts in (None, m.ts)]
    await slack.answers("C0SLASH", root.ts)
    assert "!channel" in root.text  # the question is shown, as the member wrote it
    assert live_syntax(slack.fake, since, composed=(f"<@{BOB}>",)) == []


async def test_a_command_argument_echoed_back_cannot_mention_anyone(slack: Slack) -> None:
    since = mark(slack.fake)
    hook = await _slash(slack, "info &lt;!channel&gt;", "C0ECHO")
    await slack.fake.wait_for(lambda: slack.fake.responses(hook), timeout=30)
    assert "!channel" in str(slack.fake.responses(hook)[-1].body["blocks"][0]["text"])  # named back, defused
    assert live_syntax(slack.fake, since, composed=(f"<@{BOB}>",)) == []


async def test_a_document_quoting_mentions_streams_an_answer_without_live_mentions(slack: Slack) -> None:
    since = mark(slack.fake)
    thread = await slack.mention(f"What do I do when the fire alarm rings? {TYPED}", channel="C0STREAM")
    (shown,) = await slack.answers("C0STREAM", thread)
    assert "evacuation map" in shown
    assert any(call.method == "chat.startStream" for call in slack.fake.calls()[since[0] :])
    assert live_syntax(slack.fake, since, composed=(f"<@{BOB}>",)) == []


async def test_a_document_quoting_mentions_edits_a_dm_answer_without_live_mentions(slack: Slack) -> None:
    since = mark(slack.fake)
    await slack.say("What do I do when the fire alarm rings?", channel="D0BOB")
    (shown,) = await slack.dm_answers("D0BOB")
    assert "evacuation map" in shown
    assert live_syntax(slack.fake, since, composed=(f"<@{BOB}>",)) == []


# Each written by a member, a document or the model; none may reach Slack as syntax.
SPECIAL = [
    "<!channel>",
    "<!here|here>",
    "<!everyone>",
    "<!subteam^S123|devs>",
    "<@U123>",
    "<@W123|bob>",
    "<#C123>",
    "<#C123|general>",
    "<https://evil.example|the payroll portal>",
    "<http://evil.example>",
    "<mailto:a@evil.example|HR>",
    "&lt;!channel&gt;",
    "&lt!channel&gt;",
    "&#60;!channel&#62;",
    "&#x3C;@U123&#x3E;",
    "&#0060;#C123>",
]


@pytest.mark.parametrize("written", SPECIAL)
def test_slack_syntax_written_by_others_is_defused_for_markdown(written: str) -> None:
    defused = neutralise(f"see {written} now")
    assert defused.replace("\u2060", "") == f"see {written} now"  # reads the same
    assert "\u2060" in defused
    assert neutralise(defused) == defused


@pytest.mark.parametrize("kept", ["a < b", "std::vector<std::string>", "x<-y", "1 &lt; 2", "AT&T", "<b>bold</b>"])
def test_ordinary_angle_brackets_and_code_are_left_as_written(kept: str) -> None:
    assert neutralise(kept) == kept


@pytest.mark.parametrize("written", SPECIAL)
@pytest.mark.parametrize("at", [1, 2, 3, 5, 8])
def test_a_mention_split_across_streamed_pieces_is_defused_as_a_whole(written: str, at: int) -> None:
    text = f"tell {written} now"
    cut = len("tell ") + at
    shown, held = "", ""
    for piece in (text[:cut], text[cut:]):
        held += piece
        ready = settled(held)
        shown, held = shown + neutralise(held[:ready]), held[ready:]
    assert shown + neutralise(held) == neutralise(text)
