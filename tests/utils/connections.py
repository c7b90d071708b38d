"""remit's AMQP connections as the broker sees them (management API): a connection that closed and came back is
a new one, with a new `connected_at`."""

import time
from urllib.parse import quote

import httpx

from tests.utils.services import MANAGEMENT_AUTH, MANAGEMENT_URL

Snapshot = dict[str, int]  # connection_name -> connected_at (ms)


def service_connections(vhost: str, prefix: str, at_least: int, within: float = 30.0) -> Snapshot:
    """The vhost's connections whose client named them `prefix...`, once at least `at_least` are listed (the
    management API lists a connection only after its first statistics event)."""
    deadline = time.monotonic() + within
    with httpx.Client(base_url=MANAGEMENT_URL, auth=MANAGEMENT_AUTH, timeout=10) as client:
        while True:
            listed = client.get(f"/api/vhosts/{quote(vhost, safe='')}/connections")
            listed.raise_for_status()
            found = {
                str(c["client_properties"].get("connection_name")): int(c["connected_at"])
                for c in listed.json()
                if str(c.get("client_properties", {}).get("connection_name", "")).startswith(prefix)
            }
            if len(found) >= at_least or time.monotonic() > deadline:
                return found
            time.sleep(0.5)
