//! [`Pool`]: an HTTP client written once over a runtime's TCP sockets ([`Dial`]): what many
//! `EventSource`s and `HttpIo`s of that runtime share: the TLS configuration, the proxies and
//! a pool of connections. Over TLS the client offers `h2` and `http/1.1` by ALPN; an HTTP/2
//! connection carries every stream and request to its origin at once, and an HTTP/1.1
//! connection whose response was read to its end waits, idle, for the next request to that
//! origin. ssekit-smol's `HttpClient` is `Pool<Smol>`.
//!
//! ```text
//!  send(uri, req) ─▶ pool: HTTP/2 to the origin? ─ yes ─▶ one more stream on it
//!                        │ no: an idle HTTP/1.1 one? ─ yes ─▶ the request on it (a new one if it had closed)
//!                        └ no ─▶ dial (proxy tunnel, TLS + ALPN) ─▶ h2 ─▶ kept in the pool, shared
//!                                                                 └ http/1.1 ─▶ this exchange's alone
//! ```

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use futures_lite::io::{AsyncRead, AsyncWrite};
use http::Request;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::client::conn::{http1, http2, TrySendError};
use smol_hyper::rt::FuturesIo;
use ssekit::Instant;

use super::{origin_form, ClientOptions};
use crate::io::first_of;
use crate::proxy::ProxyServer;
use crate::runtime::Runtime;
#[cfg(feature = "pool-tls")]
use crate::runtime::{Executor, Timer};
use crate::{Error, RequestError, RequestErrorKind};

/// A runtime's TCP sockets, as [`Pool`] dials them: ssekit-smol implements it for `Smol`
/// (`smol::net::TcpStream`); a simulation, for its in-memory network.
///
/// # Example
/// ```
/// use ssekit_http::client::{Dial, Pool};
/// fn client<R: Dial>() -> Pool<R> {
///     Pool::new()
/// }
/// ```
pub trait Dial: Runtime + Default {
    /// A connected socket.
    type Tcp: AsyncRead + AsyncWrite + Unpin + Send + 'static;
    /// Connects to `host:port` (`TCP_NODELAY` set, as an event stream's small writes want).
    fn tcp(host: &str, port: u16) -> impl Future<Output = std::io::Result<Self::Tcp>> + Send;
}

/// A connection's task, cancelled when its last handle is dropped (the pool's, and those of
/// the exchanges on it): the connection then closes.
struct Task(#[allow(dead_code)] tokio::sync::oneshot::Sender<()>);

impl Task {
    /// Runs `conn` on `runtime` until it ends or the handle is dropped.
    fn spawn<R: Runtime>(runtime: &R, conn: impl Future + Send + 'static) -> Task {
        let (handle, dropped) = tokio::sync::oneshot::channel::<()>();
        runtime.spawn(async move {
            let dropped = async {
                let _ = dropped.await;
            };
            let _ = first_of(conn, dropped).await;
        });
        Task(handle)
    }
}

/// How long a connection nobody uses stays in the pool (hyper-util's default too).
const IDLE_TIMEOUT: Duration = Duration::from_secs(90);
/// The most idle HTTP/1.1 connections kept per origin.
const MAX_IDLE_PER_ORIGIN: usize = 8;

/// One HTTP client for many streams and requests on the runtime `R`: its proxies, its TLS
/// configuration (with the `rustls` feature) and its pool of connections. Clone it into
/// every `EventSource` (`client(..)`) and `HttpIo` that should share them: streams to an
/// HTTPS origin that speaks HTTP/2 then share one connection, and requests reuse idle
/// HTTP/1.1 connections (for up to 90 s, eight per origin). Build one with
/// [`ClientOptions`]. ssekit-smol's `HttpClient` is `Pool<Smol>`.
///
/// # Example
/// ```
/// use ssekit_http::client::{Dial, Pool};
/// fn shared<R: Dial>() -> (Pool<R>, Pool<R>) {
///     let client = Pool::new();
///     (client.clone(), client) // one pool, two users
/// }
/// ```
pub struct Pool<R: Dial> {
    shared: Arc<Shared<R>>,
}

impl<R: Dial> Clone for Pool<R> {
    fn clone(&self) -> Self {
        Pool {
            shared: Arc::clone(&self.shared),
        }
    }
}

struct Shared<R> {
    runtime: R,
    options: ClientOptions<R>,
    tls: Tls,
    pool: Mutex<HashMap<Origin, Idle>>,
    /// One dial at a time per HTTPS origin, so that streams started together find the first
    /// one's HTTP/2 connection instead of each opening their own.
    dialing: Mutex<HashMap<Origin, Arc<tokio::sync::Mutex<()>>>>,
}

/// The TLS configuration of `https://`: the one given (ALPN filled in), or the Mozilla
/// roots, built on first use.
#[cfg(feature = "pool-tls")]
struct Tls {
    given: Option<Arc<rustls::ClientConfig>>,
    default: std::sync::OnceLock<Arc<rustls::ClientConfig>>,
}
/// No TLS without the `rustls` feature.
#[cfg(not(feature = "pool-tls"))]
struct Tls;

impl<R: Dial> std::fmt::Debug for Pool<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let pooled = self.lock_pool().len();
        f.debug_struct("Pool")
            .field("proxy", self.shared.options.proxy_config())
            .field("pooled_origins", &pooled)
            .finish_non_exhaustive()
    }
}

