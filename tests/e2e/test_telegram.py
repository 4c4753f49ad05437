"""ragbot in Telegram end to end: the real python-telegram-bot, polling (and a webhook) against the fake Bot API,
answering over real services (Weaviate, the embedder, SQLite) with extractive answers."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import pytest_asyncio
from aiohttp import web

from adapters.telegram import words as telegram_words
from adapters.telegram.app import WEBHOOK_PATH, TelegramAdapter
from adapters.telegram.app import create as create_telegram
from adapters.telegram.render import to_telegram_html
from bot.app.manager import build_manager, chat_policy
from bot.app.services import Services, build_services
from bot.app.settings import Settings
from bot.chat.feedback import REASONS
from bot.chat.manager import ConversationManager
from bot.chat.recovery import TurnRecovery
from bot.commands.builtin import default_registry
from bot.commands.registry import Asker
from bot.words import messages
from fakes.telegram import DEFAULT_USER, FakeTelegramBotAPI, parse_html
from harness.processes import free_port
from rag.ingest.documents import SourceFile
from storage.db import Database, DatabaseConfig
from tests.conftest import EmbeddedSettings
from tests.support.held_store import HeldStore

ADMIN: dict[str, Any] = {"id": 7001, "is_bot": False, "first_name": "Ada", "username": "ada"}
BOB: dict[str, Any] = {"id": 7002, "is_bot": False, "first_name": "Bob", "username": "bob"}
USAGE = default_registry().usage
HANDBOOK = (
    b"# VPN\n\nThe VPN client is installed from the Software Center. It connects with your badge number.\n\n"
    b"# Lunch\n\nLunch is served from noon in the atrium on the second floor.\n"
)


@dataclass
class Bot:
    services: Services
    fake: FakeTelegramBotAPI
    manager: ConversationManager
    settings: Settings


# The bot is private unless told otherwise: the people (besides the admin) and groups these tests speak as.
ALLOWED_USERS = (DEFAULT_USER["id"], BOB["id"], 7003, 7004, 7010, 7100, 7200, 7406, 7413, 7414, 7500, 7608, 7621, 7700)
ALLOWED_USERS = (*ALLOWED_USERS, 7800, 7801, 7900, 7950, 7951)
ALLOWED_CHATS = (-100444, -100555, -100777, -100778, -100779, -100780, -100888, -100999)


def _settings(data: Path, fake: FakeTelegramBotAPI, embedded_settings: EmbeddedSettings, **extra: Any) -> Settings:
    return embedded_settings(
        data,
        DEFAULT_KNOWLEDGE_BASES="handbook",
        TELEGRAM_BOT_TOKEN=fake.token,
        TELEGRAM_ADMINS=str(ADMIN["id"]),
        TELEGRAM_ALLOWED_USERS=",".join(map(str, ALLOWED_USERS)),
        TELEGRAM_ALLOWED_CHATS=",".join(map(str, ALLOWED_CHATS)),
        TELEGRAM_API_BASE_URL=fake.base_url,
        TELEGRAM_FILE_BASE_URL=fake.base_file_url,
        TELEGRAM_DOWNLOAD_LIMIT_MB=1,
        **extra,
    )


@pytest_asyncio.fixture(scope="module")
async def telegram(tmp_path_factory: pytest.TempPathFactory, embedded_settings: EmbeddedSettings) -> AsyncIterator[Bot]:
    async with FakeTelegramBotAPI(limits_on=True) as fake:
        settings = _settings(tmp_path_factory.mktemp("telegram"), fake, embedded_settings)
        async with build_services(settings) as services:
            kb = await services.knowledge.create("handbook", {})
            await services.ingestor.ingest(kb, SourceFile(HANDBOOK, "upload:handbook.md", "handbook.md"))
            manager = build_manager(services, chat_policy(settings))
            adapter = create_telegram(manager, settings, services.db)
            assert isinstance(adapter, TelegramAdapter)
            await services.jobs.start()
            await adapter.start()
            try:
                yield Bot(services, fake, manager, settings)
            finally:
                await adapter.stop()
                await services.jobs.stop()


async def _stored_answer(services: Services, chat: str, thread: str = "", *, status: str = "done") -> Any:
    """The conversation's last answer once its turn is stored (it is stored right after the chat shows it)."""
    conversation = await services.conversations.resolve("telegram", "", chat, thread)

    async def stored() -> Any:
        while True:
            messages_ = await services.conversations.recent(conversation.id, 10)
            if messages_ and messages_[-1].role == "assistant" and messages_[-1].status == status:
                return messages_[-1]
            await asyncio.sleep(0.05)

    return await asyncio.wait_for(stored(), 10)


