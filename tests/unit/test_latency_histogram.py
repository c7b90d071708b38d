"""A batch's latencies counted per bucket give the same series as one `observe` per payment."""

import pytest
from hypothesis import given
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry

from app.observability.metrics import LATENCY_BUCKETS, Metrics

# Values on the bucket bounds themselves (a bound is inclusive), around them and far beyond the last one.
latencies = st.one_of(
    st.sampled_from(LATENCY_BUCKETS),
    st.floats(min_value=0.0, max_value=120.0, allow_nan=False, allow_infinity=False),
)


def _latency_samples(registry: CollectorRegistry) -> list[tuple[str, dict[str, str], float]]:
    # Every bucket, the count and the sum; not `_created`, the moment the series was made.
    return [
        (sample.name, sample.labels, sample.value)
        for family in registry.collect()
        if family.name == "remit_publish_to_processed_seconds"
        for sample in family.samples
        if not sample.name.endswith("_created")
    ]


@given(batches=st.lists(st.lists(latencies, max_size=40), max_size=5))
def test_counted_per_bucket_equals_observed_one_by_one(batches: list[list[float]]) -> None:
    one_by_one, per_bucket = CollectorRegistry(), CollectorRegistry()
    observed, counted = Metrics(one_by_one), Metrics(per_bucket)

    for batch in batches:
        for value in batch:
            observed.latency.labels("acme").observe(value)
        counted.observe_latencies("acme", batch)

    counted_samples, observed_samples = _latency_samples(per_bucket), _latency_samples(one_by_one)
    assert [s[:2] for s in counted_samples] == [s[:2] for s in observed_samples]
    # Buckets and count exactly; the sum to rounding (a batch is summed before it is added).
    assert [s[2] for s in counted_samples] == pytest.approx([s[2] for s in observed_samples], rel=1e-12)
    assert [s for s in counted_samples if not s[0].endswith("_sum")] == [
        s for s in observed_samples if not s[0].endswith("_sum")
    ]


def test_a_latency_lands_in_its_bucket_and_the_sum() -> None:
    registry = CollectorRegistry()
    metrics = Metrics(registry)

    metrics.observe_latencies("acme", [0.01, 0.011, 0.011, 61.0])

    def sample(suffix: str, le: str | None = None) -> float | None:
        labels = {"tenant": "acme"} | ({"le": le} if le else {})
        return registry.get_sample_value(f"remit_publish_to_processed_seconds_{suffix}", labels)

    assert sample("bucket", "0.005") == 0
    assert sample("bucket", "0.01") == 1  # a bound is inclusive
    assert sample("bucket", "0.025") == 3
    assert sample("bucket", "60.0") == 3
    assert sample("bucket", "+Inf") == 4
    assert sample("count") == 4
    assert sample("sum") == 0.01 + 0.011 + 0.011 + 61.0
