//! Tool discovery at `/utcp` "on the same domain as the API", as the provider page says:
//! a client that fetches and parses a provider's [`Manual`] ([`discover`], [`Discovery`]),
//! and a server helper that answers `GET /utcp` with one ([`ManualEndpoint`]).
//!
//! The page says no more of how the manual is asked for than where; its "SSE providers
//! support the same authentication methods as HTTP providers" and UTCP's own client (1.x,
//! `register_manual`: "Use the provider's configuration (headers, auth, etc.)") send the
//! provider's headers and credentials with the discovery request too. So does
//! [`SseProvider::discover`] ([`Discovery::fetch_provider`]): the provider's `headers`,
//! then its `auth` (the API key header, HTTP Basic, or an OAuth2 bearer token fetched
//! first, within the discovery's timeout), each marked sensitive as in a tool call. They go
//! only to `/utcp` on the provider's own origin: no redirect is followed. [`discover`]
//! with a bare URL sends none of them.
//!
//! The client is bounded: one request with no redirects followed (a 3xx, as any status
//! but 2xx, is [`Error::Refused`]), done within a timeout (10 s by default) that covers the connection,
//! the head and the whole body, and a body of at most [`Discovery::max_size`] bytes (1 MiB
//! by default), refused from its `Content-Length` when that says more, else when the bytes
//! read pass it (whatever the status). Parsed, a manual can take about 90 times its size in memory (see
//! [`Manual::from_slice`]): the default keeps that under 100 MB; raise it for a manual you
//! know to be larger.

use std::fmt;
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderName, HeaderValue, Method, Request, Response, StatusCode};
use http_body_util::Full;
use ssekit_http::io::{first_of, TooLarge};
use ssekit_http::{redacted_url, Refused, RequestError, RequestErrorKind};

use super::manual::{Manual, ManualError};
use super::observe::log;
use super::{HeaderNames, SseProvider};
use crate::{Error, HttpIo};

/// The schemes a UTCP provider's URL may have; whether the transport speaks them is
/// checked when it connects.
const SCHEMES: &[&str] = &["http", "https"];

/// The path of the discovery endpoint.
///
/// # Example
/// ```
/// assert_eq!(ssekit_utcp::DISCOVERY_PATH, "/utcp");
/// ```
pub const DISCOVERY_PATH: &str = "/utcp";

/// Why discovery failed.
///
/// # Example
/// ```
/// let err = ssekit_utcp::DiscoveryError::TooLarge { limit: 1024 };
/// assert_eq!(err.to_string(), "the UTCP manual is larger than the 1024-byte limit");
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum DiscoveryError {
    /// No connection, an HTTP failure, or a status other than 2xx ([`Error::Refused`]), or
    /// a URL or header that does not make a request ([`Error::Request`]).
    Transport(Error),
    /// The manual did not come whole within the timeout.
    TimedOut(Duration),
    /// The body is larger than the size limit.
    TooLarge {
        /// The limit, in bytes.
        limit: usize,
    },
    /// The body is not a manual in the accepted shape.
    Manual(ManualError),
}

impl fmt::Display for DiscoveryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DiscoveryError::Transport(e) => e.fmt(f),
            DiscoveryError::TimedOut(limit) => write!(
                f,
                "the UTCP manual did not come within {:.1} s",
                limit.as_secs_f64()
            ),
            DiscoveryError::TooLarge { limit } => {
                write!(f, "the UTCP manual is larger than the {limit}-byte limit")
            }
            DiscoveryError::Manual(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for DiscoveryError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            DiscoveryError::Transport(e) => Some(e),
            DiscoveryError::Manual(e) => Some(e),
            _ => None,
        }
    }
}

impl From<Error> for DiscoveryError {
    fn from(e: Error) -> Self {
        DiscoveryError::Transport(e)
    }
}