def _plain(markdown: str) -> str:
    return parse_html(to_telegram_html(markdown))[0]


async def _answered(fake: FakeTelegramBotAPI, chat_id: int, count: int, thread_id: int | None = None) -> list[str]:
    """Wait until the chat shows `count` bot messages whose text has stopped at a final (sources or refusal)."""

    def done() -> bool:
        shown = fake.bot_messages(chat_id, thread_id)
        return len(shown) >= count and all(
            message.reply_markup or "Sources" in message.text or "Only" in message.text for message in shown[:count]
        )

    try:
        await fake.wait_for(done, timeout=60)
    except TimeoutError as exc:
        exc.add_note(f"chat {chat_id} shows: {fake.visible(chat_id, thread_id)}")
        raise
    return fake.visible(chat_id, thread_id)


async def test_a_private_question_is_answered_with_its_sources_and_feedback_buttons(telegram: Bot) -> None:
    fake = telegram.fake
    fake.queue_update(fake.private_message("How do I install the VPN client?"))
    (shown,) = await _answered(fake, DEFAULT_USER["id"], 1)
    assert "Software Center" in shown
    assert shown.endswith("Sources\n• [1] handbook.md")
    answer = await _stored_answer(telegram.services, str(DEFAULT_USER["id"]))
    assert answer.platform_message_id == str(fake.bot_messages(DEFAULT_USER["id"])[0].message_id)
    # The answer as a person sees it is exactly the stored answer with its sources, rendered.
    assert shown == _plain(f"{answer.text}\n\n**Sources**\n- [1] handbook.md")
    keyboard = fake.bot_messages(DEFAULT_USER["id"])[0].reply_markup
    assert keyboard is not None
    await _press(fake, f"fb:up:{answer.id}", int(answer.platform_message_id), DEFAULT_USER["id"])
    assert (await telegram.services.conversations.message(answer.id)).feedback == "up"


def _buttons(fake: FakeTelegramBotAPI, chat_id: int, message_id: int) -> list[str]:
    """The labels of the buttons under one of the bot's messages."""
    (message,) = [m for m in fake.bot_messages(chat_id) if m.message_id == message_id]
    markup = message.reply_markup or {"inline_keyboard": []}
    return [button["text"] for row in markup["inline_keyboard"] for button in row]


async def _press(fake: FakeTelegramBotAPI, data: str, message_id: int, chat_id: int, user: Any = None) -> None:
    """Press an inline button under a bot message and wait until Telegram got the bot's answer to the press."""
    update = fake.queue_update(fake.callback_query(data, message_id=message_id, chat_id=chat_id, user=user))
    query_id = update["callback_query"]["id"]
    await fake.wait_for(lambda: query_id in fake.callback_answers, timeout=10)


