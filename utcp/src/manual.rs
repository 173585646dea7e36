//! Tool definitions and the UTCP manual that lists them, as JSON.
//!
//! The shape accepted, from UTCP 0.1 (this provider's era) with 1.x's names too:
//!
//! ```json
//! { "version": "1.0",
//!   "tools": [
//!     { "name": "watch_stock", "description": "Get real-time price updates for a stock",
//!       "inputs":  { "type": "object", "properties": { "symbol": { "type": "string" } }, "required": ["symbol"] },
//!       "outputs": { "type": "object", "properties": { "price": { "type": "number" } } },
//!       "tags": ["finance"], "average_response_size": 200,
//!       "tool_provider": { "name": "market_updates", "provider_type": "sse", "url": "https://markets.example.com/stream" } } ] }
//! ```
//!
//! - manual: `tools` (required, an array); `version`, or 1.x's `utcp_version`, a string if
//!   present. Other fields (`manual_version`, `info`, `x-...`) are ignored.
//! - tool: `name` (required, a non-empty string, unique in the manual); `description` (a
//!   string, default `""`); `inputs` and `outputs` (JSON Schemas, see [`Schema`];
//!   missing is `{}`, which accepts anything); `tags` (strings); `average_response_size` (a
//!   non-negative integer); the provider, an object, under `tool_provider` (0.1's models),
//!   `provider` (0.1's tool page) or `tool_call_template` (1.x), the first present. Other
//!   fields are ignored.
//! - `null` is the same as absent for every optional field, as the official UTCP library
//!   (`utcp` 1.2.0) writes a manual: its serializer writes every unset field as `null`,
//!   in the schemas too (see [`UNSET_AS_NULL`](crate::UNSET_AS_NULL)). A manual it writes
//!   is read unchanged.
//!
//! A field of the wrong type, an invalid schema or a duplicate name is a [`ManualError`]
//! naming where, not a tool silently dropped. A tool whose provider object is not an SSE
//! one this crate can read (another `call_template_type`, or a broken SSE one) is kept and
//! reported in [`Manual::warnings`].

use std::collections::HashMap;
use std::fmt;

use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::schema::{Schema, SchemaError};
use super::{ShownUrl, SseProvider, NOT_A_URL, REDACTED};
use crate::Error;

/// A manual or tool definition that is not in the accepted shape (see [the module](self)).
///
/// # Example
/// ```
/// let err = ssekit_utcp::Manual::from_json(r#"{"tools": [{"description": "no name"}]}"#).unwrap_err();
/// assert_eq!(err.path, "/tools/0/name");
/// assert_eq!(err.to_string(), "invalid UTCP manual at /tools/0/name: missing (a tool needs a name)");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ManualError {
    /// Where, as a JSON Pointer (RFC 6901) into the document; `""` is the whole document.
    pub path: String,
    /// What is wrong there.
    pub problem: String,
}

impl fmt::Display for ManualError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = if self.path.is_empty() {
            "the top level"
        } else {
            &self.path
        };
        write!(f, "invalid UTCP manual at {at}: {}", self.problem)
    }
}

impl std::error::Error for ManualError {}

fn wrong(path: impl Into<String>, problem: impl Into<String>) -> ManualError {
    ManualError {
        path: path.into(),
        problem: problem.into(),
    }
}

