//! Typed ORS environments (feature `ors-typed`): an [`Env`] is built from tools whose
//! inputs are Rust types (serde reads them, schemars derives their JSON Schema), whose
//! outputs are anything [`IntoToolResult`], and whose task is a Rust type too. It implements
//! [`Environment`], so a [`Server`](super::Server) serves it like any other.
//!
//! ```text
//!  POST /{env}/call {name, input} ──▶ Env::call: the tool registered under `name`
//!     task_spec ──serde──▶ T    (bad: the session's setup failed: `error` events)
//!     input     ──serde──▶ I    (bad: {"ok": false, "error": "Tool input validation error: `field`: ..."})
//!     tool(&T, I) ──▶ O: IntoToolResult ──▶ end {"ok": true, "output": {blocks, metadata, reward, finished}}
//! ```

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;
use ssekit::profile::ors::{Block, ToolOutput, ToolResult};

use super::environment::{Environment, SetupFuture, Split, ToolFuture, ToolSpec};

/// How a registered tool runs: the session's task (already read) and the raw input.
type Run<T> = Box<dyn Fn(T, Value) -> ToolFuture + Send + Sync>;

/// How the prompt is made from a task.
type Prompt<T> = Box<dyn Fn(&T) -> Vec<Block> + Send + Sync>;

/// One registered tool: what `/tools` lists, and how it runs.
struct Registered<T> {
    spec: ToolSpec,
    run: Run<T>,
}

/// An ORS environment built from typed tools. `T` is the task: each task spec (a JSON
/// object the client gets from `/tasks` and sends back to `/create`) is read into a `T`
/// before the prompt is made or a tool runs; a task spec that does not fit fails the
/// session's setup, so its calls and prompt fail with the reason.
///
/// Each tool is a closure over the task and its input type `I`
/// (`#[derive(Deserialize, JsonSchema)]`): `/tools` lists the schema schemars derives from
/// `I` (doc comments become descriptions), and a call whose input does not fit `I` gets a
/// tool logic error naming the field (`{"ok": false, "error": "Tool input validation error:
/// ..."}`, see [`InputError`]) without running the tool.
///
/// # Example
/// ```
/// use schemars::JsonSchema;
/// use serde::{Deserialize, Serialize};
/// use ssekit_http::ors::{Env, Environment, ToolOutput};
///
/// #[derive(Serialize, Deserialize)]
/// struct Task { a: i64, b: i64 }
/// /// Your answer.
/// #[derive(Deserialize, JsonSchema)]
/// struct Answer { sum: i64 }
///
/// let env = Env::new("sums")
///     .split("test", [Task { a: 2, b: 3 }])
///     .prompt(|t: &Task| format!("What is {} + {}?", t.a, t.b))
///     .tool("submit", "Submit the sum", |t: &Task, answer: Answer| {
///         let right = answer.sum == t.a + t.b;
///         ToolOutput::text(if right { "Correct!" } else { "Wrong." }).reward(if right { 1.0 } else { 0.0 }).finished(true)
///     });
/// assert_eq!(env.tools()[0].input_schema.as_ref().map(|s| s["required"][0].clone()), Some("sum".into()));
/// # let task = serde_json::json!({"a": 2, "b": 3});
/// let result = futures_lite::future::block_on(env.call(&task, "submit", serde_json::json!({"sum": 5})));
/// assert_eq!(result.map(|r| r.output.and_then(|o| o.reward)), Ok(Some(1.0)));
/// ```
pub struct Env<T> {
    name: String,
    splits: Vec<(Split, Vec<Value>)>,
    prompt: Option<Prompt<T>>,
    tools: Vec<Registered<T>>,
}

