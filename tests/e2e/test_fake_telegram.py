"""FakeTelegramBotAPI's own contract, driven by the real python-telegram-bot: methods, errors, limits, updates."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dtm
from collections.abc import AsyncIterator, Callable
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from telegram import (
    Bot,
    BotCommand,
    BotCommandScopeAllGroupChats,
    ChatMemberAdministrator,
    InlineKeyboardButton,
    InlineKeyboardMarkup,
    Update,
)
from telegram.error import (
    BadRequest,
    Conflict,
    EndPointNotFound,
    Forbidden,
    InvalidToken,
    NetworkError,
    RetryAfter,
)
from telegram.ext import Application, ApplicationBuilder, CommandHandler, ContextTypes, MessageHandler, filters
from telegram.warnings import PTBDeprecationWarning

from fakes.telegram import DEFAULT_GROUP, FakeTelegramBotAPI, parse_html
from fakes.telegram.wire import TERMINATED_BY_POLL, WEBHOOK_ACTIVE

ALICE = 1001
KEYBOARD = InlineKeyboardMarkup([[InlineKeyboardButton("Sources", callback_data="sources")]])


@pytest.fixture(autouse=True)
def ptb_timedelta(monkeypatch: pytest.MonkeyPatch) -> None:
    """PTB 22.8 reads retry_after inside RetryAfter.__init__: without PTB_TIMEDELTA=1 that read warns, and under
    filterwarnings=error the warning replaces the RetryAfter. Opting in gives timedelta values and no warning."""
    monkeypatch.setenv("PTB_TIMEDELTA", "1")


@pytest.fixture
async def fake() -> AsyncIterator[FakeTelegramBotAPI]:
    """A running fake with flood control off, for tests about everything else."""
    async with FakeTelegramBotAPI(limits_on=False) as running:
        yield running


def make_bot(fake: FakeTelegramBotAPI, token: str | None = None) -> Bot:
    """A real PTB Bot pointed at the fake (PTB appends the token to both base URLs)."""
    return Bot(token or fake.token, base_url=fake.base_url, base_file_url=fake.base_file_url)


@pytest.fixture
async def bot(fake: FakeTelegramBotAPI) -> AsyncIterator[Bot]:
    """An initialised Bot (initialize() calls getMe)."""
    async with make_bot(fake) as running:
        yield running


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    """A plain HTTP client, to see the wire format without PTB in between."""
    async with aiohttp.ClientSession() as session:
        yield session


class Clock:
    """A hand-moved clock for flood control."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


# --- Wire format and auth -------------------------------------------------------------------------------------------


async def test_get_me_answers_the_bot_user(fake: FakeTelegramBotAPI, bot: Bot) -> None:
    me = await bot.get_me()
    assert (me.username, me.is_bot, me.id) == ("ragbot_test_bot", True, 123456789)
    assert [request.method for request in fake.requests] == ["getMe", "getMe"]  # initialize() and ours


async def test_wrong_token_is_refused_with_401_and_raises_invalid_token(
    fake: FakeTelegramBotAPI, http: aiohttp.ClientSession
) -> None:
    async with http.post(f"{fake.base_url}999:wrong-token/getMe") as response:
        assert response.status == 401
        assert await response.json() == {"ok": False, "error_code": 401, "description": "Unauthorized"}
    with pytest.raises(InvalidToken):
        async with make_bot(fake, "999:wrong-token"):  # initialize() calls getMe; a failed start shuts down
            pass


async def test_unknown_method_gets_404_and_raises_endpoint_not_found(
    fake: FakeTelegramBotAPI, bot: Bot, http: aiohttp.ClientSession
) -> None:
    async with http.post(f"{fake.base_url}{fake.token}/sendTelepathy") as response:
        assert response.status == 404
        assert await response.json() == {"ok": False, "error_code": 404, "description": "Not Found: method not found"}
    with pytest.raises(EndPointNotFound):
        await bot.do_api_request("sendTelepathy", api_kwargs={"chat_id": ALICE})


