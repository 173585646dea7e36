//! What an ORS server serves: [`Environment`]s (their splits, tasks, [`ToolSpec`]s and tool
//! calls), and the results their tools give ([`text_result`], [`tool_error`]).

use std::future::Future;
use std::pin::Pin;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use ssekit::profile::ors::{Block, ToolResult};

/// What a tool call resolves to: `Ok` with a [`ToolResult`] (which may itself be a tool
/// logic error, `ok: false`), or `Err` with a message when the tool could not run at all
/// (sent as an `error` event).
///
/// # Example
/// ```
/// use ssekit_http::ors::{text_result, ToolFuture};
/// let run: ToolFuture = Box::pin(async { Ok(text_result("done", Some(1.0), true)) });
/// # let _ = run;
/// ```
pub type ToolFuture = Pin<Box<dyn Future<Output = Result<ToolResult, String>> + Send>>;

/// What [`Environment::setup`] and [`Environment::teardown`] resolve to: `Err` carries a
/// message for the client.
///
/// # Example
/// ```
/// let setup: ssekit_http::ors::SetupFuture = Box::pin(async { Err("no sandbox".to_owned()) });
/// # let _ = setup;
/// ```
pub type SetupFuture = Pin<Box<dyn Future<Output = Result<(), String>> + Send>>;

/// A tool as listed by `GET /{env}/tools`.
///
/// # Example
/// ```
/// let spec = ssekit_http::ors::ToolSpec::new("submit", "Submit an answer", None);
/// assert_eq!(serde_json::to_string(&spec)?, r#"{"name":"submit","description":"Submit an answer","input_schema":null}"#);
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// The tool name.
    pub name: String,
    /// One line for the model.
    pub description: String,
    /// A JSON Schema for the input, or `null`.
    pub input_schema: Option<Value>,
}

impl ToolSpec {
    /// A tool spec.
    ///
    /// # Example
    /// ```
    /// let spec = ssekit_http::ors::ToolSpec::new("slow", "Think for a while", Some(serde_json::json!({"type": "object"})));
    /// assert_eq!(spec.name, "slow");
    /// ```
    pub fn new(name: &str, description: &str, input_schema: Option<Value>) -> Self {
        ToolSpec {
            name: name.to_owned(),
            description: description.to_owned(),
            input_schema,
        }
    }
}

/// A split as listed by `GET /{env}/splits`.
///
/// # Example
/// ```
/// let split = ssekit_http::ors::Split::new("test", "test");
/// assert_eq!(serde_json::to_string(&split)?, r#"{"name":"test","type":"test"}"#);
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Split {
    /// The split name.
    pub name: String,
    /// `train`, `validation` or `test`.
    #[serde(rename = "type")]
    pub kind: String,
}

impl Split {
    /// A split.
    ///
    /// # Example
    /// ```
    /// assert_eq!(ssekit_http::ors::Split::new("train", "train").kind, "train");
    /// ```
    pub fn new(name: &str, kind: &str) -> Self {
        Split {
            name: name.to_owned(),
            kind: kind.to_owned(),
        }
    }
}

impl From<&str> for Split {
    /// A split whose type is its name (`"train"`, `"validation"` or `"test"`).
    ///
    /// # Example
    /// ```
    /// let split = ssekit_http::ors::Split::from("test");
    /// assert_eq!((split.name.as_str(), split.kind.as_str()), ("test", "test"));
    /// ```
    fn from(name: &str) -> Self {
        Split::new(name, name)
    }
}

