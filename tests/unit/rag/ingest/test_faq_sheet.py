"""parse_faq_file: the documented .csv/.xlsx/.json layout, the packaged templates, and every problem by row number."""

from __future__ import annotations

import csv
import io
import json
import zipfile

import openpyxl
import pytest

from rag.errors import FaqImportError
from rag.ingest.faq_sheet import (
    MAX_ANSWER_CHARS,
    MAX_QUESTION_CHARS,
    FaqEntry,
    is_faq_sheet,
    parse_faq_file,
    template_path,
)

HEADER = ["question", "answer", "similar_questions", "negative_questions", "enabled"]


def csv_bytes(rows: list[list[str]], encoding: str = "utf-8") -> bytes:
    """Rows written the way Excel writes a CSV: quoted where needed, CRLF line ends."""
    buffer = io.StringIO(newline="")
    csv.writer(buffer, lineterminator="\r\n").writerows(rows)
    return buffer.getvalue().encode(encoding)


def xlsx_bytes(sheets: dict[str, list[list[object]]]) -> bytes:
    """A workbook with the given sheets in order, saved by openpyxl."""
    workbook = openpyxl.Workbook()
    workbook.remove(workbook.active)
    for title, rows in sheets.items():
        sheet = workbook.create_sheet(title)
        for row in rows:
            sheet.append(row)
    buffer = io.BytesIO()
    workbook.save(buffer)
    return buffer.getvalue()


def problems_of(data: bytes, filename: str) -> list[tuple[int, str]]:
    with pytest.raises(FaqImportError) as caught:
        parse_faq_file(data, filename)
    return caught.value.problems


# --- templates -------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["csv", "json"])
def test_template_is_packaged_and_parses(kind: str) -> None:
    path = template_path(kind)  # type: ignore[arg-type]
    entries = parse_faq_file(path.read_bytes(), path.name)
    assert [entry.question for entry in entries] == [
        "How do I reset my password?",
        "如何申请退货？",
        "What are your opening hours?",
    ]
    assert len(entries[1].answers) == 2
    assert entries[1].similar_questions == ("怎么退货", "退货流程是什么")
    assert entries[2].answers == ("Monday to Friday, 9:00-18:00.", "We are closed on public holidays.")
    assert [entry.enabled for entry in entries] == [True, True, False]


def test_csv_and_json_templates_hold_the_same_faqs() -> None:
    from_csv = parse_faq_file(template_path("csv").read_bytes(), "faq_template.csv")
    from_json = parse_faq_file(template_path("json").read_bytes(), "faq_template.json")
    assert from_csv == from_json


def test_csv_template_starts_with_a_bom_so_excel_reads_it_as_utf8() -> None:
    assert template_path("csv").read_bytes().startswith(b"\xef\xbb\xbf")


# --- CSV -------------------------------------------------------------------------------------------------------------


def test_csv_reads_multiline_cells_as_one_item_per_line() -> None:
    data = csv_bytes(
        [HEADER, ["How do I log in?", "Use your email.\nThen your password.", "Sign in?\nLogin help\n\n", "", ""]]
    )
    [entry] = parse_faq_file(data, "faq.csv")
    assert entry == FaqEntry(
        question="How do I log in?",
        answers=("Use your email.\nThen your password.",),
        similar_questions=("Sign in?", "Login help"),
    )


def test_csv_splits_similar_and_negative_questions_on_pipes() -> None:
    data = csv_bytes([HEADER, ["Refunds?", "Within 7 days.", "refund policy | money back|", "Refund a gift?|", ""]])
    [entry] = parse_faq_file(data, "faq.csv")
    assert entry.similar_questions == ("refund policy", "money back")
    assert entry.negative_questions == ("Refund a gift?",)