/// A tool: what it is called, what it takes, what each of its events carries, and how to
/// reach it. Its `Debug` output leaves the provider's secrets out (see
/// [`provider`](Self::provider)).
///
/// # Example
/// ```
/// use serde_json::json;
/// let tool = ssekit_utcp::Tool::new(
///     "watch_stock",
///     "Get real-time price updates for a stock",
///     json!({"type": "object", "properties": {"symbol": {"type": "string"}}, "required": ["symbol"]}),
///     json!({"type": "object", "properties": {"price": {"type": "number"}}}),
/// )?;
/// assert!(tool.outputs.validate(&json!({"price": 189.5})).is_ok());
/// let tool = tool.with_provider(json!({"name": "p", "provider_type": "sse", "url": "http://127.0.0.1:1/e",
///     "auth": {"auth_type": "api_key", "api_key": "k-123", "var_name": "X-API-Key"}}));
/// assert!(!format!("{tool:?}").contains("k-123"));
/// # Ok::<(), ssekit_utcp::SchemaError>(())
/// ```
#[derive(Clone, PartialEq)]
#[non_exhaustive]
pub struct Tool {
    /// The tool's name, unique in its manual.
    pub name: String,
    /// What it does.
    pub description: String,
    /// The schema of a call's inputs.
    pub inputs: Schema,
    /// The schema of each event's data.
    pub outputs: Schema,
    /// Tags for search.
    pub tags: Vec<String>,
    /// The typical size of a response in bytes, if the manual says.
    pub average_response_size: Option<u64>,
    /// The provider (0.1) or call template (1.x) object, as written. It can hold
    /// credentials (an API key, a password, a client secret, header values), so the tool's
    /// `Debug` output shows it with them replaced by `"<redacted>"`: the values of
    /// `headers` (their names are kept), every field of `auth` but `auth_type`,
    /// `var_name`, `location`, `username`, `client_id`, `scope` and `token_url` (as
    /// [`SseProvider`]'s `Debug` does), and anywhere in the object a field whose name
    /// speaks of a secret (`secret`, `password`, `token`, `api_key`, `authorization`,
    /// `cookie`, `credential`, `private_key`; not a URL such as `token_url`). A field whose
    /// name ends in `url` or `uri` is shown as `scheme://host[:port]/path`, without user
    /// info, and with `?<redacted>` for a query or fragment.
    pub provider: Option<Value>,
}

impl fmt::Debug for Tool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tool")
            .field("name", &self.name)
            .field("description", &self.description)
            .field("inputs", &self.inputs)
            .field("outputs", &self.outputs)
            .field("tags", &self.tags)
            .field("average_response_size", &self.average_response_size)
            .field("provider", &self.provider.as_ref().map(redacted))
            .finish()
    }
}

/// What stands for a secret in a redacted provider object.
/// The fields of `auth` shown in `Debug` output, as [`SseProvider`]'s `Debug` shows them
/// (1.x's `location` too); the others are secrets, or may be.
const AUTH_SHOWN: [&str; 7] = [
    "auth_type",
    "var_name",
    "location",
    "username",
    "client_id",
    "scope",
    "token_url",
];

/// Whether a field of this name holds a secret: its name, lowercased without `_` and `-`,
/// speaks of one, and it is not a URL (`token_url`) or a type (`token_type`).
fn is_secret_field(name: &str) -> bool {
    let name: String = name
        .chars()
        .filter(|c| !matches!(c, '_' | '-'))
        .map(|c| c.to_ascii_lowercase())
        .collect();
    if name.ends_with("url") || name.ends_with("uri") || name.ends_with("type") {
        return false;
    }
    [
        "secret",
        "password",
        "passwd",
        "token",
        "apikey",
        "authorization",
        "cookie",
        "credential",
        "privatekey",
    ]
    .iter()
    .any(|word| name.contains(word))
}

/// Whether a field of this name holds a URL (`url`, `token_url`, `discovery_uri`), which
/// `Debug` output shows without user info or query, as [`ShownUrl`] does.
fn is_url_field(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    name.ends_with("url") || name.ends_with("uri")
}

/// A field that is not a secret as `Debug` output shows it: a URL without its user info
/// and query, anything else with its own secrets redacted.
fn shown_field(name: &str, value: &Value) -> Value {
    match value {
        Value::String(text) if is_url_field(name) => {
            json!(ShownUrl(text).text().as_deref().unwrap_or(NOT_A_URL))
        }
        _ => redacted(value),
    }
}

