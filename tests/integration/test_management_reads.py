"""The management API's queue figures, read every few seconds while payments flow, on the real broker."""

import httpx
import pytest

from tests.utils.services import management


def test_queue_figures_are_read_on_one_kept_client(vhost: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A client per read parsed the CA bundle (a TLS context) and opened a connection each time, under the GIL of
    the consumer whose payments it shares the process with."""
    built: list[httpx.Client] = []
    real_init = httpx.Client.__init__

    def counting_init(self: httpx.Client, *args: object, **kwargs: object) -> None:
        built.append(self)
        real_init(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(httpx.Client, "__init__", counting_init)
    api = management()
    try:
        for _ in range(3):
            api.queue_stats(vhost)
            api.queue_depths(vhost, None)
        assert len(built) == 1
    finally:
        api.close()


def test_a_closed_reader_is_built_again(vhost: str) -> None:
    api = management()
    api.queue_stats(vhost)
    api.close()
    assert api.queue_depths(vhost, None) == {}
    api.close()