def test_csv_reads_several_answer_columns_in_column_order() -> None:
    data = csv_bytes(
        [
            ["question", "answer", "Answer 2", "answer_3", "answers4"],
            ["Hours?", "Nine to five.", "", "Closed on Sunday.", "Call us."],
        ]
    )
    [entry] = parse_faq_file(data, "faq.csv")
    assert entry.answers == ("Nine to five.", "Closed on Sunday.", "Call us.")


def test_csv_splits_a_cell_into_answers_on_lines_holding_only_dashes() -> None:
    data = csv_bytes([["question", "answer"], ["Hours?", "Nine to five.\n  ---  \nClosed on Sunday.\n---\n"]])
    [entry] = parse_faq_file(data, "faq.csv")
    assert entry.answers == ("Nine to five.", "Closed on Sunday.")


def test_dashes_inside_a_line_do_not_split_an_answer() -> None:
    data = csv_bytes([["question", "answer"], ["Range?", "1 --- 2\n----\nthree"]])
    [entry] = parse_faq_file(data, "faq.csv")
    assert entry.answers == ("1 --- 2\n----\nthree",)


def test_similar_questions_are_trimmed_and_deduplicated_keeping_order() -> None:
    data = csv_bytes([HEADER, [" Refunds? ", "  Within 7 days. ", "b\n a \nB\nrefunds?\na", "", ""]])
    [entry] = parse_faq_file(data, "faq.csv")
    assert entry.question == "Refunds?"
    assert entry.answers == ("Within 7 days.",)
    # "refunds?" is the standard question itself, so it is not kept as a similar one.
    assert entry.similar_questions == ("b", "a")


def test_header_names_ignore_case_and_surrounding_space_and_unknown_columns() -> None:
    data = csv_bytes(
        [[" Question ", "ANSWER", "Similar Questions", "notes"], ["Hours?", "Nine to five.", "Open?", "x"]]
    )
    [entry] = parse_faq_file(data, "FAQ.CSV")
    assert entry == FaqEntry("Hours?", ("Nine to five.",), ("Open?",))


def test_blank_rows_are_skipped_and_not_counted_as_faqs() -> None:
    data = csv_bytes([["question", "answer"], ["", ""], ["Hours?", "Nine to five."], [" ", ""]])
    assert len(parse_faq_file(data, "faq.csv")) == 1


def test_gbk_csv_with_chinese_headers() -> None:
    rows = [
        ["标准问题", "答案", "答案2", "相似问题", "负例问题", "启用"],
        ["如何退货", "在订单页点击退货", "七天内可退", "怎么退货|退货流程", "如何换货", "否"],
        ["发票怎么开", "在订单详情页申请电子发票", "", "", "", ""],
    ]
    entries = parse_faq_file(csv_bytes(rows, encoding="gbk"), "常见问题.csv")
    assert entries == [
        FaqEntry(
            "如何退货", ("在订单页点击退货", "七天内可退"), ("怎么退货", "退货流程"), ("如何换货",), enabled=False
        ),
        FaqEntry("发票怎么开", ("在订单详情页申请电子发票",)),
    ]


def test_chinese_header_aliases() -> None:
    rows = [["问题", "答案", "相似问题", "反例问题", "是否启用"], ["退货", "可以", "能退吗", "能换吗", "是"]]
    assert parse_faq_file(csv_bytes(rows), "faq.csv") == [FaqEntry("退货", ("可以",), ("能退吗",), ("能换吗",))]


@pytest.mark.parametrize(
    ("value", "enabled"),
    [
        ("true", True),
        ("TRUE", True),
        ("Yes", True),
        ("1", True),
        ("是", True),
        ("", True),
        ("false", False),
        ("No", False),
        ("0", False),
        ("否", False),
    ],
)
def test_enabled_values(value: str, enabled: bool) -> None:
    data = csv_bytes([["question", "answer", "enabled"], ["Hours?", "Nine to five.", value]])
    [entry] = parse_faq_file(data, "faq.csv")
    assert entry.enabled is enabled


