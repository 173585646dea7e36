//! [`ProxyConnector`]: hyper-util's TCP connector, through an HTTP proxy's `CONNECT` tunnel
//! where the [`Proxy`] says so (the IO-free half is `ssekit_http::proxy`).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use http::Uri;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioIo;
use ssekit_http::proxy::{connect_request, ConnectAnswer, Proxy, ProxyServer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::{BoxError, Error};

/// A TCP connector that reaches each host directly or through the HTTP proxy its
/// [`Proxy`] names for it, by a `CONNECT` tunnel (for `https://` and `http://` alike: TLS
/// and HTTP then run through the tunnel as they would to the server). The transport's
/// [`HttpClient`](crate::client::HttpClient) is built on it; make one with
/// [`ClientOptions`](crate::client::ClientOptions).
///
/// # Example
/// ```
/// use ssekit_http::proxy::Proxy;
/// let connector = ssekit_hyper::client::ProxyConnector::new(Proxy::all("http://proxy:3128")?);
/// # let _ = connector; Ok::<(), ssekit_hyper::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct ProxyConnector {
    http: HttpConnector,
    proxy: Arc<Proxy>,
}

impl ProxyConnector {
    /// Connects through `proxy` where it applies, directly elsewhere (TCP_NODELAY, a 10 s
    /// connect timeout).
    ///
    /// # Example
    /// See [`ProxyConnector`].
    pub fn new(proxy: Proxy) -> Self {
        let mut http = HttpConnector::new();
        http.enforce_http(false);
        http.set_nodelay(true);
        http.set_connect_timeout(Some(std::time::Duration::from_secs(10)));
        ProxyConnector {
            http,
            proxy: Arc::new(proxy),
        }
    }
}

type Connecting = Pin<Box<dyn Future<Output = Result<TokioIo<TcpStream>, BoxError>> + Send>>;

impl tower_service::Service<Uri> for ProxyConnector {
    type Response = TokioIo<TcpStream>;
    type Error = BoxError;
    type Future = Connecting;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.http.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, dst: Uri) -> Connecting {
        let Some(server) = self.proxy.for_uri(&dst).cloned() else {
            let direct = self.http.call(dst);
            return Box::pin(async move { direct.await.map_err(Into::into) });
        };
        let https = dst.scheme_str() == Some("https");
        let host = dst
            .host()
            .unwrap_or_default()
            .trim_matches(['[', ']'])
            .to_owned();
        let port = dst.port_u16().unwrap_or(if https { 443 } else { 80 });
        let to_proxy = Uri::builder()
            .scheme("http")
            .authority(server.authority())
            .path_and_query("/")
            .build();
        let to_proxy = match to_proxy {
            Ok(uri) => self.http.call(uri),
            Err(e) => return Box::pin(async move { Err(e.into()) }),
        };
        Box::pin(async move {
            let mut io = to_proxy.await?;
            tunnel(io.inner_mut(), &server, &host, port).await?;
            Ok(io)
        })
    }
}

/// Asks the proxy on `tcp` for a tunnel to `host:port` and reads its answer: `Ok` when the
/// tunnel is open, the proxy's refusal (status, headers, body start) otherwise.
async fn tunnel(
    tcp: &mut TcpStream,
    server: &ProxyServer,
    host: &str,
    port: u16,
) -> Result<(), Error> {
    tcp.write_all(&connect_request(server, host, port)).await?;
    let mut answer = ConnectAnswer::default();
    let mut buf = [0u8; 1024];
    loop {
        let n = tcp.read(&mut buf).await?;
        if n == 0 {
            return Err(answer.closed(server));
        }
        if answer.read(buf.get(..n).unwrap_or_default())? {
            return Ok(());
        }
    }
}