@pytest.mark.parametrize(
    "send",
    [
        lambda http, url: http.post(url, json={"chat_id": ALICE, "text": "hi"}),
        lambda http, url: http.post(url, data={"chat_id": str(ALICE), "text": "hi"}),
        lambda http, url: http.get(url, params={"chat_id": str(ALICE), "text": "hi"}),
    ],
    ids=["json", "form", "query"],
)
async def test_parameters_are_read_from_json_form_or_query(
    fake: FakeTelegramBotAPI, http: aiohttp.ClientSession, send: Callable[..., Any]
) -> None:
    async with send(http, f"{fake.base_url}{fake.token}/sendMessage") as response:
        body = await response.json()
    assert body["ok"] is True
    assert body["result"]["chat"] == {"id": ALICE, "first_name": f"User {ALICE}", "type": "private"}
    assert fake.visible(ALICE) == ["hi"]


async def test_ptb_sends_form_encoded_json_valued_fields_and_each_call_is_recorded(
    fake: FakeTelegramBotAPI, bot: Bot
) -> None:
    await bot.send_message(DEFAULT_GROUP, "hi", reply_markup=KEYBOARD, message_thread_id=7)
    sent = fake.calls("sendMessage")[0]
    assert sent.content_type == "application/x-www-form-urlencoded"
    assert sent.params["chat_id"] == DEFAULT_GROUP
    assert sent.params["message_thread_id"] == 7
    assert sent.params["reply_markup"] == KEYBOARD.to_dict()
    assert sent.time > 0


# --- Messages, edits and their errors -------------------------------------------------------------------------------


async def test_message_ids_count_up_per_chat_and_echo_thread_and_keyboard(fake: FakeTelegramBotAPI, bot: Bot) -> None:
    first = await bot.send_message(ALICE, "one")
    second = await bot.send_message(ALICE, "two", reply_markup=KEYBOARD)
    in_topic = await bot.send_message(DEFAULT_GROUP, "three", message_thread_id=42)
    assert (first.message_id, second.message_id, in_topic.message_id) == (1, 2, 1)
    assert first.from_user is not None
    assert first.from_user.username == "ragbot_test_bot"
    assert second.reply_markup == KEYBOARD
    assert in_topic.message_thread_id == 42
    assert in_topic.chat.type == "supergroup"


async def test_visible_shows_each_message_at_its_final_text_without_deleted_ones(
    fake: FakeTelegramBotAPI, bot: Bot
) -> None:
    first = await bot.send_message(ALICE, "Thinking")
    await bot.edit_message_text("The answer is 42.", chat_id=ALICE, message_id=first.message_id)
    doomed = await bot.send_message(ALICE, "temporary")
    await bot.delete_message(ALICE, doomed.message_id)
    await bot.send_message(DEFAULT_GROUP, "elsewhere", message_thread_id=5)
    assert fake.visible(ALICE) == ["The answer is 42."]
    assert fake.bot_messages(ALICE)[0].history == ["Thinking", "The answer is 42."]
    assert fake.visible(DEFAULT_GROUP, thread_id=5) == ["elsewhere"]
    assert fake.visible(DEFAULT_GROUP, thread_id=6) == []


async def test_identical_edit_raises_bad_request_message_is_not_modified(bot: Bot) -> None:
    sent = await bot.send_message(ALICE, "same", reply_markup=KEYBOARD)
    with pytest.raises(BadRequest, match=r"^Message is not modified"):
        await bot.edit_message_text("same", chat_id=ALICE, message_id=sent.message_id, reply_markup=KEYBOARD)
    # Dropping the keyboard is a change, and Telegram trims surrounding whitespace before comparing.
    await bot.edit_message_text("same", chat_id=ALICE, message_id=sent.message_id)
    with pytest.raises(BadRequest, match=r"^Message is not modified"):
        await bot.edit_message_text(" same\n", chat_id=ALICE, message_id=sent.message_id)