/// A copy of a provider object for `Debug` output, its secrets replaced (see
/// [`Tool::provider`]).
fn redacted(value: &Value) -> Value {
    match value {
        Value::Object(fields) => Value::Object(
            fields
                .iter()
                .map(|(name, field)| {
                    let shown = match (name.as_str(), field) {
                        ("headers", Value::Object(headers)) => Value::Object(
                            headers
                                .keys()
                                .map(|header| (header.clone(), json!(REDACTED)))
                                .collect(),
                        ),
                        ("auth", Value::Object(auth)) => Value::Object(
                            auth.iter()
                                .map(|(key, v)| {
                                    let v = if AUTH_SHOWN.contains(&key.as_str()) {
                                        shown_field(key, v)
                                    } else {
                                        json!(REDACTED)
                                    };
                                    (key.clone(), v)
                                })
                                .collect(),
                        ),
                        // An `auth` or `headers` of another shape is not read, only kept: it
                        // may be a credential all the same.
                        ("headers" | "auth", Value::Null) => Value::Null,
                        ("headers" | "auth", _) => json!(REDACTED),
                        _ if is_secret_field(name) => json!(REDACTED),
                        _ => shown_field(name, field),
                    };
                    (name.clone(), shown)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(redacted).collect()),
        other => other.clone(),
    }
}

impl Tool {
    /// A tool with these schemas, no tags and no provider.
    ///
    /// # Example
    /// ```
    /// let tool = ssekit_utcp::Tool::new("ping", "", serde_json::json!({}), serde_json::json!({}))?;
    /// assert_eq!(tool.name, "ping");
    /// # Ok::<(), ssekit_utcp::SchemaError>(())
    /// ```
    pub fn new(
        name: &str,
        description: &str,
        inputs: Value,
        outputs: Value,
    ) -> Result<Tool, SchemaError> {
        Ok(Tool {
            name: name.to_owned(),
            description: description.to_owned(),
            inputs: Schema::new(inputs)?,
            outputs: Schema::new(outputs)?,
            tags: Vec::new(),
            average_response_size: None,
            provider: None,
        })
    }

    /// The same tool with this provider object (written as `tool_provider`).
    ///
    /// # Example
    /// ```
    /// let tool = ssekit_utcp::Tool::new("t", "", serde_json::json!({}), serde_json::json!({}))?
    ///     .with_provider(serde_json::json!({"name": "p", "provider_type": "sse", "url": "http://127.0.0.1:1/e"}));
    /// assert_eq!(tool.call_template_type(), Some("sse"));
    /// # Ok::<(), ssekit_utcp::SchemaError>(())
    /// ```
    #[must_use]
    pub fn with_provider(mut self, provider: Value) -> Self {
        self.provider = Some(provider);
        self
    }

    /// The same tool with these tags.
    ///
    /// # Example
    /// ```
    /// let tool = ssekit_utcp::Tool::new("t", "", serde_json::json!({}), serde_json::json!({}))?
    ///     .with_tags(["finance"]);
    /// assert_eq!(tool.tags, ["finance"]);
    /// # Ok::<(), ssekit_utcp::SchemaError>(())
    /// ```
    #[must_use]
    pub fn with_tags<S: Into<String>>(mut self, tags: impl IntoIterator<Item = S>) -> Self {
        self.tags = tags.into_iter().map(Into::into).collect();
        self
    }

    /// Parses one tool definition.
    ///
    /// # Example
    /// ```
    /// let tool = ssekit_utcp::Tool::from_json(r#"{
    ///   "name": "watch_stock",
    ///   "description": "Get real-time price updates for a stock",
    ///   "inputs": {"type": "object", "properties": {"symbol": {"type": "string"}}, "required": ["symbol"]},
    ///   "outputs": {"type": "object", "properties": {"price": {"type": "number"}}}
    /// }"#)?;
    /// assert_eq!(tool.name, "watch_stock");
    /// # Ok::<(), ssekit_utcp::ManualError>(())
    /// ```
    pub fn from_json(json: &str) -> Result<Tool, ManualError> {
        let value: Value =
            serde_json::from_str(json).map_err(|e| wrong("", format!("not JSON: {e}")))?;
        parse_tool(value, "")
    }

    /// Parses one tool definition from JSON already read.
    ///
    /// # Example
    /// ```
    /// let tool = ssekit_utcp::Tool::from_value(&serde_json::json!({"name": "t", "x-extra": 1}))?;
    /// assert_eq!(tool.description, "");
    /// # Ok::<(), ssekit_utcp::ManualError>(())
    /// ```
    pub fn from_value(value: &Value) -> Result<Tool, ManualError> {
        parse_tool(value.clone(), "")
    }

    /// The definition as JSON, with the provider under `tool_provider` (omitted when there
    /// is none, as is `average_response_size`).
    ///
    /// # Example
    /// ```
    /// let tool = ssekit_utcp::Tool::new("t", "d", serde_json::json!({}), serde_json::json!({}))?;
    /// assert_eq!(tool.to_value()["name"], "t");
    /// # Ok::<(), ssekit_utcp::SchemaError>(())
    /// ```
    pub fn to_value(&self) -> Value {
        let mut out = Map::new();
        out.insert("name".into(), json!(self.name));
        out.insert("description".into(), json!(self.description));
        out.insert("inputs".into(), self.inputs.as_value().clone());
        out.insert("outputs".into(), self.outputs.as_value().clone());
        out.insert("tags".into(), json!(self.tags));
        if let Some(size) = self.average_response_size {
            out.insert("average_response_size".into(), json!(size));
        }
        if let Some(provider) = &self.provider {
            out.insert("tool_provider".into(), provider.clone());
        }
        Value::Object(out)
    }

    /// The provider as an [`SseProvider`]: `None` when the tool has none or it is not an
    /// SSE one (`provider_type`, or 1.x's `call_template_type`, other than `"sse"`). Its
    /// `$VARIABLES` are as written: resolve them with [`SseProvider::with_variables`].
    ///
    /// A discovered manual is the server's word: its providers may name any `url` and
    /// `token_url`, and `$VARIABLES` resolved from your environment go there. Check that
    /// they are where you mean to send those credentials (for instance that
    /// [`discovery_url`](super::discovery_url) of the provider's `url` is the one you
    /// discovered from) before resolving them, or resolve only the names meant for that
    /// provider.
    ///
    /// The provider's calls go through the transport `T`: name it where the type does not
    /// say (`tool.sse_provider_for::<SmolHttp>()`, or a `let` of type
    /// `ssekit_smol::utcp::SseProvider`). With one transport, its `utcp` module's `ToolExt`
    /// (in scope with `use ssekit_smol::utcp::*`) names it for you: `tool.sse_provider()`.
    ///
    /// # Example
    /// `()` for `T` reads the provider without a transport (to check it, say).
    /// ```
    /// let tool = ssekit_utcp::Tool::from_value(&serde_json::json!({"name": "t",
    ///     "tool_call_template": {"name": "p", "call_template_type": "sse", "url": "http://127.0.0.1:1/e"}}))?;
    /// let provider = tool.sse_provider_for::<()>().transpose()?;
    /// assert_eq!(provider.map(|p| p.url), Some("http://127.0.0.1:1/e".to_owned()));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn sse_provider_for<T>(&self) -> Option<Result<SseProvider<T>, Error>> {
        if self.call_template_type() != Some("sse") {
            return None;
        }
        let provider = self.provider.as_ref()?;
        Some(SseProvider::<T>::deserialize(provider).map_err(Error::from))
    }

    /// The type of the tool's provider or call template: `provider_type` (0.x) or
    /// `call_template_type` (1.x); `None` when it has none, or names none.
    ///
    /// # Example
    /// ```
    /// let tool = ssekit_utcp::Tool::from_value(&serde_json::json!({"name": "t",
    ///     "tool_call_template": {"call_template_type": "http", "url": "http://127.0.0.1:1/e"}}))?;
    /// assert_eq!(tool.call_template_type(), Some("http"));
    /// # Ok::<(), ssekit_utcp::ManualError>(())
    /// ```
    pub fn call_template_type(&self) -> Option<&str> {
        let Some(Value::Object(provider)) = &self.provider else {
            return None;
        };
        ["provider_type", "call_template_type"]
            .iter()
            .find_map(|field| provider.get(*field).and_then(Value::as_str))
    }
}

fn field_path(base: &str, field: &str) -> String {
    format!("{base}/{field}")
}

/// The provider fields a tool object is read from, in order: the first present is used.
const PROVIDER_FIELDS: [&str; 3] = ["tool_provider", "provider", "tool_call_template"];

/// Which of [`PROVIDER_FIELDS`] a tool object's provider is read from.
fn provider_field(tool: &Value) -> Option<&'static str> {
    PROVIDER_FIELDS
        .into_iter()
        .find(|f| tool.get(*f).is_some_and(|v| !v.is_null()))
}

