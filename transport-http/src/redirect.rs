//! Following a redirect: which statuses are redirects, where `Location` points (resolved
//! against the URL that answered, RFC 3986 §5), and the request that goes there, as the
//! Fetch standard's "HTTP-redirect fetch" builds it (the steps an `EventSource` in a
//! browser takes):
//! - 303, and 301 or 302 after a `POST`, turn the request into a `GET` without a body (and
//!   without the headers that describe one); 307 and 308 send the same method and body;
//! - a redirect to another origin (scheme, host or port) drops `Authorization`, and, like
//!   curl, `Cookie` and `Proxy-Authorization`, and the headers set with `secret_header`
//!   (such as an API key) and a configured `Host`, for the rest of the connection attempt,
//!   whoever set them (a request hook included);
//! - a redirect to a scheme the transport cannot speak, or from `https` to `http`, is
//!   refused;
//! - a redirect must name one target ([`location`]): `Location` fields that do not all
//!   hold the same value are refused, as Chrome refuses them
//!   (`ERR_RESPONSE_HEADERS_MULTIPLE_LOCATION`, against response splitting) and as the Fetch
//!   standard fails to extract a `Location` from more than one; identical copies count as
//!   one, as in Chrome. An empty `Location`, or one that is not UTF-8, is refused too.
//!
//! Where a browser differs: it follows `https` to `http` (ssekit refuses); after a refused
//! redirect it may reconnect (ssekit ends the stream with `Error::Redirect`, as retrying
//! would be refused again); it treats `\` in a path as `/` (ssekit percent-encodes it, so
//! `/\host` stays on the same host); it converts non-ASCII host names with IDNA (ssekit
//! refuses them); it percent-encodes the bytes of a `Location` that is not UTF-8 (ssekit
//! refuses it); Chrome skips an empty `Location` and, with no other, takes the 3xx as the
//! final answer, which an `EventSource` fails on, while Fetch resolves it to the URL that
//! answered, a redirect to itself (ssekit refuses it at once).
//!
//! The [`Session`](crate::client::Session) counts the hops of one connection attempt and
//! starts every reconnect from the URL it was given, as a browser's `EventSource` does.

use http::header::LOCATION;
use http::header::{
    HeaderName, AUTHORIZATION, CONTENT_ENCODING, CONTENT_LANGUAGE, CONTENT_LENGTH,
    CONTENT_LOCATION, CONTENT_TYPE, COOKIE, PROXY_AUTHORIZATION,
};
use http::{HeaderMap, Method, Uri};

use crate::redacted_url;

/// Whether `status` is a redirect this module follows (`300` and `304` are not: they
/// name no single new location).
///
/// # Example
/// ```
/// use ssekit_http::redirect::is_redirect;
/// assert!(is_redirect(308) && is_redirect(303));
/// assert!(!is_redirect(304) && !is_redirect(200));
/// ```
pub fn is_redirect(status: u16) -> bool {
    matches!(status, 301 | 302 | 303 | 307 | 308)
}

/// The method after a `status` redirect of a `method` request, and whether the body goes
/// with it.
///
/// # Example
/// ```
/// use http::Method;
/// use ssekit_http::redirect::method_after;
/// assert_eq!(method_after(303, &Method::POST), (Method::GET, false));
/// assert_eq!(method_after(302, &Method::POST), (Method::GET, false));
/// assert_eq!(method_after(307, &Method::POST), (Method::POST, true));
/// assert_eq!(method_after(301, &Method::PUT), (Method::PUT, true));
/// ```
pub fn method_after(status: u16, method: &Method) -> (Method, bool) {
    let to_get = match status {
        303 => *method != Method::HEAD,
        301 | 302 => *method == Method::POST,
        _ => false,
    };
    if to_get {
        (Method::GET, false)
    } else {
        (method.clone(), true)
    }
}

/// The headers a request loses when its body is dropped (Fetch's request-body-header
/// names, and the length).
///
/// # Example
/// ```
/// assert!(ssekit_http::redirect::BODY_HEADERS.contains(&http::header::CONTENT_TYPE));
/// ```
pub const BODY_HEADERS: [HeaderName; 5] = [
    CONTENT_TYPE,
    CONTENT_LENGTH,
    CONTENT_ENCODING,
    CONTENT_LANGUAGE,
    CONTENT_LOCATION,
];

