"""The one Settings object, and the only place remit reads its environment: every value can be set with an
environment variable prefixed REMIT_ (or in .env); the few that name no REMIT_ variable say which they read."""

import json
import os
import pwd
from collections.abc import Mapping
from functools import cache
from urllib.parse import urlsplit

from pydantic import AliasChoices, Field, PositiveInt, SecretStr, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict
from sqlalchemy.engine import make_url

from contracts.message import MAX_TTL_SECONDS

EXTERNAL_CORE_FLUSHES = 8  # the default flushes in flight with an external core (bench/core_e2e_bench.py)


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="REMIT_", env_file=".env", extra="ignore", populate_by_name=True)

    database_url: str = Field(
        default="postgresql+asyncpg://remit_app@127.0.0.1:5432/remit",
        description="PostgreSQL for tenant-scoped work (asyncpg driver), as remit_app: row-level security binds "
        "it to one tenant per transaction and it can never enter the system scope.",
    )
    system_database_url: str | None = Field(
        default=None,
        description="PostgreSQL for system-scoped work (the relay, the archiver, reconciliation, operators, the "
        "consumer's cross-tenant work), as remit_system, the one role the policies let into the system scope. "
        "Default: REMIT_DATABASE_URL with the user replaced by remit_system and no password.",
    )
    migration_database_url: str | None = Field(
        default=None,
        description="PostgreSQL as the schema owner, for migrations and set-up. Default: REMIT_DATABASE_URL "
        "with the user replaced by REMIT_DB_OWNER and no password.",
    )
    db_owner: str = Field(default="root", description="The schema owner's role when no migration URL is given.")
    amqp_url: str = Field(default="amqp://guest:guest@127.0.0.1:5672/", description="RabbitMQ AMQP URL.")
    rabbitmq_management_url: str = Field(
        default="http://guest:guest@127.0.0.1:15672",
        description="RabbitMQ management API (provisioning, queue depths and rates, tests).",
    )
    rabbitmq_queues_command: list[str] = Field(
        default=["rabbitmq-queues"],
        description="How to run RabbitMQ's `rabbitmq-queues` CLI, which reads a quorum queue's message at a position "
        "without delivering it: `remit queues peek` and the oldest-message age use it. It needs the broker's Erlang "
        'cookie; from another host, e.g. ["docker", "compose", "exec", "-T", "rabbitmq", "rabbitmq-queues"]. [] '
        "turns both off.",
    )
    queue_metrics_seconds: float = Field(
        default=30.0,
        gt=0,
        description="How often the consumer refreshes its queue and in-flight gauges on /metrics (the management "
        "API, one `rabbitmq-queues peek` per non-empty queue it is not taking messages from, one in-flight count "
        "per tenant), done by one process of a deployment on a host at a time (docs/queues.md).",
    )

    exchange: str = Field(default="payments", description="The topic exchange payments are published to.")
    work_queue: str = Field(default="payments.work", description="Prefix of the work queues (one per tier).")
    dead_letter_exchange: str = Field(default="payments.dlx", description="Where failed payments are published.")
    dead_letter_queue: str = Field(default="payments.dlq", description="The queue the archiver empties.")
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

    dead_letter_body_max_bytes: PositiveInt = Field(
        default=64 * 1024,
        description="Most bytes of a dead letter's body the store keeps; a longer one is kept as this prefix "
        "plus its full length and SHA-256, and is never replayable.",
    )
    replay_budget: PositiveInt = Field(default=3, description="Real replays allowed per message_id.")
    retention_days: PositiveInt = Field(
        default=30, description="Days processed records, attempts and closed dead letters are kept."
    )
    purge_batch_size: PositiveInt = Field(
        default=1000, description="Rows `remit purge` deletes per short transaction (its --batch-size default)."
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
    batch_interval_seconds: float = Field(
        default=0.01,
        ge=0,
        le=1,
        description="Shortest time between the starts of two batches of one pool while deliveries keep arriving "
        "(a full batch never waits; a pool idle this long starts at once). Fewer, larger batches at a moderate "
        'rate: each batch has a fixed cost (docs/benchmarks.md, "Latency"). 0: every batch at once.',
    )
    commit_flushes: PositiveInt | None = Field(
        default=None,
        description="Group commits in flight at once (flushers on the one queue). Unset: 1 with the embedded "
        "ledger (its flush is CPU, more only adds transactions), 8 with an external core (a flush mostly waits "
        'for the core\'s answer; more overlap those waits; measured in docs/benchmarks.md, "External core"). '
        "Each flush in flight holds a database connection per tenant in it (the consumer's pool is at least "
        "2 x this), and an HTTP connection to the core (keep core_banking_pool_size at least this).",
    )

    def commit_flushes_in_use(self) -> int:
        if self.commit_flushes is not None:
            return self.commit_flushes
        return EXTERNAL_CORE_FLUSHES if self.core_banking_url else 1

    max_message_bytes: PositiveInt = Field(
        default=64 * 1024,
        description="The consumer's hard cap on a body, whatever a tenant's own limit says: a bigger body is cut "
        "on arrival to its first `oversize_prefix_bytes` (its length and SHA-256 kept) and dead-lettered oversize.",
    )
    oversize_prefix_bytes: PositiveInt = Field(
        default=4096, description="How much of a body over max_message_bytes the consumer keeps for its dead letter."
    )
    pool_max_held_bytes: PositiveInt = Field(
        default=64 * 1024 * 1024,
        description="Body bytes one pool may hold (buffered and in flight): its window is at most this divided by "
        "max_message_bytes deliveries, whatever prefetch x workers says.",
    )
    tenant_refresh_seconds: float = Field(
        default=5.0, gt=0, description="How old the consumer's copy of the tenants' limits and status may get."
    )

    relay_batch_size: PositiveInt = Field(default=500, description="Most outbox rows one relay cycle publishes.")
    relay_poll_seconds: float = Field(
        default=0.2, gt=0, description="How long the relay waits when the outbox is empty."
    )
    relay_queue_high_watermark: int = Field(
        default=200, ge=0, description="Hold a tenant's rows in the outbox while its queue has more ready (0: off)."
    )
    relay_fair_share: bool = Field(default=True, description="Round-robin across tenants; false: plain FIFO.")
    relay_backlog_alert_seconds: float = Field(
        default=60.0,
        gt=0,
        description="How long accepted payments may wait in the outbox with no relay leading before the "
        "consumer's /readyz turns 503 and `remit status` warns.",
    )
    relay_metrics_port: int = Field(
        default=0, ge=0, description="Serve the relay's Prometheus metrics on this port (0: off)."
    )

    ingest_chunk_rows: PositiveInt = Field(
        default=5_000,
        description="Rows of a bulk file validated and written at a time: an ingest's memory is bounded by this, "
        "not by the file.",
    )
    ingest_rejections_listed: PositiveInt = Field(
        default=1_000,
        description="Most rejected rows a submit's receipt lists; the count is always complete, and every "
        "rejection is in the batch's status report (remit report).",
    )

    default_ttl_seconds: PositiveInt = Field(
        default=86_400, description="A new tenant's default time-to-live for its payments, seconds."
    )
    default_tenant: str | None = Field(
        default=None,
        pattern=r"^[a-z0-9][a-z0-9_-]{1,31}$",
        description="An install with one customer: the tenant `remit submit` uses when no --tenant is given.",
    )
    # Business rules (app/payment_rules.py): ingress checks them before it accepts a batch, the consumer
    # before any payment moves money, because a direct AMQP publisher never passed ingress.
    max_amount_cents: PositiveInt = Field(default=100_000_000, description="The most one payment may move (limit_ok).")
    max_clock_skew_seconds: PositiveInt = Field(
        default=300, description="How far in the future a payment's timestamp_utc may be (publishers' clock skew)."
    )
    max_ttl_seconds: PositiveInt = Field(
        default=7 * 86_400, le=MAX_TTL_SECONDS, description="The longest ttl_seconds a payment may ask for."
    )
    # None by default: the names in validation_result.checks are the publisher's claim, recorded with the
    # message (its body, in the outbox and the dead-letter store), not a control. What protects the ledger is
    # the rules above, which the consumer applies to every payment itself. An upstream written to the message
    # design (reference/004: "customer_exists", "bsb_valid", "limit_ok") had every payment dead-lettered while
    # the default was the five names remit's own ingress writes (issue 37, item 6).
    required_checks: list[str] = Field(
        default_factory=list,
        description="Check names validation_result.checks must contain before a payment may move money; none "
        "by default (the names are recorded, the consumer applies remit's own rules). E.g. "
        '["customer_exists"] to hold an upstream to its contract.',
    )

    # An external core-banking system over HTTP (docs/core-banking.md, "How remit talks to it").
    core_banking_url: str | None = Field(
        default=None,
        description="Base URL of an external core-banking service (e.g. http://127.0.0.1:8700). Unset: payments "
        "are booked in remit's in-process ledger.",
    )
    core_banking_name: str | None = Field(
        default=None,
        max_length=80,
        description="What people call the external core (e.g. 'ledger-prod, Acme core banking'): the name traces "
        "give for a booking it made. Unset: its address, host and port of REMIT_CORE_BANKING_URL.",
    )
    core_banking_token: SecretStr | None = Field(
        default=None,
        description="The bearer token remit sends to the core on every request (`Authorization: Bearer ...`): the "
        "credential the core gave remit (the reference core: one of COREBANK_CLIENT_TOKENS' tokens). Required with "
        "core_banking_url. Never logged or shown. To rotate it, the core accepts the new token beside the old, "
        "remit's processes are restarted with the new one one at a time, then the core drops the old.",
    )
    core_banking_ca_file: str | None = Field(
        default=None,
        description="CA certificates (PEM) the core's certificate is verified with, for an https:// URL; unset: "
        "the default trust store (certifi's).",
    )
    core_banking_client_cert_file: str | None = Field(
        default=None,
        description="remit's client certificate (PEM) for a core that requires mutual TLS; with "
        "core_banking_client_key_file. The token is sent as well.",
    )
    core_banking_client_key_file: str | None = Field(
        default=None, description="The private key (PEM) of core_banking_client_cert_file."
    )
    core_banking_connect_timeout_seconds: float = Field(
        default=2.0, gt=0, description="Most time to open a connection to the core; nothing was sent if it passes."
    )
    core_banking_read_timeout_seconds: float = Field(
        default=10.0,
        gt=0,
        description="Most time to send a request to the core and to wait for each part of its answer. When it "
        "passes the outcome is unknown, and remit asks the core for the keys' status before answering.",
    )
    core_banking_pool_timeout_seconds: float = Field(
        default=5.0, gt=0, description="Most time to wait for a free connection of the pool; nothing was sent."
    )
    core_banking_pool_size: PositiveInt = Field(
        default=10,
        description="Most connections the consumer keeps open to the core (one pooled HTTP client per process).",
    )
    core_banking_batch_max: PositiveInt = Field(
        default=1000,
        description="Most transfers in one POST /transfers/batch and most keys in one status query; at most the "
        "core's own limit (the reference core: COREBANK_BATCH_MAX, 1000).",
    )
    core_banking_parallel_requests: PositiveInt = Field(
        default=1,
        description="Requests one flush's payments are split into and sent side by side (each at most "
        "core_banking_batch_max). 1: one request at a time, in the flush's order. More lets the core book parts of "
        "a flush concurrently; which of a debtor's payments an insufficient balance refuses then depends on "
        "which request the core books first.",
    )
    core_banking_breaker_threshold: PositiveInt = Field(
        default=3,
        description="Consecutive failed requests to the core (unreachable, timed out, 5xx; never a refusal) that "
        "open the circuit breaker: payments then fail fast as retryable and the consumers pause. Keep it at most "
        "max_retries: then even a payment alone in the queue opens the breaker before its retries run out.",
    )
    core_banking_probe_interval_seconds: float = Field(
        default=2.0, gt=0, description="While the breaker is open, how often GET /readyz is tried; 200 closes it."
    )

    # The admin process (`remit admin`): the HTTP API and the DLQ console.
    admin_host: str = Field(default="127.0.0.1", description="Address `remit admin` listens on.")
    admin_port: int = Field(default=8080, ge=1, le=65535, description="Port `remit admin` listens on.")
    admin_max_upload_bytes: PositiveInt = Field(
        default=20 * 1024 * 1024,
        description="Largest bank file POST /v1/batches and the console's upload take; the whole request body may "
        "be 64 KiB more (multipart boundaries and fields). Read only once the caller is known.",
    )
    admin_max_request_bytes: PositiveInt = Field(
        default=64 * 1024,
        description="Largest body of every other admin request (JSON commands, console forms, the login). A body "
        "declared larger is answered 413 before any of it is read, one sent chunked when it passes this.",
    )
    # The brake on guessing keys (docs/admin-api.md, "Failed authentication"): token buckets of failures.
    admin_auth_source_failures: PositiveInt = Field(
        default=20,
        description="Failed authentications (API keys, console logins) one source address (an IPv6 /64) may make "
        "in a row; past them a failure is answered 429 with Retry-After. A right key is never refused.",
    )
    admin_auth_source_refill_seconds: float = Field(
        default=6.0, gt=0, description="One more failure is allowed to a source this often (10 a minute)."
    )
    admin_auth_key_failures: PositiveInt = Field(
        default=10,
        description="Failed authentications naming one API key (its id, the public part) from anywhere; past them "
        "a wrong secret for it is answered 429 with Retry-After, while the right one still works.",
    )
    admin_auth_key_refill_seconds: float = Field(
        default=30.0, gt=0, description="One more failure is allowed for a key this often (2 a minute)."
    )
    admin_auth_refusal_delay_seconds: float = Field(
        default=1.0, ge=0, le=10, description="How long a 429 for failed authentication is held before it is sent."
    )
    admin_auth_tracked: PositiveInt = Field(
        default=10_000,
        description="Sources, and keys, whose failures are remembered (each); the least recently failing go first.",
    )
    admin_session_idle_minutes: PositiveInt = Field(
        default=30, description="Console sessions end after this long unused."
    )
    admin_session_max_hours: PositiveInt = Field(default=8, description="Console sessions end this long after login.")
    admin_cookie_secure: bool = Field(
        default=False, description="Mark the console cookie Secure; set true whenever the console is served over TLS."
    )

    log_level: str = Field(default="INFO", description="Lowest level every remit process logs (DEBUG ... CRITICAL).")
    log_format: str = Field(default="json", description="json: one JSON object per line; anything else: plain text.")

    # Read from the operating system's variables, not REMIT_ ones.
    actor: str = Field(
        default_factory=lambda: account_name(),
        validation_alias=AliasChoices("REMIT_ACTOR", "USER", "LOGNAME"),
        description="Who CLI actions are recorded as (the audit trail without --actor, worker pool changes): "
        "REMIT_ACTOR, else $USER, else $LOGNAME, else the process's account name (uid-<n> when the account has "
        "no name, as in a container run with a bare --user).",
    )
    java_home: str | None = Field(
        default=None,
        validation_alias="JAVA_HOME",
        description="The Java runtime `remit reconcile` needs: $JAVA_HOME/bin/java, else `java` from PATH.",
    )

    @model_validator(mode="after")
    def _an_external_core_is_called_with_a_credential(self) -> "Settings":
        if self.core_banking_url and self.core_banking_token is None:
            raise ValueError(
                "REMIT_CORE_BANKING_URL is set without REMIT_CORE_BANKING_TOKEN: remit authenticates to its core "
                '(docs/core-banking.md, "Authentication")'
            )
        if (self.core_banking_client_cert_file is None) != (self.core_banking_client_key_file is None):
            raise ValueError("REMIT_CORE_BANKING_CLIENT_CERT_FILE and REMIT_CORE_BANKING_CLIENT_KEY_FILE go together")
        return self

    def core_banking_label(self) -> str | None:
        """The external core's name for people (a trace's booking), never its credentials; None without a core."""
        if not self.core_banking_url:
            return None
        if self.core_banking_name:
            return self.core_banking_name
        address = urlsplit(self.core_banking_url)
        return f"the core at {address.hostname or '?'}" + (f":{address.port}" if address.port else "")

    def core_banking_headers(self) -> dict[str, str]:
        """What every request to the external core carries: remit's credential."""
        if self.core_banking_token is None:
            return {}
        return {"Authorization": f"Bearer {self.core_banking_token.get_secret_value()}"}


SYSTEM_ROLE = "remit_system"  # made by migration 0010_database_roles


def account_name() -> str:
    """The name of the account this process runs as, from the password database (not the environment)."""
    try:
        return pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        return f"uid-{os.getuid()}"


def owner_url(settings: Settings) -> str:
    """The URL migrations and set-up use: the owner of the schema, not the service role."""
    return settings.migration_database_url or _as_user(settings.database_url, settings.db_owner)


def system_url(settings: Settings) -> str:
    """The URL system-scoped work uses: the role that may see every tenant."""
    return settings.system_database_url or _as_user(settings.database_url, SYSTEM_ROLE)


def _as_user(database_url: str, user: str) -> str:
    return make_url(database_url).set(username=user, password=None).render_as_string(hide_password=False)


@cache
def get_settings() -> Settings:
    return Settings()


def environment_for(settings: Settings, inherited: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of a child process that must run with exactly these settings: this process's own (or
    `inherited`), with the REMIT_ variable of every field set from `settings`, or removed where it is unset."""
    own = {f"REMIT_{name.upper()}": name for name, field in Settings.model_fields.items() if not field.validation_alias}
    env = {k: v for k, v in (os.environ if inherited is None else inherited).items() if k not in own}
    values = settings.model_dump(mode="json")
    for variable, name in own.items():
        if isinstance(secret := getattr(settings, name), SecretStr):
            env[variable] = secret.get_secret_value()  # the JSON dump shows a secret as asterisks
        elif (value := values[name]) is not None:
            env[variable] = value if isinstance(value, str) else json.dumps(value)
    return env
