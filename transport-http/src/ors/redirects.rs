//! [`Redirects`]: the redirects one ORS JSON request follows, by the rules the event-stream
//! [`Session`](crate::client::Session) follows them (see the [`redirect`] module): 301, 302,
//! 303, 307 and 308 with a `Location`, up to a limit of hops; the method and body per
//! [`redirect::method_after`], the headers describing a dropped body dropped with it; after a
//! hop to another origin, no `X-API-Key`, `X-Session-ID`, `Authorization`, `Cookie`,
//! `Proxy-Authorization` or `Host` for the rest of the request; `https` to `http`, schemes
//! the transport cannot speak, and `Location` fields that name no single target
//! ([`redirect::location`]: several different ones, an empty one) refused.
//!
//! Why an ORS client follows them at all: the SDK's own server (`ors-sdk` 0.1.0,
//! `ors/server.py`; `ors-http-api.md` §4) answers `308` with `Location: /{first_env}{path}`
//! (relative, query kept) to a path whose first segment is neither a route nor an
//! environment (its `RedirectToDefaultEnvMiddleware`: `POST /call` goes to `/gsm8k/call`),
//! and its router answers `307` with an absolute `Location` to a path that only matches with
//! or without a trailing slash (Starlette's `redirect_slashes`: `POST /ping/` goes to
//! `http://host/ping`). The SDK's client sends its JSON requests with aiohttp's defaults
//! (`ors/client/_http.py`, `client.request(method, path, ...)`), which follow redirects
//! (`allow_redirects=True`; `max_redirects=10`, its tenth redirect being the error), so it
//! gets the answer where a client that stops at the 3xx gets an error. Where ssekit is
//! stricter than that client: aiohttp keeps `X-API-Key` and `X-Session-ID` on a hop to
//! another origin (it drops only `Authorization`, `Cookie` and `Proxy-Authorization`), and
//! it follows `https` to `http`.

use bytes::Bytes;
use http::header::{HeaderName, HOST, LOCATION};
use http::{HeaderMap, Method, Request, Uri};

use crate::redirect::{self, RedirectError, BODY_HEADERS, CREDENTIAL_HEADERS};
use crate::Error;

/// The ORS headers that carry credentials, besides [`CREDENTIAL_HEADERS`]: the API key and
/// the session id (a bearer capability).
const ORS_CREDENTIALS: [HeaderName; 2] = [
    HeaderName::from_static("x-api-key"),
    HeaderName::from_static("x-session-id"),
];

/// One JSON request and the redirects it follows: [`request`](Self::request) is what to
/// send now; [`handle_response`](Self::handle_response) says whether an answer is a
/// redirect to follow (then send [`request`](Self::request) again) or the answer itself.
///
/// # Example
/// ```
/// use http::{HeaderMap, HeaderValue, Method};
/// use ssekit_http::ors::{json_request, Redirects};
/// let req = json_request("http://127.0.0.1:1", Method::POST, "/ping", Some("s1"), None, None)?;
/// let mut hops = Redirects::new(req, &["http"], 10);
/// let mut head = HeaderMap::new();
/// head.insert("location", HeaderValue::from_static("http://127.0.0.1:2/ping"));
/// assert!(hops.handle_response(307, &head)?); // followed: send `request()` again
/// let next = hops.request();
/// assert_eq!(next.method(), Method::POST);
/// assert_eq!(next.uri(), "http://127.0.0.1:2/ping");
/// assert!(next.headers().get("x-session-id").is_none()); // another origin
/// assert!(!hops.handle_response(200, &HeaderMap::new())?); // the answer
/// # Ok::<(), ssekit_http::Error>(())
/// ```
#[derive(Debug)]
pub struct Redirects {
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
    /// The URL the request was first sent to, for errors.
    opened: Uri,
    /// URL schemes the transport speaks, which a redirect may go to.
    schemes: &'static [&'static str],
    max: u32,
    hops: u32,
}