impl<T> fmt::Debug for Env<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Env")
            .field("name", &self.name)
            .field(
                "splits",
                &self.splits.iter().map(|(s, _)| &s.name).collect::<Vec<_>>(),
            )
            .field(
                "tools",
                &self.tools.iter().map(|t| &t.spec.name).collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

impl<T> Env<T>
where
    T: DeserializeOwned + Send + 'static,
{
    /// An environment named `name` (its URL segment), with no splits, no tools, and the
    /// task spec's JSON as its prompt.
    ///
    /// # Example
    /// ```
    /// use ssekit_http::ors::{Env, Environment};
    /// let env: Env<serde_json::Value> = Env::new("letters");
    /// assert_eq!(env.name(), "letters");
    /// ```
    pub fn new(name: &str) -> Self {
        Env {
            name: name.to_owned(),
            splits: Vec::new(),
            prompt: None,
            tools: Vec::new(),
        }
    }

    /// Adds a split and its tasks (any `Serialize` value: a `T`, or `serde_json::json!`).
    /// `split` is a [`Split`] or a name that is also its type (`"train"`, `"validation"`,
    /// `"test"`).
    ///
    /// # Panics
    /// If a task does not serialise to JSON (a map with non-string keys, a `Serialize`
    /// impl that fails): the tasks are the program's own, so this is found at start-up.
    ///
    /// # Example
    /// ```
    /// use serde_json::json;
    /// use ssekit_http::ors::{Env, Environment, Split};
    /// let env: Env<serde_json::Value> = Env::new("letters")
    ///     .split("train", [json!({"word": "apple"})])
    ///     .split(Split::new("hard", "test"), [json!({"word": "strawberry"})]);
    /// assert_eq!(env.splits()[1].kind, "test");
    /// assert_eq!(env.tasks("hard").map(|t| t.len()), Some(1));
    /// ```
    pub fn split<S: Serialize>(
        mut self,
        split: impl Into<Split>,
        tasks: impl IntoIterator<Item = S>,
    ) -> Self {
        let split = split.into();
        let tasks = tasks
            .into_iter()
            .map(|task| match serde_json::to_value(task) {
                Ok(task) => task,
                Err(e) => panic!("a task of split '{}' is not JSON: {e}", split.name),
            })
            .collect();
        self.splits.push((split, tasks));
        self
    }

    /// Sets how the prompt is made from a task: text (`String`, `&str`), one [`Block`], or
    /// a list of blocks (text and images). (This builder method hides
    /// [`Environment::prompt`]: call that one as `Environment::prompt(&env, &task)`.)
    ///
    /// # Example
    /// ```
    /// use serde::Deserialize;
    /// use serde_json::json;
    /// use ssekit_http::ors::{Block, Env, Environment};
    ///
    /// #[derive(Deserialize)]
    /// struct Task { word: String }
    /// let env = Env::new("letters")
    ///     .prompt(|t: &Task| vec![Block::text("Spell this word:"), Block::text(t.word.clone())]);
    /// assert_eq!(env.prompt_blocks(&json!({"word": "apple"})).len(), 2);
    /// assert_eq!(Environment::prompt(&env, &json!({"word": "apple"})), "Spell this word:\napple");
    /// ```
    pub fn prompt<P: IntoBlocks>(
        mut self,
        prompt: impl Fn(&T) -> P + Send + Sync + 'static,
    ) -> Self {
        self.prompt = Some(Box::new(move |task| prompt(task).into_blocks()));
        self
    }

    /// Adds a tool named `name`: `run` gets the session's task and the input, read into an
    /// `I`, and returns its result at once (for slow work, see
    /// [`tool_async`](Self::tool_async)). It runs in the call's own task.
    ///
    /// # Example
    /// ```
    /// use schemars::JsonSchema;
    /// use serde::Deserialize;
    /// use serde_json::{json, Value};
    /// use ssekit_http::ors::{Env, Environment};
    ///
    /// /// The word to spell.
    /// #[derive(Deserialize, JsonSchema)]
    /// struct Spell { word: String }
    /// let env = Env::new("letters").tool("spell", "Spell a word letter by letter", |_: &Value, s: Spell| {
    ///     s.word.chars().map(String::from).collect::<Vec<_>>().join(" ")
    /// });
    /// let result = futures_lite::future::block_on(env.call(&json!({}), "spell", json!({"word": "abc"})));
    /// assert_eq!(serde_json::to_value(result?)?["output"]["blocks"][0]["text"], "a b c");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn tool<I, O>(
        self,
        name: &str,
        description: &str,
        run: impl Fn(&T, I) -> O + Send + Sync + 'static,
    ) -> Self
    where
        I: DeserializeOwned + JsonSchema,
        O: IntoToolResult,
    {
        let run = Arc::new(run);
        let tool = Arc::<str>::from(name);
        self.register::<I>(
            name,
            description,
            Box::new(move |task, input| {
                let run = Arc::clone(&run);
                let tool = Arc::clone(&tool);
                Box::pin(async move {
                    match InputError::read::<I>(&tool, input) {
                        Ok(input) => run(&task, input).into_tool_result(),
                        Err(e) => Ok(ToolResult::failure(e.to_string())),
                    }
                })
            }),
        )
    }

    /// Adds a tool named `name` whose work is asynchronous (a subprocess, a request, a
    /// model): `run` gets the session's task (its own copy) and the input, read into an
    /// `I`, and returns a future. The future keeps running if the client disconnects, so
    /// the client can resume the call by its task id.
    ///
    /// # Example
    /// ```
    /// use schemars::JsonSchema;
    /// use serde::Deserialize;
    /// use serde_json::{json, Value};
    /// use ssekit_http::ors::{Env, Environment};
    ///
    /// #[derive(Deserialize, JsonSchema)]
    /// struct Wait { ms: u64 }
    /// let env = Env::new("slow").tool_async("wait", "Wait a while", |_: Value, w: Wait| async move {
    ///     // e.g. tokio::time::sleep(Duration::from_millis(w.ms)).await;
    ///     format!("waited {} ms", w.ms)
    /// });
    /// let result = futures_lite::future::block_on(env.call(&json!({}), "wait", json!({"ms": 5})));
    /// assert!(result.is_ok_and(|r| r.ok));
    /// ```
    pub fn tool_async<I, O, F>(
        self,
        name: &str,
        description: &str,
        run: impl Fn(T, I) -> F + Send + Sync + 'static,
    ) -> Self
    where
        I: DeserializeOwned + JsonSchema,
        O: IntoToolResult,
        F: Future<Output = O> + Send + 'static,
    {
        let run = Arc::new(run);
        let tool = Arc::<str>::from(name);
        self.register::<I>(
            name,
            description,
            Box::new(
                move |task, input| match InputError::read::<I>(&tool, input) {
                    Ok(input) => {
                        let work = run(task, input);
                        Box::pin(async move { work.await.into_tool_result() })
                    }
                    Err(e) => {
                        let failure = ToolResult::failure(e.to_string());
                        Box::pin(async move { Ok(failure) })
                    }
                },
            ),
        )
    }

    fn register<I: JsonSchema>(mut self, name: &str, description: &str, run: Run<T>) -> Self {
        let schema = Value::from(schemars::SchemaGenerator::default().into_root_schema_for::<I>());
        let spec = ToolSpec::new(name, description, Some(schema));
        // A name registered again replaces the earlier tool, in its place.
        match self.tools.iter_mut().find(|t| t.spec.name == name) {
            Some(tool) => *tool = Registered { spec, run },
            None => self.tools.push(Registered { spec, run }),
        }
        self
    }
}

