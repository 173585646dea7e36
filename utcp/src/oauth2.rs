//! OAuth2 for a provider's `auth`: the client-credentials grant, a token fetched from
//! `token_url` within [`TOKEN_TIMEOUT`] and [`MAX_TOKEN_RESPONSE`].
//!
//! The token request carries the client secret, so `token_url` must be `https`, or plain
//! `http` to a loopback host (`127.0.0.0/8`, `::1`, `localhost`: tests and local
//! development); its scheme must be one the client speaks, as the provider's `url`'s must
//! (`http`, and `https` when the transport has TLS). Anything else is a [`TokenUrlError`],
//! before any request is sent. (The provider's `url` may be plain `http` to any host: its
//! credentials are the caller's to send where they choose; the client secret goes to a
//! `token_url` that a discovered manual can name.)
//!
//! A `token_url` can carry credentials of its own, in its user info (`user:password@`) or
//! its query: errors name it by scheme, host, port and path only ([`shown_url`]).

use std::fmt;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use http::header::AUTHORIZATION;
use http::{HeaderValue, Request, Uri};
use serde::Deserialize;
use serde_json::Value;
use ssekit::Instant;

use super::discovery::{bounded_exchange, origin, Bounded};
use super::{basic_credentials, encode_component, Auth, Redacted};
use crate::{Error, HttpIo};
use ssekit_http::{RequestError, RequestErrorKind};

/// How long an OAuth2 token request may take, connection to last byte.
///
/// # Example
/// ```
/// assert_eq!(ssekit_utcp::TOKEN_TIMEOUT, std::time::Duration::from_secs(30));
/// ```
pub const TOKEN_TIMEOUT: Duration = Duration::from_secs(30);

/// The largest OAuth2 token response read, in bytes.
///
/// # Example
/// ```
/// assert_eq!(ssekit_utcp::MAX_TOKEN_RESPONSE, 64 * 1024);
/// ```
pub const MAX_TOKEN_RESPONSE: usize = 64 << 10;

/// How long before its expiry (`expires_in` in the token response) a token counts as
/// stale: a stream reconnecting later than that fetches a new one first. A token whose
/// whole lifetime is shorter than twice this goes stale halfway through it instead. A
/// response without `expires_in` gives a token kept until the server answers 401.
///
/// # Example
/// ```
/// assert_eq!(ssekit_utcp::TOKEN_REFRESH_MARGIN, std::time::Duration::from_secs(30));
/// ```
pub const TOKEN_REFRESH_MARGIN: Duration = Duration::from_secs(30);

/// Why an OAuth2 `token_url` is refused, before any request is sent (see
/// [`SseProvider`](super::SseProvider)'s `auth`). It reaches the caller inside
/// [`Error::Http`]; [`TokenUrlError::of`] finds it there. None of its variants holds the
/// URL's user info or query.
///
/// # Example
/// ```no_run
/// use ssekit_utcp::{HttpIo, SseProvider, TokenUrlError};
/// async fn cleartext<T: HttpIo>() -> Result<(), Box<dyn std::error::Error>> {
///     let provider = SseProvider::<T>::from_json(r#"{"name": "n", "provider_type": "sse",
///         "url": "https://api.example.com/events",
///         "auth": {"auth_type": "oauth2", "token_url": "http://auth.example.com/token",
///                  "client_id": "c", "client_secret": "s"}}"#)?;
///     let Err(err) = provider.connect(&serde_json::Map::new()).await else { panic!() };
///     assert_eq!(
///         TokenUrlError::of(&err),
///         Some(&TokenUrlError::Cleartext { url: "http://auth.example.com/token".into() })
///     );
///     Ok(())
/// }
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TokenUrlError {
    /// Not an absolute URL with a host and a valid port.
    Invalid {
        /// What is wrong with it (the URL is not quoted).
        reason: String,
    },
    /// A scheme the transport does not speak (`http`, and `https` when it has TLS).
    Scheme {
        /// The scheme.
        scheme: String,
    },
    /// Plain `http` to a host that is not loopback: the client secret would cross the
    /// network in cleartext.
    Cleartext {
        /// The URL as `http://host[:port]/path`.
        url: String,
    },
}

