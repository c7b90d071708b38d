"""What a session has set up before its first documented block runs: what a reader would have done by hand
first (a free port, API keys in `$ANZ` and friends, the core bank's own database, a server running), as a
bash prelude run like a block.

Keep these short: everything a user must do to make a documented command work belongs in the document.
"""

from tests.docs.blocks import ROOT, Block, Marker

FREE_PORT = "$(python -c 'import socket; s = socket.socket(); s.bind((\"127.0.0.1\", 0)); print(s.getsockname()[1])')"
COREBANK = f'export COREBANK_DATABASE_URL="${{REMIT_MIGRATION_DATABASE_URL}}_corebank"\nexport CORE_PORT={FREE_PORT}'
ADMIN_PORT = f"export ADMIN_PORT={FREE_PORT}\nexport B=http://127.0.0.1:$ADMIN_PORT"
# the admin API in the background, stopped with the session's other servers (.docs-state/pids)
ADMIN_SERVER = (
    "remit admin --port $ADMIN_PORT > .docs-state/admin.log 2>&1 &\necho $! >> .docs-state/pids\n"
    "docs-wait-http $B/healthz 90"
)


def tenants(*names: str) -> str:
    return "\n".join(f"remit tenants add {name} --name {name} > /dev/null" for name in names)


def keys(**by_variable: str) -> str:
    """`ANZ="anz"` -> `export ANZ=<a new key of tenant anz>`; the tenant `admin` makes an admin key."""
    made = []
    for variable, tenant in by_variable.items():
        who = "--admin" if tenant == "admin" else f"--tenant {tenant}"
        made.append(f"export {variable}=$(remit apikeys create {who} --label docs | grep -o 'rk_[A-Za-z0-9_-]*')")
    return "\n".join(made)


WESTPAC_ROW = "PAY-WBC-DOCS-0001,5000,AUD,032-000,123456789,062-000,987654321"

PRELUDES: dict[str, str] = {
    # the README's "Running it yourself": the consumer's HTTP port, free instead of 8000
    "running": f"export DOCS_PORT={FREE_PORT}",
    # the reference core bank on a database of its own (dropped after the session) and a free port; $CORE and
    # $T as docs/core-banking.md uses them (the transfer is the document's own example, a `file` block)
    "corebank": f'{COREBANK}\nexport CORE=http://127.0.0.1:$CORE_PORT\nexport T="$(cat transfer.json)"',
    "corebank-readme": COREBANK,
    # docs/admin-api.md's session: its tenants and keys; a bank file of its own for anz, one row for westpac
    "api": "\n".join(
        [
            ADMIN_PORT,
            tenants("anz", "westpac", "acme", "initech"),
            keys(ANZ="anz", WBC="westpac", ADM="admin", ACME="acme", INITECH="initech"),
            "cp examples/anz_20250501.csv anz_20251122.csv",
            f"{{ head -1 examples/anz_20250501.csv; echo {WESTPAC_ROW}; }} > westpac.csv",
            "echo ':20:STATEMENT' > statement.txt",
        ]
    ),
    # the same API on what the demo left (its dead letters, its traces)
    "demo-api": "\n".join(
        [
            ADMIN_PORT,
            keys(ANZ="anz", WBC="westpac", ADM="admin"),
            ADMIN_SERVER,
            "export ANZ_DL=$(docs-id dead-letter anz account_closed)",
            "export WBC_DL=$(docs-id dead-letter westpac account_closed)",
        ]
    ),
    # docs/bank-files.md: acme and initech, acme's key, the ABA example under the names the document uses
    "bankfiles": "\n".join(
        [
            ADMIN_PORT,
            tenants("acme", "initech"),
            keys(KEY="acme"),
            ADMIN_SERVER,
            "cp examples/initech_20250501.aba payroll.txt && cp examples/initech_20250501.aba payroll.aba",
            "cp examples/acme_20250501.pain.001.001.09.xml acme.xml",
        ]
    ),
}


def prelude_block(session: str) -> list[Block]:
    text = PRELUDES.get(session)
    if text is None:
        return []
    return [Block(ROOT / "tests/docs/sessions.py", 0, "bash", text + "\n", Marker("run", session))]
