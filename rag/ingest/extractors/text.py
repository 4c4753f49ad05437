"""Text decoding in any common encoding, and the plain-text, Markdown, CSV and JSON extractors."""

from __future__ import annotations

import codecs
import csv
import io
import json
import re
from dataclasses import dataclass
from typing import Any

from charset_normalizer import from_bytes
from charset_normalizer.utils import is_multi_byte_encoding

from rag.errors import CorruptDocument
from rag.ingest.extractors.damage import reason
from rag.ingest.extractors.tabular import format_rows, kept_table
from rag.ingest.types import ExtractedDocument, Section

# Checked longest first: the UTF-32 LE mark begins with the UTF-16 LE one.
_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
# charset-normalizer ranks short texts poorly (Big5 read as Shift-JIS, Latin-1 as cp1257); among
# guesses that read about as cleanly as the best one, the encoding documents are most often in wins.
_PREFERRED_ENCODINGS = (
    "utf_8",
    "gb18030",
    "big5",
    "cp932",
    "shift_jis",
    "euc_jp",
    "cp949",
    "euc_kr",
    "cp1252",
    "latin_1",
    "cp1251",
    "koi8_r",
    "cp1250",
)
_CHAOS_MARGIN = 0.05
_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1a\x1c-\x1f\x7f\ufffd]")
# Real text has next to no control characters; decoded binary has several percent.
_MAX_CONTROL_SHARE = 0.01
_SAMPLE_CHARS = 65536
_CSV_DELIMITERS = ",;\t|"
# JSON nested deeper than this is written on one line: its indentation would outweigh its values.
_MAX_INDENTED_DEPTH = 8


@dataclass(frozen=True, slots=True)
class DecodedText:
    """Bytes read as text, with the encoding that read them."""

    text: str
    encoding: str


def decode_text(data: bytes) -> DecodedText | None:
    """Decode `data` as text in whatever common encoding it is in; None when it is not text."""
    for attempt in (_decode_by_bom, _decode_utf8, _decode_by_guess):
        decoded = attempt(data)
        # UTF-16 without a BOM is valid UTF-8 full of NULs, so a binary-looking result is not final.
        if decoded is not None and not _looks_binary(decoded.text):
            return decoded
    return None


def _decode_by_bom(data: bytes) -> DecodedText | None:
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            try:
                return DecodedText(data.decode(encoding), encoding.replace("-sig", ""))
            except UnicodeDecodeError:
                return None
    return None


def _decode_utf8(data: bytes) -> DecodedText | None:
    try:
        return DecodedText(data.decode("utf-8"), "utf-8")
    except UnicodeDecodeError:
        return None


def _decode_by_guess(data: bytes) -> DecodedText | None:
    matches = from_bytes(data)
    guess = matches.best()
    if guess is None:
        return None
    # Stay within the guess's kind: a Latin-1 text also "reads" as GB18030, only with more chaos.
    multi_byte = is_multi_byte_encoding(guess.encoding)
    close = [
        match
        for match in matches
        if match.chaos <= guess.chaos + _CHAOS_MARGIN and is_multi_byte_encoding(match.encoding) == multi_byte
    ]

    def rank(encoding: str) -> int:
        return _PREFERRED_ENCODINGS.index(encoding) if encoding in _PREFERRED_ENCODINGS else len(_PREFERRED_ENCODINGS)

    best = min(close, key=lambda match: rank(match.encoding))
    return DecodedText(str(best), best.encoding)


def _looks_binary(text: str) -> bool:
    sample = text[:_SAMPLE_CHARS]
    return len(_CONTROL.findall(sample)) > len(sample) * _MAX_CONTROL_SHARE


def extract_plain(decoded: DecodedText, mime_type: str) -> ExtractedDocument:
    """Plain text or Markdown as one section."""
    return ExtractedDocument(
        sections=(Section(decoded.text),), mime_type=mime_type, metadata={"encoding": decoded.encoding}
    )


def extract_csv(decoded: DecodedText, mime_type: str) -> ExtractedDocument:
    """CSV rows as 'column: value | column: value' lines named by the header row."""
    text = decoded.text
    try:
        dialect: type[csv.Dialect] | csv.Dialect = csv.Sniffer().sniff(text[:_SAMPLE_CHARS], _CSV_DELIMITERS)
    except csv.Error:
        dialect = csv.excel
    reader = csv.reader(io.StringIO(text, newline=""), dialect)
    try:
        table = kept_table("", reader)
        lines = format_rows(table.rows)
    except csv.Error as exc:
        raise CorruptDocument(
            f"CSV is malformed at line {reader.line_num} ({reason(exc)}): fix that line and upload it again",
            reason="damaged_csv",
            line=reader.line_num,
        ) from exc
    return ExtractedDocument(
        sections=(Section("\n".join(lines)),),
        mime_type=mime_type,
        metadata={"encoding": decoded.encoding},
        tables=(table,) if lines else (),
    )


def extract_json(decoded: DecodedText, mime_type: str) -> ExtractedDocument:
    """JSON pretty-printed, or a list of objects as one 'key: value | key: value' line per object."""
    try:
        value = json.loads(decoded.text)
    except json.JSONDecodeError as exc:
        raise CorruptDocument(
            f"JSON is invalid at line {exc.lineno} column {exc.colno} ({exc.msg}): fix it and upload again",
            reason="damaged_json",
            line=exc.lineno,
            column=exc.colno,
        ) from exc
    except RecursionError as exc:
        raise CorruptDocument(
            "JSON is nested too deeply to read: flatten it and upload again", reason="json_too_deep"
        ) from exc
    if isinstance(value, list) and value and all(isinstance(item, dict) for item in value):
        text = "\n".join(_object_line(item) for item in value)
    elif value is None or value == "" or value == [] or value == {}:
        text = ""
    elif _depth(value) <= _MAX_INDENTED_DEPTH:
        text = json.dumps(value, indent=2, ensure_ascii=False)
    else:
        # Indenting repeats two spaces a level on every line: 0.4 MB nested 900 deep became 362 MB.
        text = json.dumps(value, ensure_ascii=False)
    return ExtractedDocument(sections=(Section(text),), mime_type=mime_type)


def _depth(value: Any) -> int:
    """How deeply containers nest in `value` (a scalar is 0), found without recursion."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            item = list(item.values())
        if isinstance(item, list):
            deepest = max(deepest, depth + 1)
            stack.extend((child, depth + 1) for child in item if isinstance(child, dict | list))
    return deepest


def _object_line(item: dict[str, Any]) -> str:
    pairs = []
    for key, value in item.items():
        if value is None or value == "":
            continue
        shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        pairs.append(f"{key}: {' '.join(str(shown).split())}")
    return " | ".join(pairs)
