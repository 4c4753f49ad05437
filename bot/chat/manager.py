"""The conversation manager: the turn boundary every platform hands its messages to."""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

from bot.chat.feedback import ReasonResult, give_reason
from bot.chat.inflight import CUT_WITHIN, InFlight
from bot.chat.limits import Arrivals, RateLimit, RateLimiter, TurnGate
from bot.chat.media import Unreadable, question_media
from bot.chat.parts import ChatParts
from bot.chat.queue_notice import QueueNotice
from bot.chat.recorder import OpenTurn, TurnRecorder, apology, shown_sources
from bot.chat.state import ChatConfig, ChatState
from bot.chat.threads import Threads, event_key
from bot.chat.turn_log import turn_scope
from bot.commands.builtin import default_registry
from bot.commands.parts import CommandParts
from bot.commands.registry import CommandRegistry
from bot.errors import PlatformError
from bot.knowledge.tenancy import OPERATOR, tenant_of
from bot.metrics import ChatMetrics
from bot.ports import ReplyStream, ReplyTarget
from bot.reply.deliver import deliver_text
from bot.types import Answer, ConversationKey, IncomingMessage, SourceLink, UserRef
from bot.words import language, messages
from rag.errors import RagError
from rag.pipeline import TurnContext
from rag.web.scratch import scope_key
from storage.errors import DuplicateEvent, NotFound, StorageError, first_line
from storage.records import AnswerMode, ChatSettingRecord, ConversationRecord, JobRecord, MessageRecord, MessageRole

log = logging.getLogger(__name__)

# Gives the reply target to finish a dead process's answer in: the conversation and its question.
Resumer = Callable[[ConversationKey, MessageRecord], Awaitable[ReplyTarget | None]]


# How a turn whose final text never reached the chat is counted (its stored answer's status too).
UNDELIVERED = "undelivered"
INTERRUPTED = "interrupted"


@dataclass(frozen=True, slots=True)
class ChatPolicy:
    """Who may do what where, and how much load the bot takes."""

    # Knowledge-base names a chat reads when nothing is bound to it (direct messages, the web chat).
    default_kbs: tuple[str, ...] = ()
    # Per platform, the only knowledge bases its chats may read; a platform not listed may read any.
    allowed_kbs: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # Per platform, the user ids of its admins.
    admins: Mapping[str, frozenset[str]] = field(default_factory=dict)
    # Platforms whose workspaces are tenants of their own (a Slack app installed through OAuth); the rest are the
    # operator's chats.
    separate_tenants: frozenset[str] = frozenset()
    group_answer_mode: AnswerMode = "mention"
    rate_limit: RateLimit = field(default_factory=RateLimit)
    # Commands have a bucket of their own, so a /stop is never refused for questions asked before it; most are
    # cheap reads, hence more of them (a burst of 100 /kb list is still refused past these).
    command_rate_limit: RateLimit = field(default_factory=lambda: RateLimit(count=30, window=60.0))
    max_turns: int = 64
    # Per platform, answers written at once in one chat of many conversations (a Telegram group keyed by reply chain,
    # or a forum's topics): Telegram allows a group 20 messages a minute, so four answers at once already edit each
    # only every ~12 s. A platform not listed has no cap per chat (Slack's budgets are the workspace's).
    max_chat_turns: Mapping[str, int] = field(default_factory=lambda: {"telegram": 4})
    # Questions stored at once on arrival, before their turn: a burst waits here, in order, not in the database
    # pool's queue, whose timeout would fail it (keep it under the pool, which turns and jobs share).
    max_arrivals: int = 16
    # Seconds a question waits behind another of its conversation before the conversation is told of its queue.
    queue_notice_after: float = 2.0
    # Seconds a question waits for a free answer slot (every one of max_turns busy) before it is told its place.
    line_notice_after: float = 5.0
    # How many of a conversation's newest messages a turn reads as its history (HistoryConfig.limit).
    history_limit: int = 20

    def is_admin(self, platform: str, user: UserRef) -> bool:
        """Whether this user administers ragbot on this platform (listed, or proven to the adapter)."""
        return user.verified_admin or user.id in self.admins.get(platform, frozenset())

    def tenant(self, key: ConversationKey) -> str:
        """The tenant a chat belongs to: which knowledge bases it may know of, and who owns those it creates."""
        return tenant_of(key.platform, key.workspace, self.separate_tenants)