/// Reads a tool from its JSON, moving the schemas and the provider out of it rather than
/// copying them (parsed JSON is large: see [`Manual::from_slice`]).
fn parse_tool(value: Value, base: &str) -> Result<Tool, ManualError> {
    let Value::Object(mut tool) = value else {
        return Err(wrong(base, "a tool is a JSON object"));
    };
    let name = match tool.get("name") {
        Some(Value::String(name)) if !name.is_empty() => name.clone(),
        Some(Value::String(_)) => return Err(wrong(field_path(base, "name"), "empty")),
        Some(_) => return Err(wrong(field_path(base, "name"), "not a string")),
        None => {
            return Err(wrong(
                field_path(base, "name"),
                "missing (a tool needs a name)",
            ))
        }
    };
    let description = match tool.get("description") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(d)) => d.clone(),
        Some(_) => return Err(wrong(field_path(base, "description"), "not a string")),
    };
    let mut schema = |field: &str| -> Result<Schema, ManualError> {
        match tool.remove(field) {
            None | Some(Value::Null) => Ok(Schema::any()),
            Some(s) => Schema::new(s)
                .map_err(|e| wrong(format!("{}{}", field_path(base, field), e.path), e.problem)),
        }
    };
    let inputs = schema("inputs")?;
    let outputs = schema("outputs")?;
    let tags = match tool.get("tags") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(tags)) => tags
            .iter()
            .map(|t| t.as_str().map(str::to_owned))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| wrong(field_path(base, "tags"), "not an array of strings"))?,
        Some(_) => return Err(wrong(field_path(base, "tags"), "not an array of strings")),
    };
    let average_response_size = match tool.get("average_response_size") {
        None | Some(Value::Null) => None,
        Some(n) => Some(n.as_u64().ok_or_else(|| {
            wrong(
                field_path(base, "average_response_size"),
                "not a non-negative integer",
            )
        })?),
    };
    let mut provider = None;
    for field in PROVIDER_FIELDS {
        match tool.remove(field) {
            None | Some(Value::Null) => continue,
            Some(p @ Value::Object(_)) => {
                provider = Some(p);
                break;
            }
            Some(_) => return Err(wrong(field_path(base, field), "not an object")),
        }
    }
    Ok(Tool {
        name,
        description,
        inputs,
        outputs,
        tags,
        average_response_size,
        provider,
    })
}

