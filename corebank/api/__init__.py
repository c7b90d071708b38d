"""The core's HTTP API (FastAPI): routes, the error shape, and the fault-injection wrapper."""
