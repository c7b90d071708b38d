"""Rendering console pages: the Jinja2 environment, its filters, and the headers every page carries."""

import json
from datetime import datetime
from pathlib import Path
from typing import Any

from fastapi import Request
from fastapi.templating import Jinja2Templates
from markupsafe import Markup
from starlette.responses import Response

from app.admin.console.context import ConsoleContext
from app.observability.queue_overview import format_age
from app.tracing import wording
from contracts.amounts import amount_text, exponent, major_units, minor_name

templates = Jinja2Templates(directory=Path(__file__).parent / "templates")  # autoescapes .html

# No script runs on these pages; styles are the one inline <style> block. Pages show payment data, so
# nothing is cached and nothing is framed.
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
    "X-Frame-Options": "DENY",
}


def when(value: datetime | None) -> str:
    return "" if value is None else value.strftime("%Y-%m-%d %H:%M:%S %Z").strip()


def minor(value: int | None) -> str:
    """A count (or minor units as stored), thousands separated for reading."""
    return "" if value is None else f"{value:,}"


def money(cents: int | None, currency: str | None) -> Markup:
    """An amount in a table cell: in the currency's unit (ISO 4217 exponent, contracts/amounts.py), the stored
    minor units beside it, muted: `450.50 (45,050 cents)`. Markup.format escapes what it is given."""
    if cents is None:
        return Markup("")
    major = major_units(cents, currency)
    if major is None:
        return Markup('{} <span class="muted">(minor units)</span>').format(f"{cents:,}")
    if exponent(currency) == 0:
        return Markup("{}").format(major)  # its major unit is its minor unit
    return Markup('{} <span class="muted">({} {})</span>').format(major, f"{cents:,}", minor_name(currency))


def pretty(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True, default=str)


templates.env.filters.update(
    when=when,
    minor=minor,
    money=money,
    amount=amount_text,
    pretty=pretty,
    moment=wording.moment,
    delay=wording.delay,
    age=wording.age,
    verdict=wording.verdict,
    booking=wording.booking,
    queue_age=format_age,
)


def page(request: Request, name: str, ctx: ConsoleContext | None, status_code: int = 200, **values: Any) -> Response:
    context: dict[str, Any] = {"caller": None, "csrf_token": "", "flashes": [], **values}
    if ctx is not None:
        context.update(caller=ctx.caller, csrf_token=ctx.session.csrf_token, flashes=ctx.session.pop_flashes())
    return templates.TemplateResponse(request, name, context, status_code=status_code, headers=SECURITY_HEADERS)
