//! `ssekit check FILE [--profile P] [--strict]`: lint a captured stream.
//!
//! The input is read 64 KiB at a time, so memory stays bounded by the decoder's limits and a
//! live stream (`curl -N … | ssekit check -`) is reported on as it arrives. Each read is cut
//! at line endings and every line goes through two readers: a [`Checker`]'s own look at its
//! bytes (line endings, field names, values, UTF-8), and the real [`Decoder`], fed the same
//! line, whose frames then belong to that line: so every finding has the byte offset of the
//! event or line it is about, and the event's number, counted from 1, exactly as the
//! decoder counts events. With a profile, the decoder's events also go to its validator.
//!
//! What is reported, as `ssekit check --help` prints it:
//!
#![doc = include_str!("check_help.md")]

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::process::ExitCode;

use clap::Args;
use clap::ValueEnum as _;
use ssekit::decode::Mode;
use ssekit::sequence::{SequenceError, Validator};
use ssekit::{Config, DecodeError, Decoder, FrameRef, StreamEnd};
use tokio::io::AsyncReadExt;

use crate::commands::escape_controls;
use crate::profiles::{validator, AnyProfile, ProfileName};
use crate::CliError;

/// The lists of errors and warnings, for `--help`.
pub const HELP: &str = include_str!("check_help.md");

/// `ssekit check` arguments.
#[derive(Args, Debug)]
pub struct CheckArgs {
    /// The captured stream (`-` for stdin).
    file: String,
    /// Also validate the events against this protocol.
    #[arg(long, value_enum)]
    profile: Option<ProfileName>,
    /// Exit 1 on warnings too.
    #[arg(long)]
    strict: bool,
    /// Accept a capture without any event (an empty file, keep-alive comments only), which
    /// is otherwise an error: not an event stream.
    #[arg(long)]
    allow_empty: bool,
}

/// How many findings of one ID are printed; the summary counts them all.
const SHOWN_PER_ID: u64 = 10;

// The stream's findings, by ID (the profiles' are their rules).
const TRUNCATED: &str = "sse.truncated";
const INVALID_UTF8: &str = "sse.invalid-utf8";
const LINE_TOO_LONG: &str = "sse.line-too-long";
const EVENT_TOO_LARGE: &str = "sse.event-too-large";
const CR_LINE_ENDING: &str = "sse.cr-line-ending";
const BOM: &str = "sse.bom";
const NO_COLON: &str = "sse.no-colon";
const UNKNOWN_FIELD: &str = "sse.unknown-field";
const RETRY_IGNORED: &str = "sse.retry-ignored";
const ID_NUL: &str = "sse.id-nul";
const DATALESS: &str = "sse.dataless";
const NOT_AN_EVENT_STREAM: &str = "sse.not-an-event-stream";

/// The UTF-8 byte-order mark.
const BOM_BYTES: [u8; 3] = [0xEF, 0xBB, 0xBF];

/// Validates a captured stream (see the [module docs](self)); the exit code says whether it
/// passed.
pub async fn check(args: CheckArgs) -> Result<ExitCode, CliError> {
    let CheckArgs {
        file,
        profile,
        strict,
        allow_empty,
    } = args;
    let rules = Rules {
        profile,
        strict,
        allow_empty,
    };
    if file == "-" {
        check_from(tokio::io::stdin(), &file, "cannot read stdin", rules).await
    } else {
        let cannot_read = format!("cannot read {file}");
        let input = tokio::fs::File::open(&file)
            .await
            .map_err(|e| CliError::Io(cannot_read.clone(), e))?;
        check_from(input, &file, &cannot_read, rules).await
    }
}

/// What `check` holds a stream to, beside the specification.
#[derive(Clone, Copy, Debug)]
pub struct Rules {
    /// Also validate the events against this protocol (`--profile`).
    pub profile: Option<ProfileName>,
    /// Warnings fail too (`--strict`).
    pub strict: bool,
    /// A stream without events passes (`--allow-empty`).
    pub allow_empty: bool,
}

/// `check` over `input`, named `file` in messages; `cannot_read` says what a read error is.
/// Findings go to stderr as they are found, the summary to stdout.
pub async fn check_from(
    mut input: impl tokio::io::AsyncRead + Unpin,
    file: &str,
    cannot_read: &str,
    rules: Rules,
) -> Result<ExitCode, CliError> {
    let Rules {
        profile,
        strict,
        allow_empty,
    } = rules;
    let mut checker = Checker::new(Config::default(), profile);
    let mut report = Report::new(file);
    let mut not_an_event_stream = false;
    let mut buf = vec![0u8; 64 << 10];
    loop {
        let n = input
            .read(&mut buf)
            .await
            .map_err(|e| CliError::Io(cannot_read.to_owned(), e))?;
        if n == 0 {
            checker.finish(&mut |f| report.add(f));
            if let Some(finding) = checker.not_an_event_stream(allow_empty) {
                report.add(finding);
                not_an_event_stream = true;
            }
            break;
        }
        checker.feed(buf.get(..n).unwrap_or_default(), &mut |f| report.add(f));
        if checker.stopped_at().is_some() {
            break;
        }
    }
    report.hidden();
    let failed = report.errors > 0 || (strict && report.warnings > 0);
    let mut summary = format!(
        "{}: {}, {}, {}, {}",
        escape_controls(file),
        if failed { "failed" } else { "ok" },
        plural(checker.events(), "event"),
        plural(report.errors, "error"),
        plural(report.warnings, "warning"),
    );
    let mut notes = Vec::new();
    if let Some(name) = profile.and_then(|p| p.to_possible_value()) {
        notes.push(format!("{} profile", name.get_name()));
    }
    if let Some(at) = checker.stopped_at() {
        notes.push(format!("stopped at byte {at}"));
    }
    if not_an_event_stream {
        notes.push("not an event stream".to_owned());
    }
    // A valid capture, but of a call that failed: said, not failed on.
    if let Some(failure) = checker.failure() {
        notes.push(format!("ends in the provider's failure {failure}"));
    }
    if failed && report.errors == 0 {
        notes.push("--strict".to_owned());
    }
    if !notes.is_empty() {
        let _ = write!(summary, " ({})", notes.join(", "));
    }
    println!("{summary}");
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// `1 event`, `2 events`.
fn plural(n: u64, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

/// How serious a finding is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Level {
    /// The stream breaks the specification or its protocol, or loses data.
    Error,
    /// Valid, but a known client chokes on it, or it looks like a mistake.
    Warning,
}

/// One thing `check` reports.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Finding {
    level: Level,
    /// Stream offset of the event's start, or of the offending line or byte.
    offset: u64,
    /// The event the offset belongs to, counted from 1 (between events, the next one).
    event: u64,
    /// The stable ID: `sse.*` for the stream's findings, a profile's rule ID.
    id: &'static str,
    /// What was found, for people.
    text: String,
}

