//! A JSON scanner for the profiles' hot path: it checks the syntax of a whole document
//! without allocating and hands back the top-level fields a profile asks for as borrowed
//! slices, so a text delta costs one pass over its bytes.
//!
//! What counts as valid is what `serde_json::from_str::<serde::de::IgnoredAny>` accepts
//! (RFC 8259 syntax; a property test holds the two together): any JSON value surrounded by
//! optional whitespace (space, tab, LF, CR). Like `IgnoredAny`, the scanner does not check
//! what an escape stands for (`"\ud800"` is valid syntax) nor the range of a number
//! (`1e400`); a profile that reads a value checks it when it reads it ([`unescape_into`],
//! [`Value::as_u64`]). Nesting deeper than [`MAX_DEPTH`] is [`ScanError::TooDeep`]: the
//! scanner keeps its stack in a 128-bit word, and a caller falls back to serde for such
//! (unusual) documents.
//!
//! Duplicate keys: the scanner keeps the last value and sets [`Fields::duplicate`] when a
//! wanted key occurs twice, so a caller can refuse it the way serde's derived structs do
//! ("duplicate field"); repeated keys it was not asked for are ignored, as serde does.
//! A top-level key written with an escape (`"ty\u0070e"`) cannot be matched without
//! decoding it; [`Fields::escaped_key`] tells the caller to fall back to serde.
//!
//! ```ignore
//! let fields = scan::object(r#"{"type":"a","n":1}"#, &["type", "n"])?.unwrap();
//! assert_eq!(fields.values[0].unwrap().raw, "a");
//! ```

use alloc::string::String;

/// The most non-empty objects and arrays the scanner follows one inside the other.
pub(crate) const MAX_DEPTH: usize = 128;

/// Why a document was not scanned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ScanError {
    /// Not valid JSON.
    Invalid,
    /// Valid so far, but nested deeper than [`MAX_DEPTH`].
    TooDeep,
}

/// The JSON type of a value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    String,
    Number,
    Bool,
    Null,
    Object,
    Array,
}

/// One value of the document, borrowed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Value<'a> {
    pub(crate) kind: Kind,
    /// A string's contents between the quotes, escapes not decoded; otherwise the value's
    /// text (a number's digits, `true`, a whole object with its braces).
    pub(crate) raw: &'a str,
    /// Whether a string holds a backslash (so `raw` is not its value).
    pub(crate) escaped: bool,
}

impl<'a> Value<'a> {
    /// The value as an unsigned integer, the way serde reads a `u64`: digits only (no sign,
    /// fraction or exponent) and in range.
    pub(crate) fn as_u64(&self) -> Option<u64> {
        if self.kind != Kind::Number {
            return None;
        }
        self.raw.bytes().try_fold(0u64, |n, digit| {
            if digit.is_ascii_digit() {
                n.checked_mul(10)?.checked_add(u64::from(digit - b'0'))
            } else {
                None
            }
        })
    }
}

/// The wanted top-level fields of an object, by position in the key list.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Fields<'a, const N: usize> {
    /// The value of each wanted key, `None` when absent.
    pub(crate) values: [Option<Value<'a>>; N],
    /// A wanted key occurred more than once.
    pub(crate) duplicate: bool,
    /// A top-level key holds an escape, so it was not matched.
    pub(crate) escaped_key: bool,
}

/// Checks that `text` is one JSON value.
pub(crate) fn validate(text: &str) -> Result<(), ScanError> {
    let mut s = Scanner::new(text);
    s.value()?;
    s.end()
}

/// Checks that `text` is one JSON value and, when it is an object, returns the values of
/// `keys` at its top level (`Ok(None)` for any other valid value).
#[cfg(test)]
pub(crate) fn object<'a, const N: usize>(
    text: &'a str,
    keys: &[&str; N],
) -> Result<Option<Fields<'a, N>>, ScanError> {
    object_with(text, |key| keys.iter().position(|k| *k == key))
}

