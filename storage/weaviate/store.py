"""WeaviateStore: chunk and FAQ-question vectors with BM25 text, always filtered by knowledge base."""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Literal, TypeVar
from urllib.parse import urlsplit

import weaviate
from weaviate.classes.config import ConsistencyLevel
from weaviate.classes.init import AdditionalConfig, Auth, Timeout
from weaviate.classes.query import Filter, HybridFusion, MetadataQuery
from weaviate.collections import CollectionAsync
from weaviate.collections.classes.batch import BatchObjectReturn
from weaviate.collections.classes.data import DataObject
from weaviate.collections.classes.internal import Object
from weaviate.exceptions import WeaviateBaseError, WeaviateInsertManyAllFailedError

from storage.errors import IndexUnavailable, IndexWriteError
from storage.records import ChunkRecord, FaqQuestionRecord, SearchHit
from storage.weaviate import schema
from storage.weaviate.cluster import NodeHealth, check_replication, node_health
from storage.weaviate.config import WeaviateConfig, WeaviateEndpoint
from storage.weaviate.failover import NodeFailover
from storage.weaviate.generations import create_first, create_physical, drop_leftovers, generation_name, live_target
from storage.weaviate.liveness import ExitWatch, ServerExited, answers_ready
from storage.weaviate.objects import chunk_object, faq_question_object, hit_vector
from storage.weaviate.rebuild import CollectionRebuild
from storage.weaviate.schema import BM25_PROPERTY, Collection

log = logging.getLogger(__name__)

# One insert_many call is one gRPC message; 200 chunks of 384-d vectors stay far under its 100 MB cap.
_INSERT_BATCH = 200
# Seconds between queries to a restarted server until one goes through (about 10 s in all).
_ANSWERING_WAITS = (0.1, 0.2, 0.5, 1.0, 1.0, 2.0, 2.0, 3.0)
Fusion = Literal["ranked", "relative"]
Vector = Sequence[float]
T = TypeVar("T")


def endpoint_from_url(url: str, grpc_url: str | None = None) -> WeaviateEndpoint:
    """The REST and gRPC endpoint for a WEAVIATE_URL (gRPC defaults to the same host on 50051)."""
    http = urlsplit(url)
    if not http.hostname:
        raise ValueError(f"WEAVIATE_URL {url!r} names no host")
    http_secure = http.scheme == "https"
    grpc = urlsplit(grpc_url) if grpc_url else None
    grpc_secure = grpc.scheme == "https" if grpc else http_secure
    # An explicit https gRPC URL without a port is a hosted endpoint on 443; otherwise Weaviate's default.
    grpc_default_port = 443 if grpc and grpc_secure else 50051
    return WeaviateEndpoint(
        http_host=http.hostname,
        http_port=http.port or (443 if http_secure else 80),
        http_secure=http_secure,
        grpc_host=(grpc.hostname if grpc and grpc.hostname else http.hostname),
        grpc_port=(grpc.port if grpc and grpc.port else grpc_default_port),
        grpc_secure=grpc_secure,
    )


def endpoints_from_urls(urls: str, grpc_urls: str | None = None) -> tuple[WeaviateEndpoint, ...]:
    """The nodes a comma-separated WEAVIATE_URL names, each with its entry of WEAVIATE_GRPC_URL when one is given."""
    https = [url.strip() for url in urls.split(",") if url.strip()]
    grpcs = [url.strip() for url in grpc_urls.split(",") if url.strip()] if grpc_urls else []
    if grpcs and len(grpcs) != len(https):
        raise ValueError(f"WEAVIATE_GRPC_URL names {len(grpcs)} node(s) but WEAVIATE_URL names {len(https)}")
    return tuple(endpoint_from_url(url, grpcs[i] if grpcs else None) for i, url in enumerate(https))


def _opener(config: WeaviateConfig) -> Callable[[WeaviateEndpoint], Awaitable[weaviate.WeaviateAsyncClient]]:
    """Opens a connected async client to one node with `config`'s credentials and timeouts."""

    async def open_client(endpoint: WeaviateEndpoint) -> weaviate.WeaviateAsyncClient:
        client = weaviate.use_async_with_custom(
            http_host=endpoint.http_host,
            http_port=endpoint.http_port,
            http_secure=endpoint.http_secure,
            grpc_host=endpoint.grpc_host,
            grpc_port=endpoint.grpc_port,
            grpc_secure=endpoint.grpc_secure,
            auth_credentials=Auth.api_key(config.api_key) if config.api_key else None,
            additional_config=AdditionalConfig(
                timeout=Timeout(init=config.init_timeout, query=config.query_timeout, insert=config.insert_timeout)
            ),
            # The init checks ask the Python package index for a newer client: no outbound calls.
            # ping() checks gRPC instead.
            skip_init_checks=True,
        )
        try:
            await client.connect()
        except BaseException:
            await client.close()
            raise
        return client

    return open_client


