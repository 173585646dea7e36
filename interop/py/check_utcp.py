"""ssekit's UTCP SSE provider against the official UTCP client (`utcp` + `utcp-http`): one
SSE tool server (aiohttp, in this process, on 127.0.0.1) serves at /utcp a manual written by
the official serializer and records every request; each tool is called once by the official
client (UtcpClient.call_tool) and once by ssekit (the `utcp_call` example of ssekit-hyper);
the recorded requests and the results are compared. Where ssekit differs on purpose (see
utcp/src/lib.rs, "Differences from the official client"), the difference is asserted.
usage: check_utcp.py PATH_TO_UTCP_CALL
"""
import asyncio
import base64
import json
import logging
import subprocess
import sys
import threading
from urllib.parse import parse_qsl

from aiohttp import web

from utcp.data.tool import JsonSchema, Tool
from utcp.data.utcp_manual import UtcpManual, UtcpManualSerializer
from utcp.data.auth_implementations.api_key_auth import ApiKeyAuth
from utcp.data.auth_implementations.basic_auth import BasicAuth
from utcp.plugins.plugin_loader import ensure_plugins_initialized
from utcp.utcp_client import UtcpClient
from utcp_http.http_call_template import HttpCallTemplate
from utcp_http.sse_call_template import SseCallTemplate

utcp_call = sys.argv[1]
logging.disable(logging.CRITICAL)  # the official client logs every step at INFO
ensure_plugins_initialized()

# Request headers compared between the clients (aiohttp's own User-Agent, Host,
# Accept-Encoding and Content-Length are not the tool's business).
COMPARED = ("accept", "content-type", "last-event-id", "authorization", "cookie", "x-api-key",
            "x-static", "x-flag", "x-off", "x-count", "x-ratio", "x-none", "x-obj", "x-text")

failures = []


def check(cond, what):
    print(("  ok: " if cond else "  FAIL: ") + what, flush=True)
    if not cond:
        failures.append(what)


# --- the server --------------------------------------------------------------------------
log = []  # every request: dict(method, path, query, headers, body)
manual_json = {}


def event(data, id=None, kind=None):
    out = ""
    if kind:
        out += f"event: {kind}\n"
    if id is not None:
        out += f"id: {id}\n"
    data = data if isinstance(data, str) else json.dumps(data)
    for line in data.split("\n"):
        out += f"data: {line}\n"
    return (out + "\n").encode()


async def stream(request, chunks, then=None):
    resp = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
    await resp.prepare(request)
    for chunk in chunks:
        await resp.write(chunk)
    if then == "reset":  # cut inside an event: half an event, then a TCP reset
        await resp.write(b"data: cut before its en")
        await asyncio.sleep(0.05)
        request.transport.abort()
        return resp
    if then == "half":  # a clean end of the body, inside an event
        await resp.write(b"id: 9\ndata: the end of this event never comes")
    await resp.write_eof()
    return resp


async def handle(request):
    body = await request.read()
    entry = {
        "method": request.method,
        "path": request.raw_path.split("?", 1)[0],
        "query": sorted(parse_qsl(request.query_string, keep_blank_values=True)),
        "headers": {k.lower(): v for k, v in request.headers.items() if k.lower() in COMPARED},
        "body": body,
    }
    if request.path == "/utcp":
        return web.json_response(manual_json)
    log.append(entry)
    name = request.path.strip("/").split("/")[0]
    last = request.headers.get("Last-Event-ID")
    text = body.decode("utf-8", "replace")
    is_json = "json" in request.headers.get("Content-Type", "")
    echo = {"method": request.method, "body": json.loads(text) if is_json else text}
    if name in ("ticker", "query_key", "cookie_key", "basic", "header_fields", "items"):
        return await stream(request, [event("not for this tool", kind="other"),
                                      event({"price": 1, "echo": echo}, id="1", kind="price"),
                                      event({"price": 2}, id="2", kind="price")])
    if name.startswith("post_"):
        return await stream(request, [event({"echo": echo}, id="1")])
    if name == "text":
        return await stream(request, [event("plain words"), event("two\nlines"), event({"n": 1})])
    if name in ("resume_get", "resume_post"):
        if last is None:
            return await stream(request, [event({"n": 1}, id="1")], then="reset")
        return await stream(request, [event({"n": 2}, id="2")])
    if name == "end_inside_event":
        if last is None:
            return await stream(request, [event({"n": 1}, id="1")], then="half")
        return await stream(request, [event({"n": 2}, id="2")])
    if name == "replay":  # ignores Last-Event-ID: replays everything
        if last is None:
            return await stream(request, [event({"n": 1}, id="1"), event({"n": 2}, id="2")], then="reset")
        return await stream(request, [event({"n": i}, id=str(i)) for i in (1, 2, 3)])
    if name == "schema":
        return await stream(request, [event({"price": 1}), event({"price": "2"}), event({"price": 3})])
    return web.Response(status=404)


