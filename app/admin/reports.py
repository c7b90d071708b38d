"""A batch's status report as an HTTP download, for the API and the console alike.

The report is written into a temporary file, then streamed from there: a million-line report never sits in
memory, and the database transaction that read it is over before the first byte goes to a slow client.
"""

import tempfile
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import BinaryIO

from starlette.background import BackgroundTask
from starlette.responses import StreamingResponse

from app.reporting.status_report import report_choice, write_batch_report
from app.storage.unit_of_work import UnitOfWorkFactory

CHUNK_BYTES = 256 * 1024


async def report_response(
    uow_factory: UnitOfWorkFactory, scope: str | None, correlation_id: str, report_format: str
) -> StreamingResponse:
    choice = report_choice(report_format)
    spool = tempfile.TemporaryFile()  # noqa: SIM115 - closed by the response's background task
    try:
        report = await write_batch_report(uow_factory, scope, correlation_id, choice, spool, datetime.now(UTC))
    except BaseException:
        spool.close()
        raise
    spool.seek(0)
    return StreamingResponse(
        _chunks(spool),
        media_type=report.media_type,
        headers={"Content-Disposition": f'attachment; filename="{report.file_name}"'},
        background=BackgroundTask(spool.close),
    )


def _chunks(spool: BinaryIO) -> Iterator[bytes]:
    while chunk := spool.read(CHUNK_BYTES):
        yield chunk
