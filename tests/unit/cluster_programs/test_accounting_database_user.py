"""The database user program (cluster_programs/accounting_database_user.py) apart from a server: the
password answer, the SQL it runs, how it waits and how it fails. Against a real MariaDB over TLS:
tests/slurm/test_accounting.py."""

import hashlib

import pytest

from cluster_programs import accounting_database_user as program


def test_the_native_password_answer_passes_the_servers_check():
    # The server keeps SHA1(SHA1(password)) (what PASSWORD() shows after the '*') and checks that
    # SHA1(answer XOR SHA1(scramble + stored)) is that same value.
    scramble = bytes(range(20))
    stored = hashlib.sha1(hashlib.sha1(b"s3cret").digest()).digest()
    answer = program.native_password("s3cret", scramble)
    mask = hashlib.sha1(scramble + stored).digest()
    assert hashlib.sha1(bytes(a ^ b for a, b in zip(answer, mask, strict=True))).digest() == stored
    wrong = program.native_password("s3cres", scramble)
    assert hashlib.sha1(bytes(a ^ b for a, b in zip(wrong, mask, strict=True))).digest() != stored


def test_an_empty_password_answers_nothing():
    assert program.native_password("", bytes(20)) == b""


def test_the_statements_make_the_user_require_tls_and_grant_all_on_its_database_only():
    assert program.statements("slurm_acct_db", "slurmdbd", "Abc123") == [
        "CREATE USER IF NOT EXISTS 'slurmdbd'@'%' IDENTIFIED BY 'Abc123' REQUIRE SSL",
        "ALTER USER 'slurmdbd'@'%' IDENTIFIED BY 'Abc123' REQUIRE SSL",
        # The database's `_`s escaped: unescaped, each matches any one character.
        "GRANT ALL PRIVILEGES ON `slurm\\_acct\\_db`.* TO 'slurmdbd'@'%'",
    ]


@pytest.mark.parametrize(
    "database,user,password,what",
    [
        ("slurm_acct_db", "slurmdbd", "a'b", "password"),
        ("slurm_acct_db", "x'@'%", "Abc", "user"),
        ("db`; DROP", "slurmdbd", "Abc", "database"),
        ("slurm_acct_db", "slurmdbd", "", "password"),
    ],
)
def test_a_value_that_would_need_quoting_is_refused_naming_it(database, user, password, what):
    with pytest.raises(program.DatabaseError, match=f"the {what} must be letters, digits and '_' only"):
        program.statements(database, user, password)


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_an_unreachable_server_is_retried_until_the_timeout_then_named(monkeypatch):
    attempts = []

    def refuse(endpoint, user, password):
        attempts.append(user)
        raise ConnectionRefusedError(111, "Connection refused")

    monkeypatch.setattr(program, "Connection", refuse)
    clock = Clock()
    with pytest.raises(program.DatabaseError, match=r"after 12 s: db.example:3306: .*Connection refused"):
        program.provision(
            program.Endpoint("db.example", 3306, "/ca.pem"),
            ("slurm", "Admin1"),
            "slurm_acct_db",
            "slurmdbd",
            "Pw1",
            timeout=12,
            clock=clock,
            sleep=clock.sleep,
        )
    assert len(attempts) == 4  # at 0, 5, 10 and 15 s


def test_a_certificate_that_does_not_verify_is_not_retried(monkeypatch):
    import ssl

    attempts = []

    def untrusted(endpoint, user, password):
        attempts.append(user)
        raise ssl.SSLCertVerificationError("certificate verify failed: self-signed certificate")

    monkeypatch.setattr(program, "Connection", untrusted)
    clock = Clock()
    with pytest.raises(program.DatabaseError, match="TLS to db.example:3306: .*certificate verify failed"):
        program.provision(
            program.Endpoint("db.example", 3306, "/ca.pem"),
            ("slurm", "A1"),
            "d",
            "u",
            "P1",
            timeout=60,
            clock=clock,
            sleep=clock.sleep,
        )
    assert attempts == ["slurm"]


def test_a_missing_password_file_fails_with_one_line_and_a_non_zero_exit(tmp_path, capsys):
    code = program.main(
        [
            "--host=db.example",
            "--port=3306",
            f"--ca-file={tmp_path}/ca.pem",
            "--database=slurm_acct_db",
            "--user=slurmdbd",
            f"--password-file={tmp_path}/missing",
            "--admin-user=slurm",
            f"--admin-password-file={tmp_path}/missing-too",
            "--timeout=1",
        ]
    )
    err = capsys.readouterr().err
    assert code == 1 and err.startswith("FAILED: ") and err.count("\n") == 1 and "missing" in err
