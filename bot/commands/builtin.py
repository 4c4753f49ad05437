"""Chat commands: /help /new /stop /sources /kb /ingest /jobs /sync /graph /tables /faq /fallback /mode /web /lang."""

from __future__ import annotations

import asyncio
import logging
import re
import uuid
from collections.abc import Sequence
from pathlib import Path

from bot.commands.registry import Asker, CommandContext, CommandRegistry, Form
from bot.commands.stats import register_stats
from bot.errors import InvalidKnowledgeBaseName, KnowledgeBaseExists, UserFacingError
from bot.knowledge.ingestion import stored_source
from bot.knowledge.schedules import SYNC_DEFAULT, URL_SYNC, EveryError, parse_every
from bot.knowledge.uploads import upload_name
from bot.reply.status import StatusMessage
from bot.types import Attachment
from bot.words import messages
from bot.words.catalogue import languages
from rag.ingest.faq_sheet import FaqEntry, is_faq_sheet
from storage.records import JobRecord, KnowledgeBaseRecord

log = logging.getLogger(__name__)

_URL = re.compile(r"^https?://\S+$", re.IGNORECASE)
_LIST_LIMIT = 20
_MODES = ("mention", "all")
_SWITCH = ("on", "off")
# The shortest FAQ id prefix /faq delete accepts: /faq list shows 8 characters, and 4 already tell ~65,000 apart.
_FAQ_ID_PREFIX = 4


def register_all(registry: CommandRegistry) -> None:
    """Register every built-in command: its name, rights and forms (its help and usage are in the catalogues)."""

    @registry.register("help", admin=False)
    async def help_(context: CommandContext) -> None:
        await context.reply(context.registry.help(context.asker, context.lang))

    # Every Telegram chat opens with /start (a deep link adds a payload): a greeting, then what the bot can do.
    @registry.register("start", admin=False, listed=False)
    async def start(context: CommandContext) -> None:
        names = [kb.name for kb in await _chat_kbs(context)]
        greeting = messages.greeting(names, context.lang, context.style)
        await context.reply(context.registry.help(context.asker, context.lang, intro=greeting))

    @registry.register("new", admin=False)
    async def new(context: CommandContext) -> None:
        about = await _about(context)
        await context.chat.reset(context.message.key)
        await context.reply(about + messages.new_conversation(context.lang))

    @registry.register("stop", admin=False)
    async def stop(context: CommandContext) -> None:
        about = await _about(context)
        conversation = await context.chat.existing(context.message.key)
        stopped = conversation is not None and await context.chat.stop(context.message.key, conversation.id)
        said = messages.stopping(context.lang) if stopped else messages.nothing_to_stop(context.lang)
        await context.reply(about + said)

    @registry.register("sources", admin=False)
    async def sources(context: CommandContext) -> None:
        await context.reply(await _about(context) + await _last_sources(context))

    @registry.register(
        "kb",
        admin=False,
        forms=(
            Form("list", literal=True),
            Form("use", may=_chooses_kb),
            Form("info"),
            Form("create", may=_admin),
        ),
    )
    async def kb(context: CommandContext) -> None:
        args = context.command.args
        if args[:1] == ("list",) and len(args) == 1:
            await context.reply(await _kb_list(context))
        elif args[:1] == ("use",) and len(args) >= 2:
            await context.reply(await _kb_use(context, " ".join(args[1:])))
        elif args[:1] == ("info",) and len(args) <= 2:
            await context.reply(await _kb_info(context, args[1] if len(args) == 2 else None))
        elif args[:1] == ("create",) and len(args) >= 2:
            await context.reply(await _kb_create(context, args[1], " ".join(args[2:])))
        else:
            raise context.usage_error()

    @registry.register("ingest", admin=True, forms=(Form("urls"), Form("every"), Form("files", files=True)))
    async def ingest(context: CommandContext) -> None:
        await _ingest(context, kind="upload")

    @registry.register("jobs", admin=True)
    async def jobs(context: CommandContext) -> None:
        await context.reply(await _jobs(context))

    @registry.register("sync", admin=True, forms=(Form("now"), Form("every")))
    async def sync(context: CommandContext) -> None:
        args = context.command.args
        if not args:
            await _sync_now(context)
        elif args[0] == "every" and len(args) == 2:
            await context.reply(await _sync_every(context, args[1]))
        else:
            raise context.usage_error()

    @registry.register("graph", admin=True, forms=(Form("on", literal=True), Form("off", literal=True)))
    async def graph(context: CommandContext) -> None:
        args = context.command.args
        if args not in (("on",), ("off",)):
            raise context.usage_error()
        await _graph_switch(context, on=args == ("on",))

    @registry.register(
        "faq", admin=True, forms=(Form("add"), Form("import", files=True), Form("list", literal=True), Form("delete"))
    )
    async def faq(context: CommandContext) -> None:
        args = context.command.args
        if args[:1] == ("add",) and len(args) == 3:
            await context.reply(await _faq_add(context, args[1], args[2]))
        elif args[:1] == ("import",) and len(args) == 1:
            await _ingest(context, kind="faq")
        elif args[:1] == ("list",) and len(args) == 1:
            await context.reply(await _faq_list(context))
        elif args[:1] == ("delete",) and len(args) == 2:
            await context.reply(await _faq_delete(context, args[1]))
        else:
            raise context.usage_error()

    @registry.register("fallback", admin=True, forms=(Form("text"),))
    async def fallback(context: CommandContext) -> None:
        await context.reply(await _set_fallback(context))

    @registry.register("mode", admin=True, forms=tuple(Form(mode, literal=True) for mode in _MODES))
    async def mode(context: CommandContext) -> None:
        args = context.command.args
        if len(args) != 1 or args[0] not in _MODES:
            raise context.usage_error()
        key = context.message.key.chat_key
        await context.parts.bindings.save_setting(
            key.platform, key.workspace, key.chat, answer_mode="all" if args[0] == "all" else "mention"
        )
        await context.reply(messages.mode_set(args[0], context.lang))

    @registry.register("tables", admin=True, forms=tuple(Form(state, literal=True) for state in _SWITCH))
    async def tables(context: CommandContext) -> None:
        args = context.command.args
        if len(args) != 1 or args[0] not in _SWITCH:
            raise context.usage_error()
        await context.reply(await _set_tables(context, on=args[0] == "on"))

    @registry.register("web", admin=True, forms=(Form("on", literal=True), Form("off", literal=True)))
    async def web(context: CommandContext) -> None:
        args = context.command.args
        if len(args) != 1 or args[0].lower() not in ("on", "off"):
            raise context.usage_error()
        on = args[0].lower() == "on"
        if on and not context.parts.web_search:
            await context.reply(messages.web_search_unavailable(context.lang))
            return
        key = context.message.key.chat_key
        await context.parts.bindings.save_setting(key.platform, key.workspace, key.chat, web_search=on)
        await context.reply(messages.web_search_set(on, context.lang))

    @registry.register(
        "lang",
        admin=False,
        forms=tuple(Form(code, literal=True, may=_sets_language) for code in ("auto", *languages())),
    )
    async def lang(context: CommandContext) -> None:
        await context.reply(await _set_language(context))