impl TokenUrlError {
    /// The refusal `err` carries, if it is one (a tool call's
    /// [`CallError::Transport`](super::CallError::Transport) and discovery's
    /// [`DiscoveryError::Transport`](super::DiscoveryError::Transport) hold such an `err`).
    ///
    /// # Example
    /// ```
    /// use ssekit_utcp::TokenUrlError;
    /// let err = ssekit_http::Error::from(TokenUrlError::Scheme { scheme: "ftp".into() });
    /// assert!(matches!(TokenUrlError::of(&err), Some(TokenUrlError::Scheme { .. })));
    /// assert!(TokenUrlError::of(&ssekit_http::Error::Status(401)).is_none());
    /// ```
    pub fn of(err: &Error) -> Option<&TokenUrlError> {
        match err {
            Error::Http(inner) => inner.downcast_ref::<TokenUrlError>(),
            _ => None,
        }
    }
}

impl fmt::Display for TokenUrlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TokenUrlError::Invalid { reason } => {
                write!(f, "the OAuth2 token_url is not a URL with a host: {reason}")
            }
            TokenUrlError::Scheme { scheme } => write!(
                f,
                "the OAuth2 token_url's scheme {scheme:?} is not one the client speaks"
            ),
            TokenUrlError::Cleartext { url } => write!(
                f,
                "the OAuth2 token_url {url} is plain http to a host that is not loopback: \
                 the client secret would be sent in cleartext (use https)"
            ),
        }
    }
}

impl std::error::Error for TokenUrlError {}

impl From<TokenUrlError> for Error {
    fn from(e: TokenUrlError) -> Self {
        Error::http(e)
    }
}

/// Whether `host` (as a URL holds it, an IPv6 address in brackets) is loopback:
/// `127.0.0.0/8`, `::1` or `localhost`.
fn is_loopback(host: &str) -> bool {
    let bare = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    match bare.parse::<IpAddr>() {
        Ok(ip) => ip.is_loopback(),
        Err(_) => bare.eq_ignore_ascii_case("localhost"),
    }
}

/// `token_url` parsed, if the client secret may be sent there (see [the module](self)).
pub(crate) fn check_token_url(token_url: &str, schemes: &[&str]) -> Result<Uri, TokenUrlError> {
    // `InvalidUri` says what is wrong without quoting the URL.
    let uri: Uri =
        token_url
            .parse()
            .map_err(|e: http::uri::InvalidUri| TokenUrlError::Invalid {
                reason: e.to_string(),
            })?;
    let (Some(scheme), Some(host), Some(authority)) =
        (uri.scheme_str(), uri.host(), uri.authority())
    else {
        return Err(TokenUrlError::Invalid {
            reason: "no scheme and host".to_owned(),
        });
    };
    if !ssekit_http::redirect::port_is_valid(authority.as_str()) {
        return Err(TokenUrlError::Invalid {
            reason: "invalid port".to_owned(),
        });
    }
    if !schemes.contains(&scheme) {
        return Err(TokenUrlError::Scheme {
            scheme: scheme.to_owned(),
        });
    }
    if scheme != "https" && !is_loopback(host) {
        return Err(TokenUrlError::Cleartext {
            url: shown_url(&uri),
        });
    }
    Ok(uri)
}

/// A URL as errors show it: `scheme://host[:port]/path`, without the user info, query and
/// fragment, where credentials go.
pub(crate) fn shown_url(uri: &Uri) -> String {
    format!("{}{}", origin(uri), uri.path())
}

#[derive(Deserialize)]
struct TokenResponse {
    access_token: String,
    /// Seconds (RFC 6749 5.1: a number; some servers send a string of digits).
    #[serde(default)]
    expires_in: Option<Value>,
}