@pytest.mark.parametrize(
    ("html", "detail"),
    [
        ("<b>bold", 'Can\'t find end tag corresponding to start tag "b"'),
        ("<b>bold</i>", 'Unmatched end tag at byte offset 7, expected "</b>", found "</i>"'),
        ("<blink>x</blink>", 'Unsupported start tag "blink" at byte offset 0'),
        ("1 < 2", 'Unsupported start tag "" at byte offset 2'),
        ("done</b>", "Unexpected end tag at byte offset 4"),
        ("<a href='x'", "Unclosed start tag at byte offset 0"),
    ],
    ids=["unclosed", "mismatched", "unknown-tag", "bare-lt", "stray-end", "unterminated"],
)
async def test_broken_html_raises_bad_request_cant_parse_entities(bot: Bot, html: str, detail: str) -> None:
    with pytest.raises(BadRequest) as raised:
        await bot.send_message(ALICE, html, parse_mode="HTML")
    # PTB drops "Bad Request: " and capitalize()s the rest, which lower-cases tdlib's detail.
    assert raised.value.message == f"Can't parse entities: {detail}".capitalize()


async def test_html_becomes_plain_text_with_entities_in_utf16_offsets(fake: FakeTelegramBotAPI, bot: Bot) -> None:
    sent = await bot.send_message(
        ALICE,
        '😀 <b>bold</b> &amp; <a href="https://example.org">link</a> <tg-spoiler>s</tg-spoiler>',
        parse_mode="HTML",
    )
    assert sent.text == "😀 bold & link s"
    assert [(entity.type, entity.offset, entity.length) for entity in sent.entities] == [
        ("bold", 3, 4),
        ("text_link", 10, 4),
        ("spoiler", 15, 1),
    ]
    assert sent.entities[1].url == "https://example.org"
    assert fake.visible(ALICE) == ["😀 bold & link s"]


def test_pre_with_a_language_code_block_is_one_pre_entity() -> None:
    assert parse_html('<pre><code class="language-python">x = 1</code></pre>') == (
        "x = 1",
        [{"type": "pre", "offset": 0, "length": 5, "language": "python"}],
    )


async def test_text_over_4096_utf16_units_is_too_long(bot: Bot) -> None:
    await bot.send_message(ALICE, "😀" * 2048)  # 4096 UTF-16 units
    with pytest.raises(BadRequest, match=r"^Message is too long"):
        await bot.send_message(ALICE, "😀" * 2049)


async def test_editing_a_deleted_message_raises_message_to_edit_not_found(bot: Bot) -> None:
    sent = await bot.send_message(ALICE, "bye")
    await bot.delete_message(ALICE, sent.message_id)
    with pytest.raises(BadRequest, match=r"^Message to edit not found"):
        await bot.edit_message_text("again", chat_id=ALICE, message_id=sent.message_id)
    with pytest.raises(BadRequest, match=r"^Message to delete not found"):
        await bot.delete_message(ALICE, sent.message_id)


async def test_reply_markup_edit_and_callback_answer(fake: FakeTelegramBotAPI, bot: Bot) -> None:
    sent = await bot.send_message(ALICE, "pick", reply_markup=KEYBOARD)
    update = Update.de_json(fake.callback_query("sources", message_id=sent.message_id, chat_id=ALICE), bot)
    assert update.callback_query is not None
    assert update.callback_query.data == "sources"
    assert await update.callback_query.answer("ok")
    with pytest.raises(BadRequest, match=r"^Query is too old"):
        await update.callback_query.answer("twice")
    await bot.edit_message_reply_markup(ALICE, sent.message_id, reply_markup=None)
    assert fake.bot_messages(ALICE)[0].reply_markup is None
    assert fake.callback_answers[update.callback_query.id]["text"] == "ok"


async def test_chat_action_is_recorded(fake: FakeTelegramBotAPI, bot: Bot) -> None:
    await bot.send_chat_action(DEFAULT_GROUP, "typing", message_thread_id=3)
    assert fake.chat_actions == [(DEFAULT_GROUP, "typing", 3)]


# --- Drafts ---------------------------------------------------------------------------------------------------------


