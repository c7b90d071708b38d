"""FastAPI dependencies: the services of the running app, and the caller an API key stands for."""

from typing import Annotated, cast

from fastapi import Depends, Header, HTTPException, Request, status

from app.admin.api_keys import authenticate
from app.admin.caller import Caller
from app.admin.services import AdminServices

_CHALLENGE = {"WWW-Authenticate": 'Bearer realm="remit"'}


def get_services(request: Request) -> AdminServices:
    return cast(AdminServices, request.app.state.services)


Services = Annotated[AdminServices, Depends(get_services)]


def presented_key(authorization: str | None, x_api_key: str | None) -> str | None:
    if x_api_key:
        return x_api_key
    if authorization:
        scheme, _, value = authorization.partition(" ")
        if scheme.lower() == "bearer" and value.strip():
            return value.strip()
    return None


async def api_caller(
    services: Services,
    authorization: Annotated[str | None, Header()] = None,
    x_api_key: Annotated[str | None, Header()] = None,
) -> Caller:
    """`Authorization: Bearer rk_...` or `X-API-Key: rk_...`; 401 when missing, unknown, wrong or revoked
    (one answer for all, so a caller cannot tell a revoked key from a made-up one)."""
    key = presented_key(authorization, x_api_key)
    if key is None:
        raise HTTPException(status.HTTP_401_UNAUTHORIZED, "an API key is required", headers=_CHALLENGE)
    caller = await authenticate(services.keys_uow, key)
    if caller is None:
        raise HTTPException(status.HTTP_401_UNAUTHORIZED, "the API key is not valid", headers=_CHALLENGE)
    return caller


ApiCaller = Annotated[Caller, Depends(api_caller)]


def tenant_only(caller: ApiCaller) -> Caller:
    """Endpoints that act as a tenant (submitting payments): an admin key is not a tenant."""
    if caller.is_admin:
        raise HTTPException(status.HTTP_403_FORBIDDEN, "admin keys cannot submit batches: use the tenant's own API key")
    return caller


TenantCaller = Annotated[Caller, Depends(tenant_only)]
