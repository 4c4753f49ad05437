"""Generations: each ragbot collection name is an alias to one physical collection, so a rebuild switches at once."""

from __future__ import annotations

import logging
import time

import weaviate
from weaviate.classes.config import Configure, ReplicationDeletionStrategy
from weaviate.exceptions import WeaviateBaseError

from storage.weaviate.schema import CollectionSpec, description

log = logging.getLogger(__name__)


def generation_name(spec: CollectionSpec) -> str:
    """A new physical collection name for `spec`: its alias name, `_G` and the time in nanoseconds."""
    return f"{spec.name}_G{time.time_ns()}"


def is_generation(spec: CollectionSpec, name: str) -> bool:
    """Whether `name` is a physical collection made for `spec` by generation_name."""
    return name.startswith(f"{spec.name}_G")


async def create_physical(
    client: weaviate.WeaviateAsyncClient,
    spec: CollectionSpec,
    name: str,
    vector_model: str = "",
    replication_factor: int = 1,
) -> None:
    """Create a collection named `name` with `spec`'s properties, self-provided vectors and BM25 settings, on
    `replication_factor` nodes, recording the BM25 terms version and the embedding model (when known) in its
    description."""
    await client.collections.create(
        name,
        description=description(vector_model),
        properties=list(spec.properties),
        vector_config=Configure.Vectors.self_provided(vector_index_config=Configure.VectorIndex.hnsw()),
        inverted_index_config=Configure.inverted_index(bm25_k1=1.2, bm25_b=0.75),
        # Time-based resolution (what Weaviate 1.38 picks when none is given) lets a replica that missed a delete
        # while it was down learn of it from the others, by timestamp, instead of bringing the object back. Async
        # replication, which copies what a restarted replica missed, is the server's to switch from 1.38 (on).
        replication_config=Configure.replication(
            factor=replication_factor, deletion_strategy=ReplicationDeletionStrategy.TIME_BASED_RESOLUTION
        ),
    )


async def live_target(client: weaviate.WeaviateAsyncClient, spec: CollectionSpec) -> str | None:
    """The physical collection `spec.name` reads from: the alias's target, the name itself for an index made
    before generations (a plain collection of that name), or None when there is neither."""
    alias = await client.alias.get(alias_name=spec.name)
    if alias is not None:
        return alias.collection
    return spec.name if await client.collections.exists(spec.name) else None


async def create_first(
    client: weaviate.WeaviateAsyncClient, spec: CollectionSpec, vector_model: str = "", replication_factor: int = 1
) -> None:
    """A fresh index: the first generation and the alias to it (another process may win the race: then theirs)."""
    name = generation_name(spec)
    await create_physical(client, spec, name, vector_model, replication_factor)
    try:
        await client.alias.create(alias_name=spec.name, target_collection=name)
    except WeaviateBaseError:
        await client.collections.delete(name)
        if await live_target(client, spec) is None:
            raise
        return
    log.info("weaviate=collection_created name=%s alias=%s", name, spec.name)


async def switch_to(client: weaviate.WeaviateAsyncClient, spec: CollectionSpec, target: str) -> None:
    """Point `spec.name` at `target` and drop the collection it pointed at before.

    An alias update is atomic. An index made before generations has a plain collection under the alias's name;
    it must be dropped before the alias can take the name, so searches fail for those few milliseconds, once.
    """
    previous = await live_target(client, spec)
    if previous is None:
        await client.alias.create(alias_name=spec.name, target_collection=target)
    elif previous == spec.name:
        await client.collections.delete(spec.name)
        await client.alias.create(alias_name=spec.name, target_collection=target)
    else:
        await client.alias.update(alias_name=spec.name, new_target_collection=target)
    if previous is not None and previous not in (spec.name, target):
        await client.collections.delete(previous)
    log.info("weaviate=generation_switched alias=%s from=%s to=%s", spec.name, previous, target)


async def drop_leftovers(client: weaviate.WeaviateAsyncClient, spec: CollectionSpec) -> list[str]:
    """Delete generations of `spec` that the alias does not point at (what an interrupted rebuild left)."""
    live = await live_target(client, spec)
    names = [name for name in await client.collections.list_all(simple=True) if is_generation(spec, name)]
    dropped = [name for name in names if name != live]
    for name in dropped:
        await client.collections.delete(name)
        log.info("weaviate=leftover_dropped name=%s", name)
    return dropped