@pytest.mark.parametrize(
    ("question", "verdict", "lang"),
    [("When is lunch served?", "up", "en"), ("午餐在哪里供应？", "down", "zh")],
)
async def test_a_pressed_feedback_button_leaves_the_choice_showing_in_the_chats_language(
    telegram: Bot, question: str, verdict: str, lang: str
) -> None:
    fake = telegram.fake
    asker = {"id": 7600 + len(question), "is_bot": False, "first_name": "Pia"}
    fake.queue_update(fake.private_message(question, user=asker))
    await _answered(fake, asker["id"], 1)
    answer = await _stored_answer(telegram.services, str(asker["id"]))
    shown = int(answer.platform_message_id)
    assert _buttons(fake, asker["id"], shown) == ["👍", "👎"]
    # A 👎 also offers its reasons, one tap each (tests/e2e/test_telegram_feedback_reasons.py).
    reasons = [messages.feedback_reason(reason, lang) for reason in REASONS] if verdict == "down" else []
    chosen = [messages.feedback_thanks(verdict, lang), *reasons]
    await _press(fake, f"fb:{verdict}:{answer.id}", shown, asker["id"], asker)
    await fake.wait_for(lambda: _buttons(fake, asker["id"], shown) == chosen, timeout=10)
    await _press(fake, f"fb:{verdict}:{answer.id}", shown, asker["id"], asker)  # pressed again: no harm
    assert _buttons(fake, asker["id"], shown) == chosen
    assert (await telegram.services.conversations.message(answer.id)).feedback == verdict


async def test_a_refusal_carries_no_feedback_buttons(telegram: Bot) -> None:
    fake = telegram.fake
    asker = {"id": 7700, "is_bot": False, "first_name": "Raj"}
    fake.queue_update(fake.private_message("???", user=asker))
    await fake.wait_for(lambda: len(fake.visible(asker["id"])) == 1, timeout=30)
    assert fake.visible(asker["id"]) == [_plain(messages.refusal("no_words", "en"))]
    await _stored_answer(telegram.services, str(asker["id"]))  # stored as the turn's answer, but not rated
    assert [message.reply_markup for message in fake.bot_messages(asker["id"])] == [None]


async def test_in_a_group_a_mention_is_answered_and_plain_chatter_is_not(telegram: Bot) -> None:
    fake = telegram.fake
    group = -100777
    fake.queue_update(fake.group_message("lunch is great today", chat_id=group, mention=False))
    fake.queue_update(fake.group_message("When is lunch served?", chat_id=group))
    (shown,) = await _answered(fake, group, 1)
    assert "noon" in shown
    assert len(fake.bot_messages(group)) == 1


async def test_after_mode_all_a_group_gets_every_question_answered_but_not_bots_joins_or_edits(telegram: Bot) -> None:
    fake = telegram.fake
    group = -100778
    fake.queue_update(fake.group_message("/mode all", chat_id=group, user=ADMIN, mention=False))
    await fake.wait_for(lambda: len(fake.visible(group)) == 1, timeout=30)
    assert fake.visible(group) == [_plain(messages.mode_set("all", "en"))]
    other_bot = {"id": 7300, "is_bot": True, "first_name": "Helper", "username": "helper_bot"}
    fake.queue_update(fake.group_message("When is lunch served?", chat_id=group, user=other_bot, mention=False))
    joined = fake.group_message("", chat_id=group, user=BOB, mention=False)
    del joined["message"]["text"]
    joined["message"]["new_chat_members"] = [BOB]
    fake.queue_update(joined)
    asked = fake.queue_update(
        fake.group_message("How do I install the VPN client?", chat_id=group, user=BOB, mention=False)
    )
    fake.queue_update(fake.edited_message(asked, "How do I install the VPN client on Linux?"))

    def answered(count: int) -> bool:
        shown = fake.bot_messages(group)
        return len(shown) >= count and all(message.reply_markup for message in shown[1:count])

    await fake.wait_for(lambda: answered(2), timeout=60)
    assert "Software Center" in fake.visible(group)[1]
    fake.queue_update(fake.group_message("When is lunch served?", chat_id=group, user=BOB))
    await fake.wait_for(lambda: answered(3), timeout=60)
    assert "noon" in fake.visible(group)[2]
    assert len(fake.bot_messages(group)) == 3  # the mode, the two questions: nothing for the bot, the join, the edit


