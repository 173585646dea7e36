//! The JSON lines of `ssekit tail --json` and `ssekit decode`: one schema for both, version 1
//! (`cli/JSON-LINES.md` is the same table for readers of the repository).
//!
//! Every line is one JSON object whose first key is `"v"` (the schema version, `1`) and whose
//! second is `"type"`; the other keys depend on the type. Strings are the stream's text as
//! decoded (invalid UTF-8 already replaced by U+FFFD), escaped only as JSON escapes them.
//!
//! | `type` | keys | written by | meaning |
//! |---|---|---|---|
//! | `event` | `event` (string), `id` (string or `null`), `data` (string) | both | an event dispatched by a blank line; `event` is `message` when the stream named none, `id` is `null` when the event had no `id:` field |
//! | `comment` | `text` (string) | both | a comment line, without the colon and one leading space (keep-alives) |
//! | `retry` | `ms` (integer) | both | a valid `retry:` field: the reconnection time in milliseconds |
//! | `dataless` | `event` (string), `id` (string or `null`) | both | a block with an `event:` or `id:` field but no `data:` line, which a browser drops |
//! | `connected` | `attempt` (integer) | tail | a response was accepted; 0 for the first connection, else the retry number |
//! | `disconnected` | `reason` (`clean`, `truncated`, `failed`, `refused` or `idle_timeout`), `message` (string) | tail | the connection ended: after a complete event, inside an event, on a transport error, on a refused response that is retried (5xx, 408, 429; `message` has its status and the start of its body), or after the idle timeout; `message` says it for people |
//! | `reconnecting` | `after_ms` (integer) | tail | the next attempt starts after this wait |
//! | `skipped` | `message` (string) | tail | a line or an event over the decoder's limits was dropped |
//! | `redirected` | `status` (integer), `to` (string) | tail | the server redirected the request (301, 302, 303, 307, 308) to the URL `to` |
//! | `end` | `reason` (`no_content`, `clean`, `terminal`, `gave_up`, `failed` or `interrupted`), `message` (string) | tail | the last line: how the stream ended (see [`EndReason`]); `message` says it for people |
//!
//! ```text
//! {"v":1,"type":"connected","attempt":0}
//! {"v":1,"type":"retry","ms":3000}
//! {"v":1,"type":"event","event":"message","id":"7","data":"hello"}
//! {"v":1,"type":"comment","text":"ping"}
//! {"v":1,"type":"disconnected","reason":"truncated","message":"the stream was cut inside an event"}
//! {"v":1,"type":"reconnecting","after_ms":3000}
//! {"v":1,"type":"end","reason":"no_content","message":"204: the server closed the stream for good"}
//! ```
//!
//! Compatibility: within version 1, types and keys may be added, never removed or changed;
//! readers ignore what they do not know. A disconnection reason this version does not know
//! is written as `failed`.

use serde::Serialize;
use ssekit::{Event, Frame};
use ssekit_hyper::client::{Ended, Item};

/// The schema version, the `"v"` of every line.
pub const VERSION: u32 = 1;

/// One line: the version, then the type and its keys, in this order.
#[derive(Debug, Serialize)]
struct Versioned<'a> {
    v: u32,
    #[serde(flatten)]
    line: Line<'a>,
}

/// The types of line and their keys (see the [module docs](self)).
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Line<'a> {
    Event {
        event: &'a str,
        id: Option<&'a str>,
        data: &'a str,
    },
    Comment {
        text: &'a str,
    },
    Retry {
        ms: u64,
    },
    Dataless {
        event: &'a str,
        id: Option<&'a str>,
    },
    Connected {
        attempt: u32,
    },
    Disconnected {
        reason: &'static str,
        message: String,
    },
    Reconnecting {
        after_ms: u64,
    },
    Skipped {
        message: String,
    },
    Redirected {
        status: u16,
        to: String,
    },
    End {
        reason: &'static str,
        message: &'a str,
    },
}

impl<'a> Line<'a> {
    fn event(e: &'a Event) -> Self {
        Line::Event {
            event: e.event_type(),
            id: e.id(),
            data: e.data(),
        }
    }

    fn dataless(e: &'a Event) -> Self {
        Line::Dataless {
            event: e.event_type(),
            id: e.id(),
        }
    }

