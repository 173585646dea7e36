//! A typed environment (`ors::Env`) served over 127.0.0.1 on both runtimes: the schemas
//! derived from the input types in `/tools`, a structured prompt, a call's result (reward,
//! finished), async and JSON outputs, and inputs or task specs that do not fit their types.

#[macro_use]
mod ors_kit;

use std::sync::Arc;

use ors_kit::{within, TestRuntime};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use ssekit_http::ors::{Block, Env, InputError, Json, Server, ServerConfig, ToolOutput};
use ssekit_http::ToolError;
use ssekit_hyper::ors::Client;
use ssekit_hyper::Error;

#[derive(Deserialize)]
struct Task {
    word: String,
    letter: char,
}

/// How many times the letter occurs.
#[derive(Debug, Deserialize, JsonSchema)]
struct Submit {
    count: usize,
}

/// Where to look.
#[derive(Deserialize, JsonSchema)]
struct Peek {
    /// Zero-based.
    at: Vec<u8>,
}

#[derive(Serialize)]
struct Letters {
    letters: Vec<char>,
}

fn letters() -> Env<Task> {
    Env::new("letters")
        .split("test", [json!({"word": "strawberry", "letter": "r"})])
        .prompt(|t: &Task| {
            let image = json!({"type": "image", "data": "AA==", "mimeType": "image/png"});
            let image: Block = serde_json::from_value(image).unwrap();
            vec![
                Block::text(format!("Count '{}' in:", t.letter)),
                Block::text(t.word.clone()),
                image,
            ]
        })
        .tool("submit", "Submit the count", |t: &Task, s: Submit| {
            let right = s.count == t.word.matches(t.letter).count();
            ToolOutput::text("scored")
                .reward(right.into())
                .finished(true)
        })
        .tool_async(
            "peek",
            "Letters at positions",
            |t: Task, p: Peek| async move {
                let chars: Vec<char> = t.word.chars().collect();
                let letters = p.at.iter().map(|&i| chars.get(usize::from(i)).copied());
                letters
                    .collect::<Option<Vec<char>>>()
                    .map(|letters| Json(Letters { letters }))
                    .ok_or("a position past the word's end")
            },
        )
}

/// A client of a server over [`letters`] on `R`.
async fn serve<R: TestRuntime>() -> Client {
    let server: Server<R> = Server::with_config(vec![Arc::new(letters())], ServerConfig::default());
    Client::new(&R::serve(server)).unwrap()
}

async fn the_tools_list_the_schemas_derived_from_the_input_types<R: TestRuntime>() {
    let ors = serve::<R>().await;
    let tools = within(ors.request_json(http::Method::GET, "/letters/tools", None, None))
        .await
        .unwrap();
    assert_eq!(
        tools,
        json!({"tools": [
            {"name": "submit", "description": "Submit the count", "input_schema": {
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "title": "Submit",
                "description": "How many times the letter occurs.",
                "type": "object",
                "properties": {"count": {"type": "integer", "format": "uint", "minimum": 0}},
                "required": ["count"]
            }},
            {"name": "peek", "description": "Letters at positions", "input_schema": {
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "title": "Peek",
                "description": "Where to look.",
                "type": "object",
                "properties": {"at": {
                    "description": "Zero-based.",
                    "type": "array",
                    "items": {"type": "integer", "format": "uint8", "minimum": 0, "maximum": 255}
                }},
                "required": ["at"]
            }}
        ]})
    );
}