def serve():
    loop = asyncio.new_event_loop()
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", handle)
    runner = web.AppRunner(app, access_log=None)
    loop.run_until_complete(runner.setup())
    site = web.TCPSite(runner, "127.0.0.1", 0)
    loop.run_until_complete(site.start())
    port = site._server.sockets[0].getsockname()[1]
    threading.Thread(target=loop.run_forever, daemon=True).start()
    return f"http://127.0.0.1:{port}"


base = serve()

# --- the manual, by the official serializer ------------------------------------------------
obj = JsonSchema(type="object")
price = JsonSchema(type="object", properties={"price": JsonSchema(type="number")}, required=["price"])


def sse(path, **kw):
    # No name: the official library makes up a random one; ssekit reads it as optional.
    return SseCallTemplate(url=base + path, **kw)


TOOLS = {
    "ticker": (sse("/ticker", event_type="price"),
               {"symbol": "AAPL & co", "limit": 2, "ratio": 1.5, "big": 1e20, "when": "a/b?c=d"}),
    "query_key": (sse("/query_key", event_type="price", auth=ApiKeyAuth(api_key="k 1", var_name="key", location="query")), {}),
    "cookie_key": (sse("/cookie_key", event_type="price", auth=ApiKeyAuth(api_key="k-1", var_name="session", location="cookie")), {}),
    "basic": (sse("/basic", event_type="price", auth=BasicAuth(username="user", password="p:ss")), {}),
    "basic_utf8": (sse("/basic", event_type="price", auth=BasicAuth(username="user", password="pä")), {}),
    "header_fields": (sse("/header_fields", event_type="price", headers={"X-Static": "s"},
                          header_fields=["x-flag", "x-off", "x-count", "x-ratio", "x-none", "x-obj", "x-text"],
                          auth=ApiKeyAuth(api_key="k-123", var_name="X-Api-Key")),
                      {"x-flag": True, "x-off": False, "x-count": 3, "x-ratio": 1e20, "x-none": None,
                       "x-obj": {"a": [1, None, "it's"], "b": 0.5}, "x-text": "plain", "q": "rest"}),
    "items": (sse("/items/{item_id}/events", event_type="price"), {"item_id": "a/b c", "q": "z"}),
    "post_json": (sse("/post_json", body_field="payload", headers={"Content-Type": "application/json"}),
                  {"payload": {"q": "up?", "n": [1, 2.5], "ok": True}}),
    "post_form": (sse("/post_form", body_field="payload"),
                  {"payload": {"a": "x y", "b": 2, "c": True, "d": ["p", "q"], "e": None}}),
    "post_text": (sse("/post_text", body_field="payload"), {"payload": "héllo wörld & more"}),
    "post_null": (sse("/post_null", body_field="payload"), {"payload": None, "q": "1"}),
    "text": (sse("/text"), {}),
    "resume_get": (sse("/resume_get", retry_timeout=50), {"q": "1"}),
    "resume_post": (sse("/resume_post", retry_timeout=50, body_field="payload",
                        headers={"Content-Type": "application/json"}), {"payload": {"q": 1}}),
    "end_inside_event": (sse("/end_inside_event", retry_timeout=50), {}),
    "replay": (sse("/replay", retry_timeout=50), {}),
    "schema": (sse("/schema"), {}),
    "needs_symbol": (sse("/ticker", event_type="price"), {}),
}
tools = []
for name, (template, _inputs) in TOOLS.items():
    outputs = price if name in ("schema",) else JsonSchema()
    inputs = JsonSchema(type="object", properties={"symbol": JsonSchema(type="string")},
                        required=["symbol"]) if name == "needs_symbol" else obj
    tools.append(Tool(name=name, inputs=inputs, outputs=outputs, tool_call_template=template))
# A tool of another protocol: the official client leaves it out with a logged warning,
# ssekit keeps it and reports it.
tools.append(Tool(name="fetch", tool_call_template=HttpCallTemplate(url=base + "/fetch")))
manual_json.update(UtcpManualSerializer().to_dict(UtcpManual(tools=tools)))
text = json.dumps(manual_json)
check('"const": null' in text and '"items": null' in text and '"headers": null' in text,
      "the official serializer's manual carries its nulls (const, items, headers)")


# --- the two clients ---------------------------------------------------------------------
async def official_calls():
    client = await UtcpClient.create(config={"manual_call_templates": [
        {"name": "demo", "call_template_type": "sse", "url": base + "/utcp"}]})
    out = {}
    for name, (_template, inputs) in TOOLS.items():
        start = len(log)
        try:
            result = ("ok", await asyncio.wait_for(client.call_tool("demo." + name, dict(inputs)), 20))
        except Exception as e:  # noqa: BLE001 - the error is the result
            result = ("error", f"{type(e).__name__}: {e}")
        out[name] = (result, log[start:])
    return out


def ssekit_calls():
    out = {}
    for name, (_template, inputs) in TOOLS.items():
        start = len(log)
        p = subprocess.run([utcp_call, base, name, json.dumps(inputs)], capture_output=True, text=True, timeout=30)
        if p.returncode == 0:
            result = ("ok", [json.loads(line) for line in p.stdout.splitlines()])
        else:
            result = ("error", p.stderr.strip())
        out[name] = (result, log[start:], p.stderr)
    return out


official = asyncio.run(official_calls())
ours = ssekit_calls()


