"""Accounting for the local test cluster (local_slurm.py), as the Slinky operator v1.2.1 runs it for
an Accounting: a slurmdbd pod (hostname <name>-accounting-0, slurmdbd.conf, slurm.key and jwt.key
under /etc/slurm, `slurmdbd -D`: the slurmdbd image's entrypoint, SlinkyProject/containers
schedmd/slurm/26.05/ubuntu24.04/Dockerfile at 05efda0, target slurmdbd) in front of a real MariaDB
server, which stands in for the stack's Amazon RDS instance: Debian's mariadb-server 11.8 in the
sid root (tests/slurm/roots/sid.packages).

slurmdbd.conf is the operator's (slinky_conf.Release.slurmdbd_conf); the database is reached as
the Accounting's storageConfig names it (host, port, database, user), its password the one the
test gives the Secret. MariaDB gets the server settings SchedMD asks for where they matter here:
innodb_snapshot_isolation off, which MariaDB 11.6.2 and later turn on and with which slurmdbd
stops at the first conflicting write, and innodb_lock_wait_timeout=900 (SchedMD/slurm
doc/html/accounting.shtml, tag slurm-26-05-3-1). The database exists before slurmdbd first
connects, as RDS creates the instance's DBName: left to create it itself, slurmdbd 26.05.5 with
Debian's libmariadb 11.8.9 reconnects and then fails its first query ("5027 Number of columns in
result (=1) set execeeds maxmimum allowed number of columns (=0)", _check_mysql_concat_is_sane). Its buffer pool stays small: a test's database
holds a few dozen rows, and the machine's memory is shared.

As on RDS (components/accounting_database.py), the server takes connections over TLS only
(require_secure_transport), with a certificate for the storage host signed by a CA the test makes
with openssl, which stands in for the region's RDS CA bundle; the database's master user
(ACCOUNTING_ADMIN_USER) has a password, and the program's own database user Job
(cluster_programs/accounting_database_user.py) is run as that user to make slurmdbd's user, as
`pulumi up` runs it before the release. slurmdbd's pod has the CA where the release's
StorageParameters (SSL_CA=) name it, as the stack mounts its ConfigMap.

Both run in their own UTS and mount namespaces in the root, like every daemon of the cluster, and
are stopped by PID with it."""

from __future__ import annotations

import os
import pathlib
import re
import secrets
import socket
import subprocess
from typing import TYPE_CHECKING, Sequence

from cluster_programs import accounting_database_user
from cluster_programs import accounting_registration as registration
from model.builders.accounting import desired_state, to_json
from model.checks.users import User
from model.facts.contract import ACCOUNTING_ADMIN_USER
from tests.support.slinky_conf import SLURMDBD_PORT

if TYPE_CHECKING:
    from tests.support.local_slurm import Daemon, LocalSlurm

DATADIR = "/var/lib/mysql"
MARIADB_POD = "mariadb-0"
# The data directory in the cluster's directory: its InnoDB *.log files are not logs to show.
DATA = "mariadb"
SOCKET_DIR = "/run/mysqld"
# The server's TLS files in its pod (the cluster directory's TLS_FILES, bind-mounted).
TLS_DIR = "/etc/mysql/slinky-eks-tls"
TLS_FILES = "mariadb-tls"
# The CA alone, for slurmdbd's pod (where its StorageParameters' SSL_CA names it).
CA_FILES = "accounting-ca"
MARIADB_SERVER_OPTIONS = (
    "--innodb-snapshot-isolation=OFF",
    "--innodb-lock-wait-timeout=900",
    "--innodb-buffer-pool-size=32M",
    "--skip-name-resolve",
    "--skip-log-bin",
    "--bind-address=127.0.0.1",
    f"--ssl-ca={TLS_DIR}/ca.pem",
    f"--ssl-cert={TLS_DIR}/server.pem",
    f"--ssl-key={TLS_DIR}/server.key",
    "--require-secure-transport=ON",
)


