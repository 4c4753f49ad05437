"""A Telegram group without topics as one conversation per reply chain, end to end: the real python-telegram-bot
polling the fake Bot API, the real openai client talking to FakeOpenAI as the chat model, over real services.

A mention starts a conversation; a reply to an answer (or to its question) continues it, with its own order, history,
/stop, /sources and /new. What the model was sent shows the history each turn saw.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
from telegram import Bot

from adapters.telegram.render import to_telegram_html
from bot.types import ConversationKey, SourceLink
from bot.words import messages
from fakes.openai_api import FakeOpenAI, StreamedReply
from fakes.telegram import FakeTelegramBotAPI, parse_html
from fakes.telegram.records import BotMessage
from harness.instances import poll
from tests.conftest import EmbeddedSettings
from tests.support.drills import TelegramWorld, model_env, telegram_env, telegram_world

ALICE: dict[str, Any] = {"id": 9101, "is_bot": False, "first_name": "Alice", "language_code": "en"}
BOB: dict[str, Any] = {"id": 9102, "is_bot": False, "first_name": "Bob", "language_code": "en"}
ADMIN: dict[str, Any] = {"id": 9100, "is_bot": False, "first_name": "Ada", "language_code": "en"}
# Model answers of 60 words, one word a delta: long enough to be caught mid-stream, each ending in its own last word.
VPN_ANSWER = (
    "The VPN client is installed from the Software Center [1]. " + " ".join(f"v{n}" for n in range(50)) + " END"
)
LUNCH_ANSWER = "Lunch is served from noon in the atrium [1]. " + " ".join(f"l{n}" for n in range(51)) + " END"


def _question(body: Any) -> str:
    """The question a request to the model is about: a rewrite's latest question, or an answer's question."""
    content = str(body["messages"][-1]["content"])
    if body.get("stream"):
        return content.rpartition("Question:")[2].strip()
    return content.rpartition("Latest question:")[2].partition("\n")[0].strip()


def _reply(body: Any) -> str:
    question = _question(body)
    if not body.get("stream"):
        return question  # the rewrite: the question as it stands (what it saw is checked on the request)
    return VPN_ANSWER if "vpn" in question.lower() or "connect" in question.lower() else LUNCH_ANSWER


@pytest_asyncio.fixture(scope="module")
async def world(
    tmp_path_factory: pytest.TempPathFactory, embedded_settings: EmbeddedSettings
) -> AsyncIterator[tuple[TelegramWorld, FakeOpenAI]]:
    async with FakeOpenAI() as model, FakeTelegramBotAPI() as fake:
        settings = embedded_settings(
            tmp_path_factory.mktemp("telegram-groups"),
            TELEGRAM_ADMINS=str(ADMIN["id"]),
            **model_env(model),
            **telegram_env(fake),
        )
        async with telegram_world(fake, settings) as running:
            yield running, model


@pytest.fixture(autouse=True)
def _model(world: tuple[TelegramWorld, FakeOpenAI]) -> FakeOpenAI:
    model = world[1]
    model.reply_for = _reply
    model.tokens_per_second = 0.0
    return model


def _ask(fake: FakeTelegramBotAPI, group: int, text: str, user: dict[str, Any], **kwargs: Any) -> int:
    """Queue a group message (a mention unless it replies); its message id."""
    update = fake.queue_update(fake.group_message(text, chat_id=group, user=user, **kwargs))
    return int(update["message"]["message_id"])


def _reply_of(fake: FakeTelegramBotAPI, group: int, message_id: int) -> BotMessage | None:
    """The bot's message replying to `message_id` (an answer to a question, the reply to a command)."""
    return next((sent for sent in fake.bot_messages(group) if sent.reply_to == message_id), None)


async def _answer(fake: FakeTelegramBotAPI, group: int, question_id: int) -> BotMessage:
    """The answer to a question once final (its feedback buttons are on)."""

    def final() -> bool:
        sent = _reply_of(fake, group, question_id)
        return sent is not None and sent.reply_markup is not None

    await fake.wait_for(final, timeout=60)
    answer = _reply_of(fake, group, question_id)
    assert answer is not None
    return answer


async def _vpn_then_lunch(fake: FakeTelegramBotAPI, group: int) -> list[tuple[int, BotMessage]]:
    """Alice asks about the VPN, then (not replying) about lunch: each question's id and its final answer."""
    asked = []
    for question in ("How do I install the VPN client?", "When is lunch served?"):
        message_id = _ask(fake, group, question, ALICE)
        asked.append((message_id, await _answer(fake, group, message_id)))
    return asked