/// A UTCP manual: the tools a provider offers (see [the module](self) for the JSON).
///
/// # Example
/// ```
/// let manual = ssekit_utcp::Manual::from_json(r#"{"version": "1.0", "tools": [{"name": "watch_stock"}]}"#)?;
/// assert_eq!(manual.version.as_deref(), Some("1.0"));
/// assert!(manual.tool("watch_stock").is_some());
/// # Ok::<(), ssekit_utcp::ManualError>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct Manual {
    /// `version` (or `utcp_version`), if given.
    pub version: Option<String>,
    /// The tools, in the manual's order.
    pub tools: Vec<Tool>,
    /// The tools whose own provider object is not an SSE one this crate reads, and why
    /// (found by [`Manual::from_json`] and its siblings; a manual built in code has none):
    /// their [`Tool::sse_provider_for`] is `None` or an error. They stay in
    /// [`tools`](Self::tools): a manual may list tools of other protocols (`http`, `cli`,
    /// ...) beside its SSE ones, which the official library's client, given only its own
    /// template's protocol, leaves out with a logged warning. A tool without a provider
    /// object is no warning: it is called through the provider you call it with.
    pub warnings: Vec<ManualWarning>,
}

/// A tool of a manual whose own provider object this crate does not use (see
/// [`Manual::warnings`]).
///
/// # Example
/// ```
/// use ssekit_utcp::{Manual, WarningKind};
/// let manual = Manual::from_json(r#"{"tools": [{"name": "t",
///     "tool_call_template": {"call_template_type": "cli", "commands": []}}]}"#)?;
/// let warning = &manual.warnings[0];
/// assert_eq!(warning.path, "/tools/0/tool_call_template");
/// assert_eq!(warning.kind, WarningKind::Unsupported { call_template_type: "cli".into() });
/// assert_eq!(warning.to_string(), r#"tool "t" at /tools/0/tool_call_template: call template type "cli" is not "sse" (Tool::sse_provider is None)"#);
/// # Ok::<(), ssekit_utcp::ManualError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ManualWarning {
    /// The tool's name.
    pub tool: String,
    /// Where, as a JSON Pointer into the manual: the provider object, or the tool when it
    /// has none.
    pub path: String,
    /// What is wrong.
    pub kind: WarningKind,
}

