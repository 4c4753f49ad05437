"""The Slack adapter: slack-bolt on ragbot's aiohttp server (or Socket Mode), into the conversation manager."""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final

from aiohttp import web
from slack_bolt.adapter.aiohttp import to_aiohttp_response, to_bolt_request
from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_bolt.async_app import AsyncApp
from slack_bolt.oauth.async_oauth_settings import AsyncOAuthSettings
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_bolt.response import BoltResponse
from slack_sdk.oauth.installation_store import Installation
from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack.authorize import SingleTokenAuthorize
from adapters.slack.calls import call
from adapters.slack.config import SlackConfig
from adapters.slack.listeners import SlackListeners
from adapters.slack.reasons import REASON_ACTION, REASON_VIEW, ReasonListeners
from adapters.slack.render import FEEDBACK_ACTION
from adapters.slack.settings import SlackSettings
from adapters.slack.stores import DatabaseInstallationStore, DatabaseOAuthStateStore
from adapters.slack.translate import PLATFORM, Place
from bot.app.settings import Settings
from bot.chat.manager import ConversationManager
from bot.chat.popular import PopularQuestions
from bot.errors import PlatformError
from bot.ports import Adapter, ReplyTarget
from bot.types import ConversationKey
from storage.db import Database
from storage.records import MessageRecord
from storage.repos.answer_meta import AnswerMetaRepo
from storage.repos.faqs import FaqRepo
from storage.repos.slack_installs import SlackInstallRepo
from storage.secret_box import KeyRing, SecretBox

log = logging.getLogger(__name__)

EVENTS_PATH: Final = "/slack/events"
INSTALL_PATH: Final = "/slack/install"
REDIRECT_PATH: Final = "/slack/oauth_redirect"
# Exactly the bot scopes in manifest.yaml (a test keeps the two equal).
BOT_SCOPES: Final = (
    "app_mentions:read",
    "assistant:write",
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
# Bolt takes a signed request whose timestamp is within 300 s of now, either side: a copy of one could be sent
# again until 600 s after it was first seen.
_SIGNATURE_TTL: Final = 600.0
_STOP_GRACE: Final = 30.0


class SlackAdapter:
    """Receives events and commands through Bolt, answers through the conversation manager."""

    name = PLATFORM

    def __init__(
        self,
        manager: ConversationManager,
        config: SlackConfig,
        installs: SlackInstallRepo,
        popular: PopularQuestions,
        *,
        clock: Callable[[], float] = time.monotonic,
    ):
        self._manager = manager
        self._config = config
        self._clock = clock
        self._seen: OrderedDict[str, float] = OrderedDict()
        self._signatures: OrderedDict[str, float] = OrderedDict()
        self._socket: AsyncSocketModeHandler | None = None
        self._installations: DatabaseInstallationStore | None = None
        self._authorize: SingleTokenAuthorize | None = None
        if config.oauth:
            assert config.client_id is not None
            assert config.client_secret is not None
            self._installations = DatabaseInstallationStore(installs, client_id=config.client_id)
            self.app = AsyncApp(
                client=self._client(None),
                signing_secret=config.signing_secret,
                process_before_response=True,  # "received" once the question is stored: listeners.py
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
                    state_store=DatabaseOAuthStateStore(installs),
                ),
            )
            self.app.enable_token_revocation_listeners()
        else:
            assert config.bot_token is not None
            self._authorize = SingleTokenAuthorize(config.bot_token, self._client)
            self.app = AsyncApp(
                client=self._client(None),  # a client without the token: Bolt authorizes through `authorize`
                signing_secret=config.signing_secret,
                process_before_response=True,
                # Bolt takes an AsyncAuthorize as it is; its hint names only plain functions, which never return None.
                authorize=self._authorize,  # type: ignore[arg-type]
            )
        listeners = self._listeners = SlackListeners(manager, config, self._installations, popular, clock=clock)
        self.app.use(self._not_replayed)
        self.app.use(self._first_delivery)
        self.app.event("app_mention")(listeners.on_mention)
        self.app.event("message")(listeners.on_message)
        self.app.command(config.command)(listeners.on_command)
        self.app.action(FEEDBACK_ACTION)(listeners.on_feedback)
        reasons = ReasonListeners(manager)
        self.app.action(REASON_ACTION)(reasons.on_ask_why)
        self.app.view(REASON_VIEW)(reasons.on_submit)
        self.app.event("app_home_opened")(listeners.agent.on_home_opened)
        self.app.event("assistant_thread_started")(listeners.agent.on_thread_started)
        self.app.event("assistant_thread_context_changed")(listeners.agent.on_context_changed)
        if not config.oauth:
            self.app.event("app_uninstalled")(listeners.on_uninstalled)
            self.app.event("tokens_revoked")(listeners.on_uninstalled)
        manager.resume_on(PLATFORM, self._resume_target)

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
        if self._listeners.work:
            await asyncio.wait(set(self._listeners.work), timeout=_STOP_GRACE)

    async def _check_token(self, token: str) -> None:
        client = self._client(token)
        try:
            identity = await call(client.auth_test())
        except PlatformError as exc:
            log.error("slack=token_refused reason=%s: check SLACK_BOT_TOKEN (reinstall the app for a new one)", exc)
            return
        log.info("slack=ready team=%s bot=%s", identity.get("team_id"), identity.get("user_id"))
        if self._authorize is not None:
            self._authorize.remember(identity)
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

    async def _resume_target(self, key: ConversationKey, question: MessageRecord) -> ReplyTarget | None:
        """Where a dead process's answer is finished: a new message in its thread (or DM), with the workspace's
        token; None when this process holds none for that workspace."""
        enterprise, _, team = key.workspace.rpartition("/")
        token = await self._bot_token(enterprise, team)
        if token is None:
            return None
        where = Place(key.workspace, key.chat, key.thread, private=key.chat.startswith("D"))
        lang = await self._manager.language(key, question.text)
        return self._listeners.target(self._client(token), where, question.author, team, lang)

    async def _bot_token(self, enterprise: str, team: str) -> str | None:
        if self._installations is None:
            return self._config.bot_token
        bot = await self._installations.async_find_bot(enterprise_id=enterprise or None, team_id=team)
        return bot.bot_token if bot is not None else None

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

    async def _not_replayed(self, req: AsyncBoltRequest, next_: Callable[[], Awaitable[None]]) -> BoltResponse | None:
        """A signed request seen before (a copy sent again: a command, a click, an event) is acknowledged and not
        handled again. Bolt checked its signature and age already; events are also told apart by their id below."""
        signature = req.headers.get("x-slack-signature", [""])[0] if req.mode == "http" else ""
        if signature and _remember(self._signatures, signature, self._clock(), _SIGNATURE_TTL):
            log.warning("slack=replayed_request refused")
            return BoltResponse(status=200, body="")
        await next_()
        return None

    async def _first_delivery(
        self, body: Mapping[str, Any], next_: Callable[[], Awaitable[None]]
    ) -> BoltResponse | None:
        """Bolt does not drop Slack's retries: an event id seen before is acknowledged and not handled again."""
        event_id = body.get("event_id") if isinstance(body, Mapping) else None
        if isinstance(event_id, str) and event_id and _remember(self._seen, event_id, self._clock(), _SEEN_TTL):
            log.info("slack=duplicate event=%s", event_id)
            return BoltResponse(status=200, body="")
        await next_()
        return None


