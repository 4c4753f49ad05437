"""E-mail (.eml) text with the stdlib parser: subject as title, sender and recipients, the readable body."""

from __future__ import annotations

from email import errors as email_errors
from email import policy
from email.message import EmailMessage
from email.parser import BytesParser

from rag.errors import CorruptDocument
from rag.ingest.extractors.damage import reason
from rag.ingest.extractors.html import decode_markup, html_to_text
from rag.ingest.extractors.text import decode_text
from rag.ingest.types import ExtractedDocument, Section

_SHOWN_HEADERS = ("From", "To", "Cc", "Date", "Subject")
# The stdlib parser records most damage as defects, but odd headers and charsets can still raise these.
_MAIL_ERRORS = (email_errors.MessageError, LookupError, ValueError, IndexError, TypeError, AttributeError)


def extract_eml(data: bytes, *, mime_type: str) -> ExtractedDocument:
    """Header lines, then the plain-text body (or the HTML body as text), then attachment names."""
    try:
        message = BytesParser(policy=policy.default).parsebytes(data)
        assert isinstance(message, EmailMessage)  # policy.default builds EmailMessage objects
        subject = " ".join(str(message.get("Subject", "")).split())
        lines = [f"{name}: {' '.join(str(message[name]).split())}" for name in _SHOWN_HEADERS if message[name]]
        body = _body_text(message)
        attachments = [part.get_filename() for part in message.iter_attachments()]
    except _MAIL_ERRORS as exc:
        raise CorruptDocument(
            f"e-mail is damaged ({reason(exc)}): export it again as .eml", reason="damaged_eml"
        ) from exc
    parts = ["\n".join(lines)]
    if body.strip():
        parts.append(body.strip())
    named = [name for name in attachments if name]
    if named:
        parts.append("Attachments: " + ", ".join(named))
    return ExtractedDocument(sections=(Section("\n\n".join(parts)),), mime_type=mime_type, title=subject)


def _body_text(message: EmailMessage) -> str:
    part = message.get_body(preferencelist=("plain", "html"))
    if not isinstance(part, EmailMessage):
        return ""
    is_html = part.get_content_type() == "text/html"
    try:
        content = part.get_content()
    except (LookupError, UnicodeError):
        content = _decode_raw(part, is_html=is_html)
    if not isinstance(content, str):
        return ""
    return html_to_text(content)[1] if is_html else content


def _decode_raw(part: EmailMessage, *, is_html: bool) -> str:
    """A body whose declared charset is unknown or wrong, read like any other text file."""
    payload = part.get_payload(decode=True)
    raw = payload if isinstance(payload, bytes) else b""
    if is_html:
        return decode_markup(raw) or ""
    decoded = decode_text(raw)
    return decoded.text if decoded is not None else ""
