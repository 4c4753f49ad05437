"""A turn in a chat with `/web on`: the knowledge base and the web searched together, the web's sources shown with
their addresses; a failing provider costs nothing but its sources; `/new` drops the conversation's web passages."""

from __future__ import annotations

import io
import logging
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import pytest
import pytest_asyncio

from bot.app.services import Services, build_services
from bot.chat.manager import ConversationManager, TurnResult
from bot.cli.ask import answer_turn, cli_manager, new_conversation_key
from bot.types import ConversationKey
from fakes.openai_api import FakeOpenAI
from fakes.web_search.formats import Hit
from fakes.web_search.server import FakeWebSearch
from rag.ingest.documents import SourceFile
from rag.pipeline import TurnContext
from rag.web.leg import WebSearchLeg
from tests.conftest import EmbeddedSettings

HANDBOOK = "# Refunds\n\nRefunds are paid to the original card within five working days of the return.\n"
RELEASE_PAGE = (
    "<html><head><title>Python 3.13 released</title></head><body><nav>Menu</nav><main>"
    "<p>Python 3.13.0 was released on 7 October 2024 with an experimental free-threaded build.</p>"
    "</main></body></html>"
)
QUESTION = "When was Python 3.13 released?"


@dataclass
class World:
    """The running services with web search on DuckDuckGo's fake, and the knowledge base chats read."""

    services: Services
    manager: ConversationManager
    web: FakeWebSearch
    model: FakeOpenAI
    kb_id: str

    @property
    def leg(self) -> WebSearchLeg:
        leg = self.services.web_leg
        assert leg is not None
        return leg


@pytest_asyncio.fixture(scope="module")
async def world(tmp_path_factory: pytest.TempPathFactory, embedded_settings: EmbeddedSettings) -> AsyncIterator[World]:
    async with FakeWebSearch() as web, FakeOpenAI() as model:
        settings = embedded_settings(
            tmp_path_factory.mktemp("web-search"),
            CHAT_MODEL="fake-model",
            CHAT_MODEL_BASE_URL=model.base_url,
            CHAT_MODEL_API_KEY="test-key",
            CHAT_MODEL_MAX_RETRIES=0,
            RERANK_PROVIDER="none",
            WEB_SEARCH_PROVIDER="duckduckgo",
            WEB_SEARCH_DUCKDUCKGO_URL=web.html_url,
            WEB_SEARCH_DUCKDUCKGO_API_URL=web.instant_answer_url,
            WEB_SEARCH_TIMEOUT=1.0,
            WEB_SEARCH_BLACKLIST="# no content farms\n/content-farm\\.example/",
            # The fake's pages are on the loopback, which page reads (as /ingest) refuse unless allowed.
            URL_FETCH_ALLOWED_NETWORKS="127.0.0.0/8",
        )
        async with build_services(settings) as services:
            kb = await services.knowledge.create("shop", {})
            await services.ingestor.ingest(
                kb, SourceFile(HANDBOOK.encode(), source_uri="upload:handbook.md", filename="handbook.md")
            )
            yield World(services, cli_manager(services), web, model, kb.id)


@pytest.fixture(autouse=True)
def _serve(world: World) -> None:
    world.web.set_mode("ok")
    world.web.serve_page("release", RELEASE_PAGE)
    world.web.serve(
        [
            Hit(world.web.page_url("release"), "Python 3.13 released", "Python 3.13.0 is out."),
            Hit("https://content-farm.example/python", "Python 3.13 release date!!", "Click here."),
            Hit(world.web.page_url("login-news"), "Python 3.13 news", "Python 3.13 was released in October 2024."),
        ]
    )
    world.model.reply = "Python 3.13 was released on 7 October 2024 [1]."
    world.model.reply_for = _rewrite_or_reply(world.model)


