"""FAQ import: read a .csv, .xlsx or .json FAQ sheet into validated `FaqEntry` values, reporting every bad row."""

from __future__ import annotations

import csv
import io
import json
import re
import zipfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Literal

from charset_normalizer import from_bytes

from rag.errors import CorruptDocument, Detail, DocumentTooLarge, EncryptedDocument, FaqImportError, FaqProblem
from rag.ingest.extractors.limits import ExtractLimits, check_zip_container

MAX_QUESTION_CHARS = 2000
"""Longest standard, similar or negative question accepted."""

MAX_ANSWER_CHARS = 10000
"""Longest single answer accepted."""

_Problems = list[FaqProblem]
# A sheet is read in the service's own process (its header decides whether an upload is an FAQ sheet), so its
# workbook is first unpacked in bounded reads: 20 MB of XML holds some 40,000 FAQ rows, and a zip bomb stops here.
_XLSX_LIMITS = ExtractLimits(max_unpacked_bytes=20 * 1024 * 1024)

_TEMPLATE_DIR = Path(__file__).parent
_EXPECTED = (
    "expected columns: question, answer (more answers: answer 2, answer 3, ...), similar_questions, "
    "negative_questions, enabled; the Chinese headers 问题, 答案, 相似问题, 反例问题, 启用 work too"
)
_TRUE = frozenset({"true", "yes", "1", "是"})
_FALSE = frozenset({"false", "no", "0", "否"})
_ANSWER_SEPARATOR = re.compile(r"^[ \t]*---[ \t]*$", re.MULTILINE)
_ITEM_SEPARATOR = re.compile(r"[\n|]")
_SINGLE_ROLES = {
    "question": "question",
    "standard_question": "question",
    "问题": "question",
    "标准问题": "question",
    "similar_questions": "similar_questions",
    "similar_question": "similar_questions",
    "相似问题": "similar_questions",
    "negative_questions": "negative_questions",
    "negative_question": "negative_questions",
    "反例问题": "negative_questions",
    "负例问题": "negative_questions",
    "enabled": "enabled",
    "启用": "enabled",
    "是否启用": "enabled",
}
_ANSWER_HEADER = re.compile(r"(?:answers?|答案)_?\d*")
# What openpyxl raises on a damaged or non-xlsx file: zip errors, missing parts, bad XML (ElementTree's and lxml's
# parse errors are SyntaxErrors), bad values. A password-protected workbook is not a zip at all.
_XLSX_ERRORS = (
    zipfile.BadZipFile,
    KeyError,
    ValueError,
    TypeError,
    OSError,
    SyntaxError,
    EOFError,
)


@dataclass(frozen=True, slots=True)
class FaqEntry:
    """One FAQ: a standard question, its answers, and the phrasings that should and should not match it."""

    question: str
    answers: tuple[str, ...]
    similar_questions: tuple[str, ...] = ()
    negative_questions: tuple[str, ...] = ()
    enabled: bool = True


def _failed(row: int, reason: str, message: str, **details: Detail) -> FaqImportError:
    """The error for a file with one problem (`reason` names it for a chat; `message` is the operator's English)."""
    return FaqImportError([FaqProblem(row, message, reason, details)])


def template_path(kind: Literal["csv", "json"]) -> Path:
    """Path of the packaged FAQ template of that kind, which `parse_faq_file` accepts as is."""
    return _TEMPLATE_DIR / f"faq_template.{kind}"


def parse_faq_file(data: bytes, filename: str) -> list[FaqEntry]:
    """Read FAQ entries from a .csv, .xlsx or .json file; raise `FaqImportError` listing every problem found."""
    suffix = PurePath(filename).suffix.lower()
    if suffix not in (".csv", ".xlsx", ".json"):
        shown = f"'{suffix}'" if suffix else "(no extension)"
        raise _failed(
            0,
            "unsupported_type",
            f"unsupported FAQ file type {shown}: use .csv, .xlsx or .json (see the template)",
            suffix=suffix,
        )
    if not data.strip():
        raise _failed(0, "empty", "no FAQ rows found: the file is empty")
    if suffix == ".csv":
        return _parse_csv(data)
    if suffix == ".xlsx":
        return _parse_xlsx(data)
    return _parse_json(data)


def is_faq_sheet(data: bytes, filename: str) -> bool:
    """Whether a file is an FAQ sheet: a .csv, .xlsx or .json whose header row (a JSON list's first object) has the
    question and answer columns `parse_faq_file` needs. Such an upload is imported as FAQs, not indexed as prose."""
    suffix = PurePath(filename).suffix.lower()
    try:
        header = _header(data, suffix)
    except (FaqImportError, csv.Error, ValueError, RecursionError, *_XLSX_ERRORS):
        return False  # not readable as a sheet at all: it is no FAQ sheet either
    roles = {_role(_cell_text(cell)) for cell in header}
    return {"question", "answer"} <= roles


