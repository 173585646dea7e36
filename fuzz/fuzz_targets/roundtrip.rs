//! Arbitrary fields → builder → encode → decode (any split) → the same frames. Invalid
//! fields give a typed error and never reach the wire.
#![no_main]

mod common;

use arbitrary::{Arbitrary, Unstructured};
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

fuzz_target!(|input: &[u8]| {
    let mut u = Unstructured::new(input);
    let items: Vec<Item> = u.arbitrary().unwrap_or_default();
    let cuts: Vec<u16> = u.arbitrary().unwrap_or_default();
    let encoder = Encoder::new();
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
                encoder.encode(&event, &mut wire).expect("Vec has room");
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
                match encoder.comment(&text, &mut wire) {
                    Ok(_) => expected.push(Frame::Comment(text.into())),
                    Err(err) => {
                        assert_eq!(wire.len(), before, "a refused comment wrote bytes");
                        expect_refusal(err, &text, Field::Comment);
                    }
                }
            }
            Item::Retry(ms) => {
                encoder.retry(ms, &mut wire).expect("Vec has room");
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