/// `expires_in` as a lifetime: a non-negative number of seconds, or a string of digits.
/// Anything else is left out, as if the field were absent.
fn lifetime(expires_in: &Value) -> Option<Duration> {
    match expires_in {
        Value::Number(n) => match n.as_u64() {
            Some(secs) => Some(Duration::from_secs(secs)),
            None => n.as_f64().and_then(|f| Duration::try_from_secs_f64(f).ok()),
        },
        Value::String(s) => s.trim().parse::<u64>().ok().map(Duration::from_secs),
        _ => None,
    }
}

/// An access token, as the `Authorization` value it is sent in, and the moment it goes
/// stale.
#[derive(Clone)]
pub(crate) struct Token {
    /// `Bearer {token}`, marked sensitive.
    header: HeaderValue,
    /// From this moment a new token is fetched before a connection: [`TOKEN_REFRESH_MARGIN`]
    /// before it expires, or half its lifetime when that is shorter (a token good for 10 s
    /// is not stale as soon as it comes). `None`: the response gave no lifetime.
    stale_at: Option<Instant>,
}

impl Token {
    /// The token read from a token response body, for a request sent at `sent`.
    fn from_response(body: &[u8], sent: Instant) -> Result<Token, Error> {
        let response: TokenResponse = serde_json::from_slice(body)?;
        let mut header = HeaderValue::from_str(&format!("Bearer {}", response.access_token))
            .map_err(|_| {
                RequestError::new(
                    RequestErrorKind::Header,
                    "the OAuth2 access token is not a valid header value",
                )
            })?;
        header.set_sensitive(true);
        let stale_at = response
            .expires_in
            .as_ref()
            .and_then(lifetime)
            .and_then(|life| {
                sent.checked_add(life.saturating_sub(TOKEN_REFRESH_MARGIN.min(life / 2)))
            });
        Ok(Token { header, stale_at })
    }

    /// The `Authorization` value.
    pub(crate) fn header(&self) -> &HeaderValue {
        &self.header
    }

    /// Whether a connection at `at` should have a new token first.
    pub(crate) fn is_stale_at(&self, at: Instant) -> bool {
        self.stale_at.is_some_and(|stale| at >= stale)
    }
}

/// The token a stream sends, shared between the stream, which fetches a new one, and its
/// `on_connect` hook, which puts the current one on each request.
#[derive(Clone, Default)]
pub(crate) struct TokenCell(Arc<Mutex<Option<Token>>>);

impl TokenCell {
    fn lock(&self) -> MutexGuard<'_, Option<Token>> {
        // A panic elsewhere while holding it leaves a whole `Option<Token>` all the same.
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The current token, if there is one.
    pub(crate) fn get(&self) -> Option<Token> {
        self.lock().clone()
    }

    /// Replaces the token (`None`: drops it).
    pub(crate) fn set(&self, token: Option<Token>) {
        *self.lock() = token;
    }

    /// Puts the current token, if any, in `req`'s `Authorization`.
    pub(crate) fn authorize(&self, req: &mut Request<Bytes>) {
        if let Some(token) = self.lock().as_ref() {
            req.headers_mut()
                .insert(AUTHORIZATION, token.header().clone());
        }
    }
}

/// An `auth` of type `oauth2`: what a token is fetched with. Its `Debug` output leaves the
/// client secret out.
#[derive(Clone)]
pub(crate) struct Grant {
    token_url: String,
    client_id: String,
    client_secret: String,
    scope: Option<String>,
}

impl fmt::Debug for Grant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Grant")
            .field("client_id", &self.client_id)
            .field("client_secret", &Redacted)
            .finish_non_exhaustive()
    }
}

impl Grant {
    /// The grant of `auth`, if it is OAuth2.
    pub(crate) fn of(auth: Option<&Auth>) -> Option<Grant> {
        match auth {
            Some(Auth::OAuth2 {
                token_url,
                client_id,
                client_secret,
                scope,
            }) => Some(Grant {
                token_url: token_url.clone(),
                client_id: client_id.clone(),
                client_secret: client_secret.clone(),
                scope: scope.clone(),
            }),
            _ => None,
        }
    }