async def _sent_reply(fake: FakeTelegramBotAPI, group: int, message_id: int) -> BotMessage:
    """The bot's reply to a message, once sent (a command's reply is final when sent)."""
    await fake.wait_for(lambda: _reply_of(fake, group, message_id) is not None, timeout=30)
    sent = _reply_of(fake, group, message_id)
    assert sent is not None
    return sent


async def _said(fake: FakeTelegramBotAPI, group: int, command_id: int) -> str:
    """The text of the bot's reply to a command message, once sent."""
    return (await _sent_reply(fake, group, command_id)).text


def _rewrites(model: FakeOpenAI, question: str) -> list[str]:
    """What the model was shown to rewrite `question`: the conversation before it, as the rewrite request said."""
    return [
        str(request.json["messages"][-1]["content"])
        for request in model.requests
        if request.path.endswith("/chat/completions")
        and not request.json.get("stream")
        and _question(request.json) == question
    ]


def _stream(model: FakeOpenAI, answer: str, start: int) -> StreamedReply | None:
    return next((streamed for streamed in model.streamed[start:] if streamed.reply == answer), None)


def _mid_stream(streamed: StreamedReply | None) -> bool:
    return streamed is not None and 0 < len(streamed.sent) < len(streamed.deltas)


async def test_two_people_asking_at_once_are_answered_in_parallel_and_a_stop_replying_to_one_stops_only_it(
    world: tuple[TelegramWorld, FakeOpenAI],
) -> None:
    running, model = world
    fake, group = running.fake, -100601
    model.tokens_per_second = 5.0  # 60 words: about 12 s each unless stopped
    start = len(model.streamed)
    alice_asked = _ask(fake, group, "How do I install the VPN client?", ALICE)
    bob_asked = _ask(fake, group, "When is lunch served?", BOB)
    # Both answers are being written at the same moment (neither waits for the other's end), Alice's on screen.
    await fake.wait_for(
        lambda: (
            _mid_stream(_stream(model, VPN_ANSWER, start))
            and _mid_stream(_stream(model, LUNCH_ANSWER, start))
            and _reply_of(fake, group, alice_asked) is not None
        ),
        timeout=30,
    )
    alice_answer = _reply_of(fake, group, alice_asked)
    assert alice_answer is not None
    stop = _ask(fake, group, "/stop", ALICE, mention=False, reply_to=alice_answer.message_id)
    assert await _said(fake, group, stop) == _plain(messages.stopping("en"))
    stopped = await _answer(fake, group, alice_asked)
    assert messages.stopped_note("en") in stopped.text
    assert "END" not in stopped.text
    lunch = await _answer(fake, group, bob_asked)
    assert "END" in lunch.text  # Bob's answer was written to its last word
    assert messages.stopped_note("en") not in lunch.text


async def test_a_reply_to_an_answer_continues_its_conversation_and_each_it_is_read_against_its_own(
    world: tuple[TelegramWorld, FakeOpenAI],
) -> None:
    running, model = world
    fake, group = running.fake, -100602
    alice_asked = _ask(fake, group, "How do I install the VPN client?", ALICE)
    bob_asked = _ask(fake, group, "When is lunch served?", BOB)
    alice_answer = await _answer(fake, group, alice_asked)
    bob_answer = await _answer(fake, group, bob_asked)
    # Alice follows up on her answer, Bob on the question he asked: each continues their own conversation.
    alice_again = _ask(fake, group, "How does it connect?", ALICE, mention=False, reply_to=alice_answer.message_id)
    bob_again = _ask(fake, group, "Where is it served?", BOB, reply_to=bob_asked)  # a mention, replying to a person
    await _answer(fake, group, alice_again)
    await _answer(fake, group, bob_again)
    (alice_saw,) = _rewrites(model, "How does it connect?")
    (bob_saw,) = _rewrites(model, "Where is it served?")
    assert "VPN" in alice_saw
    assert "lunch" not in alice_saw.lower()
    assert "lunch" in bob_saw.lower()
    assert "VPN" not in bob_saw
    conversations = running.services.conversations
    alice_chain = await conversations.find("telegram", "", str(group), f"reply:{alice_asked}")
    bob_chain = await conversations.find("telegram", "", str(group), f"reply:{bob_asked}")
    assert alice_chain is not None
    assert bob_chain is not None
    assert [m.text for m in await conversations.recent(alice_chain.id, 10) if m.role == "user"] == [
        "How do I install the VPN client?",
        "How does it connect?",
    ]
    assert [m.text for m in await conversations.recent(bob_chain.id, 10) if m.role == "user"] == [
        "When is lunch served?",
        "Where is it served?",
    ]
    assert bob_answer.message_id != alice_answer.message_id