def _admin(asker: Asker) -> bool:
    """A form only admins may run (`/kb create`)."""
    return asker.is_admin


def _chooses_kb(asker: Asker) -> bool:
    """`/kb use`: admins; anyone in a private chat of a platform that limits its knowledge bases, among those."""
    return asker.is_admin or (asker.private and asker.kb_limited)


def _sets_language(asker: Asker) -> bool:
    """`/lang`: anyone in a private chat; in a group, where it changes the replies to everyone, admins only."""
    return asker.is_admin or asker.private


async def _set_fallback(context: CommandContext) -> str:
    text = context.command.raw.strip()
    key = context.message.key.chat_key
    await context.parts.bindings.save_setting(key.platform, key.workspace, key.chat, fallback_text=text)
    return messages.fallback_set(text, context.lang)


async def _set_tables(context: CommandContext, *, on: bool) -> str:
    """`/tables on|off`: data analysis of the spreadsheets of the chat's knowledge base (the one it adds to)."""
    kb = await _target_kb(context)
    await context.parts.knowledge.set_tables(kb.id, on=on)
    return messages.tables_set(kb.name, context.lang, on=on)


async def _set_language(context: CommandContext) -> str:
    """`/lang auto` replies in each message's language; `/lang CODE` in one language with a catalogue."""
    if not _sets_language(context.asker):
        raise UserFacingError(messages.admins_only("lang", context.lang, context.style))
    args = context.command.args
    if len(args) != 1 or (args[0].lower() != "auto" and args[0].lower() not in languages()):
        raise context.usage_error()
    language = "" if args[0].lower() == "auto" else args[0].lower()
    key = context.message.key.chat_key
    await context.parts.bindings.save_setting(key.platform, key.workspace, key.chat, language=language)
    return messages.language_set(language)


