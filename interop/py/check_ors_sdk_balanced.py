"""The official ORS Python client (ors-sdk, `AsyncORS`), unchanged, through a real balancer
(nginx, round-robin, buffering off) in front of three `ssekit serve --store redis://...`
instances, while connections are cut and instances die (issue 32).

Phases, each asserting every call's outcome against the one expected:
1. many sessions, many calls (small, chunked, slow): two instances cut every new call's
   stream (`--cut-ors-after 1` and `2`: inside the result, or while the tool still runs),
   the SDK resumes by `task_id` and nginx sends the resume to whichever instance is next;
   every result must be byte-identical to the expected one, and the nginx log must show
   resumes served by the instance that cuts nothing, some of them waiting for a tool still
   running elsewhere (followed live);
2. SIGKILL of one instance while slow calls run: a call whose producer died ends with the
   ORS `error` event (the SDK raises, "task lost"), never a result; calls elsewhere give
   their result; new calls keep working on the survivors;
3. SIGTERM of another instance while slow calls run (a rolling restart): every running call
   gives its result, and, once that instance has exited, later calls go to the others.

usage: check_ors_sdk_balanced.py --url NGINX_URL --access-log PATH
           --kill NAME=ADDR=PID --term NAME=ADDR=PID --cut NAME=ADDR... [--sessions N]
(the --term instance is the one that cuts nothing)
"""
import argparse
import asyncio
import os
import signal
import sys
import time

from ors.client import AsyncORS

parser = argparse.ArgumentParser()
parser.add_argument("--url", required=True)
parser.add_argument("--access-log", required=True)
parser.add_argument("--kill", required=True, help="NAME=HOST:PORT=PID, the instance SIGKILLed")
parser.add_argument("--term", required=True, help="NAME=HOST:PORT=PID, the instance SIGTERMed")
parser.add_argument("--cut", action="append", required=True, help="NAME=HOST:PORT, an instance that cuts calls")
parser.add_argument("--sessions", type=int, default=12)
args = parser.parse_args()
kill_name, kill_addr, kill_pid = args.kill.split("=")
term_name, term_addr, term_pid = args.term.split("=")
failures = []


def check(cond, what):
    print(("  ok: " if cond else "  FAILED: ") + what, flush=True)
    if not cond:
        failures.append(what)


SOLUTION = "3 × 14 = 42 apples; 42 − 9 = 33."


def expected_work(question, steps):
    return "".join(f"Step {i}: re-reading the problem — «{question}» — and checking: {SOLUTION}\n"
                   for i in range(1, steps + 1))


def log_lines():
    """nginx's access log: (upstream, status, path, seconds, request body) per request, the upstream
    being the instance that answered (nginx lists the ones it tried first, refused)."""
    rows = []
    with open(args.access_log, encoding="utf-8", errors="replace") as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if len(parts) == 5:
                rows.append((parts[0].split(", ")[-1],) + tuple(parts[1:]))
    return rows


