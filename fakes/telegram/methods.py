"""The Bot API methods the fake answers, from getMe and getUpdates to sendMessageDraft and getChatAdministrators."""

from __future__ import annotations

import asyncio
import copy
import json
import re
import time
from collections.abc import Awaitable, Callable
from typing import Any

from fakes.base import Json
from fakes.telegram.files import MAX_DOWNLOAD_BYTES
from fakes.telegram.records import BotMessage, Draft, Poll, Webhook
from fakes.telegram.state import TelegramState
from fakes.telegram.text import message_text
from fakes.telegram.wire import (
    BLOCKED,
    DRAFT_PEER_INVALID,
    KICKED,
    NOT_MEMBER,
    NOT_MODIFIED,
    TERMINATED_BY_POLL,
    TERMINATED_BY_WEBHOOK,
    WEBHOOK_ACTIVE,
    ApiError,
    WithDescription,
    optional_int,
    required_int,
)

# Updates Telegram leaves out unless allowed_updates names them (getUpdates docs).
_OPT_IN_UPDATES = frozenset({"chat_member", "message_reaction", "message_reaction_count"})

_CHAT_ACTIONS = frozenset(
    {
        "typing",
        "upload_photo",
        "record_video",
        "upload_video",
        "record_voice",
        "upload_voice",
        "upload_document",
        "choose_sticker",
        "find_location",
        "record_video_note",
        "upload_video_note",
    }
)

_SECRET_TOKEN = re.compile(r"[A-Za-z0-9_-]{1,256}")
_COMMAND = re.compile(r"[a-z0-9_]{1,32}")
# Bot API limits: an inline button's callback_data is 1-64 bytes; answerCallbackQuery's text 0-200 characters.
MAX_CALLBACK_DATA = 64
MAX_CALLBACK_ANSWER = 200


