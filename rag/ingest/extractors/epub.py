"""EPUB text: the chapters the package's spine lists, in reading order, each read as HTML."""

from __future__ import annotations

import io
import posixpath
import xml.etree.ElementTree as ET
import zipfile
from urllib.parse import unquote

from rag.errors import CorruptDocument
from rag.ingest.extractors.damage import CONTAINER_ERRORS, reason
from rag.ingest.extractors.html import decode_markup, html_to_text
from rag.ingest.types import ExtractedDocument, Section

_CONTAINER = "META-INF/container.xml"
_HTML_TYPES = frozenset({"application/xhtml+xml", "text/html"})


def extract_epub(data: bytes, *, mime_type: str) -> ExtractedDocument:
    """One section per spine chapter with text, with {'chapter': n, 'href': path}; the title from the OPF."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            opf_path = _package_path(archive)
            package = ET.fromstring(archive.read(opf_path))
            title = next((" ".join((el.text or "").split()) for el in package.iter() if _local(el.tag) == "title"), "")
            sections = []
            for number, path in enumerate(_spine_paths(package, posixpath.dirname(opf_path)), start=1):
                markup = decode_markup(archive.read(path))
                if markup is None:
                    continue
                _, text = html_to_text(markup)
                if text.strip():
                    sections.append(Section(text, {"chapter": number, "href": path}))
    except CONTAINER_ERRORS as exc:
        raise CorruptDocument(f"EPUB is damaged ({reason(exc)}): export it again", reason="damaged_epub") from exc
    return ExtractedDocument(sections=tuple(sections), mime_type=mime_type, title=title)


def _package_path(archive: zipfile.ZipFile) -> str:
    """The OPF package document: named by META-INF/container.xml, else the only .opf in the archive."""
    if _CONTAINER in archive.namelist():
        container = ET.fromstring(archive.read(_CONTAINER))
        for element in container.iter():
            if _local(element.tag) == "rootfile" and element.get("full-path"):
                return str(element.get("full-path"))
    candidates = [name for name in archive.namelist() if name.lower().endswith(".opf")]
    if len(candidates) != 1:
        raise CorruptDocument("EPUB has no package document (content.opf): export it again", reason="damaged_epub")
    return candidates[0]


def _spine_paths(package: ET.Element, base: str) -> list[str]:
    """Archive paths of the spine's HTML documents, in reading order."""
    manifest: dict[str, tuple[str, str]] = {}
    spine: list[str] = []
    for element in package.iter():
        name = _local(element.tag)
        if name == "item" and element.get("id") and element.get("href"):
            manifest[str(element.get("id"))] = (str(element.get("href")), element.get("media-type", ""))
        elif name == "itemref" and element.get("idref"):
            spine.append(str(element.get("idref")))
    paths = []
    for idref in spine:
        if idref not in manifest:
            continue
        href, media_type = manifest[idref]
        if media_type in _HTML_TYPES:
            paths.append(posixpath.normpath(posixpath.join(base, unquote(href.split("#")[0]))))
    return paths


def _local(tag: str) -> str:
    """An element name without its {namespace}."""
    return tag.rsplit("}", 1)[-1]
