"""Which knowledge bases each chat reads (channel_binding) and how the bot behaves there (chat_setting)."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import delete
from sqlalchemy.exc import IntegrityError
from sqlmodel import col, select
from sqlmodel.sql.expression import SelectOfScalar

from storage.db import Database
from storage.models import ChannelBinding, ChatSetting, utcnow
from storage.records import AnswerMode, ChatSettingRecord
from storage.repos.config_epoch import bump_epoch


def _setting(row: ChatSetting) -> ChatSettingRecord:
    mode: AnswerMode | None = row.answer_mode if row.answer_mode in ("mention", "all") else None  # type: ignore[assignment]
    return ChatSettingRecord(
        row.platform, row.workspace, row.chat, mode, row.fallback_text, row.language, web_search=row.web_search
    )


class BindingRepo:
    """Knowledge-base bindings and per-chat behaviour, keyed by (platform, workspace, chat)."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def kb_ids(self, platform: str, workspace: str, chat: str) -> list[str]:
        """The ids of the knowledge bases bound to this chat, in the order they were bound."""
        statement = (
            select(ChannelBinding.kb_id)
            .where(
                ChannelBinding.platform == platform,
                ChannelBinding.workspace == workspace,
                ChannelBinding.chat == chat,
            )
            .order_by(col(ChannelBinding.created_at), col(ChannelBinding.id))
        )
        async with self._db.session() as session:
            return list((await session.exec(statement)).all())

    async def bind(self, platform: str, workspace: str, chat: str, kb_ids: Sequence[str]) -> None:
        """Make `kb_ids` exactly the chat's knowledge bases, in one transaction."""
        async with self._db.session() as session:
            await session.exec(
                delete(ChannelBinding).where(
                    col(ChannelBinding.platform) == platform,
                    col(ChannelBinding.workspace) == workspace,
                    col(ChannelBinding.chat) == chat,
                )
            )
            for kb_id in dict.fromkeys(kb_ids):
                session.add(ChannelBinding(platform=platform, workspace=workspace, chat=chat, kb_id=kb_id))
            await session.flush()
            await bump_epoch(session)

    async def setting(self, platform: str, workspace: str, chat: str) -> ChatSettingRecord:
        """The chat's stored behaviour; defaults (None, "") when nothing was stored."""
        row = await self._find_setting(platform, workspace, chat)
        return _setting(row) if row is not None else ChatSettingRecord(platform, workspace, chat)

    async def save_setting(
        self,
        platform: str,
        workspace: str,
        chat: str,
        *,
        answer_mode: AnswerMode | None = None,
        fallback_text: str | None = None,
        language: str | None = None,
        web_search: bool | None = None,
    ) -> ChatSettingRecord:
        """Change what is given (None leaves a value as it is); safe when two admins race to create the row."""
        for _attempt in range(2):
            try:
                async with self._db.session() as session:
                    row = (await session.exec(self._setting_query(platform, workspace, chat))).first()
                    if row is None:
                        row = ChatSetting(platform=platform, workspace=workspace, chat=chat)
                    if answer_mode is not None:
                        row.answer_mode = answer_mode
                    if fallback_text is not None:
                        row.fallback_text = fallback_text
                    if language is not None:
                        row.language = language
                    if web_search is not None:
                        row.web_search = web_search
                    row.updated_at = utcnow()
                    session.add(row)
                    await session.flush()
                    await bump_epoch(session)
                return _setting(row)
            except IntegrityError:
                continue  # created by the other writer between our read and write: update theirs
        raise RuntimeError("chat_setting row could neither be created nor found")

    @staticmethod
    def _setting_query(platform: str, workspace: str, chat: str) -> SelectOfScalar[ChatSetting]:
        return select(ChatSetting).where(
            ChatSetting.platform == platform, ChatSetting.workspace == workspace, ChatSetting.chat == chat
        )

    async def _find_setting(self, platform: str, workspace: str, chat: str) -> ChatSetting | None:
        async with self._db.session() as session:
            return (await session.exec(self._setting_query(platform, workspace, chat))).first()
