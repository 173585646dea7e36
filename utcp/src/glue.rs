//! [`transport_module!`](crate::transport_module): a transport's `utcp` module, written once.

/// Expands to the body of a transport's `utcp` module: every item of this crate, with the
/// generic ones ([`SseProvider`](crate::SseProvider), [`ProviderSource`](crate::ProviderSource),
/// [`ToolCall`](crate::ToolCall), [`Discovery`](crate::Discovery), [`discover`](crate::discover))
/// named for the transport's [`HttpIo`](crate::HttpIo) `$io`, and a `ToolExt` trait whose
/// `tool.sse_provider()` is [`Tool::sse_provider_for`](crate::Tool::sse_provider_for) on
/// `$io`, so that the transport need not be named. `$krate` is the transport crate's name,
/// for the examples. `ssekit_hyper::utcp` and `ssekit_smol::utcp` are this.
///
/// # Example
/// In a transport crate `my_transport` whose [`HttpIo`](crate::HttpIo) is `MyHttp` (a stub
/// here, whose requests never run):
/// ```
/// # use ssekit_http::{client::{Item, RequestSpec}, Error};
/// # use ssekit_utcp::HttpIo;
/// #[derive(Clone)]
/// pub struct MyHttp;
/// impl HttpIo for MyHttp {
///     // ...
/// #   const SCHEMES: &'static [&'static str] = &["http"];
/// #   type Events = ();
/// #   fn new() -> Result<Self, Error> { Ok(MyHttp) }
/// #   fn events(&self, _: RequestSpec) {}
/// #   async fn next(_: &mut ()) -> Option<Result<Item, Error>> { None }
/// #   async fn request(&self, _: http::Request<bytes::Bytes>) -> Result<http::Response<bytes::Bytes>, Error> { unreachable!() }
/// #   type Runtime = Stopped;
/// #   fn runtime(&self) -> &Stopped { &Stopped }
/// }
/// # #[derive(Clone)] pub struct Stopped;
/// # impl ssekit_http::runtime::Runtime for Stopped {
/// #     type Sleep = std::future::Pending<()>;
/// #     fn now(&self) -> ssekit::Instant { ssekit::Instant::ZERO }
/// #     fn sleep_until(&self, _: ssekit::Instant) -> Self::Sleep { std::future::pending() }
/// #     fn spawn<F: std::future::Future<Output = ()> + Send + 'static>(&self, _: F) {}
/// # }
///
/// pub mod utcp {
///     ssekit_utcp::transport_module!(my_transport, crate::MyHttp);
/// }
///
/// fn main() -> Result<(), ssekit_utcp::Error> {
///     let provider = utcp::SseProvider::from_json(r#"{"name":"n","provider_type":"sse","url":"http://127.0.0.1:1/e"}"#)?;
///     assert_eq!(provider.name, "n");
///     Ok(())
/// }
/// ```
#[macro_export]
macro_rules! transport_module {
    ($krate:ident, $io:ty) => {
        pub use $crate::*;

        /// A UTCP SSE provider whose calls run on this transport (see
        /// [`ssekit_utcp::SseProvider`]).
        ///
        /// # Example
        /// ```
        #[doc = concat!("let p = ", stringify!($krate), r##"::utcp::SseProvider::from_json(r#"{"name":"n","provider_type":"sse","url":"http://127.0.0.1:1/e"}"#)?;"##)]
        /// assert_eq!(p.name, "n");
        /// # Ok::<(), ssekit_http::Error>(())
        /// ```
        pub type SseProvider = $crate::SseProvider<$io>;

        /// [`Tool::sse_provider_for`](ssekit_utcp::Tool::sse_provider_for) on this
        /// transport, without naming it: with `use` of this module's items (`*`, or this
        /// trait), `tool.sse_provider()` is the tool's provider as an [`SseProvider`].
        /// Implemented for [`Tool`](ssekit_utcp::Tool).
        ///
        /// # Example
        /// ```
        #[doc = concat!("use ", stringify!($krate), "::utcp::*;")]
        ///
        /// let tool = Tool::from_value(&serde_json::json!({"name": "t",
        ///     "tool_call_template": {"name": "p", "call_template_type": "sse", "url": "http://127.0.0.1:1/e"}}))?;
        /// // No turbofish and no annotation: the transport is this module's.
        /// let provider = tool.sse_provider().transpose()?;
        /// assert_eq!(provider.map(|p| p.url), Some("http://127.0.0.1:1/e".to_owned()));
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        pub trait ToolExt {
            /// The tool's provider as an [`SseProvider`] on this transport: `None` when it
            /// has none or it is not an SSE one (see
            /// [`Tool::sse_provider_for`](ssekit_utcp::Tool::sse_provider_for), which also
            /// says what to check before resolving a discovered provider's `$VARIABLES`).
            ///
            /// # Example
            /// See [`ToolExt`].
            fn sse_provider(&self) -> Option<Result<SseProvider, Error>>;
        }

        impl ToolExt for $crate::Tool {
            fn sse_provider(&self) -> Option<Result<SseProvider, Error>> {
                self.sse_provider_for::<$io>()
            }
        }

        /// One provider connection on this transport (see [`ssekit_utcp::ProviderSource`]).
        ///
        /// # Example
        /// ```
        #[doc = concat!("fn read(source: ", stringify!($krate), "::utcp::ProviderSource) {")]
        ///     let events = source.events();
        /// #   drop(events);
        /// }
        /// ```
        pub type ProviderSource = $crate::ProviderSource<$io>;

        /// A tool call on this transport (see [`ssekit_utcp::ToolCall`]).
        ///
        /// # Example
        /// ```
        #[doc = concat!("fn read(call: ", stringify!($krate), "::utcp::ToolCall) {")]
        ///     let outputs = call.outputs();
        /// #   drop(outputs);
        /// }
        /// ```
        pub type ToolCall = $crate::ToolCall<$io>;

        /// Discovery on this transport (see [`ssekit_utcp::Discovery`]).
        ///
        /// # Example
        /// ```
        #[doc = concat!("let discovery = ", stringify!($krate), "::utcp::Discovery::new().max_size(64 * 1024);")]
        /// # let _ = discovery;
        /// ```
        pub type Discovery = $crate::Discovery<$io>;

        /// Fetches and parses the manual at `/utcp` on the domain of `provider_url`, on this
        /// transport (see [`ssekit_utcp::discover`]).
        ///
        /// # Example
        /// ```
        #[doc = concat!("let manual = ", stringify!($krate), "::utcp::discover(\"http://127.0.0.1:1/stream\"); // await it")]
        /// # drop(manual);
        /// ```
        pub async fn discover(provider_url: &str) -> Result<Manual, DiscoveryError> {
            $crate::discover::<$io>(provider_url).await
        }
    };
}
