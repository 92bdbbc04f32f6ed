"""Receipt key hygiene: a key file its group or others may read is refused (by
``load_signing_key`` and so by ``relay serve``, naming the file and ``chmod 600``), as ssh
refuses such keys; a key relay writes is its owner's alone, whatever the umask."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from relay.receipts.keys import ReceiptKeyError, load_signing_key, write_signing_key
from relay.testing import FakeSlack
from tests.server_env import SECRET, free_port, relay_env, run_to_exit


@pytest.fixture
def open_umask() -> Iterator[None]:
    """A umask that takes nothing away (the worst a user's shell may have)."""
    before = os.umask(0)
    try:
        yield
    finally:
        os.umask(before)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.usefixtures("open_umask")
def test_a_written_key_is_its_owners_alone_and_loads(tmp_path: Path) -> None:
    path = tmp_path / "receipt-key.pem"
    written = write_signing_key(path)
    assert mode(path) == 0o600
    assert load_signing_key(path).kid == written.kid


def test_writing_never_replaces_a_file(tmp_path: Path) -> None:
    path = tmp_path / "receipt-key.pem"
    path.write_text("kept\n")
    with pytest.raises(ReceiptKeyError, match="cannot write"):
        write_signing_key(path)
    assert path.read_text() == "kept\n"


@pytest.mark.parametrize("shared", [0o644, 0o640, 0o604, 0o660, 0o601, 0o610])
def test_a_key_others_may_read_is_refused_naming_the_fix(tmp_path: Path, shared: int) -> None:
    path = tmp_path / "receipt-key.pem"
    write_signing_key(path)
    path.chmod(shared)
    with pytest.raises(ReceiptKeyError) as raised:
        load_signing_key(path)
    assert f"chmod 600 {path}" in str(raised.value)
    assert f"{shared:04o}" in str(raised.value)


@pytest.mark.parametrize("private", [0o600, 0o400, 0o700])
def test_a_private_key_loads(tmp_path: Path, private: int) -> None:
    path = tmp_path / "receipt-key.pem"
    write_signing_key(path)
    path.chmod(private)
    assert load_signing_key(path).kid


def test_the_mode_checked_is_the_files_a_link_points_at(tmp_path: Path) -> None:
    target = tmp_path / "receipt-key.pem"
    write_signing_key(target)
    target.chmod(0o644)
    link = tmp_path / "link.pem"
    link.symlink_to(target)
    with pytest.raises(ReceiptKeyError, match="chmod 600"):
        load_signing_key(link)


async def test_serve_refuses_a_key_file_others_may_read(tmp_path: Path) -> None:
    path = tmp_path / "receipt-key.pem"
    write_signing_key(path)
    path.chmod(0o644)
    async with FakeSlack(signing_secret=SECRET) as slack:
        env = relay_env(slack, free_port(), RELAY_RECEIPT_KEY_FILE=str(path))
        code, lines = await run_to_exit(env)
    text = "".join(lines)
    assert code == 2, text
    assert "RELAY_RECEIPT_KEY_FILE" in text
    assert f"chmod 600 {path}" in text
    assert "BEGIN PRIVATE KEY" not in text
