"""The retention floor: TTL + longest retry delay + replay window."""

import pytest

from app.deadletters.retention import check_retention
from app.errors import RetentionTooShort
from tests.utils.policies import retention_policy


def test_the_default_thirty_days_passes_for_a_one_day_ttl() -> None:
    check_retention(30, 86_400, retention_policy(), "the default")


def test_a_retention_shorter_than_ttl_plus_delay_plus_window_is_refused_with_the_minimum() -> None:
    policy = retention_policy(replay_window_days=7, retry_delays_seconds=(1.0, 5.0, 30.0))
    with pytest.raises(RetentionTooShort, match="at least 9 days"):
        check_retention(8, 86_400, policy, "the default")  # needs 1 day 30 s + 7 days
    check_retention(9, 86_400, policy, "the default")


def test_a_long_tenant_ttl_raises_the_floor() -> None:
    with pytest.raises(RetentionTooShort, match="tenant anz's retention of 30 days"):
        check_retention(30, 30 * 86_400, retention_policy(), "tenant anz's")
