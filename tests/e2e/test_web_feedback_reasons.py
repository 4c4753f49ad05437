"""Why a 👎 in the web chat: the small menu under a 👎 answer, in a real browser against `ragbot serve`."""

from __future__ import annotations

from typing import Any

from playwright.async_api import expect

from bot.chat.feedback import NOTE_MAX, REASONS
from bot.words import messages
from tests.e2e.test_web_chat import VPN_ANSWER, Chat, Site, browser, chat, site

__all__ = ["browser", "chat", "site"]  # the module's ragbot serve and browser, as test_web_chat builds them

# The page's own fetch, so the request carries its session cookie and headers as the chat's requests do.
POST = """async ([path, body]) => {
  const response = await fetch(path, {method: 'POST', credentials: 'same-origin',
    headers: {'Content-Type': 'application/json', Accept: 'application/json'}, body: JSON.stringify(body)});
  return [response.status, await response.json()];
}"""


async def _post(chat: Chat, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    status, answer = await chat.page.evaluate(POST, [path, body])
    return int(status), dict(answer)


async def test_a_thumbs_down_opens_a_menu_whose_reason_is_stored_shown_and_restored(site: Site, chat: Chat) -> None:
    site.model.answer = lambda prompt: VPN_ANSWER
    await chat.open()
    answer = await chat.ask("Where is the VPN client installed from?")
    menu = answer.get_by_test_id("feedback-why")
    await expect(menu).to_have_count(0)  # nobody is asked before a 👎
    await answer.get_by_test_id("feedback-down").click()
    await expect(menu).to_be_visible()
    for reason in REASONS:
        await expect(menu.get_by_test_id(f"reason-{reason}")).to_have_count(1)
    await expect(menu.get_by_test_id("reason-note")).to_have_attribute("maxlength", str(NOTE_MAX))
    await menu.get_by_test_id("reason-outdated").check()
    await menu.get_by_test_id("reason-note").fill("The Software Center was renamed.")
    await menu.get_by_test_id("reason-send").click()
    noted = messages.feedback_noted("outdated", "en")
    await expect(menu).to_have_text(noted)

    await chat.page.reload()
    await expect(chat.page.locator("body[data-ready=true]")).to_have_count(1)
    restored = chat.messages.nth(1)
    await expect(restored.get_by_test_id("feedback-down")).to_have_attribute("aria-pressed", "true")
    await expect(restored.get_by_test_id("feedback-why")).to_have_text(noted)

    await restored.get_by_test_id("feedback-up").click()  # changed to 👍: the reason goes with the 👎
    await expect(restored.get_by_test_id("feedback-why")).to_have_count(0)
    await chat.page.reload()
    await expect(chat.page.locator("body[data-ready=true]")).to_have_count(1)
    await expect(chat.messages.nth(1).get_by_test_id("feedback-up")).to_have_attribute("aria-pressed", "true")
    await expect(chat.messages.nth(1).get_by_test_id("feedback-why")).to_have_count(0)
    chat.assert_nothing_ran()


async def test_bad_reasons_are_refused_with_a_clear_line_and_nothing_is_stored(site: Site, chat: Chat) -> None:
    site.model.answer = lambda prompt: VPN_ANSWER
    await chat.open()
    answer = await chat.ask("Where is the VPN client installed from?")
    message_id = str(await answer.get_attribute("data-message-id"))
    reason = "/api/feedback/reason"
    assert await _post(chat, reason, {"message_id": message_id, "reason": "wrong"}) == (
        409,
        {"error": messages.feedback_reason_refused("not_down", "en")},
    )
    await answer.get_by_test_id("feedback-down").click()
    await expect(answer.get_by_test_id("feedback-why")).to_be_visible()
    long_note = {"message_id": message_id, "reason": "other", "note": "x" * (NOTE_MAX + 1)}
    assert await _post(chat, reason, long_note) == (
        400,
        {"error": messages.feedback_reason_refused("too_long", "en", NOTE_MAX)},
    )
    assert (await _post(chat, reason, {"message_id": message_id, "reason": "because"}))[0] == 400
    assert (await _post(chat, reason, {"message_id": message_id}))[0] == 400
    assert await _post(chat, reason, {"message_id": "no-such-answer", "reason": "wrong"}) == (
        404,
        {"error": messages.feedback_gone("en")},
    )
    # The menu is still there to answer, and a good reason sent twice is stored once.
    for _ in range(2):
        assert await _post(chat, reason, {"message_id": message_id, "reason": "wrong"}) == (200, {"ok": True})
    await chat.page.reload()
    await expect(chat.messages.nth(1).get_by_test_id("feedback-why")).to_have_text(
        messages.feedback_noted("wrong", "en")
    )
