"""What bench/legs.py ingests and asks: shared-eval passages, a generated price list, web results, planned SQL."""

from __future__ import annotations

import csv
import html
import io
import json
import random
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fakes.web_search.formats import Hit

_SEED = 20261127
CATEGORIES = ("Tea", "Coffee", "Cocoa", "Spices", "Snacks", "Cutlery", "Paper goods", "Cleaning")
SUPPLIERS = ("Northwind Traders", "Contoso Foods", "Fabrikam Supply", "Tailspin Wholesale", "Adventure Works")
_ADJECTIVES = ("Organic", "Classic", "Premium", "Everyday", "Fair-trade", "Large", "Small", "Family")
_NOUNS = ("blend", "pack", "tin", "box", "jar", "pouch", "carton", "set")
HEADER = ("sku", "product", "category", "supplier", "unit_price", "stock")
# Web results a search returns (WEB_SEARCH_MAX_RESULTS' default); the first WEB_SEARCH_FETCH_PAGES have pages.
WEB_RESULTS = 10
WEB_PAGES = 3


def price_list(rows: int) -> bytes:
    """A CSV price list of `rows` products (and its header), the same for the same `rows`."""
    rng = random.Random(_SEED)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(HEADER)
    for n in range(rows):
        category = CATEGORIES[n % len(CATEGORIES)]
        product = f"{rng.choice(_ADJECTIVES)} {category.lower()} {rng.choice(_NOUNS)} {n}"
        price = round(rng.uniform(0.5, 90.0), 2)
        writer.writerow((f"P{n:06d}", product, category, rng.choice(SUPPLIERS), price, rng.randint(0, 500)))
    return out.getvalue().encode()


@dataclass(frozen=True, slots=True)
class SheetQuestion:
    """A question over the price list and the SQL the fake model writes for it (`{table}` is the table's name)."""

    text: str
    sql: str


def sheet_questions(count: int) -> list[SheetQuestion]:
    """A count with a filter, a group-by and a sum with a filter, in turn."""
    shapes: list[Callable[[int], SheetQuestion]] = [
        lambda n: SheetQuestion(
            f"How many products in the price list are in the {CATEGORIES[n % len(CATEGORIES)]} category?",
            f"SELECT count(*) AS products FROM \"{{table}}\" WHERE category = '{CATEGORIES[n % len(CATEGORIES)]}'",
        ),
        lambda n: SheetQuestion(
            "What is the average unit price per category in the price list?",
            'SELECT category, round(avg(unit_price), 2) AS average_price, count(*) AS products FROM "{table}" '
            "GROUP BY category ORDER BY category",
        ),
        lambda n: SheetQuestion(
            f"What is the total stock of products from {SUPPLIERS[n % len(SUPPLIERS)]} in the price list?",
            f"SELECT sum(stock) AS total_stock FROM \"{{table}}\" WHERE supplier = '{SUPPLIERS[n % len(SUPPLIERS)]}'",
        ),
    ]
    return [shapes[n % len(shapes)](n) for n in range(count)]


_TABLE = re.compile(r'Table "([^"]+)"')


def plan_reply(questions: list[SheetQuestion], answer: str) -> Callable[[Any], str]:
    """The fake model's reply: the planned SQL for DATA_ANALYSIS's prompt (seen by its `needs_sql`), else `answer`."""
    by_text = {question.text: question.sql for question in questions}

    def reply(body: Any) -> str:
        messages = body["messages"]
        if "needs_sql" not in str(messages[0]["content"]):
            return answer
        prompt = str(messages[-1]["content"])
        asked = prompt.rpartition("Question: ")[2].strip()
        table = _TABLE.search(prompt)
        sql = by_text.get(asked)
        if sql is None or table is None:
            return json.dumps({"needs_sql": False, "sql": ""})
        return json.dumps({"needs_sql": True, "sql": sql.format(table=table.group(1))})

    return reply


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@dataclass(frozen=True, slots=True)
class Corpus:
    """Documents to ingest, questions about them (English and Chinese in turn), and passages for web results."""

    documents: list[tuple[str, str]]
    questions: list[str]
    elsewhere: list[tuple[str, str]]


def corpus(eval_dir: Path, questions: int) -> Corpus:
    """SciFact claims and CMRC 2018 questions with the passages that answer them; other passages for the web."""
    documents: list[tuple[str, str]] = []
    asked: list[list[str]] = []
    held: set[str] = set()
    for name in ("scifact", "cmrc2018"):
        folder = eval_dir / name
        qrels: dict[str, str] = {}
        for row in _jsonl(folder / "qrels.jsonl"):
            qrels.setdefault(str(row["query_id"]), str(row["doc_id"]))
        chosen = [row for row in _jsonl(folder / "queries.jsonl") if str(row["id"]) in qrels][: (questions + 1) // 2]
        wanted = {qrels[str(row["id"])] for row in chosen}
        rows = {str(row["id"]): row for row in _jsonl(folder / "corpus.jsonl")}
        documents += [(f"{doc}.txt", _text(rows[doc])) for doc in sorted(wanted) if doc in rows]
        held |= wanted
        asked.append([str(row["text"]) for row in chosen])
    mixed = [text for pair in zip(*asked, strict=False) for text in pair][:questions]
    others = [row for row in _jsonl(eval_dir / "scifact" / "corpus.jsonl") if str(row["id"]) not in held]
    elsewhere = [(str(row["title"]), str(row["text"])) for row in others[: questions * WEB_RESULTS]]
    return Corpus(documents, mixed, elsewhere)


def _text(row: dict[str, Any]) -> str:
    return f"{row.get('title') or ''}\n\n{row['text']}".strip()


@dataclass(frozen=True, slots=True)
class WebAnswer:
    """What the fake provider serves for one question: its results, and the pages of the first few."""

    hits: list[Hit]
    pages: dict[str, str]


def web_answer(number: int, elsewhere: list[tuple[str, str]], page_url: Callable[[str], str]) -> WebAnswer:
    """Ten results of passages no other question gets, the first three with a page on the fake."""
    hits, pages = [], {}
    for rank in range(WEB_RESULTS):
        title, text = elsewhere[(number * WEB_RESULTS + rank) % len(elsewhere)]
        snippet = " ".join(text.split()[:40])
        if rank < WEB_PAGES:
            name = f"q{number}-{rank}"
            pages[name] = (
                f"<html><head><title>{html.escape(title)}</title></head><body><nav>Home | About</nav><main>"
                f"<h1>{html.escape(title)}</h1><p>{html.escape(text)}</p></main></body></html>"
            )
            hits.append(Hit(page_url(name), title, snippet))
        else:
            hits.append(Hit(f"https://site{rank}.example.org/articles/{number}", title, snippet))
    return WebAnswer(hits, pages)
