"""The web chat's HTTP API as a browser uses it, against real services and the fake model: sessions, the
answer stream, bad bodies and cookies, uploads with their limits, a tab closed mid-answer, and exposure."""

from __future__ import annotations

import asyncio
import io
import json
import zipfile
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import pytest_asyncio
from aiohttp import web
from prometheus_client.parser import text_string_to_metric_families

from adapters.web.app import create as create_web
from adapters.web.words import page_texts
from bot.app.manager import build_manager, chat_policy
from bot.app.preflight import check_platforms
from bot.app.server import create_app
from bot.app.services import Services, build_services
from bot.app.settings import Settings
from bot.errors import StartupError
from bot.metrics import ChatMetrics
from bot.words import messages
from bot.words.catalogue import catalogue as i18n_catalogue
from fakes.openai_api import FakeOpenAI
from harness.processes import free_port
from rag.ingest.documents import SourceFile
from rag.input_check import SmallTalk
from tests.conftest import EmbeddedSettings
from tests.support.dashboard import exposed_names, load_dashboard, missing_metrics

ADMIN_TOKEN = "let-me-in-e2e-web-api-token-0123456789"
UPLOAD_LIMIT_MB = 0.05


@dataclass
class Served:
    services: Services
    model: FakeOpenAI
    url: str
    metrics: ChatMetrics


@pytest_asyncio.fixture(scope="module")
async def served(
    tmp_path_factory: pytest.TempPathFactory, embedded_settings: EmbeddedSettings
) -> AsyncIterator[Served]:
    data = tmp_path_factory.mktemp("web-api")
    async with FakeOpenAI() as model:
        settings = embedded_settings(
            data,
            CHAT_MODEL="fake-model",
            CHAT_MODEL_BASE_URL=model.base_url,
            CHAT_MODEL_API_KEY="test-key",
            CHAT_MODEL_MAX_RETRIES=0,
            DEFAULT_KNOWLEDGE_BASES="docs",
            WEB_ADMIN_TOKEN=ADMIN_TOKEN,
            INGEST_MAX_FILE_MB=UPLOAD_LIMIT_MB,
        )
        async with build_services(settings) as services:
            kb = await services.knowledge.create("docs", {})
            await services.ingestor.ingest(
                kb, SourceFile(b"# Lunch\n\nLunch is served from noon in the atrium.", "upload:lunch.md", "lunch.md")
            )
            metrics = ChatMetrics()
            manager = build_manager(services, chat_policy(settings), metrics=metrics)
            app = create_app(services, metrics)
            adapter = create_web(manager, settings, services.db)
            assert adapter is not None
            adapter.mount(app)
            runner = web.AppRunner(app)
            await runner.setup()
            port = free_port()
            await web.TCPSite(runner, "127.0.0.1", port).start()
            await services.jobs.start()
            try:
                yield Served(services, model, f"http://127.0.0.1:{port}", metrics)
            finally:
                await services.jobs.stop()
                await adapter.stop()
                await runner.cleanup()


def _browser(url: str, **more: Any) -> aiohttp.ClientSession:
    """A browser on the page: its own cookie jar, and the headers the page's requests carry (its Origin; uploads'
    X-Ragbot-Request)."""
    headers = {"Origin": url, "X-Ragbot-Request": "1"}
    return aiohttp.ClientSession(url, cookie_jar=aiohttp.CookieJar(unsafe=True), headers=headers, **more)


@pytest_asyncio.fixture
async def browser(served: Served) -> AsyncIterator[aiohttp.ClientSession]:
    """A browser's session: its own cookie jar, opened on the page."""
    async with _browser(served.url) as session:
        async with session.get("/") as page:
            assert page.status == 200
            assert "default-src 'self'" in page.headers["Content-Security-Policy"]
        yield session


async def _events(response: aiohttp.ClientResponse) -> list[tuple[str, dict[str, Any]]]:
    assert response.status == 200, await response.text()
    assert response.content_type == "text/event-stream"
    events = []
    for block in (await response.text()).split("\n\n"):
        if block.strip():
            name, data = block.split("\n", 1)
            events.append((name.removeprefix("event: "), json.loads(data.removeprefix("data: "))))
    return events


async def _say(browser: aiohttp.ClientSession, text: str) -> list[tuple[str, dict[str, Any]]]:
    async with browser.post("/api/messages", json={"text": text}) as response:
        return await _events(response)