    /// The client-credentials grant: a token from `token_url`, within [`TOKEN_TIMEOUT`] and
    /// [`MAX_TOKEN_RESPONSE`] per request, its lifetime counted from when the request was
    /// sent.
    ///
    /// The client authenticates with `client_id` and `client_secret` in the form body, as
    /// UTCP's own clients do first; a token endpoint that answers that with 400 or 401 (RFC
    /// 6749 §5.2's `invalid_client`) is asked once more with HTTP Basic, the method RFC
    /// 6749 §2.3.1 says every token endpoint must support (UTCP's clients fall back to it
    /// too). A request never carries both: the RFC allows one method per request. When the
    /// second request fails too, the error is the first one's.
    pub(crate) async fn fetch<T: HttpIo>(&self, io: &T) -> Result<Token, Error> {
        let uri = check_token_url(&self.token_url, T::SCHEMES)?;
        match self.fetch_with(io, &uri, ClientAuth::Body).await {
            // Failing again, the first answer is the one to report: a 400 may be about
            // something else (`invalid_scope`), which Basic does not change.
            Err(first) if matches!(first.status(), Some(400 | 401)) => self
                .fetch_with(io, &uri, ClientAuth::Basic)
                .await
                .map_err(|_| first),
            answer => answer,
        }
    }

    async fn fetch_with<T: HttpIo>(
        &self,
        io: &T,
        uri: &Uri,
        how: ClientAuth,
    ) -> Result<Token, Error> {
        let shown = shown_url(uri);
        let mut form = String::from("grant_type=client_credentials");
        let mut req = Request::post(uri.clone())
            .header("Content-Type", "application/x-www-form-urlencoded")
            .header("Accept", "application/json");
        match how {
            ClientAuth::Body => form.push_str(&format!(
                "&client_id={}&client_secret={}",
                encode_component(&self.client_id),
                encode_component(&self.client_secret)
            )),
            ClientAuth::Basic => {
                // RFC 6749 §2.3.1: each part form-urlencoded, then as HTTP Basic.
                let credentials = basic_credentials(
                    &encode_component(&self.client_id),
                    &encode_component(&self.client_secret),
                );
                let mut value = HeaderValue::from_str(&credentials).map_err(|e| {
                    RequestError::new(RequestErrorKind::Header, format!("token_url {shown}"))
                        .with_source(e)
                })?;
                value.set_sensitive(true);
                req = req.header(AUTHORIZATION, value);
            }
        }
        if let Some(scope) = &self.scope {
            form.push_str(&format!("&scope={}", encode_component(scope)));
        }
        let req = req.body(Bytes::from(form)).map_err(|e| {
            RequestError::new(RequestErrorKind::Url, format!("token_url {shown}")).with_source(e)
        })?;
        let sent = io.now();
        let body = match bounded_exchange(io, req, TOKEN_TIMEOUT, MAX_TOKEN_RESPONSE).await {
            Ok(body) => body,
            Err(Bounded::Failed(e)) => return Err(e),
            Err(Bounded::TooLarge) => {
                return Err(Error::http(format!(
                    "the token response from {shown} is larger than {MAX_TOKEN_RESPONSE} bytes"
                )))
            }
            Err(Bounded::TimedOut) => return Err(Error::no_response(TOKEN_TIMEOUT)),
        };
        Token::from_response(&body, sent)
    }
}

