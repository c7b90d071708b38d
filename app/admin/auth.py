"""FastAPI dependencies: the services of the running app, and the caller an API key stands for."""

from typing import Annotated, cast

from fastapi import Depends, HTTPException, Request, status
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer

from app.admin.api_keys import authenticate
from app.admin.brake import REFUSALS
from app.admin.caller import Caller
from app.admin.edge import API, EdgeState, host_of
from app.admin.services import AdminServices
from app.errors import Forbidden

_CHALLENGE = {"WWW-Authenticate": 'Bearer realm="remit"'}
# Declared as security schemes so that OpenAPI (and Swagger UI's Authorize button) knows the two ways in.
_BEARER = HTTPBearer(auto_error=False, scheme_name="bearer", description="`Authorization: Bearer rk_...`")
_API_KEY = APIKeyHeader(name="X-API-Key", auto_error=False, scheme_name="apiKey", description="`X-API-Key: rk_...`")


def get_services(request: Request) -> AdminServices:
    return cast(AdminServices, request.app.state.services)


Services = Annotated[AdminServices, Depends(get_services)]


async def api_caller(
    request: Request,
    services: Services,
    edge: EdgeState,
    bearer: Annotated[HTTPAuthorizationCredentials | None, Depends(_BEARER)],
    x_api_key: Annotated[str | None, Depends(_API_KEY)],
) -> Caller:
    """`Authorization: Bearer rk_...` or `X-API-Key: rk_...`; 401 when missing, unknown, wrong or revoked
    (one answer for all, so a caller cannot tell a revoked key from a made-up one), 429 once the brake on
    guessing holds the source or the key id (a right key is let in all the same)."""
    key = x_api_key or (bearer.credentials.strip() if bearer else None)
    if not key:
        edge.key_missing(API, host_of(request))
        raise HTTPException(status.HTTP_401_UNAUTHORIZED, "an API key is required", headers=_CHALLENGE)
    caller = await authenticate(services.system_uow, key)
    if caller is not None:
        return caller
    verdict = edge.key_failed(API, host_of(request), key)
    if verdict.refused:
        await edge.brake.hold()
        raise HTTPException(
            status.HTTP_429_TOO_MANY_REQUESTS,
            f"too many failed authentications {REFUSALS[verdict.reason]}: try again in {verdict.retry_after} s",
            headers={"Retry-After": str(verdict.retry_after)},
        )
    raise HTTPException(status.HTTP_401_UNAUTHORIZED, "the API key is not valid", headers=_CHALLENGE)


ApiCaller = Annotated[Caller, Depends(api_caller)]


def tenant_only(caller: ApiCaller) -> Caller:
    """Endpoints that act as a tenant (submitting payments): an admin key is not a tenant."""
    if caller.is_admin:
        raise Forbidden("admin keys cannot submit batches: use the tenant's own API key")
    return caller


TenantCaller = Annotated[Caller, Depends(tenant_only)]
