//! [`HttpClient`]: what many `EventSource`s and `SmolHttp`s share on smol: the TLS
//! configuration, the proxies and a pool of connections. Over TLS the client offers `h2`
//! and `http/1.1` by ALPN; an HTTP/2 connection carries every stream and request to its
//! origin at once, and an HTTP/1.1 connection whose response was read to its end waits,
//! idle, for the next request to that origin.
//!
//! ```text
//!  send(uri, req) ─▶ pool: HTTP/2 to the origin? ─ yes ─▶ one more stream on it
//!                        │ no: an idle HTTP/1.1 one? ─ yes ─▶ the request on it (a new one if it had closed)
//!                        └ no ─▶ dial (proxy tunnel, TLS + ALPN) ─▶ h2 ─▶ kept in the pool, shared
//!                                                                 └ http/1.1 ─▶ this exchange's alone
//! ```

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::Request;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::client::conn::{http1, http2, TrySendError};
use smol_hyper::rt::FuturesIo;
use ssekit_http::client::origin_form;
use ssekit_http::proxy::ProxyServer;

use ssekit_http::{RequestError, RequestErrorKind};

use crate::runtime::Smol;
use crate::Error;

/// How long a connection nobody uses stays in the pool (hyper-util's default too).
const IDLE_TIMEOUT: Duration = Duration::from_secs(90);
/// The most idle HTTP/1.1 connections kept per origin.
const MAX_IDLE_PER_ORIGIN: usize = 8;

/// One HTTP client for many streams and requests on smol: its proxies, its TLS
/// configuration (with the `rustls` feature) and its pool of connections. Clone it into
/// every [`EventSource`](super::EventSource) ([`client`](super::EventSource::client)) and
/// [`SmolHttp`](super::SmolHttp) ([`with_client`](super::SmolHttp::with_client)) that
/// should share them: streams to an HTTPS origin that speaks HTTP/2 then share one
/// connection, and requests reuse idle HTTP/1.1 connections (for up to 90 s, eight per
/// origin). Build one with [`ClientOptions`].
///
/// # Example
/// ```
/// use ssekit_smol::client::{EventSource, HttpClient};
/// let client = HttpClient::new();
/// let a = EventSource::get("https://api.example.com/a")?.client(client.clone());
/// let b = EventSource::get("https://api.example.com/b")?.client(client);
/// # let _ = (a, b); Ok::<(), ssekit_smol::Error>(())
/// ```
#[derive(Clone)]
pub struct HttpClient {
    shared: Arc<Shared>,
}

struct Shared {
    options: ClientOptions,
    tls: Tls,
    pool: Mutex<HashMap<Origin, Idle>>,
    /// One dial at a time per HTTPS origin, so that streams started together find the first
    /// one's HTTP/2 connection instead of each opening their own.
    dialing: Mutex<HashMap<Origin, Arc<smol::lock::Mutex<()>>>>,
}

/// The TLS configuration of `https://`: the one given (ALPN filled in), or the Mozilla
/// roots, built on first use.
#[cfg(feature = "rustls")]
struct Tls {
    given: Option<Arc<rustls::ClientConfig>>,
    default: std::sync::OnceLock<Arc<rustls::ClientConfig>>,
}
/// No TLS without the `rustls` feature.
#[cfg(not(feature = "rustls"))]
struct Tls;

impl std::fmt::Debug for HttpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let pooled = self.lock_pool().len();
        f.debug_struct("HttpClient")
            .field("proxy", self.shared.options.proxy_config())
            .field("pooled_origins", &pooled)
            .finish_non_exhaustive()
    }
}

impl Default for HttpClient {
    fn default() -> Self {
        HttpClient::new()
    }
}

/// How to build an [`HttpClient`]: its proxies, (feature `rustls`) its TLS configuration
/// (when its ALPN list is empty the client offers `h2` and `http/1.1`) and its HTTP/2
/// keep-alive: [`ssekit_http::client::ClientOptions`] on smol. Building cannot fail on smol.
///
/// # Example
/// ```
/// use ssekit_smol::client::{ClientOptions, EventSource, Proxy};
/// let client = ClientOptions::default()
///     .proxy(Proxy::all("http://proxy.internal:3128")?.no_proxy("localhost,.corp.example"))
///     .build()?;
/// let a = EventSource::get("https://api.example.com/a")?.client(client.clone());
/// let b = EventSource::get("https://api.example.com/b")?.client(client);
/// # let _ = (a, b); Ok::<(), ssekit_smol::Error>(())
/// ```
pub type ClientOptions = ssekit_http::client::ClientOptions<Smol>;

/// A pool as `options` say.
pub(crate) fn pool(options: ClientOptions) -> HttpClient {
    #[cfg(feature = "rustls")]
    let tls = Tls {
        given: options.tls_config().cloned().map(with_alpn),
        default: std::sync::OnceLock::new(),
    };
    #[cfg(not(feature = "rustls"))]
    let tls = Tls;
    HttpClient {
        shared: Arc::new(Shared {
            options,
            tls,
            pool: Mutex::default(),
            dialing: Mutex::default(),
        }),
    }
}

#[cfg(feature = "rustls")]
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
    task: Arc<smol::Task<()>>,
    last_used: Instant,
}

/// An HTTP/1.1 connection; dropping `task` closes its socket.
pub(crate) struct H1Conn {
    sender: http1::SendRequest<Full<Bytes>>,
    _task: smol::Task<()>,
}

