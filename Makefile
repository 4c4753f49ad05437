# ragbot: `make run` starts the service on embedded defaults, `make test` runs every test.
# Both install what is missing first (Python packages, the Weaviate server, Tesseract OCR; Neo4j, PostgreSQL and haproxy
# for tests).

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
WEAVIATE_VERSION := 1.38.11
WEAVIATE := bin/weaviate-server
NEO4J_VERSION := 5.26.0
NEO4J := bin/neo4j

# Offline copies of the embedding model and tiktoken files, where this checkout sits beside them.
# Elsewhere these stay unset and the libraries download what they need.
SHARED ?= ../shared
ifneq ($(wildcard $(SHARED)/models/all-MiniLM-L6-v2-onnx/model.onnx),)
  export EMBEDDING_MODEL_DIR ?= $(abspath $(SHARED)/models/all-MiniLM-L6-v2-onnx)
  export RAGBOT_TEST_MODEL_DIR ?= $(abspath $(SHARED)/models/all-MiniLM-L6-v2-onnx)
endif
ifneq ($(wildcard $(SHARED)/tiktoken),)
  export TIKTOKEN_CACHE_DIR ?= $(abspath $(SHARED)/tiktoken)
endif

.PHONY: help install weaviate neo4j postgres haproxy chromium tesseract tesseract-if-possible demo run test lint unit integration e2e bench clean

help:
	@echo "make run    install what is missing, start ragbot on embedded defaults"
	@echo "make test   install what is missing, start test servers, run every test"

install:
	@PYTHON=$(PYTHON) sh scripts/install-python.sh $(VENV) dev

weaviate:
	@PYTHON=$(PYTHON) sh scripts/install-weaviate.sh $(WEAVIATE_VERSION) $(WEAVIATE)

# The graph store's server in the tests (NEO4J_URI): Neo4j Community's jars from Maven Central, run on Java 17.
neo4j:
	@sh scripts/install-neo4j.sh $(NEO4J_VERSION) $(NEO4J)

postgres:
	@sh scripts/install-postgres.sh

# The load balancer in front of several `ragbot serve` instances in tests/e2e/test_instances.py.
haproxy:
	@sh scripts/install-haproxy.sh

chromium:
	@sh scripts/install-chromium.sh

# Reads the text of images and scanned PDF pages at ingestion (OCR_COMMAND, OCR_LANGUAGES): English and Chinese.
tesseract:
	@sh scripts/install-tesseract.sh test

# `make run` goes on without OCR where Debian's packages cannot be installed (another system, no sudo): scans and
# photos are then refused with a note saying Tesseract is missing, and everything else works.
tesseract-if-possible:
	@sh scripts/install-tesseract.sh || echo "ragbot runs without OCR: Tesseract could not be installed here (install tesseract-ocr with its eng, chi_sim and osd language packs to read scans and photos)"

# A knowledge base of ragbot's own documentation, so `ragbot chat --kb demo` works right away.
# Re-ingesting unchanged files is a no-op, so this costs a second after the first run.
demo: install weaviate
	@$(BIN)/ragbot kb info demo >/dev/null 2>&1 || $(BIN)/ragbot kb create demo --description "ragbot's own documentation"
	@$(BIN)/ragbot ingest README.md docs --kb demo

# The web chat reads the demo knowledge base unless .env names others.
run: install weaviate tesseract-if-possible demo
	@echo "ragbot's web chat: http://127.0.0.1:8080/  (or, in another terminal: .venv/bin/ragbot chat --kb demo)"
	@if grep -q '^DEFAULT_KNOWLEDGE_BASES=.' .env 2>/dev/null; then exec $(BIN)/ragbot serve; \
	else DEFAULT_KNOWLEDGE_BASES="$${DEFAULT_KNOWLEDGE_BASES:-demo}" exec $(BIN)/ragbot serve; fi

lint: install
	$(BIN)/ruff check bot rag adapters storage tests bench fakes harness
	$(BIN)/ruff format --check bot rag adapters storage tests bench fakes harness
	$(BIN)/mypy
	$(BIN)/lint-imports

unit: install
	$(BIN)/pytest tests/unit -q

# Four pytest-xdist workers: most of the slow tests wait on servers and subprocesses (a `ragbot` command starts in
# seconds), so four overlap well even on two cores: pytest 7:14 against 8:45 with three and 10:01 with two
# (bench/RESULTS.md). A test module stays on one worker (its module fixtures start services), and modules go out in
# collection order (e2e, integration, unit), so the long end-to-end ones start first and the many short unit
# tests fill in at the end. Each worker has its own session Weaviate; all share one throw-away PostgreSQL
# cluster started here. `make test TEST_WORKERS=0` runs every test in the one pytest process.
TEST_WORKERS ?= 4

test: install weaviate neo4j postgres haproxy chromium tesseract lint
	RAGBOT_TEST_WEAVIATE_BINARY=$(abspath $(WEAVIATE)) RAGBOT_TEST_NEO4J_HOME=$(abspath $(NEO4J)) $(BIN)/python scripts/with-test-postgres.py \
		$(BIN)/pytest -q -n $(TEST_WORKERS) --dist loadscope --no-loadscope-reorder

bench: weaviate
	@PYTHON=$(PYTHON) sh scripts/install-python.sh $(VENV) dev,bench
	$(BIN)/python -m bench.embed
	$(BIN)/python -m bench.split
	$(BIN)/python -m bench.ingest
	$(BIN)/python -m bench.search

clean:
	rm -rf $(VENV) bin/weaviate-server bin/neo4j .pytest_cache .mypy_cache .ruff_cache
