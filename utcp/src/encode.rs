//! How a tool call's inputs become a request, as the official UTCP client (`utcp-http`
//! 1.1.15, on aiohttp) makes it, where the provider page is silent.
//!
//! - A header field's value is Python's `str()` of the input: `True`/`False`, `None`,
//!   `1.5`, `1e+20`, `['a', 1]`, `{'k': None}` ([`python_str`]).
//! - The body (the `body_field` input) is encoded by the template's `Content-Type`: JSON
//!   when it contains `application/json`; otherwise an object is form-encoded
//!   (`application/x-www-form-urlencoded`, as Python's `urlencode(doseq=True)` does it:
//!   `quote_plus`, a list repeats its key, a nested object sends its keys) and a string is
//!   sent as it is (`text/plain; charset=utf-8`). A `null` body is no body: the call is a
//!   `GET`.
//! - `{name}` in the URL is replaced by the input `name`, percent-encoded as Python's
//!   `quote(str(value), safe="")` does, and that input is no query parameter.
//!
//! Where ssekit differs on purpose (the official client raises a `TypeError` and makes no
//! request), see the crate docs' table of differences.

use std::fmt::Write as _;

use serde_json::{Map, Number, Value};

/// Python's `str()` of a JSON value as Python's `json` module reads it: strings as they
/// are, everything else as [`python_repr`].
pub(crate) fn python_str(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => python_repr(other),
    }
}

/// Python's `repr()` of a JSON value: `None`, `True`, `'text'`, `[1, 2.5]`, `{'k': 'v'}`.
/// Object keys come in the order of the `Map` (sorted: ssekit's serde_json keeps no
/// insertion order).
pub(crate) fn python_repr(value: &Value) -> String {
    let mut out = String::new();
    repr_into(value, &mut out);
    out
}

fn repr_into(value: &Value, out: &mut String) {
    match value {
        Value::Null => out.push_str("None"),
        Value::Bool(true) => out.push_str("True"),
        Value::Bool(false) => out.push_str("False"),
        Value::Number(n) => out.push_str(&python_number(n)),
        Value::String(s) => repr_str(s, out),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                repr_into(item, out);
            }
            out.push(']');
        }
        Value::Object(fields) => {
            out.push('{');
            for (i, (key, item)) in fields.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                repr_str(key, out);
                out.push_str(": ");
                repr_into(item, out);
            }
            out.push('}');
        }
    }
}

/// Python's `repr()` of a `str`: single quotes unless the text has a `'` and no `"`;
/// `\\`, the quote, `\t`, `\n`, `\r` escaped; other control and non-printable
/// characters as `\xNN`, `\uNNNN` or `\UNNNNNNNN`; printable non-ASCII kept.
fn repr_str(s: &str, out: &mut String) {
    let quote = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if !printable(c) => {
                let n = u32::from(c);
                let _ = if n <= 0xff {
                    write!(out, "\\x{n:02x}")
                } else if n <= 0xffff {
                    write!(out, "\\u{n:04x}")
                } else {
                    write!(out, "\\U{n:08x}")
                };
            }
            c => out.push(c),
        }
    }
    out.push(quote);
}

/// Python's `str.isprintable()` for one character, for the characters tool inputs carry:
/// control characters (Cc), the separators other than the space (Zs, Zl, Zp), the format
/// characters (Cf) of Latin-1 and of the General Punctuation block, the BOM, surrogates
/// and private use are not printable. (Unassigned code points, which Python also escapes,
/// are kept: telling them apart needs Unicode's tables.)
fn printable(c: char) -> bool {
    let n = u32::from(c);
    !(c.is_control()
        || n == 0xa0
        || n == 0xad
        || n == 0x1680
        || (0x2000..=0x200f).contains(&n)
        || (0x2028..=0x202f).contains(&n)
        || (0x205f..=0x206f).contains(&n)
        || n == 0x3000
        || n == 0xfeff
        || (0xe000..=0xf8ff).contains(&n)
        || (0xf0000..=0x10ffff).contains(&n))
}

/// A JSON number as Python prints what `json.loads` made of it: an integer as is, a float
/// as `repr(float)` (the shortest digits that read back; `1.0`, `0.0001`, `1e-05`,
/// `1e+16`, `1.5e+300`).
pub(crate) fn python_number(n: &Number) -> String {
    if let Some(i) = n.as_i64() {
        return i.to_string();
    }
    if let Some(u) = n.as_u64() {
        return u.to_string();
    }
    python_float(n.as_f64().unwrap_or(f64::NAN))
}

fn python_float(f: f64) -> String {
    if f.is_nan() {
        return "nan".to_owned();
    }
    if f.is_infinite() {
        return if f > 0.0 { "inf" } else { "-inf" }.to_owned();
    }
    // Rust's `{:e}` prints the shortest digits that read back, as Python's repr does:
    // `d[.ddd]e[-]x`. Python then writes them fixed for exponents -5 < x < 16.
    let sci = format!("{f:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => ("-", m),
        None => ("", mantissa),
    };
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    if (-4..16).contains(&exp) {
        let point = exp + 1; // digits before the decimal point
        let body = if point <= 0 {
            let zeros = usize::try_from(-point).unwrap_or(0);
            format!("0.{}{digits}", "0".repeat(zeros))
        } else {
            let point = usize::try_from(point).unwrap_or(0);
            if digits.len() <= point {
                format!("{digits}{}.0", "0".repeat(point - digits.len()))
            } else {
                format!("{}.{}", &digits[..point], &digits[point..])
            }
        };
        format!("{sign}{body}")
    } else {
        let (first, rest) = digits.split_at(1.min(digits.len()));
        let frac = if rest.is_empty() {
            String::new()
        } else {
            format!(".{rest}")
        };
        let esign = if exp < 0 { '-' } else { '+' };
        format!("{sign}{first}{frac}e{esign}{:02}", exp.unsigned_abs())
    }
}

