"""Which chunks the entity leg returns: those naming most of the question's entities, the rarer ones first."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class EntityLimits:
    """How much the entity leg reads and returns."""

    # Chunks returned per entity and in all: the chunk search brings 15 by default (top_k 5 x 3), so the graph adds
    # at most a few times that, and one entity mentioned everywhere cannot flood the candidates.
    per_entity: int = 20
    total: int = 50
    # Mentions read per entity: several times `per_entity`, so chunks naming two of the question's entities are
    # found among a common entity's mentions too; the read stops there however many chunks mention it.
    read: int = 200
    # A question names a few things; a pasted paragraph's 60 names would cost 60 reads for a ranking none of them leads.
    entities: int = 8
    # The one-hop walk: entities related to the question's, and the chunks naming them that join after the direct
    # ones. A relation is a weaker sign than a name the question says, so it adds a few chunks, never a flood.
    related: int = 8
    hop: int = 10


def rank_chunks(
    found: Mapping[str, Sequence[str]], mentions: Mapping[str, set[str]], limits: EntityLimits
) -> list[tuple[str, int]]:
    """(chunk id, how many of the question's entities it names), best first, capped per entity and in all.

    `found` is each entity's chunks as read (bounded), `mentions` which of the entities each of those chunks names.
    A chunk naming more entities ranks higher; among equals, one naming rarer entities (fewer chunks found), then
    the one found first. Each chunk counts against the cap of its rarest entity.
    """
    spread = {key: max(1, len(chunks)) for key, chunks in found.items()}
    first_seen: dict[str, int] = {}
    finders: dict[str, set[str]] = {}
    for key, chunks in found.items():
        for chunk in chunks:
            first_seen.setdefault(chunk, len(first_seen))
            finders.setdefault(chunk, set()).add(key)

    def named(chunk: str) -> set[str]:
        return (mentions.get(chunk, set()) & spread.keys()) | finders[chunk]

    def order(chunk: str) -> tuple[int, float, int]:
        keys = named(chunk)
        return (-len(keys), -sum(1 / spread[key] for key in keys), first_seen[chunk])

    taken: dict[str, int] = {}
    ranked: list[tuple[str, int]] = []
    for chunk in sorted(first_seen, key=order):
        keys = named(chunk)
        rarest = min(keys, key=lambda key: (spread[key], key))
        if taken.get(rarest, 0) >= limits.per_entity:
            continue
        taken[rarest] = taken.get(rarest, 0) + 1
        ranked.append((chunk, len(keys)))
        if len(ranked) >= limits.total:
            break
    return ranked


def hop_chunks(found: Mapping[str, Sequence[str]], taken: Sequence[str], limit: int) -> list[str]:
    """The related entities' chunks not among `taken`, each entity's first in turn (round robin), at most `limit`."""
    seen = set(taken)
    picked: list[str] = []
    queues = [list(chunks) for chunks in found.values()]
    while queues and len(picked) < limit:
        for queue in queues:
            while queue and queue[0] in seen:
                queue.pop(0)
            if queue and len(picked) < limit:
                chunk = queue.pop(0)
                seen.add(chunk)
                picked.append(chunk)
        queues = [queue for queue in queues if queue]
    return picked