def _header(data: bytes, suffix: str) -> Sequence[object]:
    if suffix == ".csv":
        return next(csv.reader(io.StringIO(_decode(data), newline="")), [])
    if suffix == ".xlsx":
        rows = _xlsx_rows(data, max_row=1)
        return rows[0] if rows else ()
    if suffix == ".json":
        document = json.loads(data)
        items = document.get("faqs") if isinstance(document, dict) else document
        first = items[0] if isinstance(items, list) and items else None
        return list(first) if isinstance(first, dict) else ()
    return ()


@dataclass(frozen=True, slots=True)
class _RawRow:
    """One row's values before validation: texts split into items but not yet trimmed."""

    row: int
    question: str
    answers: tuple[str, ...]
    similar: tuple[str, ...]
    negative: tuple[str, ...]
    enabled: object


@dataclass(frozen=True, slots=True)
class _Layout:
    """Which column holds what, found from the header row."""

    width: int
    question: int
    answers: tuple[int, ...]
    similar: int | None
    negative: int | None
    enabled: int | None


def _parse_csv(data: bytes) -> list[FaqEntry]:
    text = _decode(data)
    if not text.strip():
        raise _failed(0, "empty", "no FAQ rows found: the file is empty")
    rows: list[list[str]] = []
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        rows.extend(reader)
    except csv.Error as exc:
        raise _failed(len(rows) + 1, "csv_unreadable", f"the CSV could not be read: {exc}") from exc
    return _read_sheet(rows, check_width=True)


def _decode(data: bytes) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        pass
    matches = from_bytes(data)
    best = matches.best()
    if best is None:
        raise _failed(0, "encoding", "could not tell the text encoding of the CSV: save it as 'CSV UTF-8'")
    # Short Chinese texts decode equally well as GBK, Korean cp949 or Japanese cp932, and the detector then picks
    # any of them; Excel on a Chinese system saves CSV as GBK, so a tie goes to gb18030 (a superset of GBK).
    for match in matches:
        if match.encoding == "gb18030" and match.chaos <= best.chaos and match.coherence >= best.coherence:
            return str(match)
    return str(best)


def _parse_xlsx(data: bytes) -> list[FaqEntry]:
    return _read_sheet(_xlsx_rows(data), check_width=False)


def _xlsx_rows(data: bytes, max_row: int | None = None) -> list[tuple[object, ...]]:
    """The rows of the workbook's `faq` sheet (any case), else of its first sheet, up to `max_row`."""
    # Imported for an .xlsx only: openpyxl costs ~0.27 s of start-up to every process that imports this module.
    import openpyxl
    from openpyxl.utils.exceptions import InvalidFileException

    errors = (*_XLSX_ERRORS, InvalidFileException)
    try:
        check_zip_container(data, _XLSX_LIMITS)
    except (DocumentTooLarge, EncryptedDocument) as exc:
        raise _failed(0, exc.reason, str(exc)) from exc
    except CorruptDocument:
        pass  # openpyxl says what is wrong with a damaged file in the words a sheet's reader expects, below
    try:
        workbook = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=True)
    except errors as exc:
        raise _unreadable_xlsx(exc) from exc
    try:
        sheets = list(workbook.worksheets)
        if not sheets:
            raise _failed(0, "no_worksheet", "the .xlsx file has no worksheet")
        sheet = next((s for s in sheets if str(s.title).strip().casefold() == "faq"), sheets[0])
        # Some writers store a wrong sheet size; without it openpyxl reads every row that is there.
        sheet.reset_dimensions()
        return list(sheet.iter_rows(max_row=max_row, values_only=True))
    except errors as exc:
        raise _unreadable_xlsx(exc) from exc
    finally:
        workbook.close()


def _unreadable_xlsx(exc: Exception) -> FaqImportError:
    reason = f"the .xlsx file could not be read ({type(exc).__name__}): it may be damaged, password-protected or "
    return _failed(
        0, "xlsx_unreadable", reason + "not an .xlsx; save it again from Excel as .xlsx, or use the CSV template"
    )