impl<T> Environment for Env<T>
where
    T: DeserializeOwned + Send + 'static,
{
    fn name(&self) -> &str {
        &self.name
    }

    /// Each input is read into its tool's input type, whose schema is the one listed: a
    /// mismatch is a tool error naming the field (see [`InputError`]).
    fn checks_input(&self) -> bool {
        true
    }

    fn splits(&self) -> Vec<Split> {
        self.splits.iter().map(|(split, _)| split.clone()).collect()
    }

    fn tasks(&self, split: &str) -> Option<Vec<Value>> {
        self.splits
            .iter()
            .find(|(s, _)| s.name == split)
            .map(|(_, tasks)| tasks.clone())
    }

    fn tools(&self) -> Vec<ToolSpec> {
        self.tools.iter().map(|t| t.spec.clone()).collect()
    }

    /// The text blocks of [`prompt_blocks`](Environment::prompt_blocks), one per line.
    fn prompt(&self, task: &Value) -> String {
        let blocks = self.prompt_blocks(task);
        let texts: Vec<&str> = blocks
            .iter()
            .filter_map(|block| match block {
                Block::Text { text, .. } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        texts.join("\n")
    }

    fn prompt_blocks(&self, task: &Value) -> Vec<Block> {
        match (&self.prompt, InputError::read_task::<T>(task)) {
            (Some(prompt), Ok(task)) => prompt(&task),
            (None, Ok(_)) => vec![Block::text(task.to_string())],
            // The server serves a prompt only after the setup, which read the task.
            (_, Err(e)) => vec![Block::text(e.to_string())],
        }
    }

    fn call(&self, task: &Value, tool: &str, input: Value) -> ToolFuture {
        let Some(registered) = self.tools.iter().find(|t| t.spec.name == tool) else {
            let message = format!("'{tool}' is not a valid tool");
            return Box::pin(async move { Err(message) });
        };
        match InputError::read_task::<T>(task) {
            Ok(task) => (registered.run)(task, input),
            Err(e) => {
                let message = e.to_string();
                Box::pin(async move { Err(message) })
            }
        }
    }

    /// Reads the task spec into a `T`: a spec that does not fit fails the session.
    fn setup(&self, task: &Value, _secrets: &Value) -> SetupFuture {
        let outcome = InputError::read_task::<T>(task)
            .map(drop)
            .map_err(|e| e.to_string());
        Box::pin(async move { outcome })
    }
}

/// A tool input (or a task spec) that does not fit its Rust type: which tool, where in the
/// input (`path`), and serde's reason. A tool's is sent as a tool logic error,
/// `{"ok": false, "error": "Tool input validation error: ..."}`, as the official SDK's
/// server does for an input its model refuses.
///
/// # Example
/// ```
/// use schemars::JsonSchema;
/// use serde::Deserialize;
/// use serde_json::json;
/// use ssekit_http::ors::{Env, Environment};
///
/// #[derive(Deserialize, JsonSchema)]
/// struct Submit { count: u32 }
/// let env = Env::new("letters").tool("submit", "Submit a count", |_: &serde_json::Value, s: Submit| s.count.to_string());
/// let result = futures_lite::future::block_on(env.call(&json!({}), "submit", json!({"count": "three"})));
/// assert_eq!(
///     result.map(|r| r.error),
///     Ok(Some("Tool input validation error: `count`: invalid type: string \"three\", expected u32".into()))
/// );
/// ```
#[derive(Debug)]
pub struct InputError {
    tool: Option<Arc<str>>,
    path: String,
    source: serde_json::Error,
}

impl InputError {
    /// Reads `input` into an `I`, as the tool `tool` does.
    ///
    /// # Example
    /// ```
    /// use ssekit_http::ors::InputError;
    /// #[derive(Debug, serde::Deserialize)]
    /// struct Spell { word: String }
    /// let e = InputError::read::<Spell>("spell", serde_json::json!({"word": 7})).unwrap_err();
    /// assert_eq!((e.tool(), e.path()), (Some("spell"), "word"));
    /// ```
    pub fn read<I: DeserializeOwned>(tool: &str, input: Value) -> Result<I, InputError> {
        Self::read_as(Some(Arc::from(tool)), input)
    }

    /// Reads a task spec into a `T`.
    fn read_task<T: DeserializeOwned>(task: &Value) -> Result<T, InputError> {
        // Owned: serde_path_to_error needs a `Deserializer`, which `&Value` is only for
        // borrowed targets.
        Self::read_as(None, task.clone())
    }

    fn read_as<I: DeserializeOwned>(tool: Option<Arc<str>>, input: Value) -> Result<I, InputError> {
        serde_path_to_error::deserialize(input).map_err(|e| InputError {
            tool,
            path: e.path().to_string(),
            source: e.into_inner(),
        })
    }

    /// The tool whose input it was, `None` for a task spec.
    ///
    /// # Example
    /// ```
    /// let e = ssekit_http::ors::InputError::read::<u8>("dice", serde_json::json!(-1)).unwrap_err();
    /// assert_eq!(e.tool(), Some("dice"));
    /// ```
    pub fn tool(&self) -> Option<&str> {
        self.tool.as_deref()
    }

    /// Where in the input serde stopped, as `field.inner[0]`; `.` for the input itself (a
    /// missing field, an input that is not an object: serde's reason names the field).
    ///
    /// # Example
    /// ```
    /// #[derive(Debug, serde::Deserialize)]
    /// struct Move { to: Vec<u8> }
    /// let e = ssekit_http::ors::InputError::read::<Move>("go", serde_json::json!({"to": [1, "x"]})).unwrap_err();
    /// assert_eq!(e.path(), "to[1]");
    /// ```
    pub fn path(&self) -> &str {
        &self.path
    }
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.tool {
            Some(_) => f.write_str("Tool input validation error: ")?,
            None => f.write_str("the task spec does not fit this environment: ")?,
        }
        if self.path != "." {
            write!(f, "`{}`: ", self.path)?;
        }
        write!(f, "{}", self.source)
    }
}

impl std::error::Error for InputError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}