async def test_a_question_streams_deltas_then_a_final_with_sources_and_history_restores_it(
    served: Served, browser: aiohttp.ClientSession
) -> None:
    served.model.reply = "Lunch is served from noon [1]."
    events = await _say(browser, "When is lunch?")
    names = [name for name, _ in events]
    assert names[0] == "status"
    assert names[-2:] == ["final", "done"]
    deltas = "".join(data["text"] for name, data in events if name == "delta")
    assert deltas == "Lunch is served from noon [1]."
    final = events[-2][1]
    assert final["text"] == deltas
    assert final["outcome"] == "generated"
    assert final["rateable"] is True
    assert [source["title"] for source in final["sources"]] == ["lunch.md"]
    async with browser.get("/api/history") as response:
        history = (await response.json())["messages"]
    assert [(m["role"], m["text"]) for m in history][-2:] == [("user", "When is lunch?"), ("assistant", deltas)]
    assert history[-1]["id"] == final["message_id"]
    assert history[-1]["rateable"] is True
    async with browser.post("/api/feedback", json={"message_id": final["message_id"], "value": "up"}) as response:
        assert response.status == 200
    async with browser.get("/api/history") as response:
        assert (await response.json())["messages"][-1]["feedback"] == "up"


async def test_a_question_sent_again_with_its_id_is_answered_once_and_told_which_answer_is_its(
    served: Served, browser: aiohttp.ClientSession
) -> None:
    served.model.reply = "Lunch is served from noon [1]."
    question = {"text": "When is lunch, once?", "id": "q-0123456789abcdef"}
    async with browser.post("/api/messages", json=question) as response:
        first = await _events(response)
    async with browser.post("/api/messages", json=question) as response:  # a proxy's retry, or the page's resend
        again = await _events(response)
    [accepted] = [data["answer_id"] for name, data in first if name == "accepted"]
    assert first[-2][1]["message_id"] == accepted
    assert [name for name, _ in again] == ["status", "accepted", "done"]  # typing shown, then no second answer
    assert again[1][1]["answer_id"] == accepted
    async with browser.get("/api/history") as response:
        history = (await response.json())["messages"]
    assert [m["text"] for m in history].count("When is lunch, once?") == 1
    assert [m["id"] for m in history if m["role"] == "assistant"][-1] == accepted


ROOMS = (
    "# Meeting rooms\n\n**Formats**: rooms are booked by the hour.\n\n"
    "- The *Blue room* seats twelve people and has a `projector`.\n- The Green room seats four.\n"
)


async def test_a_source_shows_the_sentence_the_answer_quoted_as_plain_text_live_and_in_the_history(
    served: Served, browser: aiohttp.ClientSession
) -> None:
    kb = await served.services.knowledge.find("docs")
    await served.services.ingestor.ingest(kb, SourceFile(ROOMS.encode(), "upload:rooms.md", "rooms.md"))
    served.model.reply = "The Blue room seats twelve people and has a projector [1]."
    events = await _say(browser, "Which meeting room has a projector?")
    final = events[-2][1]
    [rooms] = [source for source in final["sources"] if source["title"] == "rooms.md"]
    quoted = "The Blue room seats twelve people and has a projector."
    assert rooms["snippet"] == quoted
    async with browser.get("/api/history") as response:
        stored = (await response.json())["messages"][-1]
    assert [source["snippet"] for source in stored["sources"] if source["title"] == "rooms.md"] == [quoted]


async def test_another_browser_sees_neither_the_history_nor_can_rate_the_answers(
    served: Served, browser: aiohttp.ClientSession
) -> None:
    events = await _say(browser, "When is lunch?")
    message_id = events[-2][1]["message_id"]
    async with _browser(served.url) as other:
        async with other.get("/api/history") as response:
            assert (await response.json())["messages"] == []
        async with other.post("/api/feedback", json={"message_id": message_id, "value": "down"}) as response:
            assert response.status == 404  # the session cookie was issued by the GET above


@pytest.mark.parametrize(
    ("body", "status", "error"),
    [
        (b"not json", 400, messages.WEB_BAD_BODY),
        (b'{"question": "wrong field"}', 400, messages.WEB_BAD_BODY),
        (b'["a list"]', 400, messages.WEB_BAD_BODY),
        (json.dumps({"text": "x" * 70_000}).encode(), 413, messages.web_text_too_long(64 * 1024)),
        (b'{"text": "hi", "id": 42}', 400, messages.WEB_BAD_MESSAGE_ID),
        (b'{"text": "hi", "id": "has space"}', 400, messages.WEB_BAD_MESSAGE_ID),
        (json.dumps({"text": "hi", "id": "x" * 65}).encode(), 400, messages.WEB_BAD_MESSAGE_ID),
    ],
)
async def test_a_bad_request_body_gets_a_clear_error(
    browser: aiohttp.ClientSession, body: bytes, status: int, error: str
) -> None:
    async with browser.post("/api/messages", data=body, headers={"Content-Type": "application/json"}) as response:
        assert (response.status, (await response.json())["error"]) == (status, error)


