"""Knowledge bases, ingestion jobs and the reindex lease: what admins feed the bot."""
