"""`python -m app.admin [--host H] [--port P]`: the same as `remit admin`."""

import typer

from app.cli.admin import admin_command

typer.run(admin_command)
