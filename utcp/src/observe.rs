//! What the provider tells an operator through `tracing` (feature `tracing`): a span per
//! tool call (`utcp_call`: `tool`, `provider`, `url`), `debug` events for discovery and each
//! call, `warn` for a call that failed or a token refresh that did not work. Without the
//! feature all of it compiles to nothing.

/// A `tracing` event at the given level; nothing without the `tracing` feature (the
/// arguments are not evaluated then, so they must not have side effects).
macro_rules! log {
    ($level:ident, $($arg:tt)+) => {{
        #[cfg(feature = "tracing")]
        {
            ::tracing::$level!($($arg)+);
        }
    }};
}
pub(crate) use log;

use std::future::Future;

use crate::call::Outputs;

/// `url` as logs show it: without userinfo, query or fragment (where credentials and
/// inputs go).
#[cfg(any(test, feature = "tracing"))]
pub(crate) fn shown_url(url: &str) -> String {
    let end = url.find(['?', '#']).unwrap_or(url.len());
    let url = &url[..end];
    match url.split_once("://") {
        Some((scheme, rest)) => {
            let authority_end = rest.find('/').unwrap_or(rest.len());
            match rest[..authority_end].rfind('@') {
                Some(at) => format!("{scheme}://{}", &rest[at + 1..]),
                None => url.to_owned(),
            }
        }
        None => url.to_owned(),
    }
}

/// The span of one tool call, `utcp_call`; zero-sized without `tracing`.
#[derive(Clone, Debug)]
pub(crate) struct CallSpan {
    #[cfg(feature = "tracing")]
    span: tracing::Span,
}

impl CallSpan {
    /// The span of a call to `tool` of `provider`, at `url` (shown without credentials).
    pub(crate) fn new(tool: &str, provider: &str, url: &str) -> Self {
        #[cfg(feature = "tracing")]
        {
            let url = shown_url(url);
            CallSpan {
                span: tracing::info_span!("utcp_call", tool, provider, url = %url),
            }
        }
        #[cfg(not(feature = "tracing"))]
        {
            let _ = (tool, provider, url);
            CallSpan {}
        }
    }

    /// `future`, polled inside the span.
    pub(crate) fn instrument<F: Future>(
        &self,
        future: F,
    ) -> impl Future<Output = F::Output> + use<F> {
        #[cfg(feature = "tracing")]
        {
            tracing::Instrument::instrument(future, self.span.clone())
        }
        #[cfg(not(feature = "tracing"))]
        {
            future
        }
    }

    /// `outputs`, polled inside the span.
    pub(crate) fn outputs(&self, outputs: Outputs) -> Outputs {
        #[cfg(feature = "tracing")]
        {
            Box::pin(InSpan {
                span: self.span.clone(),
                inner: outputs,
            })
        }
        #[cfg(not(feature = "tracing"))]
        {
            outputs
        }
    }
}

/// A stream polled inside a span.
#[cfg(feature = "tracing")]
struct InSpan<S> {
    span: tracing::Span,
    inner: S,
}

#[cfg(feature = "tracing")]
impl<S: futures_core::Stream + Unpin> futures_core::Stream for InSpan<S> {
    type Item = S::Item;

    fn poll_next(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<S::Item>> {
        let this = self.get_mut();
        let _entered = this.span.enter();
        std::pin::Pin::new(&mut this.inner).poll_next(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::shown_url;

    #[test]
    fn logged_urls_hold_no_credentials_or_inputs() {
        assert_eq!(
            shown_url("https://u:p@api.example.com/x?key=s3cret#f"),
            "https://api.example.com/x"
        );
        assert_eq!(shown_url("http://h/e"), "http://h/e");
        assert_eq!(shown_url("h/e?q=1"), "h/e");
    }
}
