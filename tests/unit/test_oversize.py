"""A message over the tenant's size limit is rejected with its size and the limit, not accepted."""

from app.publisher.accept import _reject_oversize
from app.publisher.validation import ValidatedBatch
from tests.utils.factories import make_message


def test_oversize_messages_move_to_the_rejections_with_the_reason() -> None:
    small, big = make_message(payment_reference="A1"), make_message(payment_reference="B" * 35)
    limit = len(small.to_wire()) + 5
    batch = ValidatedBatch(accepted=[small, big], row_numbers=[2, 3])
    _reject_oversize(batch, limit)
    assert batch.accepted == [small]
    assert batch.row_numbers == [2]
    [rejection] = batch.rejected
    assert rejection.row_number == 3
    assert rejection.errors == [f"the message is {len(big.to_wire())} bytes, over the tenant's limit of {limit}"]
