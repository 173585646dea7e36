//! HTTP proxies for the clients, IO-free: which proxy a URL goes through ([`Proxy`], from the
//! environment's `HTTPS_PROXY`, `HTTP_PROXY`, `ALL_PROXY` and `NO_PROXY`, as curl reads them,
//! or set explicitly), the `CONNECT` request that opens a tunnel through it
//! ([`connect_request`]), and the proxy's answer ([`connect_response`]). Both transports
//! tunnel every proxied connection with `CONNECT` (`https://` and `http://` alike), then
//! speak TLS and HTTP through the tunnel as they would to the server.
//!
//! ```text
//!  URL ─▶ Proxy::for_uri ─▶ TCP to the proxy ─▶ connect_request ─▶ connect_response (2xx) ─▶ TLS? ─▶ HTTP
//! ```

use bytes::Bytes;
use http::Uri;

use crate::auth::basic_authorization;
use crate::{Error, RequestError, RequestErrorKind};

/// Which proxy each URL goes through: one for `https://`, one for `http://`, and the hosts
/// that go direct (`NO_PROXY`).
///
/// # Example
/// ```
/// use ssekit_http::proxy::Proxy;
/// let proxy = Proxy::all("http://proxy.internal:3128")?.no_proxy("localhost,.corp.example");
/// let via = proxy.for_uri(&"https://api.example.com/v1".parse()?).unwrap();
/// assert_eq!(via.authority(), "proxy.internal:3128");
/// assert!(proxy.for_uri(&"https://git.corp.example/".parse()?).is_none());
/// assert!(proxy.for_uri(&"http://localhost:8080/".parse()?).is_none());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Proxy {
    https: Option<ProxyServer>,
    http: Option<ProxyServer>,
    no_proxy: NoProxy,
    /// Loopback hosts go direct (proxies from the environment, as Go's clients do).
    direct_loopback: bool,
}

/// A proxy server: where to connect, and the `Proxy-Authorization` its URL's user info
/// gives (`http://user:password@host:port`, sent as Basic). Its `Debug` hides the
/// credentials.
///
/// # Example
/// ```
/// let proxy = ssekit_http::proxy::Proxy::all("http://me:s3cret@10.0.0.1:8080")?;
/// let server = proxy.for_uri(&"https://example.com".parse()?).unwrap();
/// assert_eq!((server.host(), server.port()), ("10.0.0.1", 8080));
/// assert!(!format!("{server:?}").contains("s3cret"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct ProxyServer {
    host: String,
    port: u16,
    authorization: Option<String>,
}

impl std::fmt::Debug for ProxyServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProxyServer")
            .field("host", &self.host)
            .field("port", &self.port)
            .field("authorization", &self.authorization.as_ref().map(|_| "***"))
            .finish()
    }
}

impl ProxyServer {
    /// Parses `http://[user:password@]host[:port]` (the port defaults to 80; a URL without
    /// a scheme is taken as `http://`, as curl does).
    ///
    /// # Example
    /// ```
    /// let server = ssekit_http::proxy::ProxyServer::parse("proxy:3128")?;
    /// assert_eq!(server.authority(), "proxy:3128");
    /// assert!(ssekit_http::proxy::ProxyServer::parse("socks5://proxy:1080").is_err());
    /// # Ok::<(), ssekit_http::Error>(())
    /// ```
    pub fn parse(url: &str) -> Result<ProxyServer, Error> {
        let url = url.trim();
        let with_scheme = if url.contains("://") {
            url.to_owned()
        } else {
            format!("http://{url}")
        };
        let bad = |why: &str| {
            Error::Request(RequestError::new(
                RequestErrorKind::ProxyUrl,
                format!("proxy URL {}: {why}", crate::redacted_url(&with_scheme)),
            ))
        };
        let uri: Uri = with_scheme.parse().map_err(|_| bad("not a URL"))?;
        if uri.scheme_str() != Some("http") {
            return Err(bad("only http:// proxies are supported (CONNECT tunnels)"));
        }
        let authority = uri.authority().ok_or_else(|| bad("no host"))?;
        let host = authority.host().trim_matches(['[', ']']).to_owned();
        if host.is_empty() {
            return Err(bad("no host"));
        }
        let authorization = authority
            .as_str()
            .rsplit_once('@')
            .map(|(userinfo, _)| basic_authorization(&percent_decode(userinfo)));
        Ok(ProxyServer {
            host,
            port: authority.port_u16().unwrap_or(80),
            authorization,
        })
    }