async def test_sources_replying_to_an_older_answer_give_that_answers_and_without_a_reply_the_latest_named(
    world: tuple[TelegramWorld, FakeOpenAI],
) -> None:
    running, _ = world
    fake, group = running.fake, -100603
    (vpn, vpn_answer), (lunch, _) = await _vpn_then_lunch(fake, group)
    vpn_sources = await _sources_shown(running, group, vpn)
    lunch_sources = await _sources_shown(running, group, lunch)
    assert vpn_sources != lunch_sources  # each answer cites its own passage
    older = _ask(fake, group, "/sources", ALICE, mention=False, reply_to=vpn_answer.message_id)
    assert await _said(fake, group, older) == vpn_sources
    latest = _ask(fake, group, "/sources", ALICE, mention=False)
    about = _plain(messages.about_question("When is lunch served?", "en"))
    assert await _said(fake, group, latest) == f"{about}\n\n{lunch_sources}"
    # Someone who asked nothing here is told there is nothing, not shown another person's sources.
    stranger = _ask(fake, group, "/sources", BOB, mention=False)
    assert await _said(fake, group, stranger) == _plain(messages.no_sources("en"))


async def _sources_shown(running: TelegramWorld, group: int, question_id: int) -> str:
    """What /sources shows for the conversation a question started, as the chat shows it."""
    key = ConversationKey("telegram", "", str(group), f"reply:{question_id}")
    links: list[SourceLink] = []

    async def stored() -> bool:
        nonlocal links
        links = await running.manager.last_sources(key)
        return bool(links)

    # An answer shows in the chat whole (its buttons on) a moment before its end is stored with its sources: CI
    # read them in between once.
    assert await poll(stored, 30)
    details = (messages.source_detail(link.number, link.title, link.url, link.snippet) for link in links)
    return _plain("\n\n".join(details))


def _plain(markdown: str) -> str:
    return parse_html(to_telegram_html(markdown))[0]


async def test_new_replying_to_an_answer_starts_only_that_conversation_over(
    world: tuple[TelegramWorld, FakeOpenAI],
) -> None:
    running, model = world
    fake, group = running.fake, -100604
    (_, vpn_answer), (_, lunch_answer) = await _vpn_then_lunch(fake, group)
    new = _ask(fake, group, "/new", ALICE, mention=False, reply_to=vpn_answer.message_id)
    assert await _said(fake, group, new) == _plain(messages.new_conversation("en"))
    after_new = _ask(fake, group, "Does it need a badge?", ALICE, mention=False, reply_to=vpn_answer.message_id)
    await _answer(fake, group, after_new)
    assert _rewrites(model, "Does it need a badge?") == []  # no history left to rewrite against
    kept = _ask(fake, group, "Is it free?", ALICE, mention=False, reply_to=lunch_answer.message_id)
    await _answer(fake, group, kept)
    (saw,) = _rewrites(model, "Is it free?")
    assert "When is lunch served?" in saw
    assert "badge" not in saw  # the VPN conversation's new start is not this one's history


async def test_a_reply_to_a_message_ragbot_does_not_know_starts_a_new_conversation(
    world: tuple[TelegramWorld, FakeOpenAI],
) -> None:
    running, model = world
    fake, group = running.fake, -100605
    conversations = running.services.conversations
    # A question answered before reply chains, in the group's one conversation (thread ""): in the chat, not sent now.
    legacy = await conversations.resolve("telegram", "", str(group), "")
    old_message = fake.group_message("Where is the office?", chat_id=group, user=BOB, mention=False)["message"]
    old = int(old_message["message_id"])
    await conversations.add_message(legacy.id, "old", "user", old_message["text"], event_key=f"telegram::{group}:{old}")
    helped = _ask(fake, group, "/help", ALICE, mention=False)
    help_reply = await _sent_reply(fake, group, helped)
    # A reply to the bot's /help (no answer of a conversation), and one to the question from before the upgrade.
    to_help = _ask(fake, group, "When is lunch served today?", ALICE, mention=False, reply_to=help_reply.message_id)
    to_legacy = _ask(fake, group, "How do I install the VPN client today?", ALICE, reply_to=old)
    await _answer(fake, group, to_help)
    await _answer(fake, group, to_legacy)
    for asked in (to_help, to_legacy):
        chain = await conversations.find("telegram", "", str(group), f"reply:{asked}")
        assert chain is not None
        assert len([m for m in await conversations.recent(chain.id, 10) if m.role == "user"]) == 1
    assert [m.text for m in await conversations.recent(legacy.id, 10)] == ["Where is the office?"]
    assert _rewrites(model, "When is lunch served today?") == []  # no history: nothing to read "it" against


