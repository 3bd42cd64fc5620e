"""The test PostgreSQL starts from a venv under a 0700 folder (as /root or a fresh $HOME is).

As root the server runs as a system user who cannot enter such a folder, so
tests/support/pg_server.py copies the binaries out; the copy must bring the libraries
they load (initdb failed: "error while loading shared libraries: libpq...").
The wheel's tree is copied under a fresh 0700 folder here and the server
started from it, as the README's test command does from a fresh clone.
"""

from __future__ import annotations

import os
import shutil

import pytest

import pg_server as pg


def test_a_server_starts_from_binaries_under_a_private_folder(tmp_path, monkeypatch):
    try:
        wheel = pg._wheel_install()
    except pg.NoServer as exc:
        pytest.skip(str(exc))
    private = tmp_path / "home"
    private.mkdir(mode=0o700)
    os.chmod(private, 0o700)
    site = private / "site-packages"
    shutil.copytree(wheel.parent, site / wheel.parent.name, symlinks=True)
    for libs in wheel.parent.parent.glob(f"{wheel.parent.name}*.libs"):
        shutil.copytree(libs, site / libs.name, symlinks=True)
    monkeypatch.setenv("ARCANA_TEST_PG_BIN", str(site / wheel.parent.name / wheel.name / "bin"))
    server = pg.start_server()
    try:
        assert server.psql("SELECT extname FROM pg_extension WHERE extname = 'vector'") == "vector"
        if os.geteuid() == 0:  # the system user could not enter the folder: a reachable copy ran instead
            assert not str(server.bin).startswith(str(private))
    finally:
        pg.remove(server)