/// A response and the connection it holds while its body is read: dropping it closes an
/// HTTP/1.1 connection (or resets the HTTP/2 stream);
/// [`HttpClient::release`] gives an HTTP/1.1 one back to the pool instead.
pub(crate) struct Exchange {
    pub(crate) response: http::Response<Incoming>,
    pub(crate) held: Held,
}

/// The connection an [`Exchange`] holds.
pub(crate) enum Held {
    H1(H1Conn, Origin),
    H2 {
        /// Keeps the connection open while this stream is read.
        _connection: Arc<smol::Task<()>>,
    },
}

/// A connection fresh from [`HttpClient::dial`].
enum Dialed {
    H1(H1Conn),
    H2(http2::SendRequest<Full<Bytes>>, Arc<smol::Task<()>>),
}

impl HttpClient {
    /// A client with the environment's proxies and (feature `rustls`) the Mozilla roots.
    ///
    /// # Example
    /// See [`HttpClient`].
    pub fn new() -> HttpClient {
        pool(ClientOptions::default())
    }

    /// The options this client was built with (to build another with one changed).
    pub(crate) fn options(&self) -> ClientOptions {
        self.shared.options.clone()
    }

    fn lock_pool(&self) -> std::sync::MutexGuard<'_, HashMap<Origin, Idle>> {
        self.shared
            .pool
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Sends `req` to `uri` (absolute) on a pooled connection or a new one.
    pub(crate) async fn send(
        &self,
        uri: &http::Uri,
        mut req: Request<Bytes>,
    ) -> Result<Exchange, Error> {
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
                let mut dialing = self
                    .shared
                    .dialing
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner);
                Arc::clone(dialing.entry(origin.clone()).or_default())
            };
            let turn = lock.lock_arc().await;
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
                last_used: Instant::now(),
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
    pub(crate) fn release(&self, held: Held) {
        let Held::H1(conn, origin) = held else { return };
        if conn.sender.is_closed() {
            return;
        }
        let mut pool = self.lock_pool();
        let idle = pool.entry(origin).or_default();
        if idle.h1.len() < MAX_IDLE_PER_ORIGIN {
            idle.h1.push((conn, Instant::now()));
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
                    if !conn.sender.is_closed() && since.elapsed() < IDLE_TIMEOUT {
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
    fn evict_h2(&self, origin: &Origin, task: &Arc<smol::Task<()>>) {
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
        if h2.sender.is_closed() || !h2.sender.is_ready() || h2.last_used.elapsed() >= IDLE_TIMEOUT
        {
            idle.h2 = None;
            return None;
        }
        h2.last_used = Instant::now();
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

    /// TCP to the origin of `uri`, or to its proxy and through a `CONNECT` tunnel; TLS for
    /// `https://`, then HTTP/2 or HTTP/1.1 as ALPN agreed.
    async fn dial(&self, uri: &http::Uri, origin: &Origin) -> Result<Dialed, Error> {
        let tcp = match self.shared.options.proxy_config().for_uri(uri) {
            None => smol::net::TcpStream::connect((origin.host.as_str(), origin.port)).await?,
            Some(proxy) => {
                let mut tcp = smol::net::TcpStream::connect((proxy.host(), proxy.port())).await?;
                tunnel(&mut tcp, proxy, &origin.host, origin.port).await?;
                tcp
            }
        };
        let _ = tcp.set_nodelay(true);
        if !origin.https {
            return handshake_h1(tcp).await;
        }
        self.tls_dial(tcp, &origin.host).await
    }

    #[cfg(feature = "rustls")]
    async fn tls_dial(&self, tcp: smol::net::TcpStream, host: &str) -> Result<Dialed, Error> {
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
            let (sender, conn) = http2::Builder::new(crate::runtime::Smol::default())
                .timer(smol_hyper::rt::SmolTimer::new())
                .keep_alive_interval(interval)
                .keep_alive_timeout(timeout)
                .handshake(FuturesIo::new(tls))
                .await?;
            let task = smol::spawn(async move {
                let _ = conn.await;
            });
            return Ok(Dialed::H2(sender, Arc::new(task)));
        }
        handshake_h1(tls).await
    }

    #[cfg(not(feature = "rustls"))]
    async fn tls_dial(&self, tcp: smol::net::TcpStream, host: &str) -> Result<Dialed, Error> {
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

/// An HTTP/1.1 connection on `io`, driven by a task of its own.
async fn handshake_h1<S>(io: S) -> Result<Dialed, Error>
where
    S: futures_io::AsyncRead + futures_io::AsyncWrite + Unpin + Send + 'static,
{
    let (sender, conn) = http1::handshake(FuturesIo::new(io)).await?;
    let task = smol::spawn(async move {
        let _ = conn.await;
    });
    Ok(Dialed::H1(H1Conn {
        sender,
        _task: task,
    }))
}

/// Asks the proxy on `tcp` for a tunnel to `host:port` and reads its answer: `Ok` when the
/// tunnel is open, the proxy's refusal (status, headers, body start) otherwise.
async fn tunnel(
    tcp: &mut smol::net::TcpStream,
    proxy: &ProxyServer,
    host: &str,
    port: u16,
) -> Result<(), Error> {
    use futures_lite::{AsyncReadExt, AsyncWriteExt};
    let request = ssekit_http::proxy::connect_request(proxy, host, port);
    tcp.write_all(&request).await?;
    let mut answer = ssekit_http::proxy::ConnectAnswer::default();
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
#[cfg(feature = "rustls")]
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
