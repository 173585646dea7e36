"""ssekit's client (`ssekit tail --profile ors --json --once`) against an sse-starlette server
(the library the ORS docs use server-side) streaming ORS tool calls the docs' way: task_id,
pings (sse-starlette's own, CRLF line endings), 4096-character chunks, end; a small result;
and an error. The server runs in this process (uvicorn on 127.0.0.1, a free port).
usage: check_ssekit_vs_starlette.py PATH_TO_SSEKIT
"""
import asyncio
import json
import socket
import subprocess
import sys
import threading
import time

import uvicorn
from sse_starlette import EventSourceResponse
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.routing import Route

ssekit = sys.argv[1]


def check(cond, what):
    if not cond:
        raise AssertionError(what)
    print("  ok:", what)


def big_result():
    text = "".join(f"Schritt {i}: «größer» — 漢字 ✓ line {i}\n" for i in range(1, 401))
    return {"ok": True, "output": {"blocks": [{"type": "text", "text": text, "detail": None}],
                                  "metadata": {"steps": 400}, "reward": None, "finished": False}}


SMALL = {"ok": True, "output": {"blocks": [{"type": "text", "text": "Correct!", "detail": None}],
                                "metadata": None, "reward": 1.0, "finished": True}}


async def call(request: Request):
    body = await request.json()
    name = body["name"]

    async def gen():
        yield {"event": "task_id", "data": "5a05c55ee16845eea9c8870778ab61bd"}
        await asyncio.sleep(0.35)  # long enough for sse-starlette's pings (every 0.1 s)
        if name == "boom":
            yield {"event": "error", "data": "tool exploded: ValueError('bad input')"}
            return
        result = big_result() if name == "work" else SMALL
        result_json = json.dumps(result, ensure_ascii=False)
        # the ORS docs' server: 4096-character chunks, the last one as `end`
        if len(result_json) > 4096:
            for i in range(0, len(result_json), 4096):
                chunk = result_json[i:i + 4096]
                yield {"event": "end" if i + 4096 >= len(result_json) else "chunk", "data": chunk}
        else:
            yield {"event": "end", "data": result_json}

    return EventSourceResponse(gen(), ping=0.1)


app = Starlette(routes=[Route("/{env}/call", call, methods=["POST"])])
sock = socket.socket()
sock.bind(("127.0.0.1", 0))
port = sock.getsockname()[1]
sock.close()
server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
threading.Thread(target=server.run, daemon=True).start()
for _ in range(100):
    if server.started:
        break
    time.sleep(0.05)
base = f"http://127.0.0.1:{port}"


def tail(name):
    out = subprocess.run(
        [ssekit, "tail", f"{base}/gsm8k/call", "-d", json.dumps({"name": name, "input": {}}),
         "-H", "X-Session-ID: s1", "-H", "Content-Type: application/json",
         "--profile", "ors", "--json", "--once"],
        capture_output=True, text=True, timeout=30)
    items = [json.loads(line) for line in out.stdout.splitlines() if line.strip()]
    return out.returncode, items, out.stderr


# raw check that the server really uses CRLF and pings
import httpx  # noqa: E402

with httpx.Client(timeout=10) as h:
    raw = h.post(f"{base}/gsm8k/call", json={"name": "submit", "input": {}}).content
check(b"\r\n" in raw and b": ping" in raw, "sse-starlette writes CRLF line endings and ': ping' comments")

code, items, err = tail("work")
events = [i for i in items if i["type"] == "event"]
comments = [i for i in items if i["type"] == "comment"]
kinds = [e["event"] for e in events]
result_json = json.dumps(big_result(), ensure_ascii=False)
n_chunks = -(-len(result_json) // 4096) - 1
check(code == 0, f"tail exits 0 at the end event (rc={code}, {err.strip()})")
check(kinds == ["task_id"] + ["chunk"] * n_chunks + ["end"], f"task_id, {n_chunks} chunks, end, in order")
check(events[0]["data"] == "5a05c55ee16845eea9c8870778ab61bd", "task_id data")
check(len(comments) >= 1 and all(c["text"].startswith("ping") for c in comments),
      f"{len(comments)} keep-alive comments seen as comments, not events")
joined = "".join(e["data"] for e in events[1:])
check(joined == result_json, f"chunks + end join to the server's JSON, byte for byte ({len(joined.encode())} bytes)")
check(json.loads(joined) == big_result(), "the reassembled result parses to the server's object")

code, items, err = tail("submit")
events = [i for i in items if i["type"] == "event"]
check(code == 0 and [e["event"] for e in events] == ["task_id", "end"] and json.loads(events[1]["data"]) == SMALL,
      "small result: task_id, end with the whole result")

code, items, err = tail("boom")
events = [i for i in items if i["type"] == "event"]
check([e["event"] for e in events] == ["task_id", "error"] and events[1]["data"] == "tool exploded: ValueError('bad input')",
      f"error case: task_id, error with its message (rc={code})")
print(f"  (tail on the error case exits {code}: {err.strip() or 'no stderr'})")
server.should_exit = True
print("PASS ssekit-client-vs-sse-starlette")