    /// The host to connect to.
    ///
    /// # Example
    /// See [`ProxyServer`].
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The port to connect to.
    ///
    /// # Example
    /// See [`ProxyServer`].
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `host:port` (an IPv6 host in brackets).
    ///
    /// # Example
    /// See [`ProxyServer::parse`].
    pub fn authority(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }
}

/// `%XX` escapes of a URL's user info decoded (a password may hold `@` or `:` that way).
fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| char::from(b).to_digit(16);
        match (bytes[i], bytes.get(i + 1), bytes.get(i + 2)) {
            (b'%', Some(&h), Some(&l)) if hex(h).is_some() && hex(l).is_some() => {
                let value = hex(h).unwrap_or(0) * 16 + hex(l).unwrap_or(0);
                out.push(u8::try_from(value).unwrap_or(b'?'));
                i += 3;
            }
            (b, ..) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The hosts that go direct: `*` (all), a host (and its subdomains), `.domain` (its
/// subdomains and itself), an IP address; `host:port` entries match that port only.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct NoProxy {
    all: bool,
    entries: Vec<(String, Option<u16>)>,
}

impl NoProxy {
    fn parse(list: &str) -> NoProxy {
        let mut no_proxy = NoProxy::default();
        for entry in list.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            if entry == "*" {
                no_proxy.all = true;
                continue;
            }
            let entry = entry.to_ascii_lowercase();
            let (host, port) = match entry.rsplit_once(':') {
                Some((host, port)) if !host.contains(':') || host.ends_with(']') => {
                    (host.to_owned(), port.parse().ok())
                }
                _ => (entry.clone(), None),
            };
            let host = host.trim_matches(['[', ']']).trim_start_matches('*');
            no_proxy
                .entries
                .push((host.trim_start_matches('.').to_owned(), port));
        }
        no_proxy
    }

    fn matches(&self, host: &str, port: u16) -> bool {
        if self.all {
            return true;
        }
        let host = host.trim_matches(['[', ']']).to_ascii_lowercase();
        self.entries.iter().any(|(entry, entry_port)| {
            entry_port.is_none_or(|p| p == port)
                && (host == *entry
                    || host
                        .strip_suffix(entry.as_str())
                        .is_some_and(|rest| rest.ends_with('.')))
        })
    }
}

impl Proxy {
    /// No proxy: every URL goes direct.
    ///
    /// # Example
    /// ```
    /// assert!(ssekit_http::proxy::Proxy::none().for_uri(&"https://example.com".parse().unwrap()).is_none());
    /// ```
    pub fn none() -> Proxy {
        Proxy::default()
    }

    /// The environment's proxies, as curl reads them: `https_proxy`/`HTTPS_PROXY` for
    /// `https://`, `http_proxy` (lower case only, as curl: `HTTP_PROXY` can be set by a
    /// CGI request's `Proxy:` header) for `http://`, `all_proxy`/`ALL_PROXY` for either when
    /// the other is unset, and `no_proxy`/`NO_PROXY`. Unparsable values are ignored.
    /// Loopback hosts (`localhost`, `127.0.0.0/8`, `::1`) always go direct, as in Go's
    /// clients: a proxy elsewhere cannot reach this machine's loopback.
    ///
    /// # Example
    /// ```
    /// let proxy = ssekit_http::proxy::Proxy::from_env();
    /// # let _ = proxy;
    /// ```
    pub fn from_env() -> Proxy {
        Proxy::from_vars(|name| std::env::var(name).ok().filter(|v| !v.trim().is_empty()))
    }

