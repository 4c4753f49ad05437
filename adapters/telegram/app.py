"""The Telegram adapter: python-telegram-bot by long polling or a webhook on ragbot's server, into the manager."""

from __future__ import annotations

import hmac
import json
import logging
import os
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Final

from aiohttp import web
from telegram import BotCommand, BotCommandScopeChat, BotCommandScopeDefault, CallbackQuery, Message, Update
from telegram.error import Conflict, TelegramError
from telegram.ext import Application, ApplicationBuilder, ContextTypes, TypeHandler

from adapters.telegram import words as telegram_words
from adapters.telegram.access import Access, Refusals
from adapters.telegram.pacing import Pacer
from adapters.telegram.poller import Leases as PollerLeases
from adapters.telegram.poller import PollerLease
from adapters.telegram.reasons import pick_reason, settle_press
from adapters.telegram.receipts import ReceiptQueue
from adapters.telegram.reply import FEEDBACK_PREFIX, WHY, DraftSupport, TelegramTarget, call, chosen_keyboard
from adapters.telegram.settings import TelegramSettings
from adapters.telegram.threads import REPLY_THREAD, answer_key, in_reply_chain, keyed_by_reply, question_of
from adapters.telegram.translate import PLATFORM, BotIdentity, Notice, conversation_key, translate
from bot.app.settings import Settings
from bot.chat.instances import new_instance_id
from bot.chat.manager import ConversationManager
from bot.commands.registry import Asker
from bot.errors import PlatformError
from bot.ports import Adapter, ReplyTarget
from bot.reply.deliver import deliver_text
from bot.types import ConversationKey, IncomingMessage, MessageRef
from bot.words import messages
from bot.words.catalogue import DEFAULT_LANGUAGE, languages
from bot.words.language import turn_language
from storage.db import Database
from storage.records import MessageRecord
from storage.repos.leases import LeaseRepo

log = logging.getLogger(__name__)

Posted = Callable[[MessageRef], Awaitable[None]]

# python-telegram-bot 22 reads RetryAfter.retry_after as a deprecated int (and warns on every 429) unless this
# opts in to timedelta values, which adapters.telegram.reply.retry_seconds reads either way.
os.environ.setdefault("PTB_TIMEDELTA", "1")

WEBHOOK_PATH: Final = "/telegram/webhook"
# The poller's lease is named per bot (its id from getMe): two bots on one database each get a poller.
POLLER_LEASE_PREFIX: Final = "telegram-poller:"
SECRET_HEADER: Final = "X-Telegram-Bot-Api-Secret-Token"
ALLOWED_UPDATES: Final = ["message", "callback_query"]
_SEEN_UPDATES: Final = 10_000
# Updates handled at once across chats; one chat's turns still run one at a time in the manager.
_CONCURRENT_UPDATES: Final = 256
# Longest a webhook's 200 or the next poll waits for an update's question to be stored (adapters.telegram.receipts).
_RECEIPT_WITHIN: Final = 10.0


@dataclass(frozen=True, slots=True)
class TelegramConfig:
    """The Telegram settings."""

    token: str
    admins: frozenset[str]
    access: Access
    mode: str
    webhook_url: str | None
    webhook_secret: str | None
    base_url: str | None
    base_file_url: str | None
    download_limit: int
    # Seconds the poller's lease lasts unless renewed (INSTANCE_LEASE): another instance polls within about this
    # long of the poller's death.
    poller_lease: float = 15.0