impl<R: Dial> Default for Pool<R> {
    fn default() -> Self {
        Pool::new()
    }
}

#[cfg(feature = "pool-tls")]
fn with_alpn(mut config: rustls::ClientConfig) -> Arc<rustls::ClientConfig> {
    if config.alpn_protocols.is_empty() {
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    }
    Arc::new(config)
}

/// Where a pooled connection goes: scheme, host and port.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Origin {
    https: bool,
    host: String,
    port: u16,
}

impl Origin {
    fn of(uri: &http::Uri) -> Origin {
        let https = uri.scheme_str() == Some("https");
        Origin {
            https,
            host: uri
                .host()
                .unwrap_or_default()
                .trim_matches(['[', ']'])
                .to_owned(),
            port: uri.port_u16().unwrap_or(if https { 443 } else { 80 }),
        }
    }
}

/// The pooled connections of one origin.
#[derive(Default)]
struct Idle {
    h2: Option<H2Conn>,
    h1: Vec<(H1Conn, Instant)>,
}

/// An HTTP/2 connection: cloned senders open streams on it, and it closes when the pool
/// and every exchange on it have dropped their `task`.
struct H2Conn {
    sender: http2::SendRequest<Full<Bytes>>,
    task: Arc<Task>,
    last_used: Instant,
}

/// An HTTP/1.1 connection; dropping `task` closes its socket.
struct H1Conn {
    sender: http1::SendRequest<Full<Bytes>>,
    _task: Task,
}

/// A response body and the connection it holds while it is read: dropping it closes an
/// HTTP/1.1 connection (or resets the HTTP/2 stream). What [`Pool::send`] answers.
///
/// # Example
/// ```
/// fn readable<B: http_body::Body>() {}
/// readable::<ssekit_http::client::PooledBody>();
/// ```
pub struct PooledBody {
    body: Incoming,
    _held: Held,
}

impl std::fmt::Debug for PooledBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PooledBody").finish_non_exhaustive()
    }
}

impl http_body::Body for PooledBody {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, hyper::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}

/// A response and the connection it holds while its body is read.
struct Exchange {
    response: http::Response<Incoming>,
    held: Held,
}

/// The connection an [`Exchange`] holds.
enum Held {
    H1(H1Conn, Origin),
    H2 {
        /// Keeps the connection open while this stream is read.
        _connection: Arc<Task>,
    },
}

/// A connection fresh from [`Pool::dial`].
enum Dialed {
    H1(H1Conn),
    H2(http2::SendRequest<Full<Bytes>>, Arc<Task>),
}

impl<R: Dial> Pool<R> {
    /// A client with the environment's proxies and (feature `rustls`) the Mozilla roots.
    ///
    /// # Example
    /// See [`Pool`].
    pub fn new() -> Self {
        Pool::with_options(ClientOptions::default())
    }

    /// A client as `options` say.
    ///
    /// # Example
    /// ```
    /// use ssekit_http::client::{ClientOptions, Dial, Pool};
    /// fn direct<R: Dial>() -> Pool<R> {
    ///     Pool::with_options(ClientOptions::default().proxy(ssekit_http::proxy::Proxy::none()))
    /// }
    /// ```
    pub fn with_options(options: ClientOptions<R>) -> Self {
        #[cfg(feature = "pool-tls")]
        let tls = Tls {
            given: options.tls_config().cloned().map(with_alpn),
            default: std::sync::OnceLock::new(),
        };
        #[cfg(not(feature = "pool-tls"))]
        let tls = Tls;
        Pool {
            shared: Arc::new(Shared {
                runtime: R::default(),
                options,
                tls,
                pool: Mutex::default(),
                dialing: Mutex::default(),
            }),
        }
    }

