"""Nightly reconciliation: snapshot the payment tables, classify every message, report per batch.

This package reads data (PostgreSQL tables, Parquet snapshots); it never imports from app/.
"""
