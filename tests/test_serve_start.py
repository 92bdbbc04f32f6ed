"""`relay serve` that cannot start says why in one line and exits 2."""

from __future__ import annotations

import socket

import pytest

from relay.testing import FakeSlack
from tests.server_env import relay_env, run_to_exit


@pytest.mark.parametrize("via", ["PORT", "--port"])
async def test_a_busy_port_is_one_line_naming_the_port_and_the_setting(via: str) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        async with FakeSlack(signing_secret="unused") as slack:
            env = relay_env(slack, port)
            args: tuple[str, ...] = ()
            if via == "--port":
                env["PORT"] = "8080"  # the flag wins over the variable
                args = ("--port", str(port))
            code, lines = await run_to_exit(env, *args)
    assert code == 2, lines
    assert lines == [
        f"relay: error: BAD_CONFIG: cannot listen on 127.0.0.1:{port}: address already in use;"
        " stop the other process or choose another port with PORT (or --port)"
    ]