/// What a tool of an [`Env`] may return: a [`ToolOutput`] (blocks, reward, finished), a
/// whole [`ToolResult`] (say, [`ToolResult::failure`] for a tool logic error), text (one
/// text block, no reward, not finished), [`Block`]s, a [`Json`] value, or a `Result` of
/// one of these whose `Err` means the tool could not run (an `error` event).
///
/// # Example
/// ```
/// use ssekit_http::ors::{IntoToolResult, ToolOutput};
/// let done = ToolOutput::text("Correct!").reward(1.0).finished(true).into_tool_result();
/// assert!(done.is_ok_and(|r| r.ok));
/// let failed: Result<String, std::io::Error> = Err(std::io::Error::other("no sandbox"));
/// assert_eq!(failed.into_tool_result(), Err("no sandbox".to_owned()));
/// ```
pub trait IntoToolResult {
    /// The result, or the message of an `error` event.
    ///
    /// # Example
    /// ```
    /// use ssekit_http::ors::IntoToolResult;
    /// assert!("hello".into_tool_result().is_ok_and(|r| r.ok));
    /// ```
    fn into_tool_result(self) -> Result<ToolResult, String>;
}

impl IntoToolResult for ToolResult {
    fn into_tool_result(self) -> Result<ToolResult, String> {
        Ok(self)
    }
}