    /// As [`from_env`](Self::from_env), reading the variables through `var` (for tests, or
    /// a configuration file of your own).
    ///
    /// # Example
    /// ```
    /// use ssekit_http::proxy::Proxy;
    /// let vars = |name: &str| match name {
    ///     "HTTPS_PROXY" => Some("http://proxy:3128".to_owned()),
    ///     "NO_PROXY" => Some("127.0.0.1,localhost".to_owned()),
    ///     _ => None,
    /// };
    /// let proxy = Proxy::from_vars(vars);
    /// assert!(proxy.for_uri(&"https://example.com".parse().unwrap()).is_some());
    /// assert!(proxy.for_uri(&"http://example.com".parse().unwrap()).is_none());
    /// assert!(proxy.for_uri(&"https://127.0.0.1:8443".parse().unwrap()).is_none());
    /// ```
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Proxy {
        let first = |names: &[&str]| names.iter().find_map(|name| var(name));
        let all = first(&["all_proxy", "ALL_PROXY"]);
        let server = |value: Option<String>| value.and_then(|v| ProxyServer::parse(&v).ok());
        let proxy = Proxy {
            https: server(first(&["https_proxy", "HTTPS_PROXY"]).or_else(|| all.clone())),
            http: server(first(&["http_proxy"]).or(all)),
            no_proxy: NoProxy::parse(&first(&["no_proxy", "NO_PROXY"]).unwrap_or_default()),
            direct_loopback: true,
        };
        if proxy.https.is_none() && proxy.http.is_none() {
            return Proxy::none();
        }
        proxy
    }

    /// Every URL (`http://` and `https://`) through the proxy at `url`.
    ///
    /// # Example
    /// See [`Proxy`].
    pub fn all(url: &str) -> Result<Proxy, Error> {
        let server = ProxyServer::parse(url)?;
        Ok(Proxy {
            https: Some(server.clone()),
            http: Some(server),
            no_proxy: NoProxy::default(),
            direct_loopback: false,
        })
    }

    /// These hosts go direct (a `NO_PROXY` list: `*`, hosts, `.domains`, IPs,
    /// `host:port`), in place of any list set before.
    ///
    /// # Example
    /// See [`Proxy`].
    #[must_use]
    pub fn no_proxy(mut self, list: &str) -> Proxy {
        self.no_proxy = NoProxy::parse(list);
        self
    }

    /// The proxy `uri` goes through, if any.
    ///
    /// # Example
    /// See [`Proxy`].
    pub fn for_uri(&self, uri: &Uri) -> Option<&ProxyServer> {
        let https = uri.scheme_str() == Some("https");
        let server = if https { &self.https } else { &self.http };
        let server = server.as_ref()?;
        let host = uri.host()?;
        let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
        if self.direct_loopback && is_loopback(host) {
            return None;
        }
        (!self.no_proxy.matches(host, port)).then_some(server)
    }
}

/// `localhost` (and its subdomains), `127.0.0.0/8` and `::1`.
fn is_loopback(host: &str) -> bool {
    let host = host.trim_matches(['[', ']']).trim_end_matches('.');
    match host.parse::<std::net::IpAddr>() {
        Ok(ip) => ip.is_loopback(),
        Err(_) => {
            host.eq_ignore_ascii_case("localhost")
                || host.to_ascii_lowercase().ends_with(".localhost")
        }
    }
}

/// The `CONNECT` request that asks `proxy` for a tunnel to `host:port`.
///
/// # Example
/// ```
/// let proxy = ssekit_http::proxy::ProxyServer::parse("http://u:p@proxy:3128")?;
/// let request = ssekit_http::proxy::connect_request(&proxy, "example.com", 443);
/// assert_eq!(request, "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\nProxy-Authorization: Basic dTpw\r\n\r\n");
/// # Ok::<(), ssekit_http::Error>(())
/// ```
pub fn connect_request(proxy: &ProxyServer, host: &str, port: u16) -> Bytes {
    let target = if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    };
    let mut request = format!("CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n");
    if let Some(authorization) = &proxy.authorization {
        request.push_str("Proxy-Authorization: ");
        request.push_str(authorization);
        request.push_str("\r\n");
    }
    request.push_str("\r\n");
    Bytes::from(request)
}

/// The most bytes of a proxy's answer to `CONNECT` that are read.
pub const MAX_CONNECT_RESPONSE: usize = 16 << 10;

