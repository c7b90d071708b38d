"""Who is using the console: the session cookie leads to a session, the session to a (still valid) key."""

from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, HTTPException, Request, status

from app.admin.api_keys import caller_of_key
from app.admin.auth import Services
from app.admin.caller import Caller
from app.admin.sessions import COOKIE, ConsoleSession


class LoginRequired(Exception):
    """No session, an expired one, or its key was revoked: the console answers with the login page."""


@dataclass(frozen=True, slots=True)
class ConsoleContext:
    caller: Caller
    session: ConsoleSession

    def check_csrf(self, token: str | None) -> None:
        """Every console POST carries the session's token; a cross-site form cannot know it."""
        if not self.session.csrf_ok(token):
            raise HTTPException(status.HTTP_403_FORBIDDEN, "the form has expired or did not come from this console")

    def flash(self, message: str) -> None:
        self.session.flashes.append(message)


async def console_context(request: Request, services: Services) -> ConsoleContext:
    session = services.sessions.get(request.cookies.get(COOKIE))
    if session is None:
        raise LoginRequired
    caller = await caller_of_key(services.system_uow, session.key_id)
    if caller is None:
        services.sessions.drop(session.session_id)
        raise LoginRequired
    return ConsoleContext(caller, session)


Console = Annotated[ConsoleContext, Depends(console_context)]