/// The headers a request loses when it is redirected to another origin.
///
/// # Example
/// ```
/// assert!(ssekit_http::redirect::CREDENTIAL_HEADERS.contains(&http::header::AUTHORIZATION));
/// ```
pub const CREDENTIAL_HEADERS: [HeaderName; 3] = [AUTHORIZATION, COOKIE, PROXY_AUTHORIZATION];

/// Whether `a` and `b` have the same origin: scheme, host and port (a missing port is the
/// scheme's default).
///
/// # Example
/// ```
/// use ssekit_http::redirect::same_origin;
/// let a: http::Uri = "http://example.com/a".parse()?;
/// assert!(same_origin(&a, &"http://EXAMPLE.com:80/b?c".parse()?));
/// assert!(!same_origin(&a, &"http://example.com:8080/a".parse()?));
/// assert!(!same_origin(&a, &"https://example.com/a".parse()?));
/// # Ok::<(), http::uri::InvalidUri>(())
/// ```
pub fn same_origin(a: &Uri, b: &Uri) -> bool {
    let scheme = |u: &Uri| u.scheme_str().map(str::to_ascii_lowercase);
    let port = |u: &Uri| {
        u.port_u16().or_else(|| match scheme(u).as_deref() {
            Some("http") => Some(80),
            Some("https") => Some(443),
            _ => None,
        })
    };
    let host = |u: &Uri| u.host().map(str::to_ascii_lowercase);
    scheme(a) == scheme(b) && host(a) == host(b) && port(a) == port(b)
}

/// The target a redirect response names: its one `Location` value, without the spaces
/// and tabs around it; `Ok(None)` when it has no `Location`. Several `Location` fields are
/// one target when they all hold the same value, and refused when they do not; an empty
/// value, or one that is not UTF-8, is refused.
///
/// # Example
/// ```
/// use http::{HeaderMap, HeaderValue};
/// use ssekit_http::redirect::{location, LocationError};
/// let mut head = HeaderMap::new();
/// assert_eq!(location(&head), Ok(None));
/// head.append("location", HeaderValue::from_static("/a"));
/// head.append("location", HeaderValue::from_static("/a"));
/// assert_eq!(location(&head), Ok(Some("/a")));
/// head.append("location", HeaderValue::from_static("/b"));
/// let err = location(&head).unwrap_err();
/// assert_eq!(err, LocationError::Conflicting(vec!["/a".into(), "/b".into()]));
/// assert_eq!(err.to_string(), r#"2 different Location values: "/a", "/b""#);
/// ```
pub fn location(headers: &HeaderMap) -> Result<Option<&str>, LocationError> {
    let mut values = headers
        .get_all(LOCATION)
        .iter()
        .map(|v| trim_ows(v.as_bytes()));
    let Some(first) = values.next() else {
        return Ok(None);
    };
    let mut distinct = vec![first];
    for value in values {
        if !distinct.contains(&value) {
            distinct.push(value);
        }
    }
    if distinct.len() > 1 {
        let shown = distinct
            .iter()
            .map(|v| String::from_utf8_lossy(v).into_owned());
        return Err(LocationError::Conflicting(shown.collect()));
    }
    let value = std::str::from_utf8(first).map_err(|_| LocationError::NotUtf8)?;
    if value.is_empty() {
        return Err(LocationError::Empty);
    }
    Ok(Some(value))
}

/// `value` without the spaces and tabs around it (HTTP's optional whitespace).
fn trim_ows(value: &[u8]) -> &[u8] {
    let is_ows = |b: &u8| matches!(b, b' ' | b'\t');
    let start = value.iter().position(|b| !is_ows(b)).unwrap_or(value.len());
    let end = value
        .iter()
        .rposition(|b| !is_ows(b))
        .map_or(start, |i| i + 1);
    value.get(start..end).unwrap_or_default()
}

