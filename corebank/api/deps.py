"""What routes get from the app: the database, the settings and the fault plan (set in app.py).

`async def`, though they never wait: FastAPI runs a plain `def` dependency in its thread pool, and three
thread hand-offs per request were an eighth of the core's CPU (docs/benchmarks.md, "External core").
"""

from typing import Annotated, Any

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from corebank.api.database import Database
from corebank.auth import ClientTokens, same_token
from corebank.errors import Unauthenticated
from corebank.faults import Faults
from corebank.settings import CoreBankSettings

# The security schemes of the OpenAPI document: a client's token for the API, the faults token for /_faults.
CLIENT_SCHEME = "client"
FAULTS_SCHEME = "faults"
_client_bearer = HTTPBearer(
    scheme_name=CLIENT_SCHEME,
    description="A token the core gave this client (COREBANK_CLIENT_TOKENS): `Authorization: Bearer <token>`.",
    auto_error=False,
)
_faults_bearer = HTTPBearer(
    scheme_name=FAULTS_SCHEME,
    description="The fault-injection token (COREBANK_FAULTS_TOKEN), only where fault injection is enabled.",
    auto_error=False,
)
REFUSED = "send Authorization: Bearer <token> with a token this core gave the client"
# On a route anyone may call: the anonymous, or a client with a valid token (a wrong one is refused).
ANYONE: dict[str, Any] = {"security": [{}, {CLIENT_SCHEME: []}]}


async def _database(request: Request) -> Database:
    database: Database = request.app.state.database
    return database


async def _faults(request: Request) -> Faults:
    faults: Faults = request.app.state.faults
    return faults


async def _settings(request: Request) -> CoreBankSettings:
    settings: CoreBankSettings = request.app.state.settings
    return settings


Db = Annotated[Database, Depends(_database)]
FaultState = Annotated[Faults, Depends(_faults)]
Settings = Annotated[CoreBankSettings, Depends(_settings)]


def _tokens(request: Request) -> ClientTokens:
    tokens: ClientTokens = request.app.state.client_tokens
    return tokens


async def client(
    request: Request, credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_client_bearer)]
) -> str:
    """The calling client's name; 401 without a token this core knows (the same answer for none and a wrong
    one: nothing says which part was wrong)."""
    name = _tokens(request).identify(credentials.credentials) if credentials is not None else None
    if name is None:
        raise Unauthenticated(REFUSED)
    return name


async def refuse_a_wrong_credential(request: Request) -> None:
    """A route anyone may call still refuses a credential it does not know: a client holding a wrong token
    learns it at once, from every route (remit's breaker probes /readyz with its token)."""
    header = request.headers.get("authorization")
    if header is None:
        return
    scheme, _, token = header.strip().partition(" ")
    if scheme.lower() != "bearer" or _tokens(request).identify(token.strip()) is None:
        raise Unauthenticated(REFUSED)


async def faults_credential(
    request: Request, credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_faults_bearer)]
) -> None:
    expected = request.app.state.settings.faults_token
    if expected is None or credentials is None or not same_token(credentials.credentials, expected.get_secret_value()):
        raise Unauthenticated("send Authorization: Bearer <the faults token> (COREBANK_FAULTS_TOKEN)")


Client = Annotated[str, Depends(client)]
