"""Give slurmdbd its own user on the accounting database: create it when missing, set its password
(a new one rotates it), and grant it everything on slurmdbd's database and nothing else, then
leave. `pulumi up` runs it in-cluster (the database user Job, components/accounting_database.py)
before slurmdbd starts, as the RDS master user over TLS; slurmdbd then connects as this user and
never sees the master password. Every statement is idempotent, so a second run changes nothing
but the password, which it sets to the same value.

The grants are SchedMD's (https://slurm.schedmd.com/accounting.html, "MySQL Configuration", at
SchedMD/slurm doc/html/accounting.shtml, tag slurm-26-05-3-1): `grant all on slurm_acct_db.*` for
the database StorageLoc names; no job completion database, as the stack writes no JobCompType.
`REQUIRE SSL` refuses the user a connection without TLS even if the server's
require_secure_transport were turned off (MariaDB "CREATE USER", TLS options:
https://mariadb.com/kb/en/create-user/#tls-options).

It speaks the MariaDB client/server protocol itself, over the standard library's socket and ssl:
the Job runs on the plain Python image, which has no database client. Only what this needs: the
initial handshake, the switch to TLS (SSLRequest), the `mysql_native_password` authentication the
RDS master user has, and text queries that return OK or an error (MariaDB protocol reference:
https://mariadb.com/kb/en/connection/, https://mariadb.com/kb/en/com_query/,
https://mariadb.com/kb/en/ok_packet/, https://mariadb.com/kb/en/err_packet/). The server's
certificate and name are verified against the CA bundle given (RDS's, for the region).

Standard library only: the Job runs it on a plain Python image.
"""

from __future__ import annotations

import argparse
import hashlib
import re
import socket
import ssl
import sys
import time
from dataclasses import dataclass

# Capability flags (https://mariadb.com/kb/en/connection/#capabilities).
CLIENT_LONG_PASSWORD = 1
CLIENT_PROTOCOL_41 = 0x200
CLIENT_SSL = 0x800
CLIENT_TRANSACTIONS = 0x2000
CLIENT_SECURE_CONNECTION = 0x8000
CLIENT_PLUGIN_AUTH = 0x80000
CLIENT_CAPABILITIES = (
    CLIENT_LONG_PASSWORD
    | CLIENT_PROTOCOL_41
    | CLIENT_SSL
    | CLIENT_TRANSACTIONS
    | CLIENT_SECURE_CONNECTION
    | CLIENT_PLUGIN_AUTH
)
MAX_PACKET = 1 << 24
UTF8MB4 = 45  # utf8mb4_general_ci
NATIVE_PASSWORD = "mysql_native_password"
OK, ERR, AUTH_SWITCH = 0x00, 0xFF, 0xFE
COM_QUERY = 0x03
# Names and passwords go into SQL text: only what needs no quoting (the program draws the
# passwords as letters and digits: components/accounting_database.py PASSWORD_LENGTH).
PLAIN = re.compile(r"[A-Za-z0-9_]+")
POLL_SECONDS = 5.0
CONNECT_SECONDS = 10.0


class DatabaseError(RuntimeError):
    """The server refused something (its error number and message), or the connection failed."""


@dataclass(frozen=True)
class Endpoint:
    host: str
    port: int
    ca_file: str  # PEM bundle of the CAs the server's certificate must chain to


def native_password(password: str, scramble: bytes) -> bytes:
    """mysql_native_password's answer: SHA1(password) XOR SHA1(scramble + SHA1(SHA1(password)))
    (https://mariadb.com/kb/en/connection/#mysql_native_password-plugin)."""
    if not password:
        return b""
    first = hashlib.sha1(password.encode()).digest()
    second = hashlib.sha1(scramble + hashlib.sha1(first).digest()).digest()
    return bytes(a ^ b for a, b in zip(first, second, strict=True))


def _error(payload: bytes) -> DatabaseError:
    """An ERR packet: 0xff, error code (2 bytes), '#' and the SQL state (5), the message."""
    code = int.from_bytes(payload[1:3], "little")
    message = payload[3:]
    if message[:1] == b"#":
        message = message[6:]
    return DatabaseError(f"error {code}: {message.decode(errors='replace')}")


