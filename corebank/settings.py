"""The core's one settings object; every field can be set with an environment variable prefixed COREBANK_."""

from pydantic import Field, PositiveInt
from pydantic_settings import BaseSettings, SettingsConfigDict


class CoreBankSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="COREBANK_", extra="ignore")

    database_url: str = Field(
        default="postgresql+asyncpg://root@127.0.0.1:5432/corebank",
        description="The core's own PostgreSQL database (asyncpg driver); never remit's.",
    )
    host: str = Field(default="127.0.0.1", description="Interface `serve` listens on (`--host` overrides).")
    port: int = Field(default=8700, ge=1, le=65535, description="Port `serve` listens on (`--port` overrides).")
    faults_enabled: bool = Field(
        default=False,
        description="Allow fault injection through PUT /_faults (tests and the demo only); off: it answers 403.",
    )
    pool_size: PositiveInt = Field(default=10, description="Database connections the server keeps.")
    batch_max: PositiveInt = Field(
        default=1000, description="Most transfers (or keys) in one POST /transfers/batch or /transfers/status."
    )
