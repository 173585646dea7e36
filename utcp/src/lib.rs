//! # ssekit-utcp — UTCP's SSE provider, written once for every ssekit transport
//!
//! UTCP's SSE provider: read the provider's JSON object and connect as it says, call a tool
//! whose inputs and outputs are checked against its JSON Schemas, and find the tools at
//! `/utcp`. Like the [`ssekit`] core and `ssekit-http` it is deterministic and does no IO of
//! its own: every request, stream, clock reading and wait goes through a transport's
//! [`HttpIo`] (`ssekit_hyper::client::HyperHttp` on tokio, `ssekit_smol::client::SmolHttp`
//! on smol), so both transports expose the same provider: `ssekit_hyper::utcp` and
//! `ssekit_smol::utcp` are this crate with the type parameter filled in.
//!
//! ```json
//! { "name": "live_updates_service", "provider_type": "sse",
//!   "url": "https://api.example.com/events", "event_type": "message",
//!   "reconnect": true, "retry_timeout": 30000,
//!   "auth": { "auth_type": "api_key", "api_key": "$YOUR_API_KEY", "var_name": "X-API-Key" },
//!   "headers": { "User-Agent": "UTCP Client" },
//!   "body_field": "payload", "header_fields": ["api_version", "client_id"] }
//! ```
//!
//! ```text
//!  provider JSON ─▶ SseProvider<T>::connect ─▶ RequestSpec (+ token hook) ─▶ T::events ─▶ ProviderSource<T> (OAuth2 token kept fresh)
//!  GET /utcp ─▶ Discovery<T> (T::request_limited, 1 MiB) ─▶ Manual ─▶ Tool ─▶ SseProvider::call ─▶ outputs checked against the tool's schema
//!  server: ManualEndpoint::answer(request) ─▶ 200 application/json | 405 | not this path
//! ```
//!
//! **Why a crate of its own.** The provider brings a JSON Schema checker, an OAuth2 client
//! (the client-credentials grant, token refresh) and a manual parser: a few thousand lines
//! that an application reading plain SSE should not compile. As a crate depending only on
//! `ssekit-http` (for [`HttpIo`], the request description and the error), it is written
//! once for both runtimes, and each transport pulls it in behind its `utcp` feature.
//!
//! A tool call's inputs are split as the official UTCP client (`utcp-http` 1.1.15) splits
//! them: the `header_fields` become request headers (each Python's `str()` of the input:
//! `True`, `None`, `1e+20`), the `body_field` becomes the request body (and the request a
//! `POST`; without a body, or with a `null` one, it is a `GET`), `{name}` in the URL takes
//! the input `name`, and every other input becomes a query parameter, as the provider page
//! says ("with any input parameters as query parameters"). The body is encoded by the
//! template's `Content-Type`: JSON when it says `application/json`, otherwise an object is
//! form-encoded and a string sent as text. `event_type` filters events through the core's
//! [`ReconnectConfig::event_type`]; `reconnect` and `retry_timeout` are its `reconnect` and
//! reconnection time. A call runs "until the connection is closed": a clean end of the
//! stream ends it ([`ReconnectConfig::stop_on_clean_end`]), and only a cut stream, a failed
//! connection or a 5xx reconnects, with `Last-Event-ID`, at most 5 times in a row without
//! an event. `auth` is an API key (header, query or cookie), HTTP Basic, or an OAuth2
//! bearer token fetched with the client-credentials grant from an `https` (or loopback)
//! `token_url`, and fetched again by the stream when it expires (`expires_in`) or the
//! server refuses it on a reconnect ([`ProviderSource`]).
//!
//! With the tool's definition known ([`Tool`]: name, description, `inputs` and `outputs`
//! schemas), [`SseProvider::call`] checks the inputs before connecting and yields each
//! event's data parsed as JSON and checked against `outputs` ([`call`](mod@call) module:
//! how schemas are read is in [`schema`](mod@schema)). Definitions are
//! found at `/utcp` on the API's domain with [`discover`] (or [`SseProvider::discover`],
//! which sends the provider's headers and credentials there as its tool calls do), and
//! served there with [`ManualEndpoint`].
//!
//! | module | what |
//! |---|---|
//! | this one | the provider object, its variables, auth and input split: [`SseProvider::connect`] → [`ProviderSource`]; OAuth2: [`TokenUrlError`], [`TOKEN_TIMEOUT`], [`MAX_TOKEN_RESPONSE`], [`TOKEN_REFRESH_MARGIN`] |
//! | [`schema`](mod@schema) | JSON Schema (draft 2020-12, through `jsonschema`), read as UTCP writes it: [`Schema`], [`Mismatch`], [`MAX_DEPTH`], [`UNSET_AS_NULL`] |
//! | [`manual`](mod@manual) | [`Tool`] and [`Manual`] as JSON, [`ManualError`], [`ManualWarning`] |
//! | [`call`](mod@call) | [`SseProvider::call`] → [`ToolCall`] → [`Outputs`], [`OnMismatch`], [`CallError`], [`DEFAULT_MAX_OUTPUT`] |
//! | [`discovery`](mod@discovery) | [`discover`], [`SseProvider::discover`] (with the provider's credentials), [`Discovery`], [`ManualEndpoint`] |
//! | [`transport_module!`] | a transport's `utcp` module: all of this, named for its [`HttpIo`] |
//!
//! # Differences from the official client
//! `interop/py/check_utcp.py` calls the same tools, from a manual the official serializer
//! (`utcp` 1.2.0) wrote, with the official client (`utcp-http` 1.1.15) and with ssekit, and
//! compares the requests the server records and the results: equal for every call but
//! these, which it asserts as they are. Each is deliberate.
//!
//! | what | the official client | ssekit |
//! |---|---|---|
//! | a `POST` call (with a body) cut mid-stream | never reconnects a call with a body: the call fails | reconnects, sending the body again with `Last-Event-ID` (the server resumes; UTCP tools are mostly `POST`) |
//! | the body ends inside an event | ends the call; the half event is dropped | a cut: reconnects with `Last-Event-ID`, as after a reset |
//! | the server replays events already delivered | delivers them again | drops ids it delivered (the last 256) |
//! | inputs that do not match the tool's `inputs` | sent | [`CallError::Inputs`], nothing sent |
//! | an event that does not match the tool's `outputs` | delivered | reported ([`CallError::Output`]) and skipped ([`OnMismatch`]) |
//! | the wait before a reconnect | `min(retry_timeout, 60 s)`, the same every time; `0` reconnects at once; a `retry:` over 60 s capped | at least 100 ms (the core's floor against reconnect loops), doubled per failure in a row up to 60 s, up to 20 % jitter; a `retry:` honoured as sent |
//! | how many reconnects | 5 per call; the first connection failing fails the call | 5 in a row without an event (an event starts the count over); a failed first connection (refused, 5xx, 429) is retried too |
//! | Basic credentials beyond ASCII | Latin-1 | UTF-8 (RFC 7617) |
//! | JSON body bytes | `json.dumps`: `", "`, `": "`, `\uXXXX` | compact JSON, UTF-8 (the same JSON) |
//! | object keys (query, form body, a header field holding an object) | the order of the arguments | sorted (serde_json's map) |
//! | raw query escapes | yarl's: a space as `+`, `/?'!*()` kept | RFC 3986: everything but `A-Za-z0-9-._~` escaped (the same decoded values) |
//! | a query input that is `true`/`false`, `null` or an object; a body that is an array, number or boolean | `TypeError`, no request | JSON text; `null` left out; JSON body (`application/json`) |
//! | a `Content-Type` written in another case (`content-type`) | not seen: the body is form-encoded under a JSON type | seen (header names are case-insensitive) |
//! | a manual with a tool of a type it has no plugin for | refuses the whole manual | keeps the tool, reports it in [`Manual::warnings`] |
//! | a call template without `name` | makes up a random name | `""` |
//!
//! # Crate features
//! - `tracing`: a span per tool call (`utcp_call`: `tool`, `provider`, and `url` without
//!   userinfo or query), `debug` events for discovery and each call, `warn` for a call that
//!   failed and an OAuth2 token refresh that did not work (and ssekit-http's own client
//!   events); nothing when off.
//! - `metrics`: ssekit-http's client metrics (attempts, give-ups), through the `metrics`
//!   facade.
//!
//! The crate needs `std`; it depends on `ssekit-http`, `http`, `http-body-util` (for
//! [`ManualEndpoint`]'s body), `serde_json`, `jsonschema` (without its remote-`$ref`
//! retrieval) and `futures-util`, and on no runtime or timer.
//!
//! # Example
//! A tool found at `/utcp`, called, and its outputs read, on any transport `T` (with
//! `use ssekit_smol::utcp::*` on smol, or `ssekit_hyper::utcp::*` on tokio, `SseProvider`
//! names the transport and the rest is the same):
//! ```no_run
//! use futures_util::StreamExt;
//! use ssekit_utcp::{HttpIo, SseProvider, Tool};
//!
//! async fn watch_stock<T: HttpIo>() -> Result<(), Box<dyn std::error::Error>> {
//!     let provider = SseProvider::<T>::from_json(r#"{"name":"market_updates","provider_type":"sse",
//!         "url":"http://127.0.0.1:8080/stream","event_type":"price_update"}"#)?;
//!     let manual = provider.discover().await?;
//!     let tool: &Tool = manual.tool("watch_stock").ok_or("no such tool")?;
//!     let inputs = serde_json::json!({"symbol": "AAPL"});
//!     let mut updates = provider.call(tool, inputs.as_object().ok_or("not an object")?).await?.outputs();
//!     while let Some(update) = updates.next().await {
//!         println!("{}", update?.value["price"]);
//!     }
//!     Ok(())
//! }
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs)]
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

