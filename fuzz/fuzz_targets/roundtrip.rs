//! Arbitrary fields → builder → encode → decode (any split) → the same frames. Invalid
//! fields give a typed error and never reach the wire.
//!
//! Every item is also encoded into three other buffers, which the encoder fills in other
//! ways (its data lines are copied into the spare room a buffer offers while they are
//! scanned, `line_copy::put_line`, when the buffer offers room for them): a `Vec` with room
//! for everything, a growing `BytesMut`, and a fixed slice of a size drawn from the input.
//! All must hold the same bytes and report the same lengths (`encoded_len` for events); the
//! slice refuses what does not fit with `BufferTooSmall` and writes nothing then, and no
//! encode touches the slice's bytes past what it reports written.
#![no_main]

mod common;

use arbitrary::{Arbitrary, Unstructured};
use bytes::{BufMut, BytesMut};
use libfuzzer_sys::fuzz_target;
use ssekit::decode::Mode;
use ssekit::encode::Field;
use ssekit::{Config, EncodeError, Encoder, Event, Frame};

#[derive(Arbitrary, Debug)]
enum Item {
    Event {
        event_type: Option<String>,
        id: Option<String>,
        data: String,
    },
    Comment(String),
    Retry(u64),
}

impl Item {
    /// At most the bytes this item encodes to: each data byte can start a line.
    fn worst_len(&self) -> usize {
        let field = |value: &Option<String>| value.as_ref().map_or(0, |v| v.len() + 8);
        match self {
            Item::Event {
                event_type,
                id,
                data,
            } => field(event_type) + field(id) + data.len() * 8 + 8,
            Item::Comment(text) => text.len() + 3,
            Item::Retry(_) => 28,
        }
    }
}

fn expect_refusal(err: EncodeError, value: &str, field: Field) {
    match err {
        EncodeError::LineBreak { field: f, position } => {
            assert_eq!(f, field);
            assert!(matches!(value.as_bytes()[position], b'\r' | b'\n'));
        }
        EncodeError::Nul { field: f, position } => {
            assert_eq!((f, field), (Field::Id, Field::Id));
            assert_eq!(value.as_bytes()[position], 0);
        }
        other => panic!("unexpected {other:?}"),
    }
}

/// The same item written into the other buffers: the same bytes and lengths as `wire` got.
struct Others {
    roomy: Vec<u8>,
    bytes: BytesMut,
    slice: Vec<u8>,
    slice_used: usize,
}

/// A byte the slice's unused room is filled with: 0xff is in no UTF-8 text, and the
/// encoder writes only text.
const UNTOUCHED: u8 = 0xff;

impl Others {
    fn new(slice_len: usize, total: usize) -> Self {
        Others {
            roomy: Vec::with_capacity(total),
            bytes: BytesMut::new(),
            slice: vec![UNTOUCHED; slice_len],
            slice_used: 0,
        }
    }

    /// Runs `write` into each buffer and checks it against `wire`'s result, `wrote` bytes
    /// (`None`: refused).
    fn check(
        &mut self,
        wire: &[u8],
        wrote: Option<usize>,
        write: impl Fn(&mut dyn BufMut) -> Result<usize, EncodeError>,
    ) {
        let start = wire.len() - wrote.unwrap_or(0);
        let roomy = write(&mut self.roomy).ok();
        assert_eq!(roomy, wrote, "Vec with room");
        assert_eq!(self.roomy, wire, "Vec with room");
        let bytes = write(&mut self.bytes).ok();
        assert_eq!(bytes, wrote, "BytesMut");
        assert_eq!(&self.bytes[..], wire, "BytesMut");
        let room = self.slice.len() - self.slice_used;
        let mut cursor = &mut self.slice[self.slice_used..];
        match (write(&mut cursor), wrote) {
            (Ok(n), Some(m)) => {
                assert_eq!(n, m, "slice");
                assert_eq!(cursor.len(), room - n, "slice: reported and written differ");
                assert_eq!(&self.slice[self.slice_used..][..n], &wire[start..], "slice");
                self.slice_used += n;
            }
            (Err(EncodeError::BufferTooSmall { required }), Some(m)) => {
                assert_eq!(required, m, "slice: required");
                assert!(m > room, "slice refused what fits: {m} <= {room}");
            }
            (Err(_), None) => {}
            (got, wrote) => panic!("slice: {got:?}, Vec: {wrote:?}"),
        }
        assert!(
            self.slice[self.slice_used..]
                .iter()
                .all(|&b| b == UNTOUCHED),
            "bytes past the slice's cursor were written"
        );
    }
}

fuzz_target!(|input: &[u8]| {
    let mut u = Unstructured::new(input);
    let slice_len = u.int_in_range(0..=4096usize).unwrap_or(0);
    let items: Vec<Item> = u.arbitrary().unwrap_or_default();
    let cuts: Vec<u16> = u.arbitrary().unwrap_or_default();
    let encoder = Encoder::new();
    let total: usize = items.iter().map(Item::worst_len).sum();
    let mut others = Others::new(slice_len, total);
    let mut wire = Vec::new();
    let mut expected = Vec::new();
    for item in items {
        match item {
            Item::Event {
                event_type,
                id,
                data,
            } => {
                let mut builder = Event::builder().data(data.clone());
                if let Some(t) = &event_type {
                    match builder.clone().event(t.clone()) {
                        Ok(b) => builder = b,
                        Err(err) => {
                            expect_refusal(err, t, Field::Event);
                            continue;
                        }
                    }
                }
                if let Some(i) = &id {
                    match builder.clone().id(i.clone()) {
                        Ok(b) => builder = b,
                        Err(err) => {
                            expect_refusal(err, i, Field::Id);
                            continue;
                        }
                    }
                }
                let event = builder.build();
                let n = encoder.encode(&event, &mut wire).expect("Vec has room");
                assert_eq!(n, encoder.encoded_len(&event));
                others.check(&wire, Some(n), |out| encoder.encode(&event, out));
                // SSE carries line breaks in data as LF: CR and CRLF come back as LF.
                let normalized = data.replace("\r\n", "\n").replace('\r', "\n");
                let mut b = Event::builder().data(normalized);
                if let Some(t) = event.event_field() {
                    b = b.event(t.clone()).expect("valid");
                }
                if let Some(i) = event.id_field() {
                    b = b.id(i.clone()).expect("valid");
                }
                expected.push(Frame::Event(b.build()));
            }
            Item::Comment(text) => {
                let before = wire.len();
                let result = encoder.comment(&text, &mut wire);
                others.check(&wire, result.ok(), |out| encoder.comment(&text, out));
                match result {
                    Ok(n) => {
                        assert_eq!(n, wire.len() - before);
                        expected.push(Frame::Comment(text.into()));
                    }
                    Err(err) => {
                        assert_eq!(wire.len(), before, "a refused comment wrote bytes");
                        expect_refusal(err, &text, Field::Comment);
                    }
                }
            }
            Item::Retry(ms) => {
                let n = encoder.retry(ms, &mut wire).expect("Vec has room");
                others.check(&wire, Some(n), |out| encoder.retry(ms, out));
                expected.push(Frame::Retry(ms));
            }
        }
    }
    let got = common::run(
        Config::default().mode(Mode::Browser),
        &common::split(&wire, &cuts),
    );
    let frames: Vec<Frame> = got
        .items
        .into_iter()
        .map(|r| r.expect("within limits"))
        .collect();
    assert_eq!(frames, expected);
    assert_eq!(got.end, ssekit::StreamEnd::Clean);
});
