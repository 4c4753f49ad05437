"""An ingestion whose process dies between the index upsert and the SQL commit, as a kill -9 would end it.

Run as `python -m tests.support.killed_ingestion DATABASE_URL ENDPOINT_JSON KB_ID MODEL_DIR TEXT`; it never
returns normally: it exits with status 137 from inside the version commit.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

import tiktoken

from rag.ingest.documents import DocumentIngestor, SourceFile
from rag.lexical import LexicalAnalyzer
from rag.models.embedders import OnnxEmbedder
from storage.db import Database, DatabaseConfig
from storage.records import DocumentVersion
from storage.repos.documents import DocumentRepo
from storage.repos.knowledge_bases import KnowledgeBaseRepo
from storage.weaviate.config import WeaviateConfig, WeaviateEndpoint
from storage.weaviate.store import WeaviateStore

KILLED = 137


class DiesBeforeCommit(DocumentRepo):
    async def store_versions(self, versions: Sequence[tuple[DocumentVersion, str]], **kwargs: Any) -> Any:
        os._exit(KILLED)


async def main(database_url: str, endpoint: str, kb_id: str, model_dir: str, text: str) -> NoReturn:
    db = Database(DatabaseConfig(url=database_url))
    await db.open()
    store = await WeaviateStore.connect(WeaviateEndpoint(**json.loads(endpoint)), WeaviateConfig())
    embedder = OnnxEmbedder(Path(model_dir), model_id="sentence-transformers/all-MiniLM-L6-v2")
    ingestor = DocumentIngestor(
        DiesBeforeCommit(db), store, embedder, LexicalAnalyzer(), tiktoken.get_encoding("cl100k_base")
    )
    kb = await KnowledgeBaseRepo(db).get(kb_id)
    await ingestor.ingest(kb, SourceFile(text.encode(), source_uri="upload:killed.md", filename="killed.md"))
    raise SystemExit("the commit was reached without dying")


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:6]))
