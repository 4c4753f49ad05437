"""Chat commands: parsing `/name args`, one registry with each command's rights and forms, and dispatch.

Registration names a command, its rights and its forms; what they are called and how they are written comes from
the catalogues (`help.<name>`, `usage.<name>.<form>`), the one source of every text a person reads.
"""

from __future__ import annotations

import difflib
import logging
import re
import shlex
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from bot.commands.parts import ChatControl, CommandParts
from bot.errors import UserFacingError
from bot.ports import ReplyTarget
from bot.reply.deliver import deliver_text
from bot.types import SLASH_COMMANDS, Command, CommandStyle, IncomingMessage
from bot.words import messages
from bot.words.catalogue import catalogue

log = logging.getLogger(__name__)

# How alike a mistyped word and a command must be to suggest it (difflib's ratio: "jbos" and "jobs" are 0.75).
_SUGGEST_CUTOFF = 0.75
_COMMAND = re.compile(r"^/(?P<name>[A-Za-z][A-Za-z0-9_]{0,31})(?:@(?P<bot>[A-Za-z0-9_]+))?(?=\s|$)")


def parse_command(text: str, bot_username: str = "") -> Command | None:
    """`/name args…` as a Command (quoted arguments kept whole); None for text that is no command.

    `/cmd@otherbot` is another bot's command in a group, so it is no command of ours either. A command whose
    arguments cannot be read (an unclosed quote) carries the reason in `error`, for dispatch to reply with.
    """
    stripped = text.strip()
    match = _COMMAND.match(stripped)
    if match is None:
        return None
    addressed_to = match.group("bot")
    if addressed_to and bot_username and addressed_to.lower() != bot_username.lower():
        return None
    rest = stripped[match.end() :].strip()
    name = match.group("name").lower()
    try:
        args = tuple(shlex.split(_straight_quotes(rest))) if rest else ()
    except ValueError:
        return Command(name=name, raw=rest, error="command.unclosed_quote")
    return Command(name=name, args=args, raw=rest)


_CURLY_QUOTES: dict[int, str] = {0x201C: '"', 0x201D: '"', 0x2018: "'", 0x2019: "'"}


def _straight_quotes(text: str) -> str:
    # Phones type curly quotes; shlex only knows straight ones.
    return text.translate(_CURLY_QUOTES)


