"""The official anthropic Python SDK reading `ssekit serve`'s POST /v1/messages.

1. `messages.stream()` (the SDK's accumulating helper): `text_stream` spells the demo answer,
   `get_final_message()` has it as its text, stop_reason end_turn and the usage.
2. `messages.create(stream=True)`: the raw events, typed, in the documented order (the SDK
   drops `ping`).
3. `?error_after=3`: an `error` event (overloaded_error) after three text deltas, in a 200
   stream; the SDK must raise it, after the three deltas, through both 1's and 2's paths.
4. `messages.create()` without stream: one Message; with `?error_after` a 529, which the SDK
   raises as OverloadedError.
usage: check_anthropic.py SSEKIT_SERVE_URL
"""
import sys

import anthropic
from anthropic import Anthropic

url = sys.argv[1]
ANSWER = "Natalia sold 48 clips in April and 24 in May, so 72 clips in all."
WORDS = ANSWER.split(" ")
MODEL = "interop-model"
MESSAGES = [{"role": "user", "content": "How many clips did Natalia sell in April and May?"}]


def check(cond, what):
    if not cond:
        raise AssertionError(what)
    print("  ok:", what)


client = Anthropic(base_url=url, api_key="interop-test", max_retries=0, timeout=10.0)
request = dict(model=MODEL, max_tokens=256, messages=MESSAGES)

# --- 1. the accumulating helper -------------------------------------------------------------
with client.messages.stream(**request) as s:
    pieces = list(s.text_stream)
    final = s.get_final_message()
check("".join(pieces) == ANSWER, f"text_stream spells the answer in {len(pieces)} deltas")
check(len(pieces) == len(WORDS), "one text delta per word")
check(final.stop_reason == "end_turn", "get_final_message().stop_reason == 'end_turn'")
check([b.type for b in final.content] == ["text"] and final.content[0].text == ANSWER,
      "get_final_message() holds one text block with the answer")
check(final.model == MODEL and final.role == "assistant" and final.id.startswith("msg_"),
      "model echoed, role assistant, a msg_ id")
check(final.usage.input_tokens == 10 and final.usage.output_tokens == len(WORDS),
      f"usage: {final.usage.input_tokens} input, {final.usage.output_tokens} output tokens")

# --- 2. raw typed events ------------------------------------------------------------------------
events = list(client.messages.create(**request, stream=True))
kinds = [e.type for e in events]
check(kinds == ["message_start", "content_block_start"] + ["content_block_delta"] * len(WORDS) +
      ["content_block_stop", "message_delta", "message_stop"],
      f"{len(events)} typed events in order (ping skipped by the SDK)")
check(type(events[0]).__name__ == "RawMessageStartEvent" and events[0].message.stop_reason is None,
      f"message_start parses as {type(events[0]).__name__}, stop_reason null")
check(type(events[2]).__name__ == "RawContentBlockDeltaEvent" and events[2].delta.type == "text_delta",
      f"deltas parse as {type(events[2]).__name__} with text_delta")
check("".join(e.delta.text for e in events if e.type == "content_block_delta") == ANSWER,
      "the deltas join to the answer")
check(events[-2].delta.stop_reason == "end_turn" and events[-2].usage.output_tokens == len(WORDS),
      "message_delta: stop_reason end_turn, output_tokens")

# --- 3. an error event mid-stream ------------------------------------------------------------
erring = dict(request, extra_query={"error_after": 3})
got = []
try:
    with client.messages.stream(**erring) as s:
        for text in s.text_stream:
            got.append(text)
except anthropic.APIStatusError as e:
    raised = e
else:
    raise AssertionError("messages.stream() read an error event without raising")
check(got == [w + " " for w in WORDS[:3]], "messages.stream(): the three deltas before the error")
check(type(raised) is anthropic.APIStatusError and isinstance(raised, anthropic.APIError),
      f"messages.stream() raises {type(raised).__module__}.{type(raised).__name__}")
check("Overloaded" in str(raised) and raised.body["error"]["type"] == "overloaded_error",
      f"carrying the error event: {raised}")
check(raised.status_code == 200, "with the stream's status, 200")

kinds = []
try:
    for event in client.messages.create(**erring, stream=True):
        kinds.append(event.type)
except anthropic.APIStatusError as e:
    raised = e
else:
    raise AssertionError("messages.create(stream=True) read an error event without raising")
check(kinds == ["message_start", "content_block_start"] + ["content_block_delta"] * 3,
      "messages.create(stream=True): start, block start, three deltas, then the raise")
check("Overloaded" in str(raised), f"{type(raised).__name__}: {raised}")

# --- 4. not streamed ---------------------------------------------------------------------------
message = client.messages.create(**request)
check(type(message).__name__ == "Message" and message.content[0].text == ANSWER,
      "messages.create() without stream: a Message with the answer")
check(message.stop_reason == "end_turn" and message.usage.output_tokens == len(WORDS),
      "stop_reason end_turn, usage")
try:
    client.messages.create(**erring)
except anthropic.OverloadedError as e:
    check(e.status_code == 529 and "Overloaded" in str(e), f"?error_after unstreamed: 529 raised as OverloadedError")
else:
    raise AssertionError("a 529 did not raise")

# --- a request the API refuses -------------------------------------------------------------
try:
    client.messages.create(model=MODEL, max_tokens=16, messages="not a list")
except anthropic.BadRequestError as e:
    check(e.status_code == 400 and e.body["error"]["type"] == "invalid_request_error",
          "messages not an array: 400 invalid_request_error, raised as BadRequestError")
else:
    raise AssertionError("a bad request did not raise")
print("PASS anthropic")
