"""The files a bot can fetch: stored with an id and a path, as getFile and the file download URL find them."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from fakes.base import Json

# Bot API limit (PTB constants.FileSizeLimit.FILESIZE_DOWNLOAD).
MAX_DOWNLOAD_BYTES = 20 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class StoredFile:
    """A file the bot can fetch with getFile and download from /file/bot<token>/<file_path>."""

    file_id: str
    file_unique_id: str
    file_path: str
    name: str
    mime: str
    data: bytes
    size: int


class FileStore:
    """The stored files, by file_id and by file_path."""

    def __init__(self, ids: Iterator[int]) -> None:
        self._ids = ids  # shared with the fake's other numbering, as the ids it hands out count up together
        self._by_id: dict[str, StoredFile] = {}
        self._by_path: dict[str, StoredFile] = {}

    def add(self, data: bytes, name: str, mime: str, *, size: int | None = None) -> StoredFile:
        """Store a file; `size` overrides the reported size (to test the 20 MB limit)."""
        number = next(self._ids)
        folder = {"image": "photos", "audio": "voice"}.get(mime.split("/", 1)[0], "documents")
        suffix = name.rsplit(".", 1)[-1] if "." in name else "bin"
        stored = StoredFile(
            file_id=f"BQACAgIAAx0Cfake{number:06d}",
            file_unique_id=f"AgADfake{number:06d}",
            file_path=f"{folder}/file_{number}.{suffix}",
            name=name,
            mime=mime,
            data=data,
            size=len(data) if size is None else size,
        )
        self._by_id[stored.file_id] = stored
        self._by_path[stored.file_path] = stored
        return stored

    def __getitem__(self, file_id: str) -> StoredFile:
        return self._by_id[file_id]

    def find(self, file_id: str) -> StoredFile | None:
        """The file with this file_id, if there is one."""
        return self._by_id.get(file_id)

    def at_path(self, file_path: str) -> StoredFile | None:
        """The file at this file_path (the download URL's tail), if there is one."""
        return self._by_path.get(file_path)

    def fields(self, file_id: str) -> Json:
        """file_id, file_unique_id and file_size, as every file object in an update or a getFile answer has them."""
        stored = self._by_id[file_id]
        return {"file_id": stored.file_id, "file_unique_id": stored.file_unique_id, "file_size": stored.size}
