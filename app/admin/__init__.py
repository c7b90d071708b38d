"""The admin side: the HTTP API (API keys, dead letters, batch ingress and status) and the DLQ web console."""
