"""Regenerate the team set's binary documents (benefits.docx, security-policy.pdf) from the text in this file.

Run from the repository root: `.venv/bin/python eval/team/build.py`. The output is byte-for-byte the same on every
run (fixed document dates, fixed zip entry times, reportlab's invariant mode), so a diff shows a real change.
"""

from __future__ import annotations

import datetime as dt
import io
import zipfile
from pathlib import Path

import docx
from reportlab.lib.pagesizes import A4
from reportlab.lib.styles import getSampleStyleSheet
from reportlab.platypus import PageBreak, Paragraph, SimpleDocTemplate, Spacer

DOCUMENTS = Path(__file__).parent / "documents"
# Every generated file claims this date, so rebuilding changes nothing unless the text did.
_FIXED = dt.datetime(2026, 1, 5, 9, 0, 0)

BENEFITS_ROWS = [
    ("Benefit", "Amount", "Starts"),
    ("Health insurance", "80% of the premium is covered by the company", "on the first day"),
    ("Children", "Children can be added to the health insurance at no extra cost", "from birth or adoption"),
    ("Lunch", "8 euros per working day on the lunch card", "on the first day"),
    ("Public transport", "a free monthly transit pass", "after the probation period"),
    ("Pension", "the company adds 4% of your salary to the pension plan", "after six months"),
    ("Bike leasing", "a leased bike worth up to 1,500 euros", "after the probation period"),
]

# (heading, paragraphs); a page break falls before "Devices" so the policy runs over two pages and more.
SECURITY_SECTIONS = [
    (
        "Purpose",
        [
            "This policy describes how everyone at Kestrel Software keeps company information safe. It applies to "
            "employees, contractors and interns, in the office and when working remotely.",
            "Breaking this policy can put customers and colleagues at risk. Questions about it go to the security "
            "team at security@kestrel.example.",
        ],
    ),
    (
        "Accounts and sign-in",
        [
            "Two-factor authentication is mandatory for all company accounts. Use the authenticator app on your "
            "company phone; text messages are not accepted as a second factor.",
            "Never share your password with anyone, including the IT help desk. The help desk will never ask you "
            "for it.",
        ],
    ),
    (
        "Email and phishing",
        [
            "Report suspicious emails with the Report Phishing button in Outlook. Do not open attachments or links "
            "in an email you did not expect.",
            "The security team sends practice phishing emails a few times a year. Reporting them counts in your "
            "favour; nobody is blamed for clicking one.",
        ],
    ),
    (
        "Data classification",
        [
            "Company information is classified as public, internal, confidential or strictly confidential. "
            "Customer data is always confidential.",
            "Confidential documents may only be shared with people who need them for their work, and only through "
            "the company file share.",
        ],
    ),
    (
        "Devices",
        [
            "Lock your screen whenever you leave your desk. Screens lock automatically after 5 minutes without input.",
            "Private USB sticks must not be connected to company laptops. If you need to move files, use the "
            "company file share.",
            "Report a lost or stolen laptop to the IT help desk immediately. The help desk can wipe the laptop "
            "remotely, which protects the data on it.",
            "Company laptops are encrypted with full-disk encryption. Do not switch the encryption off.",
        ],
    ),
    (
        "Incidents",
        [
            "Report security incidents to security@kestrel.example within one hour. An incident is anything that "
            "may have exposed company or customer data, such as a lost laptop or a mistaken email.",
            "Do not try to investigate an incident on your own; keep the evidence and wait for the security team.",
        ],
    ),
    (
        "Visitors and the office",
        [
            "Visitors must wear a visitor badge and be accompanied at all times. Collect your visitor at the "
            "reception and bring them back there when they leave.",
            "Paper documents marked confidential go into the locked shredding bins, never into the paper recycling.",
        ],
    ),
]


def benefits_docx() -> bytes:
    """The benefits overview: a heading, a paragraph, the table of benefits and a closing paragraph."""
    document = docx.Document()
    properties = document.core_properties
    properties.title = "Benefits overview 2026"
    properties.author = "Kestrel Software HR"
    properties.created = properties.modified = _FIXED
    properties.last_modified_by = "Kestrel Software HR"
    properties.revision = 1
    document.add_heading("Benefits overview 2026", level=1)
    document.add_paragraph("These benefits apply to every permanent employee of Kestrel Software.")
    table = document.add_table(rows=len(BENEFITS_ROWS), cols=3)
    for row, values in zip(table.rows, BENEFITS_ROWS, strict=True):
        for cell, value in zip(row.cells, values, strict=True):
            cell.text = value
    document.add_paragraph("The probation period lasts six months.")
    document.add_paragraph("Questions about benefits go to benefits@kestrel.example.")
    buffer = io.BytesIO()
    document.save(buffer)
    return _fixed_zip_times(buffer.getvalue())


def _fixed_zip_times(data: bytes) -> bytes:
    """The same zip with every entry dated `_FIXED` (python-docx stamps them with the time of saving)."""
    source = zipfile.ZipFile(io.BytesIO(data))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as target:
        for info in source.infolist():
            entry = zipfile.ZipInfo(info.filename, date_time=_FIXED.timetuple()[:6])
            entry.compress_type = zipfile.ZIP_DEFLATED
            target.writestr(entry, source.read(info.filename))
    return buffer.getvalue()


def security_pdf() -> bytes:
    """The security policy: a title and one heading with its paragraphs per section, over more than one page."""
    styles = getSampleStyleSheet()
    buffer = io.BytesIO()
    pdf = SimpleDocTemplate(
        buffer, pagesize=A4, invariant=True, title="Kestrel Software security policy", author="Security team"
    )
    story: list[object] = [Paragraph("Kestrel Software security policy", styles["Title"])]
    for heading, paragraphs in SECURITY_SECTIONS:
        if heading == "Devices":
            story.append(PageBreak())
        story.append(Paragraph(heading, styles["Heading2"]))
        for text in paragraphs:
            story += [Paragraph(text, styles["BodyText"]), Spacer(1, 6)]
    pdf.build(story)
    return buffer.getvalue()


def main() -> None:
    """Write both files next to the text documents."""
    (DOCUMENTS / "benefits.docx").write_bytes(benefits_docx())
    (DOCUMENTS / "security-policy.pdf").write_bytes(security_pdf())


if __name__ == "__main__":
    main()
