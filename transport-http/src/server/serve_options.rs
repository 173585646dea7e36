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
/// (or per HTTP/2 stream), header limits and the time a client has to send its request head.
///
/// # Example
/// ```
/// use std::time::Duration;
/// let options = ssekit_http::server::ServeOptions::default()
///     .write_buffer(16 << 10)
///     .max_headers(64)
///     .header_read_timeout(Duration::from_secs(10))
///     .max_concurrent_streams(256);
/// assert_eq!(options.write_buffer_size(), 16 << 10);
/// ```
#[derive(Clone, Debug)]
#[must_use]
pub struct ServeOptions {
    write_buffer: usize,
    max_headers: Option<usize>,
    header_read_timeout: Option<Duration>,
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
            max_concurrent_streams: Some(200),
            #[cfg(feature = "rustls")]
            tls: None,
        }
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

    /// How long a client has to send its HTTP/1.1 request head (default 30 s; `None`: no
    /// limit).
    ///
    /// # Example
    /// See [`ServeOptions`].
    pub fn header_read_timeout(mut self, timeout: impl Into<Option<Duration>>) -> Self {
        self.header_read_timeout = timeout.into();
        self
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
        http1
            .timer(timer.clone())
            .writev(true)
            .max_buf_size(self.write_buffer)
            .header_read_timeout(self.header_read_timeout);
        if let Some(max) = self.max_headers {
            http1.max_headers(max);
        }
        builder
            .http2()
            .timer(timer)
            .max_send_buf_size(self.write_buffer)
            .max_concurrent_streams(self.max_concurrent_streams);
        builder
    }
}
