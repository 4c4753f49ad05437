"""`ragbot ask` as a user runs it, with its own data dir and the session's Weaviate (no model: extractive answers)."""

from __future__ import annotations

from pathlib import Path

from harness.processes import run_ragbot


async def test_ask_answers_from_faqs_and_documents_and_refuses_empty_questions(
    shared_weaviate_env: dict[str, str], tmp_path: Path
) -> None:
    env = shared_weaviate_env
    (tmp_path / "handbook.md").write_text(
        "# Hours\n\nThe office is open from 9 to 17 on weekdays.\n\n# Parking\n\nVisitors park in garage B.\n"
    )
    (tmp_path / "faq.csv").write_text(
        "question,answer,negative_questions\nHow many days of paid leave do I get?,25 days a year.,"
        "How many sick days do I get?\n"
    )
    for args in (
        ("kb", "create", "hr"),
        ("ingest", "handbook.md", "--kb", "hr"),
        ("faq", "import", "faq.csv", "--kb", "hr"),
    ):
        code, _, err = await run_ragbot(env, tmp_path, *args)
        assert code == 0, err

    code, out, err = await run_ragbot(env, tmp_path, "ask", "how much paid leave do I get?", "--kb", "hr")
    assert code == 0, err
    # Ranked first but below the direct-answer bar: quoted as a source under the question it answers, not given as
    # the answer itself.
    assert out.startswith("**How many days of paid leave do I get?**\n> 25 days a year. [1]\n")
    assert "[1] How many days of paid leave do I get?" in out

    code, out, err = await run_ragbot(env, tmp_path, "ask", "when does the office open?", "--kb", "hr", "--show-stages")
    assert code == 0, err
    assert "The office is open from 9 to 17 on weekdays." in out
    assert "handbook.md" in out.split("Sources:")[1]
    assert "25 days" not in out
    assert "SEARCH" in err
    assert "outcome=extractive" in err

    code, out, _ = await run_ragbot(env, tmp_path, "ask", "   ", "--kb", "hr")
    assert code == 1
    assert "Sources" not in out
