//! `--runtime hyper|smol`: which transport serves the demo app and carries `tail`'s stream.
//! Everything else (the app's routes, `tail`'s printing and validation) is written once;
//! only the listener, the HTTP server and the event source differ.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use clap::ValueEnum;
use ssekit_http::client::Item;
use ssekit_http::runtime::Runtime;
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
    /// `smol::block_on` (tasks on ssekit-smol's executor, a thread per core).
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

    /// Serves the demo app on `listener` until SIGTERM or SIGINT, then shuts down
    /// gracefully (see [`graceful`]). With `store` (a `redis://` URL), the app keeps its
    /// sessions, calls and broadcast there. Must run under [`block_on`](Self::block_on) of
    /// the same runtime.
    /// `announce` runs once everything is ready (the store connected), just before the
    /// first connection is accepted.
    pub async fn serve(
        self,
        listener: std::net::TcpListener,
        mut settings: crate::app::Settings,
        around: Around,
        announce: impl FnOnce(),
    ) -> std::io::Result<()> {
        let Around {
            store,
            drain,
            options,
            metrics,
        } = around;
        let store = store.as_deref();
        listener.set_nonblocking(true)?;
        let stop = stop_signal()?;
        match self {
            RuntimeName::Hyper => {
                let runtime = ssekit_hyper::runtime::Tokio::default();
                if let Some(url) = store {
                    settings.store = Some(redis_store(url, runtime).await?);
                }
                let listener = tokio::net::TcpListener::from_std(listener)?;
                if let Some((at, handle)) = metrics {
                    at.set_nonblocking(true)?;
                    let at = tokio::net::TcpListener::from_std(at)?;
                    crate::operate::serve_metrics(&runtime, at, handle);
                }
                let app = crate::app::App::<ssekit_hyper::runtime::Tokio>::new(settings);
                announce();
                let serving =
                    |stop| ssekit_hyper::server::serve_with(listener, app.clone(), stop, options);
                graceful(&app, runtime, stop, drain, serving).await
            }
            RuntimeName::Smol => {
                let runtime = ssekit_smol::runtime::Smol::default();
                if let Some(url) = store {
                    settings.store = Some(redis_store(url, runtime).await?);
                }
                let listener = smol::net::TcpListener::try_from(listener)?;
                if let Some((at, handle)) = metrics {
                    at.set_nonblocking(true)?;
                    let at = smol::net::TcpListener::try_from(at)?;
                    crate::operate::serve_metrics(&runtime, at, handle);
                }
                let app = crate::app::App::<ssekit_smol::runtime::Smol>::new(settings);
                announce();
                let serving =
                    |stop| ssekit_smol::server::serve_with(listener, app.clone(), stop, options);
                graceful(&app, runtime, stop, drain, serving).await
            }
        }
    }
}

/// Connects to the Redis store at `url` (its password never printed).
/// What `serve` runs beside the app: the shared store, the drain time, the connection options
/// and the metrics listener.
pub struct Around {
    /// The shared store's URL (`--store`).
    pub store: Option<String>,
    /// How long running tool calls get on SIGTERM (`--drain-timeout`).
    pub drain: Duration,
    /// HTTPS or not, and the connection limits.
    pub options: ssekit_http::server::ServeOptions,
    /// Where `/metrics` is served, and what it renders (`--metrics-addr`).
    pub metrics: Option<(
        std::net::TcpListener,
        metrics_exporter_prometheus::PrometheusHandle,
    )>,
}

async fn redis_store<R: Runtime>(
    url: &str,
    runtime: R,
) -> std::io::Result<std::sync::Arc<dyn ssekit_http::store::Store>> {
    match ssekit_redis::RedisStore::connect(url, runtime).await {
        Ok(store) => {
            tracing::info!(target: "ssekit::serve", store = %store.url(), "connected to the shared store");
            Ok(std::sync::Arc::new(store))
        }
        Err(e) => Err(std::io::Error::other(e.to_string())),
    }
}

/// A future that completes at the first SIGTERM or SIGINT (runtime-neutral).
fn stop_signal() -> std::io::Result<Pin<Box<dyn Future<Output = ()> + Send>>> {
    use async_signal::{Signal, Signals};
    use futures_util::StreamExt;
    let mut signals = Signals::new([Signal::Term, Signal::Int])?;
    Ok(Box::pin(async move {
        if let Some(Ok(signal)) = signals.next().await {
            tracing::info!(target: "ssekit::serve", ?signal, "shutting down: no new connections, draining");
        }
    }))
}

/// Runs `serving` (a `serve_with` given the stop future) until `stop`; then the listener
/// closes (no new connections: the balancer sends them to other instances), new ORS calls
/// get 503, running ones get `drain` to finish (their results go to the store), every open
/// stream ends after `retry: 250`, and this returns once the connections have closed, or a
/// few seconds later.
async fn graceful<R, S, F>(
    app: &crate::app::App<R>,
    runtime: R,
    stop: Pin<Box<dyn Future<Output = ()> + Send>>,
    drain: Duration,
    serving: S,
) -> std::io::Result<()>
where
    R: Runtime,
    S: FnOnce(Pin<Box<dyn Future<Output = ()> + Send>>) -> F,
    F: Future<Output = std::io::Result<()>>,
{
    let (stopping, stopped) = async_channel::bounded::<()>(1);
    let served = serving(Box::pin(async move {
        let _ = stopped.recv().await;
    }));
    let shutdown = async move {
        stop.await;
        stopping.close();
        let cut = app.shutdown(drain).await;
        tracing::info!(target: "ssekit::serve", cut, "streams ended; tool calls still running were cut");
        // Connections close as their streams end; do not wait for ever for the rest.
        runtime.sleep(Duration::from_secs(5)).await;
        Ok(())
    };
    futures_util::future::select(Box::pin(served), Box::pin(shutdown))
        .await
        .factor_first()
        .0
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
