"""The repositories a unit of work carries, as ports: what each holds and may be asked, never how.

app/storage/repositories/ holds their PostgreSQL implementations (the only SQL of the modules behind them);
tests/fakes/ holds in-memory ones. Each port speaks in the plain records defined beside it.
"""