pub mod call;
pub mod discovery;
mod encode;
mod glue;
pub mod manual;
mod oauth2;
mod observe;
pub mod schema;
mod source;

pub use call::{CallError, OnMismatch, Output, Outputs, ToolCall, DEFAULT_MAX_OUTPUT};
pub use discovery::{
    discover, discovery_url, Discovery, DiscoveryError, ManualEndpoint, DISCOVERY_PATH,
};
pub use manual::{Manual, ManualError, ManualWarning, Tool, WarningKind};
use oauth2::Grant;
pub use oauth2::{TokenUrlError, MAX_TOKEN_RESPONSE, TOKEN_REFRESH_MARGIN, TOKEN_TIMEOUT};
pub use schema::{Mismatch, Schema, SchemaError, MAX_DEPTH, UNSET_AS_NULL};
use source::Plan;
pub use source::ProviderSource;

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use bytes::Bytes;
use http::Method;
use serde::Deserialize;
use serde_json::{Map, Value};
use ssekit::client::ReconnectConfig;

pub use ssekit_http::io::HttpIo;
pub use ssekit_http::Error;
use ssekit_http::{RequestError, RequestErrorKind};

/// `auth` of a UTCP provider. Its `Debug` output leaves the key, password and client
/// secret out.
///
/// # Example
/// ```
/// use ssekit_utcp::Auth;
/// let auth: Auth = serde_json::from_str(r#"{"auth_type":"basic","username":"u","password":"p"}"#)?;
/// assert!(matches!(auth, Auth::Basic { .. }));
/// assert_eq!(format!("{auth:?}"), r#"Basic { username: "u", password: <redacted> }"#);
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Clone, PartialEq, Eq, Deserialize)]
#[serde(tag = "auth_type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Auth {
    /// An API key, sent under the name `var_name` where `location` says (UTCP 1.x; a
    /// header by default).
    ApiKey {
        /// The key.
        api_key: String,
        /// The header, query parameter or cookie name (default `X-Api-Key`; `null` too).
        #[serde(default = "default_key_header", deserialize_with = "key_header")]
        var_name: String,
        /// Where the key goes (default, or `null`: a header).
        #[serde(default, deserialize_with = "null_is_default")]
        location: KeyLocation,
    },
    /// HTTP Basic.
    Basic {
        /// User name.
        username: String,
        /// Password.
        password: String,
    },
    /// OAuth2 client credentials: a token from `token_url`, sent as a bearer token and
    /// fetched again when it expires or is refused (see [`ProviderSource`]).
    #[serde(rename = "oauth2")]
    OAuth2 {
        /// The token endpoint: `https`, or plain `http` to a loopback host only (else a
        /// [`TokenUrlError`], before the client secret is sent).
        token_url: String,
        /// The client id.
        client_id: String,
        /// The client secret.
        client_secret: String,
        /// The scope, if any.
        #[serde(default)]
        scope: Option<String>,
    },
}