def _tenant(context: CommandContext) -> str:
    return context.chat.tenant(context.message.key)


async def _chat_kbs(context: CommandContext) -> list[KnowledgeBaseRecord]:
    ids = await context.chat.readable_kb_ids(context.message.key)
    by_id = {kb.id: kb for kb in await context.parts.knowledge.visible(_tenant(context))}
    return [by_id[kb_id] for kb_id in ids if kb_id in by_id]


async def _own_kbs(context: CommandContext) -> list[KnowledgeBaseRecord]:
    """The chat's knowledge bases its tenant owns: the ones its admins may change (a grant is for reading)."""
    kbs = await _chat_kbs(context)
    if not kbs:
        raise await _no_kb(context)
    tenant = _tenant(context)
    own = [kb for kb in kbs if kb.owner == tenant]
    if not own:
        raise UserFacingError(messages.kb_only_shared(kbs[0].name, context.lang, context.style))
    return own


async def _target_kb(context: CommandContext) -> KnowledgeBaseRecord:
    return (await _own_kbs(context))[0]


async def _no_kb(context: CommandContext) -> UserFacingError:
    """What a chat that reads no knowledge base is told: the missing default by name, or how to get one."""
    missing = await context.chat.missing_kb_names(context.message.key)
    return UserFacingError(messages.no_kb_bound(missing, context.lang, admin=context.is_admin))


async def _kb_list(context: CommandContext) -> str:
    platform = context.message.key.platform
    visible = await context.parts.knowledge.visible(_tenant(context))
    reading = set(await context.chat.readable_kb_ids(context.message.key))
    names = [(kb.name, kb.description, kb.id in reading) for kb in visible if context.chat.may_read(platform, kb.name)]
    if not names:
        missing = await context.chat.missing_kb_names(context.message.key)
        return messages.kb_list_empty(missing, context.lang, admin=context.is_admin)
    return messages.kb_list(names, context.lang)


async def _kb_use(context: CommandContext, name: str) -> str:
    chat, key = context.chat, context.message.key
    if not _chooses_kb(context.asker):
        raise UserFacingError(messages.admins_only("kb use", context.lang, context.style))
    tenant = _tenant(context)
    kb = await context.parts.knowledge.named(name, tenant)
    if kb is None:
        # Said before "may not read": a name nobody created is a typo or a step still to take, not a refusal.
        visible = await context.parts.knowledge.visible(tenant)
        choices = [kb.name for kb in visible if chat.may_read(key.platform, kb.name)]
        create = context.is_admin and chat.may_read(key.platform, name)
        raise UserFacingError(messages.kb_use_missing(name, choices, context.lang, create=create))
    if not chat.may_read(key.platform, name):
        raise UserFacingError(messages.kb_not_allowed(name, context.lang, context.style))
    where = key.chat_key
    await context.parts.bindings.bind(where.platform, where.workspace, where.chat, [kb.id])
    return messages.kb_now_using(kb.name, context.lang)


async def _kb_create(context: CommandContext, name: str, description: str) -> str:
    """A new knowledge base (admins), named by the rules of `ragbot kb create`, within the chat's allowance."""
    lang = context.lang
    if not context.is_admin:
        raise UserFacingError(messages.admins_only("kb create", lang))
    allowed = context.chat.allowed_kbs(context.message.key.platform)
    if allowed is not None and name.strip() and name.strip() not in allowed:
        # A knowledge base the chat could never read would be one more dead end.
        raise UserFacingError(messages.kb_create_not_allowed(name.strip(), allowed, lang))
    try:
        kb = await context.parts.knowledge.create(name, {}, description, owner=_tenant(context))
    except InvalidKnowledgeBaseName as exc:
        raise UserFacingError(messages.kb_bad_name(exc.max_length, lang)) from exc
    except KnowledgeBaseExists as exc:
        raise UserFacingError(messages.kb_exists(exc.name, lang)) from exc
    context.chat.knowledge_changed()
    log.info("kb=created id=%s by=%s platform=%s", kb.id, context.message.user.id, context.message.key.platform)
    reading = kb.id in await context.chat.readable_kb_ids(context.message.key)
    return messages.kb_created(kb.name, lang, reading=reading)