impl Finding {
    fn error(offset: u64, event: u64, id: &'static str, text: impl Into<String>) -> Self {
        Finding {
            level: Level::Error,
            offset,
            event,
            id,
            text: text.into(),
        }
    }

    fn warning(offset: u64, event: u64, id: &'static str, text: impl Into<String>) -> Self {
        Finding {
            level: Level::Warning,
            ..Finding::error(offset, event, id, text)
        }
    }
}

/// Counts findings and prints them to stderr, at most [`SHOWN_PER_ID`] of each ID.
struct Report<'a> {
    file: &'a str,
    per_id: BTreeMap<&'static str, u64>,
    errors: u64,
    warnings: u64,
}

impl<'a> Report<'a> {
    fn new(file: &'a str) -> Self {
        Report {
            file,
            per_id: BTreeMap::new(),
            errors: 0,
            warnings: 0,
        }
    }

    fn add(&mut self, finding: Finding) {
        let (level, count) = match finding.level {
            Level::Error => ("error", &mut self.errors),
            Level::Warning => ("warning", &mut self.warnings),
        };
        *count += 1;
        let seen = self.per_id.entry(finding.id).or_insert(0);
        *seen += 1;
        if *seen <= SHOWN_PER_ID {
            let line = format!(
                "{}: byte {}: event {}: {level}: {} [{}]",
                self.file, finding.offset, finding.event, finding.text, finding.id
            );
            eprintln!("{}", escape_controls(&line));
        }
    }

    /// One line per ID with findings not shown.
    fn hidden(&self) {
        for (id, &seen) in &self.per_id {
            if seen > SHOWN_PER_ID {
                let line = format!(
                    "{}: {} more [{id}] not shown",
                    self.file,
                    seen - SHOWN_PER_ID
                );
                eprintln!("{}", escape_controls(&line));
            }
        }
    }
}

/// Where findings go.
type Sink<'s> = dyn FnMut(Finding) + 's;

/// The field a line names, as far as `check` cares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Field {
    Known,
    Id,
    Retry,
    Unknown,
}

/// What is known of the line being read.
#[derive(Clone, Debug, Default)]
struct Line {
    /// No byte of the line yet (a line ending now makes a blank line).
    empty: bool,
    /// The line starts with `:`.
    comment: bool,
    /// The first bytes of the field name, up to [`NAME_KEPT`].
    name: Vec<u8>,
    /// The name is longer than what `name` kept.
    long_name: bool,
    /// The colon was read; what follows is the value.
    colon: Option<Field>,
    /// Value bytes read, after the one optional space.
    value_len: u64,
    /// Whether the one optional space after the colon has been looked for.
    value_started: bool,
    /// Every value byte so far is an ASCII digit.
    digits: bool,
    /// A value byte was NUL.
    nul: bool,
    /// Every byte of the field name so far is a word's (see [`is_word_byte`]).
    word: bool,
    /// The first bytes of the line, up to [`TEXT_KEPT`], to quote it.
    text: Vec<u8>,
    /// The line is longer than what `text` kept.
    long_text: bool,
}

/// Bytes of a line kept to quote it (the first line that is no SSE field).
const TEXT_KEPT: usize = 60;

/// A byte of a field name that looks like one: an ASCII letter or digit, `-` or `_`. A line
/// whose name has any other byte (`<!doctype html>`, `  "key": 1,`, `{`) is no SSE field,
/// as far as telling an event stream from another document goes.
fn is_word_byte(b: &u8) -> bool {
    b.is_ascii_alphanumeric() || *b == b'-' || *b == b'_'
}

/// Bytes of a field name kept for messages (the known names are at most 5 bytes long).
const NAME_KEPT: usize = 40;

impl Line {
    fn new() -> Self {
        Line {
            empty: true,
            digits: true,
            word: true,
            ..Line::default()
        }
    }