/// Why a redirect response names no target ([`location`]).
///
/// # Example
/// ```
/// use ssekit_http::redirect::LocationError;
/// assert_eq!(LocationError::Empty.to_string(), "an empty Location");
/// assert_eq!(LocationError::NotUtf8.to_string(), "a Location that is not UTF-8");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum LocationError {
    /// `Location` fields that do not all hold the same value: the different values, in
    /// order (bytes that are not UTF-8 shown as U+FFFD).
    Conflicting(Vec<String>),
    /// A `Location` with nothing in it (but spaces or tabs).
    Empty,
    /// A `Location` that is not UTF-8.
    NotUtf8,
}

impl std::fmt::Display for LocationError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LocationError::Conflicting(values) => {
                write!(f, "{} different Location values: ", values.len())?;
                for (i, value) in values.iter().enumerate() {
                    let comma = if i == 0 { "" } else { ", " };
                    write!(f, "{comma}{value:?}")?;
                }
                Ok(())
            }
            LocationError::Empty => f.write_str("an empty Location"),
            LocationError::NotUtf8 => f.write_str("a Location that is not UTF-8"),
        }
    }
}

impl std::error::Error for LocationError {}

/// Why a redirect was not followed ([`Error::Redirect`](crate::Error::Redirect)); what
/// [`next_hop`] refuses, and the hop limit the clients count.
///
/// # Example
/// ```
/// use ssekit_http::redirect::{LocationError, RedirectError};
/// let e = RedirectError::Location { status: 302, error: LocationError::Empty };
/// assert_eq!(e.to_string(), "HTTP 302 with an empty Location");
/// let e = RedirectError::TooMany { max: 2, from: "http://h/a".into() };
/// assert_eq!(e.to_string(), "more than 2 redirects from http://h/a");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RedirectError {
    /// More than `max` redirects in one connection attempt, from the URL `from`
    /// ([`redacted_url`]).
    TooMany {
        /// The limit.
        max: u32,
        /// The URL the attempt started from.
        from: String,
    },
    /// A redirect status without a `Location`.
    NoLocation {
        /// The redirect status.
        status: u16,
    },
    /// `Location` fields that name no single target.
    Location {
        /// The redirect status.
        status: u16,
        /// What is wrong with them.
        error: LocationError,
    },
    /// A `Location` that does not resolve to a URL with a host.
    Resolve {
        /// The redirect status.
        status: u16,
        /// Why it does not.
        error: ResolveError,
    },
    /// A target whose scheme is not one of those the transport speaks.
    Scheme {
        /// The redirect status.
        status: u16,
        /// The target.
        to: Uri,
        /// The schemes the transport speaks.
        schemes: Vec<String>,
    },
    /// A redirect from `https` to `http`.
    Downgrade {
        /// The redirect status.
        status: u16,
        /// The target.
        to: Uri,
    },
}

impl std::fmt::Display for RedirectError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RedirectError::TooMany { max, from } => {
                write!(f, "more than {max} redirects from {from}")
            }
            RedirectError::NoLocation { status } => write!(f, "HTTP {status} with no Location"),
            RedirectError::Location { status, error } => write!(f, "HTTP {status} with {error}"),
            RedirectError::Resolve { error, .. } => error.fmt(f),
            RedirectError::Scheme {
                status,
                to,
                schemes,
            } => write!(
                f,
                "HTTP {status} to {to}: the scheme is not {}",
                schemes.join(" or ")
            ),
            RedirectError::Downgrade { status, to } => {
                write!(f, "HTTP {status} from https to {to}: refused")
            }
        }
    }
}

impl std::error::Error for RedirectError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            RedirectError::Location { error, .. } => Some(error),
            RedirectError::Resolve { error, .. } => Some(error),
            _ => None,
        }
    }
}

