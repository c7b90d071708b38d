"""The RabbitMQ management API: vhosts and permissions (demo environments and provisioning)."""

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

    def reset_vhost(self, vhost: str, user: str) -> None:
        """Delete the vhost with everything in it, create it empty and give `user` full rights."""
        name = quote(vhost, safe="")
        try:
            with self._client() as client:
                client.delete(f"/api/vhosts/{name}")
                client.put(f"/api/vhosts/{name}").raise_for_status()
                rights = {"configure": ".*", "write": ".*", "read": ".*"}
                client.put(f"/api/permissions/{name}/{quote(user, safe='')}", json=rights).raise_for_status()
        except httpx.HTTPError as exc:
            raise ServiceUnavailable(
                f"RabbitMQ management API at {self._base} failed ({exc}). "
                "Enable it: rabbitmq-plugins enable rabbitmq_management"
            ) from exc