    /// The options this client was built with (to build another with one changed).
    ///
    /// # Example
    /// ```
    /// use ssekit_http::client::{Dial, Pool};
    /// fn direct<R: Dial>(client: &Pool<R>) -> Pool<R> {
    ///     Pool::with_options(client.options().proxy(ssekit_http::proxy::Proxy::none()))
    /// }
    /// ```
    pub fn options(&self) -> ClientOptions<R> {
        self.shared.options.clone()
    }

    /// Sends `req` to `uri` (absolute) on a pooled connection or a new one, and answers as
    /// soon as the response head arrived; the body holds the connection.
    ///
    /// # Example
    /// ```
    /// # async fn doc<R: ssekit_http::client::Dial>(client: ssekit_http::client::Pool<R>) -> Result<(), ssekit_http::Error> {
    /// let uri: http::Uri = "http://127.0.0.1:1/events".parse().unwrap();
    /// let response = client.send(&uri, http::Request::new(bytes::Bytes::new())).await?;
    /// # let _ = response; Ok(()) }
    /// ```
    pub async fn send(
        &self,
        uri: &http::Uri,
        req: Request<Bytes>,
    ) -> Result<http::Response<PooledBody>, Error> {
        let Exchange { response, held } = self.exchange(uri, req).await?;
        Ok(response.map(|body| PooledBody { body, _held: held }))
    }

    /// Sends `req` (absolute URL) and reads its whole body, at most `limit` bytes (see
    /// [`crate::io::collect`]); the HTTP/1.1 connection then goes back to the pool.
    ///
    /// # Example
    /// ```
    /// # async fn doc<R: ssekit_http::client::Dial>(client: ssekit_http::client::Pool<R>) -> Result<(), ssekit_http::Error> {
    /// let req = http::Request::get("http://127.0.0.1:1/utcp").body(bytes::Bytes::new()).unwrap();
    /// let answer = client.request_limited(req, 64 << 10).await?;
    /// # let _ = answer; Ok(()) }
    /// ```
    pub async fn request_limited(
        &self,
        req: Request<Bytes>,
        limit: usize,
    ) -> Result<http::Response<Bytes>, Error> {
        let uri = req.uri().clone();
        let Exchange { response, held } = self.exchange(&uri, req).await?;
        let collected = crate::io::collect(response, limit).await?;
        // Read to its end: the connection can carry the next request.
        self.release(held);
        Ok(collected)
    }

    fn now(&self) -> Instant {
        self.shared.runtime.now()
    }

    fn idle_since(&self, since: Instant) -> Duration {
        self.now().saturating_duration_since(since)
    }

