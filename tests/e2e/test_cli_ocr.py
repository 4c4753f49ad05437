"""A scanned copy of a handbook answers a question as the typed original does (`ragbot ingest` and `ragbot ask`)."""

from __future__ import annotations

from pathlib import Path

from harness.processes import run_ragbot
from tests.support.scans import render, scanned_pdf

# Two pages of a handbook, as typed and as scanned: the answer sits on the second page.
PAGES = [
    [
        "Travel policy",
        "Book flights through the travel desk at least two weeks ahead.",
        "Economy class is the rule for flights under six hours.",
    ],
    [
        "Expenses",
        "Submit expense receipts within thirty days of the trip.",
        "Hotel stays are paid up to 150 euros a night in most cities.",
    ],
]
ANSWER = "Submit expense receipts within thirty days of the trip."


async def test_a_scanned_pdf_answers_a_question_as_the_typed_original(
    shared_weaviate_env: dict[str, str], tmp_path: Path
) -> None:
    env = shared_weaviate_env
    typed = "".join(f"# {title}\n\n" + "\n".join(lines) + "\n\n" for title, *lines in PAGES)
    (tmp_path / "handbook.md").write_text(typed)
    # An A4 page scanned at 150 dpi.
    pages = [render(lines, size=(1240, 1754), font_size=26) for lines in PAGES]
    (tmp_path / "handbook-scan.pdf").write_bytes(scanned_pdf(pages, resolution=150))
    for args in (
        ("kb", "create", "typed"),
        ("kb", "create", "scanned"),
        ("ingest", "handbook.md", "--kb", "typed"),
    ):
        code, _, err = await run_ragbot(env, tmp_path, *args)
        assert code == 0, err
    code, out, err = await run_ragbot(env, tmp_path, "ingest", "handbook-scan.pdf", "--kb", "scanned")
    assert code == 0, err
    assert "2 pages read with OCR" in out + err, (out, err)

    answers = []
    for kb in ("typed", "scanned"):
        code, out, err = await run_ragbot(env, tmp_path, "ask", "when do I submit expense receipts?", "--kb", kb)
        assert code == 0, err
        answers.append(out)

    typed_answer, scanned_answer = (answer.split("Sources:")[0] for answer in answers)
    assert ANSWER in typed_answer
    assert ANSWER in scanned_answer
    assert "handbook-scan.pdf, p. 2" in answers[1].split("Sources:")[1]  # the page the answer was read from