# --- XLSX ------------------------------------------------------------------------------------------------------------


def test_xlsx_reads_the_first_sheet_with_typed_cells() -> None:
    data = xlsx_bytes(
        {
            "Sheet1": [
                ["Question", "Answer", "answer 2", "similar_questions", "enabled"],
                ["Hours?", "Nine to five.\n---\nClosed on Sunday.", 42, "Open?\nOpening times", False],
                [None, None, None, None, None],
                ["Phone?", "Call us.", None, None, 1],
            ]
        }
    )
    assert parse_faq_file(data, "faq.xlsx") == [
        FaqEntry("Hours?", ("Nine to five.", "Closed on Sunday.", "42"), ("Open?", "Opening times"), enabled=False),
        FaqEntry("Phone?", ("Call us.",)),
    ]


def test_xlsx_prefers_a_sheet_named_faq() -> None:
    data = xlsx_bytes(
        {
            "Notes": [["read me"], ["the FAQs are on the other sheet"]],
            "FAQ": [["question", "answer"], ["Hours?", "Nine to five."]],
        }
    )
    assert parse_faq_file(data, "faq.xlsx") == [FaqEntry("Hours?", ("Nine to five.",))]


def test_xlsx_problems_carry_the_sheet_row_numbers() -> None:
    data = xlsx_bytes(
        {"faq": [["question", "answer"], ["Hours?", "Nine to five."], [None, None], ["Phone?", None], ["Mail?", "x"]]}
    )
    assert [row for row, _ in problems_of(data, "faq.xlsx")] == [4]


# --- JSON ------------------------------------------------------------------------------------------------------------


def test_json_list_of_objects() -> None:
    document = [
        {
            "question": "Hours?",
            "answers": ["Nine to five.", " ", "Closed on Sunday."],
            "similar_questions": ["Open?", "open?"],
            "negative_questions": ["Hours of the museum?"],
            "enabled": False,
        },
        {"question": "Phone?", "answers": "Call us.\n---\nOr write."},
    ]
    assert parse_faq_file(json.dumps(document).encode(), "faq.json") == [
        FaqEntry("Hours?", ("Nine to five.", "Closed on Sunday."), ("Open?",), ("Hours of the museum?",), False),
        FaqEntry("Phone?", ("Call us.", "Or write.")),
    ]


def test_json_object_with_faqs_key_and_chinese_text() -> None:
    document = {"faqs": [{"question": "如何退货", "answers": ["在订单页点击退货"], "similar_questions": ["怎么退货"]}]}
    data = json.dumps(document, ensure_ascii=False).encode("utf-8-sig")
    assert parse_faq_file(data, "faq.json") == [FaqEntry("如何退货", ("在订单页点击退货",), ("怎么退货",))]


# --- problems --------------------------------------------------------------------------------------------------------


def test_every_problem_is_reported_in_row_order() -> None:
    data = csv_bytes(
        [
            HEADER,
            ["", "no question here", "", "", ""],
            ["Hours?", "", "", "", "maybe"],
            ["Hours?", "Nine to five.", "", "hours?", ""],
        ]
    )
    assert problems_of(data, "faq.csv") == [
        (2, "the question is empty"),
        (3, "there is no answer: fill in the answer column"),
        (3, "enabled must be one of true/false/yes/no/1/0/是/否, not 'maybe'"),
        (4, "the question 'Hours?' already appears in row 3"),
        (4, "the negative question 'hours?' is the same as the question"),
    ]


def test_error_message_names_rows_as_a_person_sees_them() -> None:
    data = csv_bytes([["question", "answer"], ["Hours?", "Nine to five."], ["Phone?", ""]])
    with pytest.raises(FaqImportError, match=r"^row 3: there is no answer"):
        parse_faq_file(data, "faq.csv")


LONG_QUESTION = "q" * (MAX_QUESTION_CHARS + 1)
LONG_ANSWER = "a" * (MAX_ANSWER_CHARS + 1)
GOOD = ["Hours?", "Nine to five.", "", "", ""]


