"""The deployment files agree with the code: manifests, settings, ports, probes and secrets.

Everything is read as data (YAML, the Dockerfile's lines); nothing needs Docker or a cluster.
"""

from __future__ import annotations

import dataclasses
import json
import re
import shlex
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

from relay.config.settings import ENV_VARS, Settings
from relay.errors import RelayConfigError
from relay.slack.manifest import BOT_SCOPES, build_manifest, manifest_text

ROOT = Path(__file__).resolve().parents[1]
DEPLOY = ROOT / "deploy"
K8S = DEPLOY / "kubernetes"
HTTP_URL = "https://relay.example.com/slack/events"
SCOPES = {"chat:write", "im:write", "usergroups:read"}
TOKENS = ("SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET", "SLACK_APP_TOKEN", "RELAY_API_TOKENS")

YAML_FILES = [
    "docker-compose.yml",
    "kubernetes/deployment.yaml",
    "kubernetes/redis.yaml",
    "kubernetes/secret.example.yaml",
    "kubernetes/service.yaml",
    "slack-app-manifest.http.yaml",
    "slack-app-manifest.yaml",
]


def load_all(name: str) -> list[Any]:
    return [doc for doc in yaml.safe_load_all((DEPLOY / name).read_text()) if doc is not None]


def load(name: str) -> Any:
    (doc,) = load_all(name)
    return doc


def k8s_objects() -> dict[tuple[str, str], dict[str, Any]]:
    """Every Kubernetes object under deploy/kubernetes, by (kind, name)."""
    objects: dict[tuple[str, str], dict[str, Any]] = {}
    for path in sorted(K8S.glob("*.yaml")):
        for doc in load_all(str(path.relative_to(DEPLOY))):
            key = (doc["kind"], doc["metadata"]["name"])
            assert key not in objects, key
            objects[key] = doc
    return objects


def relay_container() -> dict[str, Any]:
    (container,) = k8s_objects()[("Deployment", "relay")]["spec"]["template"]["spec"]["containers"]
    assert isinstance(container, dict)
    return container


def dockerfile() -> list[tuple[str, str]]:
    """The Dockerfile's instructions as (KEYWORD, arguments), continuation lines joined."""
    text = re.sub(r"\\\n\s*", " ", (DEPLOY / "Dockerfile").read_text())
    instructions = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            keyword, _, rest = line.partition(" ")
            instructions.append((keyword.upper(), rest.strip()))
    return instructions


def instructions(keyword: str) -> list[str]:
    return [rest for kw, rest in dockerfile() if kw == keyword]


def env_example() -> list[tuple[int, str, str]]:
    """(line number, name, value) of every assignment in .env.example."""
    lines = (DEPLOY / ".env.example").read_text().splitlines()
    return [
        (i, m[1], m[2])
        for i, line in enumerate(lines)
        if (m := re.fullmatch(r"([A-Z][A-Z0-9_]*)=(.*)", line))
    ]


# --- every file parses ---------------------------------------------------------------------


def test_the_yaml_files_are_exactly_the_known_ones() -> None:
    found = sorted(
        str(p.relative_to(DEPLOY)) for p in DEPLOY.rglob("*") if p.suffix in (".yaml", ".yml")
    )

    assert found == YAML_FILES


@pytest.mark.parametrize("name", YAML_FILES)
def test_every_yaml_file_parses_to_mappings(name: str) -> None:
    docs = load_all(name)

    assert docs
    assert all(isinstance(doc, dict) for doc in docs)


# --- the Slack app manifest ----------------------------------------------------------------


def test_the_socket_mode_manifest_file_is_build_manifest() -> None:
    assert load("slack-app-manifest.yaml") == build_manifest(socket_mode=True)


def test_the_http_manifest_file_is_build_manifest_with_its_url() -> None:
    assert load("slack-app-manifest.http.yaml") == build_manifest(
        socket_mode=False, request_url=HTTP_URL
    )


@pytest.mark.parametrize("name", ["slack-app-manifest.yaml", "slack-app-manifest.http.yaml"])
def test_the_app_asks_for_exactly_the_three_scopes(name: str) -> None:
    scopes = load(name)["oauth_config"]["scopes"]

    assert list(scopes) == ["bot"]
    assert sorted(scopes["bot"]) == sorted(SCOPES)
    assert set(BOT_SCOPES) == SCOPES
    assert len(BOT_SCOPES) == len(SCOPES)


def test_socket_mode_manifest() -> None:
    assert build_manifest(socket_mode=True) == {
        "display_information": {
            "name": "relay",
            "description": (
                "Lets an AI agent ask your team a question and wait for a trustworthy answer."
            ),
        },
        "features": {"bot_user": {"display_name": "relay", "always_online": True}},
        "oauth_config": {"scopes": {"bot": ["chat:write", "im:write", "usergroups:read"]}},
        "settings": {
            "interactivity": {"is_enabled": True},
            "org_deploy_enabled": False,
            "socket_mode_enabled": True,
            "token_rotation_enabled": False,
        },
    }


