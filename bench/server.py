"""The server under test in a process of its own, driven by its parent over stdin/stdout.

``python -m bench.server relay|bolt|bolt_bot|floor|bare --slack-url URL [--cpu N]
[--redis-url URL] [--channels K]`` serves a ``SlackProvider``'s aiohttp app (on a
``RedisStore`` with ``--redis-url``, else the in-memory store; its asks to one channel, or
spread over K routed by the question's number, as K agents' would be; or bare Bolt, or bare
Bolt updating the clicked message (``bench.common.bolt_bot_app``), or the floor, or the bare
program of ``bench.bare_program``: agents awaiting futures, no relay) on a free loopback
port, prints ``{"port": …}`` and then answers one JSON line per command line read:

- ``ask N``: N more agents call ``ask()`` (in waves; the bare program's await a future);
  answered once all N are posted;
- ``stats``: CPU seconds, RSS, asks answered and pending, timers and tasks of the loop;
- ``gc``: a full collection (and the seconds it took); ``idle S``: CPU used while sleeping
  S seconds;
- ``gc_reset``: forget the collector's passes so far (``stats`` has their count, total and
  longest pause per generation); ``tracked``: how many objects the collector tracks (and
  how many are frozen, out of its reach);
- ``gc_mode relay|python``: the collector settings ``relay serve`` starts with
  (``relay.config.tuning.tune_gc``, the default here for every kind of server) or CPython's own;
- ``slack_url URL``: send further Web API calls to URL;
- ``trace_requests N``: bytes tracemalloc sees for building N requests alone;
- ``trace_ask N``: like ``ask N`` with tracemalloc on: bytes still held per ask, by file;
- ``count_calls on|off [FILE]``: count every function call (``cProfile``) from ``on`` to
  ``off``; ``off`` answers the total, the calls of functions written in Python (C builtins
  left out), the loop's callbacks (``Handle._run``) and the most called functions, and
  writes the profile's stats to FILE if given. Counts are exact where this VM's timings
  move by 2x between rounds: they show what a change adds or removes per click;
- ``quit``.

Keeping the fake Slack and the load generator in another process keeps their CPU time and
memory out of the figures; ``--cpu`` pins the server to one CPU.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import json
import os
import pstats
import resource
import sys
import time
import tracemalloc
from collections import Counter
from typing import Any, Protocol

from slack_sdk.web.async_client import AsyncWebClient

from bench.bare_program import WaitingAgents, bare_program_app
from bench.common import (
    BOT_TOKEN,
    CHANNEL,
    SECRET,
    bare_bolt_app,
    bolt_bot_app,
    floor_app,
    pin_to_cpu,
    request,
    rss_bytes,
    serve,
)
from relay import AskUserQuestionRequest
from relay.asks.events import AskEvent
from relay.asks.target import Route
from relay.config.tuning import tune_gc
from relay.slack import SlackProvider, SlackTarget

_WAVE = 200
_PYTHON_GC = gc.get_threshold()


class Collections:
    """Counts the collector's passes per generation and the seconds they took."""

    def __init__(self) -> None:
        self.count = [0, 0, 0]
        self.seconds = [0.0, 0.0, 0.0]
        self.longest = [0.0, 0.0, 0.0]
        self._began = 0.0
        gc.callbacks.append(self._observe)

    def reset(self) -> None:
        """Start counting afresh."""
        self.count = [0, 0, 0]
        self.seconds = [0.0, 0.0, 0.0]
        self.longest = [0.0, 0.0, 0.0]

    def _observe(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._began = time.perf_counter()
        else:
            took = time.perf_counter() - self._began
            generation = info["generation"]
            self.count[generation] += 1
            self.seconds[generation] += took
            self.longest[generation] = max(self.longest[generation], took)


COLLECTIONS: Collections | None = None  # set in the server process only


def install_collections() -> Collections:
    """Time the collector's passes in this process from now on (``stats`` reports them)."""
    global COLLECTIONS
    COLLECTIONS = Collections()
    return COLLECTIONS


class Waiters(Protocol):
    """Agents waiting in this process: the relay's in ``ask()``, or the bare program's."""

    answered: int
    failed: int

    @property
    def posted(self) -> int:
        """Agents whose question was posted."""
        ...

    async def ask(self, count: int) -> float:
        """Start ``count`` more agents; the seconds until all of them were posted."""
        ...

    async def count_pending(self) -> int:
        """Asks pending."""
        ...


class Agents:
    """Agents blocked in ``provider.ask()``, started in waves so that posts stay bounded."""

    def __init__(self, provider: SlackProvider, *, wave: int = _WAVE) -> None:
        self.provider = provider
        self.wave = wave
        self.started = 0
        self.answered = 0
        self.failed = 0
        self.posted = 0
        self._tasks: set[asyncio.Task[None]] = set()
        self._wave_done = asyncio.Event()
        provider.events.subscribe(self._observe)

    def _observe(self, event: AskEvent) -> None:
        if event.name == "posted":
            self.posted += 1
            self._check()

    def _check(self) -> None:
        if self.posted + self.failed >= self.started:
            self._wave_done.set()

    async def _agent(self, number: int) -> None:
        try:
            await self.provider.ask(request(number))
            self.answered += 1
        except Exception:
            self.failed += 1
            self._check()

    async def ask(self, count: int) -> float:
        """Start ``count`` more agents; the seconds until all of them were posted."""
        began = time.perf_counter()
        target = self.started + count
        while self.started < target:
            wave = min(self.wave, target - self.started)
            self._wave_done.clear()
            for number in range(self.started, self.started + wave):
                task = asyncio.create_task(self._agent(number))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
            self.started += wave
            await asyncio.wait_for(self._wave_done.wait(), timeout=120)
        return time.perf_counter() - began

    async def count_pending(self) -> int:
        """Asks pending in the provider's store."""
        return await self.provider.store.count_pending()

    async def close(self) -> None:
        """Let every agent finish (the provider's close ends the pending asks)."""
        await asyncio.gather(*self._tasks, return_exceptions=True)


def spread_over(channels: int) -> Route:
    """A route that sends ask number n (its question id is ``q<n>``) to channel n mod
    ``channels``: the relay posts one message at a time per channel."""
    names = [f"{CHANNEL}{n:02d}" for n in range(channels)]

    def route(ask: AskUserQuestionRequest) -> SlackTarget:
        return SlackTarget(channel=names[int(ask.questions[0].id[1:]) % channels])

    return route


async def run(
    kind: str, slack_url: str, redis_url: str | None = None, *, channels: int = 1
) -> None:
    """Serve, then obey commands until ``quit`` or end of input."""
    client = AsyncWebClient(token=BOT_TOKEN, base_url=slack_url)
    provider: SlackProvider | None = None
    agents: Agents | None = None
    waiting: WaitingAgents | None = None
    if kind == "relay":
        store = None
        if redis_url is not None:
            from relay.store.redis import RedisStore

            store = RedisStore(url=redis_url)
        provider = SlackProvider(
            client=client,
            signing_secret=SECRET,
            channel=CHANNEL,
            route=spread_over(channels) if channels > 1 else None,
            store=store,
        )
        # Smaller waves on Redis: redis-py's pool held 100 connections (issue 17's "before").
        agents = Agents(provider, wave=_WAVE if redis_url is None else 50)
        app = provider.web_app()
    elif kind == "bare":
        waiting = WaitingAgents()
        app = bare_program_app(waiting)
    elif kind == "bolt":
        app = bare_bolt_app(client).web_app(path="/slack/events")
    elif kind == "bolt_bot":
        app = bolt_bot_app(client).web_app(path="/slack/events")
    else:
        app = floor_app()
    runner, port = await serve(app)
    reply({"port": port})
    loop = asyncio.get_running_loop()
    try:
        while line := await loop.run_in_executor(None, sys.stdin.readline):
            command, *rest = line.split()
            if command == "quit":
                break
            if command == "slack_url":
                client.base_url = rest[0]
                reply({"slack_url": rest[0]})
                continue
            reply(await obey(command, rest, agents or waiting))
    finally:
        if provider is not None:
            await provider.aclose()
        if agents is not None:
            await agents.close()
        if waiting is not None:
            await waiting.close()
        await runner.cleanup()


async def obey(command: str, args: list[str], agents: Waiters | None) -> dict[str, Any]:
    """Carry out one command; its answer."""
    if command == "stats":
        loop = asyncio.get_running_loop()
        usage = resource.getrusage(resource.RUSAGE_SELF)
        out: dict[str, Any] = {
            "cpu": time.process_time(),
            "user_cpu": usage.ru_utime,
            "system_cpu": usage.ru_stime,
            "context_switches": usage.ru_nvcsw + usage.ru_nivcsw,
            "rss": rss_bytes(),
            # Timers the loop holds: a timer per pending ask would show here.
            "timers": len(getattr(loop, "_scheduled", ())),
            "tasks": len(asyncio.all_tasks()),
            "gc_count": list(COLLECTIONS.count) if COLLECTIONS else None,
            "gc_seconds": list(COLLECTIONS.seconds) if COLLECTIONS else None,
            "gc_longest": list(COLLECTIONS.longest) if COLLECTIONS else None,
            "gc_threshold": list(gc.get_threshold()),
            "cpus": sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        }
        if agents is not None:
            out.update(
                answered=agents.answered,
                failed=agents.failed,
                posted=agents.posted,
                pending=await agents.count_pending(),
            )
        # Counting tasks walks every waiting ask's: a round starts its CPU count here, so
        # that the cost of its own stats is not charged to the clicks it measures.
        out["cpu_end"] = time.process_time()
        return out
    if command == "gc_mode":
        gc.unfreeze()
        gc.set_threshold(*_PYTHON_GC)
        if args[0] == "relay":
            tune_gc()
        return {"gc_threshold": list(gc.get_threshold())}
    if command == "tracked":
        return {"objects": len(gc.get_objects()), "frozen": gc.get_freeze_count()}
    if command == "count_calls":
        return _count_calls(args)
    if command == "gc_reset":
        if COLLECTIONS is not None:
            COLLECTIONS.reset()
        return {"reset": True}
    if command == "gc":
        began = time.perf_counter()
        gc.collect()
        return {"rss": rss_bytes(), "seconds": time.perf_counter() - began}
    if command == "idle":
        seconds = float(args[0])
        cpu = time.process_time()
        await asyncio.sleep(seconds)
        return {"cpu": time.process_time() - cpu, "seconds": seconds}
    if command == "trace_requests":
        gc.collect()
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        held = [request(n) for n in range(int(args[0]))]
        size = tracemalloc.get_traced_memory()[0] - before
        tracemalloc.stop()
        del held
        return {"bytes": size}
    if agents is None:
        raise SystemExit(f"{command} needs the relay")
    if command == "ask":
        return {"seconds": await agents.ask(int(args[0])), "posted": agents.posted}
    if command == "trace_ask":
        count = int(args[0])
        gc.collect()
        tracemalloc.start(1)
        snapshot = tracemalloc.take_snapshot()
        seconds = await agents.ask(count)
        await asyncio.sleep(0.5)  # let connections to the fake settle back into the pool
        gc.collect()
        after = tracemalloc.take_snapshot()
        tracemalloc.stop()
        by_file: Counter[str] = Counter()
        for stat in after.compare_to(snapshot, "filename"):
            by_file[_short(stat.traceback[0].filename)] += stat.size_diff
        return {
            "seconds": seconds,
            "bytes": sum(by_file.values()),
            "by_file": dict(by_file.most_common(15)),
        }
    raise SystemExit(f"unknown command {command!r}")


_PROFILE: list[cProfile.Profile] = []


def _count_calls(args: list[str]) -> dict[str, Any]:
    if args[0] == "on":
        if not _PROFILE:
            _PROFILE.append(cProfile.Profile())
            _PROFILE[0].enable()
        return {"counting": True}
    if not _PROFILE:
        raise SystemExit("count_calls off without count_calls on")
    profile = _PROFILE.pop()
    profile.disable()
    stats = pstats.Stats(profile)
    if len(args) > 1:
        stats.dump_stats(args[1])
    calls: Counter[str] = Counter()  # functions written in Python (not C builtins)
    callbacks = 0
    for (filename, line, name), row in stats.stats.items():  # type: ignore[attr-defined]
        if filename != "~":
            calls[f"{_short(filename)}:{line}({name})"] += row[1]
        if name == "_run" and filename.endswith("asyncio/events.py"):
            callbacks += row[1]
    return {
        "calls": stats.total_calls,  # type: ignore[attr-defined]
        "python_calls": sum(calls.values()),
        "callbacks": callbacks,
        "most_called": dict(calls.most_common(25)),
    }


def _short(filename: str) -> str:
    for marker in ("site-packages/", "/relay/", "/lib/python3"):
        if marker in filename:
            return (
                filename.split(marker, 1)[1]
                if marker != "/relay/"
                else "relay/" + (filename.split(marker, 1)[1])
            )
    return filename


def reply(data: dict[str, Any]) -> None:
    """One JSON line to the parent."""
    sys.stdout.write(json.dumps(data) + "\n")
    sys.stdout.flush()


def main() -> None:
    """Parse the command line and serve."""
    parser = argparse.ArgumentParser(description="a server under test (see bench/server.py)")
    parser.add_argument("kind", choices=["relay", "bolt", "bolt_bot", "floor", "bare"])
    parser.add_argument("--slack-url", required=True)
    parser.add_argument("--cpu", type=int, default=None)
    parser.add_argument("--redis-url", default=None)
    parser.add_argument("--channels", type=int, default=1)
    args = parser.parse_args()
    if args.cpu is not None:
        pin_to_cpu(args.cpu)
    install_collections()
    tune_gc()  # as relay serve does (``gc_mode python`` undoes it)
    asyncio.run(run(args.kind, args.slack_url, args.redis_url, channels=args.channels))


class Child:
    """The parent's handle on a ``bench.server`` process."""

    def __init__(self, process: asyncio.subprocess.Process, port: int) -> None:
        self.process = process
        self.port = port

    @classmethod
    async def start(
        cls,
        kind: str,
        *,
        slack_url: str,
        cpu: int | None = None,
        redis_url: str | None = None,
        channels: int = 1,
        cwd: str | None = None,
    ) -> Child:
        """Start a server process and wait for its port (``cwd``: run another source tree's
        ``bench.server`` and relay, a checkout of an earlier commit say)."""
        command = ["bench.server", kind, "--slack-url", slack_url]
        if cpu is not None:
            command += ["--cpu", str(cpu)]
        if redis_url is not None:
            command += ["--redis-url", redis_url]
        if channels > 1:
            command += ["--channels", str(channels)]
        return await cls.spawn(command, cwd=cwd)

    @classmethod
    async def spawn(cls, module: list[str], *, cwd: str | None = None) -> Child:
        """Run ``python -m`` with ``module`` (a module that speaks this one's protocol, and
        its arguments) and wait for its port."""
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            *module,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            cwd=cwd,
        )
        child = cls(process, 0)
        child.port = int((await child._read())["port"])
        return child

    async def _read(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = await self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"the server exited with {await self.process.wait()}")
        data: dict[str, Any] = json.loads(line)
        return data

    async def command(self, *words: object) -> dict[str, Any]:
        """Send one command; its answer."""
        assert self.process.stdin is not None
        self.process.stdin.write((" ".join(map(str, words)) + "\n").encode())
        await self.process.stdin.drain()
        return await self._read()

    async def stop(self) -> None:
        """Kill it: its figures are taken, and a graceful close would withdraw every pending
        ask, one ``chat.update`` each, which is not what is being measured."""
        if self.process.returncode is None:
            self.process.kill()
        await self.process.wait()


if __name__ == "__main__":
    main()
