"""The core's one settings object; every field can be set with an environment variable prefixed COREBANK_."""

from pathlib import Path

from pydantic import Field, PositiveInt, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict


class CoreBankSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="COREBANK_", extra="ignore")

    database_url: str = Field(
        default="postgresql+asyncpg://root@127.0.0.1:5432/corebank",
        description="The core's own PostgreSQL database (asyncpg driver); never remit's.",
    )
    host: str = Field(default="127.0.0.1", description="Interface `serve` listens on (`--host` overrides).")
    port: int = Field(default=8700, ge=1, le=65535, description="Port `serve` listens on (`--port` overrides).")
    client_tokens: dict[str, list[SecretStr]] = Field(
        default={},
        description="Who may call the API: a JSON object, client name -> its bearer tokens (each 32 to 512 visible "
        'ASCII characters), e.g. {"remit": ["<token>"]}; two tokens of one client are both valid (rotation). '
        "Fixed for the life of the process; see client_tokens_file to rotate without a restart.",
    )
    client_tokens_file: Path | None = Field(
        default=None,
        description="A JSON file of the same shape as client_tokens, read again when it changes (checked at most "
        "once a second; replace it atomically, e.g. write and rename). Instead of client_tokens, not beside it.",
    )
    faults_enabled: bool = Field(
        default=False,
        description="Mount fault injection (GET, PUT, DELETE /_faults; tests and the demo only); off, the routes "
        "do not exist (404). Needs faults_token.",
    )
    faults_token: SecretStr | None = Field(
        default=None,
        description="The bearer token of /_faults, its own: a client's token does not open it, nor it the API.",
    )
    tls_certfile: Path | None = Field(
        default=None, description="The server's certificate chain (PEM): `serve` speaks HTTPS. With tls_keyfile."
    )
    tls_keyfile: Path | None = Field(default=None, description="The server certificate's private key (PEM).")
    tls_client_ca_file: Path | None = Field(
        default=None,
        description="CA certificates (PEM) a client's certificate must be signed by (mutual TLS): a client without "
        "one is refused in the TLS handshake, before HTTP. Needs tls_certfile. A client still sends its token.",
    )
    pool_size: PositiveInt = Field(default=10, description="Database connections the server keeps.")
    batch_max: PositiveInt = Field(
        default=1000, description="Most transfers (or keys) in one POST /transfers/batch or /transfers/status."
    )