/// Why a `Location` does not resolve to a URL ([`resolve`]); `location` and `url` are
/// [`redacted_url`]s.
///
/// # Example
/// ```
/// use ssekit_http::redirect::{resolve, ResolveError};
/// let base: http::Uri = "http://h/".parse()?;
/// let err = resolve(&base, "http:///nohost").unwrap_err();
/// assert!(matches!(err, ResolveError::NoHost { .. }));
/// assert_eq!(err.to_string(), r#"Location "http:///nohost" names no host"#);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ResolveError {
    /// The `Location` names no host.
    NoHost {
        /// The `Location`.
        location: String,
    },
    /// The `Location` names a host that is not ASCII (IDNA is not supported).
    NonAsciiHost {
        /// The `Location`.
        location: String,
    },
    /// The `Location` names a port that does not fit in 16 bits.
    PortOutOfRange {
        /// The `Location`.
        location: String,
    },
    /// The `Location` resolves to text that is not a URL, or to one without a host.
    InvalidUrl {
        /// What it resolves to.
        url: String,
    },
}

impl std::fmt::Display for ResolveError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ResolveError::NoHost { location } => write!(f, "Location {location:?} names no host"),
            ResolveError::NonAsciiHost { location } => write!(
                f,
                "Location {location:?} names a host that is not ASCII (IDNA is not supported)"
            ),
            ResolveError::PortOutOfRange { location } => {
                write!(f, "Location {location:?} names a port out of range")
            }
            ResolveError::InvalidUrl { url } => {
                write!(
                    f,
                    "Location resolves to {url:?}, which is not a URL with a host"
                )
            }
        }
    }
}

impl std::error::Error for ResolveError {}

/// The request a redirect asks for, as [`next_hop`] works it out.
///
/// # Example
/// ```
/// use http::{HeaderMap, HeaderValue, Method};
/// use ssekit_http::redirect::next_hop;
/// let mut head = HeaderMap::new();
/// head.insert("location", HeaderValue::from_static("http://other/b"));
/// let hop = next_hop(&"http://h/a".parse()?, &Method::POST, 303, &head, &["http"])?;
/// assert_eq!((hop.method, hop.keep_body, hop.same_origin), (Method::GET, false, false));
/// assert_eq!(hop.to, "http://other/b");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hop {
    /// The target, resolved and checked.
    pub to: Uri,
    /// The method to send there ([`method_after`]).
    pub method: Method,
    /// Whether the body, and the headers that describe it ([`BODY_HEADERS`]), go too.
    pub keep_body: bool,
    /// Whether `to` is on the origin of the URL that answered; when it is not, the
    /// credentials ([`CREDENTIAL_HEADERS`], secret headers, a configured `Host`) stay behind.
    pub same_origin: bool,
}

/// Where a `status` redirect with these response `headers`, the answer to a `method`
/// request to `from`, leads: its one [`location`], [`resolve`]d against `from`, on one of the
/// `schemes` the transport speaks and not from `https` down to `http`. The checks every
/// client here makes before a hop (the event stream's `Session` and the ORS client's JSON
/// requests), so the two cannot drift; counting hops is the caller's. The error is what
/// `Error::Redirect` carries.
///
/// # Example
/// ```
/// use http::{HeaderMap, HeaderValue, Method};
/// use ssekit_http::redirect::next_hop;
/// let from: http::Uri = "https://h/a".parse()?;
/// let mut head = HeaderMap::new();
/// head.insert("location", HeaderValue::from_static("/b"));
/// let hop = next_hop(&from, &Method::GET, 308, &head, &["http", "https"])?;
/// assert_eq!(hop.to, "https://h/b");
/// head.insert("location", HeaderValue::from_static("http://h/b"));
/// let refused = next_hop(&from, &Method::GET, 308, &head, &["http", "https"]);
/// let refused = refused.unwrap_err();
/// assert!(matches!(refused, ssekit_http::redirect::RedirectError::Downgrade { status: 308, .. }));
/// assert_eq!(refused.to_string(), "HTTP 308 from https to http://h/b: refused");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn next_hop<S: AsRef<str>>(
    from: &Uri,
    method: &Method,
    status: u16,
    headers: &HeaderMap,
    schemes: &[S],
) -> Result<Hop, RedirectError> {
    let location = match location(headers) {
        Ok(Some(location)) => location,
        Ok(None) => return Err(RedirectError::NoLocation { status }),
        Err(error) => return Err(RedirectError::Location { status, error }),
    };
    let to = resolve(from, location).map_err(|error| RedirectError::Resolve { status, error })?;
    let scheme = to.scheme_str().unwrap_or_default().to_ascii_lowercase();
    if !schemes.iter().any(|s| s.as_ref() == scheme) {
        return Err(RedirectError::Scheme {
            status,
            to,
            schemes: schemes.iter().map(|s| s.as_ref().to_owned()).collect(),
        });
    }
    if from.scheme_str() == Some("https") && scheme == "http" {
        return Err(RedirectError::Downgrade { status, to });
    }
    let (method, keep_body) = method_after(status, method);
    Ok(Hop {
        same_origin: same_origin(from, &to),
        to,
        method,
        keep_body,
    })
}

