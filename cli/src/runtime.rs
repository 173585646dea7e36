//! `--runtime hyper|smol`: which transport serves the demo app and carries `tail`'s stream.
//! Everything else (the app's routes, `tail`'s printing and validation) is written once;
//! only the listener, the HTTP server and the event source differ.

use std::future::Future;

use clap::ValueEnum;
use ssekit_http::client::Item;
use ssekit_http::Error;

/// The transport (and its async runtime).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum RuntimeName {
    /// `ssekit-hyper`: hyper on tokio.
    #[default]
    Hyper,
    /// `ssekit-smol`: hyper on smol and async-io, no tokio runtime.
    Smol,
}

/// A stream of `tail`'s items, from either transport's `EventSource`.
pub type Items = std::pin::Pin<Box<dyn futures_util::Stream<Item = Result<Item, Error>> + Send>>;

impl RuntimeName {
    /// Runs `future` to its end on this runtime: tokio's multi-threaded scheduler, or
    /// `smol::block_on` (tasks on smol's global executor).
    pub fn block_on<F: Future>(self, future: F) -> std::io::Result<F::Output> {
        match self {
            RuntimeName::Hyper => Ok(tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()?
                .block_on(future)),
            RuntimeName::Smol => Ok(smol::block_on(future)),
        }
    }

    /// Serves the demo app on `listener` until the listener fails. Must run under
    /// [`block_on`](Self::block_on) of the same runtime.
    pub async fn serve(
        self,
        listener: std::net::TcpListener,
        settings: crate::app::Settings,
    ) -> std::io::Result<()> {
        listener.set_nonblocking(true)?;
        match self {
            RuntimeName::Hyper => {
                let listener = tokio::net::TcpListener::from_std(listener)?;
                let app = crate::app::App::<ssekit_hyper::runtime::Tokio>::new(settings);
                ssekit_hyper::server::serve(listener, app).await
            }
            RuntimeName::Smol => {
                let listener = smol::net::TcpListener::try_from(listener)?;
                let app = crate::app::App::<ssekit_smol::runtime::Smol>::new(settings);
                ssekit_smol::server::serve(listener, app).await
            }
        }
    }
}

/// Builds this runtime's `EventSource` for `method url` with `body`, configures it with
/// `$configure` (a macro, since the two builders are distinct types with the same methods),
/// and returns its items.
macro_rules! event_source {
    ($runtime:expr, $method:expr, $url:expr, $body:expr, |$source:ident| $configure:expr) => {
        match $runtime {
            $crate::runtime::RuntimeName::Hyper => {
                let $source = ssekit_hyper::client::EventSource::new($method, $url, $body)?;
                let items: $crate::runtime::Items = ($configure).stream();
                items
            }
            $crate::runtime::RuntimeName::Smol => {
                let $source = ssekit_smol::client::EventSource::new($method, $url, $body)?;
                let items: $crate::runtime::Items = ($configure).stream();
                items
            }
        }
    };
}
pub(crate) use event_source;
