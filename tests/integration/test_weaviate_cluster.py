"""ragbot on a real three-node Weaviate cluster: replicas, QUORUM, failover past a killed node, catch-up, doctor."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import jieba
import pytest
import pytest_asyncio
import weaviate
from weaviate.classes.config import ConsistencyLevel

from bot.app.services import build_services
from bot.app.settings import Settings
from bot.cli.doctor import Finding, diagnose
from bot.errors import StartupError
from harness.weaviate_cluster import ClusterNode, WeaviateCluster, running_cluster
from rag.models.embedders import OnnxEmbedder
from storage.errors import ReplicationFactorTooHigh
from storage.records import ChunkRecord
from storage.weaviate.config import WeaviateConfig, WeaviateEndpoint
from storage.weaviate.schema import Collection
from storage.weaviate.store import WeaviateStore, endpoints_from_urls

REPLICATED = WeaviateConfig(replication_factor=3, consistency="QUORUM")
_CATCH_UP_SECONDS = 90.0


@pytest_asyncio.fixture(scope="module")
async def cluster(weaviate_binary: Path, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[WeaviateCluster]:
    """One three-node cluster for the module: starting one costs seconds, and every test leaves it whole."""
    async with running_cluster(weaviate_binary, tmp_path_factory.mktemp("cluster")) as running:
        yield running


def _endpoints(cluster: WeaviateCluster) -> tuple[WeaviateEndpoint, ...]:
    return endpoints_from_urls(cluster.http_urls, cluster.grpc_urls)


@pytest_asyncio.fixture
async def store(cluster: WeaviateCluster) -> AsyncIterator[WeaviateStore]:
    """ragbot's store on all three nodes with factor 3 and QUORUM; it connects to node1, the first that answers."""
    connected = await WeaviateStore.connect(_endpoints(cluster), REPLICATED)
    try:
        yield connected
    finally:
        await connected.close()


def _tokens(text: str) -> str:
    return " ".join(token for token in jieba.cut_for_search(text) if token.strip())


def _chunks(kb_id: str, texts: Sequence[str]) -> list[ChunkRecord]:
    return [
        ChunkRecord(
            chunk_id=str(uuid.uuid4()),
            kb_id=kb_id,
            document_id=f"doc-{uuid.uuid4().hex[:8]}",
            segment_id=None,
            position=i,
            start=0,
            end=len(text),
            text=text,
            bm25_text=_tokens(text),
        )
        for i, text in enumerate(texts)
    ]


async def _write(store: WeaviateStore, embedder: OnnxEmbedder, chunks: list[ChunkRecord]) -> None:
    await store.upsert_chunks(chunks, await embedder.embed([chunk.text for chunk in chunks]))


async def _hybrid_ids(store: WeaviateStore, embedder: OnnxEmbedder, kb_id: str, question: str) -> list[str]:
    [vector] = await embedder.embed([question])
    hits = await store.search_hybrid(Collection.CHUNKS, [kb_id], vector, _tokens(question), limit=5)
    return [hit.id for hit in hits]


async def _held_by(node: ClusterNode, ids: Sequence[str]) -> set[str]:
    """The ids `node` itself returns: its own endpoint, consistency ONE (Weaviate reads the local replica first)."""
    client = weaviate.use_async_with_custom(
        http_host="127.0.0.1",
        http_port=node.ports.http,
        http_secure=False,
        grpc_host="127.0.0.1",
        grpc_port=node.ports.grpc,
        grpc_secure=False,
        skip_init_checks=True,
    )
    await client.connect()
    try:
        chunks = client.collections.use(Collection.CHUNKS).with_consistency_level(ConsistencyLevel.ONE)
        found = [await chunks.query.fetch_object_by_id(object_id) for object_id in ids]
        return {str(obj.uuid) for obj in found if obj is not None}
    finally:
        await client.close()


async def _until_held(node: ClusterNode, ids: Sequence[str]) -> None:
    deadline = time.monotonic() + _CATCH_UP_SECONDS
    while (held := await _held_by(node, ids)) != set(ids):
        if time.monotonic() > deadline:
            pytest.fail(f"{node.name} holds {len(held)} of {len(ids)} objects {_CATCH_UP_SECONDS:.0f}s after restart")
        await asyncio.sleep(0.5)