/// `location` resolved against `base` (an absolute URL): the target of the redirect,
/// without its fragment. Bytes a path or query may not hold as they are (spaces, quotes,
/// `<`, `>`, `\`, controls, non-ASCII) are percent-encoded; the result must name an ASCII
/// host (no IDNA) and a port that fits in 16 bits.
///
/// # Example
/// ```
/// use ssekit_http::redirect::resolve;
/// let base: http::Uri = "http://h:1/a/b/c?q".parse()?;
/// assert_eq!(resolve(&base, "d")?, "http://h:1/a/b/d");
/// assert_eq!(resolve(&base, "../d?x#frag")?, "http://h:1/a/d?x");
/// assert_eq!(resolve(&base, "/e")?, "http://h:1/e");
/// assert_eq!(resolve(&base, "//other/f")?, "http://other/f");
/// assert_eq!(resolve(&base, "?r")?, "http://h:1/a/b/c?r");
/// assert_eq!(resolve(&base, "https://x/y")?, "https://x/y");
/// assert!(resolve(&base, "http:///nohost").is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn resolve(base: &Uri, location: &str) -> Result<Uri, ResolveError> {
    let location = location.trim_matches([' ', '\t']);
    let location = location.split('#').next().unwrap_or_default();
    let base_scheme = base.scheme_str().unwrap_or("http");
    let base_authority = base.authority().map_or("", |a| a.as_str());
    let (scheme, authority, path_and_query) = if has_scheme(location) {
        let (scheme, rest) = location.split_once(':').unwrap_or((location, ""));
        let Some(rest) = rest.strip_prefix("//") else {
            return Err(ResolveError::NoHost {
                location: redacted_url(location),
            });
        };
        let (authority, rest) = split_authority(location, rest)?;
        (scheme, authority, rest)
    } else if let Some(rest) = location.strip_prefix("//") {
        let (authority, rest) = split_authority(location, rest)?;
        (base_scheme, authority, rest)
    } else {
        let base_path = base.path();
        let relative = if location.is_empty() {
            base.path_and_query().map_or("/", |p| p.as_str()).to_owned()
        } else if location.starts_with('/') {
            location.to_owned()
        } else if location.starts_with('?') {
            format!("{base_path}{location}")
        } else {
            let dir = base_path.rfind('/').map_or("/", |i| &base_path[..=i]);
            format!("{dir}{location}")
        };
        (base_scheme, base_authority, relative)
    };
    let (path, query) = match path_and_query.split_once('?') {
        Some((path, query)) => (path, Some(query)),
        None => (path_and_query.as_str(), None),
    };
    if !authority.is_ascii() {
        return Err(ResolveError::NonAsciiHost {
            location: redacted_url(location),
        });
    }
    if !port_is_valid(authority) {
        return Err(ResolveError::PortOutOfRange {
            location: redacted_url(location),
        });
    }
    let mut url = format!("{scheme}://{authority}");
    percent_encode(&remove_dot_segments(path), b"/", &mut url);
    if let Some(query) = query {
        url.push('?');
        percent_encode(query, b"/?", &mut url);
    }
    let invalid = || ResolveError::InvalidUrl {
        url: redacted_url(&url),
    };
    let uri: Uri = url.parse().map_err(|_| invalid())?;
    if uri.host().is_none_or(str::is_empty) {
        return Err(invalid());
    }
    Ok(uri)
}