def exited(pid):
    """The process has exited (gone, or a zombie its parent has not reaped yet)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except FileNotFoundError:
        return True


async def outcome(session, tool, input):
    """("ok", text, reward, finished) or ("error", type name, message)."""
    try:
        r = await session.call_tool(tool, input)
        return ("ok", r.blocks[0].text, r.reward, r.finished)
    except Exception as e:  # the SDK raises RuntimeError for an ORS `error` event
        return ("error", type(e).__name__, str(e))


def is_expected(got, want):
    return got == ("ok",) + want


async def main():
    ors = AsyncORS(base_url=args.url)
    env = ors.environment("gsm8k")
    tasks = await env.list_tasks("test")
    task = tasks[0]
    question = task.task_spec["question"]
    check(question.startswith("Tom has 3 baskets"), "list_tasks through nginx")

    # --- phase 1: many sessions and calls, two instances cutting every new call -----------
    started = time.monotonic()
    before = len(log_lines())
    calls = [
        ("submit", {"answer": 33}, ("Correct!", 1.0, True)),
        ("submit", {"answer": 34}, ("Incorrect.", 0.0, True)),
        ("work", {"steps": 300}, (expected_work(question, 300), None, False)),
        ("work", {"delay_ms": 400, "steps": 40}, (expected_work(question, 40), None, False)),
        ("work", {"steps": 30}, (expected_work(question, 30), None, False)),
    ]
    # Cut on `a` by its second ping (2 s), resumed 0.5 s later while the tool still runs.
    # Three in a row, so that round-robin sends one to each instance however the sessions'
    # requests interleave (one alone can land on the same instance every time).
    calls += [("work", {"delay_ms": 4000, "steps": 40}, (expected_work(question, 40), None, False))] * 3

    async def one_session(n):
        async with env.session(task=task) as s:
            tools = [t.name for t in await s.list_tools()]
            prompt = (await s.get_prompt())[0].text
            got = []
            for _ in range(2):
                got += await asyncio.gather(*(outcome(s, tool, inp) for tool, inp, _ in calls))
            return s.sid, tools, prompt, got

    results = await asyncio.gather(*(one_session(n) for n in range(args.sessions)))
    total = bad = 0
    for sid, tools, prompt, got in results:
        check(tools == ["submit", "work", "fail"] and prompt.startswith("Tom has 3 baskets"),
              f"session {sid[:8]}: list_tools and get_prompt on whichever instance")
        for (tool, inp, want), g in zip(calls * 2, got):
            total += 1
            if not is_expected(g, want):
                bad += 1
                print(f"    {sid[:8]} {tool} {inp}: got {str(g)[:200]}")
    check(bad == 0, f"phase 1: {total} calls in {len(results)} sessions, every result byte-identical "
                    f"to the expected one ({time.monotonic() - started:.1f} s)")
    rows = log_lines()[before:]
    new_calls = [r for r in rows if r[2].endswith("/call") and "task_id" not in r[4]]
    resumes = [r for r in rows if r[2].endswith("/call") and "task_id" in r[4]]
    by_upstream = {}
    for r in new_calls:
        by_upstream[r[0]] = by_upstream.get(r[0], 0) + 1
    print(f"    new calls per instance: {by_upstream}; resumes by task_id: {len(resumes)}")
    check(len(by_upstream) == 3, "phase 1: nginx spread the new calls over the 3 instances")
    # The instance that cuts nothing only ever resumes tasks that ran on another instance.
    # Only `a` (--cut-ors-after 1) cuts a call while its tool runs (its pings are the
    # "next event"), so a resume that waited served by another instance followed a tool
    # running on `a`, live.
    on_plain = [r for r in resumes if r[0] == term_addr]
    live = [r for r in resumes if r[0] != kill_addr and float(r[3]) >= 0.3]
    check(len(resumes) >= len(by_upstream) and len(on_plain) > 0 and len(live) > 0,
          f"phase 1: the SDK resumed {len(resumes)} cut calls by task_id; {len(on_plain)} resumes went to "
          f"{term_name}, which cuts nothing (so the task ran elsewhere); {len(live)} resumes on b or c "
          f"followed a tool still running on {kill_name}, live (answered after "
          f"{min((float(r[3]) for r in live), default=0):.1f}-{max((float(r[3]) for r in live), default=0):.1f} s)")

    # --- phase 2: SIGKILL of one instance while slow calls run ----------------------------
    async with AsyncSessions(env, task, args.sessions) as sessions:
        before = len(log_lines())
        slow = ("work", {"delay_ms": 2500, "steps": 5}, (expected_work(question, 5), None, False))
        running = [asyncio.ensure_future(outcome(s, slow[0], slow[1])) for s in sessions]
        await asyncio.sleep(1.0)
        os.kill(int(kill_pid), signal.SIGKILL)
        t_kill = time.monotonic()
        print(f"    SIGKILL {kill_name} ({kill_addr}, pid {kill_pid}) with {len(running)} calls running")
        got = await asyncio.gather(*running)
        waited = time.monotonic() - t_kill
        ok = sum(1 for g in got if is_expected(g, slow[2]))
        lost = [g for g in got if g[0] == "error" and "task lost" in g[2]]
        other = [g for g in got if not is_expected(g, slow[2]) and g not in lost]
        rows = log_lines()[before:]
        # Calls a answered (200, then cut by the kill); one it never answered (502) the SDK
        # sends again, as a new call, to another instance.
        on_killed = sum(1 for r in rows if r[2].endswith("/call") and "task_id" not in r[4]
                        and r[0] == kill_addr and r[1] == "200")
        for g in other:
            print(f"    unexpected: {str(g)[:300]}")
        if lost:
            print(f"    e.g. {lost[0][1]}: {lost[0][2][:160]}")
        check(not other, f"phase 2: every call ended with its result ({ok}) or the ORS error "
                         f"'task lost' ({len(lost)}), nothing else, all within {waited:.1f} s of the kill")
        check(len(lost) == on_killed and len(lost) > 0,
              f"phase 2: 'task lost' for exactly the calls nginx had sent to {kill_name} ({on_killed})")
        after = await asyncio.gather(*(outcome(s, "submit", {"answer": 33}) for s in sessions for _ in range(2)))
        check(all(is_expected(g, ("Correct!", 1.0, True)) for g in after),
              f"phase 2: {len(after)} new calls after the kill, in the same sessions, on the survivors")

        # --- phase 3: SIGTERM of another instance while slow calls run (rolling restart) ---
        before = len(log_lines())
        slow = ("work", {"delay_ms": 2000, "steps": 40}, (expected_work(question, 40), None, False))
        running = [asyncio.ensure_future(outcome(s, slow[0], slow[1])) for s in sessions]
        await asyncio.sleep(0.7)
        os.kill(int(term_pid), signal.SIGTERM)
        print(f"    SIGTERM {term_name} ({term_addr}, pid {term_pid}) with {len(running)} calls running")
        got = await asyncio.gather(*running)
        rows = log_lines()[before:]
        on_term = sum(1 for r in rows if r[2].endswith("/call") and "task_id" not in r[4]
                      and r[0] == term_addr)
        for g in got:
            if not is_expected(g, slow[2]):
                print(f"    unexpected: {str(g)[:300]}")
        check(all(is_expected(g, slow[2]) for g in got) and on_term > 0,
              f"phase 3: all {len(got)} running calls gave their result, {on_term} of them "
              f"started on {term_name}")
        for _ in range(150):
            if exited(term_pid):
                break
            await asyncio.sleep(0.1)
        check(exited(term_pid), f"phase 3: {term_name} exited after draining")
        before = len(log_lines())
        after = await asyncio.gather(*(outcome(s, tool, inp) for s in sessions for tool, inp, _ in calls))
        want = [w for _ in sessions for _, _, w in calls]
        rows = log_lines()[before:]
        upstreams = {r[0] for r in rows if r[2].endswith("/call")}
        check(all(is_expected(g, w) for g, w in zip(after, want)),
              f"phase 3: {len(after)} later calls (small, chunked, slow) all gave their result")
        check(not upstreams & {term_addr, kill_addr},
              f"phase 3: later calls went to the survivor only ({', '.join(sorted(upstreams))})")


class AsyncSessions:
    """`n` open sessions of `env` on `task`, closed on exit."""

    def __init__(self, env, task, n):
        self.sessions = [env.session(task=task) for _ in range(n)]

    async def __aenter__(self):
        return await asyncio.gather(*(s.__aenter__() for s in self.sessions))

    async def __aexit__(self, *exc):
        await asyncio.gather(*(s.__aexit__(*exc) for s in self.sessions), return_exceptions=True)


asyncio.run(main())
if failures:
    print(f"FAIL ors-sdk behind nginx: {len(failures)} check(s) failed")
    sys.exit(1)
print("PASS ors-sdk behind nginx (cuts, SIGKILL, SIGTERM)")
