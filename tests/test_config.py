"""`relay serve` settings: every mistake stops start-up with one line naming the variable."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from relay import RelayConfigError
from relay.config.settings import ENV_VARS, NO_CREDENTIALS_HELP, Settings
from relay.store.redis_url import parse_redis_url

GOOD = {
    "SLACK_BOT_TOKEN": "xoxb-1-abc",
    "SLACK_SIGNING_SECRET": "shh",
    "RELAY_API_TOKENS": "a-token-of-16-chars-or-more",
}


def test_defaults() -> None:
    settings = Settings.from_env(GOOD)
    assert settings.port == 3000
    assert settings.timeout == 900.0
    assert settings.socket_mode is False
    assert settings.redis_url is None
    assert settings.api_tokens == ("a-token-of-16-chars-or-more",)


def test_receipt_retention_and_the_tsa_are_read_as_given() -> None:
    settings = Settings.from_env(
        {**GOOD, "RELAY_RECEIPT_RETENTION": "2w", "RELAY_TSA_URL": "https://tsa.example/tsr"}
    )
    assert settings.receipt_retention == 14 * 86400.0
    assert settings.tsa_url == "https://tsa.example/tsr"
    assert Settings.from_env(GOOD).receipt_retention is None
    short = {**GOOD, "RELAY_RECEIPT_RETENTION": "12h", "RELAY_RETENTION": "3600"}
    assert Settings.from_env(short).receipt_retention == 12 * 3600.0


def test_flags_override_the_environment_and_none_means_not_given() -> None:
    settings = Settings.from_env({**GOOD, "PORT": "4000"}, PORT="5000", RELAY_CHANNEL=None)
    assert settings.port == 5000
    assert settings.channel is None


def test_every_setting_is_read() -> None:
    settings = Settings.from_env(
        {
            **GOOD,
            "SLACK_APP_TOKEN": "xapp-1-x",
            "SLACK_API_URL": "http://127.0.0.1:9/api",
            "RELAY_CHANNEL": "C1",
            "RELAY_ALLOWED_USERS": "U1, U2",
            "RELAY_TIMEOUT": "none",
            "RELAY_MAX_WAIT": "30",
            "RELAY_RETENTION": "60",
            "RELAY_MAX_BODY": "1000",
            "RELAY_HOST": "127.0.0.1",
            "REDIS_URL": "redis://r:6379/0",
            "RELAY_LOG_LEVEL": "DEBUG",
            "RELAY_GC_THRESHOLD": "20000",
        }
    )
    assert settings.socket_mode
    assert settings.slack_api_url == "http://127.0.0.1:9/api/"
    assert settings.allowed_users == frozenset({"U1", "U2"})
    assert settings.timeout is None
    assert (settings.max_wait, settings.retention, settings.max_body) == (30, 60, 1000)
    assert settings.log_level == "debug"
    assert settings.gc_threshold == 20000


def test_the_limits_have_defaults_and_are_read() -> None:
    settings = Settings.from_env(GOOD)
    assert (settings.max_timeout, settings.rate_limit, settings.max_long_polls) == (None, 50, 500)
    assert (settings.max_pending, settings.read_timeout, settings.max_connections) == (
        1000,
        10.0,
        None,
    )
    assert settings.retention_bytes == 64 * 1024 * 1024
    settings = Settings.from_env(
        {
            **GOOD,
            "RELAY_TIMEOUT": "60",
            "RELAY_MAX_TIMEOUT": "3600",
            "RELAY_RETENTION_BYTES": "1000000",
            "RELAY_RATE_LIMIT": "2.5",
            "RELAY_MAX_LONG_POLLS": "7",
            "RELAY_MAX_PENDING": "8",
            "RELAY_READ_TIMEOUT": "3",
            "RELAY_MAX_CONNECTIONS": "100",
        }
    )
    assert settings.max_timeout == 3600.0
    assert (settings.retention_bytes, settings.rate_limit, settings.max_long_polls) == (
        1_000_000,
        2.5,
        7,
    )
    assert (settings.max_pending, settings.read_timeout, settings.max_connections) == (8, 3, 100)


def test_the_gc_threshold_defaults_high_and_python_keeps_cpythons() -> None:
    assert Settings.from_env(GOOD).gc_threshold == 50_000
    assert Settings.from_env({**GOOD, "RELAY_GC_THRESHOLD": "Python"}).gc_threshold is None


def test_tokens_come_from_a_file_and_never_show_in_repr(tmp_path: Path) -> None:
    path = tmp_path / "tokens"
    path.write_text("first-token-0123456789\n\nsecond-token-0123456789\n")
    env = {k: v for k, v in GOOD.items() if k != "RELAY_API_TOKENS"}
    settings = Settings.from_env({**env, "RELAY_API_TOKENS_FILE": str(path)})
    assert settings.api_tokens == ("first-token-0123456789", "second-token-0123456789")
    assert "token" not in repr(settings).lower().replace("socket_mode", "")
    assert "xoxb" not in repr(settings)


@pytest.mark.parametrize(
    ("change", "variable"),
    [
        ({"SLACK_BOT_TOKEN": ""}, "SLACK_BOT_TOKEN"),
        ({"SLACK_BOT_TOKEN": "shh-not-a-token"}, "SLACK_BOT_TOKEN"),
        ({"SLACK_SIGNING_SECRET": ""}, "SLACK_SIGNING_SECRET"),
        ({"SLACK_APP_TOKEN": "xoxb-wrong"}, "SLACK_APP_TOKEN"),
        ({"RELAY_API_TOKENS": ""}, "RELAY_API_TOKENS"),
        ({"RELAY_API_TOKENS": "short"}, "RELAY_API_TOKENS"),
        ({"RELAY_API_TOKENS_FILE": "/nonexistent/tokens"}, "RELAY_API_TOKENS"),
        ({"RELAY_TIMEOUT": "soon"}, "RELAY_TIMEOUT"),
        ({"RELAY_TIMEOUT": "-5"}, "RELAY_TIMEOUT"),
        ({"PORT": "http"}, "PORT"),
        ({"PORT": "70000"}, "PORT"),
        ({"RELAY_ALLOWED_USERS": "alice,bob"}, "RELAY_ALLOWED_USERS"),
        ({"REDIS_URL": "localhost:6379"}, "REDIS_URL"),
        ({"REDIS_URL": "redis+sentinel://s1:26379,s2:26379"}, "REDIS_URL"),
        ({"REDIS_URL": "redis+sentinel://s1:port/mymaster"}, "REDIS_URL"),
        ({"REDIS_URL": "redis+cluster://n1:6379/3"}, "REDIS_URL"),
        ({"REDIS_URL": "redis+cluster://n1:6379,,n2"}, "REDIS_URL"),
        ({"RELAY_REDIS_CA_FILE": "/etc/hostname"}, "RELAY_REDIS_CA_FILE"),
        (
            {"REDIS_URL": "redis://r:6379/0", "RELAY_REDIS_CERT_FILE": "/etc/hostname"},
            "RELAY_REDIS_CERT_FILE",
        ),
        (
            {"REDIS_URL": "rediss://r:6379/0", "RELAY_REDIS_CA_FILE": "/nonexistent/ca.pem"},
            "RELAY_REDIS_CA_FILE",
        ),
        (
            {"REDIS_URL": "rediss+cluster://r:6379", "RELAY_REDIS_KEY_FILE": "/etc/hostname"},
            "RELAY_REDIS_CERT_FILE",
        ),
        ({"SLACK_API_URL": "slack.com/api"}, "SLACK_API_URL"),
        ({"RELAY_LOG_LEVEL": "loud"}, "RELAY_LOG_LEVEL"),
        ({"RELAY_MAX_BODY": "1.5"}, "RELAY_MAX_BODY"),
        ({"RELAY_GC_THRESHOLD": "0"}, "RELAY_GC_THRESHOLD"),
        ({"RELAY_GC_THRESHOLD": "lots"}, "RELAY_GC_THRESHOLD"),
        ({"RELAY_GC_THRESHOLD": "3000000000"}, "RELAY_GC_THRESHOLD"),
        ({"RELAY_TIMEOUT": "1e308"}, "RELAY_TIMEOUT"),
        ({"RELAY_MAX_TIMEOUT": "soon"}, "RELAY_MAX_TIMEOUT"),
        ({"RELAY_MAX_TIMEOUT": "1e12"}, "RELAY_MAX_TIMEOUT"),
        ({"RELAY_MAX_TIMEOUT": "600", "RELAY_TIMEOUT": "900"}, "RELAY_TIMEOUT"),
        ({"RELAY_MAX_TIMEOUT": "600", "RELAY_TIMEOUT": "none"}, "RELAY_TIMEOUT"),
        ({"RELAY_RETENTION_BYTES": "-1"}, "RELAY_RETENTION_BYTES"),
        ({"RELAY_RATE_LIMIT": "0"}, "RELAY_RATE_LIMIT"),
        ({"RELAY_MAX_LONG_POLLS": "1e400"}, "RELAY_MAX_LONG_POLLS"),
        ({"RELAY_MAX_PENDING": "9" * 30}, "RELAY_MAX_PENDING"),
        ({"RELAY_READ_TIMEOUT": "inf"}, "RELAY_READ_TIMEOUT"),
        ({"RELAY_MAX_CONNECTIONS": "3"}, "RELAY_MAX_CONNECTIONS"),
        ({"RELAY_ALLOWED_CHANNELS": "#deploys"}, "RELAY_ALLOWED_CHANNELS"),
        ({"RELAY_MCP_SESSIONS_PER_TOKEN": "0"}, "RELAY_MCP_SESSIONS_PER_TOKEN"),
        ({"RELAY_MCP_SESSIONS_PER_TOKEN": "1000"}, "RELAY_MCP_SESSIONS_PER_TOKEN"),
        ({"RELAY_MCP_MAX_SESSIONS": "many"}, "RELAY_MCP_MAX_SESSIONS"),
        ({"RELAY_MCP_SESSION_IDLE": "-1"}, "RELAY_MCP_SESSION_IDLE"),
        ({"RELAY_MCP_ALLOWED_ORIGINS": "app.example.com"}, "RELAY_MCP_ALLOWED_ORIGINS"),
        ({"RELAY_MCP_ALLOWED_ORIGINS": "https://a.example/path"}, "RELAY_MCP_ALLOWED_ORIGINS"),
        ({"RELAY_MCP_ALLOWED_HOSTS": "https://relay.example.com"}, "RELAY_MCP_ALLOWED_HOSTS"),
        ({"RELAY_RECEIPT_RETENTION": "30 days"}, "RELAY_RECEIPT_RETENTION"),
        ({"RELAY_RECEIPT_RETENTION": "0d"}, "RELAY_RECEIPT_RETENTION"),
        ({"RELAY_RECEIPT_RETENTION": "1d"}, "RELAY_RECEIPT_RETENTION"),  # < RELAY_RETENTION
        ({"RELAY_CHECKPOINT_INTERVAL": "0"}, "RELAY_CHECKPOINT_INTERVAL"),
        ({"RELAY_TSA_URL": "tsa.example.com"}, "RELAY_TSA_URL"),
    ],
)
def test_a_bad_setting_names_the_variable(change: dict[str, str], variable: str) -> None:
    with pytest.raises(RelayConfigError) as info:
        Settings.from_env({**GOOD, **change})
    assert variable in str(info.value)
    assert info.value.setting is not None
    assert variable.startswith(info.value.setting.split("_FILE")[0])
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("url", "mode", "hosts", "service", "db", "tls"),
    [
        ("redis://r:6379/2", "single", (), None, 0, False),
        ("rediss://r:6380/0", "single", (), None, 0, True),
        (
            "redis+sentinel://s1,s2:26380/mymaster/3",
            "sentinel",
            (("s1", 26379), ("s2", 26380)),
            "mymaster",
            3,
            False,
        ),
        ("rediss+sentinel://[::1]:26379/m", "sentinel", (("::1", 26379),), "m", 0, True),
        ("redis+cluster://n1,n2:7000", "cluster", (("n1", 6379), ("n2", 7000)), None, 0, False),
        ("rediss+cluster://u:p%40ss@n1:7000/", "cluster", (("n1", 7000),), None, 0, True),
    ],
)
def test_redis_urls_name_one_redis_a_sentinel_master_or_a_cluster(
    url: str,
    mode: str,
    hosts: tuple[tuple[str, int], ...],
    service: str | None,
    db: int,
    tls: bool,
) -> None:
    address = parse_redis_url(url)
    assert (address.mode, address.hosts, address.service, address.db, address.tls) == (
        mode,
        hosts,
        service,
        db,
        tls,
    )
    assert Settings.from_env({**GOOD, "REDIS_URL": url}).redis_url == url


def test_redis_credentials_are_read_and_never_shown() -> None:
    address = parse_redis_url("rediss+cluster://relay:p%40ss@n1:7000")
    assert (address.username, address.password) == ("relay", "p@ss")
    assert "p@ss" not in repr(address)
    settings = Settings.from_env({**GOOD, "REDIS_URL": "redis://:hunter2@r:6379/0"})
    assert "hunter2" not in repr(settings)


def test_tls_files_for_redis_are_read(tmp_path: Path) -> None:
    for name in ("ca.pem", "client.pem", "client.key"):
        (tmp_path / name).write_text("-----BEGIN-----\n")
    settings = Settings.from_env(
        {
            **GOOD,
            "REDIS_URL": "rediss+sentinel://s1:26379/mymaster",
            "RELAY_REDIS_CA_FILE": str(tmp_path / "ca.pem"),
            "RELAY_REDIS_CERT_FILE": str(tmp_path / "client.pem"),
            "RELAY_REDIS_KEY_FILE": str(tmp_path / "client.key"),
        }
    )
    assert settings.redis_ca_file == str(tmp_path / "ca.pem")
    assert settings.redis_cert_file == str(tmp_path / "client.pem")
    assert settings.redis_key_file == str(tmp_path / "client.key")


def test_no_credentials_at_all_explains_what_to_create() -> None:
    with pytest.raises(RelayConfigError) as info:
        Settings.from_env({})
    assert str(info.value) == NO_CREDENTIALS_HELP
    assert "relay manifest" in NO_CREDENTIALS_HELP


def test_every_documented_variable_is_read() -> None:
    relay = Path(__file__).parents[1] / "relay"
    source = "".join(
        (relay / "config" / name).read_text()
        for name in ("settings.py", "mcp.py", "receipts.py", "values.py")
    )
    for name in ENV_VARS:
        assert f'get("{name}")' in source


def serve(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "relay.cli", "serve"],
        env={"PATH": "/usr/bin:/bin", **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_relay_serve_with_no_credentials_prints_the_setup_steps() -> None:
    result = serve({})
    assert result.returncode == 2
    # Commands in the help are spelled as this one was run (here `python -m relay.cli`).
    invoked = f"{Path(sys.executable).name} -m relay.cli"
    assert result.stderr == NO_CREDENTIALS_HELP.replace("`relay ", f"`{invoked} ")
    assert "--sandbox" in result.stderr
    assert "Traceback" not in result.stderr


def test_relay_serve_with_a_bad_setting_prints_one_line() -> None:
    result = serve({**GOOD, "RELAY_TIMEOUT": "soon"})
    assert result.returncode == 2
    assert result.stderr == (
        "relay: error: BAD_CONFIG: RELAY_TIMEOUT must be a number (got 'soon')\n"
    )
