"""`ragbot reindex --kb NAME` as a user runs it: the index rebuilt from SQL, answers the same, a clear refusal."""

from __future__ import annotations

import json
from pathlib import Path

from harness.processes import run_ragbot


async def test_reindex_rebuilds_a_knowledge_base_and_it_answers_as_before(
    user_env: dict[str, str], tmp_path: Path
) -> None:
    (tmp_path / "handbook.md").write_text(
        "# Hours\n\nThe office is open from 9 to 17 on weekdays.\n\n# Parking\n\nVisitors park in garage B.\n"
    )
    (tmp_path / "faq.csv").write_text("question,answer\nHow many days of paid leave do I get?,25 days a year.\n")
    for args in (
        ("kb", "create", "hr"),
        ("ingest", "handbook.md", "--kb", "hr"),
        ("faq", "import", "faq.csv", "--kb", "hr"),
    ):
        code, _, err = await run_ragbot(user_env, tmp_path, *args)
        assert code == 0, err
    question = ("ask", "when does the office open?", "--kb", "hr")
    code, before, err = await run_ragbot(user_env, tmp_path, *question)
    assert code == 0, err
    assert "reindex" not in err, "an index made by this version needs no rebuild"

    code, _, err = await run_ragbot(user_env, tmp_path, "reindex", "--kb", "hr")

    assert code == 0, err
    assert "hr: index [####################]" in err, "the progress bar reaches its end"
    assert "reindexed hr (2 chunks, 1 FAQ question): searches now read the new index" in err
    code, after, err = await run_ragbot(user_env, tmp_path, *question)
    assert code == 0, err
    assert after == before
    assert "The office is open from 9 to 17 on weekdays." in after
    assert "handbook.md" in after.split("Sources:")[1]

    code, _, err = await run_ragbot(user_env, tmp_path, "reindex", "--kb", "nope")
    assert code == 1
    assert err.strip() == "ragbot: No knowledge base named 'nope' (existing: hr)."


async def test_another_embedding_model_is_refused_until_reindex_reembeds_with_it(
    user_env: dict[str, str], model_dir: Path, tmp_path: Path
) -> None:
    (tmp_path / "handbook.md").write_text("# Hours\n\nThe office is open from 9 to 17 on weekdays.\n")
    for args in (("kb", "create", "hr"), ("ingest", "handbook.md", "--kb", "hr")):
        code, _, err = await run_ragbot(user_env, tmp_path, *args)
        assert code == 0, err
    # The same model with e5-style prompts is another model: its vectors differ from those in the index.
    other = tmp_path / "prompted-model"
    other.mkdir()
    for item in model_dir.iterdir():
        (other / item.name).symlink_to(item)
    (other / "config_sentence_transformers.json").unlink()
    (other / "config_sentence_transformers.json").write_text(
        json.dumps({"prompts": {"query": "query: ", "passage": "passage: "}, "default_prompt_name": None})
    )
    switched = {**user_env, "EMBEDDING_MODEL_DIR": str(other)}
    question = ("ask", "when does the office open?", "--kb", "hr")

    code, out, err = await run_ragbot(switched, tmp_path, *question)

    assert code == 1
    assert out == ""
    (line,) = err.strip().splitlines()
    assert line.startswith("ragbot: the search index holds vectors of sentence-transformers/all-MiniLM-L6-v2@")
    assert "`ragbot reindex --kb NAME`" in line
    code, _, err = await run_ragbot(switched, tmp_path, "reindex", "--kb", "hr")
    assert code == 0, err
    assert "re-embedding every knowledge base" in err
    code, out, err = await run_ragbot(switched, tmp_path, *question)
    assert code == 0, err
    assert "The office is open from 9 to 17 on weekdays." in out
    # The first model is now the other one.
    code, _, err = await run_ragbot(user_env, tmp_path, *question)
    assert code == 1
    assert "the search index holds vectors of" in err
