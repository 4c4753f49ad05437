"""The entity leg's ranking: chunks naming more of the question's entities first, capped per entity and in all."""

from __future__ import annotations

from rag.graph.rank import EntityLimits, hop_chunks, rank_chunks


def test_a_chunk_naming_more_entities_ranks_first_then_rarer_entities() -> None:
    found = {"acme": ["c1", "c2", "c3"], "x200": ["c3", "c4"]}
    mentions = {"c1": {"acme"}, "c2": {"acme"}, "c3": {"acme", "x200"}, "c4": {"x200"}}

    ranked = rank_chunks(found, mentions, EntityLimits())

    assert ranked == [("c3", 2), ("c4", 1), ("c1", 1), ("c2", 1)]


def test_a_common_entitys_chunk_that_names_a_rare_one_too_counts_both() -> None:
    # c9 was read only under the common entity; the mention check finds that it names the rare one as well.
    found = {"acme": [f"c{n}" for n in range(10)], "falcon": ["f1"]}
    mentions = {"c9": {"acme", "falcon"}, "f1": {"falcon"}}

    ranked = rank_chunks(found, mentions, EntityLimits())

    assert ranked[0] == ("c9", 2)
    assert ranked[1] == ("f1", 1)


def test_each_entity_and_the_whole_are_capped() -> None:
    found = {f"e{e}": [f"e{e}-c{n}" for n in range(30)] for e in range(4)}

    ranked = rank_chunks(found, {}, EntityLimits(per_entity=20, total=50))

    assert len(ranked) == 50
    per_entity = {e: sum(chunk.startswith(f"e{e}-") for chunk, _ in ranked) for e in range(4)}
    assert max(per_entity.values()) <= 20


def test_nothing_found_is_nothing_ranked() -> None:
    assert rank_chunks({"acme": []}, {}, EntityLimits()) == []


def test_hop_chunks_take_each_related_entitys_first_in_turn_skip_those_taken_and_stop_at_the_cap() -> None:
    found = {"dana": ["lead", "d1", "d2", "d3"], "oslo": ["o1", "d1", "o2"]}

    assert hop_chunks(found, ["lead"], 4) == ["d1", "o1", "d2", "o2"]
    assert hop_chunks(found, ["lead"], 0) == []
    assert hop_chunks({"dana": ["lead"]}, ["lead"], 10) == []
