"""Test-only code the service processes run: fault hooks and the entry point that injects them."""
