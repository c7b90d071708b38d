"""POST /transfers, POST /transfers/batch, GET /transfers/{key}, POST /transfers/status."""

from collections.abc import Sequence
from dataclasses import replace
from typing import Annotated

from fastapi import APIRouter, Header, Path, Response

from corebank.api.database import Database
from corebank.api.deps import Db, FaultState, Settings
from corebank.api.errors import declared
from corebank.booking import book
from corebank.errors import BatchTooLarge, KeyInProgress, KeyReused
from corebank.faults import Faults
from corebank.lookup import statuses
from corebank.records import Outcome
from corebank.schemas import (
    KEY_PATTERN,
    BatchItemResult,
    BatchRequest,
    BatchResult,
    BatchTransfer,
    KeysRequest,
    StatusList,
    TransferRequest,
    TransferResult,
    TransferStatus,
)

router = APIRouter(tags=["transfers"])
KEY_DOC = "The transfer's idempotency key (see the body field of the batch form)."


@router.post(
    "/transfers",
    status_code=201,
    responses={
        200: {"model": TransferResult, "description": "The key's earlier outcome (same request): nothing new done."},
        **declared(
            409,
            422,
            500,
            503,
            _409="A request with this key is still running (`idempotency_key_in_progress`): ask again later.",
            _422="Invalid request (`validation_failed`), or the key was used for a different transfer "
            "(`idempotency_key_reused`): never retry.",
        ),
    },
    response_description="Outcome recorded now: booked, or rejected with a reason.",
)
async def post_transfer(
    transfer: TransferRequest,
    response: Response,
    db: Db,
    faults: FaultState,
    idempotency_key: Annotated[str, Header(alias="Idempotency-Key", pattern=KEY_PATTERN, description=KEY_DOC)],
) -> TransferResult:
    """Book one transfer, at most once per key: the same key and request answer the first outcome again."""
    [outcome] = await _book(db, faults, [BatchTransfer(**transfer.model_dump(), idempotency_key=idempotency_key)])
    if outcome.conflict == "in_progress":
        raise KeyInProgress("a request with this key is still being booked; ask again later")
    if outcome.conflict == "request_mismatch":
        raise KeyReused("this key was used for a different transfer")
    if outcome.replayed:
        response.status_code = 200
    return TransferResult.model_validate(outcome.fields())


@router.post(
    "/transfers/batch",
    responses=declared(
        422,
        500,
        503,
        _422="Invalid batch (`validation_failed`: a bad item or a key twice) or more transfers than the limit "
        "(`batch_too_large`); nothing was done.",
    ),
    response_description="One result per transfer, in order: booked, rejected, or conflict.",
    response_model=BatchResult,
)
async def post_batch(batch: BatchRequest, db: Db, faults: FaultState, settings: Settings) -> Response:
    """Book many transfers in one transaction, each under its own key, with its own result."""
    if len(batch.transfers) > settings.batch_max:
        raise BatchTooLarge(f"at most {settings.batch_max} transfers per batch")
    outcomes = await _book(db, faults, batch.transfers)
    result = BatchResult(results=[BatchItemResult.model_validate(o.fields()) for o in outcomes])
    # Validated once, here. Returned as a model, FastAPI would dump it, validate the dump against the
    # response model and serialise it again: three passes over every item of the hottest request.
    return Response(result.model_dump_json(by_alias=True), media_type="application/json")


@router.post(
    "/transfers/status",
    responses=declared(422, 500, 503, _422="Invalid keys (`validation_failed`) or too many (`batch_too_large`)."),
)
async def post_status(request: KeysRequest, db: Db, settings: Settings) -> StatusList:
    """The status of many keys at once (at most the batch limit), in the request's order."""
    if len(request.idempotency_keys) > settings.batch_max:
        raise BatchTooLarge(f"at most {settings.batch_max} keys per request")
    async with db.connect() as conn:
        return StatusList(results=await statuses(conn, request.idempotency_keys))


# After /transfers/status: a request to that path with another method must find that route first (its
# `Allow` answer names POST), though a key may be spelt `status`.
@router.get("/transfers/{idempotency_key}", responses=declared(422, 500, 503))
async def get_transfer(
    idempotency_key: Annotated[str, Path(pattern=KEY_PATTERN, description=KEY_DOC)], db: Db
) -> TransferStatus:
    """The key's status: booked (with the transfer id), rejected (with the reason), in progress, or unknown."""
    async with db.connect() as conn:
        [status] = await statuses(conn, [idempotency_key])
    return status


async def _book(db: Database, faults: Faults, transfers: Sequence[BatchTransfer]) -> list[Outcome]:
    held = {t.idempotency_key for t in transfers if faults.hold(t.idempotency_key, _accounts(t))}
    booked: dict[str, Outcome] = {}
    if rest := [t for t in transfers if t.idempotency_key not in held]:
        async with db.begin() as conn:
            outcomes = await book(conn, rest)
            if recorded_now := any(o.recorded_now for o in outcomes):
                await faults.before_commit()
        if recorded_now:
            await faults.after_commit()
        booked = {o.key: o for o in outcomes}
    in_progress = Outcome("", "conflict", conflict="in_progress")
    return [booked.get(t.idempotency_key) or replace(in_progress, key=t.idempotency_key) for t in transfers]


def _accounts(transfer: BatchTransfer) -> tuple[str, str]:
    return transfer.debtor_account, transfer.creditor_account
