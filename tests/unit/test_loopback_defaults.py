"""Reachable services listen on loopback unless told otherwise: the core bank, the admin app, the consumer's HTTP
endpoints (FastStream hands uvicorn no host, so uvicorn's default) and the relay's metrics."""

import inspect

import uvicorn

from app import bootstrap
from app.settings import Settings
from corebank.settings import CoreBankSettings

LOOPBACK = "127.0.0.1"


def test_every_listening_socket_defaults_to_loopback() -> None:
    assert CoreBankSettings().host == LOOPBACK
    assert Settings().admin_host == LOOPBACK
    assert uvicorn.Config(app=lambda *_: None).host == LOOPBACK  # `faststream run app.main:app` without --host
    assert f'start_http_server(settings.relay_metrics_port, addr="{LOOPBACK}")' in inspect.getsource(bootstrap)
