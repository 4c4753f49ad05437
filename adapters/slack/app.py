"""The Slack adapter: slack-bolt on ragbot's aiohttp server (or Socket Mode), into the conversation manager."""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from aiohttp import web
from slack_bolt.adapter.aiohttp import to_aiohttp_response, to_bolt_request
from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_bolt.async_app import AsyncApp
from slack_bolt.context.async_context import AsyncBoltContext
from slack_bolt.oauth.async_oauth_settings import AsyncOAuthSettings
from slack_bolt.response import BoltResponse
from slack_sdk.oauth.installation_store import Installation
from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack.budget import Pacer
from adapters.slack.files import download
from adapters.slack.history import import_thread
from adapters.slack.render import FEEDBACK_ACTION, parse_feedback
from adapters.slack.reply import ResponseTarget, SlackTarget, call, unreachable_notice
from adapters.slack.stores import DatabaseInstallationStore, DatabaseOAuthStateStore
from adapters.slack.translate import (
    PLATFORM,
    Notice,
    Place,
    conversation_key,
    is_person_speaking,
    mentions,
    place,
    plain_text,
    slash_command,
    translate,
    workspace_id,
)
from bot import messages
from bot.conversation import ConversationManager, deliver_text
from bot.errors import DeliveryFailed, PlatformError
from bot.ports import Adapter, ReplyTarget
from bot.settings import Settings
from bot.types import IncomingMessage, UserRef

log = logging.getLogger(__name__)

EVENTS_PATH: Final = "/slack/events"
INSTALL_PATH: Final = "/slack/install"
REDIRECT_PATH: Final = "/slack/oauth_redirect"
# Exactly the bot scopes in manifest.yaml (a test keeps the two equal).
BOT_SCOPES: Final = (
    "app_mentions:read",
    "channels:history",
    "chat:write",
    "commands",
    "files:read",
    "groups:history",
    "im:history",
)
# Slack retries a delivery up to 3 times over about 5 minutes; ids are remembered well past the last one.
_SEEN_TTL: Final = 600.0
_SEEN_MAX: Final = 10_000
_INSTALLER_TTL: Final = 60.0
_STOP_GRACE: Final = 30.0


@dataclass(frozen=True, slots=True)
class SlackConfig:
    """The Slack settings."""

    bot_token: str | None
    signing_secret: str | None
    app_token: str | None
    admins: frozenset[str]
    command: str
    native_streaming: bool
    base_url: str | None
    client_id: str | None
    client_secret: str | None
    redirect_url: str | None
    download_limit: int

    @property
    def oauth(self) -> bool:
        """Many workspaces, installed through /slack/install."""
        return self.client_id is not None and self.client_secret is not None


