//! [`Client`]: the ORS client, written once over a transport's [`HttpIo`] (its event
//! streams, one-shot requests and timer). `ssekit-hyper` and `ssekit-smol` each name it
//! `ors::Client`.

use std::time::Duration;

use bytes::Bytes;
use http::Method;
use serde_json::{json, Value};
use ssekit::client::ReconnectConfig;
use ssekit::profile::ors::ToolResult;

use super::call::{
    json_answer, json_checked, json_request, Call, CallOptions, CallStep, Flow, SessionReply,
};
use super::{Redirects, Trace};
use crate::client::{own_jitter_seed, Item, RequestSpec};
use crate::io::{first_of, HttpIo};
use crate::Error;

/// A client of an ORS server: sessions, and [`call_tool`](Self::call_tool) resumed by task
/// id. Generic over the transport; use `ssekit_hyper::ors::Client` or
/// `ssekit_smol::ors::Client`.
///
/// # Example
/// ```no_run
/// use serde_json::json;
/// use ssekit_http::{io::HttpIo, ors::Client, Error};
/// async fn gsm8k<T: HttpIo>() -> Result<(), Error> {
///     let ors = Client::<T>::new("http://127.0.0.1:8080")?;
///     let sid = ors.open_session("gsm8k", &json!({"question": "2 + 2?", "answer": 4})).await?;
///     let result = ors.call_tool("gsm8k", &sid, "submit", json!({"answer": 4})).await?;
///     assert_eq!(result.output.and_then(|o| o.reward), Some(1.0));
///     ors.delete(&sid).await?;
///     Ok(())
/// }
/// ```
#[derive(Clone, Debug)]
pub struct Client<T> {
    base: String,
    reconnect: ReconnectConfig,
    idle_timeout: Duration,
    max_redirects: u32,
    api_key: Option<String>,
    io: T,
}

impl<T: HttpIo> Client<T> {
    /// A client for the server at `base_url` (`http://host:port`, or a path prefix). Calls
    /// retry as the official client does ([`ReconnectConfig::ors`]), and a call silent for
    /// 30 s is dropped and resumed. Each call draws the seed of its retry jitter from the
    /// OS, so that clients (and calls) do not retry in lockstep.
    ///
    /// # Example
    /// ```no_run
    /// use ssekit_http::{io::HttpIo, ors::Client};
    /// fn ftp<T: HttpIo>() {
    ///     assert!(Client::<T>::new("ftp://x").is_err());
    /// }
    /// ```
    pub fn new(base_url: &str) -> Result<Self, Error> {
        let base = base_url.trim_end_matches('/').to_owned();
        RequestSpec::get(&base, T::SCHEMES)?; // validates the URL
        Ok(Client {
            base,
            reconnect: ReconnectConfig::ors(),
            idle_timeout: Duration::from_secs(30),
            max_redirects: 10,
            api_key: None,
            io: T::new()?,
        })
    }

    /// Sets the retry policy of calls (backoff and attempts; headers are ignored). Without a
    /// [`jitter_seed`](ReconnectConfig::jitter_seed) in `config`, each call draws one from
    /// the OS; with one, every call retries after exactly that seed's delays.
    ///
    /// # Example
    /// ```
    /// use std::time::Duration;
    /// use ssekit_http::{io::HttpIo, ors::Client};
    /// fn quick<T: HttpIo>(ors: Client<T>) -> Client<T> {
    ///     ors.reconnect(ssekit::client::ReconnectConfig::ors().retry_timeout(Duration::from_millis(50)))
    /// }
    /// ```
    pub fn reconnect(mut self, config: ReconnectConfig) -> Self {
        self.reconnect = config;
        self
    }

    /// A call that receives no bytes (not even a ping) for this long is dropped and resumed
    /// (default 30 s, the official client's read timeout).
    ///
    /// # Example
    /// ```
    /// use ssekit_http::{io::HttpIo, ors::Client};
    /// fn patient<T: HttpIo>(ors: Client<T>) -> Client<T> {
    ///     ors.idle_timeout(std::time::Duration::from_secs(60))
    /// }
    /// ```
    pub fn idle_timeout(mut self, timeout: Duration) -> Self {
        self.idle_timeout = timeout;
        self
    }