async def _kb_info(context: CommandContext, name: str | None) -> str:
    if name is None:
        kbs = await _chat_kbs(context)
        if not kbs:
            raise await _no_kb(context)
        kb = kbs[0]
    else:
        found = await context.parts.knowledge.named(name, _tenant(context))
        if found is None:
            raise UserFacingError(messages.kb_missing(name, context.lang, context.style))
        if not context.chat.may_read(context.message.key.platform, name):
            raise UserFacingError(messages.kb_not_allowed(name, context.lang, context.style))
        kb = found
    info = await context.parts.knowledge.info_of(kb)
    return messages.kb_info(kb.name, kb.description, info.counts, context.lang)


async def _about(context: CommandContext) -> str:
    """Which question a conversation command acts on, when the adapter chose the person's latest conversation for it
    (they named none); "" otherwise."""
    if not context.message.latest_conversation:
        return ""
    question = await context.chat.last_question(context.message.key, context.message.user.id)
    return f"{messages.about_question(question, context.lang)}\n\n" if question else ""


async def _last_sources(context: CommandContext) -> str:
    links = await context.chat.last_sources(context.message.key)
    if not links:
        return messages.no_sources(context.lang)
    return "\n\n".join(
        messages.source_detail(link.number, messages.source_title(link, context.lang), link.url, link.snippet)
        for link in links
    )


async def _jobs(context: CommandContext) -> str:
    kbs = await _own_kbs(context)
    names = {kb.id: kb.name for kb in kbs}
    found: list[JobRecord] = []
    for kb in kbs:
        found += await context.parts.job_repo.recent(kb_id=kb.id, limit=_LIST_LIMIT)
    found.sort(key=lambda job: job.created_at, reverse=True)
    scheduled = [row for row in await context.parts.schedules.all(kb_ids=names) if row.kind == URL_SYNC]
    listed = messages.jobs_list(found[:_LIST_LIMIT], names, context.parts.clock(), context.lang) if found else ""
    if not scheduled:
        return listed or messages.no_jobs(context.lang)
    shown = messages.schedules_list(scheduled[:_LIST_LIMIT], names, context.lang)
    return f"{shown}\n\n{listed}" if listed else shown


async def _sync_now(context: CommandContext) -> None:
    """`/sync`: every scheduled page of the chat's knowledge base fetched again now, followed like /ingest."""
    kb = await _target_kb(context)
    scheduled = [row for row in await context.parts.schedules.all(kb_ids=[kb.id]) if row.kind == URL_SYNC]
    if not scheduled:
        await context.reply(messages.sync_nothing(context.lang))
        return
    status = StatusMessage(context.target)
    await status.update(messages.sync_queued(len(scheduled), context.lang))
    jobs = [
        await context.parts.jobs.submit(
            kb.id,
            "sync",
            row.source,
            requested_by=context.message.user.id,
            requested_from=_requested_from(context),
            resume=True,
        )
        for row in scheduled
    ]
    await _follow(context, status, jobs)


async def _sync_every(context: CommandContext, period: str) -> str:
    """`/sync every 1d|off`: the knowledge base's period for its pages, those scheduled already included."""
    kb = await _target_kb(context)
    schedules = context.parts.schedules
    scheduled = [row for row in await schedules.all(kb_ids=[kb.id]) if row.kind in (URL_SYNC, SYNC_DEFAULT)]
    if period.lower() == "off":
        for row in scheduled:
            await schedules.remove(row.id)
        return messages.sync_default_off(kb.name, context.lang)
    every = parse_every(period)
    await schedules.put(SYNC_DEFAULT, every, kb_id=kb.id, created_by=context.message.user.id)
    pages = [row for row in scheduled if row.kind == URL_SYNC]
    for row in pages:
        await schedules.put(URL_SYNC, every, kb_id=kb.id, source=row.source)
    return messages.sync_default_set(kb.name, every, len(pages), context.lang)


async def _graph_switch(context: CommandContext, *, on: bool) -> None:
    """`/graph on|off`: the chat's knowledge base's entity graph; on reads the documents it holds already."""
    builder = context.parts.graph
    if builder is None:
        raise UserFacingError(messages.graph_unavailable(context.lang))
    kb = await _target_kb(context)
    if not on:
        await builder.switch_off(kb.id)
        await context.reply(messages.graph_off(kb.name, context.lang))
        return
    status = StatusMessage(context.target)
    await status.update(messages.graph_building(kb.name, context.lang))
    built = await builder.switch_on(kb.id)
    await status.final(messages.graph_on(kb.name, built.documents, built.mentions, context.lang))