    /// Takes bytes of the line (no CR or LF among them).
    fn take(&mut self, mut bytes: &[u8]) {
        let room = TEXT_KEPT.saturating_sub(self.text.len());
        self.text.extend(bytes.iter().take(room));
        self.long_text |= bytes.len() > room;
        if self.empty {
            let Some(&first) = bytes.first() else {
                return;
            };
            self.empty = false;
            self.comment = first == b':';
        }
        if self.comment {
            return;
        }
        if self.colon.is_none() {
            let (name, rest) = match bytes.iter().position(|&b| b == b':') {
                Some(i) => (bytes.get(..i).unwrap_or_default(), bytes.get(i + 1..)),
                None => (bytes, None),
            };
            self.word &= name.iter().all(is_word_byte);
            let room = NAME_KEPT.saturating_sub(self.name.len());
            self.name.extend(name.iter().take(room));
            self.long_name |= name.len() > room;
            let Some(rest) = rest else {
                return;
            };
            self.colon = Some(match (self.long_name, self.name.as_slice()) {
                (false, b"event" | b"data") => Field::Known,
                (false, b"id") => Field::Id,
                (false, b"retry") => Field::Retry,
                _ => Field::Unknown,
            });
            bytes = rest;
        }
        if !self.value_started && !bytes.is_empty() {
            self.value_started = true;
            if let Some(rest) = bytes.strip_prefix(b" ") {
                bytes = rest;
            }
        }
        self.value_len += bytes.len() as u64;
        match self.colon {
            Some(Field::Retry) => self.digits &= bytes.iter().all(u8::is_ascii_digit),
            Some(Field::Id) => self.nul |= bytes.contains(&0),
            _ => {}
        }
    }

    /// Whether the line reads as SSE: a comment, or a field whose name (before the first
    /// colon, or the whole line) is a word (see [`is_word_byte`]), known or not. Only for a
    /// line that is not blank.
    fn is_sse(&self) -> bool {
        self.comment || (self.word && !self.name.is_empty())
    }

    /// The line as text to quote in a message, cut after [`TEXT_KEPT`] bytes.
    fn quoted(&self) -> String {
        let mut text = String::from_utf8_lossy(&self.text).into_owned();
        if self.long_text {
            text.push('…');
        }
        text
    }

    /// The field name as text for a message.
    fn name_text(&self) -> String {
        let mut name = String::from_utf8_lossy(&self.name).into_owned();
        if self.long_name {
            name.push('…');
        }
        name
    }

    /// The warning about the complete line, if any: `(id, text)`.
    fn warning(&self) -> Option<(&'static str, String)> {
        if self.empty || self.comment {
            return None;
        }
        if self.name.starts_with(&BOM_BYTES) {
            return Some((
                BOM,
                "a byte-order mark (U+FEFF) starts this line: only one at the start of the \
                 stream is stripped, so the field name is unknown and the line is ignored \
                 (two captures joined?)"
                    .to_owned(),
            ));
        }
        let name = self.name_text();
        match self.colon {
            None => Some((
                NO_COLON,
                format!(
                    "a line without a colon: per the spec the field `{name}` with an empty \
                     value; the official ors-sdk client raises on it"
                ),
            )),
            Some(Field::Unknown) => Some((
                UNKNOWN_FIELD,
                format!(
                    "unknown field `{name}` (fields are event, data, id and retry, \
                     case-sensitive): ignored"
                ),
            )),
            Some(Field::Retry) if !self.digits || self.value_len == 0 => Some((
                RETRY_IGNORED,
                "a `retry:` value that is not all ASCII digits: ignored".to_owned(),
            )),
            Some(Field::Id) if self.nul => Some((
                ID_NUL,
                "an `id:` value with a NUL character: ignored, the last event ID stays".to_owned(),
            )),
            _ => None,
        }
    }
}

/// UTF-8 across reads: a character cut by the end of one piece is completed by the next.
#[derive(Debug, Default)]
struct Utf8 {
    /// The start of a character the last piece ended inside.
    carry: Vec<u8>,
    /// Stream offset of `carry`.
    carry_at: u64,
}

/// What [`Utf8::check`] finds.
enum Utf8Finding {
    /// Bytes that are no UTF-8, at this offset.
    Invalid(u64, Vec<u8>),
    /// A U+FEFF at this offset.
    Feff(u64),
}

impl Utf8 {
    /// Checks `bytes`, at stream offset `at`, behind what earlier calls left open.
    fn check(&mut self, bytes: &[u8], at: u64, found: &mut dyn FnMut(Utf8Finding)) {
        let joined;
        let (text, base) = if self.carry.is_empty() {
            (bytes, at)
        } else {
            joined = [self.carry.as_slice(), bytes].concat();
            self.carry.clear();
            (joined.as_slice(), self.carry_at)
        };
        let mut pos = 0;
        while let Some(rest) = text.get(pos..) {
            let (valid, bad) = match std::str::from_utf8(rest) {
                Ok(valid) => (valid, None),
                Err(e) => (
                    // `valid_up_to` is where the valid prefix ends, so this cannot fail.
                    std::str::from_utf8(rest.get(..e.valid_up_to()).unwrap_or_default())
                        .unwrap_or_default(),
                    Some((e.valid_up_to(), e.error_len())),
                ),
            };
            for (i, _) in valid.match_indices('\u{feff}') {
                found(Utf8Finding::Feff(base + (pos + i) as u64));
            }
            match bad {
                None => break,
                Some((start, Some(len))) => {
                    let bytes = rest.get(start..start + len).unwrap_or_default().to_vec();
                    found(Utf8Finding::Invalid(base + (pos + start) as u64, bytes));
                    pos += start + len;
                }
                Some((start, None)) => {
                    self.carry = rest.get(start..).unwrap_or_default().to_vec();
                    self.carry_at = base + (pos + start) as u64;
                    break;
                }
            }
        }
    }

    /// The input ended: a character left open is invalid.
    fn finish(&mut self, found: &mut dyn FnMut(Utf8Finding)) {
        if !self.carry.is_empty() {
            found(Utf8Finding::Invalid(
                self.carry_at,
                std::mem::take(&mut self.carry),
            ));
        }
    }
}

/// Reads a stream, line by line, and reports what it finds (see the [module docs](self)).
struct Checker {
    decoder: Decoder,
    state: State,
}

