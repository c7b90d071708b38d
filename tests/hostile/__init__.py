"""Hostile tenants: each attack on the real broker and database, as a tenant that publishes for itself."""