/// Reads a proxy's answer to `CONNECT` from the bytes received so far: `Ok(None)` while its
/// head is incomplete, `Ok(Some(n))` when it is a 2xx (the tunnel is open, and the first `n`
/// bytes were the head; a proxy sends nothing after it before the client speaks), and an
/// [`Error::Refused`] with the status, headers and body start when it is not (a `407`
/// wants credentials) or past [`MAX_CONNECT_RESPONSE`] bytes.
///
/// # Example
/// ```
/// use ssekit_http::proxy::connect_response;
/// assert_eq!(connect_response(b"HTTP/1.1 200 Connection est")?, None);
/// assert_eq!(connect_response(b"HTTP/1.1 200 Connection established\r\n\r\n")?, Some(39));
/// let refused = connect_response(b"HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic\r\n\r\n").unwrap_err();
/// assert_eq!(refused.status(), Some(407));
/// # Ok::<(), ssekit_http::Error>(())
/// ```
pub fn connect_response(received: &[u8]) -> Result<Option<usize>, Error> {
    let Some(end) = received.windows(4).position(|w| w == b"\r\n\r\n") else {
        if received.len() > MAX_CONNECT_RESPONSE {
            return Err(RequestError::new(
                RequestErrorKind::Proxy,
                format!(
                    "the proxy's answer to CONNECT has no end of head in {MAX_CONNECT_RESPONSE} bytes"
                ),
            )
            .into());
        }
        return Ok(None);
    };
    let head = String::from_utf8_lossy(&received[..end]);
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or_default();
    let status = status_line
        .strip_prefix("HTTP/1.")
        .and_then(|rest| rest.get(2..5))
        .and_then(|code| code.parse::<u16>().ok())
        .ok_or_else(|| {
            Error::Request(RequestError::new(
                RequestErrorKind::Proxy,
                format!(
                    "the proxy answered CONNECT with {:?}, not an HTTP status line",
                    status_line.chars().take(80).collect::<String>()
                ),
            ))
        })?;
    if (200..300).contains(&status) {
        return Ok(Some(end + 4));
    }
    let mut headers = http::HeaderMap::new();
    for line in lines {
        if let Some((name, value)) = line.split_once(':')
            && let (Ok(name), Ok(value)) = (
                http::HeaderName::from_bytes(name.trim().as_bytes()),
                http::HeaderValue::from_str(value.trim()),
            )
        {
            headers.append(name, value);
        }
    }
    let content_type = headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let body = received.get(end + 4..).unwrap_or_default();
    Err(Error::Refused(
        crate::Refused::new(status, content_type, body).headers(headers),
    ))
}

/// The proxy's answer to `CONNECT`, read as it arrives: a transport feeds it each read
/// ([`read`](Self::read)) until the tunnel is open or refused, and reports a connection the
/// proxy closed first with [`closed`](Self::closed).
///
/// # Example
/// ```
/// use ssekit_http::proxy::{ConnectAnswer, ProxyServer};
/// let proxy = ProxyServer::parse("proxy:3128")?;
/// let mut answer = ConnectAnswer::default();
/// assert!(!answer.read(b"HTTP/1.1 200 OK\r\n")?);
/// assert!(answer.read(b"\r\n")?); // open
/// assert!(ConnectAnswer::default().closed(&proxy).to_string().contains("proxy:3128"));
/// # Ok::<(), ssekit_http::Error>(())
/// ```
#[derive(Debug, Default)]
pub struct ConnectAnswer {
    received: Vec<u8>,
}

impl ConnectAnswer {
    /// Takes `bytes` read from the proxy: `Ok(true)` once the tunnel is open, `Ok(false)`
    /// while the answer's head is incomplete, the refusal (see [`connect_response`]) or an
    /// error for bytes past the head (a proxy sends none before the client speaks).
    ///
    /// # Example
    /// See [`ConnectAnswer`].
    pub fn read(&mut self, bytes: &[u8]) -> Result<bool, Error> {
        self.received.extend_from_slice(bytes);
        match connect_response(&self.received)? {
            None => Ok(false),
            Some(head) if head == self.received.len() => Ok(true),
            Some(_) => Err(RequestError::new(
                RequestErrorKind::Proxy,
                "the proxy sent bytes past its answer to CONNECT",
            )
            .into()),
        }
    }

