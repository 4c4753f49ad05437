"""Bolt's authorization for one bot token: its auth.test asked once, and a Slack that cannot answer it fails the
delivery, so that Slack sends it again, instead of acknowledging an event that no one handles."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from slack_bolt.authorization import AuthorizeResult
from slack_bolt.authorization.async_authorize import AsyncAuthorize
from slack_bolt.context.async_context import AsyncBoltContext
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.web.async_slack_response import AsyncSlackResponse

from adapters.slack.calls import call
from bot.errors import DeliveryFailed


class SingleTokenAuthorize(AsyncAuthorize):
    """Authorizes every request with the one bot token, from its auth.test answer (asked on the first request that
    needs it, or given by `remember`).

    Bolt's own single-token authorization answers a failed auth.test with HTTP 200 and an apology: a delivery that
    meets Slack down or rate limited (a 5xx, a 429) right after a start is acknowledged and lost. Here that failure
    propagates, Bolt answers 500, and Slack delivers the event again. A token Slack refuses still gets Bolt's apology.
    """

    def __init__(self, token: str, client: Callable[[str], AsyncWebClient]) -> None:
        self._token = token
        self._client = client
        self._identity: AsyncSlackResponse | None = None
        self._asking = asyncio.Lock()

    def remember(self, identity: AsyncSlackResponse) -> None:
        """Keep an auth.test answer for this token (the adapter asked at start)."""
        self._identity = identity

    async def __call__(
        self,
        *,
        context: AsyncBoltContext,
        enterprise_id: str | None,
        team_id: str | None,
        user_id: str | None,
        actor_enterprise_id: str | None = None,
        actor_team_id: str | None = None,
        actor_user_id: str | None = None,
    ) -> AuthorizeResult | None:
        """The token's AuthorizeResult; None when Slack refuses the token; PlatformError when Slack cannot answer."""
        identity = await self._identify()
        if identity is None:
            return None
        return AuthorizeResult.from_auth_test_response(bot_token=self._token, auth_test_response=identity)

    async def _identify(self) -> AsyncSlackResponse | None:
        async with self._asking:  # requests arriving together ask once
            if self._identity is None:
                try:
                    self._identity = await call(self._client(self._token).auth_test())
                except DeliveryFailed:  # invalid_auth, token_revoked, ...: the token will not work, now or later
                    return None
            return self._identity
