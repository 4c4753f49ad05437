"""Settings: .env.example matches the fields, bad values name their variable, defaults are embedded."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pydantic import ValidationError
from sqlalchemy.engine import make_url

from adapters.slack.settings import SlackSettings
from bench.fusion_weights import GRID, settings_line
from bot.app.settings import Settings, describe_validation_error
from rag.web.blacklist import Blacklist

EXAMPLE = Path(__file__).resolve().parents[4] / ".env.example"
_ASSIGNMENT = re.compile(r"^([A-Z][A-Z0-9_]*)=(.*)$")


@pytest.fixture(autouse=True)
def _isolated_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No ragbot variable from the developer's shell or Makefile, and no stray `.env` in the working directory."""
    for name in Settings.model_fields:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)


def _example_lines() -> list[str]:
    return EXAMPLE.read_text(encoding="utf-8").splitlines()


def _example_names() -> list[str]:
    return [match.group(1) for line in _example_lines() if (match := _ASSIGNMENT.match(line))]


def test_env_example_lists_exactly_the_settings_fields_in_order() -> None:
    assert _example_names() == list(Settings.model_fields)


def test_env_example_explains_every_variable_in_a_comment_above_it() -> None:
    lines = _example_lines()
    undocumented = [
        match.group(1)
        for index, line in enumerate(lines)
        if (match := _ASSIGNMENT.match(line)) and (index == 0 or not lines[index - 1].startswith("# "))
    ]
    assert undocumented == []


def test_env_example_is_a_valid_configuration_equal_to_the_defaults() -> None:
    from_example = Settings(_env_file=EXAMPLE)
    assert from_example.model_dump() == Settings(_env_file=None).model_dump()


def test_env_example_leaves_every_secret_empty() -> None:
    values = {match.group(1): match.group(2) for line in _example_lines() if (match := _ASSIGNMENT.match(line))}
    secrets = [name for name in values if name.endswith(("_API_KEY", "_TOKEN", "_SECRET"))]
    assert secrets, "expected the example to list the API key settings"
    assert {name: values[name] for name in secrets} == dict.fromkeys(secrets, "")


@pytest.mark.parametrize(
    ("variable", "value", "fragment"),
    [
        ("DATABASE_URL", "mysql://x", "unsupported database 'mysql'"),
        ("DATABASE_URL", "not a url", "not a database URL"),
        ("DATABASE_URL", "postgresql://", "names no database"),
        ("RAGBOT_PORT", "0", "greater than or equal to 1"),
        ("RAGBOT_PORT", "65536", "less than or equal to 65535"),
        ("RAGBOT_PORT", "abc", "valid integer"),
        ("WEAVIATE_URL", "ftp://h", "http:// or https://"),
        ("NEO4J_URI", "http://graph:7474", "bolt://, neo4j://"),
        ("CHAT_MODEL_BASE_URL", "localhost:8000", "http:// or https://"),
        ("EMBEDDING_PROVIDER", "bert", "'local' or 'openai'"),
        ("LOG_LEVEL", "LOUD", "'DEBUG'"),
        ("EMBEDDING_MAX_TOKENS", "1", "greater than or equal to 8"),
        ("RERANK_PROVIDER", "cohere", "'local', 'api' or 'none'"),
        ("RERANK_THRESHOLD", "1.5", "less than or equal to 1"),
        ("RETRIEVAL_TOP_K", "0", "greater than or equal to 1"),
        ("ANSWER_FALLBACK_TEXT", "   ", "must not be empty"),
        ("QUERY_EXPANSION", "maybe", "valid boolean"),
        ("RERANK_BASE_URL", "api.jina.ai", "http:// or https://"),
        ("EMBEDDING_LANGUAGES", "en,fr", "unknown language fr"),
        ("FUSION_WEIGHTS", '{"chunks": {"zh": {"vector": -1, "bm25": 1}}}', "0 or more"),
        ("WEB_SEARCH_BLACKLIST", "*://*.example.com/*\n/forum\\.(net/", "line 2 ('/forum\\\\.(net/')"),
        ("WEB_SEARCH_PROVIDER", "bing", "'duckduckgo'"),
        ("WEB_SEARCH_GOOGLE_URL", "www.googleapis.com", "http:// or https://"),
    ],
)
def test_bad_value_is_reported_in_one_line_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch, variable: str, value: str, fragment: str
) -> None:
    monkeypatch.setenv(variable, value)
    with pytest.raises(ValidationError) as caught:
        Settings(_env_file=None)
    lines = describe_validation_error(caught.value)
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"{variable}: ")
    assert fragment in lines[0]