/// `object` (kept for the tests) with the wanted keys given as a function from a key to its
/// slot (a `match` on the key compiles to a length switch and inline compares).
#[inline]
pub(crate) fn object_with<'a, const N: usize>(
    text: &'a str,
    slot_of: impl Fn(&str) -> Option<usize>,
) -> Result<Option<Fields<'a, N>>, ScanError> {
    let mut s = Scanner::new(text);
    s.ws();
    if s.peek() != Some(b'{') {
        s.value()?;
        s.end()?;
        return Ok(None);
    }
    s.pos += 1;
    let mut fields = Fields {
        values: [None; N],
        duplicate: false,
        escaped_key: false,
    };
    s.ws();
    if s.peek() == Some(b'}') {
        s.pos += 1;
        s.end()?;
        return Ok(Some(fields));
    }
    loop {
        if s.peek() != Some(b'"') {
            return Err(ScanError::Invalid);
        }
        let (key, escaped) = s.string()?;
        s.colon()?;
        let start = s.pos;
        // Strings and numbers, the usual values, without the container machinery.
        let (kind, string) = match s.peek() {
            Some(b'"') => (Kind::String, Some(s.string()?)),
            Some(b'-' | b'0'..=b'9') => {
                s.number()?;
                (Kind::Number, None)
            }
            _ => (s.value()?, None),
        };
        if escaped {
            fields.escaped_key = true;
        } else if let Some(slot) = slot_of(key).and_then(|i| fields.values.get_mut(i)) {
            fields.duplicate |= slot.is_some();
            *slot = Some(match string {
                Some((raw, escaped)) => Value { kind, raw, escaped },
                None => s.value_at(kind, start),
            });
        }
        if !matches!(s.peek(), Some(b',' | b'}')) {
            s.ws();
        }
        match s.next() {
            Some(b',') => s.ws(),
            Some(b'}') => break,
            _ => return Err(ScanError::Invalid),
        }
    }
    s.end()?;
    Ok(Some(fields))
}

/// Decodes the escapes of a JSON string's contents (`raw`, already scanned) into `out`.
/// `None` for an escape that stands for no character (a lone surrogate), which serde
/// refuses when it reads the string.
pub(crate) fn unescape_into(raw: &str, out: &mut String) -> Option<()> {
    let mut rest = raw;
    while let Some(at) = rest.find('\\') {
        out.push_str(rest.get(..at)?);
        let escape = rest.get(at + 1..)?;
        let mut chars = escape.chars();
        let c = match chars.next()? {
            '"' => '"',
            '\\' => '\\',
            '/' => '/',
            'b' => '\u{8}',
            'f' => '\u{c}',
            'n' => '\n',
            'r' => '\r',
            't' => '\t',
            'u' => {
                let high = hex4(escape.get(1..5)?)?;
                let (c, used) = match high {
                    0xD800..=0xDBFF => {
                        let low = escape
                            .get(5..7)
                            .filter(|s| *s == "\\u")
                            .and_then(|_| hex4(escape.get(7..11)?))
                            .filter(|low| (0xDC00..=0xDFFF).contains(low))?;
                        let code = 0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00);
                        (char::from_u32(code)?, 11)
                    }
                    _ => (char::from_u32(high)?, 5),
                };
                out.push(c);
                rest = escape.get(used..)?;
                continue;
            }
            _ => return None,
        };
        out.push(c);
        rest = chars.as_str();
    }
    out.push_str(rest);
    Some(())
}

/// Four hex digits.
fn hex4(digits: &str) -> Option<u32> {
    if digits.len() != 4 || !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u32::from_str_radix(digits, 16).ok()
}

/// Bytes per word of the string scan.
const WORD: usize = 8;
const ONES: u64 = 0x0101_0101_0101_0101;
const HIGH: u64 = 0x8080_8080_8080_8080;

/// The high bit of each byte of `w` that ends a run of plain string bytes: `"`, `\` or a
/// control character (below 0x20). The lowest set bit is exact (a borrow only sets bits
/// above a byte that matched).
#[inline(always)]
fn string_stops(w: u64) -> u64 {
    let quote = w ^ (ONES * u64::from(b'"'));
    let backslash = w ^ (ONES * u64::from(b'\\'));
    let zero = |v: u64| v.wrapping_sub(ONES) & !v;
    (zero(quote) | zero(backslash) | (w.wrapping_sub(ONES * 0x20) & !w)) & HIGH
}

struct Scanner<'a> {
    text: &'a str,
    bytes: &'a [u8],
    pos: usize,
    /// Whether the last string scanned held an escape.
    escaped: bool,
}

impl<'a> Scanner<'a> {
    fn new(text: &'a str) -> Self {
        Scanner {
            text,
            bytes: text.as_bytes(),
            pos: 0,
            escaped: false,
        }
    }

