"""NodeFailover with calls in flight: a move to the next node must not cut the calls still waiting on the old one."""

from __future__ import annotations

import asyncio
from typing import cast

import pytest
import weaviate
from weaviate.exceptions import WeaviateConnectionError

from storage.weaviate.config import WeaviateEndpoint
from storage.weaviate.failover import NodeFailover

A = WeaviateEndpoint("node-a", 8080, False, "node-a", 50051, False)
B = WeaviateEndpoint("node-b", 8080, False, "node-b", 50051, False)
# Long enough for a loaded machine, short enough that a missing call fails the test rather than hangs it.
_WAIT_SECONDS = 5.0


class StandInClient:
    """A node's client whose calls wait until the test answers them; `close()` cancels the calls still waiting,
    as closing the weaviate client's gRPC channel cancels its RPCs."""

    def __init__(self) -> None:
        self.calls: asyncio.Queue[asyncio.Future[str]] = asyncio.Queue()
        self.closed = False
        self._waiting: set[asyncio.Future[str]] = set()

    async def ask(self) -> str:
        """The answer the test gives this call."""
        answer: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._waiting.add(answer)
        self.calls.put_nowait(answer)
        try:
            return await answer
        finally:
            self._waiting.discard(answer)

    async def next_call(self) -> asyncio.Future[str]:
        """The answer of the next call sent to this client, to set."""
        return await asyncio.wait_for(self.calls.get(), _WAIT_SECONDS)

    async def close(self) -> None:
        """Cancel the calls still waiting."""
        self.closed = True
        for answer in self._waiting:
            answer.cancel()


class Nodes:
    """The stand-in clients of the nodes, and which nodes do not answer their readiness probe."""

    def __init__(self, *endpoints: WeaviateEndpoint) -> None:
        self.clients = {endpoint: StandInClient() for endpoint in endpoints}
        self.down: set[WeaviateEndpoint] = set()
        self.probed: list[WeaviateEndpoint] = []

    async def open(self, endpoint: WeaviateEndpoint) -> weaviate.WeaviateAsyncClient:
        """The stand-in of `endpoint`, typed as the client NodeFailover opens."""
        return cast("weaviate.WeaviateAsyncClient", self.clients[endpoint])

    async def answers_ready(self, endpoint: WeaviateEndpoint) -> bool:
        """The readiness probe: a node answers unless the test put it down."""
        self.probed.append(endpoint)
        return endpoint not in self.down


@pytest.fixture
def nodes(monkeypatch: pytest.MonkeyPatch) -> Nodes:
    nodes = Nodes(A, B)
    monkeypatch.setattr("storage.weaviate.failover.answers_ready", nodes.answers_ready)
    return nodes


async def _connected(nodes: Nodes, *endpoints: WeaviateEndpoint) -> NodeFailover:
    failover = NodeFailover(endpoints or (A, B), nodes.open)
    await failover.connect()
    return failover


async def _outcome(call: asyncio.Task[str]) -> str:
    """The call's result, or TimeoutError for a call that would otherwise hang the test."""
    return await asyncio.wait_for(call, _WAIT_SECONDS)


def _ask(failover: NodeFailover) -> asyncio.Task[str]:
    # The call reads the client when it runs, as WeaviateStore's calls do, so a second try goes to the new node.
    return asyncio.create_task(failover.run(lambda: cast(StandInClient, failover.client).ask()))


async def _two_calls_on_a_then_the_first_moves_to_b(
    nodes: Nodes, failover: NodeFailover
) -> tuple[asyncio.Task[str], asyncio.Future[str]]:
    """The second call, still waiting on A, and the answer to give it there; the first has been answered by B."""
    a, b = nodes.clients[A], nodes.clients[B]
    first, second = _ask(failover), _ask(failover)
    first_on_a, second_on_a = await a.next_call(), await a.next_call()
    nodes.down.add(A)
    first_on_a.set_exception(WeaviateConnectionError("connection refused"))
    (await b.next_call()).set_result("from b")
    assert await _outcome(first) == "from b"
    assert failover.endpoint == B
    return second, second_on_a


async def test_a_call_still_waiting_on_the_old_node_gets_its_answer_after_another_call_moved_past_it(
    nodes: Nodes,
) -> None:
    failover = await _connected(nodes)
    second, second_on_a = await _two_calls_on_a_then_the_first_moves_to_b(nodes, failover)
    assert not nodes.clients[A].closed
    second_on_a.set_result("late from a")
    assert await _outcome(second) == "late from a"


async def test_a_call_the_old_node_then_fails_is_sent_to_the_new_node(nodes: Nodes) -> None:
    failover = await _connected(nodes)
    second, second_on_a = await _two_calls_on_a_then_the_first_moves_to_b(nodes, failover)
    second_on_a.set_exception(WeaviateConnectionError("connection refused"))
    (await nodes.clients[B].next_call()).set_result("from b")
    assert await _outcome(second) == "from b"


async def test_a_call_cancelled_under_a_caller_who_was_not_is_sent_to_the_new_node(nodes: Nodes) -> None:
    failover = await _connected(nodes)
    second, second_on_a = await _two_calls_on_a_then_the_first_moves_to_b(nodes, failover)
    # What gRPC does to an RPC whose channel closes.
    second_on_a.cancel()
    (await nodes.clients[B].next_call()).set_result("from b")
    assert await _outcome(second) == "from b"


async def test_the_old_client_is_closed_when_its_last_call_ends(nodes: Nodes) -> None:
    failover = await _connected(nodes)
    second, second_on_a = await _two_calls_on_a_then_the_first_moves_to_b(nodes, failover)
    second_on_a.set_result("late from a")
    await _outcome(second)
    assert nodes.clients[A].closed
    assert not nodes.clients[B].closed


async def test_the_old_client_is_closed_at_once_when_no_call_waits_on_it(nodes: Nodes) -> None:
    failover = await _connected(nodes)
    call = _ask(failover)
    nodes.down.add(A)
    (await nodes.clients[A].next_call()).set_exception(WeaviateConnectionError("connection refused"))
    (await nodes.clients[B].next_call()).set_result("from b")
    assert await _outcome(call) == "from b"
    assert nodes.clients[A].closed


async def test_close_closes_the_client_in_use_and_the_old_one_still_answering_a_call(nodes: Nodes) -> None:
    failover = await _connected(nodes)
    second, _ = await _two_calls_on_a_then_the_first_moves_to_b(nodes, failover)
    await failover.close()
    assert nodes.clients[A].closed
    assert nodes.clients[B].closed
    await asyncio.gather(second, return_exceptions=True)


async def test_cancelling_the_caller_still_cancels_its_call_and_sends_it_nowhere_else(nodes: Nodes) -> None:
    failover = await _connected(nodes)
    second, _ = await _two_calls_on_a_then_the_first_moves_to_b(nodes, failover)
    second.cancel()
    with pytest.raises(asyncio.CancelledError):
        await _outcome(second)
    assert nodes.clients[B].calls.empty()
    assert nodes.clients[A].closed


async def test_a_single_node_failover_is_the_call_itself(nodes: Nodes) -> None:
    failover = await _connected(nodes, A)
    call = _ask(failover)
    nodes.down.add(A)
    (await nodes.clients[A].next_call()).set_exception(WeaviateConnectionError("connection refused"))
    with pytest.raises(WeaviateConnectionError, match="connection refused"):
        await _outcome(call)
    assert nodes.probed == []
    assert not nodes.clients[A].closed