def show(requests):
    return [(r["method"], r["path"], r["query"], r["headers"], r["body"]) for r in requests]


def same_requests(name, decode_body=None):
    a, b = official[name][1], ours[name][1]
    if decode_body:
        a = [dict(r, body=decode_body(r["body"])) for r in a]
        b = [dict(r, body=decode_body(r["body"])) for r in b]
    check(show(a) == show(b), f"{name}: same requests ({len(a)}): {show(a)!r}"
          + ("" if show(a) == show(b) else f" vs ssekit {show(b)!r}"))


def same_results(name):
    a, b = official[name][0], ours[name][0]
    check(a == b, f"{name}: same results {a!r}" + ("" if a == b else f" vs ssekit {b!r}"))


print("byte for byte: the same requests and results")
for name in ("ticker", "query_key", "cookie_key", "basic", "header_fields", "items",
             "post_form", "post_text", "post_null", "text", "resume_get"):
    same_requests(name)
    same_results(name)
# JSON bodies: the same JSON (aiohttp writes json.dumps' `", "` and `": "`, ssekit compact JSON).
same_requests("post_json", decode_body=json.loads)
same_results("post_json")
check(ours["post_json"][1][0]["body"] == b'{"n":[1,2.5],"ok":true,"q":"up?"}',
      "post_json: ssekit's body is compact JSON")
check(len(ours["resume_get"][1]) == 2 and ours["resume_get"][1][1]["headers"].get("last-event-id") == "1",
      "resume_get: both reconnect a cut GET with Last-Event-ID: 1")
check("not \"sse\"" in ours["ticker"][2] and "fetch" in ours["ticker"][2],
      "the manual's http tool: ssekit keeps it and warns on stderr: "
      + next((l for l in ours["ticker"][2].splitlines() if "fetch" in l), "(none)"))

print("deliberate differences (utcp/src/lib.rs, \"Differences from the official client\")")
# 1. A cut POST: the official client never re-sends a body, so it loses the call; ssekit
#    resumes it, re-sending the body with Last-Event-ID.
o, s = official["resume_post"], ours["resume_post"]
check(o[0][0] == "error" and len(o[1]) == 1, f"resume_post: official fails after one request: {o[0][1][:90]}")
check(s[0] == ("ok", [{"n": 1}, {"n": 2}]) and len(s[1]) == 2
      and s[1][1]["body"] == s[1][0]["body"] and s[1][1]["headers"].get("last-event-id") == "1",
      "resume_post: ssekit re-sends the body with Last-Event-ID: 1 and gets [1, 2]")
# 2. A body that ends inside an event: the official client ends the call there; ssekit
#    takes it for a cut and resumes.
o, s = official["end_inside_event"], ours["end_inside_event"]
check(o[0] == ("ok", [{"n": 1}]) and len(o[1]) == 1, f"end_inside_event: official ends with {o[0][1]}")
check(s[0] == ("ok", [{"n": 1}, {"n": 2}]) and s[1][1]["headers"].get("last-event-id") == "1",
      f"end_inside_event: ssekit resumes with Last-Event-ID: 1 and gets [1, 2]: {s[0]} {show(s[1])}")
# 3. A server that replays what the client has seen: ssekit drops the replayed ids.
o, s = official["replay"], ours["replay"]
check(o[0] == ("ok", [{"n": 1}, {"n": 2}, {"n": 1}, {"n": 2}, {"n": 3}]), f"replay: official repeats: {o[0][1]}")
check(s[0] == ("ok", [{"n": 1}, {"n": 2}, {"n": 3}]), f"replay: ssekit drops replayed ids: {s[0][1]}")
same_requests("replay")
# 4. Basic credentials beyond ASCII: aiohttp encodes them as Latin-1, ssekit as UTF-8
#    (RFC 7617's only declarable charset).
o, s = official["basic_utf8"], ours["basic_utf8"]
auth = lambda r: base64.b64decode(r[1][0]["headers"]["authorization"].split()[1])
check(auth(o) == "user:pä".encode("latin-1") and auth(s) == "user:pä".encode("utf-8") and o[0] == s[0],
      "basic_utf8: official sends Latin-1 credentials, ssekit UTF-8; the same results")
# 5. Schemas: ssekit checks each event against the tool's outputs, and inputs before sending.
o, s = official["schema"], ours["schema"]
check(o[0] == ("ok", [{"price": 1}, {"price": "2"}, {"price": 3}]), f"schema: official delivers all: {o[0][1]}")
check(s[0] == ("ok", [{"price": 1}, {"price": 3}]) and "refused:" in s[2] and "/price" in s[2],
      "schema: ssekit reports the mismatch on stderr and skips it")
o, s = official["needs_symbol"], ours["needs_symbol"]
check(o[0][0] == "ok" and len(o[1]) == 1, "needs_symbol: official sends the call without its required input")
check(s[0][0] == "error" and len(s[1]) == 0 and "/symbol" in s[0][1],
      f"needs_symbol: ssekit refuses before sending: {s[0][1].splitlines()[-1]}")

if failures:
    print(f"{len(failures)} check(s) failed")
    sys.exit(1)
