"""Who may call the core: a bearer token per client (docs/core-banking.md, "Authentication").

Each client (remit, a reconciliation job, a teller system ...) has a name and one or more tokens; any of them
identifies it, so a token is rotated without downtime by accepting the new one beside the old, switching the
client over, then removing the old one. The tokens come from COREBANK_CLIENT_TOKENS (fixed for the life of the
process) or from the JSON file COREBANK_CLIENT_TOKENS_FILE names, which is read again when it changes (looked
at no more than once a second), so rotating needs no restart. A file that cannot be read or is not valid
leaves the tokens in force as they were, with a warning that names the file, never its content.

A token is never logged and never compared as given: each is kept as its SHA-256 digest, and a presented
token's digest is compared with every one of them (`hmac.compare_digest`, all of them, whichever matches), so
neither the time taken nor an error says how much of a token was right or how long it is.
"""

import hashlib
import hmac
import json
import logging
import os
import re
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import SecretStr

from corebank.errors import BadCredentials
from corebank.settings import CoreBankSettings

log = logging.getLogger("corebank")

CLIENT_PATTERN = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,63}$")
TOKEN_PATTERN = re.compile(r"^[\x21-\x7e]{32,512}$")  # visible ASCII: a header value, at least 32 characters
RELOAD_CHECK_SECONDS = 1.0


def digest(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()


def parse_client_tokens(value: Mapping[str, Any], source: str) -> dict[str, list[str]]:
    """{client: [token, ...]} checked: names as CLIENT_PATTERN says, tokens of 32 to 512 visible ASCII
    characters, at least one token, no token given to two clients. BadCredentials says what is wrong (never a
    token)."""
    if not isinstance(value, Mapping) or not value:
        raise BadCredentials(f"{source}: no client token (a JSON object: client name -> list of tokens)")
    clients: dict[str, list[str]] = {}
    owners: dict[bytes, str] = {}
    for name, tokens in value.items():
        if not isinstance(name, str) or not CLIENT_PATTERN.match(name):
            raise BadCredentials(f"{source}: a client's name must match {CLIENT_PATTERN.pattern}")
        if isinstance(tokens, str | SecretStr):
            tokens = [tokens]
        if not isinstance(tokens, Sequence) or not tokens:
            raise BadCredentials(f"{source}: client {name!r} has no token")
        plain = [t.get_secret_value() if isinstance(t, SecretStr) else t for t in tokens]
        if not all(isinstance(t, str) and TOKEN_PATTERN.match(t) for t in plain):
            raise BadCredentials(f"{source}: client {name!r} has a token not of 32 to 512 visible ASCII characters")
        for token in plain:
            if owners.setdefault(digest(token), name) != name:
                raise BadCredentials(f"{source}: clients {owners[digest(token)]!r} and {name!r} share a token")
        clients[name] = plain
    return clients


class ClientTokens:
    """The tokens in force and the client each one identifies."""

    def __init__(
        self,
        inline: Mapping[str, Any] | None = None,
        path: Path | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if inline and path is not None:
            raise BadCredentials("set COREBANK_CLIENT_TOKENS or COREBANK_CLIENT_TOKENS_FILE, not both")
        self._path = path
        self._clock = clock
        self._checked = clock()
        self._seen: tuple[int, int, int] | None = None
        self._digests: list[tuple[bytes, str]] = []
        if path is not None:
            self._seen, clients = self._read(path)
        else:
            clients = parse_client_tokens(inline or {}, "COREBANK_CLIENT_TOKENS") if inline else {}
        self._use(clients)

    @property
    def clients(self) -> list[str]:
        return sorted({name for _, name in self._digests})

    def identify(self, token: str) -> str | None:
        """The client this token identifies; None for any other string."""
        self._reload_if_changed()
        presented = digest(token)
        found = None
        for known, name in self._digests:  # every one compared: the time says nothing about which matched
            if hmac.compare_digest(known, presented):
                found = name
        return found

    def _use(self, clients: Mapping[str, Sequence[str]]) -> None:
        self._digests = [(digest(token), name) for name, tokens in clients.items() for token in tokens]

    def _reload_if_changed(self) -> None:
        if self._path is None or self._clock() - self._checked < RELOAD_CHECK_SECONDS:
            return
        self._checked = self._clock()
        try:
            if _identity(self._path) == self._seen:
                return
            self._seen, clients = self._read(self._path)
        except (OSError, BadCredentials) as exc:
            reason = exc.strerror if isinstance(exc, OSError) else str(exc)
            log.warning("client tokens not reloaded from %s: %s; the tokens in force stay", self._path, reason)
            self._seen = None  # try again at the next check
            return
        self._use(clients)
        log.warning("client tokens reloaded from %s: clients %s", self._path, ", ".join(self.clients))

    @staticmethod
    def _read(path: Path) -> tuple[tuple[int, int, int], dict[str, list[str]]]:
        seen = _identity(path)
        try:
            value = json.loads(path.read_bytes())
        except ValueError:
            raise BadCredentials(f"{path} is not JSON (client name -> list of tokens)") from None
        return seen, parse_client_tokens(value, str(path))


def _identity(path: Path) -> tuple[int, int, int]:
    """What changes when the file is rewritten or replaced (an atomic rename gives a new inode)."""
    status = os.stat(path)
    return status.st_ino, status.st_mtime_ns, status.st_size


def same_token(presented: str, expected: str) -> bool:
    return hmac.compare_digest(digest(presented), digest(expected))


def credentials_for(settings: CoreBankSettings) -> ClientTokens:
    """The client tokens a serving core starts with; BadCredentials (start-up refuses, one line) when it has
    none, or faults enabled without a faults token of their own."""
    tokens = ClientTokens(settings.client_tokens, settings.client_tokens_file)
    if settings.tls_client_ca_file is not None and settings.tls_certfile is None:
        raise BadCredentials("COREBANK_TLS_CLIENT_CA_FILE (mutual TLS) needs COREBANK_TLS_CERTFILE and _KEYFILE")
    if (settings.tls_certfile is None) != (settings.tls_keyfile is None):
        raise BadCredentials("COREBANK_TLS_CERTFILE and COREBANK_TLS_KEYFILE go together")
    if not tokens.clients:
        raise BadCredentials(
            "no client may call this core: set COREBANK_CLIENT_TOKENS (or COREBANK_CLIENT_TOKENS_FILE) to a JSON "
            'object of client name -> tokens, e.g. {"remit": ["<32 or more characters>"]}'
        )
    if settings.faults_enabled:
        faults = settings.faults_token.get_secret_value() if settings.faults_token else ""
        if not TOKEN_PATTERN.match(faults):
            raise BadCredentials(
                "fault injection needs COREBANK_FAULTS_TOKEN, a token of its own (32 to 512 visible ASCII characters)"
            )
        if tokens.identify(faults) is not None:
            raise BadCredentials("COREBANK_FAULTS_TOKEN is also a client's token: give fault injection its own")
    return tokens