/// Why a tool of a manual cannot be called by this provider.
///
/// # Example
/// ```
/// let kind = ssekit_utcp::WarningKind::NoType;
/// assert_eq!(kind.to_string(), "the call template names no call_template_type");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum WarningKind {
    /// Its provider object names no type (`call_template_type` or `provider_type`).
    NoType,
    /// Its type is another protocol's.
    Unsupported {
        /// The type it names.
        call_template_type: String,
    },
    /// It is an SSE provider object that does not read (a missing `url`, a field of the
    /// wrong type); [`Tool::sse_provider_for`] returns the same error.
    Invalid {
        /// What the parser said.
        problem: String,
    },
}

impl fmt::Display for WarningKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WarningKind::NoType => f.write_str("the call template names no call_template_type"),
            WarningKind::Unsupported { call_template_type } => write!(
                f,
                "call template type {call_template_type:?} is not \"sse\" (Tool::sse_provider is None)"
            ),
            WarningKind::Invalid { problem } => write!(f, "invalid SSE call template: {problem}"),
        }
    }
}

impl fmt::Display for ManualWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "tool {:?} at {}: {}", self.tool, self.path, self.kind)
    }
}

/// What is wrong with `tool`'s provider for this crate, if anything; `field` is where the
/// provider object was found.
fn warning(tool: &Tool, base: &str, field: Option<&str>) -> Option<ManualWarning> {
    let kind = match tool.call_template_type() {
        _ if tool.provider.is_none() => return None,
        None => WarningKind::NoType,
        Some("sse") => match tool.sse_provider_for::<()>()? {
            Ok(_) => return None,
            Err(e) => WarningKind::Invalid {
                problem: e.to_string(),
            },
        },
        Some(other) => WarningKind::Unsupported {
            call_template_type: other.to_owned(),
        },
    };
    Some(ManualWarning {
        tool: tool.name.clone(),
        path: field.map_or_else(|| base.to_owned(), |f| field_path(base, f)),
        kind,
    })
}

impl Manual {
    /// A manual of these tools, without a version.
    ///
    /// # Example
    /// ```
    /// let tool = ssekit_utcp::Tool::new("t", "", serde_json::json!({}), serde_json::json!({}))?;
    /// let manual = ssekit_utcp::Manual::new(vec![tool]).with_version("1.0");
    /// assert_eq!(manual.to_value()["version"], "1.0");
    /// # Ok::<(), ssekit_utcp::SchemaError>(())
    /// ```
    pub fn new(tools: Vec<Tool>) -> Self {
        Manual {
            version: None,
            tools,
            warnings: Vec::new(),
        }
    }

    /// The same manual with this `version`.
    ///
    /// # Example
    /// ```
    /// assert_eq!(ssekit_utcp::Manual::new(vec![]).with_version("1.0").version.as_deref(), Some("1.0"));
    /// ```
    #[must_use]
    pub fn with_version(mut self, version: &str) -> Self {
        self.version = Some(version.to_owned());
        self
    }

    /// Parses a manual.
    ///
    /// # Example
    /// ```
    /// let err = ssekit_utcp::Manual::from_json(r#"{"tools": {}}"#).unwrap_err();
    /// assert_eq!((err.path.as_str(), err.problem.as_str()), ("/tools", "not an array"));
    /// ```
    pub fn from_json(json: &str) -> Result<Manual, ManualError> {
        Manual::from_slice(json.as_bytes())
    }

