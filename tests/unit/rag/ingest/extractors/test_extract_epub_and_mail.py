"""EPUB chapters in spine order, and e-mails with their headers, readable body and attachment names."""

from __future__ import annotations

import pytest

from rag.errors import CorruptDocument, NoTextFound
from rag.ingest.extract import extract
from tests.support.documents import make_eml, make_epub, make_zip


def test_epub_chapters_are_sections_in_spine_order():
    content = make_epub([("Welcome", "Read this first."), ("Leave", "You get 25 days.")], title="Staff handbook")

    document = extract(content, filename="handbook.epub")

    assert document.mime_type == "application/epub+zip"
    assert document.title == "Staff handbook"
    assert [(section.text, section.metadata["chapter"]) for section in document.sections] == [
        ("# Welcome\nRead this first.", 1),
        ("# Leave\nYou get 25 days.", 2),
    ]


def test_epub_named_zip_is_still_an_epub():
    assert extract(make_epub([("One", "Text.")]), filename="book.zip").mime_type == "application/epub+zip"


def test_epub_without_a_package_document_is_corrupt():
    content = make_zip({"mimetype": b"application/epub+zip", "OEBPS/ch1.xhtml": b"<html><p>x</p></html>"})
    with pytest.raises(CorruptDocument, match=r"EPUB has no package document"):
        extract(content, filename="book.epub")


def test_epub_with_broken_package_xml_is_corrupt():
    content = make_zip({"mimetype": b"application/epub+zip", "content.opf": b"<package><manifest>"})
    with pytest.raises(CorruptDocument, match="EPUB is damaged"):
        extract(content, filename="book.epub")


def test_epub_whose_spine_names_a_missing_file_is_corrupt():
    opf = (
        b'<package xmlns="http://www.idpf.org/2007/opf"><manifest>'
        b'<item id="a" href="gone.xhtml" media-type="application/xhtml+xml"/></manifest>'
        b'<spine><itemref idref="a"/></spine></package>'
    )
    content = make_zip({"mimetype": b"application/epub+zip", "content.opf": opf})
    with pytest.raises(CorruptDocument, match=r"EPUB is damaged \(.*gone\.xhtml"):
        extract(content, filename="book.epub")


def test_epub_of_images_only_has_no_text():
    with pytest.raises(NoTextFound, match="no text found in the EPUB"):
        extract(make_epub([("", "")], title="Pictures"), filename="pictures.epub")


def test_mail_has_its_subject_as_title_then_headers_body_and_attachments():
    document = extract(make_eml(plain="Please refund me.\n", attachment="receipt.pdf"), filename="mail.eml")

    assert document.mime_type == "message/rfc822"
    assert document.title == "Refund for order 1234"
    assert document.text == (
        "From: Ann Customer <ann@example.com>\n"
        "To: support@example.com\n"
        "Date: Mon, 03 Jun 2024 10:00:00 +0000\n"
        "Subject: Refund for order 1234\n"
        "\n"
        "Please refund me.\n"
        "\n"
        "Attachments: receipt.pdf"
    )


def test_mail_prefers_the_plain_body_over_the_html_one():
    content = make_eml(plain="Plain words.", html="<p>HTML words.</p>")
    assert extract(content, filename="m.eml").text.endswith("Plain words.")


def test_mail_with_only_an_html_body_is_converted_to_text():
    content = make_eml(html="<html><body><p>Please <b>refund</b> me.</p><script>track()</script></body></html>")
    assert extract(content, filename="m.eml").text.endswith("Subject: Refund for order 1234\n\nPlease refund me.")


def test_mail_with_an_unknown_charset_is_still_read():
    content = (
        b"From: a@example.com\nTo: b@example.com\nSubject: Hi\n"
        b'Content-Type: text/plain; charset="x-unknown"\n\n'
        b"Caf\xc3\xa9 opens at nine.\n"
    )
    assert extract(content, filename="m.eml").text.endswith("Café opens at nine.")


def test_mail_headers_are_recognised_without_a_file_name():
    assert extract(make_eml(plain="Hello.")).mime_type == "message/rfc822"
