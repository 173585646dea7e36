//! [`ServeOptions`]: how the transports' `serve_with` serves a connection, shared by
//! ssekit-hyper (tokio) and ssekit-smol, which pass their executor and timer to
//! [`ServeOptions::connection_builder`].

#[cfg(feature = "rustls")]
use std::sync::Arc;
use std::time::Duration;

/// How `serve_with` (of ssekit-hyper and ssekit-smol alike) serves: HTTP/1.1 and HTTP/2 on
/// every connection (h2c by prior knowledge in clear text; over TLS, as ALPN agreed:
/// browsers open at most six HTTP/1.1 connections per origin, and each `EventSource` holds
/// one, whereas HTTP/2 carries a hundred streams on one), the write buffer per connection
/// (or per HTTP/2 stream), header limits, the time a client has to send its request head,
/// how long an idle connection is kept, and how many connections are served at once.
///
/// | limit | default | what a client sees when it is hit |
/// |---|---|---|
/// | [`request_head_timeout`](Self::request_head_timeout) | 30 s from accept | the connection closed, no response |
/// | [`idle_timeout`](Self::idle_timeout) | 30 s with no request in flight | the connection closed (HTTP/2: `GOAWAY` first) |
/// | [`header_read_timeout`](Self::header_read_timeout) | 30 s from a head's first byte | the connection closed (HTTP/1.1) |
/// | [`max_request_head`](Self::max_request_head) | 64 KiB | `431 Request Header Fields Too Large` (HTTP/2: the stream reset) |
/// | [`max_connections`](Self::max_connections) | the open-file limit less an eighth (10 000 if unknown) | `503` with `Retry-After: 1`, then the connection closed |
///
/// # Example
/// ```
/// use std::time::Duration;
/// let options = ssekit_http::server::ServeOptions::default()
///     .write_buffer(16 << 10)
///     .max_headers(64)
///     .header_read_timeout(Duration::from_secs(10))
///     .request_head_timeout(Duration::from_secs(10))
///     .idle_timeout(Duration::from_secs(15))
///     .max_request_head(32 << 10)
///     .max_connections(5_000)
///     .max_concurrent_streams(256);
/// assert_eq!(options.write_buffer_size(), 16 << 10);
/// assert_eq!(options.max_request_head_size(), 32 << 10);
/// assert_eq!(options.max_connections_allowed(), 5_000);
/// ```
#[derive(Clone, Debug)]
#[must_use]
pub struct ServeOptions {
    write_buffer: usize,
    max_headers: Option<usize>,
    header_read_timeout: Option<Duration>,
    request_head_timeout: Option<Duration>,
    idle_timeout: Option<Duration>,
    max_request_head: usize,
    max_connections: usize,
    max_concurrent_streams: Option<u32>,
    #[cfg(feature = "rustls")]
    tls: Option<Arc<rustls::ServerConfig>>,
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            write_buffer: super::WRITE_BUFFER,
            max_headers: None,
            header_read_timeout: Some(Duration::from_secs(30)),
            request_head_timeout: Some(REQUEST_HEAD_TIMEOUT),
            idle_timeout: Some(IDLE_TIMEOUT),
            max_request_head: MAX_REQUEST_HEAD,
            max_connections: default_max_connections(),
            max_concurrent_streams: Some(200),
            #[cfg(feature = "rustls")]
            tls: None,
        }
    }
}

/// The default [`ServeOptions::request_head_timeout`]: 30 s from accept to a complete first
/// request head, as hyper's header read timeout gives a head from its first byte.
///
/// # Example
/// ```
/// assert_eq!(ssekit_http::server::REQUEST_HEAD_TIMEOUT.as_secs(), 30);
/// ```
pub const REQUEST_HEAD_TIMEOUT: Duration = Duration::from_secs(30);

/// The default [`ServeOptions::idle_timeout`]: 30 s without a request in flight.
///
/// # Example
/// ```
/// assert_eq!(ssekit_http::server::IDLE_TIMEOUT.as_secs(), 30);
/// ```
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(30);

/// The default [`ServeOptions::max_request_head`]: 64 KiB, request line and headers (nginx
/// allows four 8 KiB lines, Node 16 KiB; cookies and JWTs pass 8 KiB in practice).
///
/// # Example
/// ```
/// assert_eq!(ssekit_http::server::MAX_REQUEST_HEAD, 64 << 10);
/// ```
pub const MAX_REQUEST_HEAD: usize = 64 << 10;

/// The connection cap where the open-file limit cannot be read (not Linux, or unlimited).
const FALLBACK_MAX_CONNECTIONS: usize = 10_000;

