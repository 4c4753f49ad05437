"""Telegram: private chats, groups and forum topics through python-telegram-bot, streamed as drafts or edits."""
