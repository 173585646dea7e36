//! [`event_source_builder!`](crate::event_source_builder): the `EventSource` builder
//! methods, written once for every transport.
//!
//! Each transport has its own `EventSource` type (its own `stream()`, and hyper's
//! `client(..)`), and Rust lets only the crate that defines a type give it inherent
//! methods. So the builder is a macro that each transport expands inside its
//! `impl EventSource`: one definition, the same behaviour and docs on both, and examples
//! that name the transport they are shown on.

/// Expands to the builder methods of a transport's `EventSource`: `new`, `get`, `post`,
/// `reconnect`, `header`, `secret_header`, `decoder`, `response_timeout`, `max_redirects` and `on_connect`. The type must
/// have a field `spec: ssekit_http::client::RequestSpec` and an associated function
/// `fn from_spec(spec: RequestSpec) -> Self`; `$krate` is the transport crate's name (for
/// the examples) and `$schemes` the URL schemes it can connect to.
///
/// # Example
/// ```
/// use ssekit_http::client::RequestSpec;
///
/// /// An EventSource of a transport.
/// pub struct EventSource {
///     spec: RequestSpec,
/// }
///
/// impl EventSource {
///     fn from_spec(spec: RequestSpec) -> Self {
///         EventSource { spec }
///     }
///     ssekit_http::event_source_builder!(my_transport, &["http"]);
/// }
///
/// let source = EventSource::get("http://127.0.0.1:1/events")?.header("authorization", "Bearer t")?;
/// assert_eq!(source.spec.uri().path(), "/events");
/// # Ok::<(), ssekit_http::Error>(())
/// ```
#[macro_export]
macro_rules! event_source_builder {
    ($krate:ident, $schemes:expr) => {
        /// A source for `method url` with `body` (sent again, unchanged, on every reconnect).
        ///
        /// # Example
        /// ```
        #[doc = concat!("let source = ", stringify!($krate), "::client::EventSource::new(http::Method::PUT, \"http://127.0.0.1:1/x\", \"{}\")?;")]
        #[doc = concat!("# let _ = source; Ok::<(), ", stringify!($krate), "::Error>(())")]
        /// ```
        pub fn new(
            method: $crate::__private::Method,
            url: &str,
            body: impl Into<$crate::__private::Bytes>,
        ) -> Result<Self, $crate::Error> {
            $crate::client::RequestSpec::new(method, url, body, $schemes).map(Self::from_spec)
        }

        /// `GET url`.
        ///
        /// # Example
        /// ```
        #[doc = concat!("assert!(", stringify!($krate), "::client::EventSource::get(\"not a url\").is_err());")]
        /// ```
        pub fn get(url: &str) -> Result<Self, $crate::Error> {
            Self::new($crate::__private::Method::GET, url, $crate::__private::Bytes::new())
        }

        /// `POST url` with `body`, replayed on every reconnect.
        ///
        /// # Example
        /// ```
        #[doc = concat!("let source = ", stringify!($krate), "::client::EventSource::post(\"http://127.0.0.1:1/call\", \"{}\")?;")]
        #[doc = concat!("# let _ = source; Ok::<(), ", stringify!($krate), "::Error>(())")]
        /// ```
        pub fn post(
            url: &str,
            body: impl Into<$crate::__private::Bytes>,
        ) -> Result<Self, $crate::Error> {
            Self::new($crate::__private::Method::POST, url, body)
        }

        /// Sets the reconnect policy. Headers added with [`header`](Self::header) are kept,
        /// in either order, and win over headers of the same name in `config`. Unless
        /// `config` sets a `jitter_seed`, each stream draws its jitter seed from the OS, so
        /// that clients do not reconnect in lockstep; with one, its delays are exactly that
        /// seed's.
        ///
        /// # Example
        /// ```
        /// use ssekit::client::ReconnectConfig;
        #[doc = concat!("let source = ", stringify!($krate), "::client::EventSource::get(\"http://127.0.0.1:1/\")?")]
        ///     .reconnect(ReconnectConfig::default().max_attempts(Some(3)));
        #[doc = concat!("# let _ = source; Ok::<(), ", stringify!($krate), "::Error>(())")]
        /// ```
        pub fn reconnect(mut self, config: $crate::__private::ReconnectConfig) -> Self {
            self.spec = self.spec.reconnect(config);
            self
        }

        /// Adds a request header, sent on every connection. Names that are not tokens and
        /// values with control characters are refused (no header injection, `Last-Event-ID`
        /// included). Every request asks for `Accept-Encoding: identity`; one set here
        /// replaces it, but a response in a coding other than `identity` still ends the
        /// stream with `Error::ContentEncoding`.
        ///
        /// # Example
        /// ```
        #[doc = concat!("let source = ", stringify!($krate), "::client::EventSource::get(\"http://127.0.0.1:1/\")?")]
        ///     .header("authorization", "Bearer t")?;
        /// assert!(source.header("last-event-id", "1\nid: 2").is_err());
        #[doc = concat!("# Ok::<(), ", stringify!($krate), "::Error>(())")]
        /// ```
        pub fn header(mut self, name: &str, value: &str) -> Result<Self, $crate::Error> {
            self.spec = self.spec.header(name, value)?;
            Ok(self)
        }

        /// Adds a request header that carries a credential (an API key, a token): sent like
        /// [`header`](Self::header), marked sensitive, and dropped by a redirect to another
        /// origin (for the rest of the connection attempt), as `Authorization`, `Cookie`
        /// and `Proxy-Authorization` always are, whoever set them.
        ///
        /// # Example
        /// ```
        #[doc = concat!("let source = ", stringify!($krate), "::client::EventSource::get(\"http://127.0.0.1:1/\")?")]
        ///     .secret_header("x-api-key", "s3cret")?;
        #[doc = concat!("# let _ = source; Ok::<(), ", stringify!($krate), "::Error>(())")]
        /// ```
        pub fn secret_header(mut self, name: &str, value: &str) -> Result<Self, $crate::Error> {
            self.spec = self.spec.secret_header(name, value)?;
            Ok(self)
        }

        /// Sets the decoder's limits and mode.
        ///
        /// # Example
        /// ```
        /// use ssekit::{Config, Limits};
        #[doc = concat!("let source = ", stringify!($krate), "::client::EventSource::get(\"http://127.0.0.1:1/\")?")]
        ///     .decoder(Config::default().limits(Limits::default().max_event(1 << 20)));
        #[doc = concat!("# let _ = source; Ok::<(), ", stringify!($krate), "::Error>(())")]
        /// ```
        pub fn decoder(mut self, config: $crate::__private::Config) -> Self {
            self.spec = self.spec.decoder(config);
            self
        }

        /// How long to wait for the response head of each request: each connection
        /// attempt, and each redirect it follows (default 30 s). A server that accepts the connection and never answers counts as a
        /// network failure, and the policy decides on the retry.
        ///
        /// # Example
        /// ```
        #[doc = concat!("let source = ", stringify!($krate), "::client::EventSource::get(\"http://127.0.0.1:1/\")?")]
        ///     .response_timeout(std::time::Duration::from_secs(5));
        #[doc = concat!("# let _ = source; Ok::<(), ", stringify!($krate), "::Error>(())")]
        /// ```
        pub fn response_timeout(mut self, timeout: std::time::Duration) -> Self {
            self.spec = self.spec.response_timeout(timeout);
            self
        }

        /// How many redirects one connection attempt follows (default 10; 0: none, and a
        /// redirect ends the stream with `Error::Refused`). 303, and 301 or 302 after a
        /// `POST`, become a `GET` without the body; a redirect to another origin drops
        /// `Authorization`, `Cookie`, `Proxy-Authorization`, the headers set with
        /// [`secret_header`](Self::secret_header) and a configured `Host`; one from `https`
        /// to `http`, or past the limit, ends the stream with `Error::Redirect`. Hops follow
        /// each other without a wait. Every reconnect starts from the URL given here.
        ///
        /// # Example
        /// ```
        #[doc = concat!("let source = ", stringify!($krate), "::client::EventSource::get(\"http://127.0.0.1:1/\")?")]
        ///     .max_redirects(3);
        #[doc = concat!("# let _ = source; Ok::<(), ", stringify!($krate), "::Error>(())")]
        /// ```
        pub fn max_redirects(mut self, max: u32) -> Self {
            self.spec = self.spec.max_redirects(max);
            self
        }

        /// Calls `hook` on every request just before it is sent, redirected ones included,
        /// with its absolute URL: refresh a token, or change the body of a resumed call.
        /// After a redirect to another origin, the credential headers are removed from
        /// what the hook returns too.
        ///
        /// # Example
        /// ```
        #[doc = concat!("let source = ", stringify!($krate), "::client::EventSource::get(\"http://127.0.0.1:1/\")?")]
        ///     .on_connect(|req| {
        ///         req.headers_mut().insert("authorization", http::HeaderValue::from_static("Bearer fresh"));
        ///     });
        #[doc = concat!("# let _ = source; Ok::<(), ", stringify!($krate), "::Error>(())")]
        /// ```
        pub fn on_connect(
            mut self,
            hook: impl FnMut(&mut $crate::__private::Request<$crate::__private::Bytes>)
                + Send
                + 'static,
        ) -> Self {
            self.spec = self.spec.on_connect(hook);
            self
        }
    };
}