def _json(document: object) -> bytes:
    return json.dumps(document).encode()


@pytest.mark.parametrize(
    ("data", "filename", "rows", "fragment"),
    [
        pytest.param(
            csv_bytes([["q", "answer"], ["x", "y"]]),
            "f.csv",
            [1],
            "missing required column(s) question (",
            id="no-question-column",
        ),
        pytest.param(
            csv_bytes([["notes"], ["x"]]),
            "f.csv",
            [1],
            "column(s) question, answer (row 1 has 'notes'); expected columns: question, answer",
            id="no-columns",
        ),
        pytest.param(csv_bytes([["", ""], ["x", "y"]]), "f.csv", [1], "row 1 has nothing", id="blank-header"),
        pytest.param(
            csv_bytes([["question", "answer", "问题"], ["x", "y", "z"]]),
            "f.csv",
            [1],
            "the question column appears 2 times",
            id="question-column-twice",
        ),
        pytest.param(
            csv_bytes([HEADER, GOOD, ["A?", "", "", "", ""], ["B?", "x", "", "", ""], ["C?", " \n---\n ", "", "", ""]]),
            "f.csv",
            [3, 5],
            "there is no answer",
            id="empty-answers-rows-3-and-5",
        ),
        pytest.param(
            csv_bytes([HEADER, ["", "x", "", "", ""]]), "f.csv", [2], "the question is empty", id="empty-question"
        ),
        pytest.param(
            csv_bytes([HEADER, GOOD, ["A?", "x", "", "", "maybe"]]),
            "f.csv",
            [3],
            "enabled must be one of",
            id="bad-enabled",
        ),
        pytest.param(
            csv_bytes([HEADER, GOOD, ["B?", "x", "", "", ""], [" hours? ", "y", "", "", ""]]),
            "f.csv",
            [4],
            "already appears in row 2",
            id="duplicate-question",
        ),
        pytest.param(
            csv_bytes([HEADER, ["Hours?", "x", "", "HOURS?", ""]]),
            "f.csv",
            [2],
            "is the same as the question",
            id="negative-is-standard",
        ),
        pytest.param(
            csv_bytes([HEADER, ["Hours?", "x", "Open?", "open?", ""]]),
            "f.csv",
            [2],
            "is also a similar question",
            id="negative-is-similar",
        ),
        pytest.param(
            csv_bytes([HEADER, GOOD, [LONG_QUESTION, "x", "", "", ""]]),
            "f.csv",
            [3],
            "the question is 2,001 characters long; the limit is 2,000",
            id="long-question",
        ),
        pytest.param(
            csv_bytes([HEADER, ["A?", "x", LONG_QUESTION, "", ""]]),
            "f.csv",
            [2],
            "a similar question is 2,001 characters",
            id="long-similar",
        ),
        pytest.param(
            csv_bytes([HEADER, ["A?", LONG_ANSWER, "", "", ""]]),
            "f.csv",
            [2],
            "an answer is 10,001 characters long; the limit is 10,000",
            id="long-answer",
        ),
        pytest.param(
            b"question,answer\r\nHours?,Nine to five, Monday to Friday\r\n",
            "f.csv",
            [2],
            "1 more cell(s) than the header has columns",
            id="unquoted-comma",
        ),
        pytest.param(
            b"question,answer\nx,y",
            "faq.xyz",
            [0],
            "unsupported FAQ file type '.xyz': use .csv, .xlsx or .json (see the template)",
            id="unsupported-extension",
        ),
        pytest.param(
            b"question,answer\nx,y", "faq", [0], "unsupported FAQ file type (no extension)", id="no-extension"
        ),
        pytest.param(b"", "f.csv", [0], "no FAQ rows found: the file is empty", id="empty-csv"),
        pytest.param(b"\xef\xbb\xbf\r\n \r\n", "f.csv", [0], "no FAQ rows found: the file is empty", id="blank-csv"),
        pytest.param(b"", "f.xlsx", [0], "no FAQ rows found", id="empty-xlsx"),
        pytest.param(b"  ", "f.json", [0], "no FAQ rows found", id="empty-json"),
        pytest.param(
            csv_bytes([HEADER]),
            "f.csv",
            [0],
            "no FAQ rows found: add one FAQ per row below the header row",
            id="header-only",
        ),
        pytest.param(
            csv_bytes([HEADER, ["", "", "", "", ""]]), "f.csv", [0], "no FAQ rows found", id="header-and-blank-rows"
        ),
        pytest.param(
            xlsx_bytes({"faq": [["question", "answer"]]}), "f.xlsx", [0], "no FAQ rows found", id="xlsx-header-only"
        ),
        pytest.param(xlsx_bytes({"faq": []}), "f.xlsx", [0], "no FAQ rows found", id="xlsx-empty-sheet"),
        pytest.param(
            b'[{"question": "x", "answers": ["y"]',
            "f.json",
            [0],
            "not valid JSON: Expecting ',' delimiter (line 1, column 36)",
            id="malformed-json",
        ),
        pytest.param("[]".encode("utf-16"), "f.json", [0], "no FAQ rows found", id="json-utf16-empty-list"),
        pytest.param(
            b'{"question": "x"}',
            "f.json",
            [0],
            'a list of FAQ objects, or an object {"faqs": [...]}',
            id="json-not-a-list",
        ),
        pytest.param(b'{"faqs": {"question": "x"}}', "f.json", [0], "a list of FAQ objects", id="json-faqs-not-a-list"),
        pytest.param(b"[]", "f.json", [0], "no FAQ rows found", id="json-empty-list"),
        pytest.param('[{"question": "退货"}]'.encode("gbk"), "f.json", [0], "not UTF-8", id="json-gbk"),
        pytest.param(
            _json([{"question": "A?", "answers": ["x"]}, "B?", {"question": "C?"}]),
            "f.json",
            [2, 3],
            "each entry must be an object",
            id="json-entry-not-object-and-no-answer",
        ),
        pytest.param(
            _json([{"question": ["A?"], "answers": ["x"]}]),
            "f.json",
            [1],
            "'question' must be text, not list",
            id="json-question-not-text",
        ),
        pytest.param(
            _json([{"question": "A?", "answers": [1, 2]}]),
            "f.json",
            [1],
            "'answers' must be text or a list of texts",
            id="json-answers-not-texts",
        ),
        pytest.param(
            _json([{"question": "A?", "answers": "x", "enabled": "maybe"}]),
            "f.json",
            [1],
            "enabled must be one of",
            id="json-bad-enabled",
        ),
        pytest.param(
            _json([{"question": "A?", "answers": "x"}, {"question": "a?", "answers": "y"}]),
            "f.json",
            [2],
            "already appears in entry 1",
            id="json-duplicate",
        ),
        pytest.param(
            b"PK\x03\x04 not really a zip",
            "f.xlsx",
            [0],
            "the .xlsx file could not be read (BadZipFile)",
            id="corrupt-xlsx",
        ),
        pytest.param(
            b"question,answer\nx,y\n", "f.xlsx", [0], "save it again from Excel as .xlsx", id="csv-named-xlsx"
        ),
    ],
)
def test_bad_input_is_reported_with_row_numbers(data: bytes, filename: str, rows: list[int], fragment: str) -> None:
    problems = problems_of(data, filename)
    assert [row for row, _ in problems] == rows
    assert fragment in problems[0][1]


