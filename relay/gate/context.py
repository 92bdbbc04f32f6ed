"""Who is asking, from where: the lines a reviewer sees above a tool use. Pure over ``env``."""

from __future__ import annotations

import getpass
import os
import socket
from collections.abc import Mapping

__all__ = ["ci_job", "requester", "who_asks"]


def requester() -> str:
    """``user@host`` of this process."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = str(os.getuid()) if hasattr(os, "getuid") else "someone"
    return f"{user}@{socket.gethostname()}"


def ci_job(env: Mapping[str, str]) -> tuple[str, str] | None:
    """``(job id, description)`` of the CI job this runs in, if the environment says so."""
    if env.get("GITHUB_ACTIONS") == "true":
        repo, run = env.get("GITHUB_REPOSITORY", "?"), env.get("GITHUB_RUN_ID", "?")
        job = env.get("GITHUB_JOB", "")
        url = f"{env.get('GITHUB_SERVER_URL', 'https://github.com')}/{repo}/actions/runs/{run}"
        who = f" by {env['GITHUB_ACTOR']}" if env.get("GITHUB_ACTOR") else ""
        return f"github:{repo}:{run}:{job}", f"GitHub Actions {repo} job {job}{who}: {url}"
    if env.get("GITLAB_CI") == "true":
        job = env.get("CI_JOB_ID", "?")
        url = env.get("CI_JOB_URL", "")
        who = f" by {env['GITLAB_USER_LOGIN']}" if env.get("GITLAB_USER_LOGIN") else ""
        return f"gitlab:{env.get('CI_PROJECT_PATH', '?')}:{job}", f"GitLab CI job {job}{who} {url}"
    for name, key in (
        ("Buildkite", "BUILDKITE_BUILD_URL"),
        ("CircleCI", "CIRCLE_BUILD_URL"),
        ("Jenkins", "BUILD_URL"),
    ):
        if env.get(key):
            return f"{name.lower()}:{env[key]}", f"{name} build {env[key]}"
    if env.get("CI") in ("true", "1"):
        return "ci", "a CI job (CI=true)"
    return None


def who_asks(env: Mapping[str, str], cwd: str, **extra: str) -> dict[str, str]:
    """The context lines: who (``user@host``), where (directory), and the CI job if any."""
    out = {"Asked by": requester(), "Directory": cwd, **extra}
    job = ci_job(env)
    if job is not None:
        out["CI job"] = job[1]
    return out