@pytest.mark.parametrize(
    ("text", "app_language", "lang"),
    [("/start", "zh-hans", "zh"), ("/start ref42", "en", "en"), ("/start", "", "en")],
)
async def test_start_greets_in_the_persons_language_naming_the_knowledge_base_then_lists_the_commands(
    telegram: Bot, text: str, app_language: str, lang: str
) -> None:
    fake = telegram.fake
    newcomer = {"id": 7400 + len(text) + len(app_language), "is_bot": False, "first_name": "Nina"}
    if app_language:
        newcomer["language_code"] = app_language
    fake.queue_update(fake.private_message(text, user=newcomer))
    await fake.wait_for(lambda: len(fake.visible(newcomer["id"])) == 1, timeout=30)
    (shown,) = fake.visible(newcomer["id"])
    first_line, _, commands = shown.partition("\n")
    assert first_line == _plain(messages.greeting(["handbook"], lang))
    assert "handbook" in first_line
    assert _plain(messages.help_text([("/new", messages.command_help("new", lang))], lang)).splitlines()[-1] in commands
    assert "/start" not in commands


async def test_help_and_usage_show_a_person_only_the_forms_they_may_run(telegram: Bot) -> None:
    fake = telegram.fake
    person = {"id": 7500, "is_bot": False, "first_name": "Omar"}
    for count, text in enumerate(("/help", "/kb"), start=1):
        fake.queue_update(fake.private_message(text, user=person))
        await fake.wait_for(lambda count=count: len(fake.visible(person["id"])) == count, timeout=30)
    help_, usage = fake.visible(person["id"])
    assert "/kb list" in help_
    assert "/kb use" not in help_
    assert "/ingest" not in help_
    assert usage == _plain(messages.usage(USAGE("kb", "en", Asker(is_admin=False)), "en"))
    assert "/kb use" not in usage
    admins_group = -100779  # the admin's own chat is another test's
    fake.queue_update(fake.group_message("/help", chat_id=admins_group, user=ADMIN, mention=False))
    await fake.wait_for(lambda: len(fake.visible(admins_group)) == 1, timeout=30)
    assert "/kb use" in fake.visible(admins_group)[0]


async def test_forum_topics_are_separate_conversations_and_a_follow_up_resolves_it(telegram: Bot) -> None:
    fake = telegram.fake
    forum = -100888
    fake.queue_update(fake.topic_message("How do I install the VPN client?", chat_id=forum, thread_id=5))
    await _answered(fake, forum, 1, thread_id=5)
    fake.queue_update(fake.topic_message("When is lunch served?", chat_id=forum, thread_id=9))
    await _answered(fake, forum, 1, thread_id=9)
    first = fake.bot_messages(forum, 5)[0]
    fake.queue_update(fake.reply_to_bot(first.message_id, "How does it connect?", chat_id=forum))
    shown = await _answered(fake, forum, 2, thread_id=5)
    assert "badge number" in shown[1]
    services = telegram.services
    topic5 = await services.conversations.resolve("telegram", "", str(forum), "5")
    topic9 = await services.conversations.resolve("telegram", "", str(forum), "9")
    assert topic5.id != topic9.id
    follow_up = await _stored_answer(services, str(forum), "5")
    assert "vpn" in follow_up.meta["rewritten"].lower()
    assert next(m.text for m in await services.conversations.recent(topic9.id, 10)) == "When is lunch served?"


async def test_an_admins_document_is_ingested_with_progress_then_answerable(telegram: Bot) -> None:
    fake = telegram.fake
    file_id = fake.add_file(b"# Parking\n\nVisitors park in the Marigold garage.", "parking.md", "text/markdown")
    fake.queue_update(fake.document_message(file_id, user=ADMIN))
    await fake.wait_for(lambda: any("parking.md: indexed" in t for t in fake.visible(ADMIN["id"])), timeout=60)
    (status,) = fake.bot_messages(ADMIN["id"])
    assert status.history[0] == _plain(messages.ingest_queued(1, "handbook", "en"))
    assert "parking.md" in status.text
    fake.queue_update(fake.private_message("Where do visitors park?", user=ADMIN))
    await fake.wait_for(lambda: any(m.reply_markup for m in fake.bot_messages(ADMIN["id"])), timeout=60)
    assert "Marigold" in fake.visible(ADMIN["id"])[1]


