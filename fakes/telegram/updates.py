"""Updates for the bot: realistic ones built (each numbered when built), then queued for getUpdates or POSTed."""

from __future__ import annotations

import bisect
import time
from typing import Any

import aiohttp

from fakes.base import Json
from fakes.telegram.state import DEFAULT_GROUP, DEFAULT_USER, TelegramState
from fakes.telegram.text import incoming_entities


class Updates(TelegramState):
    """FakeTelegramBotAPI's updates: building them as Telegram would send them, and delivering them."""

    # --- Delivery ---------------------------------------------------------------------------------------------------

    def queue_update(self, update: Json) -> Json:
        """Queue an update for getUpdates (kept in update_id order, as Telegram's queue is); returns it.

        The builders number their updates; a hand-written update without an update_id gets the next one in place.
        """
        self._assign_update_id(update)
        bisect.insort(self._updates, update, key=lambda queued: queued["update_id"])
        if self._poll is not None:
            self._poll.wake.set()
        self._notify()
        return update

    async def post_webhook(self, url: str, update: Json, secret: str | None = None) -> int:
        """POST an update to a webhook endpoint as Telegram does (secret in X-Telegram-Bot-Api-Secret-Token).

        Gives the update an update_id in place if it has none, so posting it again is a redelivery. Returns the status.
        """
        self._assign_update_id(update)
        headers = {"X-Telegram-Bot-Api-Secret-Token": secret} if secret is not None else {}
        async with aiohttp.ClientSession() as session, session.post(url, json=update, headers=headers) as response:
            await response.read()
        self.webhook_deliveries.append((update["update_id"], response.status))
        self._notify()
        return response.status

    async def deliver_webhook(self, update: Json) -> int:
        """POST an update to the webhook setWebhook registered, with its secret token."""
        if self.webhook is None:
            raise RuntimeError("no webhook is set")
        return await self.post_webhook(self.webhook.url, update, self.webhook.secret_token)

    @property
    def pending_updates(self) -> int:
        """Updates queued and not yet confirmed by a getUpdates offset."""
        return len(self._updates)

    @property
    def polling(self) -> bool:
        """Whether a getUpdates call is being held open right now."""
        return self._poll is not None

    def _assign_update_id(self, update: Json) -> None:
        if "update_id" not in update:
            update["update_id"] = next(self._update_ids)

    def _update(self, payload: Json) -> Json:
        """An update around one payload, numbered now (Telegram numbers updates as they happen)."""
        return {"update_id": next(self._update_ids), **payload}

    # --- Builders ---------------------------------------------------------------------------------------------------

    def private_message(self, text: str, *, user: Json | None = None, reply_to: int | None = None) -> Json:
        """An update with a user's text message in their private chat with the bot."""
        sender = user or DEFAULT_USER
        return self._update(
            {"message": self._incoming(self._private_chat(sender), sender, text=text, reply_to=reply_to)}
        )

    def group_message(
        self,
        text: str,
        *,
        chat_id: int = DEFAULT_GROUP,
        user: Json | None = None,
        mention: bool = True,
        thread_id: int | None = None,
        reply_to: int | None = None,
    ) -> Json:
        """An update with a group message; with `mention` it starts with @botname (privacy mode lets it through)."""
        mention_text = f"@{self.bot_user['username']}"
        if mention and mention_text not in text:
            text = f"{mention_text} {text}"
        sender = user or DEFAULT_USER
        chat = self._chats.get(chat_id) or self.group(chat_id, forum=thread_id is not None)
        return self._update(
            {"message": self._incoming(chat, sender, text=text, reply_to=reply_to, thread_id=thread_id)}
        )

    def reply_to_bot(self, message_id: int, text: str, *, chat_id: int | None = None, user: Json | None = None) -> Json:
        """An update with a user's reply to one of the bot's messages (delivered in groups even without a mention)."""
        sender = user or DEFAULT_USER
        chat_id = chat_id if chat_id is not None else int(sender["id"])
        if chat_id > 0:
            return self.private_message(text, user=sender, reply_to=message_id)
        thread_id = self._bot_messages[(chat_id, message_id)].thread_id
        return self.group_message(
            text, chat_id=chat_id, user=sender, mention=False, reply_to=message_id, thread_id=thread_id
        )

    def topic_message(self, text: str, *, thread_id: int, chat_id: int = DEFAULT_GROUP, **kwargs: Any) -> Json:
        """An update with a message in a forum topic (message_thread_id, is_topic_message)."""
        if chat_id not in self._chats or not self._chats[chat_id].get("is_forum"):
            self.group(chat_id, self._chats.get(chat_id, {}).get("title", "Test forum"), forum=True)
        return self.group_message(text, chat_id=chat_id, thread_id=thread_id, **kwargs)

    def document_message(
        self, file_id: str, *, caption: str | None = None, chat_id: int | None = None, user: Json | None = None
    ) -> Json:
        """An update with a document (from add_file) and an optional caption, e.g. "/ingest"."""
        stored = self._files[file_id]
        document = {
            "file_id": stored.file_id,
            "file_unique_id": stored.file_unique_id,
            "file_name": stored.name,
            "mime_type": stored.mime,
            "file_size": stored.size,
        }
        return self._media_update({"document": document}, caption, chat_id, user)

    def photo_message(
        self, file_id: str, *, caption: str | None = None, chat_id: int | None = None, user: Json | None = None
    ) -> Json:
        """An update with a photo: a thumbnail and the full size, both downloadable."""
        stored = self._files[file_id]
        thumb = self.add_file(stored.data[:1024], f"thumb_{stored.name}", stored.mime)
        sizes = [
            {**self._files.fields(thumb), "width": 90, "height": 68},
            {**self._files.fields(file_id), "width": 1280, "height": 960},
        ]
        return self._media_update({"photo": sizes}, caption, chat_id, user)

    def voice_message(
        self, file_id: str, *, duration: int = 3, chat_id: int | None = None, user: Json | None = None
    ) -> Json:
        """An update with a voice note (OGG/Opus)."""
        voice = {**self._files.fields(file_id), "duration": duration, "mime_type": self._files[file_id].mime}
        return self._media_update({"voice": voice}, None, chat_id, user)

    def sticker_message(self, *, emoji: str = "👍", chat_id: int | None = None, user: Json | None = None) -> Json:
        """An update with a regular (static WebP) sticker."""
        file_id = self.add_file(b"RIFF\x00\x00\x00\x00WEBPVP8 ", "sticker.webp", "image/webp")
        sticker = {
            **self._files.fields(file_id),
            "type": "regular",
            "width": 512,
            "height": 512,
            "is_animated": False,
            "is_video": False,
            "emoji": emoji,
            "set_name": "RagbotTestPack",
        }
        return self._media_update({"sticker": sticker}, None, chat_id, user)

    def callback_query(self, data: str, *, message_id: int, chat_id: int, user: Json | None = None) -> Json:
        """An update for a press on an inline button under one of the bot's messages."""
        query_id = str(4_000_000_000 + next(self._ids))
        self._pending_callbacks.add(query_id)
        message = self._message_json(self._bot_messages[(chat_id, message_id)])
        return self._update(
            {
                "callback_query": {
                    "id": query_id,
                    "from": user or DEFAULT_USER,
                    "message": message,
                    "chat_instance": str(abs(chat_id) * 7919),
                    "data": data,
                }
            }
        )

    def edited_message(self, update: Json, text: str) -> Json:
        """An edited_message update for the message in `update`, now saying `text`."""
        original = update.get("message") or update["edited_message"]
        edited = {
            **original,
            "text": text,
            "edit_date": int(time.time()),
            "entities": incoming_entities(text),
        }
        if not edited["entities"]:
            del edited["entities"]
        self._user_messages[(edited["chat"]["id"], edited["message_id"])] = edited
        return self._update({"edited_message": edited})

    def _media_update(self, media: Json, caption: str | None, chat_id: int | None, user: Json | None) -> Json:
        sender = user or DEFAULT_USER
        chat = self._private_chat(sender) if chat_id is None or chat_id > 0 else self._chat(chat_id)
        message = self._incoming(chat, sender, text=None)
        message.update(media)
        if caption:
            message["caption"] = caption
            if entities := incoming_entities(caption):
                message["caption_entities"] = entities
        return self._update({"message": message})

    def _incoming(
        self,
        chat: Json,
        user: Json,
        *,
        text: str | None,
        reply_to: int | None = None,
        thread_id: int | None = None,
    ) -> Json:
        """A user's message, numbered in the chat's sequence and remembered for replies and edits."""
        chat_id = int(chat["id"])
        if chat_id < 0 and (chat_id, int(user["id"])) not in self._members:
            self.set_member(chat_id, user)
        message: Json = {
            "message_id": self._take_message_id(chat_id),
            "from": user,
            "chat": dict(chat),
            "date": int(time.time()),
        }
        if thread_id is not None:
            message["message_thread_id"] = thread_id
            message["is_topic_message"] = True
        if reply_to is not None:
            message["reply_to_message"] = self._lookup(chat_id, reply_to)
        if text is not None:
            message["text"] = text
            if entities := incoming_entities(text):
                message["entities"] = entities
        self._user_messages[(chat_id, message["message_id"])] = message
        return message