/// The discovery URL for a provider URL: `{scheme}://{host[:port]}/utcp`, on the same
/// domain as the API (any user info, path, query and fragment dropped). The scheme is
/// `http` or `https`.
///
/// # Example
/// ```
/// use ssekit_utcp::discovery_url;
/// assert_eq!(discovery_url("https://markets.example.com/stream?symbol=AAPL")?, "https://markets.example.com/utcp");
/// assert_eq!(discovery_url("http://127.0.0.1:8080/events")?, "http://127.0.0.1:8080/utcp");
/// assert!(discovery_url("/relative").is_err());
/// # Ok::<(), ssekit_http::Error>(())
/// ```
pub fn discovery_url(provider_url: &str) -> Result<String, Error> {
    url_for(provider_url, SCHEMES)
}

/// [`discovery_url`] for a transport that speaks `schemes`.
fn url_for(provider_url: &str, schemes: &[&str]) -> Result<String, Error> {
    let bad_url = |why: String| RequestError::new(RequestErrorKind::Url, why);
    let uri: http::Uri = provider_url
        .parse()
        .map_err(|e| bad_url(format!("URL {:?}", redacted_url(provider_url))).with_source(e))?;
    let (Some(scheme), Some(_)) = (uri.scheme_str(), uri.authority()) else {
        return Err(bad_url(format!(
            "URL {:?} has no scheme and host",
            redacted_url(provider_url)
        ))
        .into());
    };
    if !schemes.contains(&scheme) {
        return Err(bad_url(format!(
            "URL {:?}: scheme {scheme:?} is not one of {schemes:?}",
            redacted_url(provider_url)
        ))
        .into());
    }
    Ok(format!("{}{DISCOVERY_PATH}", origin(&uri)))
}

/// `scheme://host[:port]` of `uri`, without its user info (where a password goes).
pub(crate) fn origin(uri: &http::Uri) -> String {
    let scheme = uri.scheme_str().unwrap_or("");
    let host_port = uri.authority().map_or("", |authority| {
        authority
            .as_str()
            .rsplit_once('@')
            .map_or(authority.as_str(), |(_, after)| after)
    });
    format!("{scheme}://{host_port}")
}

/// Fetches and parses the manual at `/utcp` on the domain of `provider_url`, with the
/// default [`Discovery`] bounds, over the transport `T` (`ssekit_hyper::utcp::discover` and
/// `ssekit_smol::utcp::discover` name one each).
///
/// # Example
/// ```no_run
/// use ssekit_utcp::{DiscoveryError, HttpIo};
/// async fn list<T: HttpIo>() -> Result<(), DiscoveryError> {
///     let manual = ssekit_utcp::discover::<T>("https://markets.example.com/stream").await?;
///     for tool in &manual.tools {
///         println!("{}: {}", tool.name, tool.description);
///     }
///     Ok(())
/// }
/// ```
pub async fn discover<T: HttpIo>(provider_url: &str) -> Result<Manual, DiscoveryError> {
    Discovery::<T>::new().fetch(provider_url).await
}

/// Discovery with chosen bounds, headers or transport `T`. Its `Debug` output leaves the
/// header values out.
///
/// # Example
/// ```no_run
/// use std::time::Duration;
/// use ssekit_utcp::{Discovery, DiscoveryError, HttpIo, Manual};
/// async fn manual<T: HttpIo>() -> Result<Manual, DiscoveryError> {
///     Discovery::<T>::new()
///         .timeout(Duration::from_secs(3))
///         .max_size(1 << 20)
///         .header("X-API-Key", "k-123")
///         .fetch("https://notify.example.com/events")
///         .await
/// }
/// ```
#[derive(Clone)]
#[must_use]
pub struct Discovery<T> {
    timeout: Duration,
    max_size: usize,
    headers: Vec<(String, String)>,
    io: Option<T>,
}

impl<T> fmt::Debug for Discovery<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Discovery")
            .field("timeout", &self.timeout)
            .field("max_size", &self.max_size)
            .field(
                "headers",
                &HeaderNames(self.headers.iter().map(|(name, _)| name.as_str()).collect()),
            )
            .finish_non_exhaustive()
    }
}

impl<T> Default for Discovery<T> {
    fn default() -> Self {
        Discovery {
            timeout: Duration::from_secs(10),
            max_size: 1 << 20,
            headers: Vec::new(),
            io: None,
        }
    }
}

impl<T> Discovery<T> {
    /// The defaults: 10 s, 1 MiB, no extra header, a new transport.
    ///
    /// # Example
    /// ```
    /// fn discovery<T>() -> ssekit_utcp::Discovery<T> {
    ///     ssekit_utcp::Discovery::new()
    /// }
    /// ```
    pub fn new() -> Self {
        Discovery::default()
    }

