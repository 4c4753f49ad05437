"""What chats read, cached per process: settings, bindings, knowledge-base names and conversations.

A turn's one read returns the config epoch beside its history (ConversationRepo.turn_view); every change to what
chats read moves that epoch in the same transaction, on whichever instance made it. So a cached view is used only
while the epoch it was read under still holds, and the common turn reads nothing else.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

from bot.chat.parts import ChatSettings, Conversations, KnowledgeNames
from bot.types import ConversationKey
from storage.records import ChatSettingRecord, ConversationRecord

log = logging.getLogger(__name__)

# Chats and conversations remembered at most; past this the oldest half is forgotten (re-read when next needed).
_MAX_ENTRIES = 20_000


@dataclass(frozen=True, slots=True)
class ChatConfig:
    """One chat's stored behaviour and the knowledge bases bound to it."""

    setting: ChatSettingRecord
    bound: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Resolved:
    """Knowledge-base names resolved to ids, and the names that do not exist."""

    ids: tuple[str, ...]
    missing: tuple[str, ...]


class ChatState:
    """The cached views, dropped together whenever the config epoch moves."""

    def __init__(self, settings: ChatSettings, knowledge: KnowledgeNames, conversations: Conversations) -> None:
        self._settings = settings
        self._knowledge = knowledge
        self._conversations = conversations
        self._epoch: int | None = None
        self._configs: dict[ConversationKey, ChatConfig] = {}
        self._names: dict[tuple[str, ...], Resolved] = {}
        self._visible: dict[tuple[str, tuple[str, ...]], frozenset[str]] = {}
        self._known: dict[ConversationKey, ConversationRecord] = {}
        # One read per chat at a time: a burst of a new chat's first messages shares it.
        self._loading: dict[ConversationKey, asyncio.Future[ChatConfig]] = {}

    def observe(self, epoch: int) -> bool:
        """Note the epoch a read saw; True (and every cached view dropped) when it moved since the last one."""
        if epoch == self._epoch:
            return False
        if self._epoch is not None:
            log.debug("chat_state=stale epoch=%d was=%d", epoch, self._epoch)
        self._epoch = epoch
        self.forget()
        return True

    def forget(self) -> None:
        """Drop every cached view of what chats read (conversations stay: their ids never change)."""
        self._configs.clear()
        self._names.clear()
        self._visible.clear()

    def cached_setting(self, chat: ConversationKey) -> ChatSettingRecord | None:
        """The chat's setting as last read, without reading (None when not cached)."""
        config = self._configs.get(chat)
        return config.setting if config is not None else None

    async def config(self, chat: ConversationKey) -> ChatConfig:
        """The chat's setting and bindings, read once while the epoch holds."""
        cached = self._configs.get(chat)
        if cached is not None:
            return cached
        loading = self._loading.get(chat)
        if loading is not None:
            return await asyncio.shield(loading)
        future: asyncio.Future[ChatConfig] = asyncio.get_running_loop().create_future()
        self._loading[chat] = future
        try:
            setting = await self._settings.setting(chat.platform, chat.workspace, chat.chat)
            bound = await self._settings.kb_ids(chat.platform, chat.workspace, chat.chat)
            config = ChatConfig(setting, tuple(bound))
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # retrieved here: a burst with no other waiter must not log it as lost
            raise
        finally:
            del self._loading[chat]
        _bounded(self._configs)[chat] = config
        future.set_result(config)
        return config

    async def resolve(self, names: Sequence[str]) -> Resolved:
        """Knowledge-base names of the operator (the settings' defaults and allowances) resolved to ids."""
        key = tuple(names)
        cached = self._names.get(key)
        if cached is not None:
            return cached
        ids, missing = [], []
        for name in names:
            kb = await self._knowledge.named(name)
            if kb is None:
                log.warning("knowledge_base=missing name=%s (named in the settings)", name)
                missing.append(name)
            else:
                ids.append(kb.id)
        resolved = self._names[key] = Resolved(tuple(ids), tuple(missing))
        return resolved

    async def visible(self, tenant: str, kb_ids: Sequence[str]) -> frozenset[str]:
        """Those of `kb_ids` the tenant may read (it owns them, or was granted them)."""
        key = (tenant, tuple(kb_ids))
        cached = self._visible.get(key)
        if cached is None:
            cached = frozenset(await self._knowledge.visible_ids(tenant, kb_ids))
            _bounded(self._visible)[key] = cached
        return cached

    async def existing(self, key: ConversationKey) -> ConversationRecord | None:
        """The stored conversation for `key`, or None (then read again next time: it may be made meanwhile)."""
        known = self._known.get(key)
        if known is None:
            known = await self._conversations.find(key.platform, key.workspace, key.chat, key.thread)
            if known is not None:
                _bounded(self._known)[key] = known
        return known

    async def conversation(self, key: ConversationKey) -> ConversationRecord:
        """The stored conversation for `key`, created when new; remembered, as its id never changes."""
        known = self._known.get(key)
        if known is None:
            known = await self._conversations.resolve(key.platform, key.workspace, key.chat, key.thread)
            _bounded(self._known)[key] = known
        return known


_K = TypeVar("_K")
_V = TypeVar("_V")


def _bounded(cache: dict[_K, _V]) -> dict[_K, _V]:
    """The cache, its oldest half dropped first when it is full (a dict keeps insertion order)."""
    if len(cache) >= _MAX_ENTRIES:
        for key in list(cache)[: _MAX_ENTRIES // 2]:
            del cache[key]
    return cache
