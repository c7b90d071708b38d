"""How remit's HTTP client to an external core does TLS: the core's certificate verified (with
REMIT_CORE_BANKING_CA_FILE, else the default trust store), and remit's own client certificate presented where
the core requires mutual TLS (docs/core-banking.md, "Authentication")."""

import ssl

from app.settings import Settings


def core_tls(settings: Settings) -> ssl.SSLContext | bool:
    """httpx's `verify`: True (its defaults) unless a CA file or a client certificate is configured."""
    if settings.core_banking_ca_file is None and settings.core_banking_client_cert_file is None:
        return True
    context = ssl.create_default_context(cafile=settings.core_banking_ca_file)
    if settings.core_banking_client_cert_file is not None:
        context.load_cert_chain(settings.core_banking_client_cert_file, settings.core_banking_client_key_file)
    return context
