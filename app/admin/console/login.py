"""Logging in to the console with an API key, and out again."""

import hmac
import secrets
from typing import Annotated

from fastapi import APIRouter, Request, status
from fastapi.responses import RedirectResponse
from pydantic import BaseModel, Field
from starlette.responses import Response

from app.admin.api_keys import authenticate
from app.admin.auth import Services
from app.admin.brake import REFUSALS
from app.admin.console.context import Console
from app.admin.console.forms import read_form, session_form
from app.admin.console.render import page
from app.admin.edge import CONSOLE, EdgeState, host_of
from app.admin.services import AdminServices
from app.admin.sessions import COOKIE

router = APIRouter(prefix="/console", include_in_schema=False)

# Before there is a session, the login form is protected by a double-submit token: a random value set as
# a SameSite=Strict cookie and repeated in the form, which another site can neither read nor set.
LOGIN_COOKIE = "remit_login"
HOME = "/console/dead-letters"
EXPIRED = "The login form expired. Please try again."


class LoginForm(BaseModel):
    api_key: Annotated[str, Field(max_length=200)]
    login_token: Annotated[str, Field(max_length=100)] = ""


class LogoutForm(BaseModel):
    csrf_token: Annotated[str, Field(max_length=500)] = ""


@router.get("")
async def home() -> RedirectResponse:
    return RedirectResponse(HOME, status.HTTP_303_SEE_OTHER)


@router.get("/login")
async def login_form(request: Request, services: Services) -> Response:
    return _login_page(request, services, None, status.HTTP_200_OK)


@router.post("/login")
async def login(request: Request, services: Services, edge: EdgeState) -> Response:
    """The form is read only after its login cookie is seen (a form posted without one is refused unread),
    and is a few hundred bytes at most (Settings.admin_max_request_bytes bounds what is read)."""
    expected = request.cookies.get(LOGIN_COOKIE, "")
    if not expected:
        return _login_page(request, services, EXPIRED, status.HTTP_403_FORBIDDEN)
    form = await read_form(request, LoginForm)
    if not hmac.compare_digest(expected.encode(), form.login_token.encode()):
        return _login_page(request, services, EXPIRED, status.HTTP_403_FORBIDDEN)
    caller = await authenticate(services.system_uow, form.api_key)
    if caller is None:
        verdict = edge.key_failed(CONSOLE, host_of(request), form.api_key)
        if not verdict.refused:
            return _login_page(
                request, services, "That API key is not valid (or was revoked).", status.HTTP_401_UNAUTHORIZED
            )
        await edge.brake.hold()
        wait = verdict.retry_after
        message = f"Too many failed logins {REFUSALS[verdict.reason]}. Try again in {wait} seconds."
        refused = _login_page(request, services, message, status.HTTP_429_TOO_MANY_REQUESTS)
        refused.headers["Retry-After"] = str(wait)
        return refused
    session = services.sessions.create(caller.key_id)
    response = RedirectResponse(HOME, status.HTTP_303_SEE_OTHER)
    response.set_cookie(
        COOKIE,
        session.session_id,
        httponly=True,
        samesite="strict",
        secure=services.settings.admin_cookie_secure,
        path="/console",
    )
    response.delete_cookie(LOGIN_COOKIE, path="/console/login")
    return response


@router.post("/logout")
async def logout(ctx: Console, services: Services, form: Annotated[LogoutForm, session_form(LogoutForm)]) -> Response:
    ctx.check_csrf(form.csrf_token)
    services.sessions.drop(ctx.session.session_id)
    response = RedirectResponse("/console/login", status.HTTP_303_SEE_OTHER)
    response.delete_cookie(COOKIE, path="/console")
    return response


def _login_page(request: Request, services: AdminServices, error: str | None, status_code: int) -> Response:
    token = secrets.token_urlsafe(24)
    response = page(request, "login.html", None, status_code, login_token=token, error=error)
    response.set_cookie(
        LOGIN_COOKIE,
        token,
        max_age=900,
        httponly=True,
        samesite="strict",
        secure=services.settings.admin_cookie_secure,
        path="/console/login",
    )
    return response
