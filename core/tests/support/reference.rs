//! A naive reference decoder: the WHATWG HTML "interpretation of the event stream" written
//! out line by line, on a whole stream held in memory, with no attention to speed.
//!
//! It is shared by the property tests and the `decode_reference` fuzz target: the real
//! decoder must produce exactly these frames for every input and every split.
//!
//! Besides WHATWG's dispatch it reports what ssekit surfaces (the same conventions as
//! `ssekit::Frame`): comments (text after `:` minus one leading space), valid `retry:`
//! values when read, and in raw mode blocks with `event:`/`id:` but no data.

#![allow(dead_code)]

use ssekit::decode::Mode;

/// A decoded frame in plain owned types.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RefFrame {
    Event {
        event_type: Option<String>,
        id: Option<String>,
        data: String,
    },
    Dataless {
        event_type: Option<String>,
        id: Option<String>,
    },
    Comment(String),
    Retry(u64),
}

/// The result of decoding a whole stream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RefOutput {
    pub frames: Vec<RefFrame>,
    pub last_event_id: String,
}

/// Decodes a complete stream.
pub fn decode(stream: &[u8], mode: Mode) -> RefOutput {
    // "Streams must be decoded using the UTF-8 decode algorithm": invalid sequences become
    // U+FFFD and one leading BOM is stripped.
    let text = String::from_utf8_lossy(stream);
    let text = text.strip_prefix('\u{FEFF}').unwrap_or(&text);

    let mut frames = Vec::new();
    let mut data_buffer = String::new();
    let mut event_type_buffer = String::new();
    let mut last_event_id_buffer = String::new();
    let mut last_event_id = String::new();
    // ssekit's extra: whether this block set `id:` (for raw mode and Event::id).
    let mut block_id_set = false;

    // Split into lines: "lines must be separated by either a U+000D CARRIAGE RETURN U+000A
    // LINE FEED (CRLF) character pair, a single U+000A LINE FEED (LF) character, or a single
    // U+000D CARRIAGE RETURN (CR) character." Text after the last line ending is an
    // incomplete line and is never processed.
    let chars: Vec<char> = text.chars().collect();
    let mut lines = Vec::new();
    let mut current = String::new();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '\r' => {
                lines.push(std::mem::take(&mut current));
                if chars.get(i + 1) == Some(&'\n') {
                    i += 1;
                }
            }
            '\n' => lines.push(std::mem::take(&mut current)),
            c => current.push(c),
        }
        i += 1;
    }

    for line in lines {
        if line.is_empty() {
            // Dispatch the event.
            // 1. Set the last event ID string of the event source to the last event ID buffer.
            last_event_id = last_event_id_buffer.clone();
            let id = block_id_set.then(|| last_event_id_buffer.clone());
            let event_type = (!event_type_buffer.is_empty()).then(|| event_type_buffer.clone());
            // 2. If the data buffer is an empty string, reset the buffers and return.
            if data_buffer.is_empty() {
                // Raw mode: a block that named a (non-empty) type or set an id.
                if mode == Mode::Raw && (event_type.is_some() || block_id_set) {
                    frames.push(RefFrame::Dataless { event_type, id });
                }
            } else {
                // 3. If the data buffer's last character is a LF, remove it.
                if data_buffer.ends_with('\n') {
                    data_buffer.pop();
                }
                // 4-7. Type from the event type buffer, "message" when empty.
                frames.push(RefFrame::Event {
                    event_type,
                    id,
                    data: data_buffer.clone(),
                });
            }
            data_buffer.clear();
            event_type_buffer.clear();
            block_id_set = false;
            continue;
        }
        if let Some(comment) = line.strip_prefix(':') {
            // "If the line starts with a U+003A COLON character (:) Ignore the line."
            let comment = comment.strip_prefix(' ').unwrap_or(comment);
            frames.push(RefFrame::Comment(comment.to_string()));
            continue;
        }
        let (field, value) = match line.find(':') {
            Some(pos) => {
                let value = &line[pos + 1..];
                (&line[..pos], value.strip_prefix(' ').unwrap_or(value))
            }
            None => (line.as_str(), ""),
        };
        match field {
            "event" => event_type_buffer = value.to_string(),
            "data" => {
                data_buffer.push_str(value);
                data_buffer.push('\n');
            }
            // "If the field value does not contain U+0000 NULL, then set the last event ID
            // buffer to the field value. Otherwise, ignore the field."
            "id" if !value.contains('\0') => {
                last_event_id_buffer = value.to_string();
                block_id_set = true;
            }
            // "If the field value consists of only ASCII digits, then interpret the field value
            // as an integer in base ten" (an empty value is ignored, as browsers do).
            "retry" if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) => {
                let n = value.bytes().fold(0u64, |n, d| {
                    n.saturating_mul(10).saturating_add(u64::from(d - b'0'))
                });
                frames.push(RefFrame::Retry(n));
            }
            _ => {}
        }
    }
    // "Once the end of the file is reached, any pending data must be discarded."
    RefOutput {
        frames,
        last_event_id,
    }
}

/// Converts ssekit frames into reference frames for comparison.
pub fn from_frames(frames: &[ssekit::Frame]) -> Vec<RefFrame> {
    frames
        .iter()
        .map(|frame| match frame {
            ssekit::Frame::Event(ev) => RefFrame::Event {
                event_type: ev.event_field().map(|t| t.to_string()),
                id: ev.id().map(str::to_string),
                data: ev.data().to_string(),
            },
            ssekit::Frame::Dataless(ev) => RefFrame::Dataless {
                event_type: ev.event_field().map(|t| t.to_string()),
                id: ev.id().map(str::to_string),
            },
            ssekit::Frame::Comment(c) => RefFrame::Comment(c.to_string()),
            ssekit::Frame::Retry(n) => RefFrame::Retry(*n),
            other => panic!("unexpected frame {other:?}"),
        })
        .collect()
}
