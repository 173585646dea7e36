"""The openai Python SDK consuming Responses-API streams served by ssekit.

1. interop_server's POST /v1/responses: a message streamed as text deltas, then a function
   call whose arguments are streamed as deltas; read raw (`responses.create(stream=True)`)
   and through the SDK's accumulating helper (`responses.stream()`).
2. `ssekit serve`'s POST /v1/responses (events carry ids), with keep-alive comments falling
   between events (a 15 ms keep-alive): read to the end without error.
usage: check_openai.py INTEROP_URL SSEKIT_PINGING_URL
"""
import json
import sys

import openai
from openai import OpenAI

interop, pinging = sys.argv[1:3]


def check(cond, what):
    if not cond:
        raise AssertionError(what)
    print("  ok:", what)


TEXT = "The weather in Zürich is — let me check ☀️."
ARGS = {"city": "Zürich", "unit": "c"}
client = OpenAI(base_url=f"{interop}/v1", api_key="interop-test", max_retries=0, timeout=10.0)
tools = [{"type": "function", "name": "get_weather", "parameters": {"type": "object", "properties": {}}}]

# --- 1a. raw events -----------------------------------------------------------------------
stream = client.responses.create(model="interop-model", input="weather?", tools=tools, stream=True)
events = list(stream)
kinds = [e.type for e in events]
check(kinds == ["response.created", "response.in_progress", "response.output_item.added",
                "response.content_part.added"] + ["response.output_text.delta"] * 4 +
      ["response.output_text.done", "response.content_part.done", "response.output_item.done",
       "response.output_item.added"] + ["response.function_call_arguments.delta"] * 3 +
      ["response.function_call_arguments.done", "response.output_item.done", "response.completed"],
      f"{len(events)} typed events, in order")
check([e.sequence_number for e in events] == list(range(len(events))), "sequence_number 0..n")
check(type(events[4]).__name__ == "ResponseTextDeltaEvent", f"deltas parse as {type(events[4]).__name__}")
text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
check(text == TEXT, f"text deltas join to {text!r}")
args = "".join(e.delta for e in events if e.type == "response.function_call_arguments.delta")
check(json.loads(args) == ARGS, f"function-call argument deltas join to {args}")
added = events[11].item
check((added.type, added.name, added.call_id) == ("function_call", "get_weather", "call_1"),
      "output_item.added carries the function call's name and call_id")
done = events[-1].response
check(done.status == "completed" and done.output_text == TEXT, "response.completed: status, output_text")
fc = [o for o in done.output if o.type == "function_call"][0]
check(json.loads(fc.arguments) == ARGS and fc.name == "get_weather", "response.completed carries the function call")
check(done.usage.total_tokens == 17, "usage parsed")

# --- 1b. the SDK's accumulating helper ------------------------------------------------------
with client.responses.stream(model="interop-model", input="weather?", tools=tools) as s:
    seen = [e.type for e in s]
    final = s.get_final_response()
check(seen[-1] == "response.completed" and len(seen) == len(kinds), "responses.stream() yields every event")
check(final.output_text == TEXT, "get_final_response().output_text")
calls = [o for o in final.output if o.type == "function_call"]
check(len(calls) == 1 and json.loads(calls[0].arguments) == ARGS, "get_final_response() has the function call")

# --- 2. ssekit serve (ids on every event) with keep-alive comments between events ---------
# The SDK's SSE decoder, like httpx-sse's, keeps the last id and treats a blank line as an
# event; a keep-alive written as `: ping\n\n` after `id: N` made it raise JSONDecodeError.
# ssekit writes `: ping\n` (no blank line), so the stream must read to the end.
c2 = OpenAI(base_url=f"{pinging}/v1", api_key="interop-test", max_retries=0, timeout=10.0)
got = [e.type for e in c2.responses.create(model="m", input="hi", stream=True)]
check(got[0] == "response.created" and got[-1] == "response.completed",
      "ssekit serve's stream with keep-alive comments between events read to the end")
print("PASS openai")
