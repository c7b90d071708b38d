"""The one Settings object. Every value can be set with an environment variable prefixed REMIT_."""

from functools import cache

from pydantic import Field, PositiveInt
from pydantic_settings import BaseSettings, SettingsConfigDict
from sqlalchemy.engine import make_url


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="REMIT_", env_file=".env", extra="ignore")

    database_url: str = Field(
        default="postgresql+asyncpg://remit_app@127.0.0.1:5432/remit",
        description="PostgreSQL for the service (asyncpg driver), as a role that row-level security binds.",
    )
    migration_database_url: str | None = Field(
        default=None,
        description="PostgreSQL as the schema owner, for migrations and set-up. Default: REMIT_DATABASE_URL "
        "with the user replaced by REMIT_DB_OWNER and no password.",
    )
    db_owner: str = Field(default="root", description="The schema owner's role when no migration URL is given.")
    amqp_url: str = Field(default="amqp://guest:guest@127.0.0.1:5672/", description="RabbitMQ AMQP URL.")
    rabbitmq_management_url: str = Field(
        default="http://guest:guest@127.0.0.1:15672", description="RabbitMQ management API (provisioning, tests)."
    )

    exchange: str = "payments"
    work_queue: str = "payments.work"
    dead_letter_exchange: str = "payments.dlx"
    dead_letter_queue: str = "payments.dlq"
    retry_delays_seconds: list[float] = Field(
        default=[1.0, 5.0, 30.0], description="Backoff per retry level; one TTL queue per level."
    )
    max_retries: int = Field(default=3, ge=0, description="Retries after the first attempt before dead-lettering.")
    delivery_limit: PositiveInt = Field(
        default=20, description="Broker-side backstop for redeliveries (crash loops) on the work queue."
    )

    trusted_publishers: list[str] = Field(
        default=[],
        description="RabbitMQ users allowed to publish for any tenant, besides the login of REMIT_AMQP_URL.",
    )

    replay_budget: PositiveInt = Field(default=3, description="Real replays allowed per message_id.")
    retention_days: PositiveInt = Field(
        default=30, description="Days processed records, attempts and closed dead letters are kept."
    )
    replay_window_days: PositiveInt = Field(
        default=7,
        description="How long after failing a dead letter may still be replayed; part of the retention floor.",
    )

    prefetch: PositiveInt = Field(
        default=100, description="Unacked deliveries per worker; a pool's one AMQP consumer gets prefetch x workers."
    )
    tier_workers: dict[str, int] = Field(
        default={"free": 1, "basic": 3, "premium": 5, "enterprise": 10},
        description="Workers (AMQP consumers) per tier pool; a dedicated queue gets the enterprise size.",
    )
    commit_batch_max: PositiveInt = Field(default=256, description="Most messages committed in one transaction.")
    max_message_bytes: PositiveInt = 64 * 1024

    relay_batch_size: PositiveInt = 500
    relay_poll_seconds: float = Field(default=0.2, gt=0)
    relay_queue_high_watermark: int = Field(
        default=200, ge=0, description="Hold a tenant's rows in the outbox while its queue has more ready (0: off)."
    )
    relay_fair_share: bool = Field(default=True, description="Round-robin across tenants; false: plain FIFO.")
    relay_metrics_port: int = Field(
        default=0, ge=0, description="Serve the relay's Prometheus metrics on this port (0: off)."
    )

    default_ttl_seconds: PositiveInt = 86_400
    max_amount_cents: PositiveInt = Field(
        default=100_000_000, description="Business limit per payment checked by the publisher (limit_ok)."
    )

    # The core-banking simulator (the default adapter): deterministic failures for tests and the demo.
    simulator_closed_accounts: list[str] = Field(default=[], description="Creditor accounts that are closed.")
    simulator_flaky_accounts: dict[str, int] = Field(
        default={}, description="Creditor account -> how many attempts time out before it succeeds."
    )
    simulator_transient_rate: float = Field(default=0.0, ge=0.0, lt=1.0, description="Share of attempts timing out.")

    # Fault injection for the crash tests and the chaos rig only: the process SIGKILLs itself at the
    # named point. Never set in production.
    fault_kill_after_commits: PositiveInt | None = None
    fault_kill_after_publishes: PositiveInt | None = None


def owner_url(settings: Settings) -> str:
    """The URL migrations and set-up use: the owner of the schema, not the service role."""
    if settings.migration_database_url:
        return settings.migration_database_url
    url = make_url(settings.database_url).set(username=settings.db_owner, password=None)
    return url.render_as_string(hide_password=False)


@cache
def get_settings() -> Settings:
    return Settings()
