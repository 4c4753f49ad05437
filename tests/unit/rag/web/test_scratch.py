"""The conversations' web passages: kept per scope, dropped when idle past their age, by count, or by `forget`."""

from __future__ import annotations

from rag.web.compress import WebPassage
from rag.web.scratch import ScratchStore, scope_key


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _passage(n: int) -> WebPassage:
    return WebPassage(f"https://a.example/{n}#0", f"https://a.example/{n}", "t", "x")


def test_a_scope_keeps_its_passages_while_used_and_loses_them_once_idle_past_max_age() -> None:
    clock = Clock()
    store = ScratchStore(max_age=60.0, clock=clock)
    store.scope("c1@").add([_passage(1)], [["x"]], [None])
    clock.now = 59.0
    assert len(store.scope("c1@").passages) == 1  # used again: its age starts over
    clock.now = 118.0
    assert len(store.scope("c1@").passages) == 1
    clock.now = 179.0
    assert store.scope("c1@").passages == {}


def test_a_passage_found_again_keeps_its_first_words_and_vector() -> None:
    knowledge = ScratchStore().scope("c1@")
    knowledge.add([_passage(1)], [["first"]], [[1.0]])
    knowledge.add([_passage(1)], [["second"]], [[2.0]])
    assert (knowledge.terms[_passage(1).id], knowledge.vectors[_passage(1).id]) == (["first"], [1.0])


def test_the_least_recently_used_scope_goes_first_past_the_count() -> None:
    store = ScratchStore(max_scopes=2)
    for key in ("a@", "b@", "a@", "c@"):
        store.scope(key)
    assert ("a@" in store, "b@" in store, "c@" in store) == (True, False, True)


def test_forget_drops_every_scope_of_a_conversation_and_no_other() -> None:
    store = ScratchStore()
    for key in (scope_key("c1", ""), scope_key("c1", "2026-11-27T10:00:00"), scope_key("c10", "")):
        store.scope(key)
    assert store.forget("c1") == 2
    assert (scope_key("c1", "") in store, scope_key("c10", "") in store) == (False, True)
