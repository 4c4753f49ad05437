"""What Telegram's servers keep for one bot (chats, users, members, messages, files, updates), read and set up."""

from __future__ import annotations

import copy
import itertools
from collections.abc import Callable

from fakes.base import FakeAPI, Json
from fakes.telegram.files import FileStore
from fakes.telegram.records import BotMessage, Draft, Poll, Webhook

DEFAULT_TOKEN = "123456789:AAF-fake_token_for_ragbot_tests"
DEFAULT_USER: Json = {"id": 1001, "is_bot": False, "first_name": "Alice", "username": "alice", "language_code": "en"}
DEFAULT_GROUP = -1001234567890


class TelegramState(FakeAPI):
    """The base of FakeTelegramBotAPI: its stored state, the scene a test sets up, and the transcript it reads."""

    def __init__(self, *, token: str, username: str, first_name: str, clock: Callable[[], float]) -> None:
        super().__init__(api_key=token)
        self.token = token
        self.bot_user: Json = {
            "id": int(token.split(":", 1)[0]),
            "is_bot": True,
            "first_name": first_name,
            "username": username,
            "can_join_groups": True,
            "can_read_all_group_messages": False,
            "supports_inline_queries": False,
            "can_connect_to_business": False,
            "has_main_web_app": False,
        }
        self.draft_log: list[Draft] = []
        self.chat_actions: list[tuple[int, str, int | None]] = []
        self.callback_answers: dict[str, Json] = {}
        self.webhook: Webhook | None = None
        self.webhook_deliveries: list[tuple[int, int]] = []  # (update_id, HTTP status)
        self.conflicts: list[
            str
        ] = []  # each 409 Conflict getUpdates answered (a held poll whose client hung up ends silently)
        self._clock = clock
        self._chats: dict[int, Json] = {}
        self._users: dict[int, Json] = {int(DEFAULT_USER["id"]): dict(DEFAULT_USER)}
        self._members: dict[tuple[int, int], str] = {}
        self._blocked: set[int] = set()
        self.left: set[int] = set()  # groups the bot left (leaveChat)
        self._next_message_id: dict[int, int] = {}
        self._bot_messages: dict[tuple[int, int], BotMessage] = {}
        self._user_messages: dict[tuple[int, int], Json] = {}
        self._drafts: dict[tuple[int, int], Draft] = {}
        self._commands: dict[tuple[str, str], list[Json]] = {}
        self._ids = itertools.count(1)
        self._files = FileStore(self._ids)
        self._pending_callbacks: set[str] = set()
        self._updates: list[Json] = []
        self._update_ids = itertools.count(10_000)
        self._allowed_updates: set[str] | None = None
        self._poll: Poll | None = None

    # --- Setting the scene ------------------------------------------------------------------------------------------

    def user(self, user_id: int = 1001, first_name: str = "Alice", username: str | None = "alice") -> Json:
        """A User, remembered so getChatMember can find it."""
        user: Json = {"id": user_id, "is_bot": False, "first_name": first_name, "language_code": "en"}
        if username:
            user["username"] = username
        self._users[user_id] = user
        return dict(user)

    def group(self, chat_id: int = DEFAULT_GROUP, title: str = "Test group", *, forum: bool = False) -> Json:
        """A supergroup (or a basic group for ids not starting -100), remembered for getChat."""
        kind = "supergroup" if str(chat_id).startswith("-100") else "group"
        chat: Json = {"id": chat_id, "title": title, "type": kind}
        if forum:
            chat["is_forum"] = True
        self._chats[chat_id] = chat
        return dict(chat)

    def set_member(self, chat_id: int, user: Json, status: str = "member") -> None:
        """Record a user's status in a chat: creator, administrator, member, restricted, left or kicked."""
        self._users[int(user["id"])] = user
        self._members[(chat_id, int(user["id"]))] = status

    def block_chat(self, chat_id: int) -> None:
        """From now on sends to this chat fail with 403: kicked from a group, blocked by a private user."""
        self._blocked.add(chat_id)

    def add_file(
        self, data: bytes, name: str = "file.bin", mime: str = "application/octet-stream", *, size: int | None = None
    ) -> str:
        """Store a file and return its file_id; `size` overrides the reported size (to test the 20 MB limit)."""
        return self._files.add(data, name, mime, size=size).file_id

    # --- Transcript -------------------------------------------------------------------------------------------------

    def bot_messages(self, chat_id: int, thread_id: int | None = None) -> list[BotMessage]:
        """The bot's messages in a chat (in one topic when thread_id is given) that still exist, oldest first."""
        return [
            message
            for (chat, _), message in sorted(self._bot_messages.items())
            if chat == chat_id and not message.deleted and (thread_id is None or message.thread_id == thread_id)
        ]

    def visible(self, chat_id: int, thread_id: int | None = None) -> list[str]:
        """What a user sees from the bot in a chat: each existing message's current text, oldest first."""
        return [message.text for message in self.bot_messages(chat_id, thread_id)]

    def drafts(self, chat_id: int) -> dict[int, str]:
        """The latest text of each draft in a chat, by draft_id."""
        return {draft_id: draft.text for (chat, draft_id), draft in self._drafts.items() if chat == chat_id}

    # --- Chats and messages -----------------------------------------------------------------------------------------

    def _private_chat(self, user: Json) -> Json:
        self._users[int(user["id"])] = user
        chat: Json = {"id": user["id"], "first_name": user["first_name"], "type": "private"}
        if "username" in user:
            chat["username"] = user["username"]
        self._chats[int(user["id"])] = chat
        return chat

    def _chat(self, chat_id: int) -> Json:
        """The chat with this id; unknown ids become a private chat (positive) or a group (negative)."""
        if chat_id not in self._chats:
            if chat_id > 0:
                self._chats[chat_id] = {"id": chat_id, "first_name": f"User {chat_id}", "type": "private"}
            else:
                self.group(chat_id, f"Group {chat_id}")
        return self._chats[chat_id]

    def _take_message_id(self, chat_id: int) -> int:
        """Message ids count up per chat, shared by users' and the bot's messages."""
        number = self._next_message_id.get(chat_id, 1)
        self._next_message_id[chat_id] = number + 1
        return number

    def _lookup(self, chat_id: int, message_id: int) -> Json | None:
        """Any existing message in a chat, the bot's or a user's, as JSON without its own reply."""
        found: Json | None
        bot_message = self._bot_messages.get((chat_id, message_id))
        if bot_message is not None and not bot_message.deleted:
            found = self._message_json(bot_message)
        else:
            user_message = self._user_messages.get((chat_id, message_id))
            found = copy.deepcopy(user_message) if user_message is not None else None
        if found is not None:
            found.pop("reply_to_message", None)
        return found

    def _message_json(self, message: BotMessage) -> Json:
        chat = self._chat(message.chat_id)
        body: Json = {
            "message_id": message.message_id,
            "from": {key: self.bot_user[key] for key in ("id", "is_bot", "first_name", "username")},
            "chat": dict(chat),
            "date": message.date,
            "text": message.text,
        }
        if message.entities:
            body["entities"] = message.entities
        if message.thread_id is not None:
            body["message_thread_id"] = message.thread_id
            if chat.get("is_forum"):
                body["is_topic_message"] = True
        if message.reply_to is not None:
            body["reply_to_message"] = self._lookup(message.chat_id, message.reply_to)
        if message.edit_date is not None:
            body["edit_date"] = message.edit_date
        if message.reply_markup is not None:
            body["reply_markup"] = message.reply_markup
        return body