def test_http_manifest_sends_clicks_to_the_request_url() -> None:
    manifest = build_manifest(
        socket_mode=False, request_url="https://r.example.org/slack/events", name="Deploy gate"
    )

    assert manifest["settings"] == {
        "interactivity": {"is_enabled": True, "request_url": "https://r.example.org/slack/events"},
        "org_deploy_enabled": False,
        "socket_mode_enabled": False,
        "token_rotation_enabled": False,
    }
    assert manifest["display_information"]["name"] == "Deploy gate"
    assert manifest["features"]["bot_user"] == {
        "display_name": "Deploy gate",
        "always_online": True,
    }


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"socket_mode": False}, "HTTP mode needs the public URL"),
        ({"socket_mode": False, "request_url": "http://r.example.org/slack/events"}, "https://"),
        ({"socket_mode": False, "request_url": "https:///slack/events"}, "with a host"),
        ({"socket_mode": False, "request_url": "relay.example.com"}, "https://"),
        ({"socket_mode": True, "request_url": HTTP_URL}, "Socket Mode takes no request URL"),
    ],
)
def test_a_request_url_that_does_not_fit_the_mode_is_a_config_error(
    kwargs: dict[str, Any], fragment: str
) -> None:
    with pytest.raises(RelayConfigError) as caught:
        build_manifest(**kwargs)

    assert fragment in str(caught.value)
    assert caught.value.code == "BAD_CONFIG"
    assert caught.value.setting == "request_url"


@pytest.mark.parametrize("name", ["", "   ", "x" * 36])
def test_an_app_name_slack_would_refuse_is_a_config_error(name: str) -> None:
    with pytest.raises(RelayConfigError, match="1 to 35 characters"):
        build_manifest(socket_mode=True, name=name)


def test_a_35_character_name_is_accepted() -> None:
    manifest = build_manifest(socket_mode=True, name="x" * 35)

    assert manifest["display_information"]["name"] == "x" * 35


def test_manifest_text_is_indented_json_that_reads_back_as_yaml_too() -> None:
    manifest = build_manifest(socket_mode=False, request_url=HTTP_URL)
    text = manifest_text(manifest)

    assert text.startswith('{\n  "display_information": {\n    "name": "relay",')
    assert text.endswith("}\n")
    assert json.loads(text) == manifest
    assert yaml.safe_load(text) == manifest


# --- environment variables -----------------------------------------------------------------


def dockerfile_env_names() -> set[str]:
    names = {part.split("=", 1)[0] for rest in instructions("ENV") for part in shlex.split(rest)}
    names |= set(re.findall(r"environ\.get\('(\w+)'", (DEPLOY / "Dockerfile").read_text()))
    return names


def compose_env_names() -> set[str]:
    environment = load("docker-compose.yml")["services"]["relay"]["environment"]
    return set(environment)


def k8s_env_names() -> set[str]:
    return {entry["name"] for entry in relay_container()["env"]}


def test_the_deploy_files_name_only_settings_the_relay_reads() -> None:
    named = {
        "Dockerfile": dockerfile_env_names(),
        "docker-compose.yml": compose_env_names(),
        "kubernetes/deployment.yaml": k8s_env_names(),
        ".env.example": {name for _, name, _ in env_example()},
    }

    assert named["Dockerfile"] == {"PORT"}
    assert named["docker-compose.yml"] == {"PORT", "REDIS_URL"}
    for source, names in named.items():
        assert names <= set(ENV_VARS), f"{source}: {sorted(names - set(ENV_VARS))}"


def test_env_example_lists_every_setting_once_in_config_order() -> None:
    assert [name for _, name, _ in env_example()] == list(ENV_VARS)


def test_env_example_explains_every_setting_in_a_comment_above_it() -> None:
    lines = (DEPLOY / ".env.example").read_text().splitlines()

    for i, name, _ in env_example():
        assert lines[i - 1].startswith("# "), name


def test_env_example_leaves_every_token_blank() -> None:
    values = {name: value for _, name, value in env_example()}

    assert {name: values[name] for name in TOKENS} == dict.fromkeys(TOKENS, "")


# --- ports and probes ----------------------------------------------------------------------


def test_the_default_port_is_3000_everywhere() -> None:
    port_field = next(f for f in dataclasses.fields(Settings) if f.name == "port")

    assert port_field.default == 3000
    assert instructions("EXPOSE") == ["3000"]
    assert instructions("ENV") == ["PORT=3000"]