    /// The time the whole fetch may take: connection, head and body.
    ///
    /// # Example
    /// ```
    /// fn quick<T>() -> ssekit_utcp::Discovery<T> {
    ///     ssekit_utcp::Discovery::new().timeout(std::time::Duration::from_secs(2))
    /// }
    /// ```
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The largest body read, in bytes (default 1 MiB; parsed, a manual takes up to about
    /// 90 times that in memory).
    ///
    /// # Example
    /// ```
    /// fn small<T>() -> ssekit_utcp::Discovery<T> {
    ///     ssekit_utcp::Discovery::new().max_size(64 * 1024)
    /// }
    /// ```
    pub fn max_size(mut self, bytes: usize) -> Self {
        self.max_size = bytes;
        self
    }

    /// A header to send (an API key the endpoint wants), marked sensitive; of two of one
    /// name, the last is sent, over a provider's own. A name or value that is not a valid
    /// header makes [`fetch`](Self::fetch) fail with [`Error::Request`].
    ///
    /// # Example
    /// ```
    /// fn authorized<T>() -> ssekit_utcp::Discovery<T> {
    ///     ssekit_utcp::Discovery::new().header("Authorization", "Bearer t")
    /// }
    /// ```
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    /// Uses this transport (a shared HTTP client, a private TLS root).
    ///
    /// # Example
    /// ```
    /// // `shared`: the transport's client made once (ssekit-hyper's `HyperHttp::with_client`).
    /// fn on<T>(shared: T) -> ssekit_utcp::Discovery<T> {
    ///     ssekit_utcp::Discovery::new().io(shared)
    /// }
    /// ```
    pub fn io(mut self, io: T) -> Self {
        self.io = Some(io);
        self
    }
}

impl<T: HttpIo> Discovery<T> {
    /// `GET`s [`discovery_url`]`(provider_url)` and parses the manual.
    ///
    /// # Example
    /// ```no_run
    /// use ssekit_utcp::{Discovery, DiscoveryError, HttpIo, Manual};
    /// async fn manual<T: HttpIo>() -> Result<Manual, DiscoveryError> {
    ///     Discovery::<T>::new().fetch("http://127.0.0.1:8080/stream").await
    /// }
    /// ```
    pub async fn fetch(&self, provider_url: &str) -> Result<Manual, DiscoveryError> {
        let io = match &self.io {
            Some(io) => io.clone(),
            None => T::new()?,
        };
        self.get(&io, provider_url, None, Vec::new(), self.timeout)
            .await
    }

    /// `GET`s the manual at `/utcp` on `provider`'s domain with the provider's `headers` and
    /// `auth`, as its tool calls send them (see [the module](self)); an OAuth2 token request
    /// counts within the timeout.
    ///
    /// # Example
    /// ```no_run
    /// use ssekit_utcp::{Discovery, HttpIo, Manual, SseProvider};
    /// async fn manual<T: HttpIo>() -> Result<Manual, Box<dyn std::error::Error>> {
    ///     let provider = SseProvider::<T>::from_json(r#"{"name":"notify","provider_type":"sse",
    ///         "url":"https://notify.example.com/events",
    ///         "auth":{"auth_type":"api_key","api_key":"$NOTIFY_KEY","var_name":"X-API-Key"}}"#)?
    ///         .with_variables(|name| std::env::var(name).ok())?;
    ///     Ok(Discovery::new().max_size(64 * 1024).fetch_provider(&provider).await?)
    /// }
    /// ```
    pub async fn fetch_provider(
        &self,
        provider: &SseProvider<T>,
    ) -> Result<Manual, DiscoveryError> {
        let io = match &self.io {
            Some(io) => io.clone(),
            None => provider.transport()?,
        };
        let started = io.now();
        let mut credentials: Vec<(String, String)> = provider
            .headers
            .iter()
            .map(|(name, value)| (name.clone(), value.clone()))
            .collect();
        let deadline = io.sleep_until(started.saturating_add(self.timeout));
        match first_of(provider.auth_header(&io), deadline).await {
            Some(auth) => credentials.extend(auth?),
            None => return Err(DiscoveryError::TimedOut(self.timeout)),
        }
        let spent = io.now().saturating_duration_since(started);
        let left = self.timeout.saturating_sub(spent);
        let query = provider.auth_query();
        self.get(&io, &provider.url, query, credentials, left).await
    }