/// An ORS environment: its tasks, its tools, and how a tool runs. One value serves every
/// session; the session's task (a JSON task spec) is passed to each call.
///
/// # Example
/// ```
/// use serde_json::{json, Value};
/// use ssekit_http::ors::{text_result, Environment, Split, ToolFuture, ToolSpec};
///
/// struct Echo;
/// impl Environment for Echo {
///     fn name(&self) -> &str { "echo" }
///     fn splits(&self) -> Vec<Split> { vec![Split::new("test", "test")] }
///     fn tasks(&self, split: &str) -> Option<Vec<Value>> { (split == "test").then(|| vec![json!({"id": 0})]) }
///     fn tools(&self) -> Vec<ToolSpec> { vec![ToolSpec::new("echo", "Echo the input", None)] }
///     fn prompt(&self, _task: &Value) -> String { "Say something.".into() }
///     fn call(&self, _task: &Value, _tool: &str, input: Value) -> ToolFuture {
///         Box::pin(async move { Ok(text_result(&input.to_string(), None, false)) })
///     }
/// }
/// assert_eq!(Echo.tools()[0].name, "echo");
/// ```
pub trait Environment: Send + Sync + 'static {
    /// The name in URLs (matched case-insensitively).
    fn name(&self) -> &str;
    /// The splits.
    fn splits(&self) -> Vec<Split>;
    /// The task specs of a split, `None` for an unknown split.
    fn tasks(&self, split: &str) -> Option<Vec<Value>>;
    /// The tools.
    fn tools(&self) -> Vec<ToolSpec>;
    /// The prompt text for a task.
    fn prompt(&self, task: &Value) -> String;
    /// The prompt for a task as `GET /{env}/prompt` serves it: a list of blocks (text,
    /// images). The default is one text block of [`prompt`](Self::prompt); override it for
    /// structured prompts.
    ///
    /// # Example
    /// ```
    /// use serde_json::{json, Value};
    /// use ssekit_http::ors::{text_result, Block, Environment, Split, ToolFuture, ToolSpec};
    ///
    /// struct Picture;
    /// impl Environment for Picture {
    ///     fn name(&self) -> &str { "picture" }
    ///     fn splits(&self) -> Vec<Split> { Vec::new() }
    ///     fn tasks(&self, _split: &str) -> Option<Vec<Value>> { None }
    ///     fn tools(&self) -> Vec<ToolSpec> { Vec::new() }
    ///     fn prompt(&self, _task: &Value) -> String { "What is in this picture?".into() }
    ///     fn prompt_blocks(&self, task: &Value) -> Vec<Block> {
    ///         let image: Block = serde_json::from_value(json!({"type": "image", "data": task["png"], "mimeType": "image/png"}))
    ///             .unwrap_or_else(|e| Block::text(e.to_string()));
    ///         vec![Block::text(self.prompt(task)), image]
    ///     }
    ///     fn call(&self, _task: &Value, _tool: &str, _input: Value) -> ToolFuture {
    ///         Box::pin(async { Ok(text_result("", None, true)) })
    ///     }
    /// }
    /// assert_eq!(Picture.prompt_blocks(&json!({"png": "AA=="})).len(), 2);
    /// ```
    fn prompt_blocks(&self, task: &Value) -> Vec<Block> {
        vec![Block::text(self.prompt(task))]
    }
    /// Runs `tool` (one of [`tools`](Self::tools)) on `input` for the session's `task`. The
    /// future is spawned: it keeps running if the client disconnects, so the client can
    /// resume by task id.
    fn call(&self, task: &Value, tool: &str, input: Value) -> ToolFuture;

    /// Whether this environment checks each tool's input itself before the tool runs. When
    /// `false` (the default), the ORS server checks a new call's input against the tool's
    /// `input_schema` (compiled once, when the server is built) and answers an input that
    /// fails it with an `error` event naming the path (`input/word: "word" is a required
    /// property`), without calling [`call`](Self::call). The typed `Env` answers `true`: it
    /// reads each input into the type its schema was derived from, and reports a mismatch
    /// as a tool error (`ok: false`) naming the field, which the model sees.
    ///
    /// # Example
    /// ```
    /// use serde_json::Value;
    /// use ssekit_http::ors::{Environment, Split, ToolFuture, ToolSpec};
    /// struct Checked;
    /// impl Environment for Checked {
    ///     fn name(&self) -> &str { "checked" }
    ///     fn splits(&self) -> Vec<Split> { Vec::new() }
    ///     fn tasks(&self, _split: &str) -> Option<Vec<Value>> { None }
    ///     fn tools(&self) -> Vec<ToolSpec> { Vec::new() }
    ///     fn prompt(&self, _task: &Value) -> String { String::new() }
    ///     fn call(&self, _task: &Value, _tool: &str, _input: Value) -> ToolFuture {
    ///         Box::pin(async { Err("checks its input itself".to_owned()) })
    ///     }
    ///     fn checks_input(&self) -> bool { true }
    /// }
    /// assert!(Checked.checks_input());
    /// ```
    fn checks_input(&self) -> bool {
        false
    }

    /// Prepares a session (start a sandbox, load data). It runs in the background after
    /// `/create` has answered; calls, `/prompt` and `/task_tools` wait for it, and fail with
    /// its error (a call as an `error` event, the others as HTTP 500). `secrets` is the
    /// `/create` body's `secrets` field as sent (`null` when absent). The default does
    /// nothing.
    ///
    /// # Example
    /// ```
    /// use serde_json::{json, Value};
    /// use ssekit_http::ors::{text_result, Environment, SetupFuture, Split, ToolFuture, ToolSpec};
    ///
    /// /// Needs an `API_TOKEN` secret.
    /// struct Guarded;
    /// impl Environment for Guarded {
    ///     fn name(&self) -> &str { "guarded" }
    ///     fn splits(&self) -> Vec<Split> { Vec::new() }
    ///     fn tasks(&self, _split: &str) -> Option<Vec<Value>> { None }
    ///     fn tools(&self) -> Vec<ToolSpec> { Vec::new() }
    ///     fn prompt(&self, _task: &Value) -> String { String::new() }
    ///     fn call(&self, _task: &Value, _tool: &str, _input: Value) -> ToolFuture {
    ///         Box::pin(async { Ok(text_result("", None, true)) })
    ///     }
    ///     fn setup(&self, _task: &Value, secrets: &Value) -> SetupFuture {
    ///         let token = secrets["API_TOKEN"].is_string();
    ///         Box::pin(async move { if token { Ok(()) } else { Err("no API_TOKEN".to_owned()) } })
    ///     }
    /// }
    /// let ready = futures_lite::future::block_on(Guarded.setup(&json!({}), &json!({"API_TOKEN": "t"})));
    /// assert_eq!(ready, Ok(()));
    /// ```
    fn setup(&self, task: &Value, secrets: &Value) -> SetupFuture {
        let _ = (task, secrets);
        Box::pin(async { Ok(()) })
    }

    /// Cleans up a session after `/delete` or when it expired. The default does nothing.
    ///
    /// # Example
    /// ```
    /// use serde_json::Value;
    /// use ssekit_http::ors::{text_result, Environment, Split, ToolFuture, ToolSpec};
    /// struct Plain;
    /// impl Environment for Plain {
    ///     fn name(&self) -> &str { "plain" }
    ///     fn splits(&self) -> Vec<Split> { Vec::new() }
    ///     fn tasks(&self, _split: &str) -> Option<Vec<Value>> { None }
    ///     fn tools(&self) -> Vec<ToolSpec> { Vec::new() }
    ///     fn prompt(&self, _task: &Value) -> String { String::new() }
    ///     fn call(&self, _task: &Value, _tool: &str, _input: Value) -> ToolFuture {
    ///         Box::pin(async { Ok(text_result("", None, true)) })
    ///     }
    /// }
    /// assert_eq!(futures_lite::future::block_on(Plain.teardown(&Value::Null)), Ok(()));
    /// ```
    fn teardown(&self, task: &Value) -> SetupFuture {
        let _ = task;
        Box::pin(async { Ok(()) })
    }
}