    /// The line as JSON text. Serialising it cannot fail (every key is a string, every
    /// value a string, a number or null); if it did, nothing is written.
    fn into_json(self) -> Option<String> {
        serde_json::to_string(&Versioned {
            v: VERSION,
            line: self,
        })
        .ok()
    }
}

/// The line of a decoded frame (`decode`); `None` for a frame this version has no type for.
pub fn frame(frame: &Frame) -> Option<String> {
    match frame {
        Frame::Event(e) => Line::event(e),
        Frame::Comment(c) => Line::Comment { text: c.as_str() },
        Frame::Retry(ms) => Line::Retry { ms: *ms },
        Frame::Dataless(e) => Line::dataless(e),
        _ => return None,
    }
    .into_json()
}

/// The line of a `tail` item; `None` for an item this version has no type for.
pub fn item(item: &Item) -> Option<String> {
    match item {
        Item::Event(e) => Line::event(e),
        Item::Comment(c) => Line::Comment { text: c.as_str() },
        Item::Retry(ms) => Line::Retry { ms: *ms },
        Item::Dataless(e) => Line::dataless(e),
        Item::Connected { attempt } => Line::Connected { attempt: *attempt },
        Item::Disconnected(why) => Line::Disconnected {
            reason: reason(why),
            message: why.to_string(),
        },
        Item::Reconnecting { after } => Line::Reconnecting {
            after_ms: u64::try_from(after.as_millis()).unwrap_or(u64::MAX),
        },
        Item::Skipped(e) => Line::Skipped {
            message: e.to_string(),
        },
        Item::Redirected { status, to } => Line::Redirected {
            status: *status,
            to: to.to_string(),
        },
        _ => return None,
    }
    .into_json()
}

/// Why `tail` stopped: the `reason` of its last line, of type `end`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EndReason {
    /// The server answered 204: no more reconnects (`no_content`).
    NoContent,
    /// A clean end that `tail` does not reconnect after: `--once`, or a request that is not
    /// a GET without `--follow` (`clean`).
    Clean,
    /// The profile's terminal event arrived, a success or a failure event (`terminal`).
    Terminal,
    /// The failures in a row went over `--retries` (`gave_up`).
    GaveUp,
    /// Any other error: a refusal that is not retried, a cut with `--once`, a protocol
    /// violation (`failed`).
    Failed,
    /// Ctrl-C (`interrupted`).
    Interrupted,
}

impl EndReason {
    /// The `reason` key's value.
    pub fn as_str(self) -> &'static str {
        match self {
            EndReason::NoContent => "no_content",
            EndReason::Clean => "clean",
            EndReason::Terminal => "terminal",
            EndReason::GaveUp => "gave_up",
            EndReason::Failed => "failed",
            EndReason::Interrupted => "interrupted",
        }
    }
}

/// The last line of `tail`: how the stream ended, and `message` for people.
pub fn end(reason: EndReason, message: &str) -> Option<String> {
    Line::End {
        reason: reason.as_str(),
        message,
    }
    .into_json()
}