    /// How many redirects one request follows (default 10, as an event stream's
    /// [`RequestSpec::max_redirects`]): each JSON request, and each connection of a call.
    /// More, `https` to `http`, or a scheme the transport cannot speak is
    /// [`Error::Redirect`]; with 0 a redirect is not followed ([`Error::Refused`]). After a
    /// hop to another origin the request goes on without `X-API-Key` and `X-Session-ID`.
    /// See [`Redirects`] for the rules and why ORS needs them.
    ///
    /// # Example
    /// ```
    /// use ssekit_http::{io::HttpIo, ors::Client};
    /// fn no_redirects<T: HttpIo>(ors: Client<T>) -> Client<T> {
    ///     ors.max_redirects(0)
    /// }
    /// ```
    pub fn max_redirects(mut self, max: u32) -> Self {
        self.max_redirects = max;
        self
    }

    /// Sends `X-API-Key: key` with every request, as the official client does with
    /// `ORS_API_KEY`.
    ///
    /// # Example
    /// ```
    /// use ssekit_http::{io::HttpIo, ors::Client};
    /// fn keyed<T: HttpIo>(ors: Client<T>) -> Client<T> {
    ///     ors.api_key(Some("s3cret".into()))
    /// }
    /// ```
    pub fn api_key(mut self, key: Option<String>) -> Self {
        self.api_key = key;
        self
    }

    /// Replaces the transport's set-up (for example `ssekit-hyper`'s shared HTTP client).
    ///
    /// # Example
    /// ```
    /// use ssekit_http::ors::{Client, OrsIo};
    /// // `shared`: the transport's client made once (`T::new()?`, or with a TLS root of yours).
    /// fn client<T: OrsIo>(shared: T) -> Result<Client<T>, ssekit_http::Error> {
    ///     Ok(Client::new("http://127.0.0.1:1")?.io(shared))
    /// }
    /// ```
    pub fn io(mut self, io: T) -> Self {
        self.io = io;
        self
    }

    /// An event stream `POST` to `path` with the ORS headers, not reconnecting by itself.
    fn post_stream(
        &self,
        path: &str,
        body: String,
        session: Option<&str>,
    ) -> Result<T::Events, Error> {
        let mut spec = RequestSpec::post(&format!("{}{path}", self.base), body, T::SCHEMES)?
            .reconnect(
                ReconnectConfig::default()
                    .reconnect(false)
                    .idle_timeout(Some(self.idle_timeout)),
            )
            .max_redirects(self.max_redirects)
            .header("content-type", "application/json")?;
        if let Some(sid) = session {
            // The session id is a bearer capability: kept on the server's origin.
            spec = spec.secret_header("x-session-id", sid)?;
        }
        if let Some(key) = &self.api_key {
            spec = spec.secret_header("x-api-key", key)?;
        }
        Ok(self.io.events(spec))
    }

    /// A JSON request to `path`; a non-2xx answer is [`Error::Refused`]. Redirects are
    /// followed as an event stream follows them (up to
    /// [`max_redirects`](Self::max_redirects); see [`Redirects`]). No answer within the
    /// [`idle_timeout`](Self::idle_timeout) (30 s by default), counted over the whole chain
    /// of redirects, is an [`Error::Io`] of kind `TimedOut`: a server that accepts and never
    /// answers, or redirects slowly for ever, does not hang the caller.
    ///
    /// # Example
    /// ```no_run
    /// use ssekit_http::{io::HttpIo, ors::Client, Error};
    /// async fn splits<T: HttpIo>(ors: &Client<T>) -> Result<serde_json::Value, Error> {
    ///     ors.request_json(http::Method::GET, "/gsm8k/splits", None, None).await
    /// }
    /// ```
    ///
    /// The answer is parsed into a [`Value`], which can take up to about 100 times the
    /// answer's bytes (`[{"":0},...]`): [`MAX_JSON_ANSWER`] bounds what a server can make
    /// one call hold. [`ping`](Self::ping), [`create`](Self::create) and
    /// [`delete`](Self::delete), whose answers are not used, only check theirs.
    pub async fn request_json(
        &self,
        method: Method,
        path: &str,
        session: Option<&str>,
        body: Option<&Value>,
    ) -> Result<Value, Error> {
        let resp = self.exchange(method, path, session, body).await?;
        json_answer(resp.status().as_u16(), resp.body())
    }