/// Everything of a [`Checker`] but its decoder, so that a frame borrowed from the decoder
/// can be handled.
struct State {
    validator: Option<Validator<AnyProfile>>,
    /// Stream offset of the next byte.
    offset: u64,
    /// Events the decoder dispatched.
    events: u64,
    /// The first (up to 3) bytes, held until it is known whether they are a byte-order mark.
    head: Vec<u8>,
    /// The head was dealt with.
    head_done: bool,
    /// The line being read, and its stream offset.
    line: Line,
    line_at: u64,
    /// Offset of the first field line of the block being read (the event's start).
    block_at: Option<u64>,
    /// The last line ended with a CR at this offset, in this event, and the next byte says
    /// whether an LF completes it.
    pending_cr: Option<(u64, u64)>,
    /// A lone CR was reported (it is reported once).
    cr_reported: bool,
    utf8: Utf8,
    /// Checking stopped at this offset (a limit, a protocol error).
    stopped: Option<u64>,
    /// What the lines are: to tell an event stream from another document.
    shape: Shape,
}

/// What the lines of the input are, to tell an event stream from another document (an HTML
/// error page, a JSON body) that `check` was given by mistake.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Shape {
    /// Lines that ended (the line being read has number `lines + 1`).
    lines: u64,
    /// Lines that are not blank.
    non_blank: u64,
    /// Comment lines.
    comments: u64,
    /// Lines that are not blank and read as no SSE field nor comment ([`Line::is_sse`]).
    not_sse: u64,
    /// The first of them: its line number (from 1), offset, event number and text.
    first_not_sse: Option<(u64, u64, u64, String)>,
}

impl Checker {
    /// A checker decoding with `config` (its mode is set to raw, to see data-less blocks)
    /// and validating against `profile`, if any.
    fn new(config: Config, profile: Option<ProfileName>) -> Self {
        Checker {
            decoder: Decoder::with_config(config.mode(Mode::Raw)),
            state: State {
                validator: profile.map(validator),
                offset: 0,
                events: 0,
                head: Vec::with_capacity(3),
                head_done: false,
                line: Line::new(),
                line_at: 0,
                block_at: None,
                pending_cr: None,
                cr_reported: false,
                utf8: Utf8::default(),
                stopped: None,
                shape: Shape::default(),
            },
        }
    }

    /// The failure the stream's terminal event reported, per its profile.
    fn failure(&self) -> Option<ssekit::sequence::Failure> {
        ssekit::sequence::Profile::failure(self.state.validator.as_ref()?.profile())
    }

    fn events(&self) -> u64 {
        self.state.events
    }

    fn stopped_at(&self) -> Option<u64> {
        self.state.stopped
    }

    /// Once the whole input was read: the error that it is no event stream, if it is not.
    /// That is: it has no event at all (unless `allow_empty`), or more than half of its
    /// lines that are not blank read as no SSE field nor comment ([`Line::is_sse`]).
    fn not_an_event_stream(&self, allow_empty: bool) -> Option<Finding> {
        let s = &self.state;
        if s.stopped.is_some() {
            return None;
        }
        let shape = &s.shape;
        let mostly_not_sse = shape.not_sse * 2 > shape.non_blank;
        let no_events = s.events == 0 && !allow_empty;
        if !(no_events || mostly_not_sse) {
            return None;
        }
        let mut reasons = Vec::new();
        if s.events == 0 {
            reasons.push(if s.offset == 0 {
                "the input is empty".to_owned()
            } else if shape.comments > 0 && shape.comments == shape.non_blank {
                format!("0 events, {} only", plural(shape.comments, "comment"))
            } else {
                "0 events".to_owned()
            });
        }
        let (mut at, mut event) = (0, s.events + 1);
        if mostly_not_sse && let Some((line, offset, in_event, text)) = &shape.first_not_sse {
            let (lines, are) = match shape.non_blank {
                1 => ("line is not an SSE field", "line"),
                _ => ("lines are not SSE fields", "first at line"),
            };
            reasons.push(format!(
                "{} of {} {lines} ({are} {line}: `{text}`)",
                shape.not_sse, shape.non_blank
            ));
            (at, event) = (*offset, *in_event);
        }
        let mut text = format!("not an event stream: {}", reasons.join("; "));
        if !mostly_not_sse {
            text.push_str(" (--allow-empty accepts a capture without events)");
        }
        Some(Finding::error(at, event, NOT_AN_EVENT_STREAM, text))
    }

    /// Reads the next piece of the stream.
    fn feed(&mut self, mut bytes: &[u8], sink: &mut Sink<'_>) {
        if !self.state.head_done {
            let take = bytes.len().min(3 - self.state.head.len());
            self.state.head.extend(bytes.iter().take(take));
            bytes = bytes.get(take..).unwrap_or_default();
            if self.state.head.len() < 3 {
                return;
            }
            self.head(sink);
        }
        self.lines(bytes, sink);
    }

    /// The first bytes are known (3 of them, or the input ended): a byte-order mark is
    /// decoded but not read as a line; anything else is read as the start of the stream.
    fn head(&mut self, sink: &mut Sink<'_>) {
        self.state.head_done = true;
        let head = std::mem::take(&mut self.state.head);
        if head == BOM_BYTES {
            self.pass(&head, sink);
            self.state.line_at = self.state.offset;
        } else {
            self.lines(&head, sink);
        }
    }

    /// Bytes that are no line of their own (a byte-order mark, the LF of a CRLF): to the
    /// UTF-8 check and the decoder only.
    fn pass(&mut self, bytes: &[u8], sink: &mut Sink<'_>) {
        self.utf8(bytes, sink);
        self.decode(bytes, sink);
        self.state.offset += bytes.len() as u64;
    }

