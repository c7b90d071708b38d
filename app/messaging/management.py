"""The RabbitMQ management API: vhosts and permissions (demo environments and provisioning)."""

import re
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import quote, urlsplit, urlunsplit

import httpx

from app.errors import ServiceUnavailable


class Management:
    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        self._auth = (parts.username or "guest", parts.password or "guest")
        netloc = f"{parts.hostname}:{parts.port}" if parts.port else str(parts.hostname)
        self._base = urlunsplit((parts.scheme, netloc, "", "", ""))

    def _client(self) -> httpx.Client:
        return httpx.Client(base_url=self._base, auth=self._auth, timeout=30)

    def provision_publisher(self, vhost: str, user: str, password: str, exchange: str, key_pattern: str) -> None:
        """Create or update a publishing-only user: write on `exchange` with routing keys matching the pattern."""
        v, u = quote(vhost, safe=""), quote(user, safe="")
        with self._errors(), self._client() as client:
            client.put(f"/api/users/{u}", json={"password": password, "tags": ""}).raise_for_status()
            rights = {"configure": "^$", "write": f"^{re.escape(exchange)}$", "read": "^$"}
            client.put(f"/api/permissions/{v}/{u}", json=rights).raise_for_status()
            topic = {"exchange": exchange, "write": key_pattern, "read": "^$"}
            client.put(f"/api/topic-permissions/{v}/{u}", json=topic).raise_for_status()

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
        with self._errors(), self._client() as client:
            queues = client.get(f"/api/queues/{v}", params={"columns": columns}).json()
        wanted = set(names) if names is not None else {q["name"] for q in queues}
        return {
            q["name"]: {
                k: int(q.get(k) or 0) for k in ("messages", "messages_ready", "messages_unacknowledged", "consumers")
            }
            for q in queues
            if q["name"] in wanted
        }

    def revoke_publisher(self, vhost: str, user: str) -> None:
        """Take every right away (the user stays, so it can be restored) and close its connections."""
        v, u = quote(vhost, safe=""), quote(user, safe="")
        with self._errors(), self._client() as client:
            client.delete(f"/api/permissions/{v}/{u}")
            client.delete(f"/api/topic-permissions/{v}/{u}")
            for conn in client.get(f"/api/connections/username/{u}").json() if self._exists(client, u) else []:
                client.delete(f"/api/connections/{quote(conn['name'], safe='')}")

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