async def test_send_message_draft_keeps_the_latest_text_per_draft_in_private_chats(
    fake: FakeTelegramBotAPI, bot: Bot
) -> None:
    assert hasattr(Bot, "send_message_draft")  # PTB 22.6+ (Bot API 9.3); no do_api_request needed
    assert await bot.send_message_draft(ALICE, 1, "The ans")
    assert await bot.send_message_draft(ALICE, 1, "The answer")
    assert await bot.send_message_draft(ALICE, 2, "")  # Bot API 10.0: empty text shows "Thinking..."
    assert fake.drafts(ALICE) == {1: "The answer", 2: ""}
    assert [draft.text for draft in fake.draft_log] == ["The ans", "The answer", ""]
    assert fake.visible(ALICE) == []  # a draft is not a message
    with pytest.raises(BadRequest, match=r"^Textdraft_peer_invalid$"):  # PTB capitalize()s TEXTDRAFT_PEER_INVALID
        await bot.send_message_draft(DEFAULT_GROUP, 1, "groups have no drafts")


# --- Flood control and scripted faults ------------------------------------------------------------------------------


async def test_second_message_within_a_second_gets_429_raised_as_retry_after() -> None:
    clock = Clock()
    async with FakeTelegramBotAPI(chat_burst=1, clock=clock) as fake, make_bot(fake) as bot:
        await bot.send_message(ALICE, "first")
        with pytest.raises(RetryAfter) as raised:
            await bot.send_message(ALICE, "second")
        assert raised.value.retry_after == dtm.timedelta(seconds=1)  # with PTB_TIMEDELTA=1 (the autouse fixture)
        assert [(t.method, t.chat_id, t.scope, t.retry_after) for t in fake.throttled] == [
            ("sendMessage", ALICE, "chat", 1)
        ]
        clock.now = 1.0
        await bot.send_message(ALICE, "after the wait")
        assert fake.visible(ALICE) == ["first", "after the wait"]