impl Redirects {
    /// Follows the redirects of `req` (an absolute URL) to URLs of `schemes`, at most `max`
    /// of them (0: none; a redirect is then the answer, which a JSON request reports as
    /// [`Error::Refused`]).
    ///
    /// # Example
    /// See [`Redirects`].
    pub fn new(req: Request<Bytes>, schemes: &'static [&'static str], max: u32) -> Self {
        let (parts, body) = req.into_parts();
        Redirects {
            method: parts.method,
            opened: parts.uri.clone(),
            uri: parts.uri,
            headers: parts.headers,
            body,
            schemes,
            max,
            hops: 0,
        }
    }

    /// The request to send now: the first one, or where the last redirect pointed.
    ///
    /// # Example
    /// See [`Redirects`].
    pub fn request(&self) -> Request<Bytes> {
        let mut req = Request::new(self.body.clone());
        *req.method_mut() = self.method.clone();
        *req.uri_mut() = self.uri.clone();
        *req.headers_mut() = self.headers.clone();
        req
    }

    /// The answer to [`request`](Self::request) was `status` with `headers`: `Ok(true)` when
    /// it is a redirect to follow (send [`request`](Self::request) next), `Ok(false)` when
    /// it is the answer (a redirect without a `Location`, or with `max` 0, is one).
    /// [`Error::Redirect`] when the redirect is refused: more than `max` hops, `Location`
    /// fields that name no single target or a target that does not resolve, a scheme the
    /// transport cannot speak, `https` to `http`.
    ///
    /// # Example
    /// ```
    /// use http::{HeaderMap, HeaderValue, Method};
    /// use ssekit_http::ors::{json_request, Redirects};
    /// use ssekit_http::RedirectError;
    /// let req = json_request("https://example.com", Method::GET, "/health", None, None, None)?;
    /// let mut hops = Redirects::new(req, &["http", "https"], 10);
    /// let mut head = HeaderMap::new();
    /// head.insert("location", HeaderValue::from_static("http://example.com/health"));
    /// let err = hops.handle_response(308, &head).unwrap_err();
    /// assert!(matches!(err, ssekit_http::Error::Redirect(RedirectError::Downgrade { status: 308, .. })));
    /// # Ok::<(), ssekit_http::Error>(())
    /// ```
    pub fn handle_response(&mut self, status: u16, headers: &HeaderMap) -> Result<bool, Error> {
        if !redirect::is_redirect(status) || self.max == 0 || !headers.contains_key(LOCATION) {
            return Ok(false);
        }
        self.follow(status, headers).map_err(Error::Redirect)?;
        Ok(true)
    }

    /// Makes the request a `status` redirect with these `headers` (which hold a `Location`)
    /// asks for the current one.
    fn follow(&mut self, status: u16, headers: &HeaderMap) -> Result<(), RedirectError> {
        if self.hops >= self.max {
            return Err(RedirectError::TooMany {
                max: self.max,
                from: crate::redacted_url(&self.opened.to_string()),
            });
        }
        let hop = redirect::next_hop(&self.uri, &self.method, status, headers, self.schemes)?;
        if !hop.keep_body {
            self.body = Bytes::new();
            for name in &BODY_HEADERS {
                self.headers.remove(name);
            }
        }
        // Removed from the request itself, so they stay dropped for the rest of it, even
        // after a later hop back to the first origin.
        if !hop.same_origin {
            for name in CREDENTIAL_HEADERS.iter().chain(&ORS_CREDENTIALS) {
                self.headers.remove(name);
            }
            self.headers.remove(HOST);
        }
        self.hops += 1;
        self.method = hop.method;
        self.uri = hop.to;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ors::json_request;
    use crate::redirect::LocationError;
    use http::HeaderValue;
    use serde_json::json;

    const SCHEMES: &[&str] = &["http", "https"];

    fn location(to: &'static str) -> HeaderMap {
        let mut head = HeaderMap::new();
        head.insert(LOCATION, HeaderValue::from_static(to));
        head
    }

    fn post(base: &str) -> Redirects {
        let body = json!({"split": "test"});
        let req = json_request(
            base,
            Method::POST,
            "/gsm8k/tasks",
            Some("sid"),
            Some(&body),
            Some("key"),
        )
        .unwrap();
        Redirects::new(req, SCHEMES, 10)
    }

    #[test]
    fn a_308_resends_method_body_and_headers() {
        let mut hops = post("http://h:1");
        assert!(hops.handle_response(308, &location("/env/tasks")).unwrap());
        let req = hops.request();
        assert_eq!(req.method(), Method::POST);
        assert_eq!(req.uri(), "http://h:1/env/tasks");
        assert_eq!(req.body(), r#"{"split":"test"}"#);
        for name in ["content-type", "x-api-key", "x-session-id"] {
            assert!(req.headers().contains_key(name), "{name}");
        }
    }

    #[test]
    fn a_303_turns_a_post_into_a_get_without_body_or_its_headers() {
        let mut hops = post("http://h:1");
        assert!(hops.handle_response(303, &location("/done")).unwrap());
        let req = hops.request();
        assert_eq!((req.method(), req.body().len()), (&Method::GET, 0));
        assert!(req.headers().get("content-type").is_none());
        assert!(req.headers().contains_key("x-api-key"));
        // A later 307 keeps the (now empty) body and does not bring the header back.
        assert!(hops.handle_response(307, &location("/again")).unwrap());
        assert!(hops.request().headers().get("content-type").is_none());
    }

    #[test]
    fn credentials_stay_dropped_after_a_hop_to_another_origin() {
        let mut hops = post("http://h:1");
        let mut req = hops.request();
        req.headers_mut()
            .insert("authorization", HeaderValue::from_static("Bearer t"));
        let mut hops2 = Redirects::new(req, SCHEMES, 10);
        for hops in [&mut hops, &mut hops2] {
            assert!(hops
                .handle_response(307, &location("http://h:2/x"))
                .unwrap());
            assert!(hops
                .handle_response(307, &location("http://h:1/y"))
                .unwrap());
            let req = hops.request();
            assert_eq!(req.uri(), "http://h:1/y");
            for name in ["x-api-key", "x-session-id", "authorization"] {
                assert!(req.headers().get(name).is_none(), "{name}");
            }
            assert_eq!(req.body(), r#"{"split":"test"}"#);
        }
    }

    #[test]
    fn refused_redirects_are_errors() {
        let refused = |base: &str, to: &'static str| {
            let err = post(base).handle_response(302, &location(to)).unwrap_err();
            match err {
                Error::Redirect(why) => why.to_string(),
                other => panic!("{other:?}"),
            }
        };
        assert!(refused("https://h", "http://h/x").contains("from https"));
        assert!(refused("http://h", "ftp://h/x").contains("scheme"));
        assert!(refused("http://h", "http://h:65616/x").contains("port"));
        let mut only_http = Redirects::new(post("http://h").request(), &["http"], 10);
        let err = only_http.handle_response(301, &location("https://h/"));
        assert!(matches!(
            err,
            Err(Error::Redirect(RedirectError::Scheme { .. }))
        ));
    }

    #[test]
    fn location_fields_must_name_one_target() {
        let mut head = location("/a");
        head.append(LOCATION, HeaderValue::from_static(" /a"));
        let mut hops = post("http://h");
        assert!(hops.handle_response(307, &head).unwrap()); // copies are one
        assert_eq!(hops.request().uri(), "http://h/a");
        head.append(LOCATION, HeaderValue::from_static("/b"));
        let err = post("http://h").handle_response(307, &head).unwrap_err();
        assert!(
            matches!(err, Error::Redirect(why) if why.to_string().contains("2 different Location"))
        );
        let err = post("http://h")
            .handle_response(307, &location(""))
            .unwrap_err();
        assert!(matches!(
            err,
            Error::Redirect(RedirectError::Location {
                status: 307,
                error: LocationError::Empty
            })
        ));
    }

    #[test]
    fn the_limit_counts_hops() {
        let req = post("http://h").request();
        let mut hops = Redirects::new(req, SCHEMES, 2);
        assert!(hops.handle_response(307, &location("/a")).unwrap());
        assert!(hops.handle_response(307, &location("/b")).unwrap());
        let err = hops.handle_response(307, &location("/c")).unwrap_err();
        assert!(
            matches!(err, Error::Redirect(why) if why.to_string() == "more than 2 redirects from http://h/gsm8k/tasks")
        );
    }

    #[test]
    fn answers_that_are_not_followed() {
        let mut hops = post("http://h");
        assert!(!hops.handle_response(200, &location("/a")).unwrap());
        assert!(!hops.handle_response(300, &location("/a")).unwrap());
        assert!(!hops.handle_response(308, &HeaderMap::new()).unwrap());
        let req = post("http://h").request();
        let mut none = Redirects::new(req, SCHEMES, 0);
        assert!(!none.handle_response(308, &location("/a")).unwrap());
        assert_eq!(hops.request().uri(), "http://h/gsm8k/tasks");
    }
}