/// The soft open-file limit less an eighth (at least 32) for the listener, the runtime, a
/// store's connections, log files and the brief descriptor of a shed connection: connections
/// are shed with a `503` before `accept` runs out of descriptors. Read from
/// `/proc/self/limits` (no `unsafe`, no libc call); where it cannot be read, or is unlimited,
/// [`FALLBACK_MAX_CONNECTIONS`].
fn default_max_connections() -> usize {
    fn soft_open_files() -> Option<usize> {
        let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
        let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
        line.split_whitespace().nth(3)?.parse().ok()
    }
    match soft_open_files() {
        Some(soft) => soft.saturating_sub((soft / 8).max(32)).max(1),
        None => FALLBACK_MAX_CONNECTIONS,
    }
}

/// How long a TLS handshake may take before the connection is dropped.
///
/// # Example
/// ```
/// assert_eq!(ssekit_http::server::TLS_HANDSHAKE_TIMEOUT.as_secs(), 10);
/// ```
pub const TLS_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

impl ServeOptions {
    /// The most bytes hyper holds for a slow reader (default
    /// [`WRITE_BUFFER`](super::WRITE_BUFFER), 8 KiB; hyper's own is 400 KiB; at least 8 KiB).
    ///
    /// # Example
    /// See [`ServeOptions`].
    pub fn write_buffer(mut self, bytes: usize) -> Self {
        self.write_buffer = bytes.max(8 << 10);
        self
    }

    /// The write buffer set by [`write_buffer`](Self::write_buffer).
    ///
    /// # Example
    /// ```
    /// let options = ssekit_http::server::ServeOptions::default();
    /// assert_eq!(options.write_buffer_size(), ssekit_http::server::WRITE_BUFFER);
    /// ```
    pub fn write_buffer_size(&self) -> usize {
        self.write_buffer
    }

    /// The most request headers of an HTTP/1.1 request (hyper's default, 100, otherwise).
    ///
    /// # Example
    /// See [`ServeOptions`].
    pub fn max_headers(mut self, headers: usize) -> Self {
        self.max_headers = Some(headers);
        self
    }

    /// How long a client has to send its HTTP/1.1 request head once its first byte arrived
    /// (hyper's header read timeout; default 30 s; `None`: no limit). A connection that sends
    /// no byte at all is bounded by [`request_head_timeout`](Self::request_head_timeout).
    ///
    /// # Example
    /// See [`ServeOptions`].
    pub fn header_read_timeout(mut self, timeout: impl Into<Option<Duration>>) -> Self {
        self.header_read_timeout = timeout.into();
        self
    }

    /// How long a new connection has, from accept (a TLS handshake included), to complete
    /// its first request head, first byte included (default [`REQUEST_HEAD_TIMEOUT`], 30 s;
    /// `None`: no limit). A connection that has not is closed, without a response: a socket
    /// that never says anything holds a file descriptor no longer than this.
    ///
    /// # Example
    /// See [`ServeOptions`].
    pub fn request_head_timeout(mut self, timeout: impl Into<Option<Duration>>) -> Self {
        self.request_head_timeout = timeout.into();
        self
    }

    /// The timeout set by [`request_head_timeout`](Self::request_head_timeout).
    ///
    /// # Example
    /// ```
    /// let options = ssekit_http::server::ServeOptions::default();
    /// assert_eq!(options.request_head_timeout_value(), Some(ssekit_http::server::REQUEST_HEAD_TIMEOUT));
    /// ```
    pub fn request_head_timeout_value(&self) -> Option<Duration> {
        self.request_head_timeout
    }

    /// How long a connection that has served a request may stay open with no request in
    /// flight (default [`IDLE_TIMEOUT`], 30 s; `None`: for ever); then it is closed (HTTP/2:
    /// after a `GOAWAY`). A response still being sent (an event stream silent for minutes
    /// between keep-alives) is a request in flight: its connection is never closed for this.
    /// Behind a balancer that reuses idle connections, keep its idle timeout below this one.
    ///
    /// # Example
    /// See [`ServeOptions`].
    pub fn idle_timeout(mut self, timeout: impl Into<Option<Duration>>) -> Self {
        self.idle_timeout = timeout.into();
        self
    }

    /// The timeout set by [`idle_timeout`](Self::idle_timeout).
    ///
    /// # Example
    /// ```
    /// let options = ssekit_http::server::ServeOptions::default();
    /// assert_eq!(options.idle_timeout_value(), Some(ssekit_http::server::IDLE_TIMEOUT));
    /// ```
    pub fn idle_timeout_value(&self) -> Option<Duration> {
        self.idle_timeout
    }

    /// The largest request head, request line and headers (default [`MAX_REQUEST_HEAD`],
    /// 64 KiB; at least 8 KiB); a larger one gets `431 Request Header Fields Too Large`
    /// (HTTP/1.1), or its stream reset (HTTP/2, whose header list size is set to it). It no
    /// longer follows [`write_buffer`](Self::write_buffer): the bytes queued for a slow
    /// reader stay bounded by that.
    ///
    /// # Example
    /// See [`ServeOptions`].
    pub fn max_request_head(mut self, bytes: usize) -> Self {
        self.max_request_head = bytes.max(8 << 10);
        self
    }

