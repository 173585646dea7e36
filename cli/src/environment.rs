//! The demo server's ORS environment, `gsm8k`: grade-school word problems, a `submit` tool
//! that scores an answer, a `work` tool that is slow (so keep-alive pings show) and answers
//! with a long worked solution (so the result is chunked), and a `fail` tool whose every
//! call ends in an ORS `error` event: the error path, shown on purpose.

use std::time::Duration;

use serde_json::{json, Value};
use ssekit_http::ors::{text_result, tool_error, Environment, Split, ToolFuture, ToolSpec};

/// The name and description of the tool that always fails.
const FAIL: (&str, &str) = ("fail", "Always fails, to show an ORS `error` event");

/// The demo environment. Its name is `gsm8k`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Demo;

const PROBLEMS: &[(&str, f64, &str)] = &[
    (
        "Natalia sold clips to 48 of her friends in April, and then she sold half as many clips in May. How many clips did Natalia sell altogether in April and May?",
        72.0,
        "In May she sold 48 / 2 = 24 clips; 48 + 24 = 72.",
    ),
    (
        "Tom has 3 baskets with 14 apples each. He gives away 9 apples. How many apples does he have left?",
        33.0,
        "3 × 14 = 42 apples; 42 − 9 = 33.",
    ),
    (
        "A train travels 60 km per hour for 2.5 hours. How many kilometres does it travel?",
        150.0,
        "60 × 2.5 = 150 km.",
    ),
];

/// The most the `work` tool sleeps, and the most text it writes.
const MAX_DELAY: Duration = Duration::from_secs(120);
const MAX_STEPS: u64 = 100_000;

impl Environment for Demo {
    fn name(&self) -> &str {
        "gsm8k"
    }

    fn splits(&self) -> Vec<Split> {
        vec![Split::new("train", "train"), Split::new("test", "test")]
    }

    fn tasks(&self, split: &str) -> Option<Vec<Value>> {
        let range = match split {
            "train" => 0..1,
            "test" => 1..PROBLEMS.len(),
            _ => return None,
        };
        Some(
            PROBLEMS
                .get(range)
                .unwrap_or_default()
                .iter()
                .map(|(question, answer, _)| json!({"question": question, "answer": answer}))
                .collect(),
        )
    }

    fn tools(&self) -> Vec<ToolSpec> {
        vec![
            ToolSpec::new(
                "submit",
                "Submit the final numeric answer",
                Some(
                    json!({"type": "object", "properties": {"answer": {"type": "number"}}, "required": ["answer"]}),
                ),
            ),
            ToolSpec::new(
                "work",
                "Work through the problem slowly and show every step",
                Some(json!({"type": "object", "properties": {
                    "delay_ms": {"type": "integer", "description": "how long to think"},
                    "steps": {"type": "integer", "description": "how many steps to write"}
                }})),
            ),
            ToolSpec::new(
                FAIL.0,
                FAIL.1,
                Some(json!({"type": "object", "properties": {
                    "reason": {"type": "string", "description": "what the error says"}
                }})),
            ),
        ]
    }

    fn prompt(&self, task: &Value) -> String {
        let question = task["question"].as_str().unwrap_or("(no question)");
        format!("{question}\nAnswer with the `submit` tool.")
    }

    fn call(&self, task: &Value, tool: &str, input: Value) -> ToolFuture {
        let expected = task["answer"].as_f64();
        let question = task["question"].as_str().unwrap_or_default().to_owned();
        match tool {
            "submit" => Box::pin(async move {
                // The server checks the input against the schema (a number) before this
                // runs; a direct call with a string is refused here too, never scored.
                let Some(given) = input["answer"].as_f64() else {
                    return Ok(tool_error(
                        "Tool input validation error: `answer` must be a number",
                    ));
                };
                let Some(expected) = expected else {
                    return Err("the task has no answer".to_owned());
                };
                Ok(if (given - expected).abs() < 1e-6 {
                    text_result("Correct!", Some(1.0), true)
                } else {
                    text_result("Incorrect.", Some(0.0), true)
                })
            }),
            "work" => Box::pin(async move {
                let delay =
                    Duration::from_millis(input["delay_ms"].as_u64().unwrap_or(0)).min(MAX_DELAY);
                let steps = input["steps"].as_u64().unwrap_or(10).min(MAX_STEPS);
                // async-io's timer runs under either runtime of `serve --runtime`.
                async_io::Timer::after(delay).await;
                let solution = PROBLEMS
                    .iter()
                    .find(|(q, _, _)| *q == question)
                    .map_or("", |(_, _, s)| s);
                let mut text = String::new();
                for step in 1..=steps {
                    text.push_str(&format!(
                        "Step {step}: re-reading the problem — «{question}» — and checking: {solution}\n"
                    ));
                }
                Ok(text_result(&text, None, false))
            }),
            "fail" => {
                let reason = input["reason"]
                    .as_str()
                    .unwrap_or("the `fail` tool always fails")
                    .to_owned();
                Box::pin(async move { Err(reason) })
            }
            other => {
                let other = other.to_owned();
                Box::pin(async move { Err(format!("'{other}' is not a valid tool")) })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn fail_fails_and_submit_scores() {
        let task = &Demo.tasks("test").unwrap()[0];
        let names: Vec<String> = Demo.tools().iter().map(|t| t.name.clone()).collect();
        assert_eq!(names, ["submit", "work", "fail"]);
        let failed = Demo.call(task, "fail", json!({"reason": "no"})).await;
        assert_eq!(failed.unwrap_err(), "no");
        let submitted = Demo.call(task, "submit", json!({"answer": 33})).await;
        assert!(submitted.unwrap().ok);
        let text = Demo.call(task, "submit", json!({"answer": "33"})).await;
        assert!(!text.unwrap().ok, "a string is not scored");
    }

    /// The schema `submit` declares refuses the string `"33"` (the ORS server checks it
    /// before the tool runs) and takes the number 33.
    #[test]
    fn submit_declares_a_number() {
        let tools = Demo.tools();
        let submit = tools.iter().find(|t| t.name == "submit").unwrap();
        let schema = submit.input_schema.as_ref().unwrap();
        assert_eq!(schema["properties"]["answer"]["type"], "number");
        assert_eq!(schema["required"], json!(["answer"]));
    }
}