/// Where an [`Auth::ApiKey`] is sent: UTCP 1.x's `location`.
///
/// # Example
/// ```
/// use ssekit_utcp::{Auth, KeyLocation};
/// let auth: Auth = serde_json::from_str(
///     r#"{"auth_type":"api_key","api_key":"k","var_name":"key","location":"query"}"#)?;
/// assert!(matches!(auth, Auth::ApiKey { location: KeyLocation::Query, .. }));
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum KeyLocation {
    /// The request header `var_name` (marked sensitive, and not sent to another origin).
    #[default]
    Header,
    /// The query parameter `var_name`, percent-encoded (left out of `Debug` output and
    /// errors, as every query is).
    Query,
    /// The cookie `var_name`, in a `Cookie` header (a credential header: not sent to
    /// another origin).
    Cookie,
}

/// What `Debug` output shows in place of a secret.
pub(crate) const REDACTED: &str = "<redacted>";

/// Stands for a secret in `Debug` output.
pub(crate) struct Redacted;

impl fmt::Debug for Redacted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(REDACTED)
    }
}

/// A URL as `Debug` output shows it: `scheme://host[:port]/path`, with any user info left
/// out and a query or fragment shown as `?<redacted>` (where API keys and passwords go).
pub(crate) struct ShownUrl<'a>(pub(crate) &'a str);

