"""A model's extraction reply is read in the seed's shape; anything else is None, for the rule extractor."""

from __future__ import annotations

import pytest

from rag.graph.entities import Relation
from rag.graph.reply import parse_extraction


def test_nodes_with_attributes_and_relations_are_read() -> None:
    reply = (
        '{"nodes": [{"name": "Acme X200", "attributes": ["laptop"]}, {"name": "Acme"}],'
        ' "relations": [{"node1": "Acme", "node2": "Acme X200", "type": "makes"}]}'
    )

    extraction = parse_extraction(reply)

    assert extraction is not None
    assert [entity.name for entity in extraction.entities] == ["Acme X200", "Acme"]
    assert extraction.entities[0].attributes == ("laptop",)
    assert extraction.relations == (Relation("Acme", "Acme X200", "makes"),)


def test_a_fenced_reply_and_the_list_shape_are_read() -> None:
    reply = (
        'Here:\n```json\n[{"entity": "张伟", "entity_attributes": ["工程师"]},'
        ' {"entity1": "张伟", "entity2": "华为", "relation": "works at"}]\n```'
    )

    extraction = parse_extraction(reply)

    assert extraction is not None
    assert [entity.name for entity in extraction.entities] == ["张伟"]
    assert extraction.relations == (Relation("张伟", "华为", "works at"),)


@pytest.mark.parametrize(
    "reply",
    ["The entities are Acme and X200.", "", "{nodes: [Acme]}", '"Acme"', "42", '{"nodes": [Acme'],
)
def test_a_reply_that_is_not_json_of_the_shape_is_none(reply: str, caplog: pytest.LogCaptureFixture) -> None:
    assert parse_extraction(reply) is None
    assert len(caplog.records) == 1


@pytest.mark.parametrize(
    "reply", ['{"nodes": "Acme"}', '{"nodes": [1, null, {"name": ""}, {"name": 5}], "relations": [{"node1": "A"}]}']
)
def test_malformed_members_are_skipped(reply: str) -> None:
    extraction = parse_extraction(reply)

    assert extraction is not None
    assert extraction.entities == ()
    assert extraction.relations == ()