/// Whether `s` starts with `scheme:` (RFC 3986: a letter, then letters, digits, `+`, `-`,
/// `.`).
fn has_scheme(s: &str) -> bool {
    let Some((scheme, _)) = s.split_once(':') else {
        return false;
    };
    let mut chars = scheme.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
}

/// `authority[/path][?query]` (from `location`) split after the authority, which must not
/// be empty; the rest starts with `/` (added when missing).
fn split_authority<'a>(location: &str, s: &'a str) -> Result<(&'a str, String), ResolveError> {
    let end = s.find(['/', '?']).unwrap_or(s.len());
    let (authority, rest) = s.split_at(end);
    if authority.is_empty() {
        return Err(ResolveError::NoHost {
            location: redacted_url(location),
        });
    }
    let rest = if rest.starts_with('/') {
        rest.to_owned()
    } else {
        format!("/{rest}")
    };
    Ok((authority, rest))
}

/// RFC 3986 §5.2.4: `.` and `..` segments removed from an absolute path.
fn remove_dot_segments(path: &str) -> String {
    let mut out: Vec<&str> = Vec::new();
    let segments: Vec<&str> = path.split('/').skip(1).collect();
    let last = segments.len().saturating_sub(1);
    for (i, segment) in segments.iter().enumerate() {
        match *segment {
            "." | ".." => {
                if *segment == ".." {
                    out.pop();
                }
                // A trailing dot segment leaves the path ending in `/`.
                if i == last {
                    out.push("");
                }
            }
            other => out.push(other),
        }
    }
    format!("/{}", out.join("/"))
}

/// Whether the port of `authority` (`[userinfo@]host[:port]`), when it has one, is a
/// number that fits in 16 bits (an empty port is the scheme's default).
///
/// # Example
/// ```
/// use ssekit_http::redirect::port_is_valid;
/// assert!(port_is_valid("h") && port_is_valid("h:8080") && port_is_valid("[::1]:1"));
/// assert!(!port_is_valid("h:65616") && !port_is_valid("u:p@[::1]:x"));
/// ```
pub fn port_is_valid(authority: &str) -> bool {
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let after_host = match host_port.strip_prefix('[') {
        Some(rest) => rest.split_once(']').map_or("", |(_, after)| after),
        None => host_port.find(':').map_or("", |i| &host_port[i..]),
    };
    match after_host.strip_prefix(':') {
        Some(port) => port.is_empty() || port.parse::<u16>().is_ok(),
        None => true,
    }
}