    /// Cuts `bytes` into lines (pieces ending with CR or LF, and a last piece without) and
    /// reads each.
    fn lines(&mut self, mut bytes: &[u8], sink: &mut Sink<'_>) {
        while let Some(&first) = bytes.first() {
            if self.state.stopped.is_some() {
                return;
            }
            if let Some((cr_at, event)) = self.state.pending_cr.take() {
                if first == b'\n' {
                    self.pass(bytes.get(..1).unwrap_or_default(), sink);
                    self.state.line_at = self.state.offset;
                    bytes = bytes.get(1..).unwrap_or_default();
                    continue;
                }
                self.lone_cr(cr_at, event, sink);
            }
            let end = bytes.iter().position(|&b| b == b'\n' || b == b'\r');
            let len = end.map_or(bytes.len(), |i| i + 1);
            let (piece, rest) = bytes.split_at(len);
            bytes = rest;
            self.piece(piece, end.is_some(), sink);
        }
    }

    /// Reads one piece of a line: `ended` when its last byte is the line's CR or LF.
    fn piece(&mut self, piece: &[u8], ended: bool, sink: &mut Sink<'_>) {
        let content = if ended {
            piece
                .get(..piece.len().saturating_sub(1))
                .unwrap_or_default()
        } else {
            piece
        };
        self.utf8(piece, sink);
        let s = &mut self.state;
        if s.line.empty && content.first().is_some_and(|&b| b != b':') {
            s.block_at.get_or_insert(s.line_at);
        }
        s.line.take(content);
        let blank = ended && s.line.empty;
        if ended && piece.last() == Some(&b'\r') {
            s.pending_cr = Some((s.offset + content.len() as u64, s.events + 1));
        }
        // The decoder first: a line over its limits is that error alone. A line that is
        // not blank dispatches no event, so the event number stays.
        self.decode(piece, sink);
        let s = &mut self.state;
        if ended {
            s.shape_line();
        }
        if ended
            && s.stopped.is_none()
            && let Some((id, text)) = s.line.warning()
        {
            sink(Finding::warning(s.line_at, s.events + 1, id, text));
        }
        s.offset += piece.len() as u64;
        if ended {
            s.line = Line::new();
            s.line_at = s.offset;
            if blank {
                s.block_at = None;
            }
        }
    }

    fn lone_cr(&mut self, at: u64, event: u64, sink: &mut Sink<'_>) {
        if !self.state.cr_reported {
            self.state.cr_reported = true;
            sink(Finding::warning(
                at,
                event,
                CR_LINE_ENDING,
                "a line ends with a lone CR (first one; the rest are not reported): valid, \
                 but clients that split lines on LF only, such as the official ors-sdk \
                 client, read one long line",
            ));
        }
    }

    fn utf8(&mut self, bytes: &[u8], sink: &mut Sink<'_>) {
        let s = &mut self.state;
        let (line_at, event) = (s.line_at, s.events + 1);
        s.utf8.check(bytes, s.offset, &mut |found| {
            utf8_finding(found, line_at, event, sink)
        });
    }

    /// Feeds the decoder and handles the frames it completes.
    fn decode(&mut self, bytes: &[u8], sink: &mut Sink<'_>) {
        if let Err(e) = self.decoder.feed_slice(bytes) {
            self.state.limit(e, sink);
            return;
        }
        loop {
            match self.decoder.next_frame_ref() {
                Ok(Some(frame)) => self.state.frame(frame, sink),
                Ok(None) => return,
                Err(e) => return self.state.limit(e, sink),
            }
            if self.state.stopped.is_some() {
                return;
            }
        }
    }

    /// The input ended.
    fn finish(&mut self, sink: &mut Sink<'_>) {
        if !self.state.head_done {
            self.head(sink);
        }
        if self.state.stopped.is_some() {
            return;
        }
        if let Some((cr_at, event)) = self.state.pending_cr.take() {
            self.lone_cr(cr_at, event, sink);
        }
        let s = &mut self.state;
        // A last line without a line ending.
        if !s.line.empty {
            s.shape_line();
        }
        let (line_at, event) = (s.line_at, s.events + 1);
        s.utf8
            .finish(&mut |found| utf8_finding(found, line_at, event, sink));
        match self.decoder.finish() {
            StreamEnd::Truncated { .. } => {
                let (at, text) = match s.block_at {
                    Some(at) => (
                        at,
                        format!(
                            "the stream ends inside event {event} (no blank line after it): \
                             a client discards it"
                        ),
                    ),
                    None => (
                        s.line_at,
                        "the stream ends inside a line (no line ending after it): a client \
                         discards it"
                            .to_owned(),
                    ),
                };
                sink(Finding::error(at, event, TRUNCATED, text));
            }
            StreamEnd::Failed(e) => s.limit(e, sink),
            _ => {}
        }
        if let Some(v) = s.validator.as_mut()
            && v.error().is_none()
            && let Err(e) = v.finish()
        {
            let text = match &e {
                SequenceError::Unterminated { events, .. } => format!(
                    "the stream ends after {} without its terminal event",
                    plural(*events, "event")
                ),
                other => other.to_string(),
            };
            sink(Finding::error(s.offset, event, e.rule().id(), text));
        }
    }
}