def test_web_search_blacklist_rules_are_read_one_a_line_from_dotenv(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text('WEB_SEARCH_BLACKLIST="/example\\\\.(net|org)/\\n*://*.example.com/*"\n')
    rules = Blacklist.parse(Settings().WEB_SEARCH_BLACKLIST)
    assert rules.blocks("https://example.net/x")
    assert rules.blocks("https://a.example.com/x")
    assert not rules.blocks("https://example.com/x")


def test_google_web_search_without_its_key_and_engine_stops_start_up(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WEB_SEARCH_PROVIDER", "google")
    with pytest.raises(ValidationError) as caught:
        Settings(_env_file=None)
    assert "GOOGLE_SEARCH_API_KEY and GOOGLE_SEARCH_ENGINE_ID" in describe_validation_error(caught.value)[0]


def test_each_bad_variable_gets_its_own_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGBOT_PORT", "0")
    monkeypatch.setenv("LOG_LEVEL", "LOUD")
    with pytest.raises(ValidationError) as caught:
        Settings(_env_file=None)
    assert sorted(line.split(":")[0] for line in describe_validation_error(caught.value)) == [
        "LOG_LEVEL",
        "RAGBOT_PORT",
    ]


def test_typo_in_dotenv_is_rejected_as_not_a_ragbot_setting(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("DATABSE_URL=postgresql://u:p@db/ragbot\n", encoding="utf-8")
    with pytest.raises(ValidationError) as caught:
        Settings()  # reads ./.env, which the fixture made tmp_path
    lines = describe_validation_error(caught.value)
    assert len(lines) == 1, lines
    assert lines[0].startswith("DATABSE_URL: ")
    assert "not a ragbot setting" in lines[0]


def test_dotenv_values_are_read_from_the_working_directory(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("RAGBOT_PORT=9123\n", encoding="utf-8")
    assert Settings().RAGBOT_PORT == 9123


def test_environment_overrides_dotenv(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("RAGBOT_PORT=9123\n", encoding="utf-8")
    monkeypatch.setenv("RAGBOT_PORT", "9124")
    assert Settings().RAGBOT_PORT == 9124


@pytest.mark.parametrize(
    "variable",
    ["DATABASE_URL", "WEAVIATE_URL", "WEAVIATE_API_KEY", "EMBEDDING_MODEL_DIR", "EMBEDDING_DIMENSION", "CHAT_MODEL"],
)
def test_empty_value_means_unset(monkeypatch: pytest.MonkeyPatch, variable: str) -> None:
    monkeypatch.setenv(variable, "")
    assert getattr(Settings(_env_file=None), variable) is None


def test_database_defaults_to_sqlite_inside_the_data_dir(tmp_path: Path) -> None:
    settings = Settings(_env_file=None)
    url = make_url(settings.database().url)
    assert url.get_backend_name() == "sqlite"
    assert url.database is not None
    assert Path(url.database).parent == settings.data_dir == tmp_path.resolve() / "data"


def test_database_url_is_used_as_given(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DATABASE_URL", "postgresql://ragbot:pw@db.internal:5432/ragbot")
    assert Settings(_env_file=None).database().url == "postgresql://ragbot:pw@db.internal:5432/ragbot"


def test_unset_weaviate_url_means_a_local_server_with_data_in_the_data_dir() -> None:
    settings = Settings(_env_file=None)
    assert settings.weaviate().url is None
    assert settings.weaviate_server().data_dir.is_relative_to(settings.data_dir)


def test_weaviate_url_loses_its_trailing_slash(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WEAVIATE_URL", "http://weaviate.internal:8080/")
    assert Settings(_env_file=None).weaviate().url == "http://weaviate.internal:8080"


def test_unset_chat_model_means_no_model() -> None:
    assert Settings(_env_file=None).chat_model() is None


def test_secrets_reach_their_configs_but_not_the_repr(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHAT_MODEL", "gpt-4o-mini")
    monkeypatch.setenv("CHAT_MODEL_API_KEY", "sk-chat-secret-1234")
    monkeypatch.setenv("WEAVIATE_API_KEY", "wv-secret-5678")
    monkeypatch.setenv("EMBEDDING_API_KEY", "sk-embed-secret-9012")
    settings = Settings(_env_file=None)

    chat = settings.chat_model()
    assert chat is not None
    assert chat.api_key == "sk-chat-secret-1234"
    assert settings.weaviate().api_key == "wv-secret-5678"
    assert settings.embedder().api_key == "sk-embed-secret-9012"
    for shown in (repr(settings), str(settings)):
        for secret in ("sk-chat-secret-1234", "wv-secret-5678", "sk-embed-secret-9012"):
            assert secret not in shown


@pytest.mark.parametrize(("provider", "languages"), [("local", frozenset({"en"})), ("api", None), ("none", None)])
def test_the_local_reranker_serves_only_the_languages_retrieval_trusts_the_embedder_for(
    monkeypatch: pytest.MonkeyPatch, provider: str, languages: frozenset[str] | None
) -> None:
    monkeypatch.setenv("RERANK_PROVIDER", provider)
    monkeypatch.setenv("RERANK_BASE_URL", "http://127.0.0.1:9/v1")
    assert Settings(_env_file=None).rerank().languages == languages


@pytest.mark.parametrize(
    ("provider", "floor", "expected"),
    [("local", None, (0.5, 0.5, False)), ("api", None, (0.5, 0.3, True)), ("api", "0.6", (0.6, 0.6, True))],
)
def test_the_rerank_floor_is_the_judges_own_and_nothing_below_it_is_kept(
    monkeypatch: pytest.MonkeyPatch, provider: str, floor: str | None, expected: tuple[float, float, bool]
) -> None:
    monkeypatch.setenv("RERANK_PROVIDER", provider)
    monkeypatch.setenv("RERANK_BASE_URL", "http://127.0.0.1:9/v1")
    if floor is not None:
        monkeypatch.setenv("RERANK_FLOOR", floor)
    config = Settings(_env_file=None).rerank()
    assert (config.threshold, config.floor, config.reorder) == expected


@pytest.mark.parametrize(
    ("name", "value", "problem"),
    [
        ("SLACK_ADMINS", "alice", "member ids"),
        ("SLACK_ADMINS", "U012ABC,@bob", "@bob"),
        ("SLACK_COMMAND", "kb", "slash command"),
        ("SLACK_STREAMING", "fast", "native"),
    ],
)
def test_bad_slack_settings_name_the_variable(name: str, value: str, problem: str) -> None:
    with pytest.raises(ValidationError) as caught:
        Settings(_env_file=None, **{name: value})  # type: ignore[call-arg, arg-type]
    (line,) = describe_validation_error(caught.value)
    assert line.startswith(f"{name}: ")
    assert problem in line


def test_slack_admins_are_member_ids() -> None:
    settings = Settings(_env_file=None, SLACK_ADMINS="U012ABC, W0456DEF")  # type: ignore[call-arg]
    assert SlackSettings.of(settings).admins() == frozenset({"U012ABC", "W0456DEF"})


@pytest.mark.parametrize(
    ("provider", "languages", "served"),
    [
        ("local", None, {"en"}),
        ("openai", None, {"en", "zh"}),
        ("local", "*", {"en", "zh"}),
        ("local", "zh, en", {"en", "zh"}),
        ("openai", "en", {"en"}),
    ],
)
def test_the_embedding_models_languages_decide_where_vectors_count(
    monkeypatch: pytest.MonkeyPatch, provider: str, languages: str | None, served: set[str]
) -> None:
    monkeypatch.setenv("EMBEDDING_PROVIDER", provider)
    monkeypatch.setenv("EMBEDDING_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("RERANK_PROVIDER", "local")
    if languages is not None:
        monkeypatch.setenv("EMBEDDING_LANGUAGES", languages)
    settings = Settings(_env_file=None)
    weights = settings.retrieval().weights
    assert weights.vector_languages() == served
    # FAQ confidence trusts the cosine where the FAQ vector leg counts; the local reranker runs where vectors do.
    assert {lang for lang, legs in settings.faq_search().weights.items() if legs["vector"] > 0} == served
    assert settings.rerank().languages == served
    for lang in {"en", "zh"} - served:
        assert weights.chunks[lang] == {"vector": 0.0, "bm25": 1.0}


def test_pasted_fusion_weights_override_the_languages_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EMBEDDING_LANGUAGES", "*")
    monkeypatch.setenv("FUSION_WEIGHTS", '{"chunks": {"zh": {"vector": 0.5, "bm25": 1.0}}}')
    weights = Settings(_env_file=None).retrieval().weights
    assert weights.chunks["zh"] == {"vector": 0.5, "bm25": 1.0}
    assert weights.chunks["en"] == {"vector": 1.0, "bm25": 1.0}
    assert weights.faqs["zh"] == {"vector": 1.0, "bm25": 0.0}


def test_fusion_weights_for_an_unknown_language_name_the_place_in_the_json(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FUSION_WEIGHTS", '{"chunks": {"de": {"vector": 1}}}')
    with pytest.raises(ValidationError) as caught:
        Settings(_env_file=None)
    (line,) = describe_validation_error(caught.value)
    assert line.startswith("FUSION_WEIGHTS.chunks.de")
    assert "'zh' or 'en'" in line


def test_the_line_the_fusion_sweep_prints_is_a_setting_that_gives_its_best_weights(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    zh_chunks = {point: 0.5 for point in GRID} | {(0.3, 1.0): 0.9}
    en_faqs_a = {point: 0.5 for point in GRID} | {(1.0, 0.0): 0.8, (1.0, 0.1): 0.7}
    en_faqs_b = {point: 0.5 for point in GRID} | {(1.0, 0.0): 0.6, (1.0, 0.1): 0.75}
    line = settings_line({("chunks", "zh"): [zh_chunks], ("faqs", "en"): [en_faqs_a, en_faqs_b]})
    name, _, value = line.partition("=")
    monkeypatch.setenv(name, value)
    weights = Settings(_env_file=None).retrieval().weights
    assert weights.chunks["zh"] == {"vector": 0.3, "bm25": 1.0}
    # Averaged over the two FAQ sets: 0.70 for (1.0, 0.0) against 0.725 for (1.0, 0.1).
    assert weights.faqs["en"] == {"vector": 1.0, "bm25": 0.1}