async fn a_session_gets_its_prompt_as_blocks_and_results_typed<R: TestRuntime>() {
    let ors = serve::<R>().await;
    within(async {
        let task = json!({"word": "strawberry", "letter": "r"});
        let sid = ors.open_session("letters", &task).await.unwrap();
        let prompt = ors
            .request_json(http::Method::GET, "/letters/prompt", Some(&sid), None)
            .await
            .unwrap();
        assert_eq!(
            prompt,
            json!([
                {"type": "text", "text": "Count 'r' in:", "detail": null},
                {"type": "text", "text": "strawberry", "detail": null},
                {"type": "image", "data": "AA==", "mimeType": "image/png", "detail": null}
            ])
        );
        let result = ors
            .call_tool("letters", &sid, "submit", json!({"count": 3}))
            .await
            .unwrap();
        let output = result.output.unwrap();
        assert_eq!((output.reward, output.finished), (Some(1.0), true));
        let wrong = ors
            .call_tool("letters", &sid, "submit", json!({"count": 2}))
            .await
            .unwrap();
        assert_eq!(wrong.output.unwrap().reward, Some(0.0));
        let peek = ors
            .call_tool("letters", &sid, "peek", json!({"at": [0, 9]}))
            .await
            .unwrap();
        let output = peek.output.unwrap();
        assert_eq!(output.blocks, vec![Block::text(r#"{"letters":["s","y"]}"#)]);
        assert_eq!((output.reward, output.finished), (None, false));
        // The tool's `Err` is an `error` event, not a result.
        let past = ors
            .call_tool("letters", &sid, "peek", json!({"at": [10]}))
            .await;
        assert!(
            matches!(past, Err(Error::Tool(ToolError::Reported(ref m))) if m == "a position past the word's end"),
            "{past:?}"
        );
    })
    .await;
}

async fn an_input_of_the_wrong_type_is_a_tool_error_naming_the_field<R: TestRuntime>() {
    let ors = serve::<R>().await;
    within(async {
        let task = json!({"word": "strawberry", "letter": "r"});
        let sid = ors.open_session("letters", &task).await.unwrap();
        for (tool, input, error) in [
            (
                "submit",
                json!({"count": "three"}),
                "Tool input validation error: `count`: invalid type: string \"three\", expected usize",
            ),
            (
                "submit",
                json!({"count": -1}),
                "Tool input validation error: `count`: invalid value: integer `-1`, expected usize",
            ),
            (
                "submit",
                json!({}),
                "Tool input validation error: missing field `count`",
            ),
            (
                "peek",
                json!({"at": [1, 256]}),
                "Tool input validation error: `at[1]`: invalid value: integer `256`, expected u8",
            ),
        ] {
            let result = ors.call_tool("letters", &sid, tool, input).await.unwrap();
            assert!(result.is_tool_error(), "{tool}: {result:?}");
            assert_eq!(result.error.as_deref(), Some(error));
        }
        // In Rust, the same refusal is a typed error: the tool, the path, serde's cause.
        let refused = InputError::read::<Submit>("submit", json!({"count": "three"})).unwrap_err();
        assert_eq!((refused.tool(), refused.path()), (Some("submit"), "count"));
        let cause = std::error::Error::source(&refused).unwrap();
        assert!(cause.downcast_ref::<serde_json::Error>().unwrap().is_data());
    })
    .await;
}

async fn a_task_spec_that_does_not_fit_fails_the_session<R: TestRuntime>() {
    let ors = serve::<R>().await;
    within(async {
        let sid = ors
            .open_session("letters", &json!({"word": 5, "letter": "r"}))
            .await
            .unwrap();
        let call = ors
            .call_tool("letters", &sid, "submit", json!({"count": 3}))
            .await;
        let expected = "the task spec does not fit this environment: `word`: invalid type: integer `5`, expected a string";
        assert!(
            matches!(call, Err(Error::Tool(ToolError::Reported(ref m))) if m == expected),
            "{call:?}"
        );
        let prompt = ors
            .request_json(http::Method::GET, "/letters/prompt", Some(&sid), None)
            .await;
        assert!(
            matches!(prompt, Err(ref e) if e.status() == Some(500)),
            "{prompt:?}"
        );
    })
    .await;
}

on_both_runtimes!(
    the_tools_list_the_schemas_derived_from_the_input_types,
    a_session_gets_its_prompt_as_blocks_and_results_typed,
    an_input_of_the_wrong_type_is_a_tool_error_naming_the_field,
    a_task_spec_that_does_not_fit_fails_the_session,
);