class SlackAdapter:
    """Receives events and commands through Bolt, answers through the conversation manager."""

    name = PLATFORM

    def __init__(
        self, manager: ConversationManager, config: SlackConfig, *, clock: Callable[[], float] = time.monotonic
    ):
        self._manager = manager
        self._config = config
        self._clock = clock
        self._pacer = Pacer()
        self._seen: OrderedDict[str, float] = OrderedDict()
        self._installers: dict[str, tuple[float, str]] = {}
        self._work: set[asyncio.Task[Any]] = set()
        self._socket: AsyncSocketModeHandler | None = None
        self._installations: DatabaseInstallationStore | None = None
        if config.oauth:
            assert config.client_id is not None
            assert config.client_secret is not None
            repo = manager.services.slack_installs
            self._installations = DatabaseInstallationStore(repo, client_id=config.client_id)
            self.app = AsyncApp(
                client=self._client(None),
                signing_secret=config.signing_secret,
                installation_store=self._installations,
                installation_store_bot_only=True,
                oauth_settings=AsyncOAuthSettings(
                    client_id=config.client_id,
                    client_secret=config.client_secret,
                    scopes=list(BOT_SCOPES),
                    user_scopes=[],
                    redirect_uri=config.redirect_url,
                    install_path=INSTALL_PATH,
                    redirect_uri_path=REDIRECT_PATH,
                    installation_store=self._installations,
                    installation_store_bot_only=True,
                    state_store=DatabaseOAuthStateStore(repo),
                ),
            )
            self.app.enable_token_revocation_listeners()
        else:
            self.app = AsyncApp(
                client=self._client(config.bot_token),
                signing_secret=config.signing_secret,
            )
        self.app.use(self._first_delivery)
        self.app.event("app_mention")(self._on_mention)
        self.app.event("message")(self._on_message)
        self.app.command(config.command)(self._on_command)
        self.app.action(FEEDBACK_ACTION)(self._on_feedback)
        if not config.oauth:
            self.app.event("app_uninstalled")(self._on_uninstalled)
            self.app.event("tokens_revoked")(self._on_uninstalled)

    # Lifecycle.

    def mount(self, app: web.Application) -> None:
        """The Events API endpoint (HTTP mode) and the install pages (OAuth)."""
        if self._config.app_token is None:
            app.router.add_post(EVENTS_PATH, self.events)
        if self._config.oauth:
            app.router.add_get(INSTALL_PATH, self._oauth_page)
            app.router.add_get(REDIRECT_PATH, self._oauth_page)

    async def start(self) -> None:
        """Check the token (a bad one is logged, not fatal), then connect Socket Mode if configured."""
        if self._config.bot_token:
            await self._check_token(self._config.bot_token)
        if self._config.app_token is not None:
            self._socket = AsyncSocketModeHandler(self.app, self._config.app_token)
            await self._socket.connect_async()  # type: ignore[no-untyped-call]
            log.info("slack=socket_mode connected")
        else:
            log.info("slack=events path=%s", EVENTS_PATH)

    async def stop(self) -> None:
        """Stop receiving; answers in flight get a grace period to finish."""
        if self._socket is not None:
            await self._socket.close_async()  # type: ignore[no-untyped-call]
        if self._work:
            await asyncio.wait(set(self._work), timeout=_STOP_GRACE)

    async def _check_token(self, token: str) -> None:
        client = self._client(token)
        try:
            identity = await call(client.auth_test())
        except PlatformError as exc:
            log.error("slack=token_refused reason=%s: check SLACK_BOT_TOKEN (reinstall the app for a new one)", exc)
            return
        log.info("slack=ready team=%s bot=%s", identity.get("team_id"), identity.get("user_id"))
        if self._installations is not None:
            await self._installations.async_save(
                Installation(
                    enterprise_id=identity.get("enterprise_id") or None,
                    team_id=identity.get("team_id"),
                    bot_token=token,
                    bot_id=identity.get("bot_id"),
                    bot_user_id=identity.get("user_id"),
                    bot_scopes=list(BOT_SCOPES),
                    user_id="",
                )
            )

    def _client(self, token: str | None) -> AsyncWebClient:
        if self._config.base_url:
            return AsyncWebClient(token=token, base_url=self._config.base_url)
        return AsyncWebClient(token=token)

    # HTTP.

    async def events(self, request: web.Request) -> web.Response:
        """Events, commands and button clicks: signature checked by Bolt, acknowledged within 3 s."""
        bolt_response = await self.app.async_dispatch(await to_bolt_request(request))
        return await to_aiohttp_response(bolt_response)

    async def _oauth_page(self, request: web.Request) -> web.Response:
        flow = self.app.oauth_flow
        assert flow is not None
        bolt_request = await to_bolt_request(request)
        if request.path == INSTALL_PATH:
            return await to_aiohttp_response(await flow.handle_installation(bolt_request))
        return await to_aiohttp_response(await flow.handle_callback(bolt_request))

    async def _first_delivery(
        self, body: Mapping[str, Any], next_: Callable[[], Awaitable[None]]
    ) -> BoltResponse | None:
        """Bolt does not drop Slack's retries: an event id seen before is acknowledged and not handled again."""
        event_id = body.get("event_id") if isinstance(body, Mapping) else None
        if isinstance(event_id, str) and event_id:
            now = self._clock()
            while self._seen and next(iter(self._seen.values())) < now - _SEEN_TTL:
                self._seen.popitem(last=False)
            if event_id in self._seen:
                log.info("slack=duplicate event=%s", event_id)
                return BoltResponse(status=200, body="")
            self._seen[event_id] = now
            while len(self._seen) > _SEEN_MAX:
                self._seen.popitem(last=False)
        await next_()
        return None

    # Events.

    async def _on_mention(self, event: dict[str, Any], context: AsyncBoltContext) -> None:
        where = place(event, self._workspace(context))
        if where.private:
            return  # a mention in a DM also arrives as the DM message, answered there
        await self._tracked(self._answer(event, where, context, continuing=False))

    async def _on_message(self, event: dict[str, Any], context: AsyncBoltContext) -> None:
        if not is_person_speaking(event):
            return
        where = place(event, self._workspace(context))
        if not where.private:
            if mentions(str(event.get("text") or ""), context.bot_user_id or ""):
                return  # the app_mention event answers it
            in_thread = bool(event.get("thread_ts")) and event.get("thread_ts") != event.get("ts")
            if not in_thread or not await self._manager.known(conversation_key(where)):
                return  # channel chatter: only mentions and threads ragbot answers in are for it
        await self._tracked(self._answer(event, where, context, continuing=True))

    async def _answer(
        self, event: Mapping[str, Any], where: Place, context: AsyncBoltContext, *, continuing: bool
    ) -> None:
        client = context.client
        assert client is not None
        bot_user_id = context.bot_user_id or ""
        user = str(event.get("user") or "")
        if not continuing and event.get("thread_ts") and event.get("thread_ts") != event.get("ts"):
            key = conversation_key(where)
            if not await self._manager.known(key):
                await import_thread(self._manager, self._pacer, client, key, event, bot_user_id)

        async def read(entry: Mapping[str, Any]) -> bytes:
            return await download(client, entry, self._config.download_limit)

        translated = translate(
            event,
            where,
            bot_user_id=bot_user_id,
            continuing=continuing,
            read=read,
            verified_admin=await self._installed_by(where.workspace, user, context),
        )
        if translated is None:
            return
        target = self._target(client, where, user, str(event.get("team") or context.team_id or ""))
        if isinstance(translated, Notice):
            await self._notify(target, translated.text)
            return
        await self._manager.handle(translated, target)

    def _target(self, client: AsyncWebClient, where: Place, user: str, team: str) -> SlackTarget:
        return SlackTarget(
            client,
            where.channel,
            where.reply_thread,
            workspace=where.workspace,
            pacer=self._pacer,
            observer=self._manager.metrics.observer(PLATFORM),
            recipient_user=user,
            recipient_team=team,
            native=self._config.native_streaming,
        )

    async def _notify(self, target: ReplyTarget, text: str) -> None:
        try:
            await deliver_text(target, text)
        except PlatformError as exc:
            log.warning("slack=notice_failed reason=%s", exc)

    async def _on_uninstalled(self, event: dict[str, Any], context: AsyncBoltContext) -> None:
        log.warning(
            "slack=%s team=%s: the single-workspace token no longer works; reinstall the app",
            event.get("type"),
            context.team_id,
        )

    # Slash command and buttons.

    async def _on_command(
        self, ack: Callable[..., Awaitable[None]], command: dict[str, Any], respond: Any, context: AsyncBoltContext
    ) -> None:
        await ack()
        await self._tracked(self._command(command, respond, context))

    async def _command(self, command: Mapping[str, Any], respond: Any, context: AsyncBoltContext) -> None:
        workspace = self._workspace(context)
        channel = str(command.get("channel_id") or "")
        user_id = str(command.get("user_id") or "")
        text = plain_text(str(command.get("text") or ""), "")
        user = UserRef(
            user_id,
            str(command.get("user_name") or ""),
            verified_admin=await self._installed_by(workspace, user_id, context),
        )
        private = channel.startswith("D")
        parsed = slash_command(text, frozenset(spec.name for spec in self._manager.commands.visible_to(True)))
        if parsed is not None:
            where = Place(workspace, channel, "", private)
            message = IncomingMessage(
                key=conversation_key(where), message_id="", user=user, text=text, command=parsed, private=private
            )
            await self._manager.handle(message, ResponseTarget(respond))
            return
        await self._ask(command, respond, context, Place(workspace, channel, "", private), user, text)

    async def _ask(
        self,
        command: Mapping[str, Any],
        respond: Any,
        context: AsyncBoltContext,
        where: Place,
        user: UserRef,
        text: str,
    ) -> None:
        """A question asked with the slash command: posted in the channel, answered in its thread."""
        client = context.client
        assert client is not None
        try:
            posted = await call(
                client.chat_postMessage(channel=where.channel, text=messages.slack_asked(user.id, text))
            )
        except DeliveryFailed as exc:
            await self._notify(ResponseTarget(respond), unreachable_notice(str(exc)) or messages.SLACK_NOT_IN_CHANNEL)
            return
        except PlatformError as exc:
            log.warning("slack=question_not_posted reason=%s", exc)
            await self._notify(ResponseTarget(respond), messages.TURN_FAILED)
            return
        thread = str(posted["ts"])
        where = Place(where.workspace, where.channel, thread, where.private)
        message = IncomingMessage(
            key=conversation_key(where), message_id=thread, user=user, text=text, private=where.private, raw=command
        )
        target = self._target(client, where, user.id, str(command.get("team_id") or context.team_id or ""))
        await self._manager.handle(message, target)

    async def _on_feedback(
        self,
        ack: Callable[..., Awaitable[None]],
        body: dict[str, Any],
        action: dict[str, Any],
        respond: Any,
        context: AsyncBoltContext,
    ) -> None:
        await ack()
        parsed = parse_feedback(str(action.get("value") or ""))
        container = body.get("container") or {}
        message = body.get("message") or {}
        channel = str((body.get("channel") or {}).get("id") or container.get("channel_id") or "")
        thread = str(message.get("thread_ts") or container.get("thread_ts") or message.get("ts") or "")
        stored = False
        if parsed is not None and channel:
            where = Place(self._workspace(context), channel, thread, channel.startswith("D"))
            stored = await self._manager.feedback(conversation_key(where), parsed[1], parsed[0])
        try:
            await respond(
                text=messages.FEEDBACK_THANKS if stored else messages.FEEDBACK_GONE,
                response_type="ephemeral",
                replace_original=False,
            )
        except Exception as exc:  # a lost "thanks" must not look like a failed turn
            log.warning("slack=feedback_ack_failed reason=%r", exc)

    # Helpers.

    def _workspace(self, context: AsyncBoltContext) -> str:
        return workspace_id(context.team_id, context.enterprise_id)

    async def _installed_by(self, workspace: str, user_id: str, context: AsyncBoltContext) -> bool:
        """Whether `user_id` installed the app in this workspace (an admin there without being listed)."""
        if self._installations is None or not user_id:
            return False
        cached = self._installers.get(workspace)
        if cached is None or self._clock() - cached[0] > _INSTALLER_TTL:
            found = await self._installations.async_find_installation(
                enterprise_id=context.enterprise_id, team_id=context.team_id
            )
            installer = found.user_id if found is not None else ""
            cached = self._installers[workspace] = (self._clock(), installer or "")
        return bool(cached[1]) and cached[1] == user_id

    async def _tracked(self, work: Awaitable[None]) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._work.add(task)
        try:
            await work
        finally:
            if task is not None:
                self._work.discard(task)


def create(manager: ConversationManager, settings: Settings) -> Adapter | None:
    """The `ragbot.adapters` entry point: on when SLACK_BOT_TOKEN (or SLACK_CLIENT_ID for installs) is set."""
    oauth = settings.SLACK_CLIENT_ID is not None and settings.SLACK_CLIENT_SECRET is not None
    if settings.SLACK_BOT_TOKEN is None and not oauth:
        return None

    def secret(value: Any) -> str | None:
        return value.get_secret_value() if value is not None else None

    config = SlackConfig(
        bot_token=secret(settings.SLACK_BOT_TOKEN),
        signing_secret=secret(settings.SLACK_SIGNING_SECRET),
        app_token=secret(settings.SLACK_APP_TOKEN),
        admins=settings.slack_admins(),
        command=settings.SLACK_COMMAND,
        native_streaming=settings.SLACK_STREAMING == "native",
        base_url=settings.SLACK_API_BASE_URL,
        client_id=settings.SLACK_CLIENT_ID,
        client_secret=secret(settings.SLACK_CLIENT_SECRET),
        redirect_url=settings.SLACK_REDIRECT_URL,
        download_limit=settings.ingestion_limits().max_file_bytes,
    )
    return SlackAdapter(manager, config)