/// How a token request authenticates the client (RFC 6749 §2.3.1).
#[derive(Clone, Copy)]
enum ClientAuth {
    /// `client_id` and `client_secret` in the form body.
    Body,
    /// `Authorization: Basic`.
    Basic,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_https_and_loopback_http_token_urls_pass() {
        let passes = |url: &str| check_token_url(url, &["http", "https"]).map(|_| ());
        for url in [
            "http://127.0.0.1:8080/token",
            "http://127.9.9.9/token",
            "http://[::1]:9/token",
            "http://localhost:9/token",
            "http://LocalHost/token",
            "HTTP://127.0.0.1/token",
        ] {
            assert_eq!(passes(url), Ok(()), "{url}");
        }
        assert_eq!(passes("https://auth.example.com/token"), Ok(()));
        for (url, shown) in [
            (
                "http://auth.example.com/token",
                "http://auth.example.com/token",
            ),
            ("HTTP://u:p@10.0.0.1:80/t?secret=s", "http://10.0.0.1:80/t"),
            ("http://[::ffff:127.0.0.1]/t", "http://[::ffff:127.0.0.1]/t"),
            ("http://0.0.0.0/t", "http://0.0.0.0/t"),
            (
                "http://localhost.example.com/t",
                "http://localhost.example.com/t",
            ),
            (
                "http://127.0.0.1.example.com/t",
                "http://127.0.0.1.example.com/t",
            ),
        ] {
            assert_eq!(
                passes(url),
                Err(TokenUrlError::Cleartext { url: shown.into() }),
                "{url}"
            );
        }
        assert_eq!(
            passes("ws://127.0.0.1/t"),
            Err(TokenUrlError::Scheme {
                scheme: "ws".into()
            })
        );
        for url in ["/token", "127.0.0.1:8080/token", "http://h:65616/t", ""] {
            assert!(
                matches!(passes(url), Err(TokenUrlError::Invalid { .. })),
                "{url}"
            );
        }
    }

    #[test]
    fn expires_in_is_seconds_as_a_number_or_digits() {
        use serde_json::json;
        for (value, secs) in [
            (json!(3600), Some(3600.0)),
            (json!(0), Some(0.0)),
            (json!(1.5), Some(1.5)),
            (json!("60"), Some(60.0)),
            (json!(" 60 "), Some(60.0)),
            (json!(-5), None),
            (json!("soon"), None),
            (json!(null), None),
            (json!([60]), None),
        ] {
            assert_eq!(lifetime(&value).map(|d| d.as_secs_f64()), secs, "{value}");
        }
    }

    #[test]
    fn a_token_goes_stale_before_it_expires() {
        let sent = Instant::from_secs(1);
        let token = |body: &str| Token::from_response(body.as_bytes(), sent).unwrap();
        let hour = token(r#"{"access_token":"t","expires_in":3600}"#);
        assert_eq!(hour.header(), "Bearer t");
        assert!(hour.header().is_sensitive());
        assert!(!hour.is_stale_at(sent + Duration::from_secs(3569)));
        assert!(hour.is_stale_at(sent + Duration::from_secs(3570)));
        let short = token(r#"{"access_token":"t","expires_in":10}"#);
        assert!(!short.is_stale_at(sent + Duration::from_millis(4999)));
        assert!(short.is_stale_at(sent + Duration::from_secs(5)));
        let forever = token(r#"{"access_token":"t"}"#);
        assert!(!forever.is_stale_at(sent + Duration::from_secs(86_400 * 365)));
        let huge = token(r#"{"access_token":"t","expires_in":18446744073709551615}"#);
        assert!(!huge.is_stale_at(sent + Duration::from_secs(86_400 * 365)));
        let zero = token(r#"{"access_token":"t","expires_in":0}"#);
        assert!(zero.is_stale_at(sent));
        assert!(Token::from_response(br#"{"access_token":"a\nb"}"#, sent).is_err());
        assert!(Token::from_response(br#"{"token":"t"}"#, sent).is_err());
    }

    #[test]
    fn a_shown_url_has_no_user_info_query_or_fragment() {
        for (url, shown) in [
            (
                "https://u:p@auth.example.com:8443/o/token?secret=s#f",
                "https://auth.example.com:8443/o/token",
            ),
            ("http://[::1]:9/token?x", "http://[::1]:9/token"),
            ("https://auth.example.com", "https://auth.example.com/"),
        ] {
            assert_eq!(shown_url(&url.parse().unwrap()), shown, "{url}");
        }
    }
}
