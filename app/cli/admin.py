"""`remit admin`: run the admin HTTP API and the DLQ console."""

import typer
import uvicorn

from app.admin.app import create_admin_app
from app.admin.config import AdminSettings
from app.settings import get_settings


def admin_command(
    host: str | None = typer.Option(None, "--host", help="Address to listen on (default REMIT_ADMIN_HOST, 127.0.0.1)."),
    port: int | None = typer.Option(None, "--port", min=1, max=65535, help="Port (default REMIT_ADMIN_PORT, 8080)."),
) -> None:
    """Run the admin HTTP API (/v1) and the DLQ web console (/console). One process: console sessions
    live in its memory.

    Example: remit admin --host 0.0.0.0 --port 8080
    """
    admin = AdminSettings()
    app = create_admin_app(get_settings(), admin)
    uvicorn.run(app, host=host or admin.host, port=port or admin.port, proxy_headers=False, log_level="info")