/// The `reason` of a `disconnected` line.
fn reason(why: &Ended) -> &'static str {
    match why {
        Ended::Clean => "clean",
        Ended::Truncated => "truncated",
        Ended::IdleTimeout => "idle_timeout",
        Ended::Refused(_) => "refused",
        // `Failed`, and any reason this version does not know.
        _ => "failed",
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::{json, Value};
    use ssekit::DecodeError;

    use super::*;

    fn parsed(line: Option<String>) -> (String, Value) {
        let text = line.expect("a line");
        let value = serde_json::from_str(&text).expect("JSON");
        (text, value)
    }

    /// Every type `decode` and `tail` share is written alike by both, "v" and "type" first.
    #[test]
    fn frames_and_items_share_their_lines() {
        let event = Event::builder()
            .id("7")
            .unwrap()
            .data("a \"quoted\"\nline\u{1b}")
            .build();
        let dataless = Event::builder().event("ping").unwrap().build();
        let cases = [
            (
                Frame::Event(event.clone()),
                Item::Event(event.clone()),
                r#"{"v":1,"type":"event","event":"message","id":"7","data":"a \"quoted\"\nline\u001b"}"#,
            ),
            (
                Frame::Event(Event::message("x")),
                Item::Event(Event::message("x")),
                r#"{"v":1,"type":"event","event":"message","id":null,"data":"x"}"#,
            ),
            (
                Frame::Comment("ping".into()),
                Item::Comment("ping".into()),
                r#"{"v":1,"type":"comment","text":"ping"}"#,
            ),
            (
                Frame::Retry(3000),
                Item::Retry(3000),
                r#"{"v":1,"type":"retry","ms":3000}"#,
            ),
            (
                Frame::Dataless(dataless.clone()),
                Item::Dataless(dataless),
                r#"{"v":1,"type":"dataless","event":"ping","id":null}"#,
            ),
        ];
        for (frame_in, item_in, expected) in cases {
            assert_eq!(frame(&frame_in).as_deref(), Some(expected));
            assert_eq!(item(&item_in).as_deref(), Some(expected));
        }
        let (_, value) = parsed(frame(&Frame::Event(event)));
        assert_eq!(value["data"], "a \"quoted\"\nline\u{1b}");
    }

    #[test]
    fn tail_lines_carry_the_connection_story() {
        let (text, value) = parsed(item(&Item::Connected { attempt: 2 }));
        assert_eq!(text, r#"{"v":1,"type":"connected","attempt":2}"#);
        assert_eq!(value["attempt"], 2);
        let (text, _) = parsed(item(&Item::Reconnecting {
            after: Duration::from_millis(3000),
        }));
        assert_eq!(text, r#"{"v":1,"type":"reconnecting","after_ms":3000}"#);
        let (_, value) = parsed(item(&Item::Reconnecting {
            after: Duration::MAX,
        }));
        assert_eq!(value["after_ms"], u64::MAX);
        let (text, _) = parsed(item(&Item::Redirected {
            status: 308,
            to: "http://127.0.0.1:9/next?a=1".parse().unwrap(),
        }));
        assert_eq!(
            text,
            r#"{"v":1,"type":"redirected","status":308,"to":"http://127.0.0.1:9/next?a=1"}"#
        );
        let (_, value) = parsed(item(&Item::Skipped(DecodeError::LineTooLong {
            offset: 5,
            size: 10,
            limit: 3,
        })));
        assert_eq!(
            value,
            json!({"v": 1, "type": "skipped", "message": "line at byte 5 reached 10 bytes, over the 3-byte limit"})
        );
    }

    #[test]
    fn the_end_line_has_a_reason_and_a_message() {
        let (text, _) = parsed(end(
            EndReason::NoContent,
            "204: the server closed the stream for good",
        ));
        assert_eq!(
            text,
            r#"{"v":1,"type":"end","reason":"no_content","message":"204: the server closed the stream for good"}"#
        );
        for (reason, name) in [
            (EndReason::Clean, "clean"),
            (EndReason::Terminal, "terminal"),
            (EndReason::GaveUp, "gave_up"),
            (EndReason::Failed, "failed"),
            (EndReason::Interrupted, "interrupted"),
        ] {
            let (_, value) = parsed(end(reason, "why"));
            assert_eq!(
                value,
                json!({"v": 1, "type": "end", "reason": name, "message": "why"})
            );
        }
    }

    #[test]
    fn disconnections_have_a_reason_and_a_message() {
        for (why, reason) in [
            (Ended::Clean, "clean"),
            (Ended::Truncated, "truncated"),
            (Ended::Failed(refused().into()), "failed"),
            (Ended::IdleTimeout, "idle_timeout"),
            (
                Ended::Refused(ssekit_http::Refused::new(503, None, b"busy")),
                "refused",
            ),
        ] {
            let (text, value) = parsed(item(&Item::Disconnected(why.clone())));
            assert!(
                text.starts_with(r#"{"v":1,"type":"disconnected","reason":"#),
                "{text}"
            );
            assert_eq!(value["reason"], reason);
            assert_eq!(value["message"], why.to_string());
        }
        let (_, value) = parsed(item(&Item::Disconnected(Ended::Failed(refused().into()))));
        assert_eq!(
            value["message"],
            "the connection failed: I/O error: connection refused"
        );
        let (_, value) = parsed(item(&Item::Disconnected(Ended::Refused(
            ssekit_http::Refused::new(503, None, b"busy"),
        ))));
        assert_eq!(
            value["message"],
            "the server answered 503 Service Unavailable: busy"
        );
    }

    fn refused() -> std::io::Error {
        std::io::Error::from(std::io::ErrorKind::ConnectionRefused)
    }
}
