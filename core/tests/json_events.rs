//! Events from typed values and back (feature `json`), and the checked event parts
//! ([`EventName`], [`EventId`]) that make building an event infallible.
#![cfg(feature = "json")]

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use ssekit::{Decoder, EncodeError, Encoder, Event, EventId, EventName, Frame, FrameRef};

#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct Delta {
    item_id: String,
    delta: String,
    index: u32,
}

#[derive(Debug, PartialEq, Deserialize)]
struct DeltaRef<'a> {
    item_id: &'a str,
    delta: &'a str,
}

const DELTA: EventName = EventName::from_static("response.output_text.delta");

#[test]
fn a_typed_value_goes_through_the_wire_and_back_owned_and_borrowed() {
    let sent = Delta {
        item_id: "msg_1".into(),
        delta: "Hel\nlo \"you\"".into(),
        index: 3,
    };
    let event = Event::named_json(DELTA, &sent).unwrap().with_id(7u64);
    let mut wire = Vec::new();
    Encoder::new().encode(&event, &mut wire).unwrap();
    assert!(
        wire.starts_with(b"event: response.output_text.delta\nid: 7\ndata: {"),
        "one data line: {}",
        String::from_utf8_lossy(&wire)
    );
    assert_eq!(wire.iter().filter(|&&b| b == b'\n').count(), 4);

    let mut decoder = Decoder::new();
    decoder.feed_slice(&wire).unwrap();
    let Some(Frame::Event(got)) = decoder.next_frame().unwrap() else {
        panic!("an event")
    };
    assert_eq!(got.json::<Delta>().unwrap(), sent);

    let mut decoder = Decoder::new();
    decoder.feed_slice(&wire).unwrap();
    let Some(FrameRef::Event(got)) = decoder.next_frame_ref().unwrap() else {
        panic!("an event")
    };
    // `item_id` has no escapes: borrowed from the decoder's buffer. `delta` has escapes, so
    // a `&str` cannot hold it: serde says so, as a typed error.
    #[derive(Deserialize)]
    struct IdOnly<'a> {
        item_id: &'a str,
    }
    assert_eq!(got.json::<IdOnly>().unwrap().item_id, "msg_1");
    let err = got.json::<DeltaRef>().unwrap_err();
    assert!(err.to_string().contains("invalid type"), "{err}");
}

#[test]
fn data_that_is_not_the_json_expected_is_a_typed_error_with_its_position() {
    let err = Event::message(r#"{"item_id": 1}"#)
        .json::<Delta>()
        .unwrap_err();
    assert!(err.to_string().contains("line 1 column"), "{err}");
    assert!(err.inner().is_data());
    let err = Event::message("not json").json::<Delta>().unwrap_err();
    assert!(err.inner().is_syntax());
}

#[test]
fn values_json_cannot_write_are_a_typed_error() {
    let mut map = BTreeMap::new();
    map.insert((1u8, 2u8), "pair keys are no JSON object keys");
    let err = Event::json_data(&map).unwrap_err();
    assert!(err.to_string().contains("key must be a string"), "{err}");
}

#[test]
fn checked_parts_keep_the_injection_guarantees() {
    assert_eq!(
        EventName::new("end\nevent: admin"),
        Err(EncodeError::LineBreak {
            field: ssekit::encode::Field::Event,
            position: 3
        })
    );
    assert!(matches!(
        EventId::new("1\r"),
        Err(EncodeError::LineBreak { .. })
    ));
    assert!(matches!(EventId::new("1\0"), Err(EncodeError::Nul { .. })));
    for id in [
        EventId::from(u64::MAX),
        EventId::from(-1i64),
        EventId::from(0usize),
    ] {
        let ev = Event::message("x").with_id(id.clone());
        assert_eq!(ev.id(), Some(id.as_str()));
        let mut wire = Vec::new();
        Encoder::new().encode(&ev, &mut wire).unwrap();
    }
    // An empty name is `message`, as with the builder.
    let ev = Event::named(EventName::new("").unwrap(), "x");
    assert_eq!(ev.event_type(), "message");
    assert_eq!(ev.event_field(), None);
}

#[test]
#[should_panic(expected = "an event name holds no CR or LF")]
fn a_static_name_with_a_line_break_is_a_bug_caught_where_it_is_made() {
    let name = String::from("a\nb").leak();
    let _ = EventName::from_static(name);
}
