"""A real PostgreSQL server in a temporary directory for tests and benchmarks: initdb, pg_ctl, a random port.

The distribution's server binaries (Debian: the `postgresql` package; scripts/
bootstrap.sh installs it). PostgreSQL refuses to run as root, so as root the
cluster belongs to the `postgres` system user the package creates (else
`nobody`) and the server runs through `runuser`; the unix socket sits in the
temporary directory and TCP listens on 127.0.0.1 only, with password
authentication so URLs carry a real password.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

SUPERUSER = "orion_test"
PASSWORD = "s3cret-pw"


def find_bin_dir() -> Path | None:
    """The directory holding initdb / pg_ctl / postgres, or None when PostgreSQL is not installed."""
    for name in ("pg_ctl",):
        found = shutil.which(name)
        if found and Path(found).resolve().parent.joinpath("initdb").exists():
            return Path(found).resolve().parent
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"), key=lambda p: int(p.split("/")[4]), reverse=True)
    return Path(candidates[0]).parent if candidates else None


def find_runuser() -> str:
    """runuser's path: it lives in /usr/sbin, which a non-login root shell or a CI step may leave off PATH."""
    search = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin", "/usr/bin", "/bin"])
    found = shutil.which("runuser", path=search)
    if found is None:
        raise RuntimeError("runuser (util-linux) is needed to run PostgreSQL as root, and is not in PATH or /usr/sbin")
    return found


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PgServer:
    """One throwaway cluster. `url(db)` gives a postgresql:// URL with the password; `create_database()` a fresh db."""

    def __init__(self, base: Path | None = None, *, durable: bool = False) -> None:
        bin_dir = find_bin_dir()
        if bin_dir is None:
            raise RuntimeError("PostgreSQL is not installed (apt-get install postgresql; scripts/bootstrap.sh does it)")
        self.bin = bin_dir
        runuser = find_runuser() if os.geteuid() == 0 else ""  # before the directory: a refusal leaves nothing behind
        self.root = Path(tempfile.mkdtemp(prefix="orion-pg-", dir=base))
        self.data = self.root / "data"
        self.sock = self.root / "sock"
        self.log = self.root / "server.log"
        self.port = _free_port()
        self._runas: list[str] = []
        self._db_count = 0
        if os.geteuid() == 0:
            user = "postgres"
            try:
                pw = pwd.getpwnam(user)
            except KeyError:
                user, pw = "nobody", pwd.getpwnam("nobody")
            os.chown(self.root, pw.pw_uid, pw.pw_gid)
            self._runas = [runuser, "-u", user, "--"]
        self.sock.mkdir()
        if self._runas:
            shutil.chown(self.sock, pwd.getpwnam(self._runas[2]).pw_uid)
        pwfile = self.root / "pw"
        pwfile.write_text(PASSWORD + "\n")
        if self._runas:
            shutil.chown(pwfile, pwd.getpwnam(self._runas[2]).pw_uid)
        self._run([str(self.bin / "initdb"), "-D", str(self.data), "-U", SUPERUSER, "--pwfile", str(pwfile),
                   "-A", "scram-sha-256", "-E", "UTF8", "--locale=C.UTF-8", "--no-sync"])
        pwfile.unlink()
        with (self.data / "postgresql.conf").open("a") as fh:
            fh.write(f"\nport = {self.port}\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = '{self.sock}'\n"
                     "max_connections = 200\nshared_buffers = 128MB\n")
            # Tests trade durability for speed; a benchmark keeps PostgreSQL's defaults (fsync per commit).
            if not durable:
                fh.write("fsync = off\nsynchronous_commit = off\nfull_page_writes = off\n")
        self.start()

    def _run(self, argv: list[str], check: bool = True) -> subprocess.CompletedProcess:
        return subprocess.run(self._runas + argv, check=check, capture_output=True, text=True, timeout=120)

    def start(self) -> None:
        self._run([str(self.bin / "pg_ctl"), "-D", str(self.data), "-l", str(self.log), "-w", "-t", "60", "start"])

    def stop(self, mode: str = "fast") -> None:
        self._run([str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", mode, "-w", "-t", "60", "stop"], check=False)

    def url(self, database: str = "postgres", *, user: str = SUPERUSER, password: str = PASSWORD) -> str:
        return f"postgresql://{user}:{password}@127.0.0.1:{self.port}/{database}"

    def create_database(self, prefix: str = "t") -> str:
        """A new empty database's URL."""
        import psycopg

        self._db_count += 1
        name = f"{prefix}_{os.getpid()}_{self._db_count}"
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def destroy(self) -> None:
        self.stop("immediate")
        shutil.rmtree(self.root, ignore_errors=True)