    /// Parses a manual from bytes (a response body).
    ///
    /// Parsed, JSON takes far more memory than its text, and a manual's schemas are kept as
    /// written: measured, a manual of small objects (in `properties` or an `enum`) takes up
    /// to about 90 times its bytes (an 8 MiB one 0.73 GB, and 1.45 GB while the schemas and
    /// `enum`s were copied out of the parsed document). Bound what you read with that in
    /// mind: [`Discovery::max_size`](super::Discovery::max_size) is 1 MiB by default.
    ///
    /// # Example
    /// ```
    /// let err = ssekit_utcp::Manual::from_slice(b"<html>").unwrap_err();
    /// assert!(err.problem.starts_with("not JSON"));
    /// ```
    pub fn from_slice(json: &[u8]) -> Result<Manual, ManualError> {
        let value: Value =
            serde_json::from_slice(json).map_err(|e| wrong("", format!("not JSON: {e}")))?;
        Manual::from_owned(value)
    }

    /// Parses a manual from JSON already read.
    ///
    /// # Example
    /// ```
    /// let manual = ssekit_utcp::Manual::from_value(&serde_json::json!({"utcp_version": "1.0.1", "tools": []}))?;
    /// assert_eq!(manual.version.as_deref(), Some("1.0.1"));
    /// # Ok::<(), ssekit_utcp::ManualError>(())
    /// ```
    pub fn from_value(value: &Value) -> Result<Manual, ManualError> {
        Manual::from_owned(value.clone())
    }

    /// Reads a manual from its JSON, each tool moved out of it in turn.
    fn from_owned(value: Value) -> Result<Manual, ManualError> {
        let Value::Object(mut manual) = value else {
            return Err(wrong("", "a manual is a JSON object"));
        };
        let mut version = None;
        for field in ["version", "utcp_version"] {
            match manual.get(field) {
                None | Some(Value::Null) => continue,
                Some(Value::String(v)) => {
                    version = Some(v.clone());
                    break;
                }
                Some(_) => return Err(wrong(format!("/{field}"), "not a string")),
            }
        }
        let tools = match manual.remove("tools") {
            Some(Value::Array(tools)) => tools,
            Some(_) => return Err(wrong("/tools", "not an array")),
            None => return Err(wrong("/tools", "missing (a manual lists its tools)")),
        };
        let mut parsed: Vec<Tool> = Vec::with_capacity(tools.len());
        let mut seen: HashMap<String, usize> = HashMap::with_capacity(tools.len());
        let mut warnings = Vec::new();
        for (i, tool) in tools.into_iter().enumerate() {
            let base = format!("/tools/{i}");
            let field = provider_field(&tool);
            let tool = parse_tool(tool, &base)?;
            warnings.extend(warning(&tool, &base, field));
            if let Some(first) = seen.insert(tool.name.clone(), i) {
                return Err(wrong(
                    format!("{base}/name"),
                    format!("{:?} is the name of /tools/{first} too", tool.name),
                ));
            }
            parsed.push(tool);
        }
        Ok(Manual {
            version,
            tools: parsed,
            warnings,
        })
    }

    /// The tool of this name.
    ///
    /// # Example
    /// ```
    /// assert!(ssekit_utcp::Manual::new(vec![]).tool("watch_stock").is_none());
    /// ```
    pub fn tool(&self, name: &str) -> Option<&Tool> {
        self.tools.iter().find(|t| t.name == name)
    }

    /// The manual as JSON: `version` (when set) and `tools`.
    ///
    /// # Example
    /// ```
    /// let json = ssekit_utcp::Manual::new(vec![]).to_value();
    /// assert_eq!(json, serde_json::json!({"tools": []}));
    /// ```
    pub fn to_value(&self) -> Value {
        let mut out = Map::new();
        if let Some(version) = &self.version {
            out.insert("version".into(), json!(version));
        }
        out.insert(
            "tools".into(),
            Value::Array(self.tools.iter().map(Tool::to_value).collect()),
        );
        Value::Object(out)
    }
}