class BotMethods(TelegramState):
    """FakeTelegramBotAPI's Bot API methods: each takes the call's typed parameters and returns its result."""

    def _handlers(self) -> dict[str, Callable[[Json], Awaitable[Any]]]:
        """The methods by lower-case name (Telegram matches method names case-insensitively)."""
        return {
            name.lower(): handler
            for name, handler in {
                "getMe": self._get_me,
                "logOut": self._true,
                "close": self._true,
                "getUpdates": self._get_updates,
                "setWebhook": self._set_webhook,
                "deleteWebhook": self._delete_webhook,
                "getWebhookInfo": self._get_webhook_info,
                "setMyCommands": self._set_my_commands,
                "getMyCommands": self._get_my_commands,
                "deleteMyCommands": self._delete_my_commands,
                "sendMessage": self._send_message,
                "editMessageText": self._edit_message_text,
                "editMessageReplyMarkup": self._edit_message_reply_markup,
                "sendMessageDraft": self._send_message_draft,
                "sendChatAction": self._send_chat_action,
                "deleteMessage": self._delete_message,
                "getFile": self._get_file,
                "answerCallbackQuery": self._answer_callback_query,
                "getChat": self._get_chat,
                "getChatMember": self._get_chat_member,
                "getChatAdministrators": self._get_chat_administrators,
                "leaveChat": self._leave_chat,
            }.items()
        }

    def commands(self, scope: Json | None = None, language_code: str = "") -> list[Json]:
        """The command menu set for a scope (default scope when None) and language."""
        return self._commands.get((_scope_key(scope), language_code), [])

    # --- Methods ----------------------------------------------------------------------------------------------------

    async def _true(self, params: Json) -> bool:
        return True

    async def _get_me(self, params: Json) -> Json:
        return self.bot_user

    async def _get_updates(self, params: Json) -> list[Json]:
        if self.webhook is not None:
            self.conflicts.append(WEBHOOK_ACTIVE)
            raise ApiError(409, WEBHOOK_ACTIVE)
        offset = optional_int(params, "offset") or 0
        limit = min(max(optional_int(params, "limit") or 100, 1), 100)
        timeout = max(optional_int(params, "timeout") or 0, 0)
        if params.get("allowed_updates") is not None:  # Telegram remembers the last list it was given
            self._allowed_updates = set(params["allowed_updates"]) or None
        if offset > 0:
            self._updates = [update for update in self._updates if update["update_id"] >= offset]
        elif offset < 0:
            self._updates = self._updates[offset:]
        batch = self._deliverable(limit)
        if batch or timeout == 0:
            return batch
        # tdlib's bot API server: a new waiting getUpdates ends the one already held, which gets the 409.
        if self._poll is not None:
            self._poll.conflict = TERMINATED_BY_POLL
            self._poll.wake.set()
        poll = self._poll = Poll()
        self._notify()
        try:
            async with asyncio.timeout(timeout):
                while not (batch := self._deliverable(limit)) and not self._closing.is_set():
                    await poll.wake.wait()
                    poll.wake.clear()
                    if poll.conflict is not None:
                        self.conflicts.append(poll.conflict)
                        raise ApiError(409, poll.conflict)
        except TimeoutError:
            return []
        finally:
            if self._poll is poll:
                self._poll = None
        return batch

    def _deliverable(self, limit: int) -> list[Json]:
        """The next updates the poller may see; updates of types it did not allow are dropped, as Telegram does."""
        allowed = self._allowed_updates
        self._updates = [
            update
            for update in self._updates
            if (kind := _update_kind(update)) is None
            or (kind in allowed if allowed is not None else kind not in _OPT_IN_UPDATES)
        ]
        return copy.deepcopy(self._updates[:limit])

    async def _set_webhook(self, params: Json) -> WithDescription:
        url = str(params.get("url") or "")
        if not url:
            return await self._delete_webhook(params)
        secret = params.get("secret_token")
        if secret is not None and not _SECRET_TOKEN.fullmatch(str(secret)):
            raise ApiError(400, "Bad Request: secret token contains unallowed characters")
        if params.get("drop_pending_updates"):
            self._updates.clear()
        if self._poll is not None:
            self._poll.conflict = TERMINATED_BY_WEBHOOK
            self._poll.wake.set()
        self.webhook = Webhook(
            url, secret, params.get("allowed_updates"), optional_int(params, "max_connections") or 40
        )
        return WithDescription(True, "Webhook was set")

    async def _delete_webhook(self, params: Json) -> WithDescription:
        if params.get("drop_pending_updates"):
            self._updates.clear()
        was_set, self.webhook = self.webhook is not None, None
        return WithDescription(True, "Webhook was deleted" if was_set else "Webhook is already deleted")

    async def _get_webhook_info(self, params: Json) -> Json:
        info: Json = {"url": "", "has_custom_certificate": False, "pending_update_count": len(self._updates)}
        if self.webhook is not None:
            info.update(url=self.webhook.url, max_connections=self.webhook.max_connections)
            if self.webhook.allowed_updates is not None:
                info["allowed_updates"] = self.webhook.allowed_updates
        return info

    async def _set_my_commands(self, params: Json) -> bool:
        commands = params.get("commands")
        if not isinstance(commands, list):
            raise ApiError(400, "Bad Request: commands is empty")
        if len(commands) > 100:
            raise ApiError(400, "Bad Request: BOT_COMMANDS_TOO_MUCH")
        for command in commands:
            if not _COMMAND.fullmatch(str(command.get("command", ""))):
                raise ApiError(400, "Bad Request: BOT_COMMAND_INVALID")
            if not 1 <= len(str(command.get("description", ""))) <= 256:
                raise ApiError(400, "Bad Request: command description is empty")
        self._commands[(_scope_key(params.get("scope")), str(params.get("language_code") or ""))] = commands
        return True

    async def _get_my_commands(self, params: Json) -> list[Json]:
        return self.commands(params.get("scope"), str(params.get("language_code") or ""))

    async def _delete_my_commands(self, params: Json) -> bool:
        self._commands.pop((_scope_key(params.get("scope")), str(params.get("language_code") or "")), None)
        return True

    async def _send_message(self, params: Json) -> Json:
        chat_id = self._target_chat(params)
        text, entities = message_text(params, "text")
        thread_id = optional_int(params, "message_thread_id")
        reply_to = self._reply_target(chat_id, params)
        message = BotMessage(
            chat_id=chat_id,
            message_id=self._take_message_id(chat_id),
            text=text,
            entities=entities,
            reply_markup=_inline_markup(params.get("reply_markup")),
            date=int(time.time()),
            thread_id=thread_id,
            reply_to=reply_to,
            history=[text],
        )
        self._bot_messages[(chat_id, message.message_id)] = message
        return self._message_json(message)

    async def _edit_message_text(self, params: Json) -> Json:
        message = self._editable(params)
        text, entities = message_text(params, "text")
        markup = _inline_markup(params.get("reply_markup"))  # an edit without reply_markup removes the keyboard
        if (text, entities, markup) == (message.text, message.entities, message.reply_markup):
            raise ApiError(400, NOT_MODIFIED)
        message.text, message.entities, message.reply_markup = text, entities, markup
        message.edit_date = int(time.time())
        message.history.append(text)
        return self._message_json(message)

    async def _edit_message_reply_markup(self, params: Json) -> Json:
        message = self._editable(params)
        markup = _inline_markup(params.get("reply_markup"))
        if markup == message.reply_markup:
            raise ApiError(400, NOT_MODIFIED)
        message.reply_markup = markup
        message.edit_date = int(time.time())
        return self._message_json(message)

    async def _send_message_draft(self, params: Json) -> bool:
        chat_id = self._target_chat(params)
        if chat_id <= 0:
            raise ApiError(400, DRAFT_PEER_INVALID)
        draft_id = required_int(params, "draft_id")
        if draft_id == 0:
            raise ApiError(400, "Bad Request: draft_id must be non-zero")
        # Bot API 10.0: text is optional (empty shows "Thinking..."), at most 4096 characters after parsing.
        text, _ = message_text(params, "text", allow_empty=True)
        draft = Draft(chat_id, draft_id, text, optional_int(params, "message_thread_id"), self._clock())
        self.draft_log.append(draft)
        self._drafts[(chat_id, draft_id)] = draft
        return True

    async def _send_chat_action(self, params: Json) -> bool:
        chat_id = self._target_chat(params)
        action = str(params.get("action") or "")
        if action not in _CHAT_ACTIONS:
            raise ApiError(400, "Bad Request: wrong parameter action in request")
        self.chat_actions.append((chat_id, action, optional_int(params, "message_thread_id")))
        return True

    async def _delete_message(self, params: Json) -> bool:
        chat_id = self._target_chat(params)
        message_id = required_int(params, "message_id")
        message = self._bot_messages.get((chat_id, message_id))
        if message is not None and not message.deleted:
            message.deleted = True
            return True
        if self._user_messages.pop((chat_id, message_id), None) is not None:
            return True
        raise ApiError(400, "Bad Request: message to delete not found")

    async def _get_file(self, params: Json) -> Json:
        stored = self._files.find(str(params.get("file_id") or ""))
        if stored is None:
            raise ApiError(400, "Bad Request: wrong file_id or the file is temporarily unavailable")
        if stored.size > MAX_DOWNLOAD_BYTES:
            raise ApiError(400, "Bad Request: file is too big")
        return {**self._files.fields(stored.file_id), "file_path": stored.file_path}

    async def _answer_callback_query(self, params: Json) -> bool:
        query_id = str(params.get("callback_query_id") or "")
        if query_id not in self._pending_callbacks:
            raise ApiError(400, "Bad Request: query is too old and response timeout expired or query ID is invalid")
        if len(str(params.get("text") or "")) > MAX_CALLBACK_ANSWER:
            raise ApiError(400, "Bad Request: MESSAGE_TOO_LONG")
        self._pending_callbacks.discard(query_id)
        self.callback_answers[query_id] = params
        return True

    async def _get_chat(self, params: Json) -> Json:
        chat = self._chat(self._chat_id(params))
        return {**chat, "accent_color_id": 0, "max_reaction_count": 11, "accepted_gift_types": _NO_GIFTS}

    async def _get_chat_member(self, params: Json) -> Json:
        chat_id = self._chat_id(params)
        user_id = required_int(params, "user_id")
        if user_id == self.bot_user["id"]:
            return _member_json(self.bot_user, self._members.get((chat_id, user_id), "member"))
        if user_id not in self._users:
            raise ApiError(400, "Bad Request: user not found")
        status = self._members.get((chat_id, user_id), "member" if chat_id == user_id else "left")
        return _member_json(self._users[user_id], status)

    async def _get_chat_administrators(self, params: Json) -> list[Json]:
        chat_id = self._chat_id(params)
        if chat_id > 0:
            raise ApiError(400, "Bad Request: there are no administrators in the private chat")
        return [
            _member_json(self._users[user_id], status)
            for (chat, user_id), status in self._members.items()
            if chat == chat_id and status in {"creator", "administrator"}
        ]

    async def _leave_chat(self, params: Json) -> bool:
        chat_id = self._chat_id(params)
        if chat_id > 0:
            raise ApiError(400, "Bad Request: chat member status can't be changed in private chats")
        self.left.add(chat_id)  # no longer a member: what the bot sends there now fails with 403
        return True

    # --- Method helpers ---------------------------------------------------------------------------------------------

    def _chat_id(self, params: Json) -> int:
        chat_id = params.get("chat_id")
        if chat_id is None or chat_id == "":
            raise ApiError(400, "Bad Request: chat_id is empty")
        if not isinstance(chat_id, int):
            raise ApiError(400, "Bad Request: chat not found")  # @username lookups are not modelled
        return chat_id

    def _target_chat(self, params: Json) -> int:
        """The chat a message goes to; 403 if the bot was kicked or blocked there."""
        chat_id = self._chat_id(params)
        if chat_id in self.left:
            raise ApiError(403, NOT_MEMBER)
        if chat_id in self._blocked:
            raise ApiError(403, KICKED if chat_id < 0 else BLOCKED)
        self._chat(chat_id)
        return chat_id

    def _editable(self, params: Json) -> BotMessage:
        if params.get("inline_message_id"):
            raise ApiError(400, "Bad Request: MESSAGE_ID_INVALID")  # inline messages are not modelled
        chat_id = self._target_chat(params)
        message_id = required_int(params, "message_id")
        message = self._bot_messages.get((chat_id, message_id))
        if message is None and (chat_id, message_id) in self._user_messages:
            raise ApiError(400, "Bad Request: message can't be edited")
        if message is None or message.deleted:
            raise ApiError(400, "Bad Request: message to edit not found")
        return message

    def _reply_target(self, chat_id: int, params: Json) -> int | None:
        reply = params.get("reply_parameters") or {}
        message_id = reply.get("message_id") if isinstance(reply, dict) else None
        if message_id is None:
            message_id = optional_int(params, "reply_to_message_id")
        if message_id is None:
            return None
        if self._lookup(chat_id, int(message_id)) is None:
            if reply.get("allow_sending_without_reply") or params.get("allow_sending_without_reply"):
                return None
            raise ApiError(400, "Bad Request: message to be replied not found")
        return int(message_id)