@pytest.mark.parametrize("cookie", ["forged.0000", "no-dot", "", "a.b.c", "a.1700000000.0000"])
async def test_a_forged_or_stale_session_cookie_is_refused_then_replaced(served: Served, cookie: str) -> None:
    async with _browser(served.url, cookies={"ragbot_session": cookie}) as session:
        async with session.post("/api/messages", json={"text": "When is lunch?"}) as response:
            assert response.status == 403
            assert (await response.json())["error"] == messages.WEB_SESSION_EXPIRED
        async with session.get("/api/session") as response:
            assert response.status == 200
        assert any(c.key == "ragbot_session" and c.value != cookie for c in session.cookie_jar)


async def test_empty_long_and_command_messages_get_answers_not_errors(browser: aiohttp.ClientSession) -> None:
    empty = await _say(browser, "   ")
    assert empty[-2][1]["outcome"] == "refused"
    assert empty[-2][1]["rateable"] is False, "a refusal carries no feedback buttons"
    async with browser.get("/api/history") as response:
        assert (await response.json())["messages"][-1]["rateable"] is False, "nor after a reload"
    long = await _say(browser, "When is lunch? " * 700)
    assert messages.question_cut("en") in long[-2][1]["notice"]
    unknown = await _say(browser, "/frobnicate")
    assert unknown[-2][1]["text"] == messages.unknown_command("frobnicate", "en")
    assert unknown[-2][1]["rateable"] is False
    listed = await _say(browser, "/kb list")
    assert "**docs** (in use here)" in listed[-2][1]["text"]


def _chat_calls(model: FakeOpenAI) -> int:
    return sum(request.path.endswith("/chat/completions") for request in model.requests)


@pytest.mark.parametrize(("text", "kind", "lang"), [("hi", "greeting", "en"), ("谢谢！", "thanks", "zh")])
async def test_a_greeting_or_thanks_gets_a_short_reply_saying_what_the_bot_is_for(
    served: Served, browser: aiohttp.ClientSession, text: str, kind: SmallTalk, lang: str
) -> None:
    calls = _chat_calls(served.model)
    final = (await _say(browser, text))[-2][1]
    assert final["text"] == messages.small_talk(kind, lang)
    assert (final["outcome"], final["sources"], final["rateable"]) == ("smalltalk", [], False)
    assert _chat_calls(served.model) == calls, "nothing to look up, nothing to ask the model"
    served.model.reply = "Lunch is served from noon [1]."
    question = (await _say(browser, "hi, when is lunch?"))[-2][1]
    assert question["outcome"] == "generated"
    assert _chat_calls(served.model) > calls


async def test_kb_use_of_a_knowledge_base_that_does_not_exist_says_so_and_lists_the_ones_to_choose(
    served: Served, browser: aiohttp.ClientSession
) -> None:
    await served.services.knowledge.create("other", {})  # exists, but the web chat may read only "docs"
    try:
        missing = await _say(browser, "/kb use nonexistent")
        forbidden = await _say(browser, "/kb use other")
    finally:
        await served.services.knowledge.delete("other")
    assert missing[-2][1]["text"] == messages.kb_use_missing("nonexistent", ["docs"], "en", create=False)
    assert missing[-2][1]["text"].startswith("There is no knowledge base called “nonexistent”.")
    assert "may not read" not in missing[-2][1]["text"]
    assert missing[-2][1]["text"].endswith("This chat may use: docs.")
    assert forbidden[-2][1]["text"] == messages.kb_not_allowed("other", "en")


