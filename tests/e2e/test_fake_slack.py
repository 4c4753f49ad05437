"""FakeSlackAPI's own contract, driven by the real slack_sdk: auth, messages, limits, streams, files, OAuth, sockets."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

import aiohttp
import pytest
from slack_bolt.app.async_app import AsyncApp
from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.respond.async_respond import AsyncRespond
from slack_bolt.context.say_stream.async_say_stream import AsyncSayStream
from slack_bolt.context.set_status.async_set_status import AsyncSetStatus
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.builtin_async_handlers import AsyncRateLimitErrorRetryHandler
from slack_sdk.socket_mode.aiohttp import SocketModeClient
from slack_sdk.socket_mode.async_client import AsyncBaseSocketModeClient
from slack_sdk.socket_mode.request import SocketModeRequest
from slack_sdk.socket_mode.response import SocketModeResponse
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.webhook.async_client import AsyncWebhookClient

from fakes.slack import LOGIN_PAGE, FakeSlackAPI, Limit
from fakes.slack import events as slack_events

TEAM = "T0TEAM"
TOKEN = "xoxb-fake-team-token"
BOT_USER = "U0BOT"
BOT_ID = "B0BOT"
ALICE = "U0ALICE"
DM = "D0ALICE"
CHANNEL = "C0GENERAL"


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def install(fake: FakeSlackAPI) -> FakeSlackAPI:
    fake.add_workspace(TEAM, bot_token=TOKEN, bot_user_id=BOT_USER, bot_id=BOT_ID, team_name="Fake Team")
    return fake


def web(fake: FakeSlackAPI, token: str | None = TOKEN, **options: Any) -> AsyncWebClient:
    """The real slack_sdk client pointed at the fake."""
    return AsyncWebClient(token=token, base_url=fake.base_url, **options)


@pytest.fixture
async def fake() -> AsyncIterator[FakeSlackAPI]:
    """A running fake with one workspace and limits off, for tests about everything else."""
    async with FakeSlackAPI(limits_on=False) as running:
        yield install(running)


async def slack_error(call: Any) -> SlackApiError:
    with pytest.raises(SlackApiError) as caught:
        await call
    return caught.value


# --- Auth and identity ----------------------------------------------------------------------------------------------


async def test_auth_test_answers_the_bot_identity(fake: FakeSlackAPI) -> None:
    answer = await web(fake).auth_test()
    assert (answer["team_id"], answer["user_id"], answer["bot_id"]) == (TEAM, BOT_USER, BOT_ID)
    assert answer["team"] == "Fake Team"
    assert answer["is_enterprise_install"] is False
    assert fake.calls("auth.test")[0].transport == "query"  # slack_sdk sends auth.test params in the query string


@pytest.mark.parametrize(
    ("action", "error"),
    [("nothing", "invalid_auth"), ("revoke", "token_revoked"), ("uninstall", "account_inactive")],
)
async def test_a_token_that_is_not_good_is_refused(fake: FakeSlackAPI, action: str, error: str) -> None:
    token = "xoxb-unknown" if action == "nothing" else TOKEN
    if action == "revoke":
        fake.revoke(TOKEN)
    elif action == "uninstall":
        fake.uninstall(TEAM)
    assert (await slack_error(web(fake, token).auth_test())).response["error"] == error


async def test_a_call_without_a_token_is_not_authed(fake: FakeSlackAPI) -> None:
    assert (await slack_error(web(fake, None).auth_test())).response["error"] == "not_authed"


async def test_an_unknown_method_is_refused(fake: FakeSlackAPI) -> None:
    error = await slack_error(web(fake).api_call("chat.teleport", json={"channel": CHANNEL}))
    assert error.response["error"] == "unknown_method"


# --- Posting and editing --------------------------------------------------------------------------------------------


async def test_an_update_shows_the_newest_text(fake: FakeSlackAPI) -> None:
    client = web(fake)
    posted = await client.chat_postMessage(channel=CHANNEL, text="Thinking…")
    await client.chat_update(channel=CHANNEL, ts=posted["ts"], text="The answer is 42.")
    [shown] = fake.visible(CHANNEL)
    assert (shown.text, shown.edits, shown.user, shown.bot_id) == ("The answer is 42.", 1, BOT_USER, BOT_ID)
    assert fake.calls("chat.postMessage")[0].transport == "json"


async def test_blocks_are_read_as_their_text_and_markdown_text_as_written(fake: FakeSlackAPI) -> None:
    client = web(fake)
    blocks: list[dict[str, Any]] = [
        {"type": "section", "text": {"type": "mrkdwn", "text": "*Answer*"}},
        {"type": "context", "elements": [{"type": "mrkdwn", "text": "Sources: a.pdf"}]},
    ]
    await client.chat_postMessage(channel=CHANNEL, text="fallback", blocks=blocks)
    await client.chat_postMessage(channel=CHANNEL, markdown_text="**bold** answer")
    assert [shown.text for shown in fake.visible(CHANNEL)] == ["*Answer*\nSources: a.pdf", "**bold** answer"]


@pytest.mark.parametrize(
    ("arguments", "error"),
    [
        ({"channel": CHANNEL, "text": "hi", "markdown_text": "hi"}, "markdown_text_conflict"),
        ({"channel": CHANNEL, "markdown_text": "x" * 12_001}, "msg_too_long"),
        ({"channel": CHANNEL}, "no_text"),
        ({"channel": "", "text": "hi"}, "channel_not_found"),
        ({"channel": "general", "text": "hi"}, "channel_not_found"),
        ({"channel": CHANNEL, "text": "hi", "blocks": [{"text": "no type"}]}, "invalid_blocks"),
    ],
)
async def test_a_bad_post_is_refused(fake: FakeSlackAPI, arguments: dict[str, Any], error: str) -> None:
    response = await slack_error(web(fake).api_call("chat.postMessage", json=arguments))
    assert response.response["error"] == error
    assert fake.visible(CHANNEL) == []


async def test_long_text_is_truncated_not_refused(fake: FakeSlackAPI) -> None:
    await web(fake).chat_postMessage(channel=CHANNEL, text="x" * 40_100)
    assert len(fake.visible(CHANNEL)[0].text) == 40_000


async def test_after_the_bot_leaves_a_channel_posts_and_edits_fail(fake: FakeSlackAPI) -> None:
    client = web(fake)
    posted = await client.chat_postMessage(channel=CHANNEL, text="hi")
    fake.remove_bot(TEAM, CHANNEL)
    assert (await slack_error(client.chat_postMessage(channel=CHANNEL, text="hi"))).response[
        "error"
    ] == "not_in_channel"
    edit = client.chat_update(channel=CHANNEL, ts=posted["ts"], text="x")
    assert (await slack_error(edit)).response["error"] == "channel_not_found"


async def test_another_workspace_cannot_see_the_channel(fake: FakeSlackAPI) -> None:
    fake.add_workspace("T0OTHER", bot_token="xoxb-other", bot_user_id="U0OTHER", bot_id="B0OTHER")
    await web(fake).chat_postMessage(channel=CHANNEL, text="hi")
    other = web(fake, "xoxb-other").chat_postMessage(channel=CHANNEL, text="hi")
    assert (await slack_error(other)).response["error"] == "channel_not_found"


async def test_reactions_are_recorded_with_params_in_the_query_string(fake: FakeSlackAPI) -> None:
    ts = fake.user_message(TEAM, CHANNEL, ALICE, "hello")
    await web(fake).reactions_add(channel=CHANNEL, name="eyes", timestamp=ts)
    assert fake.reactions(CHANNEL, ts) == ["eyes"]
    [call] = fake.calls("reactions.add")
    assert (call.http_method, call.transport, call.params["name"]) == ("POST", "query", "eyes")


# --- Rate limits ----------------------------------------------------------------------------------------------------


async def test_chat_update_past_the_workspace_limit_is_429_and_the_retry_handler_gets_through() -> None:
    async with FakeSlackAPI(limits={"chat.update": Limit(2, per=1.0)}) as fake:
        client = web(install(fake))
        first = await client.chat_postMessage(channel=CHANNEL, text="a")
        second = await client.chat_postMessage(channel="C0OTHER", text="b")
        await client.chat_update(channel=CHANNEL, ts=first["ts"], text="a1")
        await client.chat_update(channel="C0OTHER", ts=second["ts"], text="b1")  # the window is per workspace
        error = await slack_error(client.chat_update(channel=CHANNEL, ts=first["ts"], text="a2"))
        assert (error.response.status_code, error.response["error"]) == (429, "ratelimited")
        assert error.response.headers["Retry-After"] == "1"
        assert fake.rate_limited_count == 1
        # slack_sdk's handler sleeps Retry-After (+ jitter) itself; the test only waits for its answer.
        patient = web(fake, retry_handlers=[AsyncRateLimitErrorRetryHandler(max_retry_count=2)])
        await patient.chat_update(channel=CHANNEL, ts=first["ts"], text="a3")
        assert fake.message(CHANNEL, first["ts"]).text == "a3"
        assert [call.error for call in fake.calls("chat.update")][-2:] == ["ratelimited", None]


async def test_the_default_chat_update_limit_is_per_minute() -> None:
    clock = Clock()
    async with FakeSlackAPI(limits={"chat.update": 3}, clock=clock) as fake:
        client = web(install(fake))
        ts = (await client.chat_postMessage(channel=CHANNEL, text="a"))["ts"]
        for n in range(3):
            await client.chat_update(channel=CHANNEL, ts=ts, text=f"a{n}")
        error = await slack_error(client.chat_update(channel=CHANNEL, ts=ts, text="late"))
        assert error.response.headers["Retry-After"] == "60"
        clock.now += 60
        await client.chat_update(channel=CHANNEL, ts=ts, text="on time")
        assert fake.throttled[0].scope == "workspace"


async def test_posts_to_one_channel_burst_then_get_429() -> None:
    clock = Clock()
    async with FakeSlackAPI(channel_burst=2, channel_rate=1.0, clock=clock) as fake:
        client = web(install(fake))
        for text in ("one", "two"):
            await client.chat_postMessage(channel=CHANNEL, text=text)
        error = await slack_error(client.chat_postMessage(channel=CHANNEL, text="three"))
        assert (error.response.status_code, error.response.headers["Retry-After"]) == (429, "1")
        await client.chat_postMessage(channel="C0OTHER", text="elsewhere")  # the bucket is per channel
        clock.now += 1
        await client.chat_postMessage(channel=CHANNEL, text="three")
        assert [shown.text for shown in fake.visible(CHANNEL)] == ["one", "two", "three"]


async def test_a_scripted_failure_answers_once(fake: FakeSlackAPI) -> None:
    fake.fail_next(429, method="chat.postMessage", retry_after=7)
    error = await slack_error(web(fake).chat_postMessage(channel=CHANNEL, text="hi"))
    assert error.response.headers["Retry-After"] == "7"
    await web(fake).chat_postMessage(channel=CHANNEL, text="hi")
    assert fake.throttled[0].scope == "scripted"


async def test_a_storm_answers_every_call_until_it_ends_or_calms() -> None:
    clock = Clock()
    async with FakeSlackAPI(limits_on=False, clock=clock) as fake:
        install(fake)
        fake.storm(429, 10.0, retry_after=2)
        for _ in range(3):
            error = await slack_error(web(fake).chat_postMessage(channel=CHANNEL, text="in the storm"))
            assert (error.response.status_code, error.response.headers["Retry-After"]) == (429, "2")
        clock.now += 10
        await web(fake).chat_postMessage(channel=CHANNEL, text="after it")
        fake.storm(503, 60.0, error="service_unavailable", method="chat.postMessage")
        error = await slack_error(web(fake).chat_postMessage(channel=CHANNEL, text="in the next one"))
        assert (error.response.status_code, error.response["error"]) == (503, "service_unavailable")
        await web(fake).auth_test()  # another method is untouched
        fake.calm()
        await web(fake).chat_postMessage(channel=CHANNEL, text="calm")
        assert [shown.text for shown in fake.visible(CHANNEL)] == ["after it", "calm"]
        assert [throttle.scope for throttle in fake.throttled] == ["scripted"] * 3


# --- Native streaming -----------------------------------------------------------------------------------------------


async def test_a_stream_shows_its_deltas_then_its_blocks(fake: FakeSlackAPI) -> None:
    client = web(fake)
    root = fake.user_message(TEAM, DM, ALICE, "question?")
    await client.assistant_threads_setStatus(channel_id=DM, thread_ts=root, status="is thinking…")
    assert fake.status(DM, root) == "is thinking…"
    started = await client.chat_startStream(channel=DM, thread_ts=root, markdown_text="Hel")
    assert fake.status(DM, root) == ""  # the reply clears the status
    await client.chat_appendStream(channel=DM, ts=started["ts"], markdown_text="lo")
    assert fake.message(DM, started["ts"]).streaming
    sources = [{"type": "context", "elements": [{"type": "mrkdwn", "text": "Sources: a.pdf"}]}]
    await client.chat_stopStream(channel=DM, ts=started["ts"], markdown_text="!", blocks=sources)
    [question, answer] = fake.thread(DM, root)
    assert (question.text, answer.text, answer.streaming) == ("question?", "Hello!\nSources: a.pdf", False)


async def test_slack_sdks_chat_stream_helper_streams_in_chunks(fake: FakeSlackAPI) -> None:
    root = fake.user_message(TEAM, CHANNEL, ALICE, "question?")
    streamer = await web(fake).chat_stream(
        channel=CHANNEL, thread_ts=root, recipient_team_id=TEAM, recipient_user_id=ALICE, buffer_size=4
    )
    for piece in ("The ", "answer ", "is 42."):
        await streamer.append(markdown_text=piece)
    await streamer.stop()
    assert fake.thread(CHANNEL, root)[1].text == "The answer is 42."
    assert [call.method for call in fake.calls()][-3:] == ["chat.appendStream", "chat.appendStream", "chat.stopStream"]


@pytest.mark.parametrize(
    ("recipient", "error"),
    [({}, "missing_recipient_user_id"), ({"recipient_user_id": ALICE}, "missing_recipient_team_id")],
)
async def test_a_channel_stream_needs_its_recipient(fake: FakeSlackAPI, recipient: dict[str, str], error: str) -> None:
    root = fake.user_message(TEAM, CHANNEL, ALICE, "question?")
    start = web(fake).chat_startStream(
        channel=CHANNEL,
        thread_ts=root,
        markdown_text="hi",
        recipient_user_id=recipient.get("recipient_user_id"),
        recipient_team_id=recipient.get("recipient_team_id"),
    )
    assert (await slack_error(start)).response["error"] == error


async def test_an_expired_stream_refuses_appends_and_chat_update_completes_it(fake: FakeSlackAPI) -> None:
    client = web(fake)
    root = fake.user_message(TEAM, DM, ALICE, "question?")
    ts = (await client.chat_startStream(channel=DM, thread_ts=root, markdown_text="Partial"))["ts"]
    edit = await slack_error(client.chat_update(channel=DM, ts=ts, text="too soon"))
    assert edit.response["error"] == "streaming_state_conflict"
    fake.expire_stream(ts)
    append = await slack_error(client.chat_appendStream(channel=DM, ts=ts, markdown_text=" more"))
    assert append.response["error"] == "message_not_in_streaming_state"
    assert fake.message(DM, ts).text == "Partial"
    await client.chat_update(channel=DM, ts=ts, markdown_text="Partial and the rest.")
    assert (fake.message(DM, ts).text, fake.message(DM, ts).streaming) == ("Partial and the rest.", False)


async def test_a_stream_left_idle_expires_by_the_clock() -> None:
    clock = Clock()
    async with FakeSlackAPI(limits_on=False, stream_idle=60.0, clock=clock) as fake:
        client = web(install(fake))
        ts = (await client.chat_startStream(channel=DM, thread_ts="1.1", markdown_text="a"))["ts"]
        clock.now += 59
        await client.chat_appendStream(channel=DM, ts=ts, markdown_text="b")
        clock.now += 60
        stop = await slack_error(client.chat_stopStream(channel=DM, ts=ts))
        assert stop.response["error"] == "message_not_in_streaming_state"
        assert fake.message(DM, ts).text == "ab"


async def test_a_stream_append_over_12000_characters_is_too_long(fake: FakeSlackAPI) -> None:
    client = web(fake)
    ts = (await client.chat_startStream(channel=DM, thread_ts="1.1", markdown_text="a"))["ts"]
    append = client.chat_appendStream(channel=DM, ts=ts, markdown_text="x" * 12_001)
    assert (await slack_error(append)).response["error"] == "msg_too_long"


# --- Threads, files, response_url -----------------------------------------------------------------------------------


async def test_replies_come_oldest_first_in_pages(fake: FakeSlackAPI) -> None:
    root = fake.user_message(TEAM, CHANNEL, ALICE, "root")
    for n in range(4):
        fake.user_message(TEAM, CHANNEL, ALICE, f"reply {n}", thread_ts=root)
    client = web(fake)
    first = await client.conversations_replies(channel=CHANNEL, ts=root, limit=3)
    cursor = first["response_metadata"]["next_cursor"]
    rest = await client.conversations_replies(channel=CHANNEL, ts=root, limit=3, cursor=cursor)
    texts = [m["text"] for m in [*first["messages"], *rest["messages"]]]
    assert texts == ["root", "reply 0", "reply 1", "reply 2", "reply 3"]
    assert (first["has_more"], rest["has_more"]) == (True, False)
    assert fake.calls("conversations.replies")[0].http_method == "GET"


async def test_a_file_downloads_with_the_bot_token_and_is_a_login_page_without(fake: FakeSlackAPI) -> None:
    stored = fake.add_file(TEAM, "notes.pdf", b"%PDF-1.4 fake", mimetype="application/pdf", size=10_000_000)
    info = (await web(fake).files_info(file=stored["id"]))["file"]
    assert (info["size"], info["filetype"]) == (10_000_000, "pdf")
    url = info["url_private_download"]
    async with aiohttp.ClientSession() as http:
        async with http.get(url, headers={"Authorization": f"Bearer {TOKEN}"}) as response:
            assert (response.content_type, await response.read()) == ("application/pdf", b"%PDF-1.4 fake")
        async with http.get(url) as response:
            assert (response.status, response.content_type, await response.text()) == (200, "text/html", LOGIN_PAGE)
    assert (fake.files_download_count, fake.login_pages_served) == (1, 1)
    missing = await slack_error(web(fake).files_info(file="F000000404"))
    assert missing.response["error"] == "file_not_found"


async def test_a_response_url_takes_five_posts_then_refuses(fake: FakeSlackAPI) -> None:
    hook = AsyncWebhookClient(fake.response_url(team_id=TEAM, channel=CHANNEL, user=ALICE))
    statuses = [(await hook.send(text=f"step {n}")).status_code for n in range(5)]
    refused = await hook.send(text="one too many")
    assert statuses == [200] * 5
    assert (refused.status_code, refused.body) == (404, "used_url")
    assert [item.text for item in fake.ephemeral(CHANNEL)] == [f"step {n}" for n in range(5)]


async def test_an_in_channel_response_is_seen_by_everyone(fake: FakeSlackAPI) -> None:
    hook = AsyncWebhookClient(fake.response_url(team_id=TEAM, channel=CHANNEL, user=ALICE))
    await hook.send(text="Indexed 3 documents.", response_type="in_channel")
    [shown] = fake.visible(CHANNEL)
    assert (shown.text, shown.user) == ("Indexed 3 documents.", BOT_USER)


# --- OAuth and Socket Mode ------------------------------------------------------------------------------------------


# slack_sdk 3.47 builds its client auth with aiohttp.BasicAuth, which aiohttp 3.14 deprecates.
@pytest.mark.filterwarnings("ignore:BasicAuth is deprecated:DeprecationWarning:slack_sdk")
async def test_oauth_v2_access_exchanges_a_code_once(fake: FakeSlackAPI) -> None:
    fake.register_oauth_code(
        "code-1",
        client_id="111.222",
        client_secret="s3cret",
        team_id="T0NEW",
        team_name="New Team",
        installer_user_id="U0ADMIN",
        bot_token="xoxb-new",
        bot_user_id="U0NEWBOT",
        bot_id="B0NEWBOT",
        scope="chat:write,commands",
    )
    anonymous = web(fake, None)
    wrong = anonymous.oauth_v2_access(client_id="111.222", client_secret="nope", code="code-1")
    assert (await slack_error(wrong)).response["error"] == "bad_client_secret"
    answer = await anonymous.oauth_v2_access(client_id="111.222", client_secret="s3cret", code="code-1")
    assert (answer["access_token"], answer["team"], answer["authed_user"]) == (
        "xoxb-new",
        {"id": "T0NEW", "name": "New Team"},
        {"id": "U0ADMIN"},
    )
    assert (answer["token_type"], answer["enterprise"], answer["is_enterprise_install"]) == ("bot", None, False)
    again = anonymous.oauth_v2_access(client_id="111.222", client_secret="s3cret", code="code-1")
    assert (await slack_error(again)).response["error"] == "invalid_code"
    assert (await web(fake, "xoxb-new").auth_test())["bot_id"] == "B0NEWBOT"
    call = fake.calls("oauth.v2.access")[0]
    assert (call.transport, call.authorization) == ("form", "basic")  # slack_sdk: form body, HTTP Basic client auth


async def test_socket_mode_client_receives_an_envelope_and_acks_it(fake: FakeSlackAPI) -> None:
    fake.add_app_token("xapp-1-fake")
    received: list[SocketModeRequest] = []

    async def listener(client: AsyncBaseSocketModeClient, request: SocketModeRequest) -> None:
        received.append(request)
        await client.send_socket_mode_response(SocketModeResponse(envelope_id=request.envelope_id))

    client = SocketModeClient(app_token="xapp-1-fake", web_client=AsyncWebClient(base_url=fake.base_url))
    client.socket_mode_request_listeners.append(listener)
    try:
        await client.connect()  # type: ignore[no-untyped-call]  # slack_sdk leaves connect/close unannotated
        event = slack_events.app_mention(channel=CHANNEL, user=ALICE, text="hi", team=TEAM, bot_user_id=BOT_USER)
        payload = slack_events.envelope(event, team_id=TEAM, bot_user_id=BOT_USER)
        ack = await fake.socket_push("events_api", payload)
    finally:
        await client.close()  # type: ignore[no-untyped-call]
    assert ack == {"envelope_id": received[0].envelope_id}
    assert (received[0].type, received[0].payload["event"]["text"]) == ("events_api", f"<@{BOT_USER}> hi")
    assert fake.calls("apps.connections.open")[0].error is None


async def test_a_bot_token_cannot_open_a_socket(fake: FakeSlackAPI) -> None:
    opened = web(fake).apps_connections_open(app_token=TOKEN)
    assert (await slack_error(opened)).response["error"] == "not_allowed_token_type"


# --- The payload builders, as Bolt reads them -----------------------------------------------------------------------

SECRET = "fake-signing-secret"


def bolt_app(fake: FakeSlackAPI) -> AsyncApp:
    return AsyncApp(client=web(fake), signing_secret=SECRET)


def bolt_request(body: bytes, secret: str = SECRET, content_type: str = "application/json") -> AsyncBoltRequest:
    """An inbound HTTP request as Slack signs it, handed to Bolt the way its own tests do."""
    headers: dict[str, str | Sequence[str]] = {**slack_events.signed_headers(body, secret, content_type=content_type)}
    return AsyncBoltRequest(body=body.decode(), headers=headers)


async def dispatch(app: AsyncApp, body: bytes, content_type: str = "application/json") -> int:
    response = await app.async_dispatch(bolt_request(body, content_type=content_type))
    return response.status


async def test_bolt_streams_an_answer_to_a_signed_app_mention(fake: FakeSlackAPI) -> None:
    app = bolt_app(fake)

    @app.event("app_mention")
    async def answer(set_status: AsyncSetStatus, say_stream: AsyncSayStream) -> None:
        await set_status(status="is thinking…")
        stream = await say_stream()
        await stream.append(markdown_text="Hello from the bot.")
        await stream.stop()

    ts = fake.user_message(TEAM, CHANNEL, ALICE, f"<@{BOT_USER}> hi")
    event = slack_events.app_mention(channel=CHANNEL, user=ALICE, text="hi", team=TEAM, ts=ts, bot_user_id=BOT_USER)
    body = slack_events.json_body(slack_events.envelope(event, team_id=TEAM, bot_user_id=BOT_USER))
    assert await dispatch(app, body) == 200
    await fake.wait_for(lambda: fake.calls("chat.stopStream"))
    [_, reply] = fake.thread(CHANNEL, ts)
    assert (reply.text, reply.user) == ("Hello from the bot.", BOT_USER)
    start = fake.calls("chat.startStream")[0].params
    assert (start["recipient_user_id"], start["recipient_team_id"]) == (ALICE, TEAM)


async def test_bolt_rejects_a_badly_signed_event(fake: FakeSlackAPI) -> None:
    body = slack_events.json_body(slack_events.url_verification("challenge-1"))
    response = await bolt_app(fake).async_dispatch(bolt_request(body, "another-secret"))
    assert response.status == 401
    assert await dispatch(bolt_app(fake), body) == 200


async def test_bolt_acks_a_slash_command_and_responds_on_its_url(fake: FakeSlackAPI) -> None:
    app = bolt_app(fake)

    @app.command("/kb")
    async def kb(ack: AsyncAck, respond: AsyncRespond, command: dict[str, Any]) -> None:
        await ack()
        await respond(f"Searching for {command['text']}…")

    url = fake.response_url(team_id=TEAM, channel=CHANNEL, user=ALICE)
    fields = slack_events.slash_command(
        command="/kb", text="holidays", user_id=ALICE, channel_id=CHANNEL, team_id=TEAM, response_url=url
    )
    assert await dispatch(app, slack_events.form_body(fields), "application/x-www-form-urlencoded") == 200
    await fake.wait_for(lambda: fake.ephemeral(CHANNEL))
    assert fake.ephemeral(CHANNEL)[0].text == "Searching for holidays…"


async def test_bolt_routes_a_button_click_by_action_id(fake: FakeSlackAPI) -> None:
    app = bolt_app(fake)
    clicked: list[str] = []

    @app.action("feedback_good")
    async def good(ack: AsyncAck, body: dict[str, Any]) -> None:
        await ack()
        clicked.append(body["actions"][0]["value"])

    payload = slack_events.block_actions(
        action_id="feedback_good",
        value="turn-7",
        user=ALICE,
        team_id=TEAM,
        channel=CHANNEL,
        message_ts="1.2",
        response_url=fake.response_url(team_id=TEAM, channel=CHANNEL),
    )
    body = slack_events.interactive_body(payload)
    assert await dispatch(app, body, "application/x-www-form-urlencoded") == 200
    assert clicked == ["turn-7"]


def delivered(event: dict[str, Any]) -> dict[str, Any]:
    return slack_events.envelope(event, team_id=TEAM, bot_user_id=BOT_USER)


DELIVERIES: dict[str, Callable[[], dict[str, Any]]] = {
    "dm": lambda: delivered(slack_events.message(channel=DM, user=ALICE, text="hi", team=TEAM)),
    "thread reply": lambda: delivered(
        slack_events.message(channel=CHANNEL, user=ALICE, text="and?", team=TEAM, thread_ts="1.1")
    ),
    "file share": lambda: delivered(
        slack_events.file_share(
            channel=DM, user=ALICE, team=TEAM, files=[{"id": "F1", "name": "a.pdf", "mimetype": "application/pdf"}]
        )
    ),
    "edit": lambda: delivered(
        slack_events.message_changed(channel=DM, user=ALICE, ts="1.1", text="new", previous_text="old", team=TEAM)
    ),
    "delete": lambda: delivered(
        slack_events.message_deleted(channel=DM, user=ALICE, deleted_ts="1.1", previous_text="old", team=TEAM)
    ),
    "other bot": lambda: delivered(slack_events.bot_message(channel=CHANNEL, bot_id="B0OTHER", text="beep")),
    "app_uninstalled": lambda: slack_events.app_uninstalled(team_id=TEAM, bot_user_id=BOT_USER),
    "tokens_revoked": lambda: slack_events.tokens_revoked(team_id=TEAM, bot=[BOT_USER], bot_user_id=BOT_USER),
}


@pytest.mark.parametrize("kind", list(DELIVERIES))
async def test_bolt_delivers_each_built_event_to_its_listener(fake: FakeSlackAPI, kind: str) -> None:
    app = bolt_app(fake)
    seen: asyncio.Queue[dict[str, Any]] = asyncio.Queue()

    @app.event(re.compile("^(message|app_uninstalled|tokens_revoked)$"))
    async def record(event: dict[str, Any]) -> None:
        await seen.put(event)

    payload = DELIVERIES[kind]()
    assert await dispatch(app, slack_events.json_body(payload)) == 200
    async with asyncio.timeout(5):
        assert await seen.get() == payload["event"]


async def test_bolt_ignores_the_bots_own_messages(fake: FakeSlackAPI) -> None:
    app = bolt_app(fake)
    seen: list[dict[str, Any]] = []

    @app.event("message")
    async def record(event: dict[str, Any]) -> None:
        seen.append(event)

    own = slack_events.bot_message(channel=DM, bot_id=BOT_ID, user=BOT_USER, text="my own answer")
    assert await dispatch(app, slack_events.json_body(slack_events.envelope(own, team_id=TEAM))) == 200
    await fake.wait_for(lambda: fake.calls("auth.test"))  # Bolt learnt its identity, and so the event is dropped
    assert seen == []


async def test_a_response_url_expires_after_thirty_minutes() -> None:
    clock = Clock()
    async with FakeSlackAPI(clock=clock) as fake:
        hook = AsyncWebhookClient(fake.response_url(team_id=TEAM, channel=CHANNEL))
        assert (await hook.send(text="first")).status_code == 200
        clock.now += 30 * 60 + 1
        late = await hook.send(text="late")
        assert (late.status_code, late.body) == (404, "expired_url")


# --- The agent view and App Home ------------------------------------------------------------------------------------


async def test_a_thread_is_titled_within_the_length_and_only_where_it_exists(fake: FakeSlackAPI) -> None:
    client = web(fake)
    root = fake.user_message(TEAM, DM, ALICE, "How do I reset my password?")
    await client.assistant_threads_setTitle(channel_id=DM, thread_ts=root, title="Resetting a password")
    assert fake.thread_title(DM, root) == "Resetting a password"
    too_long = await slack_error(client.assistant_threads_setTitle(channel_id=DM, thread_ts=root, title="x" * 61))
    missing = await slack_error(client.assistant_threads_setTitle(channel_id=DM, thread_ts="1.000009", title="Hi"))
    assert (too_long.response["error"], missing.response["error"]) == ("invalid_arguments", "invalid_thread_ts")
    assert fake.thread_title(DM, root) == "Resetting a password"


@pytest.mark.parametrize(
    ("prompts", "error"),
    [
        ([{"title": f"Q{n}", "message": f"Question {n}?"} for n in range(5)], "invalid_arguments"),
        ([], "invalid_arguments"),
        ([{"title": "x" * 61, "message": "Question?"}], "invalid_arguments"),
        ([{"title": "Q", "message": "x" * 301}], "invalid_arguments"),
        ([{"title": "Q"}], "invalid_arguments"),
    ],
)
async def test_suggested_prompts_past_slacks_four_or_past_their_lengths_are_refused(
    fake: FakeSlackAPI, prompts: list[dict[str, str]], error: str
) -> None:
    refused = await slack_error(web(fake).assistant_threads_setSuggestedPrompts(channel_id=DM, prompts=prompts))
    assert refused.response["error"] == error
    assert fake.suggested_prompts(DM) is None


async def test_suggested_prompts_show_above_the_composer_or_in_a_thread(fake: FakeSlackAPI) -> None:
    client = web(fake)
    prompts = [{"title": "Lunch", "message": "When is lunch served?"}]
    await client.assistant_threads_setSuggestedPrompts(channel_id=DM, prompts=prompts, title="Often asked")
    shown = fake.suggested_prompts(DM)
    assert shown is not None
    assert (shown.thread_ts, shown.title, shown.prompts) == (None, "Often asked", (("Lunch", "When is lunch served?"),))
    root = fake.user_message(TEAM, DM, ALICE, "New chat")
    await client.assistant_threads_setSuggestedPrompts(channel_id=DM, thread_ts=root, prompts=prompts)
    assert fake.suggested_prompts(DM, root) is not None


async def test_a_workspace_without_the_agent_view_refuses_titles_and_prompts(fake: FakeSlackAPI) -> None:
    fake.set_agent_view(TEAM, False)
    client = web(fake)
    root = fake.user_message(TEAM, DM, ALICE, "Hello")
    prompts = [{"title": "Lunch", "message": "When is lunch served?"}]
    refused = [
        await slack_error(client.assistant_threads_setTitle(channel_id=DM, thread_ts=root, title="Hello")),
        await slack_error(client.assistant_threads_setSuggestedPrompts(channel_id=DM, prompts=prompts)),
    ]
    assert [error.response["error"] for error in refused] == ["not_allowed", "not_allowed"]
    fake.set_agent_view(TEAM, True)
    await client.assistant_threads_setTitle(channel_id=DM, thread_ts=root, title="Hello")


async def test_a_home_tab_is_published_per_person_within_slacks_blocks(fake: FakeSlackAPI) -> None:
    client = web(fake)
    view = {"type": "home", "blocks": [{"type": "header", "text": {"type": "plain_text", "text": "Hi"}}]}
    answer = await client.views_publish(user_id=ALICE, view=view)
    assert answer["view"]["type"] == "home"
    assert fake.home_view(ALICE) == view
    too_many = {"type": "home", "blocks": [{"type": "divider"}] * 101}
    long_header = {"type": "home", "blocks": [{"type": "header", "text": {"type": "plain_text", "text": "x" * 151}}]}
    modal = {"type": "modal", "blocks": []}
    errors = [
        (await slack_error(client.views_publish(user_id="U0BOB", view=bad))).response["error"]
        for bad in (too_many, long_header, modal)
    ]
    assert errors == ["invalid_blocks", "invalid_blocks", "invalid_arguments"]
    assert fake.home_view("U0BOB") is None