    /// A JSON request whose answer is not used: a non-2xx status is [`Error::Refused`], and
    /// an answer that is not JSON an error, but the answer is checked, not parsed into a
    /// tree.
    async fn request_checked(
        &self,
        method: Method,
        path: &str,
        session: Option<&str>,
        body: Option<&Value>,
    ) -> Result<(), Error> {
        let resp = self.exchange(method, path, session, body).await?;
        json_checked(resp.status().as_u16(), resp.body())
    }

    /// Sends a JSON request, following redirects, within the idle timeout; the final
    /// answer, whatever its status.
    async fn exchange(
        &self,
        method: Method,
        path: &str,
        session: Option<&str>,
        body: Option<&Value>,
    ) -> Result<http::Response<Bytes>, Error> {
        let req = json_request(
            &self.base,
            method,
            path,
            session,
            body,
            self.api_key.as_deref(),
        )?;
        let deadline = self.io.now() + self.idle_timeout;
        let exchange = async {
            let mut hops = Redirects::new(req, T::SCHEMES, self.max_redirects);
            loop {
                let resp = self.io.request(hops.request()).await?;
                if !hops.handle_response(resp.status().as_u16(), resp.headers())? {
                    return Ok::<_, Error>(resp);
                }
            }
        };
        let answer = first_of(exchange, self.io.sleep_until(deadline)).await;
        answer.unwrap_or_else(|| {
            Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!("no answer to {path} within {:?}", self.idle_timeout),
            )
            .into())
        })
    }

    /// `POST /create_session`: a new session id, read from the SSE reply.
    ///
    /// # Example
    /// ```no_run
    /// use ssekit_http::{io::HttpIo, ors::Client, Error};
    /// async fn session<T: HttpIo>(ors: &Client<T>) -> Result<String, Error> {
    ///     ors.create_session().await
    /// }
    /// ```
    pub async fn create_session(&self) -> Result<String, Error> {
        let mut items = self.post_stream("/create_session", "{}".into(), None)?;
        let mut reply = SessionReply::new();
        while let Some(item) = T::next(&mut items).await {
            if let Item::Event(event) = item?
                && reply.event(&event)?
            {
                break;
            }
        }
        reply.finish()
    }

    /// `POST /create`: binds a session to an environment and a task spec.
    ///
    /// # Example
    /// ```no_run
    /// use ssekit_http::{io::HttpIo, ors::Client, Error};
    /// async fn bind<T: HttpIo>(ors: &Client<T>, sid: &str) -> Result<(), Error> {
    ///     ors.create(sid, "gsm8k", &serde_json::json!({"question": "1+1", "answer": 2})).await
    /// }
    /// ```
    pub async fn create(&self, session: &str, env: &str, task: &Value) -> Result<(), Error> {
        let body = json!({"env_name": env, "task_spec": task});
        self.request_checked(Method::POST, "/create", Some(session), Some(&body))
            .await
    }

    /// `/create_session` then `/create`: a session ready for calls.
    ///
    /// # Example
    /// ```no_run
    /// use ssekit_http::{io::HttpIo, ors::Client, Error};
    /// async fn session<T: HttpIo>(ors: &Client<T>) -> Result<String, Error> {
    ///     ors.open_session("gsm8k", &serde_json::json!({"question": "1+1", "answer": 2})).await
    /// }
    /// ```
    pub async fn open_session(&self, env: &str, task: &Value) -> Result<String, Error> {
        let sid = self.create_session().await?;
        self.create(&sid, env, task).await?;
        Ok(sid)
    }

    /// `POST /ping`: keeps the session alive; [`Error::Refused`] with status 404 once it expired.
    ///
    /// # Example
    /// ```no_run
    /// use ssekit_http::{io::HttpIo, ors::Client, Error};
    /// async fn keep<T: HttpIo>(ors: &Client<T>, sid: &str) -> Result<(), Error> {
    ///     ors.ping(sid).await
    /// }
    /// ```
    pub async fn ping(&self, session: &str) -> Result<(), Error> {
        self.request_checked(Method::POST, "/ping", Some(session), None)
            .await
    }

    /// `POST /delete` then `POST /delete_session`, as the official client ends a session.
    ///
    /// # Example
    /// ```no_run
    /// use ssekit_http::{io::HttpIo, ors::Client, Error};
    /// async fn end<T: HttpIo>(ors: &Client<T>, sid: &str) -> Result<(), Error> {
    ///     ors.delete(sid).await
    /// }
    /// ```
    pub async fn delete(&self, session: &str) -> Result<(), Error> {
        self.request_checked(Method::POST, "/delete", Some(session), None)
            .await?;
        self.request_checked(Method::POST, "/delete_session", Some(session), None)
            .await
    }

    /// `POST /{env}/call`: runs a tool and returns its reassembled, validated result. A
    /// connection that drops before `end` is resumed with the task id; the server replays
    /// the result from its first chunk, so nothing is lost or doubled. An `error` event is
    /// [`Error::Tool`]; a tool logic error is an `Ok` result with `ok: false`.
    ///
    /// # Example
    /// ```no_run
    /// use ssekit_http::{io::HttpIo, ors::{Client, ToolResult}, Error};
    /// async fn submit<T: HttpIo>(ors: &Client<T>, sid: &str) -> Result<ToolResult, Error> {
    ///     ors.call_tool("gsm8k", sid, "submit", serde_json::json!({"answer": 72})).await
    /// }
    /// ```
    pub async fn call_tool(
        &self,
        env: &str,
        session: &str,
        name: &str,
        input: Value,
    ) -> Result<ToolResult, Error> {
        self.call_tool_traced(env, session, name, input, CallOptions::default(), |_| {})
            .await
    }

    /// [`call_tool`](Self::call_tool) with options and a callback that sees every step.
    ///
    /// # Example
    /// ```no_run
    /// use ssekit_http::{io::HttpIo, ors::{CallOptions, Client, ToolResult}, Error};
    /// async fn work<T: HttpIo>(ors: &Client<T>, sid: &str) -> Result<ToolResult, Error> {
    ///     let input = serde_json::json!({"steps": 200});
    ///     let cut = CallOptions::default().cut_after(Some(2));
    ///     ors.call_tool_traced("gsm8k", sid, "work", input, cut, |t| println!("{t:?}")).await
    /// }
    /// ```
    pub async fn call_tool_traced(
        &self,
        env: &str,
        session: &str,
        name: &str,
        input: Value,
        options: CallOptions,
        mut trace: impl FnMut(Trace),
    ) -> Result<ToolResult, Error> {
        let path = format!("/{env}/call");
        let policy = own_jitter_seed(self.reconnect.clone());
        let mut call = Call::new(name, input, policy, options);
        loop {
            match call.poll(self.io.now(), &mut trace) {
                CallStep::Done(result) => return result,
                CallStep::Wait { until } => {
                    self.io.sleep_until(until).await;
                    call.handle_timeout(self.io.now());
                }
                CallStep::Connect { body } => {
                    let mut items = self.post_stream(&path, body, Some(session))?;
                    while let Some(item) = T::next(&mut items).await {
                        match call.handle_item(self.io.now(), item, &mut trace) {
                            Flow::Continue => {}
                            Flow::Done(result) => return result,
                            Flow::Close => break,
                        }
                    }
                    drop(items);
                    call.handle_closed(self.io.now());
                }
            }
        }
    }
}

/// The largest JSON answer an ORS client reads (64 MiB: a split's task list can run to
/// megabytes); a transport's [`HttpIo::request`] refuses a longer body.
///
/// # Example
/// ```
/// assert_eq!(ssekit_http::ors::MAX_JSON_ANSWER, 64 << 20);
/// ```
pub const MAX_JSON_ANSWER: usize = 64 << 20;