/// A successful tool result with one text block (`metadata: null` is written, since the
/// official client reads it unconditionally).
///
/// # Example
/// ```
/// let r = ssekit_http::ors::text_result("Correct!", Some(1.0), true);
/// assert_eq!(
///     serde_json::to_string(&r)?,
///     r#"{"ok":true,"output":{"blocks":[{"type":"text","text":"Correct!","detail":null}],"metadata":null,"reward":1.0,"finished":true}}"#
/// );
/// # Ok::<(), serde_json::Error>(())
/// ```
pub fn text_result(text: &str, reward: Option<f64>, finished: bool) -> ToolResult {
    from_json(serde_json::json!({
        "ok": true,
        "output": {"blocks": [{"type": "text", "text": text}], "metadata": null, "reward": reward, "finished": finished}
    }))
}

/// A tool logic error: `{"ok": false, "error": message}` in the `end` event.
///
/// # Example
/// ```
/// let r = ssekit_http::ors::tool_error("Invalid answer format");
/// assert!(r.is_tool_error());
/// ```
pub fn tool_error(message: &str) -> ToolResult {
    from_json(serde_json::json!({"ok": false, "error": message}))
}

/// Builds a [`ToolResult`] from JSON (the core type is `#[non_exhaustive]`, so this crate
/// cannot write a struct literal).
fn from_json(value: Value) -> ToolResult {
    match serde_json::from_value(value) {
        Ok(result) => result,
        // Both callers build one of the two RunToolOutput shapes from a string and numbers,
        // which always deserialise.
        Err(e) => unreachable!("RunToolOutput literal did not parse: {e}"),
    }
}
