"""The DLQ web console: server-rendered pages under /console, logged in with an API key."""