    fn lock_pool(&self) -> std::sync::MutexGuard<'_, HashMap<Origin, Idle>> {
        crate::sync::lock(&self.shared.pool)
    }

    /// Sends `req` to `uri` (absolute) on a pooled connection or a new one.
    async fn exchange(&self, uri: &http::Uri, mut req: Request<Bytes>) -> Result<Exchange, Error> {
        let origin = Origin::of(uri);
        // A pooled connection first; an HTTP/1.1 one that closed meanwhile gives the
        // request back unsent, and the next is tried.
        while let Some(pooled) = self.checkout(&origin) {
            match self.send_on(pooled, uri, req, &origin).await {
                Ok(exchange) => return Ok(exchange),
                Err(Unsent::Back(again)) => req = again,
                Err(Unsent::Failed(err)) => return Err(err),
            }
        }
        let turn = if origin.https {
            // Wait for a dial to this origin under way: it may bring an HTTP/2 connection.
            let lock = {
                let mut dialing = crate::sync::lock(&self.shared.dialing);
                Arc::clone(dialing.entry(origin.clone()).or_default())
            };
            let turn = lock.lock_owned().await;
            if let Some(pooled) = self.checkout_h2(&origin) {
                match self.send_on(pooled, uri, req, &origin).await {
                    Ok(exchange) => return Ok(exchange),
                    Err(Unsent::Back(again)) => req = again,
                    Err(Unsent::Failed(err)) => return Err(err),
                }
            }
            Some(turn)
        } else {
            None
        };
        let dialed = self.dial(uri, &origin).await?;
        if let Dialed::H2(sender, task) = &dialed {
            self.lock_pool().entry(origin.clone()).or_default().h2 = Some(H2Conn {
                sender: sender.clone(),
                task: Arc::clone(task),
                last_used: self.now(),
            });
        }
        drop(turn);
        match self.send_on(dialed, uri, req, &origin).await {
            Ok(exchange) => Ok(exchange),
            Err(Unsent::Back(_)) => Err(RequestError::new(
                RequestErrorKind::NotSent,
                "the connection closed before the request was sent",
            )
            .into()),
            Err(Unsent::Failed(err)) => Err(err),
        }
    }

    /// Gives the connection of an exchange whose response was read to its end back to
    /// the pool (HTTP/1.1; an HTTP/2 stream has nothing to give back).
    fn release(&self, held: Held) {
        let Held::H1(conn, origin) = held else { return };
        if conn.sender.is_closed() {
            return;
        }
        let mut pool = self.lock_pool();
        let idle = pool.entry(origin).or_default();
        if idle.h1.len() < MAX_IDLE_PER_ORIGIN {
            idle.h1.push((conn, self.now()));
        }
    }

    /// A pooled connection to `origin` (HTTP/2 first), dropping the closed and the stale.
    fn checkout(&self, origin: &Origin) -> Option<Dialed> {
        if let Some(h2) = self.checkout_h2(origin) {
            return Some(h2);
        }
        let mut pool = self.lock_pool();
        let idle = pool.get_mut(origin)?;
        let found = loop {
            match idle.h1.pop() {
                None => break None,
                Some((conn, since)) => {
                    if !conn.sender.is_closed() && self.idle_since(since) < IDLE_TIMEOUT {
                        break Some(Dialed::H1(conn));
                    }
                }
            }
        };
        if idle.h1.is_empty() && idle.h2.is_none() {
            pool.remove(origin);
        }
        found
    }

    /// Drops the pool's HTTP/2 connection to `origin` if it is the one `task` drives.
    fn evict_h2(&self, origin: &Origin, task: &Arc<Task>) {
        let mut pool = self.lock_pool();
        if let Some(idle) = pool.get_mut(origin)
            && idle
                .h2
                .as_ref()
                .is_some_and(|h2| Arc::ptr_eq(&h2.task, task))
        {
            idle.h2 = None;
        }
    }

    fn checkout_h2(&self, origin: &Origin) -> Option<Dialed> {
        let mut pool = self.lock_pool();
        let idle = pool.get_mut(origin)?;
        let h2 = idle.h2.as_mut()?;
        let stale = self.idle_since(h2.last_used) >= IDLE_TIMEOUT;
        if h2.sender.is_closed() || !h2.sender.is_ready() || stale {
            idle.h2 = None;
            return None;
        }
        h2.last_used = self.now();
        Some(Dialed::H2(h2.sender.clone(), Arc::clone(&h2.task)))
    }

    /// One request on `conn`: origin form on HTTP/1.1, the absolute URI (`:authority`,
    /// `:scheme`) on HTTP/2.
    async fn send_on(
        &self,
        conn: Dialed,
        uri: &http::Uri,
        mut req: Request<Bytes>,
        origin: &Origin,
    ) -> Result<Exchange, Unsent> {
        match conn {
            Dialed::H1(mut conn) => {
                origin_form(&mut req).map_err(Unsent::Failed)?;
                if conn.sender.ready().await.is_err() {
                    return Err(Unsent::Back(req));
                }
                // `Bytes` clones share the buffer: kept to send the request again elsewhere.
                let body = req.body().clone();
                match conn.sender.try_send_request(req.map(Full::new)).await {
                    Ok(response) => Ok(Exchange {
                        response,
                        held: Held::H1(conn, origin.clone()),
                    }),
                    Err(failed) => Err(Unsent::of(failed, body)),
                }
            }
            Dialed::H2(mut sender, task) => {
                *req.uri_mut() = uri.clone();
                req.headers_mut().remove(http::header::HOST);
                let body = req.body().clone();
                match sender.try_send_request(req.map(Full::new)).await {
                    Ok(response) => Ok(Exchange {
                        response,
                        held: Held::H2 { _connection: task },
                    }),
                    // A connection that failed (a GOAWAY, a reset) takes no more streams:
                    // out of the pool, so that the next try dials a new one.
                    Err(failed) => {
                        self.evict_h2(origin, &task);
                        Err(Unsent::of(failed, body))
                    }
                }
            }
        }
    }

    /// An HTTP/1.1 connection on `io`, driven by a task of its own.
    async fn handshake_h1<S>(&self, io: S) -> Result<Dialed, Error>
    where
        S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let (sender, conn) = http1::handshake(FuturesIo::new(io)).await?;
        let task = Task::spawn(&self.shared.runtime, conn);
        Ok(Dialed::H1(H1Conn {
            sender,
            _task: task,
        }))
    }

    /// TCP to the origin of `uri`, or to its proxy and through a `CONNECT` tunnel; TLS for
    /// `https://`, then HTTP/2 or HTTP/1.1 as ALPN agreed.
    async fn dial(&self, uri: &http::Uri, origin: &Origin) -> Result<Dialed, Error> {
        let tcp = match self.shared.options.proxy_config().for_uri(uri) {
            None => R::tcp(&origin.host, origin.port).await?,
            Some(proxy) => {
                let mut tcp = R::tcp(proxy.host(), proxy.port()).await?;
                tunnel(&mut tcp, proxy, &origin.host, origin.port).await?;
                tcp
            }
        };
        if !origin.https {
            return self.handshake_h1(tcp).await;
        }
        self.tls_dial(tcp, &origin.host).await
    }

    #[cfg(feature = "pool-tls")]
    async fn tls_dial(&self, tcp: R::Tcp, host: &str) -> Result<Dialed, Error> {
        let config = match &self.shared.tls.given {
            Some(config) => Arc::clone(config),
            None => match self.shared.tls.default.get() {
                Some(config) => Arc::clone(config),
                None => {
                    let config = default_tls()?;
                    Arc::clone(self.shared.tls.default.get_or_init(|| config))
                }
            },
        };
        let name = rustls::pki_types::ServerName::try_from(host.to_owned()).map_err(|e| {
            RequestError::new(
                RequestErrorKind::ServerName,
                format!("bad TLS server name {host:?}"),
            )
            .with_source(e)
        })?;
        let tls = futures_rustls::TlsConnector::from(config)
            .connect(name, tcp)
            .await?;
        if tls.get_ref().1.alpn_protocol() == Some(b"h2") {
            let (interval, timeout) = self.shared.options.http2_keep_alive_config();
            let runtime = &self.shared.runtime;
            let (sender, conn) = http2::Builder::new(Executor(runtime.clone()))
                .timer(Timer(runtime.clone()))
                .keep_alive_interval(interval)
                .keep_alive_timeout(timeout)
                .handshake(FuturesIo::new(tls))
                .await?;
            let task = Task::spawn(runtime, conn);
            return Ok(Dialed::H2(sender, Arc::new(task)));
        }
        self.handshake_h1(tls).await
    }

    #[cfg(not(feature = "pool-tls"))]
    async fn tls_dial(&self, tcp: R::Tcp, host: &str) -> Result<Dialed, Error> {
        let _ = (tcp, host, &self.shared.tls);
        Err(RequestError::new(RequestErrorKind::Url, "https:// needs the rustls feature").into())
    }
}

