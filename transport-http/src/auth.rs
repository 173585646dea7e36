//! [`basic_authorization`]: the `Basic` credentials of HTTP authentication (RFC 7617), as
//! the UTCP provider and the proxy tunnels send them.

/// The `Authorization` (or `Proxy-Authorization`) value for `user_pass`, the user id and the
/// password joined by a colon: `Basic ` and its base64 (RFC 4648, with padding).
///
/// # Example
/// ```
/// let value = ssekit_http::auth::basic_authorization("Aladdin:open sesame");
/// assert_eq!(value, "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==");
/// ```
pub fn basic_authorization(user_pass: &str) -> String {
    format!("Basic {}", base64(user_pass.as_bytes()))
}

fn base64(input: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(input.len().div_ceil(3) * 4);
    for chunk in input.chunks(3) {
        let b = [
            chunk.first().copied().unwrap_or(0),
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for (i, shift) in [18u32, 12, 6, 0].into_iter().enumerate() {
            if i <= chunk.len() {
                let index = usize::try_from((n >> shift) & 63).unwrap_or(0);
                out.push(char::from(ALPHABET.get(index).copied().unwrap_or(b'A')));
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_rfc4648_vectors() {
        for (plain, encoded) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64(plain.as_bytes()), encoded);
        }
    }
}