async def test_the_collections_are_replicated_to_every_node(store: WeaviateStore, cluster: WeaviateCluster) -> None:
    client = store._client
    target = await client.alias.get(alias_name=Collection.CHUNKS)
    assert target is not None
    config = await client.collections.use(target.collection).config.get()
    assert config.replication_config.factor == 3
    assert [node.name for node in await store.nodes()] == ["node1", "node2", "node3"]


@pytest.mark.parametrize("victim", ["node1", "node3"], ids=["the-connected-node", "another-node"])
async def test_search_and_writes_go_on_while_a_node_is_killed_and_it_catches_up_after(
    store: WeaviateStore, cluster: WeaviateCluster, embedder: OnnxEmbedder, victim: str
) -> None:
    kb_id = str(uuid.uuid4())
    before = _chunks(kb_id, ["The refund policy allows returns within 30 days of purchase."])
    await _write(store, embedder, before)
    await cluster.kill(victim)
    try:
        assert before[0].chunk_id in await _hybrid_ids(store, embedder, kb_id, "how long can I return an item?")
        during = _chunks(kb_id, ["Passwords must be rotated every ninety days.", "The office closes on holidays."])
        await _write(store, embedder, during)
        assert during[0].chunk_id in await _hybrid_ids(store, embedder, kb_id, "password rotation")
    finally:
        await cluster.restart(victim)
    await _until_held(cluster.node(victim), [chunk.chunk_id for chunk in during])


async def test_a_store_connects_past_a_first_node_that_is_down(cluster: WeaviateCluster) -> None:
    await cluster.kill("node1")
    try:
        store = await WeaviateStore.connect(_endpoints(cluster), REPLICATED)
        try:
            assert store._endpoint.http_port == cluster.node("node2").ports.http
            await store.ping()
        finally:
            await store.close()
    finally:
        await cluster.restart("node1")


async def test_a_factor_above_the_node_count_is_refused_naming_the_setting(cluster: WeaviateCluster) -> None:
    with pytest.raises(ReplicationFactorTooHigh, match="WEAVIATE_REPLICATION_FACTOR=4 needs 4 Weaviate nodes"):
        await WeaviateStore.connect(_endpoints(cluster), WeaviateConfig(replication_factor=4))


def _settings(
    cluster: WeaviateCluster, data_dir: Path, model_dir: Path, tiktoken_dir: Path | None, **more: object
) -> Settings:
    return Settings(
        _env_file=None,  # type: ignore[call-arg]
        RAGBOT_DATA_DIR=data_dir,
        WEAVIATE_URL=cluster.http_urls,
        WEAVIATE_GRPC_URL=cluster.grpc_urls,
        EMBEDDING_MODEL_DIR=model_dir,
        TIKTOKEN_CACHE_DIR=tiktoken_dir,
        **more,
    )


async def test_ragbot_refuses_to_start_with_more_replicas_than_nodes(
    cluster: WeaviateCluster, tmp_path: Path, model_dir: Path, tiktoken_dir: Path | None
) -> None:
    settings = _settings(cluster, tmp_path, model_dir, tiktoken_dir, WEAVIATE_REPLICATION_FACTOR=4)
    with pytest.raises(StartupError) as refused:
        async with build_services(settings):
            pass
    assert refused.value.setting == "WEAVIATE_REPLICATION_FACTOR"
    assert "the cluster has 3" in refused.value.problem


def _weaviate_finding(findings: list[Finding]) -> Finding:
    return next(finding for finding in findings if finding.part == "weaviate")


async def test_doctor_lists_three_healthy_nodes_then_flags_the_killed_one(
    cluster: WeaviateCluster, tmp_path: Path, model_dir: Path, tiktoken_dir: Path | None
) -> None:
    settings = _settings(cluster, tmp_path, model_dir, tiktoken_dir)
    healthy = _weaviate_finding(await diagnose(settings))
    assert healthy.verdict == "ok"
    for name in ("node1", "node2", "node3"):
        assert f"{name} HEALTHY v1.38.11" in healthy.detail
    await cluster.kill("node2")
    try:
        await cluster.wait_not_healthy("node1", "node2")
        flagged = _weaviate_finding(await diagnose(settings))
    finally:
        await cluster.restart("node2")
    assert flagged.verdict == "error"
    assert "node1 HEALTHY" in flagged.detail
    assert "node3 HEALTHY" in flagged.detail
    assert "node2 is UNAVAILABLE" in flagged.fix