/// Why a request did not get a response: it was never sent (the pooled connection had
/// closed: try another), or it failed.
enum Unsent {
    Back(Request<Bytes>),
    Failed(Error),
}

impl Unsent {
    /// What hyper's `try_send_request` gave back: the request, its `body` put back, when
    /// it was not sent; the error otherwise.
    fn of(mut failed: TrySendError<Request<Full<Bytes>>>, body: Bytes) -> Unsent {
        match failed.take_message() {
            Some(req) => Unsent::Back(req.map(|_| body)),
            None => Unsent::Failed(failed.into_error().into()),
        }
    }
}

/// Asks the proxy on `tcp` for a tunnel to `host:port` and reads its answer: `Ok` when the
/// tunnel is open, the proxy's refusal (status, headers, body start) otherwise.
async fn tunnel(
    tcp: &mut (impl AsyncRead + AsyncWrite + Unpin),
    proxy: &ProxyServer,
    host: &str,
    port: u16,
) -> Result<(), Error> {
    use futures_lite::{AsyncReadExt, AsyncWriteExt};
    let request = crate::proxy::connect_request(proxy, host, port);
    tcp.write_all(&request).await?;
    let mut answer = crate::proxy::ConnectAnswer::default();
    let mut buf = [0u8; 1024];
    loop {
        let n = tcp.read(&mut buf).await?;
        if n == 0 {
            return Err(answer.closed(proxy));
        }
        if answer.read(buf.get(..n).unwrap_or_default())? {
            return Ok(());
        }
    }
}

/// The Mozilla roots, offering `h2` and `http/1.1`.
#[cfg(feature = "pool-tls")]
fn default_tls() -> Result<Arc<rustls::ClientConfig>, Error> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let roots = rustls::RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    };
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(Error::http)?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(with_alpn(config))
}
