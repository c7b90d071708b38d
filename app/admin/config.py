"""Settings of the admin process, read from REMIT_ADMIN_* until they move into app/settings.py."""

from pydantic import Field, PositiveInt
from pydantic_settings import BaseSettings, SettingsConfigDict


class AdminSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="REMIT_ADMIN_", env_file=".env", extra="ignore")

    host: str = Field(default="127.0.0.1", description="Address `remit admin` listens on.")
    port: PositiveInt = Field(default=8080, description="Port `remit admin` listens on.")
    max_upload_bytes: PositiveInt = Field(
        default=20 * 1024 * 1024, description="Largest bulk file POST /v1/batches takes."
    )
    session_idle_minutes: PositiveInt = Field(default=30, description="Console sessions end after this long unused.")
    session_max_hours: PositiveInt = Field(default=8, description="Console sessions end this long after login.")
    cookie_secure: bool = Field(
        default=False, description="Mark the console cookie Secure; set true whenever the console is served over TLS."
    )