/// A UTF-8 finding as `check` reports it; a U+FEFF at the start of a line (`line_at`) is
/// left to the line's own warning, and one at the start of the stream is stripped.
fn utf8_finding(found: Utf8Finding, line_at: u64, event: u64, sink: &mut Sink<'_>) {
    match found {
        Utf8Finding::Invalid(at, bytes) => {
            let hex: Vec<String> = bytes.iter().map(|b| format!("{b:02x}")).collect();
            sink(Finding::error(
                at,
                event,
                INVALID_UTF8,
                format!(
                    "invalid UTF-8 (bytes {}): a decoder puts U+FFFD in their place",
                    hex.join(" ")
                ),
            ));
        }
        Utf8Finding::Feff(at) if at != line_at => sink(Finding::warning(
            at,
            event,
            BOM,
            "a byte-order mark (U+FEFF) after the start of the stream: only a leading one is \
             stripped, so this one is text",
        )),
        Utf8Finding::Feff(_) => {}
    }
}

impl State {
    /// Counts the line just read in the [`Shape`] of the input (a blank line only as a line).
    fn shape_line(&mut self) {
        let shape = &mut self.shape;
        let line = &self.line;
        shape.lines += 1;
        if line.empty {
            return;
        }
        shape.non_blank += 1;
        if line.comment {
            shape.comments += 1;
        }
        if !line.is_sse() {
            shape.not_sse += 1;
            if shape.first_not_sse.is_none() {
                shape.first_not_sse =
                    Some((shape.lines, self.line_at, self.events + 1, line.quoted()));
            }
        }
    }

    /// A frame the decoder completed with the line just fed.
    fn frame(&mut self, frame: FrameRef<'_>, sink: &mut Sink<'_>) {
        let at = self.block_at.unwrap_or(self.line_at);
        match frame {
            FrameRef::Event(event) => {
                self.events += 1;
                let Some(v) = self.validator.as_mut() else {
                    return;
                };
                match v.event_ref(event) {
                    Ok(()) => {
                        for w in v.warnings() {
                            sink(Finding::warning(
                                at,
                                w.index + 1,
                                w.rule.id(),
                                w.rule.description(),
                            ));
                        }
                    }
                    Err(e) => self.broken(at, e, sink),
                }
            }
            FrameRef::Comment(text) => {
                if let Some(Err(e)) = self.validator.as_mut().map(|v| v.comment(text)) {
                    self.broken(at, e, sink);
                }
            }
            FrameRef::Dataless(event) => {
                let id = event
                    .id()
                    .map(|id| format!(", id `{id}`"))
                    .unwrap_or_default();
                sink(Finding::warning(
                    at,
                    self.events + 1,
                    DATALESS,
                    format!(
                        "a block without a `data:` line (event type `{}`{id}): a browser \
                         drops it, and it is not counted as an event",
                        event.event_type()
                    ),
                ));
            }
            _ => {}
        }
    }

    /// The stream broke a rule of its profile at `at`: reported, and checking stops.
    fn broken(&mut self, at: u64, e: SequenceError, sink: &mut Sink<'_>) {
        self.stopped = Some(self.offset);
        let text = match &e {
            SequenceError::Violation(v) => format!(
                "`{}` breaks the rule: {}",
                v.event_type,
                v.rule.description()
            ),
            other => other.to_string(),
        };
        let event = e.index().map_or(self.events + 1, |i| i + 1);
        sink(Finding::error(at, event, e.rule().id(), text));
    }

    /// The decoder hit a limit: reported, and checking stops.
    fn limit(&mut self, e: DecodeError, sink: &mut Sink<'_>) {
        self.stopped = Some(self.offset);
        let event = self.events + 1;
        let (at, id) = match e {
            DecodeError::LineTooLong { offset, .. } => (offset, LINE_TOO_LONG),
            DecodeError::EventTooLarge { offset, .. } => (offset, EVENT_TOO_LARGE),
            // Not met: every line is drained as soon as it is fed.
            DecodeError::BufferFull { offset, .. } => (offset, "sse.buffer-full"),
            _ => (self.line_at, "sse.limit"),
        };
        sink(Finding::error(
            at,
            event,
            id,
            format!("{e}; checking stops here"),
        ));
    }
}

#[cfg(test)]
mod tests {
    use ssekit::Limits;

    use super::*;