_NO_GIFTS = {
    "unlimited_gifts": False,
    "limited_gifts": False,
    "unique_gifts": False,
    "premium_subscription": False,
}


def _inline_markup(markup: Any) -> Json | None:
    """Telegram keeps (and echoes) only inline keyboards on a message; a button's callback_data is 1-64 bytes."""
    if not (isinstance(markup, dict) and "inline_keyboard" in markup):
        return None
    for row in markup["inline_keyboard"]:
        for button in row:
            data = button.get("callback_data")
            if data is not None and not 1 <= len(str(data).encode()) <= MAX_CALLBACK_DATA:
                raise ApiError(400, "Bad Request: BUTTON_DATA_INVALID")
    return markup


def _scope_key(scope: Any) -> str:
    return json.dumps(scope or {"type": "default"}, sort_keys=True)


def _update_kind(update: Json) -> str | None:
    return next((key for key in update if key != "update_id"), None)


def _member_json(user: Json, status: str) -> Json:
    member: Json = {"status": status, "user": user}
    if status == "creator":
        member["is_anonymous"] = False
    elif status == "administrator":
        member.update(
            can_be_edited=False,
            is_anonymous=False,
            can_manage_chat=True,
            can_delete_messages=True,
            can_manage_video_chats=True,
            can_restrict_members=True,
            can_promote_members=False,
            can_change_info=True,
            can_invite_users=True,
            can_post_stories=False,
            can_edit_stories=False,
            can_delete_stories=False,
        )
    elif status == "kicked":
        member["until_date"] = 0
    return member