def _read_sheet(rows: Sequence[Sequence[object]], *, check_width: bool) -> list[FaqEntry]:
    """Rows as a spreadsheet shows them: the first is the header (row 1), data starts at row 2."""
    if not any(_is_filled(row) for row in rows):
        raise _failed(0, "empty", "no FAQ rows found: the file is empty")
    layout = _layout(rows[0])
    problems: _Problems = []
    raws: list[_RawRow] = []
    for row_number, cells in enumerate(rows[1:], start=2):
        if not _is_filled(cells):
            continue
        extra = sum(1 for cell in cells[layout.width :] if _cell_text(cell).strip())
        if check_width and extra:
            message = f"{extra} more cell(s) than the header has columns: put cells holding commas in quotes"
            problems.append(FaqProblem(row_number, message, "extra_cells", {"count": extra}))
        raws.append(_sheet_row(layout, row_number, cells))
    if not raws:
        raise _failed(0, "no_rows", "no FAQ rows found: add one FAQ per row below the header row")
    return _build(raws, problems, noun="row")


def _layout(header: Sequence[object]) -> _Layout:
    problems: _Problems = []
    found: dict[str, list[int]] = {}
    answers: list[int] = []
    for index, cell in enumerate(header):
        role = _role(_cell_text(cell))
        if role == "answer":
            answers.append(index)
        elif role is not None:
            found.setdefault(role, []).append(index)
    missing = [name for name, present in (("question", "question" in found), ("answer", bool(answers))) if not present]
    if missing:
        seen = ", ".join(f"'{text}'" for cell in header if (text := _cell_text(cell).strip())) or "nothing"
        message = f"missing required column(s) {', '.join(missing)} (row 1 has {seen}); {_EXPECTED}"
        problems.append(FaqProblem(1, message, "missing_columns", {"missing": ", ".join(missing), "seen": seen}))
    for role, indexes in found.items():
        if len(indexes) > 1:
            message = f"the {role} column appears {len(indexes)} times; keep one"
            problems.append(FaqProblem(1, message, "duplicate_column", {"column": role, "count": len(indexes)}))
    if problems:
        raise FaqImportError(problems)

    def single(role: str) -> int | None:
        return found[role][0] if role in found else None

    return _Layout(
        width=len(header),
        question=found["question"][0],
        answers=tuple(answers),
        similar=single("similar_questions"),
        negative=single("negative_questions"),
        enabled=single("enabled"),
    )


def _role(header: str) -> str | None:
    """What a column (or JSON key) holds: case, surrounding space and `_`/`-`/space spelling do not matter."""
    name = re.sub(r"[\s_\-]+", "_", header.strip().casefold())
    if _ANSWER_HEADER.fullmatch(name):
        return "answer"
    return _SINGLE_ROLES.get(name)


def _sheet_row(layout: _Layout, row_number: int, cells: Sequence[object]) -> _RawRow:
    def cell(index: int | None) -> object:
        return cells[index] if index is not None and index < len(cells) else None

    return _RawRow(
        row=row_number,
        question=_cell_text(cell(layout.question)),
        answers=tuple(part for index in layout.answers for part in _split_answers(_cell_text(cell(index)))),
        similar=_split_items(_cell_text(cell(layout.similar))),
        negative=_split_items(_cell_text(cell(layout.negative))),
        enabled=cell(layout.enabled),
    )


def _parse_json(data: bytes) -> list[FaqEntry]:
    try:
        document = json.loads(data)
    except UnicodeDecodeError as exc:
        raise _failed(0, "json_not_utf8", "the JSON file is not UTF-8 text: save it as UTF-8") from exc
    except json.JSONDecodeError as exc:
        message = f"not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"
        raise _failed(0, "json_invalid", message, line=exc.lineno, column=exc.colno) from exc
    items = document.get("faqs") if isinstance(document, dict) else document
    if not isinstance(items, list):
        raise _failed(0, "json_not_list", 'the JSON must be a list of FAQ objects, or an object {"faqs": [...]}')
    if not items:
        raise _failed(0, "json_empty", "no FAQ rows found: the JSON list is empty")
    problems: _Problems = []
    raws = [raw for index, item in enumerate(items, start=1) if (raw := _json_row(index, item, problems))]
    return _build(raws, problems, noun="entry")


def _json_row(index: int, item: object, problems: _Problems) -> _RawRow | None:
    """Read one JSON entry; a string value is read like a sheet cell, a list gives its items as they are."""
    if not isinstance(item, dict):
        message = "each entry must be an object with at least question and answers"
        problems.append(FaqProblem(index, message, "entry_not_object"))
        return None
    before = len(problems)
    values: dict[str, list[str]] = {"question": [], "answer": [], "similar_questions": [], "negative_questions": []}
    enabled: object = None
    for key, value in item.items():
        role = _role(str(key))
        if role is None:
            continue
        if role == "enabled":
            enabled = value
        elif value is None:
            continue
        elif isinstance(value, str):
            text = _cell_text(value)
            values[role].extend(
                (text,) if role == "question" else _split_answers(text) if role == "answer" else _split_items(text)
            )
        elif role != "question" and isinstance(value, list) and all(isinstance(v, str) for v in value):
            values[role].extend(value)
        else:
            kind = "text" if role == "question" else "text or a list of texts"
            message = f"'{key}' must be {kind}, not {type(value).__name__}"
            problems.append(FaqProblem(index, message, "wrong_type", {"key": str(key)}))
    if len(problems) > before:
        return None
    return _RawRow(
        row=index,
        question="".join(values["question"]),
        answers=tuple(values["answer"]),
        similar=tuple(values["similar_questions"]),
        negative=tuple(values["negative_questions"]),
        enabled=enabled,
    )


