//! Decodes an SSE stream from stdin and prints one JSON line per frame, then how the stream
//! ended. With stdin on a terminal it decodes a built-in sample (an ORS tool call with a
//! keep-alive, CRLF line endings and a chunked result), fed in small pieces.
//!
//! ```text
//! curl -sN http://localhost:8080/stream | cargo run -p ssekit --example decode_stdin
//! cargo run -p ssekit --example decode_stdin          # the sample
//! ```

use std::io::{IsTerminal, Read, Write};

use bytes::Bytes;
use ssekit::{Decoder, Frame, StreamEnd};

const SAMPLE: &[u8] = b"\xEF\xBB\xBFevent: task_id\r\ndata: 5a05c55ee16845eea9c8870778ab61bd\r\n\r\n\
: ping - keep-alive\r\n\r\n\
retry: 3000\n\
event: chunk\nid: 1\ndata: {\"ok\": true, \"output\": {\"blocks\": [{\"type\": \"text\", \"text\": \"Hel\n\n\
event: end\nid: 2\ndata: lo, w\xC3\xB6rld\"}], \"metadata\": null, \"reward\": 1.0, \"finished\": true}}\n\n";

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let stdin = std::io::stdin();
    let sample = stdin.is_terminal();
    let mut decoder = Decoder::new();
    let mut out = std::io::stdout().lock();
    let mut buf = vec![0u8; 16 * 1024];
    let mut sample_pieces = SAMPLE.chunks(7);
    loop {
        let piece = if sample {
            match sample_pieces.next() {
                Some(piece) => Bytes::from_static(piece),
                None => break,
            }
        } else {
            let n = stdin.lock().read(&mut buf)?;
            if n == 0 {
                break;
            }
            Bytes::copy_from_slice(&buf[..n])
        };
        decoder.feed(piece)?;
        while let Some(frame) = decoder.next_frame()? {
            writeln!(out, "{}", frame_json(&frame))?;
        }
    }
    let end = match decoder.finish() {
        StreamEnd::Clean => "clean".to_string(),
        StreamEnd::Truncated {
            unterminated_line,
            open_event,
        } => {
            format!("truncated (unterminated line: {unterminated_line} bytes, open event: {open_event})")
        }
        other => format!("{other:?}"),
    };
    writeln!(
        out,
        "{{\"end\":{},\"last_event_id\":{}}}",
        json_string(&end),
        json_string(decoder.last_event_id())
    )?;
    Ok(())
}

fn frame_json(frame: &Frame) -> String {
    match frame {
        Frame::Event(ev) | Frame::Dataless(ev) => format!(
            "{{\"frame\":\"{}\",\"event\":{},\"id\":{},\"data\":{}}}",
            if matches!(frame, Frame::Event(_)) {
                "event"
            } else {
                "dataless"
            },
            json_string(ev.event_type()),
            ev.id().map_or("null".to_string(), json_string),
            json_string(ev.data())
        ),
        Frame::Comment(text) => format!("{{\"frame\":\"comment\",\"text\":{}}}", json_string(text)),
        Frame::Retry(ms) => format!("{{\"frame\":\"retry\",\"millis\":{ms}}}"),
        other => format!("{{\"frame\":{}}}", json_string(&format!("{other:?}"))),
    }
}

fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}
