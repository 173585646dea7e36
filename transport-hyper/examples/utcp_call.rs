//! Calls one tool of a UTCP manual, as the official UTCP client's `call_tool` does: the
//! manual is found at `/utcp` on the URL's host, the tool's own call template says how to
//! reach it, and each result (an event's data, checked against the tool's `outputs`) is
//! printed as one JSON line. Used by `interop/py/check_utcp.py` to call the same tools as
//! the official client.
//!
//! ```text
//! cargo run -p ssekit-hyper --example utcp_call -- http://127.0.0.1:8080 ticker '{"symbol":"AAPL"}'
//! ```
//!
//! stdout: one line per result. stderr: the manual's warnings, and each event that was
//! refused (not JSON, not matching the `outputs` schema) as `refused: <why>`. Exit status:
//! 0 when the call ended, 1 when it failed (after printing the results that came), 2 for
//! bad arguments, a manual that does not read, or an unknown tool.

use std::process::ExitCode;

use futures_util::StreamExt;
use ssekit_hyper::utcp::{discover, CallError, ToolExt};

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [url, tool_name, inputs] = args.as_slice() else {
        eprintln!("usage: utcp_call <server URL> <tool name> <inputs as a JSON object>");
        return ExitCode::from(2);
    };
    let inputs: serde_json::Map<String, serde_json::Value> = match serde_json::from_str(inputs) {
        Ok(inputs) => inputs,
        Err(e) => {
            eprintln!("inputs: not a JSON object: {e}");
            return ExitCode::from(2);
        }
    };
    let manual = match discover(url).await {
        Ok(manual) => manual,
        Err(e) => {
            eprintln!("discovery: {e}");
            return ExitCode::from(2);
        }
    };
    for warning in &manual.warnings {
        eprintln!("warning: {warning}");
    }
    let Some(tool) = manual.tool(tool_name) else {
        eprintln!("no tool {tool_name:?} in the manual");
        return ExitCode::from(2);
    };
    let provider = match tool.sse_provider() {
        Some(Ok(provider)) => provider,
        Some(Err(e)) => {
            eprintln!("the tool's call template: {e}");
            return ExitCode::from(2);
        }
        None => {
            eprintln!("the tool has no SSE call template");
            return ExitCode::from(2);
        }
    };
    let call = match provider.call(tool, &inputs).await {
        Ok(call) => call,
        Err(e) => {
            eprintln!("call: {e}");
            return ExitCode::from(1);
        }
    };
    let mut outputs = call.outputs();
    while let Some(output) = outputs.next().await {
        match output {
            Ok(output) => println!("{}", output.value),
            Err(e @ CallError::Transport(_)) => {
                eprintln!("call: {e}");
                return ExitCode::from(1);
            }
            Err(refused) => eprintln!("refused: {refused}"),
        }
    }
    ExitCode::SUCCESS
}