@dataclass(frozen=True, slots=True)
class EarlierMessage:
    """A message from before the bot took part, imported as history; messages of one `round_id` pair up."""

    message_id: str
    role: MessageRole
    text: str
    round_id: str
    author: str = ""


@dataclass(frozen=True, slots=True)
class TurnResult:
    """What one turn did: the pipeline's turn (None when it broke before one existed) and the answer shown."""

    turn: TurnContext | None
    answer: Answer
    conversation_id: str


@dataclass(frozen=True, slots=True)
class TranscriptEntry:
    """One stored message of a conversation, with the sources it showed (an answer's)."""

    message: MessageRecord
    sources: list[SourceLink]


class ConversationManager:
    """Resolves the conversation, stores the question, runs the pipeline into the reply stream, stores the answer."""

    def __init__(
        self,
        parts: ChatParts,
        policy: ChatPolicy,
        command_parts: CommandParts,
        *,
        commands: CommandRegistry | None = None,
        metrics: ChatMetrics | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._parts = parts
        self._command_parts = command_parts
        self.policy = policy
        self.metrics = metrics or ChatMetrics()
        self.commands = commands or default_registry()
        self._recorder = TurnRecorder(parts.conversations)
        self._rate = RateLimiter(policy.rate_limit, clock)
        self._command_rate = RateLimiter(policy.command_rate_limit, clock)
        self._gate = TurnGate(policy.max_turns)
        self._arrivals = Arrivals()
        self._storing = asyncio.Semaphore(policy.max_arrivals)
        self._inflight = InFlight()
        # The queue notices' tasks, held until they end (the loop keeps only weak references to tasks).
        self._notices: set[asyncio.Task[None]] = set()
        self._stops: dict[str, asyncio.Event] = {}
        self._clock = clock
        self._state = ChatState(parts.settings, parts.knowledge, parts.conversations)
        # Which conversation of a chat a message belongs to, where ragbot keys threads itself (adapters ask it).
        self.threads = Threads(parts.posted, self._state, parts.conversations)
        self._epochs = parts.epochs
        self._job_watchers: list[Callable[[JobRecord], None]] = []
        self._resumers: dict[str, list[Resumer]] = {}
        parts.jobs.subscribe(self._job_changed)

    async def _job_changed(self, job: JobRecord) -> None:
        for watcher in list(self._job_watchers):
            watcher(job)

    def watch_jobs(self, watcher: Callable[[JobRecord], None]) -> Callable[[], None]:
        """Call `watcher` on every job change until the returned function is called."""
        self._job_watchers.append(watcher)
        return lambda: self._job_watchers.remove(watcher)

    async def handle(
        self,
        message: IncomingMessage,
        target: ReplyTarget,
        *,
        kb_ids: Sequence[str] | None = None,
        document_ids: Sequence[str] = (),
        on_accepted: Callable[[OpenTurn], None] | None = None,
    ) -> TurnResult | None:
        """Answer one message (or run its command) into `target`; None when nothing was answered.

        This is the turn boundary: whatever breaks inside, the person gets a short apology and the turn is
        stored as failed. Commands run at once; questions of one conversation run one at a time, in order.
        `on_accepted` hears the stored turn the moment its question is stored (from then on it is answered even if
        this process dies: a page can wait for that answer).
        """
        with turn_scope(), self._inflight.track():
            try:
                return await self._handle(message, target, kb_ids, document_ids, on_accepted)
            except Exception:
                # The store failed before a turn existed (resolving, storing the question): still apologise.
                log.exception("turn=failed_before_answer platform=%s", message.key.platform)
                await self._say_safely(target, messages.turn_failed(language.detect(message.text)))
                return None

    async def _handle(
        self,
        message: IncomingMessage,
        target: ReplyTarget,
        kb_ids: Sequence[str] | None,
        document_ids: Sequence[str],
        on_accepted: Callable[[OpenTurn], None] | None = None,
    ) -> TurnResult | None:
        chat = message.key.chat_key
        if message.command is not None:
            # Commands are rare and may change what chats read: their language comes from a fresh read.
            setting = await self._parts.settings.setting(chat.platform, chat.workspace, chat.chat)
            # A command's own words say its language; a file sent without one (an implied /ingest) has its caption.
            command = message.command if not message.command.implied else None
            lang = language.turn_language(
                command.raw if command is not None else message.text, setting.language, message.user.language
            )
            await self._command(message, target, lang)
            return None
        # Nothing before the turn gate reads the database for a message to the bot: the gate bounds how many turns
        # do. One not addressed to it is answered only where the chat says so, which is checked fresh.
        if not self._addressed(message):
            await self._refresh()
            if not self._answers_here(message, (await self._state.config(chat)).setting):
                log.debug("turn=ignored reason=not_addressed platform=%s", message.key.platform)
                return None
        cached = self._state.cached_setting(chat)
        # The language of what is said before the turn's read (a refusal, the queue notice); the turn decides anew.
        lang = language.turn_language(message.text, cached.language if cached else "", message.user.language)
        user = self._user_key(message)
        if not self._rate.allow(user):
            if self._rate.first_refusal(user):
                await self._say(target, messages.rate_limited(self._rate.retry_after(user), lang))
            return None

        def queue_notice() -> QueueNotice:
            return QueueNotice(target, lang, self.policy.queue_notice_after, self._notices)

        def place_notice() -> QueueNotice:
            after = self.policy.line_notice_after
            return QueueNotice(target, lang, after, self._notices, waiting=messages.busy_place, done=messages.busy_done)

        # The person sees at once that the bot took the question, however long it then waits for its turn.
        self._spawn(self._show_typing(target), "turn-typing")
        gate_key = _gate_key(message.key)
        async with self._arrivals.arrive(gate_key) as let_next_in:
            # Media is read in arrival order (a voice note is not overtaken by the text sent after it), before the
            # question is stored: what was understood is the question, in history too.
            understood = None
            if question_media(message):
                read = await self._parts.media.read(message)
                if isinstance(read, Unreadable):
                    await self._say(target, read.say(lang))
                    return None
                understood, message = read, replace(message, text=read.text, attachments=())
                lang = language.turn_language(message.text, cached.language if cached else "", message.user.language)
            accepted = await self._accept(message, on_accepted)
            if accepted is None:
                return None
            conversation, opened = accepted
            if on_accepted is not None:
                on_accepted(opened)
            if understood is not None:
                await self._say(target, understood.shown(lang))
            line, cap = self._chat_cap(message)
            try:
                async with (
                    self._gate.turn(gate_key, queue_notice, place_notice, in_line=let_next_in, chat=line, chat_cap=cap),
                    self._parts.turn_locks.hold(conversation.id),
                ):
                    return await self._open_turn(message, target, conversation, opened, kb_ids, document_ids)
            except Exception as exc:
                # Broke before its answer began (the database away while it waited): close the stored turn as
                # failed, or it would look written-by-this-process for ever; `handle` apologises.
                await self._record_failure(opened, exc, None, "")
                raise

    async def _accept(
        self, message: IncomingMessage, on_accepted: Callable[[OpenTurn], None] | None = None
    ) -> tuple[ConversationRecord, OpenTurn] | None:
        """Store the question with its answer's placeholder, written by this process, before it waits for its turn:
        from here on it is not lost with this process (another finishes it). None for a retried delivery, whose
        first delivery's turn `on_accepted` hears (a page that sent it again waits for that answer)."""
        async with self._storing:
            return await self._store(message, on_accepted)

    async def _store(
        self, message: IncomingMessage, on_accepted: Callable[[OpenTurn], None] | None
    ) -> tuple[ConversationRecord, OpenTurn] | None:
        conversation = await self._state.conversation(message.key)
        try:
            opened = await self._recorder.open(
                conversation.id,
                message.text,
                author=message.user.id,
                event_key=_event_key(message),
                instance=self._parts.instance,
            )
        except DuplicateEvent as duplicate:
            log.info("turn=duplicate platform=%s message=%s", message.key.platform, message.message_id)
            if on_accepted is not None:
                first = await self._parts.conversations.answer_to_event(duplicate.event_key)
                if first is not None:
                    on_accepted(OpenTurn(first.conversation_id, first.request_id, first.id))
            return None
        return conversation, opened

    async def _open_turn(
        self,
        message: IncomingMessage,
        target: ReplyTarget,
        conversation: ConversationRecord,
        opened: OpenTurn,
        kb_ids: Sequence[str] | None,
        document_ids: Sequence[str],
        *,
        resumed: bool = False,
    ) -> TurnResult | None:
        """Read the chat and its history (one statement), then answer the stored question."""
        if self._inflight.closing:
            # Shutting down: the stored question stays `streaming` under this process, and whichever process runs
            # next answers it (recovery), rather than one that is about to be cut.
            log.info("turn=left_for_next reason=shutting_down request=%s", opened.request_id)
            return None
        key = message.key
        epoch, history = await self._parts.conversations.turn_view(conversation.id, self.policy.history_limit)
        self._state.observe(epoch)
        config = await self._state.config(key.chat_key)
        if not self._answers_here(message, config.setting):
            await self._recorder.withdraw(opened, "not_addressed")  # the chat's answer mode changed since cached
            return None
        lang = language.turn_language(message.text, config.setting.language, message.user.language)
        readable = list(kb_ids) if kb_ids is not None else await self._readable(key, config)
        notices = [messages.resumed(lang)] if resumed else []
        if not readable and kb_ids is None and (missing := await self._missing(key, config)):
            # The answer cannot come from the knowledge base the chat should read: say which, and how to make it.
            admin = self.policy.is_admin(key.platform, message.user)
            notices.append(messages.no_kb_bound(missing, lang, admin=admin))
        history = [stored for stored in history if stored.request_id != opened.request_id]
        return await self._turn(
            message,
            target,
            conversation,
            opened,
            readable,
            document_ids,
            config.setting,
            lang,
            history,
            " ".join(notices),
        )

    def resume_on(self, platform: str, targets: Resumer) -> None:
        """Let this process finish `platform`'s answers whose process died: `targets` gives a reply target for a
        conversation and the question, or None when it cannot reach that chat (the answer goes out as a new message
        that says it continues). The first adapter still registered for a platform is used."""
        self._resumers.setdefault(platform, []).append(targets)

    def stop_resuming(self, platform: str, targets: Resumer) -> None:
        """An adapter that stops takes back what it registered with `resume_on`."""
        registered = self._resumers.get(platform, [])
        if targets in registered:
            registered.remove(targets)

    async def resume(self, answer: MessageRecord) -> bool:
        """Take over an answer whose writer died and answer its question again here; False when this process cannot
        (its platform is not served here) or another process took it first."""
        conversations = self._parts.conversations
        conversation = await conversations.by_id(answer.conversation_id)
        if conversation is None or not (registered := self._resumers.get(conversation.platform)):
            return False
        targets = registered[0]
        key = ConversationKey(conversation.platform, conversation.workspace, conversation.chat, conversation.thread)
        question = await conversations.question_of(answer)
        target = await targets(key, question) if question is not None else None
        if question is not None and target is None:
            return False
        if not await conversations.claim_answer(answer.id, answer.instance, self._parts.instance):
            return False
        opened = OpenTurn(conversation.id, answer.request_id, answer.id)
        if question is None or target is None:
            await self._recorder.withdraw(opened, "question_missing")
            return True
        message = IncomingMessage(key=key, message_id="", user=UserRef(id=question.author), text=question.text)
        log.info("turn=resumed conversation=%s request=%s from=%s", conversation.id, answer.request_id, answer.instance)
        self._spawn(self._resumed_turn(message, target, conversation, opened), "turn-resumed")
        return True

    async def tell(self, key: ConversationKey, text_in: Callable[[str], str]) -> bool:
        """Post a notice into a chat outside any turn (a scheduled sync's trouble), in the chat's language; False when
        no adapter here reaches that platform's chats or the platform refused it."""
        registered = self._resumers.get(key.platform)
        if not registered:
            return False
        lang = await self.language(key)
        # Reply targets are made for a question; a notice has none, so it stands in as an empty one.
        notice = MessageRecord("", "", "", "user", "", "done", "", {}, datetime.now(UTC))
        target = await registered[0](key, notice)
        if target is None:
            return False
        try:
            await deliver_text(target, text_in(lang))
        except PlatformError:
            log.warning("notice=undelivered platform=%s chat=%s", key.platform, key.chat, exc_info=True)
            return False
        return True

    async def close_orphan(self, answer: MessageRecord) -> bool:
        """Close, without answering again, an answer whose writer died too long ago for an answer now to help."""
        if not await self._parts.conversations.claim_answer(answer.id, answer.instance, self._parts.instance):
            return False
        await self._recorder.withdraw(OpenTurn(answer.conversation_id, answer.request_id, answer.id), "interrupted")
        return True

    async def _resumed_turn(
        self, message: IncomingMessage, target: ReplyTarget, conversation: ConversationRecord, opened: OpenTurn
    ) -> None:
        with turn_scope(), self._inflight.track():
            try:
                chat, cap = self._chat_cap(message)
                gate = self._gate.turn(_gate_key(message.key), chat=chat, chat_cap=cap)
                async with gate, self._parts.turn_locks.hold(conversation.id):
                    await self._open_turn(message, target, conversation, opened, None, (), resumed=True)
            except Exception as exc:
                log.exception("turn=resume_failed conversation=%s request=%s", conversation.id, opened.request_id)
                await self._record_failure(opened, exc, None, "")

    async def _command(self, message: IncomingMessage, target: ReplyTarget, lang: str) -> None:
        """Run a command once per platform event (a redelivery, even after a restart, is dropped), within its limit."""
        user = self._user_key(message)
        if not self._command_rate.allow(user):
            if self._command_rate.first_refusal(user):
                await self._say(target, messages.rate_limited(self._command_rate.retry_after(user), lang))
            return
        claimed = _event_key(message)
        if claimed is not None:
            try:
                await self._parts.conversations.claim_command(claimed)
            except DuplicateEvent:
                log.info("command=duplicate platform=%s message=%s", message.key.platform, message.message_id)
                return
        is_admin = self.policy.is_admin(message.key.platform, message.user)
        try:
            await self.commands.dispatch(self, self._command_parts, message, target, lang=lang, is_admin=is_admin)
        finally:
            # A command may have changed what chats read: this process sees it at once, others by the epoch.
            self._state.forget()

    def _chat_cap(self, message: IncomingMessage) -> tuple[str, int]:
        """The turn gate's name for a message's chat, and how many of that chat's turns may run at once (0: any)."""
        key = message.key
        return _gate_key(key.chat_key), self.policy.max_chat_turns.get(key.platform, 0)

    def _user_key(self, message: IncomingMessage) -> str:
        return f"{message.key.platform}:{message.key.workspace}:{message.user.id}"

    @staticmethod
    def _addressed(message: IncomingMessage) -> bool:
        return message.addressed or message.private

    async def answers_unaddressed(self, chat: ConversationKey) -> bool:
        """Whether the chat answers messages not addressed to the bot (`/mode all`), read as a turn reads it."""
        await self._refresh()
        setting = (await self._state.config(chat.chat_key)).setting
        return (setting.answer_mode or self.policy.group_answer_mode) == "all"

    def _answers_here(self, message: IncomingMessage, setting: ChatSettingRecord) -> bool:
        if self._addressed(message):
            return True
        return (setting.answer_mode or self.policy.group_answer_mode) == "all"

    async def _turn(
        self,
        message: IncomingMessage,
        target: ReplyTarget,
        conversation: ConversationRecord,
        opened: OpenTurn,
        kb_ids: list[str],
        document_ids: Sequence[str],
        setting: ChatSettingRecord,
        lang: str,
        history: Sequence[MessageRecord],
        notice: str = "",
    ) -> TurnResult:
        started = time.perf_counter()
        stop = self._stops[conversation.id] = asyncio.Event()
        stream = target.open_stream()
        answerer = self._parts.answerer
        turn: TurnContext | None = None
        first_text: list[float] = []
        outcome = ""

        async def show(piece: str) -> None:
            if not first_text:
                first_text.append((time.perf_counter() - started) * 1000)
            await stream.push(piece)

        try:
            await stream.status(messages.searching(lang))
            turn = answerer.prepare(
                message.text,
                kb_ids,
                conversation_id=conversation.id,
                document_ids=document_ids,
                on_text=show,
                stop=stop,
                fallback_text=setting.fallback_text,
                language=lang,
                stored_history=history,
                web_search=setting.web_search,
                web_scope=web_scope(conversation),
            )
            pipeline = answerer.rag_stream if kb_ids else answerer.chat_stream
            await answerer.execute(turn, pipeline)
            answer = await self._answer(turn, opened, lang, notice)
            ref = await stream.finish(answer)
            if ref is None:
                # The chat never showed the final text (a 429 past the deadline, the bot removed): not an answer.
                log.warning("turn=undelivered conversation=%s request=%s", conversation.id, opened.request_id)
                outcome = UNDELIVERED
            finished = functools.partial(
                self._recorder.finish,
                opened,
                turn,
                turn.text,
                platform_message_id=ref.id if ref else "",
                extra={"first_text_ms": round(first_text[0], 1)} if first_text else None,
                delivered=ref is not None,
            )
            await self._store_end(opened, finished)
        except Exception as exc:
            _log_failure(exc, conversation.id, opened.request_id)
            text = turn.text if turn is not None else ""
            await self._record_failure(opened, exc, turn, text)
            await stream.fail(apology(exc, lang))
            answer = Answer(text=text, outcome="failed", message_id=opened.answer_id, language=lang)
        except asyncio.CancelledError:
            # Cut (a shutdown past its grace): the chat keeps what was written, with a note, and so does the store.
            await asyncio.shield(self._cut(opened, stream, turn, lang))
            raise
        finally:
            if self._stops.get(conversation.id) is stop:
                del self._stops[conversation.id]
        self.metrics.turn(message.key.platform, outcome or answer.outcome, time.perf_counter() - started)
        return TurnResult(turn, answer, conversation.id)

    async def _cut(self, opened: OpenTurn, stream: ReplyStream, turn: TurnContext | None, lang: str) -> None:
        text = turn.text if turn is not None else ""
        note = messages.interrupted_note(lang)
        try:
            async with asyncio.timeout(CUT_WITHIN):
                if turn is None or not text:
                    await stream.fail(note)
                    await self._recorder.withdraw(opened, INTERRUPTED)
                    return
                shown = Answer(text, outcome=INTERRUPTED, message_id=opened.answer_id, notice=note, language=lang)
                ref = await stream.finish(shown)
                turn.outcome = INTERRUPTED
                await self._recorder.finish(
                    opened, turn, text, platform_message_id=ref.id if ref else "", delivered=ref is not None
                )
        except Exception as exc:  # the process is going: the next one closes what is left `streaming`
            log.warning("turn=cut_unrecorded request=%s reason=%s", opened.request_id, first_line(exc))

    def is_draining(self) -> bool:
        """Whether a drain began: no new answer starts here (so /readyz says not ready)."""
        return self._inflight.closing

    async def drain(self, grace: float) -> int:
        """Stop starting answers; let those in flight end within `grace` seconds, then cut the rest (each keeps what
        it wrote, with a note). Questions stored but not begun stay for the next process. Returns how many were cut."""
        return await self._inflight.drain(grace)

    async def _record_failure(self, opened: OpenTurn, exc: BaseException, turn: TurnContext | None, text: str) -> None:
        # The apology must reach the person even when the store itself is down.
        await self._store_end(opened, functools.partial(self._recorder.fail, opened, exc, turn=turn, answer=text))

    async def _store_end(self, opened: OpenTurn, write: Callable[[], Awaitable[None]]) -> None:
        """Store how the turn ended; when the store is away (a database restarting), again in the background until
        it is back: no recovery takes over a turn whose process lives on, so it would stay `streaming`."""
        try:
            await write()
        except Exception as exc:
            log.warning("turn=unrecorded request=%s reason=%s", opened.request_id, first_line(exc), exc_info=True)
            self._spawn(self._store_when_back(opened, write), "turn-record-retry")

    async def _store_when_back(self, opened: OpenTurn, write: Callable[[], Awaitable[None]]) -> None:
        if not await self._recorder.when_back(opened, write):
            log.error("turn=unrecorded request=%s: left streaming until the next start", opened.request_id)

    async def _answer(self, turn: TurnContext, opened: OpenTurn, lang: str, notice: str = "") -> Answer:
        notices = [notice] if notice else []
        if turn.truncated:
            notices.append(messages.question_cut(lang))
        if turn.outcome == "stopped":
            notices.append(messages.stopped_note(lang))
        elif turn.outcome == "timed_out":
            notices.append(messages.timed_out_note(lang))
        return Answer(
            text=turn.text,
            sources=tuple(await self._parts.sources.of_turn(shown_sources(turn), turn.text)),
            outcome=turn.outcome,
            message_id=opened.answer_id,
            notice=" ".join(notices),
            language=lang,
        )

    async def readable_kb_ids(self, key: ConversationKey) -> list[str]:
        """The knowledge bases this chat reads: its bindings, else the defaults, within its platform's allowance
        and its tenant's knowledge bases (a grant taken back ends a binding's reading at once)."""
        await self._refresh()
        return await self._readable(key, await self._state.config(key.chat_key))

    async def _readable(self, key: ConversationKey, config: ChatConfig) -> list[str]:
        bound = list(config.bound) or list((await self._state.resolve(self.policy.default_kbs)).ids)
        tenant = self.policy.tenant(key)
        # The operator's chats bind only what they resolved among the operator's own: nothing more to check.
        if tenant != OPERATOR:
            visible = await self._state.visible(tenant, bound)
            bound = [kb_id for kb_id in bound if kb_id in visible]
        allowed = self.policy.allowed_kbs.get(key.platform)
        if allowed is None:
            return bound
        allowed_ids = set((await self._state.resolve(allowed)).ids)
        return [kb_id for kb_id in bound if kb_id in allowed_ids]

    def tenant(self, key: ConversationKey) -> str:
        """The tenant the chat belongs to ('' for the operator)."""
        return self.policy.tenant(key)

    async def missing_kb_names(self, key: ConversationKey) -> list[str]:
        """The knowledge bases this chat reads by default (none bound to it) that do not exist."""
        await self._refresh()
        return await self._missing(key, await self._state.config(key.chat_key))

    async def _missing(self, key: ConversationKey, config: ChatConfig) -> list[str]:
        if config.bound:
            return []
        if self.policy.tenant(key) != OPERATOR:
            # The defaults are the operator's names: a workspace of its own reads them only when granted.
            return []
        missing = (await self._state.resolve(self.policy.default_kbs)).missing
        return [name for name in missing if self.may_read(key.platform, name)]

    async def _refresh(self) -> None:
        """Outside a turn (a command asking): check the cached views against the epoch now."""
        self._state.observe(await self._epochs.current())

    def knowledge_changed(self) -> None:
        """Forget this process's cached views at once (others see the change through the epoch on their next turn)."""
        self._state.forget()

    async def readable_kb_names(self, key: ConversationKey) -> list[str]:
        """The names of the knowledge bases this chat reads."""
        ids = await self.readable_kb_ids(key)
        return [kb.name for kb in await self._parts.knowledge.all() if kb.id in ids]

    def may_read(self, platform: str, kb_name: str) -> bool:
        """Whether chats on `platform` may be bound to the knowledge base `kb_name`."""
        allowed = self.allowed_kbs(platform)
        return allowed is None or kb_name in allowed

    def allowed_kbs(self, platform: str) -> tuple[str, ...] | None:
        """The only knowledge bases `platform`'s chats may read, or None when it may read any."""
        return self.policy.allowed_kbs.get(platform)

    async def transcript(self, key: ConversationKey, limit: int) -> list[TranscriptEntry]:
        """The conversation since its last /new, oldest first, each answer with the sources it showed."""
        conversation = await self.existing(key)
        if conversation is None:
            return []
        stored = await self._parts.conversations.recent(conversation.id, limit)
        sources = await self._parts.sources.of_answers(stored)
        return [TranscriptEntry(message, sources.get(message.id, [])) for message in stored]

    async def last_question(self, key: ConversationKey, author: str) -> str:
        """The newest question `author` asked in this conversation since it was last started over ("" when none)."""
        conversation = await self.existing(key)
        if conversation is None:
            return ""
        stored = await self._parts.conversations.recent(conversation.id, self.policy.history_limit)
        return next((m.text for m in reversed(stored) if m.role == "user" and m.author == author), "")

    async def last_sources(self, key: ConversationKey) -> list[SourceLink]:
        """The sources of this conversation's last answer (none before one)."""
        conversation = await self.existing(key)
        if conversation is None:
            return []
        answer = await self._parts.conversations.last_answer(conversation.id)
        return [] if answer is None else (await self._parts.sources.of_answers([answer]))[answer.id]

    async def stop(self, key: ConversationKey, conversation_id: str) -> bool:
        """Stop the answer being written in this conversation, by this process or another; False when none is."""
        if self.stop_here(conversation_id):
            return True
        writer = await self._parts.conversations.writer_of_current(conversation_id)
        if writer is None or writer == self._parts.instance or writer not in self._parts.live():
            return False
        await self._parts.stops.publish(conversation_id)
        return True

    @property
    def instance(self) -> str:
        """This process's name among those on the database (its presence lease's owner); "" when it serves alone."""
        return self._parts.instance

    def share(self) -> float:
        """This process's part of a limit every process shares (a platform's rate budget): one over those alive."""
        return 1.0 / max(len(self._parts.live()), 1)

    def stop_here(self, conversation_id: str) -> bool:
        """Stop the answer this process writes in the conversation (a stop heard from another process lands here);
        False when it writes none."""
        event = self._stops.get(conversation_id)
        if event is None or event.is_set():
            return False
        event.set()
        return True

    async def feedback(
        self, key: ConversationKey, message_id: str, value: str, *, by: str = ""
    ) -> MessageRecord | None:
        """Record `up` or `down` by the person `by` on an answer of this conversation: the answer, or None when it is
        not one of its. A changed verdict clears the reason given before."""
        conversation = await self.existing(key)
        if conversation is None:
            return None
        try:
            return await self._parts.conversations.set_feedback(
                message_id, value, conversation_id=conversation.id, by=by
            )
        except NotFound:
            return None

    async def feedback_reason(
        self, key: ConversationKey, message_id: str, reason: str, note: str = "", *, by: str
    ) -> ReasonResult:
        """Store why `by` gave an answer of this conversation a 👎 (only they may say); what became of it."""
        conversation = await self.existing(key)
        if conversation is None:
            return "gone"
        return await give_reason(self._parts.conversations, conversation.id, message_id, reason, note, by=by)

    async def language(self, key: ConversationKey, text: str = "", app_language: str = "") -> str:
        """The language the bot speaks to a chat outside a turn (a notice, a button's label), as a turn would choose:
        the chat's /lang, else the language of `text`, else of the person's app."""
        chat = key.chat_key
        setting = await self._parts.settings.setting(chat.platform, chat.workspace, chat.chat)
        return language.turn_language(text, setting.language, app_language)

    async def reset(self, key: ConversationKey) -> None:
        """Start this conversation over (`/new`): its earlier messages are no longer history or transcript."""
        conversation = await self.existing(key)
        if conversation is not None:
            await self._parts.conversations.reset(conversation.id)
            self._parts.answerer.forget(conversation.id)

    async def known(self, key: ConversationKey) -> bool:
        """Whether ragbot already holds a conversation here (a thread it answered in)."""
        return await self.existing(key) is not None

    async def existing(self, key: ConversationKey) -> ConversationRecord | None:
        """The stored conversation for `key`, or None: reading never creates one (a stranger's request costs no row).

        Remembered once found (a conversation's id never changes), so a Slack thread's every reply asks no query."""
        return await self._state.existing(key)

    async def seed_history(self, key: ConversationKey, earlier: Sequence[EarlierMessage]) -> int:
        """Store messages written before the bot joined (a thread it is mentioned in late) as the history.

        Each is keyed like its platform event, so a late delivery of one of them is never answered. Returns how
        many were stored.
        """
        conversation = await self.conversation(key)
        stored = 0
        for message in earlier:
            try:
                await self._parts.conversations.add_message(
                    conversation.id,
                    f"seed-{message.round_id}",
                    message.role,
                    message.text,
                    author=message.author,
                    event_key=event_key(key, message.message_id) if message.message_id else None,
                )
            except DuplicateEvent:
                continue
            stored += 1
        return stored

    async def conversation(self, key: ConversationKey) -> ConversationRecord:
        """The stored conversation for `key` (created when new)."""
        return await self._state.conversation(key)

    def _spawn(self, work: Coroutine[object, object, None], name: str) -> None:
        """Run `work` beside the turn, held until it ends (the loop keeps only weak references to tasks)."""
        task = asyncio.create_task(work, name=name)
        self._notices.add(task)
        task.add_done_callback(self._notices.discard)

    @staticmethod
    async def _show_typing(target: ReplyTarget) -> None:
        try:
            await target.typing()
        except PlatformError as exc:
            # Decoration: the answer itself is what must arrive.
            log.info("turn=typing_failed reason=%s", exc)

    async def _say(self, target: ReplyTarget, text: str) -> None:
        await deliver_text(target, text)

    async def _say_safely(self, target: ReplyTarget, text: str) -> None:
        try:
            await deliver_text(target, text)
        except Exception:
            log.exception("turn=apology_undelivered")


def web_scope(conversation: ConversationRecord) -> str:
    """What the web leg keeps a conversation's passages under: its id, and when it was last started over (`/new`)."""
    return scope_key(conversation.id, conversation.reset_at.isoformat() if conversation.reset_at is not None else "")


def _log_failure(exc: Exception, conversation_id: str, request_id: str) -> None:
    # Known failures (the index went away, the model broke) are one line; anything else is a bug: traceback.
    if isinstance(exc, StorageError | RagError | PlatformError):
        notes = " ".join(getattr(exc, "__notes__", ()))
        log.warning(
            "turn=failed conversation=%s request=%s reason=%s %s",
            conversation_id,
            request_id,
            first_line(exc),
            notes,
        )
    else:
        log.exception("turn=failed conversation=%s request=%s", conversation_id, request_id)


def _gate_key(key: ConversationKey) -> str:
    """The turn gate's name for a conversation: its key, so that waiting for a turn needs no database read."""
    return "\x1f".join((key.platform, key.workspace, key.chat, key.thread))


def _key_fields(key: ConversationKey) -> tuple[str, str, str, str]:
    return key.platform, key.workspace, key.chat, key.thread


def _event_key(message: IncomingMessage) -> str | None:
    return event_key(message.key, message.message_id) if message.message_id else None
