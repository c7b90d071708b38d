"""A reference core-banking service: a separate system that remit talks to over HTTP.

It stands for another vendor's core: its own process, its own PostgreSQL database and schema history, and
nothing imported from remit (app/, contracts/, reconciliation/). `python -m corebank --help`; the HTTP
contract is docs/core-banking.md.
"""
