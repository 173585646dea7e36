//! Deterministic workloads for the ssekit benchmarks (the benches live in `benches/`).
//!
//! Every generator is a pure function of its arguments: the same call gives the same bytes
//! on every machine, so figures from different runs compare.
//!
//! [`workload`] holds the decode workloads of issue 8 and how they are cut into pieces;
//! [`report_dir`] is where the benches that are not criterion's leave their figures for
//! `scripts/bench-table`; [`report`] is what the examples that print their own tables share.

pub mod report;
pub mod workload;

/// The repository README's examples, compiled and run as doctests so they cannot drift from
/// the API. Here, in a crate that is never packaged, since the README lies outside every
/// published crate.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
struct ReadmeDoctests;

/// GUARANTEES.md's examples, compiled and run the same way.
#[cfg(doctest)]
#[doc = include_str!("../../GUARANTEES.md")]
struct GuaranteesDoctests;

/// `target/criterion/ssekit-benches`, under `CARGO_TARGET_DIR` when it is set: where the
/// allocation counts and one-shot timings (runs too slow to repeat) are written as JSON.
///
/// # Example
/// ```
/// assert!(ssekit_benches::report_dir().ends_with("criterion/ssekit-benches"));
/// ```
pub fn report_dir() -> std::path::PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(
        || std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target"),
        std::path::PathBuf::from,
    );
    target.join("criterion").join("ssekit-benches")
}

/// A small linear congruential generator: deterministic, no dependency.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 33
    }
}

const WORDS: [&str; 16] = [
    " the", " stream", " of", " tokens", " arrives", " as", " server", "-sent", " events", ",",
    " one", " small", " JSON", " object", " each", ".",
];

/// An OpenAI Responses API stream as Open Responses Server sends it (`data:` lines only):
/// `response.created`, `response.in_progress`, `deltas` × `response.output_text.delta`
/// (about 150 bytes each on the wire), `response.completed`. Returns the bytes and the number
/// of events.
///
/// # Example
/// ```
/// let (bytes, events) = ssekit_benches::responses_tokens(100);
/// assert_eq!(events, 103);
/// assert!(bytes.len() > 100 * 140 && bytes.len() < 100 * 160 + 1000);
/// ```
pub fn responses_tokens(deltas: usize) -> (Vec<u8>, usize) {
    let mut rng = Lcg(0x5eed);
    let mut out = Vec::with_capacity(deltas * 160 + 1024);
    let snapshot = |status: &str| {
        format!(
            r#"{{"id":"resp_68a1f0c2d4e6b8a0","object":"response","created_at":1763769600,"status":"{status}","model":"gpt-4o-mini","output":[],"error":null}}"#
        )
    };
    let mut push = |json: &str| {
        out.extend_from_slice(b"data: ");
        out.extend_from_slice(json.as_bytes());
        out.extend_from_slice(b"\n\n");
    };
    push(&format!(
        r#"{{"type":"response.created","response":{}}}"#,
        snapshot("in_progress")
    ));
    push(&format!(
        r#"{{"type":"response.in_progress","response":{}}}"#,
        snapshot("in_progress")
    ));
    for n in 0..deltas {
        let mut token = String::new();
        for _ in 0..1 + rng.next() % 3 {
            let word = WORDS
                .get((rng.next() % 16) as usize)
                .copied()
                .unwrap_or(" x");
            token.push_str(word);
        }
        push(&format!(
            r#"{{"type":"response.output_text.delta","sequence_number":{n},"item_id":"msg_68a1f0c2d4e6b8a0","output_index":0,"content_index":0,"delta":"{token}"}}"#
        ));
    }
    push(&format!(
        r#"{{"type":"response.completed","response":{}}}"#,
        snapshot("completed")
    ));
    (out, deltas + 3)
}