def _build(raws: Iterable[_RawRow], problems: _Problems, *, noun: str) -> list[FaqEntry]:
    first_rows: dict[str, int] = {}
    entries = [entry for raw in raws if (entry := _entry(raw, problems, first_rows, noun))]
    if problems:
        raise FaqImportError(sorted(problems, key=lambda problem: problem.row))
    return entries


def _entry(raw: _RawRow, problems: _Problems, first_rows: dict[str, int], noun: str) -> FaqEntry | None:
    """Validate one row; append its problems and return None, or return the entry."""
    before = len(problems)

    def problem(reason: str, message: str, **details: Detail) -> None:
        problems.append(FaqProblem(raw.row, message, reason, details))

    question = raw.question.strip()
    key = question_key(question)
    if not question:
        problem("question_empty", "the question is empty")
    else:
        first = first_rows.setdefault(key, raw.row)
        if first != raw.row:
            shown = _show(question)
            problem(
                "question_repeated",
                f"the question {shown} already appears in {noun} {first}",
                question=shown,
                first=first,
            )
    answers = tuple(text for answer in raw.answers if (text := answer.strip()))
    if not answers:
        problem("no_answer", "there is no answer: fill in the answer column")
    enabled = _parse_enabled(raw.enabled)
    if enabled is None:
        value = _show(_cell_text(raw.enabled))
        problem("bad_enabled", f"enabled must be one of true/false/yes/no/1/0/是/否, not {value}", value=value)
    similar = _unique(raw.similar, exclude={key})
    negative = _unique(raw.negative, exclude=set())
    for what, label, texts, limit in (
        ("question", "the question", (question,), MAX_QUESTION_CHARS),
        ("similar", "a similar question", similar, MAX_QUESTION_CHARS),
        ("negative", "a negative question", negative, MAX_QUESTION_CHARS),
        ("answer", "an answer", answers, MAX_ANSWER_CHARS),
    ):
        for text in texts:
            if len(text) > limit:
                message = f"{label} is {len(text):,} characters long; the limit is {limit:,}"
                problem(f"{what}_too_long", message, length=len(text), max_length=limit)
    similar_keys = {question_key(text) for text in similar}
    for text in negative:
        if question and question_key(text) == key:
            shown = _show(text)
            problem(
                "negative_is_question", f"the negative question {shown} is the same as the question", question=shown
            )
        elif question_key(text) in similar_keys:
            shown = _show(text)
            problem("negative_is_similar", f"the negative question {shown} is also a similar question", question=shown)
    if len(problems) > before:
        return None
    return FaqEntry(question, answers, similar, negative, enabled is not False)


def _parse_enabled(value: object) -> bool | None:
    """True, False, or None when the value is not a recognised yes/no; a missing or empty value means True."""
    if value is None or isinstance(value, bool):
        return value is not False
    if isinstance(value, int | float):
        return True if value == 1 else False if value == 0 else None
    text = _cell_text(value).strip().casefold()
    if not text or text in _TRUE:
        return True
    return False if text in _FALSE else None


def _unique(texts: Iterable[str], *, exclude: set[str]) -> tuple[str, ...]:
    """Trimmed, non-empty texts, first spelling kept for each question compared by `_key`."""
    seen = set(exclude)
    kept: list[str] = []
    for text in texts:
        stripped = text.strip()
        key = question_key(stripped)
        if stripped and key not in seen:
            seen.add(key)
            kept.append(stripped)
    return tuple(kept)


def _split_answers(cell: str) -> tuple[str, ...]:
    return tuple(_ANSWER_SEPARATOR.split(cell))


def _split_items(cell: str) -> tuple[str, ...]:
    return tuple(_ITEM_SEPARATOR.split(cell))


def _cell_text(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value).replace("\r\n", "\n").replace("\r", "\n")


def _is_filled(cells: Sequence[object]) -> bool:
    return any(_cell_text(cell).strip() for cell in cells)


def question_key(question: str) -> str:
    """How questions are compared: case and runs of whitespace do not matter."""
    return " ".join(question.split()).casefold()


def _show(text: str) -> str:
    return f"'{text[:60]}…'" if len(text) > 60 else f"'{text}'"
