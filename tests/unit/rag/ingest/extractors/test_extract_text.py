"""Plain text, Markdown, CSV and JSON: any common encoding, one section, rows as named lines."""

from __future__ import annotations

import pytest

from rag.errors import CorruptDocument, NoTextFound
from rag.ingest.extract import extract

# Real CJK text uses full-width punctuation, which the CJK encodings store as double bytes.
CHINESE = "退货政策：购买后三十天内可以无理由退货，请保留发票和原包装。"
TRADITIONAL = "退貨政策：購買後三十天內可以無理由退貨，請保留發票和原包裝。"
JAPANESE = "返品ポリシー：購入後三十日以内であれば理由を問わず返品できます。領収書と元の包装を保管してください。"
FRENCH = (
    "Politique de retour : vous pouvez retourner un article dans les trente jours. Gardez le reçu, s'il vous plaît."
)


@pytest.mark.parametrize(
    ("text", "encoding"),
    [
        ("Return policy: thirty days, naïve café.", "utf-8"),
        ("Return policy: thirty days, naïve café.", "utf-8-sig"),
        (CHINESE, "utf-16"),
        (CHINESE, "utf-16-be"),
        (CHINESE, "gbk"),
        (CHINESE, "gb18030"),
        (TRADITIONAL, "big5"),
        (JAPANESE, "shift_jis"),
        (FRENCH, "latin-1"),
    ],
)
def test_text_in_any_common_encoding_is_decoded(text, encoding):
    data = text.encode(encoding)
    if encoding == "utf-16-be":
        data = b"\xfe\xff" + data  # with its byte-order mark, as editors write it

    document = extract(data, filename="policy.txt")

    assert document.text == text
    assert document.mime_type == "text/plain"
    assert len(document.sections) == 1


def test_windows_newlines_and_a_stray_nul_character_are_cleaned():
    filler = b" and so on" * 20
    document = extract(b"line one\r\nline\x00 two" + filler + b"\r\n", filename="a.txt")
    assert document.text == "line one\nline two" + filler.decode()


def test_markdown_keeps_its_markup():
    document = extract(b"# Title\n\n- item\n", filename="README.md")
    assert document.mime_type == "text/markdown"
    assert document.text == "# Title\n\n- item"


@pytest.mark.parametrize("content", [b"   \n\t\n  ", b"\r\n\r\n"])
def test_whitespace_only_text_has_no_text(content):
    with pytest.raises(NoTextFound, match="only whitespace"):
        extract(content, filename="blank.txt")


@pytest.mark.parametrize(
    "content",
    [
        b"name,city\nAnn,Paris\nBob,Berlin\n",
        b"name;city\r\nAnn;Paris\r\nBob;Berlin\r\n",
        b"name\tcity\nAnn\tParis\nBob\tBerlin\n",
        b"\n\nname,city\n,\nAnn,Paris\nBob,Berlin\n",
    ],
    ids=["comma", "semicolon-crlf", "tab", "leading-blank-rows"],
)
def test_csv_rows_become_lines_named_by_the_header(content):
    document = extract(content, filename="people.csv")
    assert document.text == "name: Ann | city: Paris\nname: Bob | city: Berlin"


def test_csv_keeps_quoted_delimiters_and_skips_empty_cells():
    document = extract(b'q,a,note\n"Where, exactly?","Here",\n', filename="faq.csv")
    assert document.text == "q: Where, exactly? | a: Here"


def test_csv_cells_past_the_header_get_a_column_number():
    document = extract(b"a,b\n1,2,3\n", filename="t.csv")
    assert document.text == "a: 1 | b: 2 | column 3: 3"


def test_csv_of_only_a_header_keeps_its_words():
    assert extract(b"name,city\n", filename="t.csv").text == "name | city"


def test_csv_in_gbk_is_decoded():
    content = "问题,答案\n怎么退货,三十天内联系客服办理退货手续\n".encode("gbk")
    assert extract(content, filename="faq.csv").text == "问题: 怎么退货 | 答案: 三十天内联系客服办理退货手续"


def test_csv_with_only_empty_rows_has_no_data():
    with pytest.raises(NoTextFound, match="no data found in the CSV"):
        extract(b",,\n,,\n", filename="t.csv")


def test_malformed_csv_names_the_line():
    content = b"a,b\n1,2\n" + b'"' + b"x" * 140_000 + b'",3\n'
    with pytest.raises(CorruptDocument, match="CSV is malformed at line"):
        extract(content, filename="t.csv")


def test_json_list_of_objects_becomes_one_line_per_object():
    content = b'[{"q": "How?", "a": "Like this", "none": null, "tags": ["x", "y"]}, {"q": "Why?", "n": 2}]'
    document = extract(content, filename="faq.json")
    assert document.mime_type == "application/json"
    assert document.text == 'q: How? | a: Like this | tags: ["x", "y"]\nq: Why? | n: 2'


def test_other_json_is_pretty_printed():
    document = extract('{"name": "Café", "hours": {"mon": "9-5"}}'.encode(), filename="info.json")
    assert document.text == '{\n  "name": "Café",\n  "hours": {\n    "mon": "9-5"\n  }\n}'


@pytest.mark.parametrize("content", [b'{"a": }', b"[1, 2", b"{'single': 'quotes'}"])
def test_invalid_json_names_the_position(content):
    with pytest.raises(CorruptDocument, match=r"JSON is invalid at line 1 column \d+"):
        extract(content, filename="bad.json")


def test_json_nested_too_deeply_is_corrupt():
    with pytest.raises(CorruptDocument, match="nested too deeply"):
        extract(b"[" * 200_000 + b"]" * 200_000, filename="deep.json")


@pytest.mark.parametrize("content", [b"{}", b"[]", b"null", b'""'])
def test_empty_json_has_no_values(content):
    with pytest.raises(NoTextFound, match="JSON file holds no values"):
        extract(content, filename="empty.json")


def test_json_nested_deep_is_written_on_one_line_not_indented_hundreds_of_times():
    unit = b'{"k":' * 900 + b"1" + b"}" * 900
    data = b"[" + b",".join([unit] * 20) + b"]"
    text = extract(data, filename="deep.json").text
    assert len(text) < 2 * len(data)  # indented, it was ~900 times longer


def test_csv_with_long_column_names_over_short_cells_stops_repeating_the_header():
    header = ",".join(f"the name of column number {index} of a very wide sheet" for index in range(100))
    data = (header + "\n" + "\n".join([",".join(["a"] * 100)] * 2000)).encode()
    text = extract(data, filename="wide.csv").text
    assert len(text) < 2 * len(data) + 200_000  # naming every cell made it ~25 times longer
    assert text.startswith("the name of column number 0 of a very wide sheet: a | ")  # the first rows still named
    assert "| the name of column number 0 of a very wide sheet |" in text  # then the header once, as a table
    assert text.endswith("| a |")
