"""Certificates a test makes for itself with the openssl command (Debian's openssl package): a CA, a server
certificate for 127.0.0.1 and client certificates, for the core bank's mutual TLS."""

import os
import shutil
import ssl
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest


def require_openssl() -> str:
    """The openssl command: skipped locally without it, a failure in CI."""
    found = shutil.which("openssl")
    if found is None:
        message = "the openssl command is not on this machine (Debian: apt-get install openssl)"
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI: {message}", pytrace=False)
        pytest.skip(message)
    return found


def _openssl(*args: str) -> None:
    subprocess.run([require_openssl(), *args], check=True, capture_output=True, timeout=60)


@dataclass(frozen=True)
class Pair:
    cert: Path
    key: Path


@dataclass(frozen=True)
class Authority:
    cert: Path
    key: Path
    folder: Path

    def issue(self, name: str, server: bool = False) -> Pair:
        """A certificate this CA signs: for 127.0.0.1 (a server), or a client's named `name`."""
        key, request, cert = (self.folder / f"{name}.{ext}" for ext in ("key", "csr", "pem"))
        subject = f"/CN={name}"
        _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(request), "-subj", subject)
        extensions = self.folder / f"{name}.ext"
        usage = "serverAuth" if server else "clientAuth"
        extensions.write_text(
            f"extendedKeyUsage={usage}\n" + ("subjectAltName=IP:127.0.0.1,DNS:localhost\n" if server else "")
        )
        _openssl(
            "x509", "-req", "-in", str(request), "-CA", str(self.cert), "-CAkey", str(self.key), "-CAcreateserial",
            "-out", str(cert), "-days", "2", "-sha256", "-extfile", str(extensions),
        )  # fmt: skip
        return Pair(cert, key)


def authority(folder: Path, name: str) -> Authority:
    folder.mkdir(parents=True, exist_ok=True)
    cert, key = folder / f"{name}-ca.pem", folder / f"{name}-ca.key"
    _openssl(
        "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert), "-days", "2",
        "-subj", f"/CN={name} test CA", "-addext", "basicConstraints=critical,CA:TRUE",
        "-addext", "keyUsage=critical,keyCertSign,cRLSign",
    )  # fmt: skip
    return Authority(cert, key, folder)


@dataclass(frozen=True)
class MutualTls:
    """A core's server certificate and client CA, and a client certificate that CA signed."""

    ca: Authority
    server: Pair
    client: Pair

    def client_context(self, client: Pair | None = None) -> ssl.SSLContext:
        """What a client of the core verifies the server with, presenting `client` (default: the one signed)."""
        context = ssl.create_default_context(cafile=str(self.ca.cert))
        presented = client or self.client
        context.load_cert_chain(str(presented.cert), str(presented.key))
        return context

    def core_env(self) -> dict[str, str]:
        return {
            "COREBANK_TLS_CERTFILE": str(self.server.cert),
            "COREBANK_TLS_KEYFILE": str(self.server.key),
            "COREBANK_TLS_CLIENT_CA_FILE": str(self.ca.cert),
        }

    def remit_env(self) -> dict[str, str]:
        return {
            "REMIT_CORE_BANKING_CA_FILE": str(self.ca.cert),
            "REMIT_CORE_BANKING_CLIENT_CERT_FILE": str(self.client.cert),
            "REMIT_CORE_BANKING_CLIENT_KEY_FILE": str(self.client.key),
        }


def mutual_tls(folder: Path) -> MutualTls:
    ca = authority(folder, "core")
    return MutualTls(ca, ca.issue("127.0.0.1", server=True), ca.issue("remit"))
