"""Bank files over HTTP: receive the upload (multipart, or a raw body with a media type remit reads) into a
short-lived file within a size limit, and hand it to submit_batch as the caller's tenant. The tenant never
comes from the request; the format comes from the `format` parameter, a raw body's media type, or the
file's content."""

import asyncio
import re
import shutil
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from fastapi import HTTPException, Request, status
from starlette.datastructures import UploadFile

from app.admin.body_limit import MULTIPART_OVERHEAD
from app.admin.caller import Caller
from app.admin.services import AdminServices
from app.bankfiles.formats import BankFormat, parse_format
from app.publisher.accept import submit_batch
from app.publisher.commands import BatchAccepted, SubmitBatch

# A raw body's media type: remit's own formats name theirs; XML is pain.001 (its version told by its
# root element's namespace); ABA has no media type of its own, so text/plain and octet-stream are read by
# content.
RAW_TYPES: dict[str, BankFormat | None] = {
    "text/csv": BankFormat.CSV,
    "application/x-ndjson": BankFormat.JSONL,
    "application/jsonl": BankFormat.JSONL,
    "application/x-jsonlines": BankFormat.JSONL,
    "application/xml": None,
    "text/xml": None,
    "text/plain": None,
    "application/octet-stream": None,
}
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_COPY_BYTES = 1024 * 1024


@dataclass(frozen=True, slots=True)
class Upload:
    name: str  # kept as the batch's source_name
    path: Path  # the received bytes under that name, removed when the request is done
    bank_format: str | None  # None: told by the content


@asynccontextmanager
async def received_upload(
    request: Request, max_bytes: int, filename: str | None, bank_format: str | None
) -> AsyncIterator[Upload]:
    named = parse_format(bank_format).value if bank_format else None
    media_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if media_type != "multipart/form-data" and media_type not in RAW_TYPES:
        raise HTTPException(
            status.HTTP_415_UNSUPPORTED_MEDIA_TYPE,
            "send multipart/form-data with a 'file' part, or the file as the body with one of these media "
            f"types: {', '.join(RAW_TYPES)}",
        )
    with tempfile.TemporaryDirectory(prefix="remit-upload-") as folder:
        if media_type == "multipart/form-data":
            path, form_format = await _multipart(request, max_bytes, Path(folder))
            named = named or (parse_format(form_format).value if form_format else None)
        else:
            path = Path(folder) / safe_name(filename or "upload")
            await _raw_body(request, max_bytes, path)
            found = RAW_TYPES[media_type]
            named = named or (found.value if found else None)
        yield Upload(path.name, path, named)


def safe_name(name: str) -> str:
    """A plain file name (no path, no odd characters) to keep as the batch's source_name."""
    return _UNSAFE.sub("_", Path(name).name).strip("._")[:100] or "upload"


async def _multipart(request: Request, max_bytes: int, folder: Path) -> tuple[Path, str | None]:
    """The file part saved into the folder, and the form's `format` field."""
    length = request.headers.get("content-length", "")
    if length.isdigit() and int(length) > max_bytes + MULTIPART_OVERHEAD:
        raise _too_large(max_bytes)
    async with request.form(max_files=1, max_fields=10) as form:
        part = form.get("file")
        if not isinstance(part, UploadFile):
            raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, "the multipart body needs a 'file' part")
        form_format = form.get("format")
        return await save_part(part, folder, max_bytes), form_format if isinstance(form_format, str) else None


async def save_part(part: UploadFile, folder: Path, max_bytes: int) -> Path:
    """A multipart file part (which starlette has spooled) copied into the folder under its own name, made safe."""
    if part.size is not None and part.size > max_bytes:
        raise _too_large(max_bytes)
    path = folder / safe_name(part.filename or "upload")
    await asyncio.to_thread(_copy, part.file, path)
    return path


def _copy(source: BinaryIO, path: Path) -> None:
    source.seek(0)
    with path.open("wb") as out:
        shutil.copyfileobj(source, out, _COPY_BYTES)


async def _raw_body(request: Request, max_bytes: int, path: Path) -> None:
    size = 0
    with path.open("wb") as out:
        async for chunk in request.stream():
            size += len(chunk)
            if size > max_bytes:
                raise _too_large(max_bytes)
            out.write(chunk)


def _too_large(max_bytes: int) -> HTTPException:
    return HTTPException(status.HTTP_413_CONTENT_TOO_LARGE, f"the file is larger than {max_bytes} bytes")


async def submit_upload(services: AdminServices, caller: Caller, upload: Upload, allow_resubmit: bool) -> BatchAccepted:
    assert caller.tenant_id is not None, "admin keys are refused before this point"
    command = SubmitBatch(caller.tenant_id, upload.path, None, allow_resubmit, upload.bank_format)
    return await submit_batch(command, services.uow(caller), services.settings)
