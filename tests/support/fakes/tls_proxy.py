"""An HTTPS proxy on 127.0.0.1 that terminates TLS for chosen hosts and relays them to a local server.

The reference pi has its OAuth endpoints built in (``https://platform.claude.com/...``) but honours
``HTTPS_PROXY`` and ``NODE_EXTRA_CA_CERTS``. This proxy answers ``CONNECT`` for the intercepted host
with a certificate signed by a throw-away CA (made with the ``openssl`` command line) and forwards
the decrypted bytes to a plain-HTTP fake server, so pi's refresh reaches ``tests/support/fakes/oauth_server``.
Any other host is refused, so nothing leaves the machine.
"""

from __future__ import annotations

import contextlib
import socket
import ssl
import subprocess
import threading
from pathlib import Path
from typing import Self


def make_certificates(directory: Path, host: str) -> tuple[Path, Path, Path]:
    """(CA certificate, leaf certificate, leaf key) for ``host``."""
    def run(*args: str) -> None:
        subprocess.run(["openssl", *args], cwd=directory, check=True, capture_output=True)

    run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "1",
        "-subj", "/CN=pi test CA")
    run("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "leaf.key", "-out", "leaf.csr", "-subj", f"/CN={host}")
    kind = "IP" if host.replace(".", "").isdigit() else "DNS"  # clients match an address only to an IP entry
    (directory / "ext.cnf").write_text(f"subjectAltName={kind}:{host}\nbasicConstraints=CA:FALSE\n")
    run("x509", "-req", "-in", "leaf.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
        "-out", "leaf.pem", "-days", "1", "-extfile", "ext.cnf")
    return directory / "ca.pem", directory / "leaf.pem", directory / "leaf.key"


def _pipe(source: socket.socket, target: socket.socket) -> None:
    with contextlib.suppress(OSError):
        while data := source.recv(65536):
            target.sendall(data)
    with contextlib.suppress(OSError):
        target.shutdown(socket.SHUT_WR)


class InterceptingProxy:
    def __init__(self, directory: Path, host: str, upstream_port: int) -> None:
        self.host = host
        self.upstream_port = upstream_port
        self.ca, leaf, key = make_certificates(directory, host)
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.load_cert_chain(leaf, key)
        self.refused: list[str] = []
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}"

    def __enter__(self) -> Self:
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._listener.close()

    def _accept(self) -> None:
        with contextlib.suppress(OSError):
            while True:
                client, _ = self._listener.accept()
                threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = client.recv(4096)
            if not chunk:
                client.close()
                return
            head += chunk
        target = head.split(b" ", 2)[1].decode()
        if not head.startswith(b"CONNECT ") or target != f"{self.host}:443":
            self.refused.append(target)
            client.sendall(b"HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\n\r\n")
            client.close()
            return
        client.sendall(b"HTTP/1.1 200 Connection Established\r\n\r\n")
        try:
            tls = self.context.wrap_socket(client, server_side=True)
        except (ssl.SSLError, OSError):
            client.close()
            return
        upstream = socket.create_connection(("127.0.0.1", self.upstream_port))
        threading.Thread(target=_pipe, args=(upstream, tls), daemon=True).start()
        _pipe(tls, upstream)