    #[inline(always)]
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    #[inline(always)]
    fn next(&mut self) -> Option<u8> {
        let b = self.peek();
        self.pos += 1;
        b
    }

    #[inline(always)]
    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.peek() {
            self.pos += 1;
        }
    }

    /// Only whitespace is left.
    fn end(&mut self) -> Result<(), ScanError> {
        self.ws();
        if self.pos == self.bytes.len() {
            Ok(())
        } else {
            Err(ScanError::Invalid)
        }
    }

    /// Whitespace, `:`, whitespace.
    #[inline(always)]
    fn colon(&mut self) -> Result<(), ScanError> {
        // Compact JSON (`"key":value`) takes the first branch: one compare, no loops.
        if self.peek() == Some(b':') {
            self.pos += 1;
        } else {
            self.ws();
            if self.next() != Some(b':') {
                return Err(ScanError::Invalid);
            }
        }
        self.ws();
        Ok(())
    }

    /// The value that started at `start` and ends here.
    fn value_at(&self, kind: Kind, start: usize) -> Value<'a> {
        let (from, to, escaped) = match kind {
            // A string's contents: inside the quotes.
            Kind::String => (start + 1, self.pos - 1, self.escaped),
            _ => (start, self.pos, false),
        };
        Value {
            kind,
            raw: self.text.get(from..to).unwrap_or_default(),
            escaped,
        }
    }

    /// A string, the opening quote next. Returns its contents and whether they hold an
    /// escape.
    #[inline(always)]
    fn string(&mut self) -> Result<(&'a str, bool), ScanError> {
        let start = self.pos + 1;
        let mut at = start;
        let mut escaped = false;
        loop {
            // Eight bytes at a time up to the first quote, backslash or control byte.
            while let Some(word) = self.bytes.get(at..at + WORD) {
                let mut buf = [0u8; WORD];
                buf.copy_from_slice(word);
                let stops = string_stops(u64::from_le_bytes(buf));
                if stops != 0 {
                    at += (stops.trailing_zeros() / 8) as usize;
                    break;
                }
                at += WORD;
            }
            match self.bytes.get(at) {
                Some(b'"') => {
                    self.pos = at + 1;
                    self.escaped = escaped;
                    let contents = self.text.get(start..at).ok_or(ScanError::Invalid)?;
                    return Ok((contents, escaped));
                }
                Some(b'\\') => {
                    escaped = true;
                    at = self.escape(at + 1)?;
                }
                Some(&b) if b >= 0x20 => at += 1,
                _ => return Err(ScanError::Invalid),
            }
        }
    }

    /// The escape whose letter is at `at`; returns where the string goes on.
    fn escape(&self, at: usize) -> Result<usize, ScanError> {
        match self.bytes.get(at) {
            Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => Ok(at + 1),
            Some(b'u') => {
                let digits = self.bytes.get(at + 1..at + 5).ok_or(ScanError::Invalid)?;
                if digits.iter().all(u8::is_ascii_hexdigit) {
                    Ok(at + 5)
                } else {
                    Err(ScanError::Invalid)
                }
            }
            _ => Err(ScanError::Invalid),
        }
    }

    /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`
    #[inline(always)]
    fn number(&mut self) -> Result<(), ScanError> {
        if self.peek() == Some(b'-') {
            self.pos += 1;
        }
        match self.next() {
            Some(b'0') => {}
            Some(b'1'..=b'9') => self.digits(),
            _ => return Err(ScanError::Invalid),
        }
        if self.peek() == Some(b'.') {
            self.pos += 1;
            self.some_digits()?;
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.pos += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.pos += 1;
            }
            self.some_digits()?;
        }
        Ok(())
    }

    #[inline(always)]
    fn digits(&mut self) {
        while self.peek().is_some_and(|b| b.is_ascii_digit()) {
            self.pos += 1;
        }
    }

    fn some_digits(&mut self) -> Result<(), ScanError> {
        let start = self.pos;
        self.digits();
        if self.pos == start {
            Err(ScanError::Invalid)
        } else {
            Ok(())
        }
    }

    fn literal(&mut self, word: &[u8]) -> Result<(), ScanError> {
        if self.bytes.get(self.pos..self.pos + word.len()) == Some(word) {
            self.pos += word.len();
            Ok(())
        } else {
            Err(ScanError::Invalid)
        }
    }

    /// One value (after optional whitespace); returns its kind. Nesting is followed with a
    /// bit stack (1 = object), not recursion, so no input can exhaust the call stack.
    fn value(&mut self) -> Result<Kind, ScanError> {
        let mut stack: u128 = 0;
        let mut depth = 0usize;
        let mut first = None;
        loop {
            // A value is expected.
            self.ws();
            let kind = match self.peek() {
                Some(b'{') | Some(b'[') => {
                    let object = self.peek() == Some(b'{');
                    self.pos += 1;
                    first.get_or_insert(if object { Kind::Object } else { Kind::Array });
                    self.ws();
                    if self.peek() == Some(if object { b'}' } else { b']' }) {
                        self.pos += 1;
                        None
                    } else {
                        if depth == MAX_DEPTH {
                            return Err(ScanError::TooDeep);
                        }
                        stack = (stack << 1) | u128::from(object);
                        depth += 1;
                        if object {
                            self.key()?;
                        }
                        continue;
                    }
                }
                Some(b'"') => {
                    self.string()?;
                    Some(Kind::String)
                }
                Some(b'-' | b'0'..=b'9') => {
                    self.number()?;
                    Some(Kind::Number)
                }
                Some(b't') => self.literal(b"true").map(|()| Some(Kind::Bool))?,
                Some(b'f') => self.literal(b"false").map(|()| Some(Kind::Bool))?,
                Some(b'n') => self.literal(b"null").map(|()| Some(Kind::Null))?,
                _ => return Err(ScanError::Invalid),
            };
            if let Some(kind) = kind {
                first.get_or_insert(kind);
            }
            // A value ended: close containers until one goes on with a comma.
            loop {
                if depth == 0 {
                    return first.ok_or(ScanError::Invalid);
                }
                self.ws();
                let in_object = stack & 1 == 1;
                match self.next() {
                    Some(b',') => {
                        if in_object {
                            self.ws();
                            self.key()?;
                        }
                        break;
                    }
                    Some(b'}') if in_object => {}
                    Some(b']') if !in_object => {}
                    _ => return Err(ScanError::Invalid),
                }
                stack >>= 1;
                depth -= 1;
            }
        }
    }

    /// A key and its colon, inside an object.
    fn key(&mut self) -> Result<(), ScanError> {
        if self.peek() != Some(b'"') {
            return Err(ScanError::Invalid);
        }
        self.string()?;
        self.colon()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::format;
    use alloc::string::ToString;
    use alloc::vec::Vec;
    use serde::de::IgnoredAny;

    fn serde_valid(text: &str) -> bool {
        serde_json::from_str::<IgnoredAny>(text).is_ok()
    }

    #[test]
    fn agrees_with_serde_on_edge_cases() {
        let cases = [
            "",
            " ",
            "{}",
            " {} ",
            "[]",
            "[ ]",
            "{ }",
            "null",
            "true",
            "false",
            "nul",
            "tru",
            "falsey",
            "0",
            "-0",
            "01",
            "-01",
            "1.",
            ".5",
            "1.5",
            "-",
            "1e",
            "1e+",
            "1E+2",
            "1e400",
            "-1.5e-7",
            "\"\"",
            "\"a",
            "\"\\x\"",
            "\"\\/\"",
            "\"\\u12\"",
            "\"\\u12g4\"",
            "\"\\ud800\"",
            "\"\\udc00\\ud800\"",
            "\"\\uD83D\\uDE00\"",
            "\"\u{1}\"",
            "\"\u{1f}\"",
            "\"\u{7f}\"",
            "\"é€😀\"",
            "\"tab\there\"",
            "[1,]",
            "[,1]",
            "[1 2]",
            "{\"a\":1,}",
            "{\"a\" 1}",
            "{\"a\":}",
            "{a:1}",
            "{\"a\":1}{}",
            "{} x",
            "\u{feff}{}",
            "\u{c}{}",
            "{\"a\":1 \n}",
            "{\"a\"\t:1}",
            "{\"a\":[1,{\"b\":[]}],\"c\":{\"d\":null}}",
            "[[[]]]",
            "[[[]]",
            "[]]",
            "{\"a\":[}",
            "{\"a\":1,\"a\":2}",
            "\"\\\\\"",
            "\"\\\"\"",
            "\"a\\",
            "[\"a\"",
            "{\"a\"",
            "{\"a\":\"b\"",
            "1 2",
            "[1,\n2]",
            "\r\n[1]\t",
        ];
        for case in cases {
            assert_eq!(validate(case).is_ok(), serde_valid(case), "{case:?}");
        }
    }

    #[test]
    fn depth_is_limited_to_max_depth_and_reported_as_too_deep() {
        let nest = |n: usize| "[".repeat(n) + &"]".repeat(n);
        // An empty container holds nothing, so it takes no place on the stack.
        assert_eq!(validate(&nest(MAX_DEPTH + 1)), Ok(()));
        assert_eq!(validate(&nest(MAX_DEPTH + 2)), Err(ScanError::TooDeep));
        let objects = |n: usize| "{\"a\":".repeat(n) + "1" + &"}".repeat(n);
        assert_eq!(validate(&objects(MAX_DEPTH)), Ok(()));
        assert_eq!(validate(&objects(MAX_DEPTH + 1)), Err(ScanError::TooDeep));
        // Serde (IgnoredAny) follows any depth: callers fall back to it on TooDeep.
        assert!(serde_valid(&nest(MAX_DEPTH + 1)));
        // Deep but invalid is still found invalid when the error comes before the limit.
        assert_eq!(validate("[[[}"), Err(ScanError::Invalid));
    }

    #[test]
    fn object_picks_top_level_keys_only_and_borrows_them() {
        let text =
            r#"{"type":"a.b","inner":{"type":"no"},"n":12,"s":"x\ny","o":{"k":[1]},"z":null}"#;
        let fields = object(text, &["type", "n", "s", "o", "z", "absent"])
            .unwrap()
            .unwrap();
        let [t, n, s, o, z, absent] = fields.values;
        assert_eq!(t.unwrap().raw, "a.b");
        assert_eq!(t.unwrap().kind, Kind::String);
        assert_eq!(n.unwrap().as_u64(), Some(12));
        assert_eq!(s.unwrap().raw, "x\\ny");
        assert!(s.unwrap().escaped);
        assert_eq!(o.unwrap().raw, "{\"k\":[1]}");
        assert_eq!(o.unwrap().kind, Kind::Object);
        assert_eq!(z.unwrap().kind, Kind::Null);
        assert!(absent.is_none());
        assert!(!fields.duplicate && !fields.escaped_key);
    }

    #[test]
    fn duplicate_wanted_keys_are_flagged_and_others_ignored() {
        // serde's derived structs refuse a duplicate known field and ignore unknown ones.
        let f = object(r#"{"type":"a","type":"b"}"#, &["type"])
            .unwrap()
            .unwrap();
        assert!(f.duplicate);
        assert_eq!(f.values[0].unwrap().raw, "b");
        let f = object(r#"{"x":1,"x":2,"type":"a"}"#, &["type"])
            .unwrap()
            .unwrap();
        assert!(!f.duplicate);
    }

    #[test]
    fn escaped_keys_are_flagged_not_matched() {
        let f = object(r#"{"ty\u0070e":"a"}"#, &["type"]).unwrap().unwrap();
        assert!(f.escaped_key);
        assert!(f.values[0].is_none());
    }

    #[test]
    fn non_objects_are_valid_but_have_no_fields() {
        assert!(object("[1]", &["a"]).unwrap().is_none());
        assert!(object(" \"x\" ", &["a"]).unwrap().is_none());
        assert_eq!(object("{\"a\":1", &["a"]).unwrap_err(), ScanError::Invalid);
        assert_eq!(object("[1", &["a"]).unwrap_err(), ScanError::Invalid);
    }

    #[test]
    fn numbers_read_as_u64_like_serde() {
        for (text, expected) in [
            ("0", Some(0)),
            ("18446744073709551615", Some(u64::MAX)),
            ("18446744073709551616", None),
            ("-0", None),
            ("-1", None),
            ("1.0", None),
            ("1E2", None),
        ] {
            let doc = format!("{{\"n\":{text}}}");
            let f = object(&doc, &["n"]).unwrap().unwrap();
            assert_eq!(f.values[0].unwrap().as_u64(), expected, "{text}");
            #[derive(serde::Deserialize)]
            struct N {
                n: u64,
            }
            assert_eq!(
                serde_json::from_str::<N>(&doc).ok().map(|n| n.n),
                expected,
                "{text}"
            );
        }
    }

    #[test]
    fn unescape_decodes_like_serde_and_refuses_lone_surrogates() {
        for raw in [
            r#"plain"#,
            r#"a\nb\tc\"d\\e\/f\bg\fh\ri"#,
            r#"\u00e9\u20AC\uD83D\uDE00"#,
            r#"\ud800"#,
            r#"\udc00"#,
            r#"\ud800\u0041"#,
            r#"x\ud83d"#,
        ] {
            let mut out = String::new();
            let ours = unescape_into(raw, &mut out).map(|()| out);
            let theirs = serde_json::from_str::<String>(&format!("\"{raw}\"")).ok();
            assert_eq!(ours, theirs, "{raw}");
        }
    }

    #[test]
    fn strings_of_every_length_find_their_end_past_word_edges() {
        for len in 0..40 {
            for special in ["", "\\n", "\\u0041", "é"] {
                let body = "a".repeat(len) + special + &"b".repeat(len % 9);
                let doc = format!("{{\"k\":\"{body}\",\"after\":1}}");
                let f = object(&doc, &["k", "after"]).unwrap().unwrap();
                assert_eq!(f.values[0].unwrap().raw, body);
                assert_eq!(f.values[1].unwrap().as_u64(), Some(1));
                let bad = format!("{{\"k\":\"{body}\u{1}\"}}");
                assert!(object(&bad, &["k"]).is_err(), "{bad:?}");
            }
        }
    }

    /// JSON-ish text: fragments that are valid on their own, glued at random, so that a
    /// good share of the inputs is valid and the rest is broken in many ways.
    fn jsonish() -> impl proptest::strategy::Strategy<Value = String> {
        use alloc::vec;
        use proptest::prelude::*;
        let piece = prop_oneof![
            Just("{".to_string()),
            Just("}".to_string()),
            Just("[".to_string()),
            Just("]".to_string()),
            Just(",".to_string()),
            Just(":".to_string()),
            Just(" ".to_string()),
            Just("\"k\"".to_string()),
            Just("\"type\"".to_string()),
            Just("null".to_string()),
            Just("true".to_string()),
            Just("-".to_string()),
            Just("0".to_string()),
            Just("12".to_string()),
            Just(".5".to_string()),
            Just("e-3".to_string()),
            Just("\"\\u00e9\\ud800\\n\"".to_string()),
            Just("\"\\".to_string()),
            Just("\"".to_string()),
            "[a-z\u{1}\u{7f}é]{0,3}",
            any::<u8>().prop_map(|b| char::from(b).to_string()),
        ];
        proptest::collection::vec(piece, 0..16).prop_map(|v| v.concat())
    }

    /// Objects that are mostly valid: the shape of a Responses event with random values.
    fn objectish() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        let value = prop_oneof![
            Just("1".to_string()),
            Just("\"a\\\"b\"".to_string()),
            Just("[1,{\"a\":[]}]".to_string()),
            Just("{\"error\":null}".to_string()),
            Just("null".to_string()),
            jsonish(),
        ];
        let key = prop_oneof![Just("type"), Just("delta"), Just("output_index"), Just("x"),];
        proptest::collection::vec((key, value), 0..5).prop_map(|fields| {
            let body: Vec<String> = fields
                .into_iter()
                .map(|(k, v)| format!("\"{k}\":{v}"))
                .collect();
            format!("{{{}}}", body.join(","))
        })
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(4096))]

        #[test]
        fn validity_agrees_with_serde_ignored_any(text in jsonish()) {
            let ours = validate(&text);
            proptest::prop_assert_ne!(ours, Err(ScanError::TooDeep));
            proptest::prop_assert_eq!(ours.is_ok(), serde_valid(&text), "{:?}", text);
        }

        #[test]
        fn object_validity_agrees_with_serde_ignored_any(text in objectish()) {
            let ours = object(&text, &["type", "delta"]);
            proptest::prop_assert_eq!(ours.is_ok(), serde_valid(&text), "{:?}", text);
        }

        #[test]
        fn arbitrary_strings_agree_with_serde(text in "\\PC{0,24}") {
            proptest::prop_assert_eq!(validate(&text).is_ok(), serde_valid(&text), "{:?}", text);
        }
    }
}
