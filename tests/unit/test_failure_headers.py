"""What the consumer writes when it retries or dead-letters a delivery: who published it and whose it is,
and a direct publisher's own remit-* headers only as claims. Error text is masked before it is cut."""

from app.consumer.delivery import Delivery
from app.consumer.failures import Origin, dead_letter_headers, error_text
from app.errors import RetryableError
from app.messaging import headers
from app.tenancy.identity import PublisherIdentity

SERVICE = "remit-service"
identity = PublisherIdentity(frozenset({SERVICE}), "prod")
FORGED = {headers.REASON: "retries_exhausted", headers.ATTEMPTS: 4, headers.REPLAY_OF: 7}
VERDICT = {headers.REASON: "tenant_mismatch", headers.ATTEMPTS: 1}


def delivery(user_id: str | None, extra: dict[str, object], routing_key: str = "anz.payment") -> Delivery:
    message_headers = {headers.TENANT: "westpac", "x-trace": "t-1", **extra}
    return Delivery(b"{}", "payments.work.basic", message_headers, user_id=user_id, routing_key=routing_key)


def test_a_tenants_own_remit_headers_move_under_claims_and_identity_is_written() -> None:
    d = delivery("tenant-anz@prod", FORGED)
    origin = Origin.of(d, identity)
    assert (origin.published_by, origin.tenant, origin.trusted) == ("tenant-anz@prod", "anz", False)
    written = dead_letter_headers(d, origin, VERDICT)
    assert written == {
        headers.TENANT: "westpac",
        "x-trace": "t-1",
        headers.CLAIMS: FORGED,
        **VERDICT,
        headers.PUBLISHED_BY: "tenant-anz@prod",
        headers.IDENTITY_TENANT: "anz",
        headers.ORIGINAL_QUEUE: "payments.work.basic",
    }


def test_without_user_id_nobody_published_it_and_the_routing_key_names_the_tenant() -> None:
    d = delivery(None, {headers.PUBLISHED_BY: "tenant-westpac@prod"})
    origin = Origin.of(d, identity)
    assert (origin.published_by, origin.tenant) == (None, "anz")
    written = dead_letter_headers(d, origin, VERDICT)
    assert headers.PUBLISHED_BY not in written
    assert written[headers.CLAIMS] == {headers.PUBLISHED_BY: "tenant-westpac@prod"}


def test_a_retry_we_published_keeps_the_first_publisher_and_our_headers() -> None:
    ours = {headers.PUBLISHED_BY: "tenant-anz@prod", headers.IDENTITY_TENANT: "anz", headers.REPLAY_OF: 7}
    d = delivery(SERVICE, {**ours, headers.TENANT: "anz"}, routing_key="anz.payment")
    origin = Origin.of(d, identity)
    assert (origin.published_by, origin.tenant, origin.trusted) == ("tenant-anz@prod", "anz", True)
    # remit-replay-of goes round the delay queues with the retry: a replay failing late is still a new dead letter.
    assert origin.headers() == {
        headers.PUBLISHED_BY: "tenant-anz@prod",
        headers.IDENTITY_TENANT: "anz",
        headers.REPLAY_OF: 7,
    }
    written = dead_letter_headers(d, origin, VERDICT)
    assert headers.CLAIMS not in written
    assert written[headers.REPLAY_OF] == 7


def test_error_text_is_masked_before_it_is_cut() -> None:
    # The cut at 2,000 characters falls inside the account number: cut first, "900000" would be left bare.
    text = error_text(RetryableError("x" * 1985 + " 033-001 900000123 and more"))
    assert len(text) == 2000
    assert text.endswith(" 033-001 ******")