def _remember(seen: OrderedDict[str, float], key: str, now: float, ttl: float) -> bool:
    """Whether `key` was seen within `ttl`; it is remembered from now on (the oldest forgotten past _SEEN_MAX)."""
    while seen and next(iter(seen.values())) < now - ttl:
        seen.popitem(last=False)
    if key in seen:
        return True
    seen[key] = now
    while len(seen) > _SEEN_MAX:
        seen.popitem(last=False)
    return False


def create(manager: ConversationManager, settings: Settings, database: Database) -> Adapter | None:
    """The `ragbot.adapters` entry point: on when SLACK_BOT_TOKEN (or SLACK_CLIENT_ID for installs) is set."""
    slack = SlackSettings.of(settings)
    if slack.SLACK_BOT_TOKEN is None and not slack.oauth:
        return None

    def secret(value: Any) -> str | None:
        return value.get_secret_value() if value is not None else None

    config = SlackConfig(
        bot_token=secret(slack.SLACK_BOT_TOKEN),
        signing_secret=secret(slack.SLACK_SIGNING_SECRET),
        app_token=secret(slack.SLACK_APP_TOKEN),
        admins=slack.admins(),
        command=slack.SLACK_COMMAND,
        native_streaming=slack.SLACK_STREAMING == "native",
        base_url=slack.SLACK_API_BASE_URL,
        client_id=slack.SLACK_CLIENT_ID,
        client_secret=secret(slack.SLACK_CLIENT_SECRET),
        redirect_url=slack.SLACK_REDIRECT_URL,
        download_limit=settings.ingestion_limits().max_file_bytes,
    )
    installs = SlackInstallRepo(database, box=SecretBox(KeyRing.at(settings.secrets_key_file())))
    return SlackAdapter(manager, config, installs, PopularQuestions(FaqRepo(database), AnswerMetaRepo(database)))
