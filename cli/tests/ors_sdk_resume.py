# The official ORS Python client (PyPI ors-sdk 0.1.0) resuming by task id against
# `ssekit serve --cut-ors-after N`, which cuts every new call's stream inside an event.
# Run by cli/tests/cli.rs when ORS_SDK_PYTHON names a python that has `pip install ors-sdk`.
import sys
import time
from ors.client import ORS

base = sys.argv[1]
client = ORS(base_url=base)
env = client.environment("gsm8k")
task = env.list_tasks("test")[0]
with env.session(task=task) as session:
    started = time.monotonic()
    big = session.call_tool("work", {"steps": 300})
    text = big.blocks[0].text
    print("resumed work: lines", len(text.splitlines()), "in", round(time.monotonic() - started, 2), "s")
    assert len(text.splitlines()) == 300
    assert text.splitlines()[0].startswith("Step 1:") and text.splitlines()[-1].startswith("Step 300:")
    r = session.call_tool("submit", {"answer": 33})
    print("resumed submit:", r.reward)
print("OK")