Handler = Callable[["CommandContext"], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class Asker:
    """Who runs a command, and where: what decides which forms of it they may run, and so are shown."""

    is_admin: bool
    private: bool = True
    # The platform lets its chats read only some knowledge bases (the web chat's WEB_KNOWLEDGE_BASES).
    kb_limited: bool = False
    # How the platform writes commands, and whether they can carry files there.
    style: CommandStyle = SLASH_COMMANDS


Permit = Callable[[Asker], bool]
"""Whether a person may run a form of a command (beyond the command's own admin flag)."""


def anyone(asker: Asker) -> bool:
    """Every person who may run the command may run this form."""
    return True


@dataclass(frozen=True, slots=True)
class Form:
    """One way of writing a command (`/kb use NAME`): the words after its name, and who may run it.

    `key` names the form in the catalogue (`usage.<command>.<key>`); "" is the command alone. A `literal` key is
    itself the words after the name, the same in every language (`/mode all`, `/lang zh`). Help and usage show a
    person only the forms `may` lets them run (the handler checks the same `may`), and a form with `files` only
    where commands can carry files.
    """

    key: str = ""
    literal: bool = False
    may: Permit = anyone
    files: bool = False


@dataclass(frozen=True, slots=True)
class CommandSpec:
    """A registered command: its name, whether only admins may run it, and its forms (help and usage: catalogue).

    An unlisted command (Telegram's `/start`) runs like any other but is left out of help and menus.
    """

    name: str
    admin: bool
    forms: tuple[Form, ...]
    handler: Handler
    listed: bool = True


@dataclass(frozen=True, slots=True)
class CommandContext:
    """What a command handler works with: the message, its parsed command, where to reply, its chat, the parts.

    `lang` is the language code (bot.words) its replies are written in.
    """

    message: IncomingMessage
    command: Command
    target: ReplyTarget
    chat: ChatControl
    parts: CommandParts
    registry: CommandRegistry
    asker: Asker
    lang: str

    @property
    def is_admin(self) -> bool:
        """Whether the person administers ragbot on this platform."""
        return self.asker.is_admin

    @property
    def style(self) -> CommandStyle:
        """How the platform writes commands: what replies that name a command say."""
        return self.message.style

    async def reply(self, text: str) -> None:
        """Send `text` (Markdown) as a reply in the chat."""
        await deliver_text(self.target, text)

    def usage_error(self, *keys: str) -> UserFacingError:
        """The reply to a form written wrong: how the command (its forms of `keys`, or all) is written."""
        usage = self.registry.usage(self.command.name, self.lang, self.asker, keys=keys or None)
        return UserFacingError(messages.usage(usage, self.lang))


class CommandRegistry:
    """The commands, the same on every platform; `register` only records, `match` is pure."""

    def __init__(self) -> None:
        self._specs: dict[str, CommandSpec] = {}

    def register(
        self, name: str, *, admin: bool, forms: Sequence[Form] = (Form(),), listed: bool = True
    ) -> Callable[[Handler], Handler]:
        """Decorator: record `handler` as the command `name`, written in `forms`."""

        def record(handler: Handler) -> Handler:
            self._specs[name] = CommandSpec(name, admin, tuple(forms), handler, listed)
            return handler

        return record

    def match(self, message: IncomingMessage) -> CommandSpec | None:
        """The registered command the message carries, if any."""
        return self._specs.get(message.command.name) if message.command is not None else None

    def visible_to(self, asker: Asker) -> list[CommandSpec]:
        """The commands a person may run (in some form), in registration order: what /help and menus list."""
        return [spec for spec in self._specs.values() if spec.listed and self.forms_for(spec, asker)]

    def forms_for(self, spec: CommandSpec, asker: Asker) -> list[Form]:
        """The forms of a command this person may run, written as their platform can."""
        return [form for form in self._permitted(spec, asker) if asker.style.attachments or not form.files]

    def _permitted(self, spec: CommandSpec, asker: Asker) -> list[Form]:
        if spec.admin and not asker.is_admin:
            return []
        return [form for form in spec.forms if form.may(asker)]

    def usage(self, name: str, lang: str, asker: Asker, *, keys: Sequence[str] | None = None) -> str:
        """How the command `name` is written in `lang`: each form this person may run (of `keys` when given)."""
        spec = self._specs[name]
        forms = [form for form in self.forms_for(spec, asker) if keys is None or form.key in keys]
        return " | ".join(_written(name, form, asker.style, lang) for form in forms or spec.forms)

    def suggest(self, word: str, asker: Asker) -> str | None:
        """The command this person may run that `word` is likely a typo of, as their platform writes it.

        Where one command's forms follow the slash command alone (Slack's `/kb list`), its forms count as commands.
        """
        written: dict[str, str] = {}
        for spec in self.visible_to(asker):
            if spec.name == asker.style.bare:
                for form in self.forms_for(spec, asker):
                    if form.key:
                        written[form.key] = asker.style.written(f"{spec.name} {form.key}")
            else:
                written[spec.name] = asker.style.written(spec.name)
        close = difflib.get_close_matches(word.lower(), list(written), n=1, cutoff=_SUGGEST_CUTOFF)
        return written[close[0]] if close else None

    def help(self, asker: Asker, lang: str, *, intro: str = "") -> str:
        """The /help reply in `lang`: each command this person may run, with its forms and one-line help.

        Where commands carry no files but the person may add some, the platform's note says how files reach the bot.
        """
        lines = [
            (self.usage(spec.name, lang, asker), messages.command_help(spec.name, lang))
            for spec in self.visible_to(asker)
        ]
        adds_files = any(form.files for spec in self._specs.values() for form in self._permitted(spec, asker))
        note = messages.files_note(lang, asker.style) if adds_files and not asker.style.attachments else ""
        return messages.help_text(lines, lang, intro=intro, note=note)

    async def dispatch(
        self,
        chat: ChatControl,
        parts: CommandParts,
        message: IncomingMessage,
        target: ReplyTarget,
        *,
        lang: str,
        is_admin: bool,
    ) -> None:
        """Run the message's command, replying in `lang`; unknown commands and missing rights get a clear reply."""
        assert message.command is not None
        spec = self.match(message)
        asker = Asker(is_admin, message.private, chat.allowed_kbs(message.key.platform) is not None, message.style)
        if spec is None:
            name = message.command.name
            suggestion = self.suggest(name, asker) or ""
            await deliver_text(target, messages.unknown_command(name, lang, message.style, suggestion=suggestion))
            return
        if spec.admin and not is_admin:
            log.info("command=refused name=%s user=%s", spec.name, message.user.id)
            # A file sent to the bot is not a command its sender typed: say what they may not do in their terms.
            if message.command.implied:
                await deliver_text(target, messages.files_admins_only(lang))
            else:
                await deliver_text(target, messages.admins_only(spec.name, lang, message.style))
            return
        if message.command.error:
            how = messages.usage(self.usage(spec.name, lang, asker), lang)
            await deliver_text(target, f"{catalogue(lang).text(message.command.error)} {how}")
            return
        context = CommandContext(message, message.command, target, chat, parts, self, asker, lang)
        try:
            await spec.handler(context)
        except UserFacingError as exc:
            await deliver_text(target, messages.user_message(exc, lang))
        except Exception:
            # The command boundary is a turn boundary too: log it, apologise, keep serving.
            log.exception("command=failed name=%s", spec.name)
            await deliver_text(target, messages.turn_failed(lang))


def _written(name: str, form: Form, style: CommandStyle, lang: str) -> str:
    command = style.written(name)
    if not form.key:
        return command
    return f"{command} {form.key}" if form.literal else messages.form_usage(name, form.key, command, lang)