async def test_uploads_need_the_admin_token_and_stay_within_the_limit(browser: aiohttp.ClientSession) -> None:
    form = aiohttp.FormData()
    form.add_field("file", b"# Hours\n\nThe gym opens at six.", filename="gym.md")
    async with browser.post("/api/upload", data=form) as response:
        assert (response.status, (await response.json())["error"]) == (403, messages.WEB_ADMIN_ONLY)
    async with browser.post("/api/admin/login", json={"token": "guess"}) as response:
        assert (response.status, (await response.json())["error"]) == (403, messages.WEB_WRONG_TOKEN)
    async with browser.post("/api/admin/login", json={"token": ADMIN_TOKEN}) as response:
        assert response.status == 200
    too_big = aiohttp.FormData()
    too_big.add_field("file", b"x" * 60_000, filename="big.txt")
    async with browser.post("/api/upload", data=too_big) as response:
        assert response.status == 413
        refusal = (await response.json())["error"]
    assert "big.txt" in refusal
    assert "0.05 MB" in refusal
    assert "admin of the server" in refusal
    assert "INGEST_MAX_FILE_MB" not in refusal
    async with browser.post("/api/upload", data=aiohttp.FormData({"other": "x"})) as response:
        assert response.status == 400


async def test_an_admin_upload_streams_its_progress_then_is_answerable(
    served: Served, browser: aiohttp.ClientSession
) -> None:
    async with browser.post("/api/admin/login", json={"token": ADMIN_TOKEN}) as response:
        assert response.status == 200
    form = aiohttp.FormData()
    form.add_field("file", b"# Gym\n\nThe staff gym opens at six in the basement.", filename="gym.md")
    async with browser.post("/api/upload", data=form) as response:
        events = await _events(response)
    shown = [data["text"] for name, data in events if name in ("message", "edit")]
    assert shown[0] == messages.ingest_queued(1, "docs", "en")
    assert shown[-1] == "gym.md: indexed, 1 passage."
    served.model.reply = "At six [1]."
    answer = await _say(browser, "When does the staff gym open?")
    assert "gym.md" in [source["title"] for source in answer[-2][1]["sources"]]


async def test_an_upload_with_a_lying_extension_fails_with_a_reason_and_nothing_half_stored(
    served: Served, browser: aiohttp.ClientSession
) -> None:
    async with browser.post("/api/admin/login", json={"token": ADMIN_TOKEN}) as response:
        assert response.status == 200
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("hello.txt", "not a document")
    form = aiohttp.FormData()
    form.add_field("file", buffer.getvalue(), filename="report.pdf")
    documents_before = len(await served.services.knowledge.documents("docs"))
    async with browser.post("/api/upload", data=form) as response:
        events = await _events(response)
    final = [data["text"] for name, data in events if name in ("message", "edit")][-1]
    assert final.startswith("report.pdf: not ingested: ")
    assert len(await served.services.knowledge.documents("docs")) == documents_before


async def _upload(browser: aiohttp.ClientSession, files: dict[str, bytes], command: str = "") -> str:
    """Upload `files` as an admin (with a typed command, if any): the status message's final text."""
    async with browser.post("/api/admin/login", json={"token": ADMIN_TOKEN}) as response:
        assert response.status == 200
    form = aiohttp.FormData()
    if command:
        form.add_field("text", command)
    for name, data in files.items():
        form.add_field("file", data, filename=name)
    async with browser.post("/api/upload", data=form) as response:
        events = await _events(response)
    return str([data["text"] for name, data in events if name in ("message", "edit")][-1])


FAQ_SHEET = b"question,answer\nWhere is the gym?,In the basement.\nWhen does it open?,At six.\n"


@pytest.mark.parametrize(
    ("files", "command", "outcome"),
    [
        (
            {"faq.csv": FAQ_SHEET},
            "/faq import",
            "faq.csv: FAQ sheet imported: 2 added, 0 updated, 0 unchanged.",
        ),
        (
            {"broken-faq.csv": b"question,answer\nWhere is the gym?,In the basement.\nWhen does it open?,\n"},
            "/faq import",
            "broken-faq.csv: FAQ sheet not imported: row 3: there is no answer: fill in the answer column",
        ),
        (
            {"pool.md": b"# Pool\n\nThe pool is on the roof.", "report.pdf": b"%PDF-1.4 not really"},
            "",
            "Done: 1 indexed, 1 failed.\n- pool.md: indexed, 1 passage.\n- report.pdf: not ingested: ",
        ),
    ],
)
async def test_the_ingestion_status_says_what_happened_to_each_file(
    browser: aiohttp.ClientSession, files: dict[str, bytes], command: str, outcome: str
) -> None:
    assert (await _upload(browser, files, command)).startswith(outcome)