async def test_an_admins_faq_sheet_is_imported_as_faqs_not_indexed_as_a_document(telegram: Bot) -> None:
    fake = telegram.fake
    sheet = "问题,答案\n班车几点发车？,早上八点。\n食堂在哪里？,二楼。\n".encode()
    file_id = fake.add_file(sheet, "常见问题.csv", "text/csv")
    fake.queue_update(fake.document_message(file_id, user=ADMIN))
    await fake.wait_for(lambda: any("常见问题.csv: FAQ sheet" in t for t in fake.visible(ADMIN["id"])), timeout=60)
    assert "常见问题.csv: FAQ sheet imported: 2 added, 0 updated, 0 unchanged." in fake.visible(ADMIN["id"])
    titles = [document.title for document in await telegram.services.knowledge.documents("handbook")]
    assert "常见问题.csv" not in titles
    kb = await telegram.services.knowledge.find("handbook")
    assert {faq.question for faq in await telegram.services.faqs.in_kb(kb.id)} >= {"班车几点发车？", "食堂在哪里？"}


async def test_a_non_admin_cannot_ingest_and_a_file_over_the_limit_is_explained(telegram: Bot) -> None:
    fake = telegram.fake
    small = fake.add_file(b"# Secret\n\nnothing", "secret.md", "text/markdown")
    fake.queue_update(fake.document_message(small, caption="/ingest", user=BOB))
    await fake.wait_for(lambda: len(fake.visible(BOB["id"])) == 1, timeout=30)
    assert fake.visible(BOB["id"]) == [_plain(messages.admins_only("ingest", "en"))]
    huge = fake.add_file(b"x", "huge.pdf", "application/pdf", size=5_000_000)
    fake.queue_update(fake.document_message(huge, user=ADMIN))
    await fake.wait_for(lambda: any("huge.pdf" in t for t in fake.visible(ADMIN["id"])), timeout=30)
    [refusal] = [text for text in fake.visible(ADMIN["id"]) if "huge.pdf" in text]
    assert "1 MB" in refusal
    assert "admin of the server" in refusal
    assert "TELEGRAM_" not in refusal


async def test_a_non_admin_who_sends_a_document_is_told_in_their_terms_and_the_file_is_left_alone(
    telegram: Bot,
) -> None:
    fake = telegram.fake
    erin: dict[str, Any] = {"id": 7010, "is_bot": False, "first_name": "Erin"}
    plain = fake.add_file(b"# Menu\n\nSoup on Mondays.", "menu.md", "text/markdown")
    captioned = fake.add_file(b"# Menu\n\nSoup on Mondays.", "menu-zh.md", "text/markdown")
    jobs_before = len(await telegram.services.job_repo.recent(limit=None))
    fake.queue_update(fake.document_message(plain, user=erin))
    fake.queue_update(fake.document_message(captioned, caption="这是新的菜单", user=erin))
    await fake.wait_for(lambda: len(fake.visible(erin["id"])) == 2, timeout=30)
    # Updates are handled concurrently, so the two replies may arrive in either order.
    assert sorted(fake.visible(erin["id"])) == sorted(
        [_plain(messages.files_admins_only("en")), _plain(messages.files_admins_only("zh"))]
    )
    assert not [text for text in fake.visible(erin["id"]) if "/ingest" in text]
    assert not [call for call in fake.calls("getFile") if call.params.get("file_id") in (plain, captioned)]
    assert len(await telegram.services.job_repo.recent(limit=None)) == jobs_before


async def test_the_same_update_delivered_twice_is_answered_once(telegram: Bot) -> None:
    fake = telegram.fake
    carol = {"id": 7003, "is_bot": False, "first_name": "Carol"}
    update = fake.private_message("When is lunch served?", user=carol)
    fake.queue_update(update)
    fake.queue_update(update)
    await _answered(fake, carol["id"], 1)
    fake.queue_update(fake.private_message("How do I install the VPN client?", user=carol))
    shown = await _answered(fake, carol["id"], 2)
    assert "noon" in shown[0]
    assert "Software Center" in shown[1]


