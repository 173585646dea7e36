//! OAuth2 for a provider's `auth`: the client-credentials grant, a token fetched from
//! `token_url` within [`TOKEN_TIMEOUT`] and [`MAX_TOKEN_RESPONSE`].
//!
//! A `token_url` can carry credentials of its own, in its user info (`user:password@`) or
//! its query: errors name it by scheme, host, port and path only ([`shown_url`]).

use std::time::Duration;

use bytes::Bytes;
use http::{Request, Uri};
use http_body_util::Full;
use serde::Deserialize;

use super::discovery::{bounded_exchange, Bounded};
use super::encode_component;
use crate::client::HttpClient;
use crate::Error;

/// How long an OAuth2 token request may take, connection to last byte.
///
/// # Example
/// ```
/// assert_eq!(ssekit_hyper::utcp::TOKEN_TIMEOUT, std::time::Duration::from_secs(30));
/// ```
pub const TOKEN_TIMEOUT: Duration = Duration::from_secs(30);

/// The largest OAuth2 token response read, in bytes.
///
/// # Example
/// ```
/// assert_eq!(ssekit_hyper::utcp::MAX_TOKEN_RESPONSE, 64 * 1024);
/// ```
pub const MAX_TOKEN_RESPONSE: usize = 64 << 10;

/// A URL as errors show it: `scheme://host[:port]/path`, without the user info, query and
/// fragment, where credentials go.
pub(crate) fn shown_url(uri: &Uri) -> String {
    let scheme = uri.scheme_str().unwrap_or("");
    let host_port = uri.authority().map_or("", |authority| {
        authority
            .as_str()
            .rsplit_once('@')
            .map_or(authority.as_str(), |(_, after)| after)
    });
    format!("{scheme}://{host_port}{}", uri.path())
}

#[derive(Deserialize)]
struct TokenResponse {
    access_token: String,
}

/// The client-credentials grant: a token from `token_url`, within [`TOKEN_TIMEOUT`] and
/// [`MAX_TOKEN_RESPONSE`].
pub(crate) async fn fetch_token(
    http: &HttpClient,
    token_url: &str,
    client_id: &str,
    client_secret: &str,
    scope: Option<&str>,
) -> Result<String, Error> {
    // `InvalidUri` says what is wrong without quoting the URL.
    let uri: Uri = token_url
        .parse()
        .map_err(|e| Error::Request(format!("the OAuth2 token_url is not a URL: {e}")))?;
    let shown = shown_url(&uri);
    let mut form = format!(
        "grant_type=client_credentials&client_id={}&client_secret={}",
        encode_component(client_id),
        encode_component(client_secret)
    );
    if let Some(scope) = scope {
        form.push_str(&format!("&scope={}", encode_component(scope)));
    }
    let req = Request::post(uri)
        .header("Content-Type", "application/x-www-form-urlencoded")
        .header("Accept", "application/json")
        .body(Full::new(Bytes::from(form)))
        .map_err(|e| Error::Request(format!("token_url {shown}: {e}")))?;
    let body = match bounded_exchange(http, req, TOKEN_TIMEOUT, MAX_TOKEN_RESPONSE).await {
        Ok(body) => body,
        Err(Bounded::Failed(e)) => return Err(e),
        Err(Bounded::TooLarge) => {
            return Err(Error::http(format!(
                "the token response from {shown} is larger than {MAX_TOKEN_RESPONSE} bytes"
            )))
        }
        Err(Bounded::TimedOut) => return Err(Error::no_response(TOKEN_TIMEOUT)),
    };
    Ok(serde_json::from_slice::<TokenResponse>(&body)?.access_token)
}

#[cfg(test)]
mod tests {
    use super::*;

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