@pytest.mark.parametrize(
    ("name", "sheet"),
    [
        ("team-faq.csv", b'Question,Answer\nWho runs the canteen?,Sodexo.\nIs there parking?,"Yes, on level -2."\n'),
        (
            "team-faq.json",
            b'[{"question": "Where is lost property?", "answers": ["At reception."]},'
            b' {"question": "Can I bring a dog?", "answer": "On Fridays."}]',
        ),
    ],
)
async def test_an_faq_sheet_uploaded_like_any_file_is_imported_as_faqs_not_indexed_as_a_document(
    served: Served, browser: aiohttp.ClientSession, name: str, sheet: bytes
) -> None:
    kb = await served.services.knowledge.find("docs")
    faqs_before = len(await served.services.faqs.in_kb(kb.id))
    status = await _upload(browser, {name: sheet})
    assert status == f"{name}: FAQ sheet imported: 2 added, 0 updated, 0 unchanged."
    assert name not in [document.title for document in await served.services.knowledge.documents("docs")]
    assert len(await served.services.faqs.in_kb(kb.id)) == faqs_before + 2


@pytest.mark.parametrize(
    ("typed", "status", "said"),
    [
        ("What is in this file?", 400, messages.WEB_FILES_WITH_A_COMMAND),
        ("/kb list", 400, messages.WEB_FILES_WITH_A_COMMAND),
        ("/faq import", 200, "notes.txt: FAQ sheet not imported: an FAQ sheet must be .csv, .xlsx or .json, not .txt"),
        ("/ingest", 200, "notes.txt: indexed, 1 passage."),
    ],
)
async def test_files_go_with_the_command_typed_beside_them(
    browser: aiohttp.ClientSession, typed: str, status: int, said: str
) -> None:
    async with browser.post("/api/admin/login", json={"token": ADMIN_TOKEN}) as response:
        assert response.status == 200
    form = aiohttp.FormData()
    form.add_field("text", typed)
    form.add_field("file", f"Notes taken for {typed!r}.".encode(), filename="notes.txt")
    async with browser.post("/api/upload", data=form) as response:
        if status != 200:
            assert (response.status, (await response.json())["error"]) == (status, said)
            return
        events = await _events(response)
    assert [data["text"] for name, data in events if name in ("message", "edit")][-1].startswith(said)


async def test_a_file_uploaded_again_unchanged_is_said_to_be_already_indexed(browser: aiohttp.ClientSession) -> None:
    sauna = {"sauna.md": b"# Sauna\n\nThe sauna is next to the pool."}
    assert await _upload(browser, sauna) == "sauna.md: indexed, 1 passage."
    assert await _upload(browser, sauna) == "sauna.md: already indexed; nothing changed."
    again = await _upload(browser, {**sauna, "spa.md": b"# Spa\n\nThe spa opens at ten."})
    assert again.splitlines() == [
        "Done: 1 indexed, 1 already indexed.",
        "- sauna.md: already indexed; nothing changed.",
        "- spa.md: indexed, 1 passage.",
    ]


async def test_a_chinese_chat_hears_why_ingestion_failed_in_chinese_in_the_status_and_in_jobs(
    browser: aiohttp.ClientSession,
) -> None:
    async with browser.post("/api/admin/login", json={"token": ADMIN_TOKEN}) as response:
        assert response.status == 200
    await _say(browser, "/lang zh")
    photo = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4
    assert await _upload(browser, {"photo.png": photo}) == (
        "photo.png：未能导入：这张 PNG 图片已损坏或不完整：请重新保存或导出"
    )
    broken = b"question,answer\nWhere is the gym?,In the basement.\nWhen does it open?,\n"
    assert await _upload(browser, {"broken.csv": broken}, "/faq import") == (
        "broken.csv：问答表格未导入：第 3 行：没有答案：请填写答案列"
    )
    jobs = (await _say(browser, "/jobs"))[-2][1]["text"]
    assert "`photo.png` → docs，刚刚：失败：这张 PNG 图片已损坏或不完整：请重新保存或导出" in jobs
    # Other tests' sheets failed the same way: listed on the same line, the reason said once.
    [faq_line] = [line for line in jobs.splitlines() if "`broken.csv`" in line]
    assert faq_line.endswith("→ docs，刚刚：失败：第 3 行：没有答案：请填写答案列")
    assert "OCR" not in jobs
    assert "there is no answer" not in jobs


