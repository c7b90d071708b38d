"""What routes get from the app: the database, the settings and the fault plan (set in app.py).

`async def`, though they never wait: FastAPI runs a plain `def` dependency in its thread pool, and three
thread hand-offs per request were an eighth of the core's CPU (docs/benchmarks.md, "External core").
"""

from typing import Annotated

from fastapi import Depends, Request

from corebank.api.database import Database
from corebank.faults import Faults
from corebank.settings import CoreBankSettings


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
