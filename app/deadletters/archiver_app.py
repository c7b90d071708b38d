"""The archiver service: `faststream run app.deadletters.archiver_app:app` (or `remit archiver`)."""

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from faststream import ContextRepo, FastStream
from faststream.specification import AsyncAPI

from app.bootstrap import archiver_broker, running_archive
from app.logs import configure_logging
from app.settings import Settings, get_settings


def create_app(settings: Settings | None = None) -> FastStream:
    settings = settings or get_settings()

    @asynccontextmanager
    async def lifespan(context: ContextRepo) -> AsyncIterator[None]:
        configure_logging(settings.log_level, settings.log_format)
        async with running_archive(settings) as archive:
            context.set_global("archive", archive)
            yield

    return FastStream(
        archiver_broker(settings),
        lifespan=lifespan,
        specification=AsyncAPI(title="remit archiver", version="0.1.0", description="Dead-letter archiver"),
    )


def __getattr__(name: str) -> FastStream:
    """`app`, built when `faststream run app.deadletters.archiver_app:app` asks for it: importing builds nothing."""
    if name == "app":
        return create_app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
