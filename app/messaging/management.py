"""The RabbitMQ management API: vhosts, users and permissions (demo environments and provisioning), and
queue depths and rates."""

import re
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

import httpx

from app.errors import ServiceUnavailable

CONNECTION_STATS_LAG_SECONDS = 15.0
_STATS_COLUMNS = (
    "name,messages_ready,messages_unacknowledged,consumers,head_message_timestamp,"
    "message_stats.publish_details.rate,message_stats.deliver_get_details.rate"
)


@dataclass(frozen=True, slots=True)
class QueueStats:
    """One queue as the management API last saw it. Its statistics are emitted every 5 s by default, so
    depths lag by up to that much; rates are messages per second over the last such interval.
    `head_timestamp` is the head message's `timestamp` property (epoch seconds): classic queues only, quorum
    queues do not report it (3.10, and rabbitmq-server#6813 is still open)."""

    name: str
    ready: int
    unacknowledged: int
    consumers: int
    publish_rate: float
    deliver_rate: float
    head_timestamp: int | None

    @classmethod
    def of(cls, raw: Mapping[str, Any]) -> "QueueStats":
        stats = raw.get("message_stats") or {}
        head = raw.get("head_message_timestamp")
        return cls(
            name=raw["name"],
            ready=int(raw.get("messages_ready") or 0),
            unacknowledged=int(raw.get("messages_unacknowledged") or 0),
            consumers=int(raw.get("consumers") or 0),
            publish_rate=float((stats.get("publish_details") or {}).get("rate") or 0.0),
            deliver_rate=float((stats.get("deliver_get_details") or {}).get("rate") or 0.0),
            head_timestamp=int(head) if isinstance(head, int | float) else None,
        )