    /// `(level, offset, event, id)` of a finding: what the tests compare.
    type Found = (Level, u64, u64, &'static str);

    /// Everything `check` finds in `input` fed in pieces of `piece` bytes, and the events.
    fn findings_in_pieces(
        input: &[u8],
        profile: Option<ProfileName>,
        config: Config,
        piece: usize,
    ) -> (Vec<Finding>, u64) {
        let mut checker = Checker::new(config, profile);
        let mut found = Vec::new();
        for piece in input.chunks(piece.max(1)) {
            checker.feed(piece, &mut |f| found.push(f));
            if checker.stopped_at().is_some() {
                break;
            }
        }
        if checker.stopped_at().is_none() {
            checker.finish(&mut |f| found.push(f));
        }
        (found, checker.events())
    }

    /// What `check` finds in `input`, the same whether it is read whole, a byte at a time
    /// or in pieces of 2, 3 and 7 bytes; and the number of events.
    fn findings(input: &[u8], profile: Option<ProfileName>) -> (Vec<Found>, u64) {
        let brief = |found: Vec<Finding>| -> Vec<Found> {
            found
                .into_iter()
                .map(|f| (f.level, f.offset, f.event, f.id))
                .collect()
        };
        let (whole, events) = findings_in_pieces(input, profile, Config::default(), usize::MAX);
        let whole = brief(whole);
        for piece in [1, 2, 3, 7] {
            let (split, split_events) =
                findings_in_pieces(input, profile, Config::default(), piece);
            assert_eq!(brief(split), whole, "pieces of {piece}: {input:?}");
            assert_eq!(split_events, events, "pieces of {piece}");
        }
        (whole, events)
    }

    use Level::{Error as E, Warning as W};

    /// The verdict of [`Checker::not_an_event_stream`] on `input`, the same whether it is
    /// read whole or in pieces of 1, 2, 3 and 7 bytes: `(offset, event, text)`.
    fn not_sse(input: &[u8], allow_empty: bool) -> Option<(u64, u64, String)> {
        let verdict = |piece: usize| {
            let mut checker = Checker::new(Config::default(), None);
            for piece in input.chunks(piece.max(1)) {
                checker.feed(piece, &mut |_| {});
            }
            checker.finish(&mut |_| {});
            checker
                .not_an_event_stream(allow_empty)
                .map(|f| (f.offset, f.event, f.text))
        };
        let whole = verdict(usize::MAX);
        for piece in [1, 2, 3, 7] {
            assert_eq!(verdict(piece), whole, "pieces of {piece}: {input:?}");
        }
        whole
    }

    #[test]
    fn a_document_that_is_no_event_stream_is_told_with_its_first_foreign_line() {
        let html = b"<!doctype html>\n<html>\n<body>\n<p>Bad Gateway</p>\n</body>\n</html>\n";
        assert_eq!(
            not_sse(html, true),
            Some((
                0,
                1,
                "not an event stream: 0 events; 6 of 6 lines are not SSE fields (first at \
                 line 1: `<!doctype html>`)"
                    .to_owned()
            ))
        );
        // Events among mostly foreign lines: still no event stream; the first foreign line
        // is quoted, cut after 60 bytes, with its offset.
        let long = format!("data: 1\n\n{}\n<p>\n</p>\n", "<".repeat(70));
        let (at, event, text) = not_sse(long.as_bytes(), false).unwrap();
        assert_eq!((at, event), (9, 2));
        assert_eq!(
            text,
            format!(
                "not an event stream: 3 of 4 lines are not SSE fields (first at line 3: `{}…`)",
                "<".repeat(60)
            )
        );
        let json = b"{\r\n  \"data\": [1, 2],\r\n  \"ok\": true\r\n}";
        let (_, _, text) = not_sse(json, false).unwrap();
        assert!(
            text.ends_with("0 events; 4 of 4 lines are not SSE fields (first at line 1: `{`)"),
            "{text}"
        );
    }

    #[test]
    fn a_stream_without_events_is_no_event_stream_unless_allowed() {
        let allow = "(--allow-empty accepts a capture without events)";
        for (input, why) in [
            (&b""[..], "the input is empty"),
            (b"\n\n", "0 events"),
            (b": ping\n\n: ping\n\n", "0 events, 2 comments only"),
            (b"event: ping\n\nretry: 10\n", "0 events"),
        ] {
            assert_eq!(
                not_sse(input, false),
                Some((0, 1, format!("not an event stream: {why} {allow}"))),
                "{input:?}"
            );
            assert_eq!(not_sse(input, true), None, "{input:?}");
        }
    }

    #[test]
    fn event_streams_with_odd_lines_are_still_event_streams() {
        for input in [
            &b"data: x\n\n"[..],
            b"\xef\xbb\xbfdata: x\r\n\r\n: ping\r\n\r\n",
            // Lines without a colon and unknown fields are fields all the same (warnings).
            b"nocolon\nnocolon\nnocolon\nX-Custom: 1\ndata: x\n\n",
            // Half the lines foreign is not more than half.
            b"<p>\ndata: x\n\n",
            // A last line without a line ending counts (and is truncated, another finding).
            b"data: x\n\ndata: y",
        ] {
            assert_eq!(not_sse(input, false), None, "{input:?}");
        }
        assert!(not_sse(b"data: x\n\n<p>\n<p>", false).is_some());
    }

    /// Well-formed streams, a leading byte-order mark and CRLF included, have no findings.
    #[test]
    fn a_clean_stream_has_no_findings() {
        for (clean, events) in [
            (&b""[..], 0),
            (b"data: x\n\n", 1),
            (
                b"\xef\xbb\xbfevent: a\r\nid: 1\r\ndata: \xc3\xa9\r\n\r\n: ping\r\n\r\nretry: 3000\n\n",
                1,
            ),
            (b"data:x\ndata:y\r\n\r\n:\n\n", 1),
        ] {
            assert_eq!(findings(clean, None), (vec![], events), "{clean:?}");
        }
    }

    #[test]
    fn a_truncated_final_event_is_an_error_at_its_start() {
        assert_eq!(
            findings(b"data: 1\n\n: ping\nevent: a\ndata: 2\n", None),
            (vec![(E, 16, 2, TRUNCATED)], 1)
        );
        // Cut inside a line, with no event open: the line's offset.
        assert_eq!(
            findings(b"data: 1\n\ndata: 2", None),
            (vec![(E, 9, 2, TRUNCATED)], 1)
        );
        assert_eq!(
            findings(b"data: 1\n\n: pi", None),
            (vec![(E, 9, 2, TRUNCATED)], 1)
        );
        // A stream cut inside its byte-order mark.
        assert_eq!(
            findings(b"\xef\xbb", None),
            (vec![(E, 0, 1, INVALID_UTF8), (E, 0, 1, TRUNCATED)], 0)
        );
    }

    #[test]
    fn invalid_utf8_is_an_error_at_the_byte() {
        assert_eq!(
            findings(
                b"data: a\n\ndata: \xffb\xc3\n\ndata: \xe2\x82\xac\xe2\x82\n\n",
                None
            ),
            (
                vec![
                    (E, 15, 2, INVALID_UTF8),
                    (E, 17, 2, INVALID_UTF8),
                    (E, 29, 3, INVALID_UTF8)
                ],
                3
            )
        );
        // A character cut by the end of the input.
        assert_eq!(
            findings(b"data: x\n\n: \xf0\x9f\x98", None),
            (vec![(E, 11, 2, INVALID_UTF8), (E, 9, 2, TRUNCATED)], 1)
        );
        let (found, _) = findings_in_pieces(b"data: \xff\n\n", None, Config::default(), 99);
        assert_eq!(
            found[0].text,
            "invalid UTF-8 (bytes ff): a decoder puts U+FFFD in their place"
        );
    }

    #[test]
    fn a_line_or_event_over_the_limits_is_an_error_and_stops_the_check() {
        let config = Config::default().limits(Limits::default().max_line(16).max_event(20));
        let (found, events) = findings_in_pieces(
            b"data: 1\n\nid: 2\ndata: this line is too long\n\ndata: 3\n\n",
            None,
            config,
            5,
        );
        let found: Vec<Found> = found
            .into_iter()
            .map(|f| (f.level, f.offset, f.event, f.id))
            .collect();
        assert_eq!((found, events), (vec![(E, 15, 2, LINE_TOO_LONG)], 1));
        let (found, _) =
            findings_in_pieces(b"data: 0123456789\ndata: 0123456789\n\n", None, config, 64);
        assert_eq!(
            (found[0].level, found[0].offset, found[0].event, found[0].id),
            (E, 17, 1, EVENT_TOO_LARGE)
        );
        assert!(found[0].text.ends_with("checking stops here"), "{found:?}");
        assert_eq!(found.len(), 1);
    }

    #[test]
    fn each_warning_has_the_offset_of_its_line_or_byte_and_the_event() {
        let input: &[u8] = b"data: 1\n\n\
            retry: 3s\n\
            retry:\n\
            id: a\x00b\n\
            Data: x\n\
            data\n\
            \xef\xbb\xbfdata: hidden\n\
            data: z\xef\xbb\xbf\n\n\
            event: ping\n\n\
            id: 9\n\n\
            data: cr\r\r\
            data: next\n\n";
        let (found, events) = findings(input, None);
        assert_eq!(
            found,
            vec![
                (W, 9, 2, RETRY_IGNORED),
                (W, 19, 2, RETRY_IGNORED),
                (W, 26, 2, ID_NUL),
                (W, 34, 2, UNKNOWN_FIELD),
                (W, 42, 2, NO_COLON),
                (W, 47, 2, BOM),
                (W, 70, 2, BOM),
                (W, 75, 3, DATALESS),
                (W, 88, 3, DATALESS),
                (W, 103, 3, CR_LINE_ENDING),
            ]
        );
        assert_eq!(events, 4);
        // A lone CR is reported once.
        let (found, events) = findings(b"data: a\r\rdata: b\r\r", None);
        assert_eq!((found, events), (vec![(W, 7, 1, CR_LINE_ENDING)], 2));
        // A CRLF cut between its CR and its LF is no lone CR.
        assert_eq!(findings(b"data: a\r\n\r\n", None), (vec![], 1));
    }

    #[test]
    fn the_ors_spec_example_is_accepted_with_a_warning() {
        let input = br#"event: task_id
data: task-xyz-789

event: end
data: {"ok": true, "output": {"blocks": [{"type": "text", "text": "Correct!"}], "reward": 1.0, "finished": true}}

"#;
        let (found, events) = findings(input, Some(ProfileName::Ors));
        assert_eq!((found, events), (vec![(W, 35, 2, "ors.end-metadata")], 2));
        let (found, _) = findings_in_pieces(input, Some(ProfileName::Ors), Config::default(), 9);
        assert_eq!(
            found[0].text,
            "end has no metadata; the official ors-sdk client raises on it"
        );
    }

    #[test]
    fn a_profile_violation_is_an_error_at_the_event_and_stops_the_check() {
        let input =
            b"event: task_id\ndata: t\n\n: ping\n\nevent: task_id\ndata: t\n\ndata: \xff\n\n";
        let (found, events) = findings(input, Some(ProfileName::Ors));
        assert_eq!((found, events), (vec![(E, 32, 2, "ors.task-id-once")], 2));
        let mut checker = Checker::new(Config::default(), Some(ProfileName::Ors));
        let mut found = Vec::new();
        checker.feed(input, &mut |f| found.push(f));
        assert_eq!(checker.stopped_at(), Some(55));
        assert_eq!(
            found[0].text,
            "`task_id` breaks the rule: `task_id` is sent exactly once"
        );
        // Ended early: an error at the end of the input, where the next event would be.
        assert_eq!(
            findings(b"event: task_id\ndata: t\n\n", Some(ProfileName::Ors)),
            (vec![(E, 24, 2, "sequence.unterminated")], 1)
        );
    }

    #[test]
    fn field_names_are_read_across_pieces_and_long_ones_are_cut_for_messages() {
        let mut line = Line::new();
        for piece in [&b"re"[..], b"tr", b"y", b": 1", b"2x"] {
            line.take(piece);
        }
        assert_eq!(line.colon, Some(Field::Retry));
        assert_eq!(line.warning().map(|w| w.0), Some(RETRY_IGNORED));
        let mut long = Line::new();
        long.take(&[b'n'; 100]);
        long.take(b": v");
        let (id, text) = long.warning().unwrap();
        assert_eq!(id, UNKNOWN_FIELD);
        assert!(
            text.contains(&format!("`{}…`", "n".repeat(NAME_KEPT))),
            "{text}"
        );
        // `dataX` is no `data`, and a prefix of a known name is not known.
        for name in [&b"dataX"[..], b"dat", b"ID", b"retry "] {
            let mut line = Line::new();
            line.take(name);
            line.take(b":");
            assert_eq!(line.colon, Some(Field::Unknown), "{name:?}");
        }
    }
}