impl ShownUrl<'_> {
    /// The URL as `Debug` output shows it, or `None` if it is not an absolute URL (and
    /// so is not shown at all).
    pub(crate) fn text(&self) -> Option<String> {
        let uri = self.0.parse::<http::Uri>().ok()?;
        uri.scheme()?;
        uri.authority()?;
        let mut shown = oauth2::shown_url(&uri);
        if uri.query().is_some() || self.0.contains('#') {
            shown.push('?');
            shown.push_str(REDACTED);
        }
        Some(shown)
    }
}

/// What `Debug` output shows in place of a text that should be a URL and is not one.
pub(crate) const NOT_A_URL: &str = "<redacted: not an absolute URL>";

impl fmt::Debug for ShownUrl<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.text() {
            Some(shown) => fmt::Debug::fmt(&shown, f),
            None => f.write_str(NOT_A_URL),
        }
    }
}

/// Header names with their values left out, for `Debug` output (a header value is where a
/// token goes).
pub(crate) struct HeaderNames<'a>(pub(crate) Vec<&'a str>);

impl fmt::Debug for HeaderNames<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map()
            .entries(self.0.iter().map(|name| (name, Redacted)))
            .finish()
    }
}

impl fmt::Debug for Auth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Auth::ApiKey {
                var_name, location, ..
            } => f
                .debug_struct("ApiKey")
                .field("api_key", &Redacted)
                .field("var_name", var_name)
                .field("location", location)
                .finish(),
            Auth::Basic { username, .. } => f
                .debug_struct("Basic")
                .field("username", username)
                .field("password", &Redacted)
                .finish(),
            Auth::OAuth2 {
                token_url,
                client_id,
                scope,
                ..
            } => f
                .debug_struct("OAuth2")
                .field("token_url", &ShownUrl(token_url))
                .field("client_id", client_id)
                .field("client_secret", &Redacted)
                .field("scope", scope)
                .finish(),
        }
    }
}

fn default_key_header() -> String {
    "X-Api-Key".to_owned()
}

/// `var_name`, `null` read as absent.
fn key_header<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Ok(Option::<String>::deserialize(d)?.unwrap_or_else(default_key_header))
}

/// A field whose `null` is its default, as the official library writes an unset one.
fn null_is_default<'de, D, V>(d: D) -> Result<V, D::Error>
where
    D: serde::Deserializer<'de>,
    V: Deserialize<'de> + Default,
{
    Ok(Option::<V>::deserialize(d)?.unwrap_or_default())
}

/// `retry_timeout` when the object has none, as in the official library: 30 s.
const DEFAULT_RETRY_MS: u64 = 30_000;

/// A UTCP SSE provider, as its JSON object is written, and the transport `T` its calls
/// go through (`ssekit_hyper::utcp::SseProvider` and `ssekit_smol::utcp::SseProvider` name
/// one each). Its `Debug` output leaves the auth's secrets and the header values out.
///
/// Both shapes are read, by every entry point ([`from_json`](Self::from_json), serde,
/// [`Tool::sse_provider_for`]): UTCP 0.x's provider (`"provider_type": "sse"`) and 1.x's call
/// template (`"call_template_type": "sse"`, as the official library writes it). As the
/// official library reads them, `null` is the same as absent for every optional field
/// (its serializer writes every unset field as `null`), and `name` is optional (empty when
/// absent; the official library makes up a random one). Unknown fields
/// (`allowed_communication_protocols`) are ignored.
///
/// Its calls make their IO with a new `T` (`T::new()`), or with the one given to
/// [`io`](Self::io): a shared HTTP client, a private TLS root.
///
/// # Example
/// Reading the object takes no transport: `()` stands for one here.
/// ```
/// let provider: ssekit_utcp::SseProvider<()> = serde_json::from_str(r#"{
///   "name": "market_updates", "provider_type": "sse",
///   "url": "https://markets.example.com/stream", "event_type": "price_update"
/// }"#)?;
/// assert_eq!(provider.event_type.as_deref(), Some("price_update"));
/// assert!(provider.reconnect);
/// assert_eq!(provider.retry_timeout, 30_000);
/// // The official library's serializer writes a 1.x call template like this.
/// let template: ssekit_utcp::SseProvider<()> = serde_json::from_str(r#"{
///   "name": "5f1c", "call_template_type": "sse", "auth": null, "allowed_communication_protocols": null,
///   "url": "https://markets.example.com/stream", "event_type": null, "reconnect": true,
///   "retry_timeout": 30000, "headers": null, "body_field": null, "header_fields": null
/// }"#)?;
/// assert_eq!(template.provider_type, "sse");
/// assert!(template.headers.is_empty() && template.header_fields.is_empty());
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Clone)]
#[non_exhaustive]
pub struct SseProvider<T> {
    /// The provider's name (`""` when the object has none).
    pub name: String,
    /// Always `"sse"` (read from `provider_type`, or 1.x's `call_template_type`).
    pub provider_type: String,
    /// The stream's URL. `{name}` in it is replaced by the input `name` (percent-encoded),
    /// as the official client does.
    pub url: String,
    /// Only events of this type are delivered (`null`: all).
    pub event_type: Option<String>,
    /// Whether to reconnect (default `true`).
    pub reconnect: bool,
    /// The reconnection time in milliseconds (default 30 000).
    pub retry_timeout: u64,
    /// Authentication.
    pub auth: Option<Auth>,
    /// Extra request headers.
    pub headers: BTreeMap<String, String>,
    /// The input sent as the request body.
    pub body_field: Option<String>,
    /// Inputs sent as request headers.
    pub header_fields: Vec<String>,
    /// The transport set with [`io`](Self::io).
    io: Option<T>,
}