async def test_without_ptb_timedelta_retry_after_is_an_int_and_every_429_warns(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("PTB_TIMEDELTA")
    async with FakeTelegramBotAPI(chat_burst=1, clock=Clock()) as fake, make_bot(fake) as bot:
        await bot.send_message(ALICE, "first")
        with pytest.warns(PTBDeprecationWarning, match="retry_after"), pytest.raises(RetryAfter) as raised:
            await bot.send_message(ALICE, "second")
        with pytest.warns(PTBDeprecationWarning, match="retry_after"):
            assert raised.value.retry_after == 1


async def test_429_body_is_telegrams_envelope(http: aiohttp.ClientSession) -> None:
    async with FakeTelegramBotAPI(chat_burst=1, chat_interval=5.0, clock=Clock()) as fake:
        url = f"{fake.base_url}{fake.token}/sendMessage"
        async with (
            http.post(url, json={"chat_id": ALICE, "text": "a"}),
            http.post(url, json={"chat_id": ALICE, "text": "b"}) as r,
        ):
            assert r.status == 429
            assert await r.json() == {
                "ok": False,
                "error_code": 429,
                "description": "Too Many Requests: retry after 5",
                "parameters": {"retry_after": 5},
            }


async def test_edits_and_drafts_share_the_per_chat_budget_and_bursts_pass() -> None:
    async with FakeTelegramBotAPI(chat_burst=3, clock=Clock()) as fake, make_bot(fake) as bot:
        sent = await bot.send_message(ALICE, "a")
        await bot.edit_message_text("ab", chat_id=ALICE, message_id=sent.message_id)
        await bot.send_message_draft(ALICE, 1, "abc")
        with pytest.raises(RetryAfter):
            await bot.edit_message_text("abcd", chat_id=ALICE, message_id=sent.message_id)
        await bot.send_message(ALICE + 1, "another chat has its own budget")


async def test_a_group_gets_at_most_its_per_minute_budget() -> None:
    clock = Clock()
    async with FakeTelegramBotAPI(chat_burst=100, group_per_minute=3, clock=clock) as fake, make_bot(fake) as bot:
        for n in range(3):
            await bot.send_message(DEFAULT_GROUP, f"m{n}")
        with pytest.raises(RetryAfter):
            await bot.send_message(DEFAULT_GROUP, "one too many")
        await bot.send_message(ALICE, "private chats are not group-limited")
        assert fake.throttled[-1].scope == "group"
        assert fake.throttled[-1].retry_after == 60
        clock.now = 60.0
        await bot.send_message(DEFAULT_GROUP, "a minute later")


async def test_all_chats_together_get_at_most_the_global_budget() -> None:
    async with FakeTelegramBotAPI(global_per_second=2, clock=Clock()) as fake, make_bot(fake) as bot:
        await bot.send_message(1, "a")
        await bot.send_message(2, "b")
        with pytest.raises(RetryAfter):
            await bot.send_message(3, "c")
        assert fake.rate_limited == 1
        assert fake.throttled[0].scope == "global"


async def test_scripted_faults_hit_only_the_named_method_once(fake: FakeTelegramBotAPI, bot: Bot) -> None:
    sent = await bot.send_message(DEFAULT_GROUP, "draft")
    fake.fail_next(403, method="editMessageText")
    fake.fail_next(400, method="editMessageText", description="Bad Request: can't parse entities: scripted")
    fake.fail_next(429, method="editMessageText", retry_after=7)
    await bot.send_message(DEFAULT_GROUP, "sends are untouched")
    with pytest.raises(Forbidden, match="bot was kicked from the group chat"):
        await bot.edit_message_text("1", DEFAULT_GROUP, sent.message_id)
    with pytest.raises(BadRequest, match=r"^Can't parse entities: scripted"):
        await bot.edit_message_text("2", DEFAULT_GROUP, sent.message_id)
    with pytest.raises(RetryAfter) as raised:
        await bot.edit_message_text("3", DEFAULT_GROUP, sent.message_id)
    assert raised.value.retry_after == dtm.timedelta(seconds=7)
    await bot.edit_message_text("4", DEFAULT_GROUP, sent.message_id)
    assert fake.visible(DEFAULT_GROUP) == ["4", "sends are untouched"]
    assert fake.throttled[0].scope == "scripted"


async def test_a_storm_answers_every_call_until_it_ends_or_calms() -> None:
    clock = Clock()
    async with FakeTelegramBotAPI(limits_on=False, clock=clock) as fake, make_bot(fake) as bot:
        fake.storm(429, 10.0, retry_after=3)
        for _ in range(3):
            with pytest.raises(RetryAfter) as raised:
                await bot.send_message(DEFAULT_GROUP, "in the storm")
            assert raised.value.retry_after == dtm.timedelta(seconds=3)
        clock.now = 10.0
        await bot.send_message(DEFAULT_GROUP, "after it")
        fake.storm(502, 60.0, method="sendMessage")
        with pytest.raises(NetworkError, match="Bad Gateway"):
            await bot.send_message(DEFAULT_GROUP, "in the next one")
        await bot.get_me()  # another method is untouched
        fake.calm()
        await bot.send_message(DEFAULT_GROUP, "calm")
        assert fake.visible(DEFAULT_GROUP) == ["after it", "calm"]
        assert [throttle.scope for throttle in fake.throttled] == ["scripted"] * 3


async def test_a_blocked_chat_answers_forbidden(fake: FakeTelegramBotAPI, bot: Bot) -> None:
    fake.block_chat(ALICE)
    with pytest.raises(Forbidden, match="blocked by the user"):
        await bot.send_message(ALICE, "hello?")


async def test_a_bot_that_left_a_group_can_no_longer_post_there_and_cannot_leave_a_private_chat(
    fake: FakeTelegramBotAPI, bot: Bot
) -> None:
    await bot.send_message(DEFAULT_GROUP, "hello")
    assert await bot.leave_chat(DEFAULT_GROUP) is True
    assert fake.left == {DEFAULT_GROUP}
    with pytest.raises(Forbidden, match="not a member"):
        await bot.send_message(DEFAULT_GROUP, "still here?")
    with pytest.raises(BadRequest, match="private chats"):
        await bot.leave_chat(ALICE)


# --- Updates: long polling and webhooks -----------------------------------------------------------------------------


async def test_get_updates_redelivers_until_an_offset_confirms(fake: FakeTelegramBotAPI, bot: Bot) -> None:
    queued = fake.queue_update(fake.private_message("hi"))
    first = await bot.get_updates(timeout=0)
    again = await bot.get_updates(timeout=0)
    assert [update.update_id for update in first] == [update.update_id for update in again] == [queued["update_id"]]
    assert first[0].message is not None
    assert first[0].message.text == "hi"
    assert await bot.get_updates(offset=queued["update_id"] + 1, timeout=0) == ()
    assert fake.pending_updates == 0


async def test_long_poll_is_held_until_an_update_is_queued(fake: FakeTelegramBotAPI, bot: Bot) -> None:
    poll = asyncio.create_task(bot.get_updates(timeout=10))
    await fake.wait_for(lambda: fake.polling, timeout=5)
    fake.queue_update(fake.private_message("wake up"))
    updates = await asyncio.wait_for(poll, 5)
    assert [update.message.text for update in updates if update.message] == ["wake up"]


async def test_long_poll_answers_empty_when_its_timeout_passes(bot: Bot) -> None:
    assert await bot.get_updates(timeout=1) == ()


async def test_a_second_poller_ends_the_first_with_conflict(fake: FakeTelegramBotAPI) -> None:
    # One Bot cannot hold two getUpdates (its pool has one connection for them), so two Bots share the token.
    # As in tdlib's server (Client.cpp abort_long_poll), the newer poll wins and the older one gets the 409.
    async with make_bot(fake) as first, make_bot(fake) as second:
        older = asyncio.create_task(first.get_updates(timeout=10))
        await fake.wait_for(lambda: fake.polling, timeout=5)
        polls = len(fake.calls("getUpdates"))
        newer = asyncio.create_task(second.get_updates(timeout=10))
        with pytest.raises(Conflict, match="terminated by other getUpdates request"):
            await asyncio.wait_for(older, 5)
        await fake.wait_for(lambda: len(fake.calls("getUpdates")) > polls and fake.polling, timeout=5)
        fake.queue_update(fake.private_message("for the survivor"))
        assert len(await asyncio.wait_for(newer, 5)) == 1
    assert fake.conflicts == [TERMINATED_BY_POLL]


async def test_a_poller_that_hung_up_leaves_no_poll_behind_to_conflict_with_the_next(fake: FakeTelegramBotAPI) -> None:
    # A poller killed -9: its connection closes with it, and Telegram's held request ends there, so whoever polls
    # next polls alone.
    async with make_bot(fake) as dead:
        held = asyncio.create_task(dead.get_updates(timeout=10))
        await fake.wait_for(lambda: fake.polling, timeout=5)
        held.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await held
    # Its connections are closed, as the kernel closes a dead process's sockets.
    await fake.wait_for(lambda: not fake.polling, timeout=5)
    async with make_bot(fake) as next_one:
        polling = asyncio.create_task(next_one.get_updates(timeout=10))
        await fake.wait_for(lambda: fake.polling, timeout=5)
        fake.queue_update(fake.private_message("for the next poller"))
        assert len(await asyncio.wait_for(polling, 5)) == 1
    assert fake.conflicts == []


async def test_polling_while_a_webhook_is_set_is_a_conflict(fake: FakeTelegramBotAPI, bot: Bot) -> None:
    assert await bot.set_webhook("https://bot.example.org/telegram", secret_token="s3cret_-token")
    info = await bot.get_webhook_info()
    assert (info.url, info.pending_update_count) == ("https://bot.example.org/telegram", 0)
    with pytest.raises(Conflict, match="webhook is active"):
        await bot.get_updates(timeout=0)
    assert fake.conflicts == [WEBHOOK_ACTIVE]
    with pytest.raises(BadRequest, match=r"^Secret token contains unallowed characters"):
        await bot.set_webhook("https://bot.example.org/telegram", secret_token="not allowed!")
    assert await bot.delete_webhook()
    assert await bot.get_updates(timeout=0) == ()


async def test_application_polls_and_its_handlers_answer(fake: FakeTelegramBotAPI) -> None:
    async def echo(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        assert update.effective_message is not None
        await update.effective_message.reply_text(f"echo: {update.effective_message.text}", do_quote=False)

    async def kb(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        assert update.effective_message is not None
        await update.effective_message.reply_text("kb command")

    app: Application[Any, Any, Any, Any, Any, Any] = (
        ApplicationBuilder().token(fake.token).base_url(fake.base_url).base_file_url(fake.base_file_url).build()
    )
    app.add_handler(CommandHandler("kb", kb))
    app.add_handler(MessageHandler(filters.TEXT & ~filters.COMMAND, echo))
    async with app:
        await app.updater.start_polling(timeout=dtm.timedelta(seconds=5))  # type: ignore[union-attr]
        await app.start()
        fake.queue_update(fake.private_message("hello"))
        fake.queue_update(fake.group_message("/kb@ragbot_test_bot", mention=False))
        fake.queue_update(fake.group_message("/kb@some_other_bot", mention=False))
        await fake.wait_for(
            lambda: fake.visible(ALICE) == ["echo: hello"] and bool(fake.visible(DEFAULT_GROUP)), timeout=5
        )
        await app.updater.stop()  # type: ignore[union-attr]
        await app.stop()
    assert fake.visible(DEFAULT_GROUP) == ["kb command"]
    reply = fake.bot_messages(DEFAULT_GROUP)[0]
    assert reply.reply_to is not None  # reply_text quotes the command in groups
    methods = [request.method for request in fake.requests]
    assert methods[:3] == ["getMe", "deleteWebhook", "getUpdates"]
    assert fake.pending_updates == 0  # the stop-time getUpdates confirmed everything


async def test_post_webhook_delivers_with_the_secret_header(fake: FakeTelegramBotAPI, bot: Bot) -> None:
    received: list[tuple[str | None, dict[str, Any]]] = []

    async def endpoint(request: web.Request) -> web.Response:
        secret = request.headers.get("X-Telegram-Bot-Api-Secret-Token")
        received.append((secret, await request.json()))
        return web.Response(status=200 if secret == "s3cret" else 403)

    app = web.Application()
    app.router.add_post("/telegram", endpoint)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        url = f"http://127.0.0.1:{runner.addresses[0][1]}/telegram"
        await bot.set_webhook(url, secret_token="s3cret")
        update = fake.private_message("via webhook")
        assert await fake.deliver_webhook(update) == 200
        assert await fake.post_webhook(url, update, secret="wrong") == 403
    finally:
        await runner.cleanup()
    assert received[0] == ("s3cret", update)
    assert received[1][1]["update_id"] == update["update_id"]  # a redelivery keeps its id
    assert fake.webhook_deliveries == [(update["update_id"], 200), (update["update_id"], 403)]


# --- Builders PTB can read ------------------------------------------------------------------------------------------


async def test_update_builders_make_updates_ptb_parses(fake: FakeTelegramBotAPI, bot: Bot) -> None:
    doc = fake.add_file(b"%PDF-1.4", "guide.pdf", "application/pdf")
    photo = fake.add_file(b"\x89PNG", "chart.png", "image/png")
    voice = fake.add_file(b"OggS", "voice.ogg", "audio/ogg")
    answer = await bot.send_message(DEFAULT_GROUP, "answer")

    def parse(update: dict[str, Any]) -> Update:
        return Update.de_json(update, bot)

    mention = parse(fake.group_message("what is rag?")).effective_message
    assert mention is not None
    assert mention.text == "@ragbot_test_bot what is rag?"
    assert mention.parse_entities(["mention"]) == {mention.entities[0]: "@ragbot_test_bot"}
    reply = parse(fake.reply_to_bot(answer.message_id, "and then?", chat_id=DEFAULT_GROUP)).effective_message
    assert reply is not None
    assert reply.reply_to_message is not None
    assert reply.reply_to_message.from_user is not None
    assert reply.reply_to_message.from_user.is_bot
    topic = parse(fake.topic_message("in a topic", thread_id=77)).effective_message
    assert topic is not None
    assert (topic.message_thread_id, topic.is_topic_message, topic.chat.is_forum) == (77, True, True)
    document = parse(fake.document_message(doc, caption="/ingest")).effective_message
    assert document is not None
    assert document.document is not None
    assert (document.document.file_name, document.caption_entities[0].type) == ("guide.pdf", "bot_command")
    pictured = parse(fake.photo_message(photo)).effective_message
    assert pictured is not None
    assert pictured.photo[-1].file_id == photo
    spoken = parse(fake.voice_message(voice)).effective_message
    assert spoken is not None
    assert spoken.voice is not None
    assert spoken.voice.duration == dtm.timedelta(seconds=3) or spoken.voice.duration == 3
    sticker = parse(fake.sticker_message()).effective_message
    assert sticker is not None
    assert sticker.sticker is not None
    assert sticker.sticker.emoji == "👍"
    original = fake.private_message("typo")
    edited = parse(fake.edited_message(original, "fixed"))
    assert edited.edited_message is not None
    assert edited.edited_message.text == "fixed"
    assert edited.edited_message.message_id == original["message"]["message_id"]


# --- Files, commands, members ---------------------------------------------------------------------------------------


async def test_a_document_downloads_through_get_file(fake: FakeTelegramBotAPI, bot: Bot) -> None:
    file_id = fake.add_file(b"hello, file", "notes.txt", "text/plain")
    telegram_file = await bot.get_file(file_id)
    assert telegram_file.file_path is not None
    assert telegram_file.file_path.startswith(f"{fake.base_file_url}{fake.token}/documents/")
    assert await telegram_file.download_as_bytearray() == bytearray(b"hello, file")
    assert fake.requests[-1].method == "file"


async def test_get_file_refuses_files_over_20_mb_and_unknown_ids(fake: FakeTelegramBotAPI, bot: Bot) -> None:
    big = fake.add_file(b"x", "huge.pdf", "application/pdf", size=20 * 1024 * 1024 + 1)
    with pytest.raises(BadRequest, match=r"^File is too big"):
        await bot.get_file(big)
    with pytest.raises(BadRequest, match=r"^Wrong file_id"):
        await bot.get_file("no-such-file")


async def test_commands_are_stored_per_scope(fake: FakeTelegramBotAPI, bot: Bot) -> None:
    await bot.set_my_commands([BotCommand("ask", "Ask the knowledge base")])
    await bot.set_my_commands([BotCommand("kb", "Pick a knowledge base")], scope=BotCommandScopeAllGroupChats())
    assert fake.commands() == [{"command": "ask", "description": "Ask the knowledge base"}]
    assert [c["command"] for c in fake.commands({"type": "all_group_chats"})] == ["kb"]
    assert [c.command for c in await bot.get_my_commands(scope=BotCommandScopeAllGroupChats())] == ["kb"]
    with pytest.raises(BadRequest, match=r"^Bot_command_invalid$"):
        await bot.set_my_commands([BotCommand("Not-Valid", "x")])


async def test_chat_members_and_administrators(fake: FakeTelegramBotAPI, bot: Bot) -> None:
    admin = fake.user(2002, "Bob", "bob")
    fake.set_member(DEFAULT_GROUP, admin, "administrator")
    fake.set_member(DEFAULT_GROUP, fake.user(), "member")
    admins = await bot.get_chat_administrators(DEFAULT_GROUP)
    assert [(type(member), member.user.id) for member in admins] == [(ChatMemberAdministrator, 2002)]
    assert (await bot.get_chat_member(DEFAULT_GROUP, ALICE)).status == "member"
    with pytest.raises(BadRequest, match="no administrators in the private chat"):
        await bot.get_chat_administrators(ALICE)


async def test_wait_for_times_out_with_a_note_on_the_last_calls(fake: FakeTelegramBotAPI, bot: Bot) -> None:
    await bot.send_message(ALICE, "only one")
    with pytest.raises(TimeoutError) as raised:
        await fake.wait_for(lambda: len(fake.visible(ALICE)) == 2, timeout=0.05)
    assert "sendMessage" in raised.value.__notes__[0]
