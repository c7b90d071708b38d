"""Bulk files over HTTP: read the upload (multipart or a raw CSV / JSON Lines body) within a size limit,
and hand it to submit_batch as the caller's tenant. The tenant never comes from the request."""

import asyncio
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

from fastapi import HTTPException, Request, status
from starlette.datastructures import UploadFile

from app.admin.caller import Caller
from app.admin.services import AdminServices
from app.publisher.accept import submit_batch
from app.publisher.commands import BatchAccepted, SubmitBatch

RAW_TYPES = {
    "text/csv": ".csv",
    "application/x-ndjson": ".jsonl",
    "application/jsonl": ".jsonl",
    "application/x-jsonlines": ".jsonl",
}
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass(frozen=True, slots=True)
class Upload:
    name: str  # kept as the batch's source_name; its suffix says CSV or JSON Lines
    data: bytes


async def read_upload(request: Request, max_bytes: int, filename: str | None) -> Upload:
    media_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if media_type == "multipart/form-data":
        return await _multipart(request, max_bytes)
    if media_type in RAW_TYPES:
        name = safe_name(filename or f"upload{RAW_TYPES[media_type]}", RAW_TYPES[media_type])
        return Upload(name, await _raw_body(request, max_bytes))
    raise HTTPException(
        status.HTTP_415_UNSUPPORTED_MEDIA_TYPE,
        "send multipart/form-data with a 'file' part, or a text/csv or application/x-ndjson body",
    )


def safe_name(name: str, default_suffix: str) -> str:
    """A plain file name (no path) for the temporary copy; keeps a .csv/.jsonl suffix if it has one."""
    base = _UNSAFE.sub("_", Path(name).name).strip("._")[:100] or "upload"
    return base if Path(base).suffix.lower() in {".csv", ".jsonl", ".ndjson"} else base + default_suffix


async def _multipart(request: Request, max_bytes: int) -> Upload:
    async with request.form(max_files=1, max_fields=10) as form:
        part = form.get("file")
        if not isinstance(part, UploadFile):
            raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, "the multipart body needs a 'file' part")
        if part.size is not None and part.size > max_bytes:
            raise _too_large(max_bytes)
        data = await part.read()
        suffix = RAW_TYPES.get((part.content_type or "").lower(), ".csv")
        return Upload(safe_name(part.filename or "upload", suffix), data)


async def _raw_body(request: Request, max_bytes: int) -> bytes:
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > max_bytes:
            raise _too_large(max_bytes)
        chunks.append(chunk)
    return b"".join(chunks)


def _too_large(max_bytes: int) -> HTTPException:
    return HTTPException(status.HTTP_413_CONTENT_TOO_LARGE, f"the file is larger than {max_bytes} bytes")


async def submit_upload(services: AdminServices, caller: Caller, upload: Upload, allow_resubmit: bool) -> BatchAccepted:
    assert caller.tenant_id is not None, "admin keys are refused before this point"
    # submit_batch reads a file (its name and suffix matter), so the upload gets a short-lived one.
    with tempfile.TemporaryDirectory(prefix="remit-upload-") as folder:
        path = Path(folder) / upload.name
        await asyncio.to_thread(path.write_bytes, upload.data)
        command = SubmitBatch(caller.tenant_id, path, None, allow_resubmit)
        return await submit_batch(command, services.uow(caller), services.settings)
