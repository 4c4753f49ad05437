"""What a person is told when the Weaviate under a command stops: whose server it was and what to do."""

from __future__ import annotations

from dataclasses import replace

import pytest

from storage.weaviate.config import WeaviateEndpoint
from storage.weaviate.store import stopped_message

LOCAL = WeaviateEndpoint("127.0.0.1", 41234, False, "127.0.0.1", 41235, False)


@pytest.mark.parametrize(
    ("endpoint", "message"),
    [
        pytest.param(
            replace(LOCAL, server_pid=200, owner_pid=100),
            "the Weaviate server of the running ragbot (pid 100) stopped while this command ran (it stops with that "
            "ragbot): start `ragbot serve` again, or stop it and run the command alone",
            id="shared-with-a-running-ragbot",
        ),
        pytest.param(
            replace(LOCAL, server_pid=200),
            "the local Weaviate server (pid 200) stopped unexpectedly: see weaviate.log in its data dir "
            "(`ragbot doctor` names it), then start ragbot again",
            id="its-own-server",
        ),
        pytest.param(
            WeaviateEndpoint("weaviate.internal", 8080, False, "weaviate.internal", 50051, False),
            "Weaviate at http://weaviate.internal:8080 stopped answering: check that it runs and is reachable, "
            "then try again",
            id="remote",
        ),
    ],
)
def test_the_message_names_whose_server_stopped_and_what_to_do(endpoint: WeaviateEndpoint, message: str) -> None:
    assert stopped_message(endpoint) == message
