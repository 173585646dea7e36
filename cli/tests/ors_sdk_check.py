# The official ORS Python client (PyPI ors-sdk 0.1.0) against `ssekit serve`, unchanged.
# Run by cli/tests/cli.rs when ORS_SDK_PYTHON names a python that has `pip install ors-sdk`.
import sys
from ors.client import ORS

base = sys.argv[1]
client = ORS(base_url=base)
env = client.environment("gsm8k")
print("splits:", env.list_splits())
tasks = env.list_tasks("test")
print("num_tasks:", env.num_tasks("test"), "tasks:", len(tasks))
print("task[-1]:", env.get_task("test", -1))
print("range:", len(env.get_task_range("test", start=-1)))
print("tools:", [t.name for t in env.list_tools()])
with env.session(task=tasks[0]) as session:
    print("sid:", session.sid)
    print("prompt:", session.get_prompt()[0].text[:40])
    print("session tools:", [t.name for t in session.list_tools()])
    r = session.call_tool("submit", {"answer": 33})
    print("submit:", r.reward, r.finished, r.blocks[0].text)
    big = session.call_tool("work", {"steps": 300})
    text = big.blocks[0].text
    print("work: lines", len(text.splitlines()), "chars", len(text), "non-ascii ok", "«" in text)
    assert len(text.splitlines()) == 300
    slow = session.call_tool("work", {"delay_ms": 1500, "steps": 3})
    print("slow:", len(slow.blocks[0].text.splitlines()))
    try:
        session.call_tool("nope", {})
    except Exception as e:
        print("unknown tool ->", type(e).__name__, e)
print("OK")