def make_ca(directory: pathlib.Path, name: str) -> pathlib.Path:
    """A self-signed CA (P-256) in `directory`: <name>.pem and <name>.key; the certificate's path."""
    directory.mkdir(parents=True, exist_ok=True)
    _openssl(
        "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2",
        "-subj", f"/CN={name}", "-keyout", str(directory / f"{name}.key"), "-out", str(directory / f"{name}.pem"),
    )  # fmt: skip
    return directory / f"{name}.pem"


def _openssl(*argv: str) -> None:
    done = subprocess.run(["openssl", *argv], capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        raise RuntimeError(f"openssl {argv[0]} failed: {done.stderr}")


def storage_ca_path(release) -> str | None:
    """The CA file the release's slurmdbd.conf names (StorageParameters=...SSL_CA=<path>), if any."""
    found = re.search(
        r"^StorageParameters=(?:\S*,)?SSL_CA=([^,\s]+)", release.accounting["spec"].get("extraConf", ""), re.M
    )
    return found.group(1) if found else None


def _listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex(("127.0.0.1", port)) == 0


class LocalAccounting:
    """MariaDB and slurmdbd for one LocalSlurm whose release has an Accounting."""

    def __init__(self, cluster: "LocalSlurm"):
        self.cluster = cluster
        self.release = cluster.release
        self.storage = self.release.storage()
        self.password = secrets.token_hex(16)  # slurmdbd's
        self.admin_password = secrets.token_hex(16)  # the master user's
        self.ca: pathlib.Path | None = None
        self.mariadb: Daemon | None = None
        self.slurmdbd: Daemon | None = None

    @property
    def hosts(self) -> list[str]:
        """The names the accounting pods answer to, for every pod's /etc/hosts: the database host,
        slurmdbd's Service (AccountingStorageHost) and its pod (DbdHost)."""
        return [self.storage["host"], self.release.accounting_key, self.release.accounting_host]

    def _mariadb_argv(self, *command: str) -> list[str]:
        mysql = self.cluster._uid("mysql")
        return [
            "sh",
            "-c",
            f'mkdir -p {SOCKET_DIR} && chown {mysql}:{mysql} {SOCKET_DIR} && exec "$@"',
            "mariadb",
            *command,
        ]

    def _tls(self) -> None:
        """The CA, and the server's key and certificate for the storage host (and 127.0.0.1, where
        the test's own clients reach it), readable by the mysql user only."""
        d, mysql = self.cluster.dir, self.cluster._uid("mysql")
        tls = d / TLS_FILES
        self.ca = make_ca(tls, "ca")
        _openssl(
            "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj",
            # The host name goes in subjectAltName, which the clients check; a CN holds at most 64
            # characters (RFC 5280, ub-common-name) and an RDS endpoint may be longer.
            "/CN=accounting-database", "-keyout", str(tls / "server.key"), "-out", str(tls / "server.csr"),
        )  # fmt: skip
        (tls / "server.ext").write_text(f"subjectAltName=DNS:{self.storage['host']},IP:127.0.0.1\n")
        _openssl(
            "x509", "-req", "-in", str(tls / "server.csr"), "-CA", str(self.ca), "-CAkey", str(tls / "ca.key"),
            "-CAcreateserial", "-days", "2", "-extfile", str(tls / "server.ext"), "-out", str(tls / "server.pem"),
        )  # fmt: skip
        for name in ("server.key", "server.pem", "ca.pem"):
            os.chown(tls / name, mysql, mysql)
        (tls / "server.key").chmod(0o600)

    def start(self) -> None:
        c, d = self.cluster, self.cluster.dir
        data, log = d / DATA, d / "log-mariadb"
        for p in (data, log):
            p.mkdir(parents=True, exist_ok=True)
            os.chown(p, c._uid("mysql"), c._uid("mysql"))
        (c.fs / DATADIR.lstrip("/")).mkdir(parents=True, exist_ok=True)
        (c.fs / TLS_DIR.lstrip("/")).mkdir(parents=True, exist_ok=True)
        self._tls()
        # The pod's hostname is its own; the storage host (the RDS address, a DNS name longer than
        # a hostname may be) reaches it through /etc/hosts.
        script = c._mounts(MARIADB_POD, "etc-node", (str(data), DATADIR), str(log), None)
        script += f"\nmount --bind {d / TLS_FILES} {c.fs}{TLS_DIR}"
        init = subprocess.run(
            [
                "unshare",
                "--uts",
                "--mount",
                "--propagation",
                "private",
                "--",
                "sh",
                "-c",
                f"{script}\nexec chroot {c.fs} mariadb-install-db --user=mysql --datadir={DATADIR} "
                "--skip-test-db --auth-root-authentication-method=socket",
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
        if init.returncode != 0:
            raise RuntimeError(f"mariadb-install-db failed:\n{init.stdout}\n{init.stderr}")
        self.mariadb = c._spawn(
            "mariadbd",
            script,
            self._mariadb_argv(
                "mariadbd",
                "--user=mysql",
                f"--datadir={DATADIR}",
                f"--socket={SOCKET_DIR}/mysqld.sock",
                f"--pid-file={SOCKET_DIR}/mysqld.pid",
                f"--port={self.storage['port']}",
                *MARIADB_SERVER_OPTIONS,
            ),
            d / "mariadbd.stdout",
        )
        c._wait_for(
            lambda: _listening(int(self.storage["port"])),
            60,
            "MariaDB to listen",
            lambda: c._exited(self.mariadb),
        )
        # What RDS makes with the instance: the database (DBName) and the master user, who may
        # create users and grant what it has.
        db = self.storage["database"]
        created = c._enter(
            self.mariadb.pid,
            [
                "mariadb",
                f"--socket={SOCKET_DIR}/mysqld.sock",
                "-e",
                f"CREATE DATABASE {db}; "
                f"CREATE USER '{ACCOUNTING_ADMIN_USER}'@'%' IDENTIFIED BY '{self.admin_password}'; "
                f"GRANT ALL ON *.* TO '{ACCOUNTING_ADMIN_USER}'@'%' WITH GRANT OPTION;",
            ],
        )
        if created.returncode != 0:
            raise RuntimeError(f"creating the master user failed: {created.stderr}")
        self.provision_user(self.ca)
        self._write_etc()
        self.slurmdbd = self._spawn_slurmdbd("slurmdbd", self.ca)
        c._wait_for(
            lambda: _listening(SLURMDBD_PORT), 90, "slurmdbd to listen", lambda: c._exited(self.slurmdbd)
        )

    def _spawn_slurmdbd(self, name: str, ca: pathlib.Path) -> "Daemon":
        """slurmdbd as its pod runs it, with `ca` where the release's StorageParameters name the CA
        (the stack's ConfigMap volume: the CA alone, under the file name SSL_CA gives); its
        output in <name>.stdout."""
        c, d = self.cluster, self.cluster.dir
        pod = c._mounts(self.release.accounting_host, "etc-accounting", None, str(d / "log-accounting"), None)
        if (ca_path := storage_ca_path(self.release)) is not None:
            ca_dir = d / f"{CA_FILES}-{name}"
            ca_dir.mkdir(exist_ok=True)
            (ca_dir / pathlib.PurePosixPath(ca_path).name).write_bytes(ca.read_bytes())
            mount_point = str(pathlib.PurePosixPath(ca_path).parent)
            (c.fs / mount_point.lstrip("/")).mkdir(parents=True, exist_ok=True)
            pod += f"\nmount --bind {ca_dir} {c.fs}{mount_point}"
        return c._spawn(
            name,
            pod,
            # As the pod runs it: as the slurm user (accounting_app.go RunAsUser 401), its /run
            # writable (the operator's pidfile volume).
            [
                "sh",
                "-c",
                "chown slurm:slurm /run && "
                "exec setpriv --reuid=slurm --regid=slurm --init-groups slurmdbd -D",
            ],
            d / f"{name}.stdout",
        )

    def slurmdbd_refusal(self, ca: pathlib.Path, timeout: float = 60) -> str:
        """Start a second slurmdbd, the same but for `ca` in place of the one that signed the
        server, and return its first failed connection to the database (it retries, and listens
        only once connected, so it never takes the running one's port); stopped either way."""
        from tests.support.local_slurm import _stop

        c, name = self.cluster, "slurmdbd-other-ca"
        daemon = self._spawn_slurmdbd(name, ca)
        log = c.dir / f"{name}.stdout"
        try:
            c._wait_for(
                lambda: "mysql_real_connect failed" in log.read_text(), timeout, "slurmdbd to fail to connect",
                lambda: c._exited(daemon),
            )  # fmt: skip
            return next(line for line in log.read_text().splitlines() if "mysql_real_connect failed" in line)
        finally:
            _stop(daemon.proc)

    def _write_etc(self) -> None:
        """The slurmdbd pod's /etc/slurm: slurmdbd.conf, slurm.key and jwt.key, the slurm user's,
        mode 0600 (the operator's projected volume: DefaultMode 0600, the pod running as slurm)."""
        c, d = self.cluster, self.cluster.dir
        etc, slurm = d / "etc-accounting", c._uid("slurm")
        (d / "log-accounting").mkdir(parents=True, exist_ok=True)
        os.chown(d / "log-accounting", slurm, slurm)
        etc.mkdir(parents=True, exist_ok=True)
        files = {
            "slurmdbd.conf": self.release.slurmdbd_conf(self.password).encode(),
            "slurm.key": (d / "etc-controller/slurm.key").read_bytes(),
            "jwt.key": (d / "etc-controller/jwt.key").read_bytes(),
        }
        for name, content in files.items():
            (etc / name).write_bytes(content)
            os.chown(etc / name, slurm, slurm)
            (etc / name).chmod(0o600)

    def provision_user(self, ca: pathlib.Path, password: str | None = None) -> None:
        """Run the database user Job's program as the master user, over TLS to 127.0.0.1 verifying
        the server against `ca`: slurmdbd's user, with `password` (its own by default)."""
        accounting_database_user.provision(
            accounting_database_user.Endpoint("127.0.0.1", int(self.storage["port"]), str(ca)),
            (ACCOUNTING_ADMIN_USER, self.admin_password),
            self.storage["database"],
            self.storage["username"],
            password or self.password,
            timeout=30,
            log=lambda line: None,
        )

    def client(self, user: str, password: str, *options: str) -> subprocess.CompletedProcess:
        """`SELECT 1` as `user` by TCP to the server, with the mariadb client's `options`, from the
        database's pod."""
        return self.cluster._enter(
            self.mariadb.pid,
            [
                "mariadb",
                "--host=127.0.0.1",
                f"--port={self.storage['port']}",
                f"--user={user}",
                f"--password={password}",
                *options,
                "-N",
                "-B",
                "-e",
                "SELECT 1",
            ],
        )

    def sql(self, query: str) -> str:
        """A query on the accounting database as MariaDB's root (tab-separated rows)."""
        result = self.cluster._enter(
            self.mariadb.pid,
            [
                "mariadb",
                f"--socket={SOCKET_DIR}/mysqld.sock",
                "-N",
                "-B",
                self.storage["database"],
                "-e",
                query,
            ],
        )
        if result.returncode != 0:
            raise RuntimeError(f"{query}: {result.stderr}")
        return result.stdout

    def stop(self, stop) -> None:
        for daemon in (self.slurmdbd, self.mariadb):
            if daemon is not None:
                stop(daemon.proc)
        self.slurmdbd = self.mariadb = None


def _sacctmgr(slurm: "LocalSlurm"):
    """The registration program's sacctmgr: in the slurmctld pod, as the slurm user."""

    def run(argv: list[str]) -> str:
        result = slurm.run_on_controller([*registration.SACCTMGR, *argv])
        if result.returncode != 0:
            raise registration.RegistrationFailed(
                f"sacctmgr {' '.join(argv)}: {result.stdout}{result.stderr}"
            )
        return result.stdout

    return run


def register_users(slurm: "LocalSlurm", users: Sequence[User]) -> list[list[str]]:
    """The accounting registration of `users` (cluster_programs/accounting_registration.py) run
    against the cluster's sacctmgr as the registration Job runs it; the changes it made."""
    cluster = re.search(r"ClusterName=(\S+)", slurm.release.slurm_conf()).group(1)
    desired = registration.Desired.from_json(to_json(desired_state(users)))
    return registration.register(_sacctmgr(slurm), desired, cluster, timeout=60, log=lambda line: None)