class Management:
    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        self._auth = (parts.username or "guest", parts.password or "guest")
        netloc = f"{parts.hostname}:{parts.port}" if parts.port else str(parts.hostname)
        self._base = urlunsplit((parts.scheme, netloc, "", "", ""))
        self._reader: httpx.Client | None = None
        self._reader_lock = threading.Lock()

    def _client(self) -> httpx.Client:
        return httpx.Client(base_url=self._base, auth=self._auth, timeout=30)

    def _get(self, path: str, params: Mapping[str, str]) -> httpx.Response:
        """A GET on one client kept open: queue figures are read every few seconds, while payments flow, and a
        new client each time built a TLS context (the CA bundle parsed, under the GIL) and a connection. httpx's
        Client may be shared between threads (its docstring): the console's reads and the gauges' share it."""
        with self._reader_lock:
            if self._reader is None:
                self._reader = self._client()
            reader = self._reader
        return reader.get(path, params=params)

    def close(self) -> None:
        with self._reader_lock:
            if self._reader is not None:
                self._reader.close()
                self._reader = None

    def provision_publisher(self, vhost: str, user: str, password: str, exchange: str, key_pattern: str) -> None:
        """Create or update a publishing-only user: write on `exchange` with routing keys matching the pattern."""
        self.set_password(user, password)
        self.grant_publisher(vhost, user, exchange, key_pattern)

    def set_password(self, user: str, password: str) -> None:
        """Create the user, or give it a new password: logins with the old one are refused from now on, but
        connections already open stay open (`close_connections`)."""
        with self._errors(), self._client() as client:
            client.put(f"/api/users/{quote(user, safe='')}", json={"password": password, "tags": ""}).raise_for_status()

    def close_connections(self, user: str, vhost: str | None = None) -> None:
        """Close the user's open connections: all of them, or only those to `vhost`."""
        u = quote(user, safe="")
        with self._errors(), self._client() as client:
            if vhost is not None and self._connections(client, u, vhost) != self._connections(client, u, None):
                self._close_one_by_one(client, u, vhost)  # the user's connections to other vhosts stay open
            else:
                client.delete(f"/api/connections/username/{u}").raise_for_status()

    @staticmethod
    def _connections(client: httpx.Client, quoted_user: str, vhost: str | None) -> list[str]:
        listed = client.get(f"/api/connections/username/{quoted_user}")
        found = listed.json() if listed.status_code == 200 else []
        return [c["name"] for c in found if vhost is None or c.get("vhost") == vhost]

    def _close_one_by_one(self, client: httpx.Client, quoted_user: str, vhost: str) -> None:
        """The API closes a connection by name only once its statistics know it (they are emitted every 5 s
        by default) and answers 404 until then; closing all of a user's connections has no such lag."""
        deadline = time.monotonic() + CONNECTION_STATS_LAG_SECONDS
        while names := self._connections(client, quoted_user, vhost):
            for name in names:
                client.delete(f"/api/connections/{quote(name, safe='')}")
            if time.monotonic() > deadline:
                raise ServiceUnavailable(f"RabbitMQ did not close {len(names)} connection(s) of a user in {vhost!r}")
            time.sleep(0.5)

    def delete_user(self, user: str) -> bool:
        """Delete the user and close its connections; False when there was no such user."""
        with self._errors(), self._client() as client:
            response = client.delete(f"/api/users/{quote(user, safe='')}")
            if response.status_code != 404:
                response.raise_for_status()
        self.close_connections(user)  # no new login can start now; end the ones already open
        return response.status_code != 404

    def vhosts_of(self, user: str) -> set[str]:
        """The vhosts in which the user has rights (none for an unknown user)."""
        with self._errors(), self._client() as client:
            response = client.get(f"/api/users/{quote(user, safe='')}/permissions")
        return {p["vhost"] for p in response.json()} if response.status_code == 200 else set()

    def retire_user(self, vhost: str, user: str) -> bool:
        """Take the user's rights in `vhost` and close its connections there; then delete the user if no vhost
        is left where it has rights (True). A user that other vhosts still use keeps its rights there (False)."""
        self.revoke_publisher(vhost, user)
        return not self.vhosts_of(user) and self.delete_user(user)

    def grant_publisher(self, vhost: str, user: str, exchange: str, key_pattern: str) -> None:
        """Give an existing publisher back its rights (after a suspension), leaving its password alone."""
        v, u = quote(vhost, safe=""), quote(user, safe="")
        with self._errors(), self._client() as client:
            rights = {"configure": "^$", "write": f"^{re.escape(exchange)}$", "read": "^$"}
            client.put(f"/api/permissions/{v}/{u}", json=rights).raise_for_status()
            topic = {"exchange": exchange, "write": key_pattern, "read": "^$"}
            client.put(f"/api/topic-permissions/{v}/{u}", json=topic).raise_for_status()

    def queue_depths(self, vhost: str, names: list[str] | None) -> dict[str, dict[str, int]]:
        """messages, ready, unacknowledged and consumers per queue (all queues when names is None)."""
        v = quote(vhost, safe="")
        columns = "name,messages,messages_ready,messages_unacknowledged,consumers"
        with self._errors():
            queues = self._get(f"/api/queues/{v}", {"columns": columns}).json()
        wanted = set(names) if names is not None else {q["name"] for q in queues}
        return {
            q["name"]: {
                k: int(q.get(k) or 0) for k in ("messages", "messages_ready", "messages_unacknowledged", "consumers")
            }
            for q in queues
            if q["name"] in wanted
        }

    def queue_stats(self, vhost: str) -> list[QueueStats]:
        """Every queue of the vhost with its depths, consumers, rates and (classic queues) head timestamp."""
        with self._errors():
            response = self._get(f"/api/queues/{quote(vhost, safe='')}", {"columns": _STATS_COLUMNS})
            response.raise_for_status()
        return [QueueStats.of(q) for q in response.json()]

    def revoke_publisher(self, vhost: str, user: str) -> None:
        """Take every right in `vhost` away (the user stays, so it can be restored) and close its connections
        to that vhost: channels already open would keep the rights RabbitMQ cached for them."""
        v, u = quote(vhost, safe=""), quote(user, safe="")
        with self._errors(), self._client() as client:
            client.delete(f"/api/permissions/{v}/{u}")
            client.delete(f"/api/topic-permissions/{v}/{u}")
        self.close_connections(user, vhost)

    def user_exists(self, user: str) -> bool:
        with self._errors(), self._client() as client:
            return self._exists(client, quote(user, safe=""))

    @staticmethod
    def _exists(client: httpx.Client, quoted_user: str) -> bool:
        return client.get(f"/api/users/{quoted_user}").status_code == 200

    @contextmanager
    def _errors(self) -> Iterator[None]:
        try:
            yield
        except httpx.HTTPError as exc:
            raise ServiceUnavailable(
                f"RabbitMQ management API at {self._base} failed ({exc}). "
                "Enable it: rabbitmq-plugins enable rabbitmq_management"
            ) from exc

    def reset_vhost(self, vhost: str, user: str) -> None:
        """Delete the vhost with everything in it, create it empty and give `user` full rights."""
        name = quote(vhost, safe="")
        with self._errors(), self._client() as client:
            client.delete(f"/api/vhosts/{name}")
            client.put(f"/api/vhosts/{name}").raise_for_status()
            rights = {"configure": ".*", "write": ".*", "read": ".*"}
            client.put(f"/api/permissions/{name}/{quote(user, safe='')}", json=rights).raise_for_status()