/// A provider object as written, in either shape, every optional field nullable.
#[derive(Deserialize)]
struct RawProvider {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    provider_type: Option<String>,
    #[serde(default)]
    call_template_type: Option<String>,
    url: String,
    #[serde(default)]
    event_type: Option<String>,
    #[serde(default)]
    reconnect: Option<bool>,
    #[serde(default)]
    retry_timeout: Option<u64>,
    #[serde(default)]
    auth: Option<Auth>,
    #[serde(default)]
    headers: Option<BTreeMap<String, String>>,
    #[serde(default)]
    body_field: Option<String>,
    #[serde(default)]
    header_fields: Option<Vec<String>>,
}

impl<'de, T> Deserialize<'de> for SseProvider<T> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = RawProvider::deserialize(deserializer)?;
        let kind = match (raw.provider_type, raw.call_template_type) {
            (Some(a), Some(b)) if a != b => {
                return Err(serde::de::Error::custom(format!(
                    "provider_type {a:?} and call_template_type {b:?} disagree"
                )))
            }
            (Some(kind), _) | (None, Some(kind)) => kind,
            (None, None) => {
                return Err(serde::de::Error::custom(
                    "missing field provider_type (UTCP 0.x) or call_template_type (1.x)",
                ))
            }
        };
        if kind != "sse" {
            return Err(serde::de::Error::custom(format!(
                "the provider type is {kind:?}, not \"sse\""
            )));
        }
        Ok(SseProvider {
            name: raw.name.unwrap_or_default(),
            provider_type: kind,
            url: raw.url,
            event_type: raw.event_type,
            reconnect: raw.reconnect.unwrap_or(true),
            retry_timeout: raw.retry_timeout.unwrap_or(DEFAULT_RETRY_MS),
            auth: raw.auth,
            headers: raw.headers.unwrap_or_default(),
            body_field: raw.body_field,
            header_fields: raw.header_fields.unwrap_or_default(),
            io: None,
        })
    }
}

/// Two providers are equal when their JSON objects are (the transports are not compared).
impl<T> PartialEq for SseProvider<T> {
    fn eq(&self, other: &Self) -> bool {
        fn fields<T>(p: &SseProvider<T>) -> impl PartialEq + '_ {
            (
                (&p.name, &p.provider_type, &p.url, &p.event_type),
                (p.reconnect, p.retry_timeout, &p.auth, &p.headers),
                (&p.body_field, &p.header_fields),
            )
        }
        fields(self) == fields(other)
    }
}

impl<T> Eq for SseProvider<T> {}

impl<T> fmt::Debug for SseProvider<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SseProvider")
            .field("name", &self.name)
            .field("provider_type", &self.provider_type)
            .field("url", &ShownUrl(&self.url))
            .field("event_type", &self.event_type)
            .field("reconnect", &self.reconnect)
            .field("retry_timeout", &self.retry_timeout)
            .field("auth", &self.auth)
            .field(
                "headers",
                &HeaderNames(self.headers.keys().map(String::as_str).collect()),
            )
            .field("body_field", &self.body_field)
            .field("header_fields", &self.header_fields)
            .finish()
    }
}