impl IntoToolResult for ToolOutput {
    fn into_tool_result(self) -> Result<ToolResult, String> {
        Ok(ToolResult::success(self))
    }
}

impl IntoToolResult for String {
    fn into_tool_result(self) -> Result<ToolResult, String> {
        ToolOutput::text(self).into_tool_result()
    }
}

impl IntoToolResult for &str {
    fn into_tool_result(self) -> Result<ToolResult, String> {
        ToolOutput::text(self).into_tool_result()
    }
}

impl IntoToolResult for Block {
    fn into_tool_result(self) -> Result<ToolResult, String> {
        ToolOutput::new(vec![self]).into_tool_result()
    }
}

impl IntoToolResult for Vec<Block> {
    fn into_tool_result(self) -> Result<ToolResult, String> {
        ToolOutput::new(self).into_tool_result()
    }
}

impl<O: IntoToolResult, E: fmt::Display> IntoToolResult for Result<O, E> {
    fn into_tool_result(self) -> Result<ToolResult, String> {
        self.map_err(|e| e.to_string())?.into_tool_result()
    }
}

/// A typed tool output: the value as compact JSON in one text block (no reward, not
/// finished).
///
/// # Example
/// ```
/// use ssekit_http::ors::{IntoToolResult, Json};
/// let r = Json(serde_json::json!({"letters": 10})).into_tool_result()?;
/// assert_eq!(serde_json::to_value(r)?["output"]["blocks"][0]["text"], r#"{"letters":10}"#);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Json<T>(pub T);

impl<T: Serialize> IntoToolResult for Json<T> {
    fn into_tool_result(self) -> Result<ToolResult, String> {
        serde_json::to_string(&self.0)
            .map_err(|e| e.to_string())?
            .into_tool_result()
    }
}

/// What a prompt of an [`Env`] may be: text (one text block), one [`Block`], or a list of
/// blocks.
///
/// # Example
/// ```
/// use ssekit_http::ors::{Block, IntoBlocks};
/// assert_eq!("Spell it.".into_blocks(), vec![Block::text("Spell it.")]);
/// ```
pub trait IntoBlocks {
    /// The blocks.
    ///
    /// # Example
    /// ```
    /// use ssekit_http::ors::IntoBlocks;
    /// assert_eq!(String::from("hi").into_blocks().len(), 1);
    /// ```
    fn into_blocks(self) -> Vec<Block>;
}

impl IntoBlocks for String {
    fn into_blocks(self) -> Vec<Block> {
        vec![Block::text(self)]
    }
}

impl IntoBlocks for &str {
    fn into_blocks(self) -> Vec<Block> {
        vec![Block::text(self)]
    }
}

impl IntoBlocks for Block {
    fn into_blocks(self) -> Vec<Block> {
        vec![self]
    }
}

impl IntoBlocks for Vec<Block> {
    fn into_blocks(self) -> Vec<Block> {
        self
    }
}