    /// The request and its bounded answer: `query` (an API key's, encoded), `credentials`,
    /// then this discovery's headers, each marked sensitive (the last of one name wins);
    /// within `left` of the timeout.
    async fn get(
        &self,
        io: &T,
        provider_url: &str,
        query: Option<String>,
        mut credentials: Vec<(String, String)>,
        left: Duration,
    ) -> Result<Manual, DiscoveryError> {
        let shown = url_for(provider_url, T::SCHEMES)?;
        // The query holds a key: errors show the URL without it.
        let url = match query {
            Some(query) => format!("{shown}?{query}"),
            None => shown.clone(),
        };
        let mut req = Request::get(url)
            .header(http::header::ACCEPT, "application/json")
            .body(Bytes::new())
            .map_err(|e| {
                Error::from(
                    RequestError::new(
                        RequestErrorKind::Url,
                        format!("discovery request to {shown:?}"),
                    )
                    .with_source(e),
                )
            })?;
        credentials.extend(self.headers.iter().cloned());
        for (name, value) in credentials {
            let bad = |what: &str| {
                Error::from(RequestError::new(
                    RequestErrorKind::Header,
                    format!("header {name:?}: not a valid {what}"),
                ))
            };
            let header = HeaderName::from_bytes(name.as_bytes()).map_err(|_| bad("name"))?;
            let mut value = HeaderValue::from_str(&value).map_err(|_| bad("value"))?;
            value.set_sensitive(true);
            req.headers_mut().insert(header, value);
        }
        log!(debug, url = %shown, "UTCP discovery: fetching the manual");
        let found = match bounded_exchange(io, req, left, self.max_size).await {
            Ok(body) => Manual::from_slice(&body).map_err(DiscoveryError::Manual),
            Err(Bounded::Failed(e)) => Err(e.into()),
            Err(Bounded::TooLarge) => Err(DiscoveryError::TooLarge {
                limit: self.max_size,
            }),
            Err(Bounded::TimedOut) => Err(DiscoveryError::TimedOut(self.timeout)),
        };
        #[cfg(feature = "tracing")]
        match &found {
            Ok(manual) => tracing::debug!(
                url = %shown,
                tools = manual.tools.len(),
                warnings = manual.warnings.len(),
                "UTCP discovery: manual read"
            ),
            Err(e) => tracing::debug!(url = %shown, error = %e, "UTCP discovery failed"),
        }
        found
    }
}

impl<T: HttpIo> SseProvider<T> {
    /// Fetches and parses the manual at `/utcp` on this provider's domain, sending its
    /// `headers` and `auth` as a tool call does, with the default [`Discovery`] bounds.
    ///
    /// # Example
    /// ```no_run
    /// use ssekit_utcp::{HttpIo, SseProvider};
    /// async fn list<T: HttpIo>() -> Result<(), Box<dyn std::error::Error>> {
    ///     let provider = SseProvider::<T>::from_json(r#"{"name":"market_updates",
    ///         "provider_type":"sse","url":"https://markets.example.com/stream",
    ///         "auth":{"auth_type":"basic","username":"u","password":"$MARKETS_PASSWORD"}}"#)?
    ///         .with_variables(|name| std::env::var(name).ok())?;
    ///     for tool in provider.discover().await?.tools {
    ///         println!("{}", tool.name);
    ///     }
    ///     Ok(())
    /// }
    /// ```
    pub async fn discover(&self) -> Result<Manual, DiscoveryError> {
        Discovery::<T>::new().fetch_provider(self).await
    }
}

/// Why a [`bounded_exchange`] gave no body.
pub(crate) enum Bounded {
    /// The request failed, or the answer was not a 2xx.
    Failed(Error),
    /// The body is larger than the limit.
    TooLarge,
    /// The whole exchange did not fit in the timeout.
    TimedOut,
}

/// One request whose answer is read whole but bounded: within `timeout` (connection, head
/// and body), a 2xx status (else [`Error::Refused`], with the start of the body), and at
/// most `limit` bytes of body ([`HttpIo::request_limited`]). Discovery and the OAuth2
/// token request both read JSON from a server this way.
pub(crate) async fn bounded_exchange<T: HttpIo>(
    io: &T,
    req: Request<Bytes>,
    timeout: Duration,
    limit: usize,
) -> Result<Bytes, Bounded> {
    let deadline = io.now().saturating_add(timeout);
    let exchange = async {
        let resp = match io.request_limited(req, limit).await {
            Ok(resp) => resp,
            Err(e) if TooLarge::of(&e).is_some() => return Err(Bounded::TooLarge),
            Err(e) => return Err(Bounded::Failed(e)),
        };
        let status = resp.status();
        if !status.is_success() {
            let content_type = resp
                .headers()
                .get(http::header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            let refused = Refused::new(status.as_u16(), content_type, resp.body());
            return Err(Bounded::Failed(Error::Refused(refused)));
        }
        Ok(resp.into_body())
    };
    first_of(exchange, io.sleep_until(deadline))
        .await
        .unwrap_or(Err(Bounded::TimedOut))
}

/// The server side: answers `GET /utcp` (and `HEAD`) with a manual serialized once, `405`
/// to other methods on that path, and leaves every other path to the caller.
///
/// # Example
/// ```
/// use ssekit_utcp::{Manual, ManualEndpoint, Tool};
/// let tool = Tool::new("watch_stock", "Get real-time price updates for a stock",
///     serde_json::json!({"type": "object"}), serde_json::json!({"type": "object"}))?;
/// let endpoint = ManualEndpoint::new(&Manual::new(vec![tool]).with_version("1.0"));
/// let req = http::Request::get("/utcp").body(()).unwrap();
/// let resp = endpoint.answer(&req).expect("the discovery path");
/// assert_eq!(resp.status(), 200);
/// assert_eq!(resp.headers()["content-type"], "application/json");
/// assert!(endpoint.answer(&http::Request::get("/stream").body(()).unwrap()).is_none());
/// # Ok::<(), ssekit_utcp::SchemaError>(())
/// ```
#[derive(Clone, Debug)]
pub struct ManualEndpoint {
    body: Bytes,
}

impl ManualEndpoint {
    /// Serializes `manual` (see [`Manual::to_value`]).
    ///
    /// # Example
    /// ```
    /// let endpoint = ssekit_utcp::ManualEndpoint::new(&ssekit_utcp::Manual::new(vec![]));
    /// # let _ = endpoint;
    /// ```
    pub fn new(manual: &Manual) -> Self {
        ManualEndpoint {
            body: Bytes::from(manual.to_value().to_string()),
        }
    }

    /// The answer to `req` if its path is [`DISCOVERY_PATH`]: `200` with the manual as
    /// `application/json` to `GET` and `HEAD`, `405` with `Allow: GET, HEAD` otherwise.
    /// `None` for any other path.
    ///
    /// # Example
    /// ```
    /// let endpoint = ssekit_utcp::ManualEndpoint::new(&ssekit_utcp::Manual::new(vec![]));
    /// let post = http::Request::post("/utcp").body(()).unwrap();
    /// assert_eq!(endpoint.answer(&post).map(|r| r.status().as_u16()), Some(405));
    /// ```
    pub fn answer<B>(&self, req: &Request<B>) -> Option<Response<Full<Bytes>>> {
        if req.uri().path() != DISCOVERY_PATH {
            return None;
        }
        let mut resp = Response::new(Full::new(Bytes::new()));
        if req.method() == Method::GET || req.method() == Method::HEAD {
            *resp.body_mut() = Full::new(self.body.clone());
            resp.headers_mut().insert(
                http::header::CONTENT_TYPE,
                http::HeaderValue::from_static("application/json"),
            );
        } else {
            *resp.status_mut() = StatusCode::METHOD_NOT_ALLOWED;
            resp.headers_mut().insert(
                http::header::ALLOW,
                http::HeaderValue::from_static("GET, HEAD"),
            );
        }
        Some(resp)
    }
}