def _rewrite_or_reply(model: FakeOpenAI) -> Callable[[Any], str]:
    """A model that rewrites a question as itself (it stands alone) and answers with `model.reply`."""

    def reply(body: Any) -> str:
        asked: str = body["messages"][-1]["content"]
        if asked.endswith("Rewritten question:"):
            return asked.rpartition("Latest question:")[2].removesuffix("Rewritten question:").strip()
        return model.reply

    return reply


async def _chat(world: World, *, web: bool) -> ConversationKey:
    key = new_conversation_key()
    await world.services.bindings.save_setting(key.platform, key.workspace, key.chat, web_search=web)
    return key


async def _ask(world: World, key: ConversationKey, question: str = QUESTION) -> tuple[TurnResult, TurnContext]:
    result = await answer_turn(world.manager, key, question, [world.kb_id], io.StringIO())
    assert result is not None
    assert result.turn is not None
    return result, result.turn


def _prompt(world: World) -> str:
    chats = [request for request in world.model.requests if request.path.endswith("/chat/completions")]
    content: str = chats[-1].json["messages"][-1]["content"]
    return content


async def test_a_chat_with_web_on_gets_web_sources_with_their_urls(world: World) -> None:
    key = await _chat(world, web=True)
    result, turn = await _ask(world, key)
    assert [c for c in turn.selected if "web" in c.legs], turn.reports
    release = world.web.page_url("release")
    shown = {source.url: source for source in result.answer.sources}
    assert release in shown  # the answer's sources link the page
    assert shown[release].title == "Python 3.13 released"
    assert release in {source.url for source in await world.manager.last_sources(key)}  # and /sources, later
    assert not [url for url in shown if "content-farm" in url]  # blacklisted: never shown ...
    prompt = _prompt(world)
    assert "content-farm.example" not in prompt  # ... nor given to the model
    assert f'type="web" title="Python 3.13 released" url="{release}"' in prompt
    assert "experimental free-threaded build" in prompt  # the page was read, not only its snippet
    assert "login-news" in world.web.page_requests  # the page behind a login counts with its snippet alone


async def test_a_chat_with_web_off_never_asks_the_provider(world: World) -> None:
    searches = len(world.web.searches)
    _, turn = await _ask(world, await _chat(world, web=False), "When are refunds paid to the card?")
    assert len(world.web.searches) == searches
    assert not [c for c in turn.candidates if "web" in c.legs]
    assert "web" not in _prompt(world)


@pytest.mark.parametrize("mode", ["slow", "429", "garbage"])
async def test_a_failing_provider_leaves_the_answer_to_the_knowledge_base_with_one_log_line(
    world: World, mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    world.web.set_mode(mode)  # type: ignore[arg-type]
    world.model.reply = "Refunds are paid within five working days [1]."
    with caplog.at_level(logging.INFO):
        result, turn = await _ask(world, await _chat(world, web=True), "When are refunds paid to the card?")
    assert result.answer.text.startswith("Refunds are paid within five working days [1].")
    assert "Refunds are paid to the original card" in _prompt(world)
    assert not [c for c in turn.candidates if "web" in c.legs]
    failures = [r for r in caplog.records if r.levelno >= logging.WARNING and "web" in r.getMessage()]
    assert len(failures) == 1, [r.getMessage() for r in failures]


async def test_the_conversations_web_passages_are_reused_and_dropped_by_new(world: World) -> None:
    key = await _chat(world, web=True)
    _, turn = await _ask(world, key)
    assert len(world.web.searched("html")) >= 1
    asked = len(world.web.searches)
    _, again = await _ask(world, key)  # the same search in the same conversation: its passages are reused
    assert len(world.web.searches) == asked
    assert [c.id for c in again.candidates if "web" in c.legs]
    scope = next(s for s in _scopes(world) if s.startswith(turn.conversation_id))
    await world.manager.reset(key)
    assert not [s for s in _scopes(world) if s.startswith(turn.conversation_id)], scope
    await _ask(world, key)
    assert len(world.web.searches) == asked + 1  # searched afresh after /new


def _scopes(world: World) -> list[str]:
    return list(world.leg.scratch._scopes)
