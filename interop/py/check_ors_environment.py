"""The official ORS Python client (ors-sdk, `from ors.client import ORS`), unchanged, against
ssekit-hyper's `ors_environment` example: a Rust environment of two typed tools (`spell`,
`submit`) built with `ssekit_http::ors::Env`. Checks discovery (splits, tasks, tools whose
input_schema schemars derived from the Rust input types, also converted for OpenAI and
Anthropic), a session (prompt, both tools, reward and finished), inputs of the wrong type or
shape (a tool logic error naming the field), an unknown tool, and a task spec that does not
fit the task type (the session's setup fails, so its calls do).
usage: check_ors_environment.py URL
"""
import sys

from ors.client import ORS
from ors.client._types import Task, ToolCallError

base = sys.argv[1]


def check(cond, what):
    if not cond:
        raise AssertionError(what)
    print("  ok:", what)


def raises(call, kind, needle, what):
    try:
        call()
    except Exception as e:  # noqa: BLE001 (the type is what is checked)
        check(isinstance(e, kind) and needle in str(e), f"{what} -> {type(e).__name__}: {e}")
        return
    check(False, f"{what} raises")


client = ORS(base_url=base)
env = client.environment("letters")

check(env.list_splits() == ["train", "test"], "list_splits: train, test")
tasks = env.list_tasks("test")
check([t.task_spec for t in tasks] == [{"word": "strawberry", "letter": "r"}], "list_tasks(test): strawberry/r")
check(env.num_tasks("train") == 1 and env.get_task("train", 0).task_spec["word"] == "banana", "num_tasks / get_task(train)")

tools = {t.name: t for t in env.list_tools()}
check(sorted(tools) == ["spell", "submit"], "list_tools: spell, submit")
spell, submit = tools["spell"].input_schema, tools["submit"].input_schema
check(spell["type"] == "object" and spell["properties"]["word"] == {"type": "string"}
      and spell["required"] == ["word"], f"spell's input_schema derived from `struct Spell {{ word: String }}`: {spell}")
check(submit["properties"]["count"]["type"] == "integer" and submit["properties"]["count"]["minimum"] == 0
      and submit["required"] == ["count"], "submit's input_schema derived from `struct Submit { count: usize }`")
check(submit.get("description") == "How many times the letter occurs in the word.",
      "the input type's doc comment is the schema's description")
check(tools["submit"].description == "Submit the count", "the tool's description")
openai = {t["name"]: t for t in env.list_tools(format="openai")}
check(openai["submit"]["parameters"]["properties"]["count"]["type"] == "integer", "list_tools(format='openai')")
anthropic = {t["name"]: t for t in env.list_tools(format="anthropic")}
check(anthropic["spell"]["input_schema"]["required"] == ["word"], "list_tools(format='anthropic')")

with env.session(task=tasks[0]) as session:
    check(len(session.sid) == 32, f"session from create_session ({session.sid})")
    prompt = session.get_prompt()
    check([b.text for b in prompt] == ["How many 'r' in strawberry?"], f"get_prompt: {[b.text for b in prompt]}")
    check(sorted(t.name for t in session.list_tools()) == ["spell", "submit"], "session.list_tools")
    r = session.call_tool("spell", {"word": "strawberry"})
    check((r.blocks[0].text, r.reward, r.finished, r.metadata) == ("s t r a w b e r r y", None, False, None),
          "spell: text, no reward, not finished")
    raises(lambda: session.call_tool("submit", {"count": "three"}), ToolCallError,
           'Tool input validation error: `count`: invalid type: string "three", expected usize',
           "a string where the count should be (tool logic error, ok:false)")
    raises(lambda: session.call_tool("submit", {"count": -1}), ToolCallError,
           "`count`: invalid value: integer `-1`", "a negative count")
    raises(lambda: session.call_tool("submit", {}), ToolCallError,
           "missing field `count`", "no count at all")
    raises(lambda: session.call_tool("spell", {"word": ["s", "t"]}), ToolCallError,
           "`word`: invalid type: sequence", "a list where the word should be")
    raises(lambda: session.call_tool("nope", {}), RuntimeError,
           "'nope' is not a valid tool", "an unknown tool (error event)")
    r = session.call_tool("submit", {"count": 2})
    check((r.blocks[0].text, r.reward, r.finished) == ("Incorrect.", 0.0, True), "submit 2: Incorrect. 0.0 finished")
    r = session.call_tool("submit", {"count": 3})
    check((r.blocks[0].text, r.reward, r.finished) == ("Correct!", 1.0, True), "submit 3: Correct! 1.0 finished")

with env.session(split="train", index=0) as session:
    r = session.call_tool("submit", {"count": 3})
    check((r.reward, r.finished) == (1.0, True), "a session by split/index (banana has 3 a's): 1.0")

with env.session(task=Task(environment_name="letters", task_spec={"word": 5, "letter": "r"})) as session:
    raises(lambda: session.call_tool("spell", {"word": "x"}), RuntimeError,
           "the task spec does not fit this environment: `word`: invalid type: integer `5`",
           "a task spec that does not fit `Task` fails the session's setup")
print("PASS ors-sdk vs ors_environment (typed Rust tools)")