    /// The limit set by [`max_request_head`](Self::max_request_head).
    ///
    /// # Example
    /// ```
    /// let options = ssekit_http::server::ServeOptions::default();
    /// assert_eq!(options.max_request_head_size(), ssekit_http::server::MAX_REQUEST_HEAD);
    /// ```
    pub fn max_request_head_size(&self) -> usize {
        self.max_request_head
    }

    /// The most connections served at once (at least 1). Above it a new connection is
    /// answered `503 Service Unavailable` with `Retry-After: 1` at once (a TLS one is closed
    /// at once) instead of starving the others of file descriptors. Default: the soft
    /// open-file limit (`ulimit -n`) less an eighth, at least 32 less, so that connections
    /// are shed before `accept` runs out of descriptors; 10 000 where that limit cannot be
    /// read (not Linux) or is unlimited.
    ///
    /// # Example
    /// See [`ServeOptions`].
    pub fn max_connections(mut self, connections: usize) -> Self {
        self.max_connections = connections.max(1);
        self
    }

    /// The cap set by [`max_connections`](Self::max_connections).
    ///
    /// # Example
    /// ```
    /// assert!(ssekit_http::server::ServeOptions::default().max_connections_allowed() >= 1);
    /// ```
    pub fn max_connections_allowed(&self) -> usize {
        self.max_connections
    }

    /// The most concurrent HTTP/2 streams per connection (default 200).
    ///
    /// # Example
    /// See [`ServeOptions`].
    pub fn max_concurrent_streams(mut self, streams: u32) -> Self {
        self.max_concurrent_streams = Some(streams);
        self
    }

    /// Serves HTTPS with this rustls configuration (feature `rustls`); its ALPN list is set
    /// to `h2`, `http/1.1` when empty. A TLS handshake that takes longer than
    /// [`TLS_HANDSHAKE_TIMEOUT`] is dropped.
    ///
    /// # Example
    /// ```
    /// # fn doc(tls: std::sync::Arc<rustls::ServerConfig>) {
    /// let options = ssekit_http::server::ServeOptions::default().tls(tls);
    /// assert!(options.tls_config().is_some());
    /// # }
    /// ```
    #[cfg(feature = "rustls")]
    pub fn tls(mut self, config: Arc<rustls::ServerConfig>) -> Self {
        let config = if config.alpn_protocols.is_empty() {
            let mut with_alpn = (*config).clone();
            with_alpn.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
            Arc::new(with_alpn)
        } else {
            config
        };
        self.tls = Some(config);
        self
    }

    /// The TLS configuration set by [`tls`](Self::tls), its ALPN list filled in.
    ///
    /// # Example
    /// ```
    /// assert!(ssekit_http::server::ServeOptions::default().tls_config().is_none());
    /// ```
    #[cfg(feature = "rustls")]
    pub fn tls_config(&self) -> Option<&Arc<rustls::ServerConfig>> {
        self.tls.as_ref()
    }

    /// A hyper-util connection builder with these options (HTTP/1.1 and HTTP/2, vectored
    /// writes), spawning HTTP/2 streams on `executor` and keeping time with `timer`: what a
    /// transport's `serve_with` serves each connection with.
    ///
    /// # Example
    /// ```
    /// # fn doc(timer: impl hyper::rt::Timer + Clone + Send + Sync + 'static) {
    /// #[derive(Clone)]
    /// struct Spawn;
    /// impl<F: std::future::Future<Output = ()> + Send + 'static> hyper::rt::Executor<F> for Spawn {
    ///     fn execute(&self, future: F) { std::thread::spawn(move || futures_lite::future::block_on(future)); }
    /// }
    /// let builder = ssekit_http::server::ServeOptions::default().connection_builder(Spawn, timer);
    /// assert!(builder.is_http2_available());
    /// # }
    /// ```
    pub fn connection_builder<E, T>(
        &self,
        executor: E,
        timer: T,
    ) -> hyper_util::server::conn::auto::Builder<E>
    where
        T: hyper::rt::Timer + Clone + Send + Sync + 'static,
    {
        let mut builder = hyper_util::server::conn::auto::Builder::new(executor);
        let mut http1 = builder.http1();
        // hyper's one `max_buf_size` bounds both the read buffer (so the request head) and
        // the write queue: it is set for the head, and `serve_with` keeps a response's
        // unsent bytes within the write buffer itself (see `serve::Watch`).
        http1
            .timer(timer.clone())
            .writev(true)
            .max_buf_size(self.write_buffer.max(self.max_request_head))
            .header_read_timeout(self.header_read_timeout);
        if let Some(max) = self.max_headers {
            http1.max_headers(max);
        }
        builder
            .http2()
            .timer(timer)
            .max_send_buf_size(self.write_buffer)
            .max_header_list_size(u32::try_from(self.max_request_head).unwrap_or(u32::MAX))
            .max_concurrent_streams(self.max_concurrent_streams);
        builder
    }
}
