"""endpoint_from_url: REST and gRPC addresses from WEAVIATE_URL and WEAVIATE_GRPC_URL."""

from __future__ import annotations

import pytest

from storage.weaviate.config import WeaviateEndpoint
from storage.weaviate.store import endpoint_from_url, endpoints_from_urls


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://localhost", WeaviateEndpoint("localhost", 80, False, "localhost", 50051, False)),
        (
            "http://weaviate.internal:8080",
            WeaviateEndpoint("weaviate.internal", 8080, False, "weaviate.internal", 50051, False),
        ),
        ("https://w.example.com", WeaviateEndpoint("w.example.com", 443, True, "w.example.com", 50051, True)),
        ("https://w.example.com:8443/", WeaviateEndpoint("w.example.com", 8443, True, "w.example.com", 50051, True)),
    ],
)
def test_rest_url_alone_gives_default_ports_and_grpc_on_the_same_host(url: str, expected: WeaviateEndpoint) -> None:
    assert endpoint_from_url(url) == expected


def test_http_url_gives_an_http_base_url() -> None:
    assert endpoint_from_url("http://localhost:8080").http_url == "http://localhost:8080"


def test_https_url_is_secure_on_443() -> None:
    endpoint = endpoint_from_url("https://w.example.com")
    assert (endpoint.http_secure, endpoint.http_port, endpoint.http_url) == (True, 443, "https://w.example.com:443")


def test_explicit_grpc_url_sets_grpc_host_port_and_security() -> None:
    endpoint = endpoint_from_url("https://w.example.com", "http://grpc.internal:6000")
    assert (endpoint.http_host, endpoint.http_port, endpoint.http_secure) == ("w.example.com", 443, True)
    assert (endpoint.grpc_host, endpoint.grpc_port, endpoint.grpc_secure) == ("grpc.internal", 6000, False)


def test_grpc_url_without_port_defaults_to_50051() -> None:
    endpoint = endpoint_from_url("http://localhost:8080", "http://grpc.internal")
    assert (endpoint.grpc_host, endpoint.grpc_port) == ("grpc.internal", 50051)


def test_https_grpc_url_without_port_is_a_hosted_endpoint_on_443() -> None:
    endpoint = endpoint_from_url("https://w.example.com", "https://grpc-w.example.com")
    assert (endpoint.grpc_host, endpoint.grpc_port, endpoint.grpc_secure) == ("grpc-w.example.com", 443, True)


@pytest.mark.parametrize("url", ["http://", "localhost:8080", "/v1"])
def test_url_without_host_is_rejected(url: str) -> None:
    with pytest.raises(ValueError, match="names no host"):
        endpoint_from_url(url)


def test_a_cluster_is_named_by_its_nodes_urls_in_order_each_with_its_own_grpc_port() -> None:
    nodes = endpoints_from_urls(
        " http://n1:8080, http://n2:8081 ,https://n3", "http://n1:50051,http://n2:50052,https://n3"
    )
    assert [(n.http_host, n.http_port, n.http_secure) for n in nodes] == [
        ("n1", 8080, False),
        ("n2", 8081, False),
        ("n3", 443, True),
    ]
    assert [(n.grpc_host, n.grpc_port) for n in nodes] == [("n1", 50051), ("n2", 50052), ("n3", 443)]


def test_one_url_is_one_node_as_before() -> None:
    assert endpoints_from_urls("http://localhost:8080") == (endpoint_from_url("http://localhost:8080"),)


def test_grpc_urls_that_do_not_pair_with_the_nodes_are_refused_with_both_counts() -> None:
    with pytest.raises(ValueError, match=r"WEAVIATE_GRPC_URL names 1 node.* WEAVIATE_URL names 2"):
        endpoints_from_urls("http://n1:8080,http://n2:8080", "http://n1:50051")
