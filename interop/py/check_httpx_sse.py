"""httpx-sse as a client of ssekit servers.

1. The reconnect scenario of interop_server (multi-line, non-ASCII, custom types, ids,
   retry, keep-alive comments, a server-side disconnect, a resume with Last-Event-ID).
2. An ORS tool call on `ssekit serve`: a chunked result reassembled as the ORS docs' Python
   client does it (buffer `chunk` data, append `end` data, json.loads), small result, error.
3. The Responses stream of `ssekit serve`: text deltas joined.
usage: check_httpx_sse.py INTEROP_URL SSEKIT_URL EXPECTED_JSON
"""
import json
import os
import sys

import httpx
from httpx_sse import connect_sse
from httpx_sse._decoders import SSEDecoder  # the decoder iter_sse uses

interop, ssekit, expected_path = sys.argv[1:4]
expected = json.load(open(expected_path, encoding="utf-8"))
T = httpx.Timeout(10.0)


def check(cond, what):
    if not cond:
        raise AssertionError(what)
    print("  ok:", what)


def as_dict(sse):
    return {"type": sse.event, "lastEventId": sse.id, "data": sse.data}


with httpx.Client(timeout=T) as client:
    # --- 1. the reconnect scenario --------------------------------------------------------
    got, retry = [], None
    with connect_sse(client, "GET", f"{interop}/events?run=httpx-{os.getpid()}") as es:
        check(es.response.headers["content-type"].startswith("text/event-stream"), "content-type is text/event-stream")
        for sse in es.iter_sse():
            if sse.retry is not None:
                retry = sse.retry
            got.append(as_dict(sse))
    # the server ended the response after event 3.
    # httpx-sse 0.4.3 dispatches a blank line as an empty event once any id was seen (its
    # `_last_event_id` persists). ssekit's keep-alive is a comment line with no blank line after
    # it (`: ping\n`), so no phantom event may appear.
    check(got == expected[:3], f"first connection: events 1-3 exactly, in order, no phantom events ({len(got)} events)")
    check(retry == 700, f"retry: 700 reached the client (got {retry})")
    last_id = got[-1]["lastEventId"]
    # resume the way a client does: Last-Event-ID of the last event received
    got2 = []
    with connect_sse(client, "GET", f"{interop}/events?run=httpx-{os.getpid()}", headers={"Last-Event-ID": last_id}) as es:
        for sse in es.iter_sse():
            got2.append(as_dict(sse))
            if sse.event == "done":
                break
    check(got2 == expected[3:], "resume with Last-Event-ID: 3 replays 4 and 5 (missed), then 6 live")
    log = client.get(f"{interop}/log?run=httpx-{os.getpid()}").json()["connections"]
    check([c["last_event_id"] for c in log] == [None, "3"], "the server saw no Last-Event-ID, then '3'")

    # keep-alive comments on the wire, and httpx-sse's decoder yields no event for them
    raw = b""
    with client.stream("GET", f"{interop}/events?run=httpx-raw-{os.getpid()}") as r:
        for piece in r.iter_bytes():
            raw += piece
    text = raw.decode("utf-8")
    check(text.count(": ping\n") >= 3, f"keep-alive comments between events ({text.count(': ping')} seen)")
    check(": ping\n\n" not in text, "keep-alive comments carry no blank line")
    dec, decoded = SSEDecoder(), []
    for line in text.split("\n")[:-1]:  # the last piece is what follows the final LF
        sse = dec.decode(line)
        if sse is not None:
            decoded.append(as_dict(sse))
    check(decoded == expected[:3], f"the raw bytes decode to the same 3 events and nothing else ({len(decoded)})")

    # --- 2. ORS on `ssekit serve` ---------------------------------------------------------
    def ors_session():
        with connect_sse(client, "POST", f"{ssekit}/create_session", json={}) as es:
            evs = [(s.event, s.data) for s in es.iter_sse()]
        check([e for e, _ in evs] == ["task_id", "end"], f"create_session is SSE task_id + end ({evs})")
        sid = evs[0][1]
        spec = client.post(f"{ssekit}/gsm8k/tasks", json={"split": "test"}).json()["tasks"][0]
        r = client.post(f"{ssekit}/create", headers={"X-Session-ID": sid}, json={"env_name": "gsm8k", "task_spec": spec})
        check(r.status_code == 200 and r.json()["sid"] == sid, "/create answers {sid}")
        return sid

    def ors_call(sid, name, tool_input):
        """The ORS docs' Python client loop, on httpx-sse events."""
        buffer, kinds, task_id = "", [], None
        with connect_sse(client, "POST", f"{ssekit}/gsm8k/call",
                         headers={"X-Session-ID": sid, "Accept": "text/event-stream"},
                         json={"name": name, "input": tool_input}) as es:
            for sse in es.iter_sse():
                kinds.append(sse.event)
                if sse.event == "task_id":
                    task_id = sse.data
                elif sse.event == "chunk":
                    buffer += sse.data
                elif sse.event == "end":
                    return task_id, kinds, json.loads(buffer + sse.data)
                elif sse.event == "error":
                    return task_id, kinds, RuntimeError(sse.data)
        raise AssertionError(f"stream ended without end/error: {kinds}")

    sid = ors_session()
    task_id, kinds, res = ors_call(sid, "submit", {"answer": 33})
    check(kinds == ["task_id", "end"] and len(task_id) == 32, f"small result: task_id, end ({kinds})")
    check(res["ok"] is True and res["output"]["reward"] == 1.0 and res["output"]["finished"] is True
          and res["output"]["blocks"][0]["text"] == "Correct!", "small result: ok, reward 1.0, finished, 'Correct!'")
    check("metadata" in res["output"], "output carries a metadata key (the SDK reads it unconditionally)")

    task_id, kinds, res = ors_call(sid, "work", {"steps": 300})
    n_chunks = kinds.count("chunk")
    check(kinds[0] == "task_id" and kinds[-1] == "end" and n_chunks >= 10 and set(kinds[1:-1]) == {"chunk"},
          f"chunked result: task_id, {n_chunks} chunks, end")
    lines = res["output"]["blocks"][0]["text"].splitlines()
    check(len(lines) == 300 and lines[0].startswith("Step 1: re-reading the problem — «Tom has 3 baskets")
          and lines[299].startswith("Step 300:") and lines[0].endswith("42 − 9 = 33."),
          "chunked result reassembled: 300 lines, non-ASCII intact, first and last line exact")

    # the same call read the docs' raw way: httpx iter_lines, `event: ` / `data: ` prefixes
    buffer, event_type, result = "", "", None
    with client.stream("POST", f"{ssekit}/gsm8k/call", headers={"X-Session-ID": sid, "Accept": "text/event-stream"},
                       json={"name": "work", "input": {"steps": 300}}) as r:
        for line in r.iter_lines():
            if line.startswith("event: "):
                event_type = line[7:]
            elif line.startswith("data: "):
                data = line[6:]
                if event_type == "end":
                    result = json.loads(buffer + data)
                    break
                elif event_type == "chunk":
                    buffer += data
    check(result is not None and result["output"]["blocks"][0]["text"].splitlines() == lines,
          "the docs' raw httpx line loop reassembles the same 300 lines")

    _, kinds, res = ors_call(sid, "nope", {})
    check(isinstance(res, RuntimeError) and "'nope' is not a valid tool" in str(res),
          f"unknown tool: error event ({kinds}, {res!r})")
    _, kinds, res = ors_call("no-such-session", "submit", {"answer": 1})
    check(isinstance(res, RuntimeError) and "Session not found" in str(res), f"unknown session: error event ({res!r})")
    client.post(f"{ssekit}/delete", headers={"X-Session-ID": sid})

    # --- 3. the Responses stream of `ssekit serve` ----------------------------------------
    deltas, kinds, ids = [], [], []
    with connect_sse(client, "POST", f"{ssekit}/v1/responses", json={"input": "hi"}) as es:
        for sse in es.iter_sse():
            kinds.append(sse.event)
            ids.append(sse.id)
            payload = sse.json()
            if payload["type"] != sse.event:
                raise AssertionError(f"event name {sse.event} != data type {payload['type']}")
            if sse.event == "response.output_text.delta":
                deltas.append(payload["delta"])
            if sse.event == "response.completed":
                break
    check(kinds[0] == "response.created" and kinds[-1] == "response.completed", "Responses: created ... completed")
    check(ids == [str(i) for i in range(1, len(ids) + 1)], "Responses: ids 1..n")
    check("".join(deltas) == "Natalia sold 48 clips in April and 24 in May, so 72 clips in all.",
          f"Responses: {len(deltas)} text deltas join to the answer")
print("PASS httpx-sse")
