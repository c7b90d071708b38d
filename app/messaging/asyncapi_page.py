"""The consumer's AsyncAPI page (`/docs/asyncapi`) with its assets served by the consumer itself, like the
admin's /docs (fastapi-offline): FastStream's page loads AsyncAPI's React component from unpkg.com and its
icons from asyncapi.com, which a bank's network (or an air-gapped install) does not reach, and which would
run third-party code of whatever version the CDN serves on an operator's page.

The assets are @asyncapi/react-component 3.1.5 (the version FastStream 0.7 names), taken from npm with
`npm pack @asyncapi/react-component@3.1.5` (browser/standalone/index.js, styles/default.min.css; Apache-2.0,
notices in asyncapi_assets/). No "try it out": it would publish as the service's own trusted login."""

import re
from importlib import resources
from typing import TYPE_CHECKING

from faststream.asgi import AsgiResponse, AsyncAPIRoute, get
from faststream.asgi.types import Scope  # at run time: the handlers' signatures are read by pydantic
from faststream.specification.asyncapi.site import get_asyncapi_html

if TYPE_CHECKING:
    from faststream.asgi.handlers import GetHandler
    from faststream.specification.base import SpecificationFactory

PAGE = "/docs/asyncapi"
ASSETS = f"{PAGE}/assets"
_FILES = {  # served path -> (file in asyncapi_assets/, content type)
    f"{ASSETS}/asyncapi.js": ("asyncapi-react-3.1.5.js", "text/javascript; charset=utf-8"),
    f"{ASSETS}/asyncapi.css": ("asyncapi-react-3.1.5.css", "text/css; charset=utf-8"),
}
_REMOTE_ICONS = re.compile(r'\s*<link rel="icon"[^>]*href="https?://[^"]*">')


class LocalAsyncAPIRoute(AsyncAPIRoute):
    """FastStream's page, pointed at the local assets, without the remote icons."""

    def __init__(self) -> None:
        super().__init__(PAGE, try_it_out_path=None)

    def __call__(self, schema: "SpecificationFactory") -> "GetHandler":
        cached: bytes | None = None

        @get(include_in_schema=False)
        async def page(scope: Scope) -> AsgiResponse:
            nonlocal cached
            if cached is None:
                html = get_asyncapi_html(
                    schema.to_specification(),
                    asyncapi_js_url=f"{ASSETS}/asyncapi.js",
                    asyncapi_css_url=f"{ASSETS}/asyncapi.css",
                    try_it_out_path=None,
                )
                cached = _REMOTE_ICONS.sub("", html).encode()
            return AsgiResponse(cached, 200, {"content-type": "text/html; charset=utf-8"})

        return page


def asset_routes() -> list[tuple[str, "GetHandler"]]:
    return [(path, _asset(name, kind)) for path, (name, kind) in _FILES.items()]


def _asset(name: str, kind: str) -> "GetHandler":
    body = (resources.files("app.messaging") / "asyncapi_assets" / name).read_bytes()

    @get(include_in_schema=False)
    async def asset(scope: Scope) -> AsgiResponse:
        return AsgiResponse(body, 200, {"content-type": kind, "cache-control": "public, max-age=86400"})

    return asset
