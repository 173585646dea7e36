"""The official ORS Python client (ors-sdk, `from ors.client import ORS`), unchanged, calling
tools on `ssekit serve`: discovery, a session, small and chunked results, a slow call kept
alive by pings, a tool-logic error, an unknown tool; with `--cut`, the server cuts every new
call inside an event and the SDK must resume by task id and still get the whole result.
usage: check_ors_sdk.py SSEKIT_URL [--cut]
"""
import sys
import time

from ors.client import ORS
from ors.client._types import ToolCallError  # noqa: F401  (the SDK's own error type)

base = sys.argv[1]
cut = "--cut" in sys.argv[2:]


def check(cond, what):
    if not cond:
        raise AssertionError(what)
    print("  ok:", what)


client = ORS(base_url=base)
env = client.environment("gsm8k")
tasks = env.list_tasks("test")
question = tasks[0].task_spec["question"]
solution = "3 × 14 = 42 apples; 42 − 9 = 33."


def expected_work(steps):
    return "".join(f"Step {i}: re-reading the problem — «{question}» — and checking: {solution}\n"
                   for i in range(1, steps + 1))


if not cut:
    check(env.list_splits() == ["train", "test"], "list_splits: train, test")
    check(env.num_tasks("test") == 2 and len(tasks) == 2, "num_tasks / list_tasks agree: 2")
    check(env.get_task("test", -1).task_spec["answer"] == 150.0, "get_task with a negative index")
    check([t.name for t in env.list_tools()] == ["submit", "work", "fail"], "list_tools: submit, work, fail")

with env.session(task=tasks[0]) as session:
    check(len(session.sid) == 32, f"session sid from create_session's SSE ({session.sid})")
    if not cut:
        prompt = session.get_prompt()
        check(prompt[0].text.startswith("Tom has 3 baskets"), "get_prompt: the task's question")
        check([t.name for t in session.list_tools()] == ["submit", "work", "fail"], "session.list_tools")
    started = time.monotonic()
    r = session.call_tool("submit", {"answer": 33})
    check((r.reward, r.finished, r.blocks[0].text) == (1.0, True, "Correct!"), "small result: 1.0 True 'Correct!'")
    r = session.call_tool("submit", {"answer": 34})
    check((r.reward, r.finished, r.blocks[0].text) == (0.0, True, "Incorrect."), "small result: 0.0 True 'Incorrect.'")
    big = session.call_tool("work", {"steps": 300})
    check(big.blocks[0].text == expected_work(300) and big.reward is None and big.finished is False,
          f"chunked result ({len(big.blocks[0].text.encode())} bytes): byte-exact, non-ASCII intact")
    if not cut:
        slow = session.call_tool("work", {"delay_ms": 1500, "steps": 3})
        check(slow.blocks[0].text == expected_work(3), "a 1.5 s call with keep-alive pings in between")
        try:
            session.call_tool("submit", {"answer": "not a number"})
            check(False, "a tool-logic error raises")
        except Exception as e:  # the SDK raises ToolCallError for {"ok": false}
            check(type(e).__name__ == "ToolCallError" and "Tool input validation error" in str(e),
                  f"tool-logic error (end, ok:false) -> {type(e).__name__}: {e}")
        try:
            session.call_tool("nope", {})
            check(False, "an unknown tool raises")
        except Exception as e:
            check(isinstance(e, RuntimeError) and "'nope' is not a valid tool" in str(e),
                  f"unknown tool (error event) -> {type(e).__name__}: {e}")
        try:
            session.call_tool("fail", {"reason": "failing on purpose"})
            check(False, "the fail tool raises")
        except Exception as e:
            check(isinstance(e, RuntimeError) and "failing on purpose" in str(e),
                  f"the fail tool (error event) -> {type(e).__name__}: {e}")
    else:
        print(f"  (calls resumed after cuts took {time.monotonic() - started:.1f} s)")
print("PASS ors-sdk" + (" (resume after cuts)" if cut else ""))