async def test_a_reply_to_an_answer_from_before_reply_chains_is_read_against_that_answers_round(
    world: tuple[TelegramWorld, FakeOpenAI],
) -> None:
    running, model = world
    fake, group = running.fake, -100609
    conversations = running.services.conversations
    # The group's one conversation from before this version: a question and its answer, shown in the chat.
    async with Bot(fake.token, base_url=fake.base_url) as bot:
        shown = await bot.send_message(group, "The VPN client is installed from the Software Center.")
    legacy = await conversations.resolve("telegram", "", str(group), "")
    await conversations.add_message(legacy.id, "old", "user", "How do I install the VPN client?")
    await conversations.add_message(
        legacy.id, "old", "assistant", shown.text, platform_message_id=str(shown.message_id)
    )
    asked = _ask(fake, group, "Do I need my badge for it?", ALICE, mention=False, reply_to=shown.message_id)
    await _answer(fake, group, asked)
    (saw,) = _rewrites(model, "Do I need my badge for it?")
    assert "How do I install the VPN client?" in saw
    assert "Software Center" in saw
    chain = await conversations.find("telegram", "", str(group), f"reply:{asked}")
    assert chain is not None
    assert [m.text for m in await conversations.recent(chain.id, 10) if m.role == "user"] == [
        "How do I install the VPN client?",
        "Do I need my badge for it?",
    ]


async def test_after_mode_all_unaddressed_questions_start_chains_and_a_reply_to_one_continues_it(
    world: tuple[TelegramWorld, FakeOpenAI],
) -> None:
    running, model = world
    fake, group = running.fake, -100608
    mode = _ask(fake, group, "/mode all", ADMIN, mention=False)
    assert await _said(fake, group, mode) == _plain(messages.mode_set("all", "en"))
    lunch = _ask(fake, group, "When is lunch served?", ALICE, mention=False)
    vpn = _ask(fake, group, "How do I install the VPN client?", ADMIN, mention=False)
    await _answer(fake, group, lunch)
    await _answer(fake, group, vpn)
    # Bob, unaddressed, replies to Alice's question: he continues her conversation, not the admin's.
    follow = _ask(fake, group, "Is it served every day?", BOB, mention=False, reply_to=lunch)
    await _answer(fake, group, follow)
    (saw,) = _rewrites(model, "Is it served every day?")
    assert "When is lunch served?" in saw
    assert "VPN" not in saw


async def test_a_pressed_button_under_a_reply_chain_answer_is_recorded_on_it(
    world: tuple[TelegramWorld, FakeOpenAI],
) -> None:
    running, _ = world
    fake, group = running.fake, -100607
    asked = _ask(fake, group, "When is lunch served?", ALICE)
    answer = await _answer(fake, group, asked)
    assert answer.reply_markup is not None
    data = answer.reply_markup["inline_keyboard"][0][0]["callback_data"]
    fake.queue_update(fake.callback_query(data, message_id=answer.message_id, chat_id=group, user=ALICE))
    thanks = messages.feedback_thanks("up", "en")
    await fake.wait_for(lambda: thanks in str(answer.reply_markup), timeout=30)
    assert (await running.services.conversations.message(data.split(":")[2])).feedback == "up"


async def test_a_private_chat_stays_one_conversation(world: tuple[TelegramWorld, FakeOpenAI]) -> None:
    running, model = world
    fake = running.fake
    fake.queue_update(fake.private_message("How do I install the VPN client?", user=ALICE))
    await fake.wait_for(lambda: len(fake.visible(ALICE["id"])) == 1, timeout=60)
    fake.queue_update(fake.private_message("Does it work from home?", user=ALICE))  # no reply: still a follow-up
    await fake.wait_for(lambda: len(fake.visible(ALICE["id"])) == 2, timeout=60)
    (saw,) = _rewrites(model, "Does it work from home?")
    assert "VPN" in saw
