"""remit wire contracts (v1). Pure pydantic models: no I/O, nothing imported from app/."""

from contracts.message import (
    SCHEMA_VERSION,
    Control,
    Envelope,
    Payload,
    PaymentMessage,
    ValidationResult,
    wire_timestamp,
)

__all__ = [
    "SCHEMA_VERSION",
    "Control",
    "Envelope",
    "Payload",
    "PaymentMessage",
    "ValidationResult",
    "wire_timestamp",
]