/// `application/x-www-form-urlencoded` / query component encoding (RFC 3986 unreserved
/// characters pass, everything else is `%XX`).
pub(crate) fn encode_component(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// An `Authorization: Basic` value for `user` and `password` (RFC 7617).
fn basic_credentials(user: &str, password: &str) -> String {
    ssekit_http::auth::basic_authorization(&format!("{user}:{password}"))
}

impl<T> SseProvider<T> {
    /// Parses a provider object: a 0.x provider or a 1.x call template (see
    /// [`SseProvider`]). Another type than `"sse"` is an error naming it.
    ///
    /// # Example
    /// Parsing takes no transport: `()` stands for one here.
    /// ```
    /// type SseProvider = ssekit_utcp::SseProvider<()>;
    /// let p = SseProvider::from_json(r#"{"name":"n","provider_type":"sse","url":"http://127.0.0.1:1/e"}"#)?;
    /// assert_eq!(p.name, "n");
    /// let p = SseProvider::from_json(r#"{"call_template_type":"sse","url":"http://127.0.0.1:1/e"}"#)?;
    /// assert_eq!(p.name, "");
    /// let err = SseProvider::from_json(r#"{"call_template_type":"http","url":"http://127.0.0.1:1/e"}"#);
    /// assert!(err.unwrap_err().to_string().contains(r#"the provider type is "http""#));
    /// # Ok::<(), ssekit_http::Error>(())
    /// ```
    pub fn from_json(json: &str) -> Result<Self, Error> {
        Ok(serde_json::from_str(json)?)
    }

    /// Replaces UTCP variables (`$NAME` and `${NAME}`) in the URL, header values and auth
    /// fields with `lookup(NAME)`, as a UTCP client does with its configuration or the
    /// environment (`|name| std::env::var(name).ok()`). An unknown variable is an error.
    /// The values go to the provider's `url` (and an OAuth2 `token_url`): for a provider
    /// read from a discovered manual, see [`Tool::sse_provider_for`] before handing it your
    /// whole environment.
    ///
    /// # Example
    /// ```
    /// use ssekit_utcp::{Auth, SseProvider};
    /// let p = SseProvider::<()>::from_json(r#"{"name":"n","provider_type":"sse","url":"http://127.0.0.1:1/e",
    ///   "auth":{"auth_type":"api_key","api_key":"$YOUR_API_KEY","var_name":"X-API-Key"}}"#)?;
    /// let p = p.with_variables(|name| (name == "YOUR_API_KEY").then(|| "k-123".to_owned()))?;
    /// assert!(matches!(p.auth, Some(Auth::ApiKey { ref api_key, .. }) if api_key == "k-123"));
    /// # Ok::<(), ssekit_http::Error>(())
    /// ```
    pub fn with_variables(
        mut self,
        lookup: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, Error> {
        let sub = |text: &mut String| -> Result<(), Error> {
            *text = substitute(text, &lookup)?;
            Ok(())
        };
        sub(&mut self.url)?;
        for value in self.headers.values_mut() {
            sub(value)?;
        }
        match &mut self.auth {
            Some(Auth::ApiKey {
                api_key, var_name, ..
            }) => {
                sub(api_key)?;
                sub(var_name)?;
            }
            Some(Auth::Basic { username, password }) => {
                sub(username)?;
                sub(password)?;
            }
            Some(Auth::OAuth2 {
                token_url,
                client_id,
                client_secret,
                scope,
            }) => {
                sub(token_url)?;
                sub(client_id)?;
                sub(client_secret)?;
                if let Some(scope) = scope {
                    sub(scope)?;
                }
            }
            None => {}
        }
        Ok(self)
    }
}

/// The longest wait before a reconnect that a call template's `retry_timeout` sets, and
/// the cap on the growing wait after failures in a row: 60 s, as the official client
/// caps it (a server's `retry:` is still honoured whatever its length).
const MAX_RETRY_MS: u64 = 60_000;

/// How many reconnects in a row without progress a tool call makes before it fails: 5,
/// the official client's bound (which counts every reconnect of the call; ssekit starts
/// the count over when a connection delivers an event).
const MAX_RECONNECTS: u32 = 5;

/// A tool call's inputs split as the official client splits them (see [`encode`]).
struct Request {
    headers: Vec<(String, String)>,
    /// `name=value` pairs, percent-encoded.
    query: Vec<String>,
    /// The provider's URL with its `{name}` path parameters filled.
    url: String,
    /// The body and the `Content-Type` to send with it when the template sets none.
    body: Option<(Vec<u8>, Option<&'static str>)>,
}

impl<T> SseProvider<T> {
    /// Splits `inputs` as the official client does: the `header_fields` (Python's `str()`
    /// of each), then the `body_field` (encoded by the template's `Content-Type`), then the
    /// URL's `{name}` path parameters; every other input is a query parameter (`null` left
    /// out, an array repeated per element).
    fn split_inputs(&self, inputs: &Map<String, Value>) -> Result<Request, Error> {
        let mut rest = inputs.clone();
        let mut headers: Vec<(String, String)> = self
            .headers
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        for name in &self.header_fields {
            if let Some(value) = rest.remove(name) {
                headers.push((name.clone(), encode::python_str(&value)));
            }
        }
        let body = match &self.body_field {
            Some(field) => rest.remove(field).filter(|v| !v.is_null()),
            None => None,
        };
        let url = encode::fill_path(&self.url, &mut rest)
            .map_err(|why| RequestError::new(RequestErrorKind::Input, why))?;
        let mut query = Vec::new();
        for (key, value) in &rest {
            let values = match value {
                Value::Null => continue,
                Value::Array(items) => items.iter().collect(),
                one => vec![one],
            };
            for value in values {
                query.push(format!(
                    "{}={}",
                    encode_component(key),
                    encode_component(&encode::query_text(value))
                ));
            }
        }
        let declared = self
            .headers
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case("content-type"))
            .map(|(_, value)| value.as_str());
        let body = body.map(|value| Self::encode_body(value, declared));
        Ok(Request {
            headers,
            query,
            url,
            body,
        })
    }

    /// The body's bytes, and the `Content-Type` to send when the template declares none.
    fn encode_body(value: Value, declared: Option<&str>) -> (Vec<u8>, Option<&'static str>) {
        const JSON: &str = "application/json";
        let default = |ct: &'static str| declared.is_none().then_some(ct);
        if declared.is_some_and(|ct| ct.contains(JSON)) {
            return (value.to_string().into_bytes(), None);
        }
        match value {
            Value::Object(fields) => (
                encode::form_encode(&fields).into_bytes(),
                default("application/x-www-form-urlencoded"),
            ),
            Value::String(text) => (text.into_bytes(), default("text/plain; charset=utf-8")),
            // The official client raises a TypeError on these: sent as JSON instead.
            other => (other.to_string().into_bytes(), default(JSON)),
        }
    }
}

impl<T: HttpIo> SseProvider<T> {
    /// The source for one tool call with these `inputs`, ready to
    /// [`stream`](ProviderSource::stream). With OAuth2 auth this first fetches a token
    /// (after checking the request can be built), and the stream fetches another when it
    /// expires or the server refuses it (see [`ProviderSource`]).
    ///
    /// # Example
    /// ```no_run
    /// use futures_util::StreamExt;
    /// use ssekit_utcp::{Error, HttpIo, SseProvider};
    /// async fn prices<T: HttpIo>() -> Result<(), Error> {
    ///     let provider = SseProvider::<T>::from_json(
    ///         r#"{"name":"market_updates","provider_type":"sse","url":"http://127.0.0.1:8080/stream","event_type":"price_update"}"#,
    ///     )?;
    ///     let inputs = serde_json::json!({"symbol": "AAPL"});
    ///     let mut events = provider.connect(inputs.as_object().unwrap()).await?.events();
    ///     while let Some(update) = events.next().await {
    ///         println!("{}", update?.data());
    ///     }
    ///     Ok(())
    /// }
    /// ```
    pub async fn connect(&self, inputs: &Map<String, Value>) -> Result<ProviderSource<T>, Error> {
        let io = self.transport()?;
        let request = self.split_inputs(inputs)?;
        let Request {
            mut headers,
            mut query,
            url,
            body,
        } = request;
        let grant = Grant::of(self.auth.as_ref());
        headers.extend(self.static_auth_header());
        query.extend(self.auth_query());
        // A fragment is never sent, and the request URI ends at `#`: query inputs appended
        // after one would be dropped without a word. The fragment goes, the query stays.
        let mut url = match url.split_once('#') {
            Some((before, _fragment)) => before.to_owned(),
            None => url,
        };
        if !query.is_empty() {
            url.push(if url.contains('?') { '&' } else { '?' });
            url.push_str(&query.join("&"));
        }
        let (method, payload, content_type) = match body {
            Some((bytes, content_type)) => (Method::POST, Bytes::from(bytes), content_type),
            None => (Method::GET, Bytes::new(), None),
        };
        // A tool call, not a subscription: it runs "until the connection is closed" (the
        // provider page), so a clean end ends it; only a cut stream reconnects.
        let mut config = ReconnectConfig::default()
            .reconnect(self.reconnect)
            .stop_on_clean_end(true)
            .retry_timeout(Duration::from_millis(self.retry_timeout.min(MAX_RETRY_MS)))
            .max_delay(Duration::from_millis(MAX_RETRY_MS))
            .max_attempts(Some(MAX_RECONNECTS));
        if let Some(kind) = &self.event_type {
            config = config.event_type(ssekit::Utf8Bytes::copy_from_str(kind));
        }
        let plan = Plan {
            method,
            url,
            payload,
            content_type,
            config,
            headers,
        };
        ProviderSource::open(io, plan, grant).await
    }
}

impl<T: HttpIo> SseProvider<T> {
    /// Makes the calls of this provider with `io` (a shared HTTP client, a private TLS
    /// root) rather than a new `T` each.
    ///
    /// # Example
    /// ```
    /// use ssekit_utcp::{Error, HttpIo, SseProvider};
    /// // `shared`: the transport's client made once (`T::new()?`, or with a TLS root of yours).
    /// fn provider<T: HttpIo>(shared: T) -> Result<SseProvider<T>, Error> {
    ///     Ok(SseProvider::from_json(r#"{"name":"n","provider_type":"sse","url":"http://127.0.0.1:1/e"}"#)?.io(shared))
    /// }
    /// ```
    #[must_use]
    pub fn io(mut self, io: T) -> Self {
        self.io = Some(io);
        self
    }

    /// The transport of a call: the one set with [`io`](Self::io), or a new one.
    pub(crate) fn transport(&self) -> Result<T, Error> {
        match &self.io {
            Some(io) => Ok(io.clone()),
            None => T::new(),
        }
    }

    /// The header `auth` asks for: the API key under its `var_name`, HTTP Basic, or an
    /// OAuth2 bearer token, fetched first with the client-credentials grant.
    pub(crate) async fn auth_header(&self, io: &T) -> Result<Option<(String, String)>, Error> {
        match Grant::of(self.auth.as_ref()) {
            Some(grant) => {
                let token = grant.fetch(io).await?;
                // Made from a `&str`: the bytes are UTF-8.
                let value = String::from_utf8_lossy(token.header().as_bytes()).into_owned();
                Ok(Some(("Authorization".to_owned(), value)))
            }
            None => Ok(self.static_auth_header()),
        }
    }

    /// The query parameter (`name=value`, encoded) an API key `auth` with
    /// [`KeyLocation::Query`] asks for.
    pub(crate) fn auth_query(&self) -> Option<String> {
        match &self.auth {
            Some(Auth::ApiKey {
                api_key,
                var_name,
                location: KeyLocation::Query,
            }) => Some(format!(
                "{}={}",
                encode_component(var_name),
                encode_component(api_key)
            )),
            _ => None,
        }
    }

    /// The header an API key (in a header or a cookie) or Basic `auth` asks for (OAuth2's
    /// is fetched, and a key in the query is no header: `None`).
    fn static_auth_header(&self) -> Option<(String, String)> {
        match &self.auth {
            Some(Auth::ApiKey {
                api_key,
                var_name,
                location,
            }) => match location {
                KeyLocation::Header => Some((var_name.clone(), api_key.clone())),
                KeyLocation::Cookie => Some(("Cookie".to_owned(), format!("{var_name}={api_key}"))),
                KeyLocation::Query => None,
            },
            Some(Auth::Basic { username, password }) => Some((
                "Authorization".to_owned(),
                basic_credentials(username, password),
            )),
            Some(Auth::OAuth2 { .. }) | None => None,
        }
    }
}

/// `$NAME` / `${NAME}` → `lookup(NAME)`; `NAME` is letters, digits and `_`. A `$` not
/// followed by a name is kept.
fn substitute(text: &str, lookup: &impl Fn(&str) -> Option<String>) -> Result<String, Error> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let (name, consumed) = if let Some(braced) = after.strip_prefix('{') {
            match braced.find('}') {
                Some(end) => (&braced[..end], end + 2),
                None => ("", 0),
            }
        } else {
            let end = after
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(after.len());
            (&after[..end], end)
        };
        if name.is_empty() {
            out.push('$');
            rest = after;
            continue;
        }
        let value = lookup(name).ok_or_else(|| {
            RequestError::new(
                RequestErrorKind::Variable,
                format!("UTCP variable {name:?} is not defined"),
            )
        })?;
        out.push_str(&value);
        rest = &after[consumed..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variables_are_substituted_in_both_forms() {
        let vars = |name: &str| match name {
            "KEY" => Some("k".to_owned()),
            "HOST_1" => Some("h".to_owned()),
            _ => None,
        };
        assert_eq!(substitute("a$KEY-${HOST_1}/$", &vars).unwrap(), "ak-h/$");
        assert_eq!(substitute("cost: $ 5, ${", &vars).unwrap(), "cost: $ 5, ${");
        assert!(substitute("$MISSING", &vars).is_err());
        assert_eq!(substitute("no vars", &vars).unwrap(), "no vars");
    }

    #[test]
    fn components_are_percent_encoded() {
        assert_eq!(encode_component("a b&c=d/é~"), "a%20b%26c%3Dd%2F%C3%A9~");
    }
}