/// Python's `quote_plus(text)`: letters, digits and `_.-~` pass, a space is `+`, every
/// other byte of the UTF-8 text is `%XX`.
pub(crate) fn quote_plus(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        match b {
            b' ' => out.push('+'),
            b if b.is_ascii_alphanumeric() || b"_.-~".contains(&b) => out.push(char::from(b)),
            b => {
                let _ = write!(out, "%{b:02X}");
            }
        }
    }
    out
}

/// An object as aiohttp form-encodes a `dict` body: Python's `urlencode(fields,
/// doseq=True)`. A list repeats its key once per element, a nested object once per key of
/// it (iterating a `dict` yields its keys), anything else is one `key=str(value)`.
pub(crate) fn form_encode(fields: &Map<String, Value>) -> String {
    let mut pairs = Vec::new();
    for (key, value) in fields {
        let key = quote_plus(key);
        match value {
            Value::String(s) => pairs.push(format!("{key}={}", quote_plus(s))),
            Value::Array(items) => {
                for item in items {
                    pairs.push(format!("{key}={}", quote_plus(&python_str(item))));
                }
            }
            Value::Object(inner) => {
                for inner_key in inner.keys() {
                    pairs.push(format!("{key}={}", quote_plus(inner_key)));
                }
            }
            other => pairs.push(format!("{key}={}", quote_plus(&python_str(other)))),
        }
    }
    pairs.join("&")
}

/// A query parameter value: what yarl accepts (strings, and numbers as Python prints
/// them); `true`/`false` and objects, which the official client refuses, as JSON.
pub(crate) fn query_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Number(n) => python_number(n),
        other => other.to_string(),
    }
}

/// `{name}` placeholders of `url` replaced by the inputs of those names (taken out of
/// `inputs`), each as Python's `quote(str(value), safe="")`. A placeholder with no input
/// is an error naming it.
pub(crate) fn fill_path(url: &str, inputs: &mut Map<String, Value>) -> Result<String, String> {
    let mut out = String::with_capacity(url.len());
    let mut rest = url;
    while let Some(open) = rest.find('{') {
        let Some(close) = rest[open..].find('}').map(|c| open + c) else {
            break;
        };
        let name = &rest[open + 1..close];
        if name.is_empty() {
            out.push_str(&rest[..=close]);
            rest = &rest[close + 1..];
            continue;
        }
        let value = inputs
            .remove(name)
            .ok_or_else(|| format!("the URL's path parameter {{{name}}} has no input"))?;
        out.push_str(&rest[..open]);
        out.push_str(&crate::encode_component(&python_str(&value)));
        rest = &rest[close + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn python_str_matches_cpython() {
        // Each expected text is what CPython 3.11 prints for `str(json.loads(input))`.
        for (input, expected) in [
            (json!(true), "True"),
            (json!(false), "False"),
            (json!(null), "None"),
            (json!(42), "42"),
            (json!(-7), "-7"),
            (json!(1.5), "1.5"),
            (json!(3.0), "3.0"),
            (json!(0.0001), "0.0001"),
            (json!(0.00001), "1e-05"),
            (json!(1e16), "1e+16"),
            (json!(1234567890123456.0), "1234567890123456.0"),
            (json!(1.5e300), "1.5e+300"),
            (json!(-2.5e-7), "-2.5e-07"),
            (json!(0.1), "0.1"),
            (json!("text"), "text"),
            (json!(["a", 1, true, null]), "['a', 1, True, None]"),
            (json!({"k": "it's"}), "{'k': \"it's\"}"),
            (json!({"a": {"b": [1.0]}}), "{'a': {'b': [1.0]}}"),
            (
                json!(["tab\there", "back\\slash", "é"]),
                r"['tab\there', 'back\\slash', 'é']",
            ),
            (
                json!(["\u{1}", "\u{a0}", "'\""]),
                r#"['\x01', '\xa0', '\'"']"#,
            ),
        ] {
            assert_eq!(python_str(&input), expected, "{input}");
        }
    }

    #[test]
    fn form_encoding_matches_urlencode_doseq() {
        // aiohttp 3.14 on {"a":1,"b":true,"c":null,"d":[1,"x"],"e":{"k":1},"f":1.5,"g":"a b+é"}.
        let body = json!({"a": 1, "b": true, "c": null, "d": [1, "x"], "e": {"k": 1}, "f": 1.5, "g": "a b+é"});
        assert_eq!(
            form_encode(body.as_object().unwrap()),
            "a=1&b=True&c=None&d=1&d=x&e=k&f=1.5&g=a+b%2B%C3%A9"
        );
    }

    #[test]
    fn path_parameters_are_filled_and_taken_out() {
        let mut inputs = json!({"id": "a/b c", "n": 2, "q": "x"})
            .as_object()
            .unwrap()
            .clone();
        let url = fill_path("http://h/items/{id}/{n}?x={}", &mut inputs).unwrap();
        assert_eq!(url, "http://h/items/a%2Fb%20c/2?x={}");
        assert_eq!(inputs.keys().collect::<Vec<_>>(), ["q"]);
        let err = fill_path("http://h/{missing}", &mut inputs).unwrap_err();
        assert!(err.contains("{missing}"), "{err}");
    }
}