class TelegramAdapter:
    """Receives updates (polling or webhook), answers through the conversation manager, records feedback."""

    name = PLATFORM

    def __init__(
        self, manager: ConversationManager, config: TelegramConfig, leases: PollerLeases | None = None
    ) -> None:
        self._manager = manager
        self._config = config
        # Where the instances on one database agree which of them polls (None: this process polls, alone).
        self._leases = leases
        self._poller: PollerLease | None = None
        self._application: Application[Any, Any, Any, Any, Any, Any] | None = None
        self._me: BotIdentity | None = None
        self._seen: OrderedDict[int, None] = OrderedDict()
        self._drafts = DraftSupport()
        self._pacer = Pacer(share=self._share)
        self._conflict_reported = False
        self._refusals = Refusals()
        self._receipts = ReceiptQueue(within=_RECEIPT_WITHIN)
        # Set once stopping began: a webhook delivery then gets a 503, so Telegram sends it again (to the next
        # process), instead of a 200 for an update no one will handle.
        self._stopping = False

    def mount(self, app: web.Application) -> None:
        """The webhook route, in webhook mode."""
        if self._config.mode == "webhook":
            app.router.add_post(WEBHOOK_PATH, self.webhook)

    def _build(self) -> Application[Any, Any, Any, Any, Any, Any]:
        builder = ApplicationBuilder().token(self._config.token).concurrent_updates(_CONCURRENT_UPDATES)
        self._receipts = ReceiptQueue(within=_RECEIPT_WITHIN)  # bound to the loop that starts the application
        builder = builder.update_queue(self._receipts)
        builder = builder.connection_pool_size(64).pool_timeout(30)
        if self._config.base_url:
            builder = builder.base_url(self._config.base_url)
        if self._config.base_file_url:
            builder = builder.base_file_url(self._config.base_file_url)
        if self._config.mode == "webhook":
            builder = builder.updater(None)
        application = builder.build()
        application.add_handler(TypeHandler(Update, self._on_update, block=False))
        application.add_error_handler(self._on_error)
        return application

    async def start(self) -> None:
        """Log in (getMe), register the command menus, then poll or set the webhook."""
        application = self._application = self._build()
        await application.initialize()
        bot = application.bot
        self._me = BotIdentity(bot.id, bot.username)
        await application.start()
        self._manager.resume_on(PLATFORM, self._resume_target)  # answers of a dead process, now there is a bot
        await self._register_commands()
        if self._config.mode == "webhook":
            assert self._config.webhook_url is not None
            await bot.set_webhook(
                self._config.webhook_url, secret_token=self._config.webhook_secret, allowed_updates=ALLOWED_UPDATES
            )
            log.info("telegram=webhook bot=@%s url=%s", bot.username, self._config.webhook_url)
        elif self._leases is None:
            await self._start_polling()
        else:
            # Telegram refuses a second poller of one bot (409): the instances on the database take turns.
            self._poller = PollerLease(
                self._leases,
                f"{POLLER_LEASE_PREFIX}{bot.id}",
                # The process's presence owner, so the poller's holder reads as one of the instances alive.
                self._manager.instance or new_instance_id(),
                start=self._start_polling,
                stop=self._stop_polling,
                period=self._config.poller_lease,
            )
            await self._poller.begin()

    async def _start_polling(self) -> None:
        assert self._application is not None
        assert self._application.updater is not None
        await self._application.updater.start_polling(
            allowed_updates=ALLOWED_UPDATES, error_callback=self._polling_error
        )
        log.info("telegram=polling bot=@%s", self._application.bot.username)

    async def _stop_polling(self) -> None:
        assert self._application is not None
        if self._application.updater is not None and self._application.updater.running:
            await self._application.updater.stop()

    async def stop(self) -> None:
        """Stop receiving; answers in flight finish first (PTB waits for its handler tasks)."""
        application = self._application
        if application is None:
            return
        self._stopping = True
        self._manager.stop_resuming(PLATFORM, self._resume_target)
        if self._poller is not None:
            await self._poller.end()  # stops polling, and another instance takes over at once
        if application.updater is not None and application.updater.running:
            await application.updater.stop()
        if application.running:
            await application.stop()
        await application.shutdown()
        self._application = None

    async def _register_commands(self) -> None:
        # The menu is cosmetic: rights are checked on every command. Admins see their commands in their chats.
        # One menu per catalogue: Telegram shows a person the one of their app's language, else the default's.
        assert self._application is not None
        bot = self._application.bot
        registry = self._manager.commands
        try:
            for lang in languages():
                code = None if lang == DEFAULT_LANGUAGE else lang
                # Anyone's menu holds what a person may run in a private chat; groups check rights when run.
                everyone = [_menu_entry(spec.name, lang) for spec in registry.visible_to(Asker(is_admin=False))]
                admins = [_menu_entry(spec.name, lang) for spec in registry.visible_to(Asker(is_admin=True))]
                await bot.set_my_commands(everyone, scope=BotCommandScopeDefault(), language_code=code)
                for admin in self._config.admins:
                    await bot.set_my_commands(admins, scope=BotCommandScopeChat(int(admin)), language_code=code)
        except TelegramError as exc:
            log.warning("telegram=commands_not_set reason=%s", exc)

    def _polling_error(self, error: TelegramError) -> None:
        if isinstance(error, Conflict):
            if not self._conflict_reported:
                self._conflict_reported = True
                log.error(
                    "telegram=conflict another process is polling this bot token (or a webhook is set): "
                    "stop the other ragbot, or use TELEGRAM_MODE=webhook on one of them"
                )
            return
        log.warning("telegram=polling_error reason=%s", error)

    async def webhook(self, request: web.Request) -> web.Response:
        """A delivery from Telegram: secret checked in constant time, queued, 200 once its question is stored."""
        expected = self._config.webhook_secret or ""
        given = request.headers.get(SECRET_HEADER, "")
        if not expected or not hmac.compare_digest(given.encode(), expected.encode()):
            log.warning("telegram=webhook_refused reason=secret")
            return web.json_response({"ok": False}, status=403)
        application = self._application
        if application is None or self._stopping:
            return web.json_response({"ok": False}, status=503)
        try:
            body = await request.json()
            update = Update.de_json(body, application.bot)
        except (json.JSONDecodeError, UnicodeDecodeError, ValueError, TypeError, KeyError) as exc:
            log.warning("telegram=webhook_malformed reason=%s", exc)
            return web.json_response({"ok": False}, status=400)
        await application.update_queue.put(update)
        return web.json_response({"ok": True})

    def _first_delivery(self, update_id: int) -> bool:
        if update_id in self._seen:
            return False
        self._seen[update_id] = None
        while len(self._seen) > _SEEN_UPDATES:
            self._seen.popitem(last=False)
        return True

    async def _on_update(self, update: object, context: ContextTypes.DEFAULT_TYPE) -> None:
        if not isinstance(update, Update):
            return
        try:
            await self._handle_update(update)
        finally:
            self._receipts.settle(update.update_id)

    async def _handle_update(self, update: Update) -> None:
        if not self._first_delivery(update.update_id):
            return
        if update.callback_query is not None:
            if self._admits_press(update.callback_query):
                await self._feedback(update.callback_query)
            else:
                await self._answer_press(update.callback_query)
        elif update.message is not None:
            if self._admits(update.message):
                await self._message(update)
            else:
                await self._refuse(update.message)
        else:
            log.debug("telegram=ignored update=%s", update.update_id)

    def _admits(self, message: Message) -> bool:
        user = message.from_user
        private = message.chat.type == "private"
        return self._config.access.admits(message.chat.id, private=private, user_id=user.id if user else None)

    def _admits_press(self, query: CallbackQuery) -> bool:
        chat = query.message.chat if query.message is not None else None
        if chat is None:
            return self._config.access.admits(query.from_user.id, private=True, user_id=query.from_user.id)
        return self._config.access.admits(chat.id, private=chat.type == "private", user_id=query.from_user.id)

    async def _answer_press(self, query: CallbackQuery) -> None:
        try:
            await query.answer()
        except TelegramError as exc:
            log.warning("telegram=press_ack_failed reason=%s", exc)

    async def _refuse(self, message: Message) -> None:
        """Someone the bot is not open to: told once a while in one line with the id to list; a group is left."""
        chat, user = message.chat, message.from_user
        private = chat.type == "private"
        if not self._refusals.first(chat.id):
            log.debug("telegram=refused chat=%s reason=not_allowed told=before", chat.id)
            return
        log.info("telegram=refused chat=%s user=%s reason=not_allowed", chat.id, user.id if user else "")
        assert self._application is not None
        bot = self._application.bot
        lang = turn_language("", app_language=(user.language_code if user is not None else None) or "")
        text = telegram_words.private_bot(chat.id, lang) if private else telegram_words.group_not_allowed(chat.id, lang)
        thread = message.message_thread_id if message.is_topic_message else None
        try:
            await bot.send_message(chat.id, text, message_thread_id=thread)
        except TelegramError as exc:
            log.warning("telegram=refusal_undelivered chat=%s reason=%s", chat.id, exc)
        if private:
            return
        try:
            await bot.leave_chat(chat.id)
        except TelegramError as exc:
            log.warning("telegram=leave_failed chat=%s reason=%s", chat.id, exc)

    def _share(self) -> float:
        return self._manager.share()

    async def _resume_target(self, key: ConversationKey, question: MessageRecord) -> ReplyTarget | None:
        """Where a dead process's answer is finished: a new message in its chat (or topic); None before start."""
        if self._application is None or self._me is None or not key.chat.lstrip("-").isdigit():
            return None
        chat_id = int(key.chat)
        return TelegramTarget(
            self._application.bot,
            chat_id,
            # Private chats have the user's own (positive) id; groups and channels negative ones.
            private=chat_id > 0,
            observer=self._manager.metrics.observer(PLATFORM),
            drafts=self._drafts,
            pacer=self._pacer,
            thread_id=int(key.thread) if key.thread.isdigit() else None,
            # A reply chain's answer replies to the question that started it, and stays in the chain.
            reply_to=question_of(key.thread),
            posted=self._posted_in(key),
        )

    async def _message(self, update: Update) -> None:
        message = update.message
        assert message is not None
        assert self._me is not None
        assert self._application is not None
        bot = self._application.bot

        async def read(file_id: str) -> bytes:
            file = await call(bot.get_file(file_id))
            return bytes(await call(file.download_as_bytearray()))

        translated = translate(message, self._me, read, self._config.download_limit)
        if translated is None:
            return
        if (
            isinstance(translated, IncomingMessage)
            and keyed_by_reply(message)
            and await self._answerable(message, translated)
        ):
            translated = await in_reply_chain(message, translated, self._manager.threads)
        target = TelegramTarget(
            bot,
            message.chat.id,
            private=message.chat.type == "private",
            observer=self._manager.metrics.observer(PLATFORM),
            drafts=self._drafts,
            pacer=self._pacer,
            thread_id=message.message_thread_id if message.is_topic_message else None,
            reply_to=message.message_id,
            posted=self._posted_in(translated.key) if isinstance(translated, IncomingMessage) else None,
        )
        if isinstance(translated, Notice):
            user = message.from_user
            app_language = (user.language_code if user is not None else None) or ""
            lang = await self._manager.language(conversation_key(message), message.caption or "", app_language)
            try:
                await deliver_text(target, translated.say(lang))
            except PlatformError as exc:
                log.warning("telegram=notice_failed reason=%s", exc)
            return
        if translated.command is not None:
            self._receipts.settle(update.update_id)  # a command stores no question, and may run for minutes
        await self._manager.handle(translated, target, on_accepted=lambda _: self._receipts.settle(update.update_id))

    async def _answerable(self, message: Message, translated: IncomingMessage) -> bool:
        """Whether a group message may be answered, so its reply chain is worth reading: addressed, starting a chain
        (no read needed), or in a chat that answers everything (`/mode all`)."""
        if translated.addressed or message.reply_to_message is None:
            return True
        return await self._manager.answers_unaddressed(translated.key)

    def _posted_in(self, key: ConversationKey) -> Posted | None:
        """What records the bot's messages in a reply chain's conversation (None elsewhere: nothing to record)."""
        if not key.thread.startswith(REPLY_THREAD):
            return None
        threads = self._manager.threads

        async def posted(ref: MessageRef) -> None:
            await threads.remember(key, [ref.id])

        return posted

    async def _feedback(self, query: CallbackQuery) -> None:
        """A press on 👍 / 👎: recorded, and the answer keeps showing the choice in place of its buttons."""
        parts = (query.data or "").split(":", 2)
        if len(parts) == 3 and parts[0] == FEEDBACK_PREFIX and parts[1] == WHY:
            reason, _, answer_id = parts[2].partition(":")
            await pick_reason(self._manager, query, reason, answer_id)
            return
        if len(parts) != 3 or parts[0] != FEEDBACK_PREFIX or parts[1] not in ("up", "down"):
            await query.answer()
            return
        verdict, answer_id = parts[1], parts[2]
        message = query.message
        app_language = query.from_user.language_code or ""
        if isinstance(message, Message):
            key = await answer_key(message, answer_id, self._manager.threads)
            stored = await self._manager.feedback(key, answer_id, verdict, by=str(query.from_user.id))
            lang = await self._manager.language(key, message.text or "", app_language)
        else:
            stored, lang = None, turn_language("", app_language=app_language)
        if stored is None:
            await settle_press(query, messages.feedback_gone(lang), None)
        else:
            await settle_press(query, "", chosen_keyboard(verdict, answer_id, lang))

    async def _on_error(self, update: object, context: ContextTypes.DEFAULT_TYPE) -> None:
        # Handler errors past the manager's own turn boundary (translation, a failed notice): logged, never fatal.
        log.error("telegram=handler_error", exc_info=context.error)


