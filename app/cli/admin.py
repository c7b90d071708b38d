"""`remit admin`: run the admin HTTP API and the console."""

import typer
import uvicorn

from app.admin.app import create_admin_app
from app.settings import get_settings


def admin_command(
    host: str | None = typer.Option(None, "--host", help="Address to listen on (default REMIT_ADMIN_HOST, 127.0.0.1)."),
    port: int | None = typer.Option(None, "--port", min=1, max=65535, help="Port (default REMIT_ADMIN_PORT, 8080)."),
) -> None:
    """Run the admin HTTP API (/v1) and the DLQ web console (/console). One process: console sessions
    live in its memory.

    Example: remit admin --host 0.0.0.0 --port 8080
    """
    settings = get_settings()
    app = create_admin_app(settings)
    host, port = host or settings.admin_host, port or settings.admin_port
    uvicorn.run(app, host=host, port=port, proxy_headers=False, log_level="info")
