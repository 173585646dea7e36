"""The openai Python SDK resuming a cut background Responses stream served by `ssekit serve`,
by sequence number (openai-python#2372): `responses.create(stream=True, background=True)` is
read for a few events and closed (a cut), then `responses.retrieve(id, stream=True,
starting_after=N)` reads the rest, from the same instance or another one sharing the store.
No event may be lost or repeated.
usage: check_openai_resume.py CREATE_URL [RESUME_URL]
"""
import sys

import openai
from openai import OpenAI

create_url = sys.argv[1]
resume_url = sys.argv[2] if len(sys.argv) > 2 else create_url
ANSWER = "Natalia sold 48 clips in April and 24 in May, so 72 clips in all."


def check(cond, what):
    if not cond:
        raise AssertionError(what)
    print("  ok:", what)


def client(url):
    return OpenAI(base_url=f"{url}/v1", api_key="interop-test", max_retries=0, timeout=10.0)


creator, resumer = client(create_url), client(resume_url)
where = "the same instance" if resume_url == create_url else "another instance (shared store)"

for cut_after in (1, 5, 12):
    stream = creator.responses.create(model="interop-model", input="clips?", stream=True, background=True)
    first = []
    for event in stream:
        first.append(event)
        if len(first) == cut_after:
            break
    stream.close()
    rid, last = first[0].response.id, first[-1].sequence_number
    rest = list(resumer.responses.retrieve(rid, stream=True, starting_after=last))
    events = first + rest
    seqs = [e.sequence_number for e in events]
    check(seqs == list(range(len(events))),
          f"cut after {cut_after} events, resumed on {where} after {last}: sequence numbers 0..{len(events) - 1}, none lost or repeated")
    text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    check(text == ANSWER and events[-1].type == "response.completed",
          "the text deltas join to the whole answer, and response.completed ends it")

# From the start: the whole response again, as kept.
again = list(resumer.responses.retrieve(rid, stream=True))
check([e.sequence_number for e in again] == seqs, "retrieve(stream=True) without starting_after replays every event")

try:
    list(resumer.responses.retrieve("resp_never_made", stream=True, starting_after=0))
    check(False, "an unknown response id is refused")
except openai.NotFoundError as e:
    check(e.status_code == 404, f"an unknown response id is refused: 404 NotFoundError ({e.message!r})")
print("PASS openai-resume")