def _menu_entry(name: str, lang: str) -> BotCommand:
    """A command in Telegram's menu: its name and its one-line help in `lang` (at most 256 characters)."""
    return BotCommand(name, messages.command_help(name, lang)[:256])


def create(manager: ConversationManager, settings: Settings, database: Database) -> Adapter | None:
    """The `ragbot.adapters` entry point: on when TELEGRAM_BOT_TOKEN is set."""
    telegram = TelegramSettings.of(settings)
    if telegram.TELEGRAM_BOT_TOKEN is None:
        return None
    for advice in telegram.advice():
        log.warning("telegram=private %s: %s; %s", advice.setting, advice.problem, advice.fix)
    config = TelegramConfig(
        token=telegram.TELEGRAM_BOT_TOKEN.get_secret_value(),
        admins=telegram.admins(),
        access=telegram.access(),
        mode=telegram.TELEGRAM_MODE,
        webhook_url=telegram.TELEGRAM_WEBHOOK_URL,
        webhook_secret=telegram.TELEGRAM_WEBHOOK_SECRET.get_secret_value()
        if telegram.TELEGRAM_WEBHOOK_SECRET
        else None,
        base_url=telegram.TELEGRAM_API_BASE_URL,
        base_file_url=telegram.TELEGRAM_FILE_BASE_URL,
        download_limit=int(telegram.TELEGRAM_DOWNLOAD_LIMIT_MB * 1_000_000),
        poller_lease=settings.INSTANCE_LEASE,
    )
    return TelegramAdapter(manager, config, LeaseRepo(database))
