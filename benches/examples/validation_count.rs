//! A fixed amount of the `validation` bench's work, for instruction counting, which unlike
//! wall-clock time does not depend on what else the machine is doing:
//!
//! ```text
//! cargo build --release -p ssekit-benches --example validation_count
//! valgrind --tool=callgrind --callgrind-out-file=/dev/null \
//!     target/release/examples/validation_count decode 10     # and: validate 10, none 0
//! ```
//!
//! Instructions per event = (count(mode, 10) - count(none, 0)) / (10 * 10_003).

use bytes::Bytes;
use ssekit::profile::responses;
use ssekit::sequence::Validator;
use ssekit::{Decoder, Event, Frame};

fn main() {
    let mut args = std::env::args().skip(1);
    let mode = args.next().unwrap_or_default();
    let iterations: usize = args.next().and_then(|n| n.parse().ok()).unwrap_or(1);
    let (bytes, _) = ssekit_benches::responses_tokens(10_000);
    let whole = Bytes::from(bytes);
    let mut decoder = Decoder::new();
    decoder.feed(whole.clone()).unwrap();
    let events: Vec<Event> = std::iter::from_fn(|| decoder.next_frame().unwrap())
        .filter_map(|frame| match frame {
            Frame::Event(ev) => Some(ev),
            _ => None,
        })
        .collect();
    let mut seen = 0;
    for _ in 0..iterations {
        match mode.as_str() {
            "decode" => {
                let mut decoder = Decoder::new();
                decoder.feed(whole.clone()).unwrap();
                while let Some(frame) = decoder.next_frame().unwrap() {
                    std::hint::black_box(&frame);
                    seen += 1;
                }
            }
            "validate" => {
                let mut validator = Validator::new(responses::Stream::new());
                for ev in &events {
                    validator.event(ev).unwrap();
                }
                validator.finish().unwrap();
                seen += validator.events();
            }
            _ => {}
        }
    }
    println!("{seen} events");
}
