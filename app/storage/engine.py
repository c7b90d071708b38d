"""Engine construction and database readiness (used by the prestart step and the service)."""

from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine
from tenacity import AsyncRetrying, retry_if_exception_type, stop_after_delay, wait_exponential

from app.errors import ServiceUnavailable


def make_engine(database_url: str, pool_size: int = 10) -> AsyncEngine:
    # hide_parameters: a statement's error text would otherwise quote its parameters (account numbers).
    return create_async_engine(
        database_url, pool_size=pool_size, max_overflow=pool_size, pool_pre_ping=True, hide_parameters=True
    )


async def wait_for_database(engine: AsyncEngine, timeout_seconds: float = 30.0) -> None:
    """Block until PostgreSQL answers, or raise ServiceUnavailable with the URL's host in the message."""
    try:
        async for attempt in AsyncRetrying(
            stop=stop_after_delay(timeout_seconds),
            wait=wait_exponential(multiplier=0.2, max=2.0),
            retry=retry_if_exception_type(OSError) | retry_if_exception_type(Exception),
            reraise=True,
        ):
            with attempt:
                async with engine.connect() as conn:
                    await conn.exec_driver_sql("SELECT 1")
    except Exception as exc:
        raise ServiceUnavailable(
            f"PostgreSQL at {engine.url.render_as_string(hide_password=True)} is not reachable: {exc}"
        ) from exc
