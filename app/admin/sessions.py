"""Console sessions, kept in this process's memory: the cookie holds only a random session id.

A session remembers which API key logged in, never the key itself, and the key is looked up again on
every request, so revoking it ends its sessions. Restarting the process logs everyone out; run the
console as one process (or behind sticky sessions).
"""

import hmac
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta

COOKIE = "remit_console"


@dataclass(slots=True)
class ConsoleSession:
    session_id: str
    key_id: str
    csrf_token: str
    started: float
    last_seen: float
    flashes: list[str] = field(default_factory=list)

    def csrf_ok(self, token: str | None) -> bool:
        return token is not None and hmac.compare_digest(token, self.csrf_token)

    def pop_flashes(self) -> list[str]:
        shown, self.flashes = self.flashes, []
        return shown


class SessionStore:
    def __init__(self, idle: timedelta, max_age: timedelta, clock: Callable[[], float] = time.monotonic) -> None:
        self._idle = idle.total_seconds()
        self._max_age = max_age.total_seconds()
        self._clock = clock
        self._sessions: dict[str, ConsoleSession] = {}

    def create(self, key_id: str) -> ConsoleSession:
        self._prune()
        now = self._clock()
        session = ConsoleSession(secrets.token_urlsafe(32), key_id, secrets.token_urlsafe(32), now, now)
        self._sessions[session.session_id] = session
        return session

    def get(self, session_id: str | None) -> ConsoleSession | None:
        session = self._sessions.get(session_id or "")
        if session is None:
            return None
        now = self._clock()
        if self._expired(session, now):
            self.drop(session.session_id)
            return None
        session.last_seen = now
        return session

    def drop(self, session_id: str) -> None:
        self._sessions.pop(session_id, None)

    def _expired(self, session: ConsoleSession, now: float) -> bool:
        return now - session.last_seen > self._idle or now - session.started > self._max_age

    def _prune(self) -> None:
        now = self._clock()
        for session in [s for s in self._sessions.values() if self._expired(s, now)]:
            self.drop(session.session_id)