def _kb_filter(kb_ids: Sequence[str]) -> Any:
    return Filter.by_property("kb_id").contains_any(list(kb_ids))


def _hit(obj: Object[Any, Any], score: float) -> SearchHit:
    return SearchHit(id=str(obj.uuid), score=score, properties=dict(obj.properties), vector=hit_vector(obj))


def _with_vectors(collection: Collection) -> bool:
    # Chunk hits bring their vectors for RERANK; FAQ variants' vectors are not needed on the answer path.
    return collection is Collection.CHUNKS


def _cosine_similarity(obj: Object[Any, Any]) -> float:
    distance = obj.metadata.distance
    return 1.0 - distance if distance is not None else 0.0


def stopped_message(endpoint: WeaviateEndpoint) -> str:
    """What to tell a person when the Weaviate at `endpoint` stopped during an operation, and what to do."""
    if endpoint.owner_pid is not None:
        return (
            f"the Weaviate server of the running ragbot (pid {endpoint.owner_pid}) stopped while this command ran "
            "(it stops with that ragbot): start `ragbot serve` again, or stop it and run the command alone"
        )
    if endpoint.server_pid is not None:
        return (
            f"the local Weaviate server (pid {endpoint.server_pid}) stopped unexpectedly: "
            "see weaviate.log in its data dir (`ragbot doctor` names it), then start ragbot again"
        )
    return f"Weaviate at {endpoint.http_url} stopped answering: check that it runs and is reachable, then try again"


