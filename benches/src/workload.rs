//! The decode workloads of issue 8, each a pure function of its byte budget, and the
//! pieces they are fed in.
//!
//! | name | what it stands for |
//! |---|---|
//! | `tokens` | an OpenAI Responses API text stream: ~150-byte `data:` events ([`crate::responses_tokens`]) |
//! | `ors-chunks` | an ORS tool result: `task_id`, 4096-byte `chunk` events, `end` |
//! | `big-data` | 64 KiB single-line `data:` events |
//! | `multiline-crlf` | 20 `data:` lines of 60 bytes per event, CRLF line endings |
//! | `keepalive-heavy` | a comment line before every small event: half the non-blank lines are comments |

use bytes::Bytes;

use crate::Lcg;

/// The piece sizes every workload is fed in: a byte at a time, tiny reads, a TCP segment, a
/// large read buffer.
pub const FEEDS: [usize; 4] = [1, 10, 1460, 16384];

/// Every workload, in table order.
pub const ALL: [Workload; 5] = [
    Workload::Tokens,
    Workload::OrsChunks,
    Workload::BigData,
    Workload::MultilineCrlf,
    Workload::KeepaliveHeavy,
];

/// One decode workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Workload {
    /// Responses API text deltas, ~150 bytes per event.
    Tokens,
    /// ORS tool result: `task_id`, 4096-byte `chunk`s, `end`.
    OrsChunks,
    /// 64 KiB data lines.
    BigData,
    /// 20 data lines of 60 bytes per event, CRLF.
    MultilineCrlf,
    /// Half the non-blank lines are comments.
    KeepaliveHeavy,
}

impl Workload {
    /// The name used in benchmark ids and tables.
    ///
    /// # Example
    /// ```
    /// assert_eq!(ssekit_benches::workload::Workload::OrsChunks.name(), "ors-chunks");
    /// ```
    pub const fn name(self) -> &'static str {
        match self {
            Workload::Tokens => "tokens",
            Workload::OrsChunks => "ors-chunks",
            Workload::BigData => "big-data",
            Workload::MultilineCrlf => "multiline-crlf",
            Workload::KeepaliveHeavy => "keepalive-heavy",
        }
    }

    /// The stream for pieces of `feed` bytes: about 1 MiB for reads of 1460 bytes and more,
    /// 256 KiB for 10-byte pieces, 64 KiB for single bytes (so a run stays short), and at least
    /// one whole event. Returns the bytes and the number of events a WHATWG decoder
    /// dispatches from them.
    ///
    /// # Example
    /// ```
    /// use ssekit_benches::workload::Workload;
    /// let (bytes, events) = Workload::BigData.stream_for_feed(16384);
    /// assert_eq!(events, 16);
    /// assert_eq!(bytes.len(), 16 * (65536 + 8));
    /// ```
    pub fn stream_for_feed(self, feed: usize) -> (Vec<u8>, usize) {
        self.stream(budget_for_feed(feed))
    }

    /// The stream of about `budget` bytes (at least one event). Returns the bytes and the
    /// number of events.
    ///
    /// # Example
    /// ```
    /// use ssekit_benches::workload::Workload;
    /// let (bytes, events) = Workload::KeepaliveHeavy.stream(10_000);
    /// assert!(bytes.len() >= 10_000 && events > 100);
    /// ```
    pub fn stream(self, budget: usize) -> (Vec<u8>, usize) {
        match self {
            Workload::Tokens => crate::responses_tokens((budget / 150).max(1)),
            Workload::OrsChunks => ors_chunks(budget),
            Workload::BigData => big_data((budget / BIG_LINE).max(1)),
            Workload::MultilineCrlf => multiline_crlf((budget / 1362).max(1)),
            Workload::KeepaliveHeavy => keepalive_heavy(budget),
        }
    }
}

/// The byte budget for a feed size (see [`Workload::stream_for_feed`]).
///
/// # Example
/// ```
/// assert_eq!(ssekit_benches::workload::budget_for_feed(1), 64 << 10);
/// ```
pub const fn budget_for_feed(feed: usize) -> usize {
    match feed {
        0..=1 => 64 << 10,
        2..=63 => 256 << 10,
        _ => 1 << 20,
    }
}