def _requested_from(context: CommandContext) -> dict[str, str]:
    """Where a job or schedule was asked for: the chat its outcome and troubles are told in."""
    key = context.message.key
    return {"platform": key.platform, "workspace": key.workspace, "chat": key.chat}


def _every_of(args: Sequence[str]) -> tuple[list[str], int | None]:
    """`/ingest`'s arguments without `--every PERIOD`, and the period in seconds when given."""
    rest = list(args)
    if "--every" not in rest:
        return rest, None
    at = rest.index("--every")
    if at + 1 >= len(rest):
        raise EveryError.missing()
    period = rest[at + 1]
    del rest[at : at + 2]
    return rest, parse_every(period)


async def _faq_add(context: CommandContext, question: str, answer: str) -> str:
    question, answer = question.strip(), answer.strip()
    if not question or not answer:
        raise context.usage_error("add")
    kb = await _target_kb(context)
    await context.parts.index_lock.ensure_writable()
    result = await context.parts.faq_importer.import_entries(kb, [FaqEntry(question, (answer,))])
    return messages.faq_added(kb.name, context.lang, created=result.created > 0)


async def _faq_list(context: CommandContext) -> str:
    kb = await _target_kb(context)
    faqs = await context.parts.faqs.in_kb(kb.id)
    return messages.faq_list(kb.name, [(faq.id, faq.question) for faq in faqs], _LIST_LIMIT, context.lang)


async def _faq_delete(context: CommandContext, faq_id: str) -> str:
    parts = context.parts
    own = {kb.id for kb in await _own_kbs(context)}
    faq_id = faq_id.strip()
    if len(faq_id) < _FAQ_ID_PREFIX:
        # An empty id is a prefix of every id: it would delete a knowledge base's only FAQ.
        raise UserFacingError(messages.faq_id_too_short(_FAQ_ID_PREFIX, context.lang, context.style))
    matches = [faq for faq in await parts.faqs.by_ids([faq_id]) if faq.kb_id in own]
    if not matches:
        # Accept the short id /faq list shows.
        for kb_id in own:
            matches += [faq for faq in await parts.faqs.in_kb(kb_id) if faq.id.startswith(faq_id)]
    if len(matches) != 1:
        lang = context.lang
        missing = (
            messages.faq_missing(faq_id, lang, context.style) if not matches else messages.faq_ambiguous(faq_id, lang)
        )
        raise UserFacingError(missing)
    await parts.index_lock.ensure_writable()
    await parts.faq_importer.delete(matches[0])
    return messages.faq_deleted(matches[0].question, context.lang)


async def _ingest(context: CommandContext, *, kind: str) -> None:
    uploads = context.parts.uploads
    kb = await _target_kb(context)
    args, every = _every_of(context.command.args) if kind == "upload" else (list(context.command.args), None)
    urls = [arg for arg in args if _URL.match(arg)] if kind == "upload" else []
    others = [arg for arg in args if arg not in urls and not (kind == "faq" and arg == "import")]
    if others:
        raise UserFacingError(messages.not_urls(others, context.lang))
    if every is not None and not urls:
        raise UserFacingError(messages.every_urls_only(context.lang))
    if every is not None and any(stored_source("url", url) != url for url in urls):
        # Credentials are never stored, so a sync would fetch without them and fail: refused before anything queues.
        raise UserFacingError(messages.every_credentials(context.lang))
    files = context.message.attachments
    if not files and not urls:
        lang = context.lang
        style = context.style
        raise UserFacingError(
            messages.nothing_to_ingest(lang, style) if kind == "upload" else messages.no_faq_sheet(lang, style)
        )
    limit = uploads.max_bytes
    too_big = [file for file in files if file.size > limit]
    if too_big:
        raise _too_large(too_big[0].name, too_big[0].size, limit, context.lang)
    status = StatusMessage(context.target)
    await status.update(messages.ingest_queued(len(files) + len(urls), kb.name, context.lang))
    requested_from = _requested_from(context)
    try:
        paths = await _save_uploads(uploads.folder, files, limit, context.lang)
    except UserFacingError as exc:
        # Nothing was queued: the status message says why instead of "Queued" forever.
        await status.final(messages.user_message(exc, context.lang))
        return
    jobs: list[JobRecord] = []
    for path in paths:
        job_kind = "faq" if kind == "faq" or await asyncio.to_thread(_is_faq_file, path) else "upload"
        jobs.append(
            await context.parts.jobs.submit(
                kb.id, job_kind, str(path), requested_by=context.message.user.id, requested_from=requested_from
            )
        )
    if urls:
        every = await _url_period(context, kb, every)
    for url in urls:
        if every is not None:
            # Before the job, so its first fetch's validators are kept for the next sync.
            await context.parts.schedules.put(
                URL_SYNC,
                every,
                kb_id=kb.id,
                source=stored_source("url", url),
                created_by=context.message.user.id,
                requested_from=requested_from,
            )
        jobs.append(
            await context.parts.jobs.submit(
                kb.id, "url", url, requested_by=context.message.user.id, requested_from=requested_from
            )
        )
    await _follow(context, status, jobs)
    if urls and every is not None:
        await context.reply(messages.url_scheduled(every, context.lang))