def test_the_dockerfile_healthcheck_asks_healthz_on_port_from_port() -> None:
    (healthcheck,) = instructions("HEALTHCHECK")
    command = json.loads(healthcheck[healthcheck.index("CMD") + 3 :])

    assert command[:2] == ["python", "-c"]
    assert "'http://127.0.0.1:%s/healthz' % os.environ.get('PORT', '3000')" in command[2]


def test_compose_runs_the_relay_on_3000_next_to_redis() -> None:
    compose = load("docker-compose.yml")
    relay, redis = compose["services"]["relay"], compose["services"]["redis"]

    assert relay["ports"] == ["3000:3000"]
    assert relay["environment"] == {"REDIS_URL": "redis://redis:6379/0", "PORT": "3000"}
    assert relay["env_file"] == ".env"
    assert relay["build"] == {"context": "..", "dockerfile": "deploy/Dockerfile"}
    assert relay["depends_on"] == {"redis": {"condition": "service_healthy"}}
    assert "http://127.0.0.1:3000/healthz" in relay["healthcheck"]["test"][-1]
    assert redis["image"] == "redis:7-alpine"
    assert redis["healthcheck"]["test"] == ["CMD", "redis-cli", "ping"]


def test_kubernetes_serves_3000_and_probes_healthz_and_readyz() -> None:
    container = relay_container()
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    env = {e["name"]: e.get("value") for e in container["env"]}

    def probe(kind: str) -> tuple[str, int]:
        get = container[kind]["httpGet"]
        return get["path"], ports.get(get["port"], get["port"])

    assert ports == {"http": 3000}
    assert env["PORT"] == "3000"
    assert probe("readinessProbe") == ("/readyz", 3000)
    assert probe("livenessProbe") == ("/healthz", 3000)


def test_the_service_maps_80_to_the_relay_port() -> None:
    service = k8s_objects()[("Service", "relay")]["spec"]
    ports = {p["name"]: p["containerPort"] for p in relay_container()["ports"]}

    ((port,),) = [service["ports"]]
    assert port["port"] == 80
    assert ports[port["targetPort"]] == 3000


# --- Dockerfile ----------------------------------------------------------------------------


def test_the_image_runs_relay_serve_as_a_non_root_user() -> None:
    keywords = [kw for kw, _ in dockerfile()]
    users = instructions("USER")

    assert users == ["10001:10001"]
    assert keywords.index("USER") < keywords.index("CMD")
    assert instructions("CMD") == ['["relay", "serve"]']


def test_the_image_is_built_from_a_pinned_python_311_slim_and_only_the_package() -> None:
    bases = [rest.split()[0] for rest in instructions("FROM")]
    copies = instructions("COPY")

    assert bases
    assert all(re.fullmatch(r"python:3\.11\.\d+-slim(-\w+)?", base) for base in bases), bases
    assert copies == [
        "pyproject.toml README.md LICENSE ./",
        "relay ./relay",
        "--from=build /install /usr/local",
    ]
    (install,) = [rest for rest in instructions("RUN") if "pip install" in rest]
    assert "--no-cache-dir" in install
    assert '".[redis]"' in install


# --- Kubernetes ----------------------------------------------------------------------------


def test_kubernetes_objects_are_the_expected_ones() -> None:
    assert sorted(k8s_objects()) == [
        ("Deployment", "relay"),
        ("Secret", "relay-secrets"),
        ("Service", "relay"),
        ("Service", "relay-redis"),
        ("StatefulSet", "relay-redis"),
    ]


def test_every_secret_reference_exists_in_the_example_secret() -> None:
    objects = k8s_objects()
    refs = [e["valueFrom"]["secretKeyRef"] for e in relay_container()["env"] if "valueFrom" in e]
    secrets = {
        name: set(obj.get("stringData", {}))
        for (kind, name), obj in objects.items()
        if kind == "Secret"
    }

    assert sorted(r["key"] for r in refs) == sorted((*TOKENS, "REDIS_URL"))
    for ref in refs:
        assert ref["key"] in secrets[ref["name"]], ref
    assert secrets["relay-secrets"] <= set(ENV_VARS)
    # Only the mode-specific credentials may be missing: one of them is set per mode.
    assert sorted(r["key"] for r in refs if r.get("optional")) == [
        "SLACK_APP_TOKEN",
        "SLACK_SIGNING_SECRET",
    ]


def test_the_relay_deployment_has_two_locked_down_replicas_using_redis() -> None:
    deployment = k8s_objects()[("Deployment", "relay")]
    pod = deployment["spec"]["template"]["spec"]
    container = relay_container()
    env = {e["name"]: e.get("value") for e in container["env"]}

    assert deployment["spec"]["replicas"] == 2
    assert deployment["spec"]["selector"]["matchLabels"].items() <= (
        deployment["spec"]["template"]["metadata"]["labels"].items()
    )
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert container["securityContext"]["allowPrivilegeEscalation"] is False
    assert set(container["resources"]) == {"requests", "limits"}
    assert set(container["resources"]["limits"]) == {"cpu", "memory"}
    # The Redis is the Secret's (a managed one by default): its URL may hold a password.
    redis_url = next(e for e in container["env"] if e["name"] == "REDIS_URL")
    assert redis_url["valueFrom"]["secretKeyRef"] == {"name": "relay-secrets", "key": "REDIS_URL"}
    assert "RELAY_CHANNEL" in env