    /// The error of a proxy that closed the connection before answering.
    ///
    /// # Example
    /// See [`ConnectAnswer`].
    pub fn closed(&self, proxy: &ProxyServer) -> Error {
        Error::Request(RequestError::new(
            RequestErrorKind::Proxy,
            format!(
                "the proxy {} closed the connection before answering CONNECT",
                proxy.authority()
            ),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn uri(s: &str) -> Uri {
        s.parse().unwrap()
    }

    #[test]
    fn no_proxy_lists_match_as_curl_does() {
        let proxy = Proxy::all("proxy:1")
            .unwrap()
            .no_proxy(" localhost , .internal,example.com:8443,10.1.2.3,[::1]");
        for direct in [
            "http://localhost/",
            "https://LOCALHOST:9/",
            "https://a.internal/",
            "https://internal/",
            "https://example.com:8443/",
            "https://10.1.2.3/",
            "http://[::1]:80/",
        ] {
            assert!(proxy.for_uri(&uri(direct)).is_none(), "{direct}");
        }
        for proxied in [
            "https://example.com/",
            "https://notinternal/",
            "https://localhost.evil.com/",
            "https://10.1.2.30/",
            "https://xexample.com:8443/",
        ] {
            assert!(proxy.for_uri(&uri(proxied)).is_some(), "{proxied}");
        }
        let all = Proxy::all("proxy:1").unwrap().no_proxy("*");
        assert!(all.for_uri(&uri("https://example.com/")).is_none());
    }

    #[test]
    fn environment_variables_are_read_as_curl_reads_them() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == name)
                    .map(|(_, v)| (*v).to_owned())
            }
        };
        let p = Proxy::from_vars(env(&[("HTTP_PROXY", "http://cgi:1")]));
        assert!(p.for_uri(&uri("http://x/")).is_none(), "HTTP_PROXY ignored");
        let p = Proxy::from_vars(env(&[
            ("ALL_PROXY", "http://all:1"),
            ("https_proxy", "s:2"),
        ]));
        assert_eq!(p.for_uri(&uri("https://x/")).unwrap().host(), "s");
        assert_eq!(p.for_uri(&uri("http://x/")).unwrap().host(), "all");
        let p = Proxy::from_vars(env(&[("HTTPS_PROXY", "socks5://x:1")]));
        assert_eq!(p, Proxy::none(), "unsupported schemes are ignored");
        let p = Proxy::from_vars(env(&[("ALL_PROXY", "http://all:1")]));
        for loopback in [
            "https://127.0.0.1/",
            "http://127.9.9.9/",
            "https://[::1]/",
            "http://LOCALHOST:1/",
            "http://a.localhost/",
        ] {
            assert!(p.for_uri(&uri(loopback)).is_none(), "{loopback}");
        }
        let explicit = Proxy::all("http://all:1").unwrap();
        assert!(
            explicit.for_uri(&uri("http://127.0.0.1/")).is_some(),
            "set explicitly: proxied"
        );
    }

    #[test]
    fn credentials_become_basic_and_stay_out_of_debug_and_errors() {
        let server = ProxyServer::parse("http://us%40er:p%3Ass@proxy").unwrap();
        // "us@er:p:ss", the user info decoded, in base64.
        assert_eq!(
            server.authorization.as_deref(),
            Some("Basic dXNAZXI6cDpzcw==")
        );
        assert!(!format!("{server:?}").contains("p%3Ass"));
        let err = ProxyServer::parse("ftp://u:secret@proxy").unwrap_err();
        assert!(!err.to_string().contains("secret"), "{err}");
    }

    #[test]
    fn connect_answers_are_read_whole_and_refusals_are_typed() {
        assert_eq!(connect_response(b"").unwrap(), None);
        assert_eq!(
            connect_response(b"HTTP/1.0 200 OK\r\n\r\n").unwrap(),
            Some(19)
        );
        let err = connect_response(b"HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\n\r\nno")
            .unwrap_err();
        let Error::Refused(refused) = err else {
            panic!("{err:?}")
        };
        assert_eq!((refused.status(), refused.body()), (403, "no"));
        assert!(connect_response(b"SSH-2.0-OpenSSH\r\n\r\n").is_err());
        assert!(connect_response(&vec![b'x'; MAX_CONNECT_RESPONSE + 1]).is_err());
    }
}
