"""What routes get from the app: the database, the settings and the fault plan (set in app.py)."""

from typing import Annotated

from fastapi import Depends, Request

from corebank.api.database import Database
from corebank.faults import Faults
from corebank.settings import CoreBankSettings


def _database(request: Request) -> Database:
    database: Database = request.app.state.database
    return database


def _faults(request: Request) -> Faults:
    faults: Faults = request.app.state.faults
    return faults


def _settings(request: Request) -> CoreBankSettings:
    settings: CoreBankSettings = request.app.state.settings
    return settings


Db = Annotated[Database, Depends(_database)]
FaultState = Annotated[Faults, Depends(_faults)]
Settings = Annotated[CoreBankSettings, Depends(_settings)]
