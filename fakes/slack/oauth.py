"""OAuth installs: a code registered by a test, exchanged once by oauth.v2.access for the install's bot token."""

from __future__ import annotations

import base64
import binascii

from fakes.base import Json
from fakes.slack.records import OAuthCode
from fakes.slack.state import SlackState
from fakes.slack.wire import Ctx, SlackError, opt


class OAuth(SlackState):
    """FakeSlackAPI's OAuth v2: codes to exchange, checked as Slack checks client id, secret and redirect URI."""

    def register_oauth_code(
        self,
        code: str,
        *,
        client_id: str,
        client_secret: str,
        team_id: str,
        team_name: str,
        installer_user_id: str,
        bot_token: str,
        bot_user_id: str,
        bot_id: str,
        scope: str,
        enterprise_id: str | None = None,
        redirect_uri: str | None = None,
    ) -> None:
        """An OAuth code that oauth.v2.access exchanges once; the install's bot token works from now on."""
        self.add_workspace(
            team_id,
            bot_token=bot_token,
            bot_user_id=bot_user_id,
            bot_id=bot_id,
            team_name=team_name,
            enterprise_id=enterprise_id,
        )
        answer: Json = {
            "app_id": self.app_id,
            "authed_user": {"id": installer_user_id},
            "scope": scope,
            "token_type": "bot",
            "access_token": bot_token,
            "bot_user_id": bot_user_id,
            "team": {"id": team_id, "name": team_name},
            "enterprise": None if enterprise_id is None else {"id": enterprise_id, "name": enterprise_id},
            "is_enterprise_install": False,
        }
        self._codes[code] = OAuthCode(client_id, client_secret, redirect_uri, answer)

    async def _oauth_access(self, ctx: Ctx) -> Json:
        client_id, client_secret = opt(ctx.params, "client_id"), opt(ctx.params, "client_secret")
        if ctx.authorization.startswith("Basic "):  # slack_sdk sends client_id:client_secret as HTTP Basic auth
            try:
                decoded = base64.b64decode(ctx.authorization[len("Basic ") :], validate=True).decode()
            except (binascii.Error, UnicodeDecodeError) as exc:
                raise SlackError("invalid_client_id") from exc
            client_id, _, client_secret = decoded.partition(":")
        code = self._codes.get(opt(ctx.params, "code") or "")
        if not client_id or (code is not None and code.client_id != client_id):
            raise SlackError("invalid_client_id")
        if code is None:
            raise SlackError("invalid_code")  # unknown, or already exchanged
        if client_secret != code.client_secret:
            raise SlackError("bad_client_secret")
        if code.redirect_uri is not None and opt(ctx.params, "redirect_uri") != code.redirect_uri:
            raise SlackError("bad_redirect_uri")
        del self._codes[opt(ctx.params, "code") or ""]
        return dict(code.answer)
