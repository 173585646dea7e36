//! Helpers shared by the decoder's integration tests.

#![allow(dead_code)]

pub mod drive;
pub mod reference;

use bytes::Bytes;
use ssekit::{Config, DecodeError, Decoder, Frame, StreamEnd};

/// Everything a decoder said about one stream.
#[derive(Debug, PartialEq, Eq)]
pub struct Decoded {
    pub frames: Vec<Frame>,
    pub end: StreamEnd,
    pub last_event_id: String,
}

/// Feeds `pieces` in order, as `Bytes`, draining after each, then finishes.
pub fn decode_pieces<'a>(
    config: Config,
    pieces: impl IntoIterator<Item = &'a [u8]>,
) -> Result<Decoded, DecodeError> {
    let mut decoder = Decoder::with_config(config);
    let mut frames = Vec::new();
    for piece in pieces {
        decoder.feed(Bytes::copy_from_slice(piece))?;
        while let Some(frame) = decoder.next_frame()? {
            frames.push(frame);
        }
    }
    Ok(Decoded {
        frames,
        end: decoder.finish(),
        last_event_id: decoder.last_event_id().to_string(),
    })
}

/// Decodes a whole stream fed at once with the default configuration.
pub fn decode(stream: &[u8]) -> Vec<Frame> {
    decode_pieces(Config::default(), [stream])
        .expect("within limits")
        .frames
}

/// Decodes with the given configuration, fed at once.
pub fn decode_with(config: Config, stream: &[u8]) -> Decoded {
    decode_pieces(config, [stream]).expect("within limits")
}

/// Splits `stream` at the given cut points (sorted, deduplicated, clamped).
pub fn split_at_cuts<'a>(stream: &'a [u8], cuts: &[usize]) -> Vec<&'a [u8]> {
    let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (stream.len() + 1)).collect();
    cuts.sort_unstable();
    cuts.dedup();
    let mut pieces = Vec::new();
    let mut start = 0;
    for cut in cuts {
        pieces.push(&stream[start..cut]);
        start = cut;
    }
    pieces.push(&stream[start..]);
    pieces
}

/// The events among the frames, as (type, id, data) triples.
pub fn events(frames: &[Frame]) -> Vec<(String, Option<String>, String)> {
    frames
        .iter()
        .filter_map(|f| match f {
            Frame::Event(ev) => Some((
                ev.event_type().to_string(),
                ev.id().map(str::to_string),
                ev.data().to_string(),
            )),
            _ => None,
        })
        .collect()
}

/// The data of each event among the frames.
pub fn data(frames: &[Frame]) -> Vec<String> {
    events(frames).into_iter().map(|(_, _, d)| d).collect()
}