class Connection:
    """One authenticated TLS connection; `query` runs a statement that returns no rows."""

    def __init__(self, endpoint: Endpoint, user: str, password: str):
        raw = socket.create_connection((endpoint.host, endpoint.port), timeout=CONNECT_SECONDS)
        try:
            self._sock: socket.socket = raw
            self._seq = 0
            scramble, plugin = self._server_greeting()
            self._send(
                CLIENT_CAPABILITIES.to_bytes(4, "little")
                + MAX_PACKET.to_bytes(4, "little")
                + bytes([UTF8MB4])
                + bytes(23)
            )
            context = ssl.create_default_context(cafile=endpoint.ca_file)
            self._sock = context.wrap_socket(raw, server_hostname=endpoint.host)
            self._authenticate(user, password, scramble, plugin)
        except BaseException:
            raw.close()
            raise

    def _recv(self, n: int) -> bytes:
        data = b""
        while len(data) < n:
            chunk = self._sock.recv(n - len(data))
            if not chunk:
                raise DatabaseError("the server closed the connection")
            data += chunk
        return data

    def _read(self) -> bytes:
        header = self._recv(4)
        self._seq = (header[3] + 1) % 256
        return self._recv(int.from_bytes(header[:3], "little"))

    def _send(self, payload: bytes) -> None:
        self._sock.sendall(len(payload).to_bytes(3, "little") + bytes([self._seq]) + payload)
        self._seq = (self._seq + 1) % 256

    def _server_greeting(self) -> tuple[bytes, str]:
        """The scramble and authentication plugin of the initial handshake (protocol 10)."""
        p = self._read()
        if p[0] == ERR:
            raise _error(p)
        if p[0] != 10:
            raise DatabaseError(f"unexpected handshake protocol {p[0]}")
        i = p.index(b"\0", 1) + 1 + 4  # server version, connection id
        scramble = p[i : i + 8]
        i += 8 + 1
        capabilities = int.from_bytes(p[i : i + 2], "little")
        i += 2 + 1 + 2  # lower capabilities, then collation and status
        capabilities |= int.from_bytes(p[i : i + 2], "little") << 16
        i += 2
        scramble_length = p[i]
        i += 1 + 10  # reserved, with MariaDB's extended capabilities
        if not capabilities & CLIENT_SSL:
            raise DatabaseError("the server offers no TLS")
        rest = max(13, scramble_length - 8)
        scramble += p[i : i + rest - 1]  # the last byte is a NUL
        i += rest
        plugin = p[i:].split(b"\0", 1)[0].decode() if capabilities & CLIENT_PLUGIN_AUTH else NATIVE_PASSWORD
        return scramble, plugin

    def _authenticate(self, user: str, password: str, scramble: bytes, plugin: str) -> None:
        answer = native_password(password, scramble) if plugin == NATIVE_PASSWORD else b""
        self._send(
            CLIENT_CAPABILITIES.to_bytes(4, "little")
            + MAX_PACKET.to_bytes(4, "little")
            + bytes([UTF8MB4])
            + bytes(23)
            + user.encode()
            + b"\0"
            + bytes([len(answer)])
            + answer
            + NATIVE_PASSWORD.encode()
            + b"\0"
        )
        reply = self._read()
        if reply[0] == AUTH_SWITCH:  # the server asks for another plugin, with a new scramble
            name, _, data = reply[1:].partition(b"\0")
            if name.decode() != NATIVE_PASSWORD:
                raise DatabaseError(f"user {user} authenticates with {name.decode()}, not {NATIVE_PASSWORD}")
            self._send(native_password(password, data.rstrip(b"\0")))
            reply = self._read()
        if reply[0] == ERR:
            raise _error(reply)
        if reply[0] != OK:
            raise DatabaseError(f"unexpected authentication reply 0x{reply[0]:02x}")

    def query(self, statement: str) -> None:
        self._seq = 0
        self._send(bytes([COM_QUERY]) + statement.encode())
        reply = self._read()
        if reply[0] == ERR:
            raise _error(reply)
        if reply[0] != OK:
            raise DatabaseError(f"{statement.split()[0]} returned rows, not OK")

    def close(self) -> None:
        self._sock.close()


def statements(database: str, user: str, password: str) -> list[str]:
    """The SQL that makes `user` exist with `password`, TLS required, with every privilege on
    `database` (SchedMD's grant), whatever it held before."""
    for what, value in (("database", database), ("user", user), ("password", password)):
        if not PLAIN.fullmatch(value):
            raise DatabaseError(f"the {what} must be letters, digits and '_' only")
    account = f"'{user}'@'%'"
    # `_` in a database-level GRANT is a wildcard (MariaDB GRANT, "Database Privileges": "the _ and
    # % wildcards are permitted"; https://mariadb.com/kb/en/grant/#database-privileges): escaped, the
    # grant names this one database and no slurm?acct?db beside it.
    exact = database.replace("_", "\\_")
    return [
        f"CREATE USER IF NOT EXISTS {account} IDENTIFIED BY '{password}' REQUIRE SSL",
        f"ALTER USER {account} IDENTIFIED BY '{password}' REQUIRE SSL",
        f"GRANT ALL PRIVILEGES ON `{exact}`.* TO {account}",
    ]


def provision(
    endpoint: Endpoint,
    admin: tuple[str, str],
    database: str,
    user: str,
    password: str,
    timeout: float,
    log=print,
    clock=time.monotonic,
    sleep=time.sleep,
) -> None:
    """Connect as `admin` (user, password), retrying while the server cannot be reached (its
    DNS name or port not answering yet), and run statements()."""
    todo = statements(database, user, password)
    deadline = clock() + timeout
    while True:
        try:
            connection = Connection(endpoint, *admin)
            break
        except ssl.SSLError as e:  # a certificate that does not verify: retrying will not help
            raise DatabaseError(f"TLS to {endpoint.host}:{endpoint.port}: {e}") from None
        except OSError as e:
            if clock() >= deadline:
                raise DatabaseError(f"after {timeout:.0f} s: {endpoint.host}:{endpoint.port}: {e}") from None
            sleep(POLL_SECONDS)
    try:
        for statement in todo:
            connection.query(statement)
    finally:
        connection.close()
    log(f"database user {user}: every privilege on {database}, TLS required")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="accounting_database_user", description=__doc__.split("\n\n")[0])
    p.add_argument("--host", required=True)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--ca-file", required=True, help="PEM bundle of the server's CAs")
    p.add_argument("--database", required=True, help="slurmdbd's database (StorageLoc)")
    p.add_argument("--user", required=True, help="slurmdbd's user (StorageUser)")
    p.add_argument("--password-file", required=True, help="slurmdbd's password")
    p.add_argument("--admin-user", required=True, help="the master user")
    p.add_argument("--admin-password-file", required=True)
    p.add_argument("--timeout", type=float, required=True)
    args = p.parse_args(argv)
    try:
        with open(args.password_file) as f:
            password = f.read().strip()
        with open(args.admin_password_file) as f:
            admin_password = f.read().strip()
        provision(
            Endpoint(args.host, args.port, args.ca_file),
            (args.admin_user, admin_password),
            args.database,
            args.user,
            password,
            args.timeout,
        )
    except (DatabaseError, OSError) as e:
        print(f"FAILED: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