/// `whole` cut into pieces of `feed` bytes (the last may be shorter), each a slice of `whole`:
/// no copy, as a socket reader hands `Bytes` over.
///
/// # Example
/// ```
/// let pieces = ssekit_benches::workload::pieces(&bytes::Bytes::from_static(b"abcde"), 2);
/// assert_eq!(pieces, ["ab", "cd", "e"]);
/// ```
pub fn pieces(whole: &Bytes, feed: usize) -> Vec<Bytes> {
    whole
        .chunks(feed.max(1))
        .map(|piece| whole.slice_ref(piece))
        .collect()
}

/// Deterministic ASCII text without CR or LF (letters, digits, spaces, punctuation that JSON
/// strings carry unescaped).
fn text(rng: &mut Lcg, len: usize) -> Vec<u8> {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz ABCDEFGHIJ0123456789 .,;-_/()[] ";
    (0..len)
        .map(|_| {
            let i = (rng.next() % ALPHABET.len() as u64) as usize;
            ALPHABET.get(i).copied().unwrap_or(b'x')
        })
        .collect()
}

/// The data of one `big-data` event.
const BIG_LINE: usize = 65536;

/// `events` events of one 64 KiB `data:` line each.
fn big_data(events: usize) -> (Vec<u8>, usize) {
    let mut rng = Lcg(0xb16);
    let mut out = Vec::with_capacity(events * (BIG_LINE + 8));
    for _ in 0..events {
        out.extend_from_slice(b"data: ");
        out.extend_from_slice(&text(&mut rng, BIG_LINE));
        out.extend_from_slice(b"\n\n");
    }
    (out, events)
}

/// An ORS tool call's stream: `event: task_id`, the result JSON in 4096-byte `chunk` events,
/// the rest in `end`. The result is about `budget` bytes.
fn ors_chunks(budget: usize) -> (Vec<u8>, usize) {
    const CHUNK: usize = 4096;
    let mut rng = Lcg(0x0a5);
    let mut result = Vec::with_capacity(budget + 128);
    result.extend_from_slice(br#"{"ok":true,"output":{"blocks":[{"type":"text","text":""#);
    let tail = br#""}],"metadata":null,"reward":1.0,"finished":true}}"#;
    let body = budget.saturating_sub(result.len() + tail.len()).max(1);
    result.extend_from_slice(&text(&mut rng, body));
    result.extend_from_slice(tail);
    let mut out = Vec::with_capacity(result.len() + result.len() / CHUNK * 24 + 128);
    out.extend_from_slice(b"event: task_id\ndata: 5f0c8a2e-3b7d-4e1f-9a6c-2d8e4b1f7a30\n\n");
    let mut events = 1;
    let mut rest = result.as_slice();
    while rest.len() > CHUNK {
        let (chunk, more) = rest.split_at(CHUNK);
        out.extend_from_slice(b"event: chunk\ndata: ");
        out.extend_from_slice(chunk);
        out.extend_from_slice(b"\n\n");
        events += 1;
        rest = more;
    }
    out.extend_from_slice(b"event: end\ndata: ");
    out.extend_from_slice(rest);
    out.extend_from_slice(b"\n\n");
    (out, events + 1)
}

/// `events` events of 20 `data:` lines with 60-byte values, every line ended by CRLF
/// (1362 bytes per event).
fn multiline_crlf(events: usize) -> (Vec<u8>, usize) {
    let mut rng = Lcg(0xc71f);
    let mut out = Vec::with_capacity(events * 1262);
    for _ in 0..events {
        for _ in 0..20 {
            out.extend_from_slice(b"data: ");
            out.extend_from_slice(&text(&mut rng, 60));
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(b"\r\n");
    }
    (out, events)
}

/// About `budget` bytes of `: keep-alive` comment lines, each followed by a small JSON event:
/// half the non-blank lines are comments.
fn keepalive_heavy(budget: usize) -> (Vec<u8>, usize) {
    let mut out = Vec::with_capacity(budget + 64);
    let mut events = 0;
    while out.len() < budget || events == 0 {
        out.extend_from_slice(b": keep-alive\n");
        out.extend_from_slice(format!("data: {{\"seq\":{events},\"ok\":true}}\n\n").as_bytes());
        events += 1;
    }
    (out, events)
}