def test_the_example_secret_points_at_a_managed_redis_over_tls() -> None:
    secret = k8s_objects()[("Secret", "relay-secrets")]["stringData"]
    url = secret["REDIS_URL"]
    assert url.startswith("rediss://")
    assert (
        Settings.from_env(
            {"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_APP_TOKEN": "xapp-1", "REDIS_URL": url}
            | {"RELAY_API_TOKENS": "a-token-of-16-chars-or-more"}
        ).redis_url
        == url
    )
    # The in-cluster alternative it names is the StatefulSet's Service.
    assert "redis://relay-redis:6379/0" in (K8S / "secret.example.yaml").read_text()


def test_the_optional_in_cluster_redis_keeps_its_data_on_a_persistent_volume() -> None:
    objects = k8s_objects()
    redis = objects[("StatefulSet", "relay-redis")]
    service = objects[("Service", "relay-redis")]["spec"]
    pod = redis["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    (claim,) = redis["spec"]["volumeClaimTemplates"]
    args = container["args"]

    assert redis["spec"]["replicas"] == 1
    assert redis["spec"]["serviceName"] == "relay-redis"
    assert container["image"] == "redis:7-alpine"
    # /data is the claim's volume, never an emptyDir that dies with the pod.
    assert {"name": claim["metadata"]["name"], "mountPath": "/data"} in container["volumeMounts"]
    assert "volumes" not in pod
    assert claim["spec"]["accessModes"] == ["ReadWriteOnce"]
    assert claim["spec"]["resources"]["requests"]["storage"]
    # Every write is logged (fsync each second), and a full Redis evicts finished asks (they
    # alone have a TTL) and never a pending one.
    assert args[args.index("--appendonly") + 1] == "yes"
    assert args[args.index("--appendfsync") + 1] == "everysec"
    assert args[args.index("--maxmemory-policy") + 1] == "volatile-ttl"
    assert service["clusterIP"] == "None"
    assert service["selector"] == redis["spec"]["template"]["metadata"]["labels"]
    assert [(p["port"], p["targetPort"]) for p in service["ports"]] == [(6379, "redis")]
    assert container["ports"] == [{"name": "redis", "containerPort": 6379}]


def test_no_kubernetes_object_keeps_state_in_an_emptydir() -> None:
    for (kind, name), obj in k8s_objects().items():
        if kind not in ("Deployment", "StatefulSet"):
            continue
        for volume in obj["spec"]["template"]["spec"].get("volumes", []):
            if "emptyDir" in volume:
                # Only the relay's scratch /tmp: the relay keeps nothing there.
                assert (name, volume["name"]) == ("relay", "tmp"), (name, volume)
                assert volume["emptyDir"]["sizeLimit"]


def test_the_relay_service_selects_the_relay_pods() -> None:
    objects = k8s_objects()
    labels = objects[("Deployment", "relay")]["spec"]["template"]["metadata"]["labels"]

    assert objects[("Service", "relay")]["spec"]["selector"].items() <= labels.items()


def test_the_docker_build_context_leaves_out_virtualenvs_caches_and_secrets() -> None:
    ignored = {
        line.strip()
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    }
    assert {".git", ".venv", "venv", "deploy/.env", ".env", "**/__pycache__"} <= ignored
    # Nothing the image needs is ignored.
    for needed in ("pyproject.toml", "README.md", "LICENSE", "relay"):
        assert needed not in ignored
        assert (ROOT / needed).exists()


def test_the_license_file_matches_the_declared_license() -> None:
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["license"]
    assert declared == "MIT"
    assert (ROOT / "LICENSE").read_text().startswith("MIT License")


def test_a_rolling_update_fits_the_grace_period() -> None:
    # The pause before SIGTERM plus the relay's own bounds on finishing requests in flight
    # (long-polls are answered at once), on the Slack updates it still owes and on closing
    # the store must fit before Kubernetes sends SIGKILL.
    from relay.server.main import SHUTDOWN_TIMEOUT

    pod = k8s_objects()[("Deployment", "relay")]["spec"]["template"]["spec"]
    pause = relay_container()["lifecycle"]["preStop"]["exec"]["command"]
    assert pause[0] == "sleep"
    assert float(pause[1]) + 2.5 * SHUTDOWN_TIMEOUT <= pod["terminationGracePeriodSeconds"]
