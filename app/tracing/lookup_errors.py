"""Errors of a payment lookup; the message says how to ask instead."""

from app.errors import Conflict, NotFound


class PaymentNotFound(NotFound):
    """Nothing matches within the caller's tenant (another tenant's payment reads like a missing one)."""


class AmbiguousPayment(Conflict):
    """The identifier names more than one payment: a reference reused by a direct publisher, or the same
    message_id or reference in several tenants (an operator without --tenant)."""