async def _url_period(context: CommandContext, kb: KnowledgeBaseRecord, every: int | None) -> int | None:
    """How often the URLs of this /ingest are fetched again: as given, else the knowledge base's default."""
    if every is not None:
        return every
    default = await context.parts.schedules.find(SYNC_DEFAULT, kb_id=kb.id)
    return default.every_seconds if default is not None else None


async def _follow(context: CommandContext, status: StatusMessage, jobs: Sequence[JobRecord]) -> None:
    """Edit the status message as the jobs move, then show each outcome."""
    latest = {job.id: job for job in jobs}
    changed = asyncio.Event()

    def on_change(job: JobRecord) -> None:
        if job.id in latest:
            latest[job.id] = job
            changed.set()

    watch = context.chat.watch_jobs(on_change)
    try:
        waiting = asyncio.ensure_future(_wait_all(context, jobs))
        while not waiting.done():
            changed.clear()
            woken = asyncio.ensure_future(changed.wait())
            await asyncio.wait([waiting, woken], return_when=asyncio.FIRST_COMPLETED)
            woken.cancel()
            await status.update(messages.ingest_progress(list(latest.values()), context.lang))
        finished = waiting.result()
    finally:
        watch()
    await status.final(messages.ingest_outcome(finished, context.lang))


async def _wait_all(context: CommandContext, jobs: Sequence[JobRecord]) -> list[JobRecord]:
    return list(await asyncio.gather(*(context.parts.jobs.wait(job.id) for job in jobs)))


async def _save_uploads(folder: Path, files: Sequence[Attachment], limit: int, lang: str) -> list[Path]:
    """Every attachment downloaded and saved, or none: one that cannot be read removes the others."""
    saved: list[Path] = []
    try:
        for file in files:
            saved.append(await _save_upload(folder, file, limit, lang))
    except BaseException:
        await asyncio.to_thread(_remove, saved)
        raise
    return saved


def _is_faq_file(path: Path) -> bool:
    # An FAQ sheet is known by its header row on every upload path (a web upload, a Telegram document, a Slack
    # file, /ingest with files): imported as FAQs, never indexed as a document that repeats them as prose.
    return is_faq_sheet(path.read_bytes(), path.name)


def _remove(paths: Sequence[Path]) -> None:
    for path in paths:
        path.unlink(missing_ok=True)
        path.parent.rmdir()


async def _save_upload(folder: Path, file: Attachment, limit: int, lang: str) -> Path:
    if file.read is None:
        raise UserFacingError(messages.file_unreadable(file.name, lang))
    data = await file.read()
    if len(data) > limit:
        raise _too_large(file.name, len(data), limit, lang)
    path = folder / uuid.uuid4().hex / upload_name(file.name)

    def write() -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            path.write_bytes(data)
        except BaseException:
            _remove([path])
            raise

    await asyncio.to_thread(write)
    return path


def _too_large(name: str, size: int, limit: int, lang: str) -> UserFacingError:
    # The person hears the limit and who can raise it; the operator reads here which setting that is.
    log.info("ingest=refused reason=too_large file=%s size=%d limit=%d setting=INGEST_MAX_FILE_MB", name, size, limit)
    return UserFacingError(messages.file_too_large(name, size, limit, lang))


def default_registry() -> CommandRegistry:
    """The registry with every built-in command."""
    registry = CommandRegistry()
    register_all(registry)
    register_stats(registry)
    return registry