class WeaviateStore:
    """Index operations over the two ragbot collections; callers pass kb_ids to every search."""

    def __init__(self, nodes: NodeFailover, config: WeaviateConfig) -> None:
        self._nodes = nodes
        self._queries = asyncio.Semaphore(config.max_concurrent_queries)
        self._replication_factor = config.replication_factor
        self._consistency = ConsistencyLevel(config.consistency)
        self._watch: ExitWatch | None = None
        self._missing: dict[Collection, tuple[str, ...]] = {}
        self._stale: dict[Collection, int] = {}
        self._vector_model = ""
        self._foreign: dict[Collection, str] = {}
        # Whether claim_vectors found vectors written before the index recorded its model (an older ragbot's).
        self.claimed_unrecorded = False

    @classmethod
    async def connect(
        cls, endpoints: WeaviateEndpoint | Sequence[WeaviateEndpoint], config: WeaviateConfig
    ) -> WeaviateStore:
        """Open the async client against the first of `endpoints` (the nodes of one cluster) that answers, check
        that the cluster can hold the replicas asked for, and make sure both collections exist."""
        nodes = NodeFailover([endpoints] if isinstance(endpoints, WeaviateEndpoint) else endpoints, _opener(config))
        await nodes.connect()
        store = cls(nodes, config)
        try:
            await check_replication(nodes.client, config.replication_factor)
            await store.ensure_schema()
            await store.ping()
        except IndexUnavailable:
            await nodes.close()
            raise
        except (WeaviateBaseError, OSError) as exc:
            await nodes.close()
            raise IndexUnavailable(f"Weaviate at {nodes.endpoint.http_url} unreachable: {exc}") from exc
        # A local server's exit is known at once by its pid; a cluster's nodes are asked instead (NodeFailover).
        if nodes.endpoint.server_pid is not None and not nodes.several:
            store._watch = ExitWatch.start(nodes.endpoint.server_pid)
        return store

    async def follow_restart(self, endpoint: WeaviateEndpoint) -> None:
        """The local server was started again after an unasked exit (WeaviateServer.supervise): talk to, and watch,
        its new process. Until this, calls fail fast with IndexUnavailable (the old process's exit is known)."""
        try:
            await self._nodes.reopen(endpoint)
            await self._answering()
        except (WeaviateBaseError, OSError) as exc:
            raise IndexUnavailable(f"Weaviate at {endpoint.http_url} unreachable after its restart: {exc}") from exc
        old, self._watch = self._watch, ExitWatch.start(endpoint.server_pid) if endpoint.server_pid else None
        if old is not None:
            old.close()
        log.info("weaviate=reconnected pid=%s", endpoint.server_pid)

    async def _answering(self) -> None:
        """Return once a query goes through: a server reports ready on REST a moment before its gRPC port listens."""
        for wait in _ANSWERING_WAITS:
            try:
                await self.ping()
                return
            except IndexUnavailable:
                await asyncio.sleep(wait)
        await self.ping()

    @property
    def _client(self) -> weaviate.WeaviateAsyncClient:
        # Read at each call, never kept: after a failover it is another node's client.
        return self._nodes.client

    @property
    def _endpoint(self) -> WeaviateEndpoint:
        return self._nodes.endpoint

    def _use(self, name: str) -> CollectionAsync[Any, Any]:
        """A collection handle whose reads and writes wait for the configured consistency level."""
        return self._client.collections.use(name).with_consistency_level(self._consistency)

    async def close(self) -> None:
        """Close the client's HTTP and gRPC connections."""
        if self._watch is not None:
            self._watch.close()
            self._watch = None
        await self._nodes.close()

    async def nodes(self) -> list[NodeHealth]:
        """The health of every node of the cluster (one for a single Weaviate)."""
        return await self._call(lambda: node_health(self._client))

    async def ping(self) -> None:
        """Raise IndexUnavailable unless both REST and gRPC answer."""
        try:
            if not await self._client.is_ready():
                raise IndexUnavailable("Weaviate is not ready")
            await self._nodes.run(lambda: self._use(Collection.CHUNKS).query.fetch_objects(limit=1))
        except WeaviateBaseError as exc:
            raise IndexUnavailable(f"Weaviate query failed: {exc}") from exc

    async def ensure_schema(self) -> None:
        """Create any missing collection; note the properties an existing (older) one lacks and the BM25 terms
        version it records when not the current one, changing nothing."""
        self._missing, self._stale = {}, {}
        for spec in schema.ALL:
            target = await live_target(self._client, spec)
            if target is None:
                await create_first(self._client, spec, replication_factor=self._replication_factor)
                continue
            # The physical collection's own name: a cluster node asked for an alias's config answered 404 once.
            config = await self._client.collections.use(target).config.get()
            missing = schema.missing_properties(spec, {prop.name for prop in config.properties})
            if missing:
                self._missing[spec.name] = missing
                log.warning("weaviate=index_outdated collection=%s missing=%s", spec.name, ",".join(missing))
            terms = schema.terms_version(config.description)
            if terms != schema.BM25_TERMS_VERSION:
                self._stale[spec.name] = terms
                log.warning(
                    "weaviate=index_outdated collection=%s bm25_terms=%d current=%d",
                    spec.name,
                    terms,
                    schema.BM25_TERMS_VERSION,
                )

    def missing_properties(self) -> dict[Collection, tuple[str, ...]]:
        """The properties each collection lacks because an older ragbot made it (empty when up to date).

        Searches still work meanwhile; `begin_rebuild` makes a generation that has them.
        """
        return dict(self._missing)

    async def claim_vectors(self, model: str) -> dict[Collection, str]:
        """Record `model` as the embedding model of the index's vectors; returns the collections that hold another
        model's vectors (empty when none does), which stay as they are until a rebuild.

        A collection that records no model (made before the record) or holds no object is claimed for `model`.
        """
        self._vector_model, self._foreign, self.claimed_unrecorded = model, {}, False
        for spec in schema.ALL:
            recorded = await self._call(functools.partial(self._claim, spec, model))
            if recorded is not None:
                self._foreign[spec.name] = recorded
                log.warning("weaviate=foreign_vectors collection=%s holds=%s configured=%s", spec.name, recorded, model)
        return dict(self._foreign)

    async def _claim(self, spec: schema.CollectionSpec, model: str) -> str | None:
        """Record `model` on the collection unless it holds another model's vectors; returns that other model."""
        # Configuration is changed on the physical collection: Weaviate does not update one through its alias.
        collection = self._client.collections.use(await live_target(self._client, spec) or spec.name)
        config = await collection.config.get()
        recorded = schema.vector_model(config.description)
        if recorded == model:
            return None
        held = (await collection.aggregate.over_all()).total_count
        if recorded is not None and held:
            return recorded
        # Vectors written before the record are taken to be this model's, as the index is (an upgrade).
        self.claimed_unrecorded = self.claimed_unrecorded or bool(held)
        await collection.config.update(description=schema.with_vector_model(config.description, model))
        return None

    def foreign_vectors(self) -> dict[Collection, str]:
        """The collections holding another embedding model's vectors than the claimed one, with that model."""
        return dict(self._foreign)

    def stale_terms(self) -> dict[Collection, int]:
        """The collections whose BM25 text an older analyzer cut, with the version each records (empty when current).

        Searches still work meanwhile, but query terms miss the old ones where the analyzers differ;
        `begin_rebuild` makes a generation cut by the current one.
        """
        return dict(self._stale)

    async def begin_rebuild(self, collection: Collection) -> CollectionRebuild:
        """A new, empty generation of `collection` to fill; the live one answers until its `switch()`.

        Generations an interrupted rebuild left behind are dropped first.
        """
        spec = schema.spec_of(collection)
        await self._call(lambda: drop_leftovers(self._client, spec))
        live = await self._call(lambda: live_target(self._client, spec))
        shadow = generation_name(spec)
        await self._call(
            lambda: create_physical(self._client, spec, shadow, self._vector_model, self._replication_factor)
        )
        return CollectionRebuild(self._client, spec, live, shadow, self._insert, self._rebuilt)

    def _rebuilt(self, spec: schema.CollectionSpec) -> None:
        # The new generation has every property the schema defines, and records the current terms version.
        self._missing.pop(spec.name, None)
        self._stale.pop(spec.name, None)
        self._foreign.pop(spec.name, None)

    async def upsert_chunks(self, chunks: Sequence[ChunkRecord], vectors: Sequence[Vector]) -> None:
        """Insert or replace chunks by chunk_id; raises IndexWriteError listing every failed object."""
        if self._missing:
            # Another process may have rebuilt the index since this one started: then the properties exist.
            await self._call(self.ensure_schema)
        lacking = self._missing.get(Collection.CHUNKS, ())
        objects = [chunk_object(chunk, vector, lacking) for chunk, vector in zip(chunks, vectors, strict=True)]
        await self._insert(Collection.CHUNKS, objects)

    async def upsert_faq_questions(self, questions: Sequence[FaqQuestionRecord], vectors: Sequence[Vector]) -> None:
        """Insert or replace FAQ question variants by variant_id."""
        objects = [faq_question_object(question, vector) for question, vector in zip(questions, vectors, strict=True)]
        await self._insert(Collection.FAQ_QUESTIONS, objects)

    async def search_vector(
        self, collection: Collection, kb_ids: Sequence[str], vector: Vector, limit: int
    ) -> list[SearchHit]:
        """Nearest neighbours by cosine; score is cosine similarity."""
        if not kb_ids:
            return []
        response = await self._query(
            lambda: self._use(collection).query.near_vector(
                near_vector=list(vector),
                limit=limit,
                filters=_kb_filter(kb_ids),
                return_metadata=MetadataQuery(distance=True),
                include_vector=_with_vectors(collection),
            )
        )
        return [_hit(obj, _cosine_similarity(obj)) for obj in response.objects]

    async def search_bm25(
        self, collection: Collection, kb_ids: Sequence[str], tokens: str, limit: int
    ) -> list[SearchHit]:
        """BM25 over the pre-tokenised text; `tokens` must be cut the same way as the indexed text."""
        if not kb_ids or not tokens.strip():
            return []
        response = await self._query(
            lambda: self._use(collection).query.bm25(
                query=tokens,
                query_properties=[BM25_PROPERTY],
                limit=limit,
                filters=_kb_filter(kb_ids),
                return_metadata=MetadataQuery(score=True),
                include_vector=_with_vectors(collection),
            )
        )
        return [_hit(obj, obj.metadata.score or 0.0) for obj in response.objects]

    async def search_hybrid(
        self,
        collection: Collection,
        kb_ids: Sequence[str],
        vector: Vector,
        tokens: str,
        limit: int,
        *,
        alpha: float = 0.5,
        fusion: Fusion = "ranked",
    ) -> list[SearchHit]:
        """Weaviate's own fusion of both legs; alpha 1 is all vector, 0 all BM25."""
        if not kb_ids:
            return []
        response = await self._query(
            lambda: self._use(collection).query.hybrid(
                query=tokens,
                vector=list(vector),
                alpha=alpha,
                query_properties=[BM25_PROPERTY],
                fusion_type=HybridFusion.RANKED if fusion == "ranked" else HybridFusion.RELATIVE_SCORE,
                limit=limit,
                filters=_kb_filter(kb_ids),
                return_metadata=MetadataQuery(score=True),
                include_vector=_with_vectors(collection),
            )
        )
        return [_hit(obj, obj.metadata.score or 0.0) for obj in response.objects]

    async def count(self, collection: Collection, kb_ids: Sequence[str]) -> int:
        """How many objects the given knowledge bases hold in `collection`."""
        if not kb_ids:
            return 0
        result = await self._call(
            lambda: self._use(collection).aggregate.over_all(filters=_kb_filter(kb_ids), total_count=True)
        )
        return result.total_count or 0

    async def delete_document(self, kb_id: str, document_id: str) -> int:
        """Remove every chunk of one document; returns how many were removed."""
        where = Filter.by_property("kb_id").equal(kb_id) & Filter.by_property("document_id").equal(document_id)
        return await self._delete_where(Collection.CHUNKS, where)

    async def delete_ids(self, collection: Collection, object_ids: Sequence[str]) -> int:
        """Remove objects by id (the replaced version of a document or FAQ)."""
        removed = 0
        for start in range(0, len(object_ids), _INSERT_BATCH):
            batch = list(object_ids[start : start + _INSERT_BATCH])
            removed += await self._delete_where(collection, Filter.by_id().contains_any(batch))
        return removed

    async def delete_faq(self, kb_id: str, faq_id: str) -> int:
        """Remove every question variant of one FAQ."""
        where = Filter.by_property("kb_id").equal(kb_id) & Filter.by_property("faq_id").equal(faq_id)
        return await self._delete_where(Collection.FAQ_QUESTIONS, where)

    async def delete_kb(self, kb_id: str) -> int:
        """Remove everything a knowledge base holds in both collections."""
        where = Filter.by_property("kb_id").equal(kb_id)
        removed = 0
        for collection in Collection:
            removed += await self._delete_where(collection, where)
        return removed

    async def _query(self, call: Callable[[], Awaitable[T]]) -> T:
        """A search, once one of the store's query slots is free (its timeout starts when it is sent)."""
        async with self._queries:
            return await self._call(call)

    async def _call(self, call: Callable[[], Awaitable[T]]) -> T:
        """One client call; if the server stopped meanwhile, IndexUnavailable saying so and what to do.

        A failure while the server still runs is the call's own and is raised as it is.
        """
        if self._watch is not None and self._watch.exited:
            raise IndexUnavailable(stopped_message(self._endpoint))
        try:
            return await (self._watch.race(call) if self._watch is not None else self._nodes.run(call))
        except ServerExited as exc:
            raise IndexUnavailable(stopped_message(self._endpoint)) from exc
        except WeaviateBaseError as exc:
            if not await self._stopped():
                raise
            raise IndexUnavailable(stopped_message(self._endpoint)) from exc

    async def _raise_if_stopped(self) -> None:
        # A server shutting down fails the objects of a batch one by one ("resolve node name"): that is its stop.
        if await self._stopped():
            raise IndexUnavailable(stopped_message(self._endpoint))

    async def _stopped(self) -> bool:
        # Weaviate closes its REST port as soon as it is told to stop, before calls in flight fail.
        return (self._watch is not None and self._watch.exited) or not await answers_ready(self._endpoint)

    async def _insert(self, collection: str, objects: Sequence[DataObject[Any, Any]]) -> None:
        errors: dict[str, str] = {}
        for start in range(0, len(objects), _INSERT_BATCH):
            batch = objects[start : start + _INSERT_BATCH]
            try:
                result = await self._call(functools.partial(self._insert_batch, collection, batch))
            except WeaviateInsertManyAllFailedError as exc:
                errors.update({str(obj.uuid): str(exc) for obj in batch})
                continue
            for index, error in result.errors.items():
                errors[str(batch[index].uuid)] = error.message
        if errors:
            await self._raise_if_stopped()
            raise IndexWriteError(errors)

    async def _insert_batch(self, collection: str, batch: Sequence[DataObject[Any, Any]]) -> BatchObjectReturn:
        # The handle is taken when the batch is sent, so a retry after a failover goes to the new node.
        return await self._use(collection).data.insert_many(batch)

    async def _delete_where(self, collection: Collection, where: Any) -> int:
        removed = 0
        # The server deletes at most QUERY_MAXIMUM_RESULTS (10,000) objects a call.
        while True:
            result = await self._call(lambda: self._use(collection).data.delete_many(where=where))
            removed += result.successful
            if result.failed:
                await self._raise_if_stopped()
                raise IndexWriteError({"delete_many": f"{result.failed} object(s) not deleted"})
            if result.matches == 0 or result.successful == 0:
                return removed