async def test_a_tab_closed_mid_answer_still_gets_its_answer_stored_whole(
    served: Served, browser: aiohttp.ClientSession
) -> None:
    served.model.reply = "Lunch is at noon, in the atrium [1]."
    served.model.first_token_delay = 1.0
    try:
        async with browser.post("/api/messages", json={"text": "Where is lunch served?"}) as response:
            await response.content.readuntil(b"\n\n")  # the status event: the turn is under way

        # The connection is closed here, before the model's first token.
        async def stored() -> list[Any]:
            while True:
                async with browser.get("/api/history") as history:
                    found = (await history.json())["messages"]
                if found and found[-1]["role"] == "assistant" and found[-1]["status"] == "done":
                    return list(found)
                await asyncio.sleep(0.1)

        found = await asyncio.wait_for(stored(), 20)
    finally:
        served.model.first_token_delay = 0.0
    assert found[-1]["text"] == "Lunch is at noon, in the atrium [1]."


def test_serving_to_a_network_without_an_access_token_is_refused(tmp_path: Path) -> None:
    with pytest.raises(StartupError, match="WEB_ACCESS_TOKEN"):
        check_platforms(Settings(_env_file=None, RAGBOT_DATA_DIR=tmp_path, RAGBOT_HOST="0.0.0.0"), serving=True)
    check_platforms(
        Settings(_env_file=None, RAGBOT_DATA_DIR=tmp_path, RAGBOT_HOST="0.0.0.0", WEB_ACCESS_TOKEN="t" * 32),
        serving=True,
    )
    check_platforms(Settings(_env_file=None, RAGBOT_DATA_DIR=tmp_path, RAGBOT_HOST="127.0.0.1"), serving=True)


async def test_the_session_gives_the_page_its_words_in_the_browsers_language(served: Served) -> None:
    for header, lang in (("zh-CN,zh;q=0.9,en;q=0.8", "zh"), ("en-US,en;q=0.9", "en"), ("", "en")):
        async with aiohttp.ClientSession(served.url, cookie_jar=aiohttp.CookieJar(unsafe=True)) as browser:
            headers = {"Accept-Language": header} if header else {}
            async with browser.get("/api/session", headers=headers) as response:
                session = await response.json()
        assert session["language"] == lang
        assert session["texts"] == page_texts(lang)
        assert session["texts"]["send"] == i18n_catalogue(lang).text("web.send")
        assert "{name}" in session["texts"]["remove_file"], "placeholders are the page's to fill"


async def test_a_public_listener_shows_no_details_and_no_metrics_while_the_internal_one_does(
    served: Served, browser: aiohttp.ClientSession
) -> None:
    await _say(browser, "When is lunch?")
    public, internal = (
        create_app(served.services, served.metrics, public=True),
        create_app(served.services, served.metrics),
    )
    runners = []
    try:
        urls = []
        for app in (public, internal):
            runner = web.AppRunner(app)
            await runner.setup()
            port = free_port()
            await web.TCPSite(runner, "127.0.0.1", port).start()
            runners.append(runner)
            urls.append(f"http://127.0.0.1:{port}")
        async with aiohttp.ClientSession() as client:
            async with client.get(f"{urls[0]}/healthz") as response:
                assert await response.json() == {"status": "ok"}
            async with client.get(f"{urls[0]}/metrics") as response:
                assert response.status == 404
            async with client.get(f"{urls[0]}/readyz") as response:
                assert (response.status, await response.json()) == (200, {"ready": True})
            async with client.get(f"{urls[1]}/healthz") as response:
                assert set(await response.json()) == {"db", "weaviate", "embedder", "model"}
            async with client.get(f"{urls[1]}/readyz") as response:
                assert (response.status, await response.json()) == (200, {"ready": True})
            async with client.get(f"{urls[1]}/metrics") as response:
                assert response.content_type == "text/plain"
                text = await response.text()
    finally:
        for runner in runners:
            await runner.cleanup()
    families = list(text_string_to_metric_families(text))
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value for family in families for s in family.samples}
    assert samples[("ragbot_chat_turns_total", (("outcome", "generated"), ("platform", "web")))] >= 1
    assert samples[("ragbot_chat_first_visible_seconds_count", (("platform", "web"),))] >= 1
    assert samples[("ragbot_chat_undelivered_total", (("platform", "web"),))] == 0
    assert samples[("ragbot_model_tokens_total", (("direction", "out"), ("model", "fake-model")))] >= 1
    assert samples[("ragbot_part_up", (("part", "weaviate"),))] == 1
    assert samples[("process_open_fds", ())] > 0
    # The Grafana dashboard in docs/ reads only what a running ragbot exposes.
    assert missing_metrics(load_dashboard(), exposed_names(families)) == {}