def test_a_cell_too_big_for_the_csv_reader_is_a_faq_import_error() -> None:
    # The csv module refuses fields over 131,072 characters (csv.field_size_limit()) before our length check runs.
    data = csv_bytes([["question", "answer"], ["Hours?", "Nine to five."], ["Huge?", "x" * 200_000]])
    [(row, message)] = problems_of(data, "faq.csv")
    assert row == 3
    assert message.startswith("the CSV could not be read: field larger than field limit")


def test_corrupt_xlsx_inside_a_valid_zip_is_a_faq_import_error() -> None:
    buffer = io.BytesIO()
    data = xlsx_bytes({"faq": [["question", "answer"], ["Hours?", "Nine to five."]]})
    with (
        zipfile.ZipFile(io.BytesIO(data)) as source,
        zipfile.ZipFile(buffer, "w") as target,
    ):
        for item in source.infolist():
            content = source.read(item)
            if item.filename.startswith("xl/worksheets/"):
                content = content[: len(content) // 2]
            target.writestr(item, content)
    [(row, message)] = problems_of(buffer.getvalue(), "faq.xlsx")
    assert row == 0
    assert message.startswith("the .xlsx file could not be read")


# --- recognising a sheet among uploads ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "filename", "is_sheet"),
    [
        (template_path("csv").read_bytes(), "faq.csv", True),
        (template_path("json").read_bytes(), "faq.json", True),
        (xlsx_bytes({"FAQ": [HEADER, ["Q?", "A."]]}), "questions.xlsx", True),
        (xlsx_bytes({"Notes": [["x"]], "faq": [["Question", "Answer 2"], ["Q?", "A."]]}), "book.xlsx", True),
        (csv_bytes([["问题", "答案"], ["如何退货？", "在订单页申请。"]], "gbk"), "常见问题.csv", True),
        (csv_bytes([["Question ", " ANSWER", "Notes"], ["Q?", "A.", ""]]), "faq.csv", True),
        (b'{"faqs": [{"question": "Q?", "answers": ["A."]}]}', "export.json", True),
        (csv_bytes([["question", "answer"]]), "faq.csv", True),  # a header alone is a sheet (with nothing in it)
        (csv_bytes([["name", "price"], ["Tea", "3"]]), "prices.csv", False),
        (csv_bytes([["question", "notes"], ["Q?", "n"]]), "survey.csv", False),
        (xlsx_bytes({"Sheet1": [["Region", "Sales"], ["North", 3]]}), "sales.xlsx", False),
        (b'[{"title": "Q?", "body": "A."}]', "posts.json", False),
        (b'{"question": "Q?", "answer": "A."}', "one.json", False),
        (b"not json", "faq.json", False),
        (b"PK\x03\x04 broken", "faq.xlsx", False),
        (b"# FAQ\n\nquestion,answer", "faq.md", False),
        (b"", "faq.csv", False),
        (b"\xff\xfe\x00\x01garbage", "faq.csv", False),
    ],
)
def test_an_upload_is_an_faq_sheet_when_its_header_row_has_the_question_and_answer_columns(
    data: bytes, filename: str, is_sheet: bool
) -> None:
    assert is_faq_sheet(data, filename) is is_sheet


def _bombed(data: bytes, padding: int) -> bytes:
    """A valid FAQ workbook with one more part that inflates to `padding` bytes of zeros (a zip bomb's shape)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as source, zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as target:
        for item in source.infolist():
            target.writestr(item, source.read(item))
        target.writestr("xl/media/padding.bin", b"\0" * padding)
    return buffer.getvalue()


def test_a_zip_bomb_faq_workbook_is_refused_before_it_is_parsed_and_is_no_faq_sheet() -> None:
    bomb = _bombed(xlsx_bytes({"faq": [["question", "answer"], ["Hours?", "Nine to five."]]}), 64 * 1024 * 1024)
    assert len(bomb) < 1024 * 1024
    assert not is_faq_sheet(bomb, "faq.xlsx")
    [(row, message)] = problems_of(bomb, "faq.xlsx")
    assert row == 0
    assert "over the limit" in message