/// Appends `text` to `out`, percent-encoding every byte a path or query may not hold as it
/// is (RFC 3986: all but unreserved characters, sub-delimiters, `:`, `@`, `%` and the
/// `also` bytes): spaces, quotes, `<`, `>`, `\`, controls and non-ASCII bytes among them.
fn percent_encode(text: &str, also: &[u8], out: &mut String) {
    for &b in text.as_bytes() {
        let keep =
            b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=:@%".contains(&b) || also.contains(&b);
        if keep {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> Uri {
        "http://a/b/c/d;p?q".parse().unwrap()
    }

    /// Each `(location, expected)` resolves against [`base`] to `expected`.
    fn resolves_as(cases: &[(&str, &str)]) {
        for (location, expected) in cases {
            assert_eq!(
                resolve(&base(), location).unwrap(),
                *expected,
                "{location:?}"
            );
        }
    }

    #[test]
    fn rfc_3986_normal_examples() {
        // RFC 3986 §5.4.1, those a redirect can carry (fragments are dropped).
        let cases = [
            ("g", "http://a/b/c/g"),
            ("./g", "http://a/b/c/g"),
            ("g/", "http://a/b/c/g/"),
            ("/g", "http://a/g"),
            ("//g", "http://g/"),
            ("?y", "http://a/b/c/d;p?y"),
            ("g?y", "http://a/b/c/g?y"),
            ("#s", "http://a/b/c/d;p?q"),
            ("g#s", "http://a/b/c/g"),
            (";x", "http://a/b/c/;x"),
            ("", "http://a/b/c/d;p?q"),
            (".", "http://a/b/c/"),
            ("./", "http://a/b/c/"),
            ("..", "http://a/b/"),
            ("../", "http://a/b/"),
            ("../g", "http://a/b/g"),
            ("../..", "http://a/"),
            ("../../", "http://a/"),
            ("../../g", "http://a/g"),
        ];
        resolves_as(&cases);
    }

    #[test]
    fn rfc_3986_abnormal_examples() {
        // RFC 3986 §5.4.2: `..` past the root stays at the root.
        let cases = [
            ("../../../g", "http://a/g"),
            ("/./g", "http://a/g"),
            ("/../g", "http://a/g"),
            ("g.", "http://a/b/c/g."),
            (".g", "http://a/b/c/.g"),
            ("./../g", "http://a/b/g"),
            ("./g/.", "http://a/b/c/g/"),
            ("g/./h", "http://a/b/c/g/h"),
            ("g/../h", "http://a/b/c/h"),
        ];
        resolves_as(&cases);
    }

    #[test]
    fn absolute_locations_keep_their_scheme_and_authority() {
        let to = resolve(&base(), "HTTPS://user@Other:8443/x/../y?z").unwrap();
        assert_eq!(to.scheme_str(), Some("https"));
        assert_eq!(to.authority().unwrap().as_str(), "user@Other:8443");
        assert_eq!(to.path_and_query().unwrap().as_str(), "/y?z");
        assert_eq!(resolve(&base(), "http://h").unwrap(), "http://h/");
        assert_eq!(resolve(&base(), "http://h?x").unwrap(), "http://h/?x");
    }

    #[test]
    fn unsafe_bytes_are_percent_encoded() {
        assert_eq!(resolve(&base(), "/a b/é").unwrap(), "http://a/a%20b/%C3%A9");
        assert_eq!(
            resolve(&base(), "/search?q=\"a b\"&x=<y>").unwrap(),
            "http://a/search?q=%22a%20b%22&x=%3Cy%3E"
        );
        assert_eq!(
            resolve(&base(), "/p`{x}|^").unwrap(),
            "http://a/p%60%7Bx%7D%7C%5E"
        );
        // A backslash is not a slash here: the host stays.
        assert_eq!(
            resolve(&base(), "/\\evil.example/x").unwrap(),
            "http://a/%5Cevil.example/x"
        );
        // Existing escapes are kept as they are.
        assert_eq!(
            resolve(&base(), "/a%20b?c=%2F").unwrap(),
            "http://a/a%20b?c=%2F"
        );
    }

    #[test]
    fn hosts_must_be_ascii_and_ports_must_fit() {
        let err = resolve(&base(), "http://bücher.example/").unwrap_err();
        assert!(matches!(err, ResolveError::NonAsciiHost { .. }), "{err}");
        assert!(err.to_string().contains("not ASCII"), "{err}");
        let err = resolve(&base(), "http://a:65616/x").unwrap_err();
        assert!(matches!(err, ResolveError::PortOutOfRange { .. }), "{err}");
        assert!(err.to_string().contains("port out of range"), "{err}");
        assert_eq!(
            resolve(&base(), "http://a:65535/x").unwrap(),
            "http://a:65535/x"
        );
        assert_eq!(
            resolve(&base(), "http://[::1]:8/x").unwrap(),
            "http://[::1]:8/x"
        );
    }

    #[test]
    fn locations_without_a_host_or_unparsable_are_refused() {
        for bad in [
            "http:/x",
            "http:",
            "http:///x",
            "//",
            "mailto:x@y",
            "http://[::1/",
        ] {
            assert!(resolve(&base(), bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn origins_compare_scheme_host_and_effective_port() {
        let a: Uri = "https://h/x".parse().unwrap();
        assert!(same_origin(&a, &"https://h:443/y".parse().unwrap()));
        assert!(!same_origin(&a, &"https://g/x".parse().unwrap()));
        assert!(!same_origin(&a, &"http://h:443/x".parse().unwrap()));
    }
}