async def test_a_polled_update_is_confirmed_to_telegram_only_once_its_question_is_stored(
    telegram: Bot, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = telegram.fake
    async with HeldStore(telegram.services, monkeypatch) as held:
        fake.queue_update(fake.private_message("When is lunch served?", user={**BOB, "id": 7950}))
        await asyncio.wait_for(held.storing.wait(), 10)
        with pytest.raises(TimeoutError):  # the next getUpdates would confirm it: it waits for the store
            await fake.wait_for(lambda: fake.pending_updates == 0, timeout=1.0)
        held.release.set()
        await fake.wait_for(lambda: fake.pending_updates == 0, timeout=10)
        assert held.stored.is_set()
    assert "noon" in (await _answered(fake, 7950, 1))[0]


async def test_a_429_storm_delays_the_answer_but_never_loses_it(telegram: Bot) -> None:
    fake = telegram.fake
    group = -100999
    fake.fail_next(429, retry_after=1, times=4, method="sendMessage")
    fake.fail_next(429, retry_after=1, times=4, method="editMessageText")
    fake.queue_update(fake.group_message("How do I install the VPN client?", chat_id=group))
    (shown,) = await _answered(fake, group, 1)
    assert "Software Center" in shown
    assert shown.endswith("[1] handbook.md")
    assert fake.rate_limited >= 4


async def test_a_telegram_server_error_is_counted_and_the_answer_still_arrives(telegram: Bot) -> None:
    fake, metrics = telegram.fake, telegram.manager.metrics
    group = -100444
    before = metrics.sample("ragbot_platform_errors_total", platform="telegram") or 0
    fake.fail_next(500, times=2, method="sendMessage")
    fake.queue_update(fake.group_message("How do I install the VPN client?", chat_id=group))
    (shown,) = await _answered(fake, group, 1)
    assert "Software Center" in shown
    assert metrics.sample("ragbot_platform_errors_total", platform="telegram") == before + 2


@dataclass
class WebhookBot:
    fake: FakeTelegramBotAPI
    url: str
    adapter: TelegramAdapter


@pytest_asyncio.fixture
async def webhook(telegram: Bot, tmp_path: Path) -> AsyncIterator[WebhookBot]:
    """A second bot in webhook mode, mounted on ragbot's aiohttp server, with its own fake Bot API."""
    async with FakeTelegramBotAPI(limits_on=False) as fake:
        port = free_port()
        settings = telegram.settings.model_copy(
            update={
                "TELEGRAM_MODE": "webhook",
                "TELEGRAM_WEBHOOK_URL": f"http://127.0.0.1:{port}{WEBHOOK_PATH}",
                "TELEGRAM_WEBHOOK_SECRET": __import__("pydantic").SecretStr("s3cret_token"),
                "TELEGRAM_API_BASE_URL": fake.base_url,
                "TELEGRAM_FILE_BASE_URL": fake.base_file_url,
            }
        )
        # Its own manager, as a second bot's ragbot has: the module's manager keeps resuming answers through its own
        # adapter, not through this one once it is stopped.
        manager = build_manager(telegram.services, chat_policy(settings))
        adapter = create_telegram(manager, settings, telegram.services.db)
        assert isinstance(adapter, TelegramAdapter)
        app = web.Application()
        adapter.mount(app)
        runner = web.AppRunner(app)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", port).start()
        await adapter.start()
        try:
            yield WebhookBot(fake, f"http://127.0.0.1:{port}{WEBHOOK_PATH}", adapter)
        finally:
            await adapter.stop()
            await runner.cleanup()


async def test_a_webhook_delivery_needs_the_secret_and_a_retried_delivery_is_answered_once(
    webhook: WebhookBot,
) -> None:
    fake, url = webhook.fake, webhook.url
    update = fake.private_message("When is lunch served?", user={**BOB, "id": 7100})
    assert await fake.post_webhook(url, update, secret="wrong") == 403
    assert await fake.post_webhook(url, update) == 403
    assert await fake.post_webhook(url, update, secret="s3cret_token") == 200
    assert await fake.post_webhook(url, update, secret="s3cret_token") == 200
    await _answered(fake, 7100, 1)
    async with (
        aiohttp.ClientSession() as client,
        client.post(url, data=b"{not json", headers={"X-Telegram-Bot-Api-Secret-Token": "s3cret_token"}) as r,
    ):
        assert r.status == 400
    assert len(fake.bot_messages(7100)) == 1


async def test_a_webhook_delivery_is_answered_200_only_once_its_question_is_stored(
    webhook: WebhookBot, telegram: Bot, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake, url = webhook.fake, webhook.url
    async with HeldStore(telegram.services, monkeypatch) as held:
        update = fake.private_message("When is lunch served?", user={**BOB, "id": 7951})
        posting = asyncio.create_task(fake.post_webhook(url, update, secret="s3cret_token"))
        await asyncio.wait_for(held.storing.wait(), 10)
        done, _ = await asyncio.wait({posting}, timeout=1.0)
        assert not done, "Telegram heard the update arrived before its question was stored"
        held.release.set()
        assert await asyncio.wait_for(posting, 10) == 200
        assert held.stored.is_set()
    assert "noon" in (await _answered(fake, 7951, 1))[0]


async def test_a_webhook_delivery_once_the_adapter_is_stopping_gets_a_503_so_telegram_sends_it_again(
    webhook: WebhookBot,
) -> None:
    await webhook.adapter.stop()
    update = webhook.fake.private_message("When is lunch served?", user={**BOB, "id": 7100})
    assert await webhook.fake.post_webhook(webhook.url, update, secret="s3cret_token") == 503


@pytest.mark.parametrize(("language_code", "lang"), [("", "en"), ("zh", "zh")])
async def test_menus_show_admin_commands_only_to_admins_in_each_language(
    telegram: Bot, language_code: str, lang: str
) -> None:
    fake = telegram.fake
    everyone = {entry["command"]: entry["description"] for entry in fake.commands(None, language_code)}
    admin_chat = {"type": "chat", "chat_id": ADMIN["id"]}
    admins = {entry["command"]: entry["description"] for entry in fake.commands(admin_chat, language_code)}
    assert {"help", "new", "stop", "sources"} <= set(everyone)
    assert "ingest" not in everyone
    assert {"ingest", "faq", "jobs"} <= set(admins)
    for name, description in {**everyone, **admins}.items():
        assert description == messages.command_help(name, lang)


async def test_edits_stickers_and_a_group_that_removed_the_bot_are_handled_without_harm(telegram: Bot) -> None:
    fake = telegram.fake
    dave = {"id": 7004, "is_bot": False, "first_name": "Dave"}
    question = fake.private_message("When is lunch served?", user=dave)
    fake.queue_update(fake.edited_message(question, "When is breakfast served?"))  # an edit is no new question
    fake.queue_update(fake.sticker_message(user=dave))
    await fake.wait_for(lambda: len(fake.visible(dave["id"])) == 1, timeout=30)
    assert fake.visible(dave["id"]) == [_plain(telegram_words.text_only("en"))]

    kicked = -100555
    fake.block_chat(kicked)
    asked = fake.queue_update(fake.group_message("When is lunch served?", chat_id=kicked))
    fake.queue_update(fake.private_message("How do I install the VPN client?", user=dave))
    await fake.wait_for(lambda: any(m.reply_markup for m in fake.bot_messages(dave["id"])), timeout=60)
    assert "Software Center" in fake.visible(dave["id"])[1]  # others are still answered
    # A group's question is a conversation of its own, named by the message that asked it (its reply chain).
    chain = f"reply:{asked['message']['message_id']}"
    stored = await _stored_answer(telegram.services, str(kicked), chain, status="undelivered")
    assert stored.meta["outcome"] == "extractive"  # the turn was stored whole, as one nobody could see
    assert fake.visible(kicked) == []


async def test_a_chat_that_speaks_chinese_gets_the_adapters_notices_in_chinese(telegram: Bot) -> None:
    fake = telegram.fake
    lin = {"id": 7800, "is_bot": False, "first_name": "Lin", "language_code": "zh-hans"}
    fake.queue_update(fake.sticker_message(user=lin))  # no words: the person's app is set to Chinese
    await fake.wait_for(lambda: len(fake.visible(lin["id"])) == 1, timeout=30)
    mei = {"id": 7801, "is_bot": False, "first_name": "Mei", "language_code": "en"}
    fake.queue_update(fake.private_message("/lang zh", user=mei))  # the chat's choice wins over the app
    await fake.wait_for(lambda: len(fake.visible(mei["id"])) == 1, timeout=30)
    fake.queue_update(fake.sticker_message(user=mei))
    await fake.wait_for(lambda: len(fake.visible(mei["id"])) == 2, timeout=30)
    assert fake.visible(lin["id"]) == [_plain(telegram_words.text_only("zh"))]
    assert fake.visible(mei["id"])[1] == _plain(telegram_words.text_only("zh"))


async def test_a_second_poller_on_the_same_token_is_reported_in_one_line_not_a_crash_loop(
    telegram: Bot, caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    # Another ragbot on another database with the same token (on the same database, the poller's lease keeps the
    # second from polling at all: tests/e2e/test_telegram_poller.py).
    elsewhere = Database(DatabaseConfig(url=f"sqlite:///{tmp_path / 'elsewhere.sqlite3'}"))
    await elsewhere.open()
    # Its own manager too, as another ragbot has: this one's keeps its own adapter for the answers it resumes.
    other_manager = build_manager(telegram.services, chat_policy(telegram.settings))
    second = create_telegram(other_manager, telegram.settings, elsewhere)
    assert second is not None
    with caplog.at_level("ERROR", logger="adapters.telegram.app"):
        await second.start()
        try:
            # Telegram ends the older of two long polls with 409 Conflict; each poller retries and meets it again.
            await telegram.fake.wait_for(
                lambda: sum("telegram=conflict" in r.getMessage() for r in caplog.records) >= 1, timeout=30
            )
            before = len(telegram.fake.calls("getUpdates"))
            await telegram.fake.wait_for(lambda: len(telegram.fake.calls("getUpdates")) >= before + 6, timeout=30)
        finally:
            await second.stop()
            await elsewhere.close()
    conflicts = [r for r in caplog.records if "telegram=conflict" in r.getMessage()]
    assert len(conflicts) <= 2  # one line per poller that met it, not one per retry
    fake = telegram.fake
    fake.queue_update(
        fake.private_message("When is lunch served?", user={"id": 7200, "is_bot": False, "first_name": "E"})
    )
    shown = await _answered(fake, 7200, 1)
    assert "noon" in shown[0]  # the first poller still answers


async def test_an_answer_whose_process_died_is_written_again_in_a_new_message_that_says_so(telegram: Bot) -> None:
    fake, conversations = telegram.fake, telegram.services.conversations
    user = 7900  # a chat of its own (7414 is the /start test's "/start ref42" newcomer, greeted there)
    conversation = await conversations.resolve("telegram", "", str(user), "")
    # Another process stored the question and died while it answered (kill -9): its answer is still `streaming`.
    await conversations.open_turn(
        conversation.id, "dead-request", "When is lunch served?", author=str(user), instance="gone:1:dead00"
    )
    alive = {telegram.manager._parts.instance}
    assert await TurnRecovery(conversations, telegram.manager, lambda: alive).sweep() == 1
    answer = await _stored_answer(telegram.services, str(user))
    assert answer.request_id == "dead-request"
    shown = fake.visible(user)[-1]  # (an earlier test greeted this user)
    assert "noon" in shown
    assert messages.resumed("en") in shown
    assert answer.platform_message_id == str(fake.bot_messages(user)[-1].message_id)
