//! The demo server's ORS environment: the `gsm8k` example, plus a tool that fails.

use serde_json::{json, Value};
use ssekit_hyper::ors::gsm8k::Gsm8k;
use ssekit_hyper::ors::{Environment, Split, ToolFuture, ToolSpec};

/// The name and description of the tool that always fails.
const FAIL: (&str, &str) = ("fail", "Always fails, to show an ORS `error` event");

/// `gsm8k` (its name, tasks and the tools `submit` and `work`) with one more tool, `fail`,
/// whose every call ends in an ORS `error` event: the error path, shown on purpose.
#[derive(Clone, Copy, Debug, Default)]
pub struct Demo;

impl Environment for Demo {
    fn name(&self) -> &str {
        Gsm8k.name()
    }

    fn splits(&self) -> Vec<Split> {
        Gsm8k.splits()
    }

    fn tasks(&self, split: &str) -> Option<Vec<Value>> {
        Gsm8k.tasks(split)
    }

    fn tools(&self) -> Vec<ToolSpec> {
        let mut tools = Gsm8k.tools();
        let (name, description) = FAIL;
        tools.push(ToolSpec::new(
            name,
            description,
            Some(json!({"type": "object", "properties": {
                "reason": {"type": "string", "description": "what the error says"}
            }})),
        ));
        tools
    }

    fn prompt(&self, task: &Value) -> String {
        Gsm8k.prompt(task)
    }

    fn call(&self, task: &Value, tool: &str, input: Value) -> ToolFuture {
        if tool != FAIL.0 {
            return Gsm8k.call(task, tool, input);
        }
        let reason = input["reason"]
            .as_str()
            .unwrap_or("the `fail` tool always fails")
            .to_owned();
        Box::pin(async move { Err(reason) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn fail_fails_and_the_other_tools_are_gsm8k_s() {
        let task = &Demo.tasks("test").unwrap()[0];
        let names: Vec<String> = Demo.tools().iter().map(|t| t.name.clone()).collect();
        assert_eq!(names, ["submit", "work", "fail"]);
        let failed = Demo.call(task, "fail", json!({"reason": "no"})).await;
        assert_eq!(failed.unwrap_err(), "no");
        let submitted = Demo.call(task, "submit", json!({"answer": 33})).await;
        assert!(submitted.unwrap().ok);
    }
}
