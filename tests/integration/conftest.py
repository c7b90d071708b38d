"""Integration tests: real RabbitMQ and PostgreSQL (fixtures in tests/conftest.py)."""

import pytest

pytestmark = pytest.mark.integration
