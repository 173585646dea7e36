//! Properties of the session machines: exactly-once delivery across any reconnects, and the
//! `poll_timeout` invariants under arbitrary (even backwards) clocks.

use core::time::Duration;

use proptest::prelude::*;
use ssekit::client::{Action, Delivery, Disconnect, Reconnect, ReconnectConfig};
use ssekit::server::{Gap, KeepAlive, Open, ReplayBuffer, TaskConfig, TaskRegistry};
use ssekit::time::Instant;
use ssekit::{Decoder, Event, Frame, Utf8Bytes};

/// One step of the simulated world.
#[derive(Clone, Debug)]
enum Step {
    /// The server produces the next event.
    Produce,
    /// Up to `n` bytes travel from server to client.
    Deliver(usize),
    /// The connection breaks (whatever is in flight is lost), seen by the client as an error.
    Drop,
    /// The server ends the response cleanly.
    End,
    /// Time passes.
    Tick(u64),
    /// On its next accept the server replays everything it retains (an at-least-once server).
    Overlap,
    /// The server sends a `retry:` line (0 included: the client must not spin).
    RetryHint(u64),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => Just(Step::Produce),
        4 => (1usize..64).prop_map(Step::Deliver),
        1 => Just(Step::Drop),
        1 => Just(Step::End),
        2 => (0u64..12_000).prop_map(Step::Tick),
        1 => Just(Step::Overlap),
        1 => prop_oneof![Just(0u64), 0u64..3_000].prop_map(Step::RetryHint),
    ]
}

/// Client and server in memory, both built from the real machines.
struct World {
    now: Instant,
    // server
    replay: ReplayBuffer,
    produced: u32,
    overlap: bool,
    // the wire: bytes the server wrote that the client has not read; `None` = no connection
    pipe: Option<Vec<u8>>,
    // client
    rc: Reconnect,
    dec: Decoder,
    delivered: Vec<u32>,
}

impl World {
    fn new() -> Self {
        let config = ReconnectConfig::default()
            .retry_timeout(Duration::from_millis(1_000))
            .max_delay(Duration::from_millis(8_000))
            .idle_timeout(Some(Duration::from_millis(20_000)))
            .max_attempts(None)
            .jitter_seed(7);
        World {
            now: Instant::ZERO,
            replay: ReplayBuffer::new(10_000, 1 << 24),
            produced: 0,
            overlap: false,
            pipe: None,
            rc: Reconnect::new(config),
            dec: Decoder::new(),
            delivered: Vec::new(),
        }
    }

    /// Runs the client's actions; a connect is served at once (the server accepts and
    /// replays from `Last-Event-ID`).
    fn drive(&mut self) {
        while let Some(action) = self.rc.poll_action() {
            match action {
                Action::Connect { headers, .. } => {
                    let last = headers
                        .iter()
                        .find(|(n, _)| n == "Last-Event-ID")
                        .map(|(_, v)| v.to_string());
                    let mut wire = Vec::new();
                    let replay = match last {
                        Some(id) if !self.overlap => {
                            self.replay.since(&id).expect("buffer large enough")
                        }
                        _ => self.replay.all(),
                    };
                    self.overlap = false;
                    for bytes in replay {
                        wire.extend_from_slice(&bytes);
                    }
                    self.rc
                        .handle_response(self.now, 200, Some("text/event-stream; charset=utf-8"))
                        .expect("accepted");
                    self.dec.reset();
                    self.pipe = Some(wire);
                }
                Action::Close(_) => self.disconnect(Disconnect::Error, false),
                Action::GiveUp(reason) => panic!("gave up: {reason}"),
                _ => unreachable!(),
            }
        }
    }

    fn disconnect(&mut self, how: Disconnect, tell: bool) {
        if self.pipe.take().is_some() {
            let _ = self.dec.finish();
            if tell {
                self.rc.handle_closed(self.now, how);
            }
        }
    }

    fn deliver(&mut self, n: usize) {
        let Some(pipe) = self.pipe.as_mut() else {
            return;
        };
        let n = n.min(pipe.len());
        if n == 0 {
            return;
        }
        let piece: Vec<u8> = pipe.drain(..n).collect();
        self.rc.handle_bytes(self.now);
        self.dec.feed_slice(&piece).unwrap();
        while let Some(frame) = self.dec.next_frame().unwrap() {
            if self.rc.handle_frame(&frame) == Some(Delivery::Deliver)
                && let Frame::Event(e) = &frame
            {
                self.delivered.push(e.data().parse().unwrap());
            }
        }
    }

    fn tick(&mut self, millis: u64) {
        self.now += Duration::from_millis(millis);
        if self.rc.poll_timeout().is_some_and(|t| t <= self.now) {
            self.rc.handle_timeout(self.now);
        }
    }

    fn run(&mut self, step: &Step) {
        match step {
            Step::Produce => {
                self.produced += 1;
                let n = self.produced;
                let event = Event::builder()
                    .id(Utf8Bytes::from(n.to_string()))
                    .unwrap()
                    .data(Utf8Bytes::from(n.to_string()))
                    .build();
                let wire = self.replay.push(&event).unwrap();
                if let Some(pipe) = self.pipe.as_mut() {
                    pipe.extend_from_slice(&wire);
                }
            }
            Step::Deliver(n) => self.deliver(*n),
            Step::Drop => self.disconnect(Disconnect::Error, true),
            Step::End => self.disconnect(Disconnect::Eof, true),
            Step::Tick(ms) => self.tick(*ms),
            Step::Overlap => self.overlap = true,
            Step::RetryHint(ms) => {
                if let Some(pipe) = self.pipe.as_mut() {
                    pipe.extend_from_slice(format!("retry: {ms}\n").as_bytes());
                }
            }
        }
        self.drive();
    }

    /// Lets the world settle: reconnect if needed and deliver everything.
    fn settle(&mut self) {
        for _ in 0..100 {
            self.drive();
            match &self.pipe {
                Some(pipe) if pipe.is_empty() => return,
                Some(_) => self.deliver(usize::MAX),
                None => {
                    let wake = self.rc.poll_timeout().expect("a reconnect is scheduled");
                    self.now = self.now.max(wake);
                    self.rc.handle_timeout(self.now);
                }
            }
        }
        panic!("did not settle");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn every_event_arrives_exactly_once_in_order_across_any_reconnects(
        steps in proptest::collection::vec(step(), 0..200)
    ) {
        let mut world = World::new();
        world.drive();
        for s in &steps {
            world.run(s);
        }
        world.settle();
        let expected: Vec<u32> = (1..=world.produced).collect();
        prop_assert_eq!(&world.delivered, &expected);
    }
}

/// Inputs to the client machine, with arbitrary times.
#[derive(Clone, Debug)]
enum ClientInput {
    Poll,
    Response(u16, bool),
    Bytes,
    Closed(bool),
    Retry(u64),
    Timeout,
}

fn client_input() -> impl Strategy<Value = (ClientInput, u64)> {
    let input = prop_oneof![
        3 => Just(ClientInput::Poll),
        2 => (prop_oneof![Just(200u16), Just(204), Just(404), Just(503), Just(429)], any::<bool>())
            .prop_map(|(s, ok)| ClientInput::Response(s, ok)),
        2 => Just(ClientInput::Bytes),
        2 => any::<bool>().prop_map(ClientInput::Closed),
        1 => prop_oneof![Just(0u64), 0u64..100_000, Just(u64::MAX)].prop_map(ClientInput::Retry),
        3 => Just(ClientInput::Timeout),
    ];
    // Times jump around, including backwards and to the extremes.
    let time = prop_oneof![0u64..200_000, Just(0), Just(u64::MAX - 1), Just(u64::MAX)];
    (input, time)
}

/// The quinn-proto timer contract: firing at a time at or after `poll_timeout` moves the
/// deadline strictly past that time (or removes it).
fn check_fired(
    before: Option<Instant>,
    now: Instant,
    after: Option<Instant>,
) -> Result<(), String> {
    if before.is_some_and(|b| now >= b)
        && let Some(a) = after
        && a <= now
    {
        return Err(format!("deadline {before:?} fired at {now:?}, next {a:?}"));
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn reconnect_never_busy_loops_or_panics(
        inputs in proptest::collection::vec(client_input(), 0..100),
        min_delay in prop_oneof![Just(0u64), 1u64..2_000],
        idle in proptest::option::of(0u64..60_000),
        seed in any::<u64>(),
    ) {
        let config = ReconnectConfig::default()
            .min_delay(Duration::from_millis(min_delay))
            .retry_timeout(Duration::from_millis(1_000))
            .idle_timeout(idle.map(Duration::from_millis))
            .max_attempts(Some(50))
            .jitter_seed(seed);
        let mut rc = Reconnect::new(config);
        for (input, t) in inputs {
            let now = Instant::from_millis(t);
            match input {
                ClientInput::Poll => while rc.poll_action().is_some() {},
                ClientInput::Response(status, ok) => {
                    let ct = ok.then_some("text/event-stream");
                    let _ = rc.handle_response(now, status, ct);
                }
                ClientInput::Bytes => rc.handle_bytes(now),
                ClientInput::Closed(eof) => rc.handle_closed(
                    now,
                    if eof { Disconnect::Eof } else { Disconnect::Error },
                ),
                ClientInput::Retry(ms) => rc.handle_retry(ms),
                ClientInput::Timeout => {
                    // Valid even when `now` went backwards: the machine then uses the latest
                    // time it has seen, which is later still.
                    let before = rc.poll_timeout();
                    rc.handle_timeout(now);
                    check_fired(before, now, rc.poll_timeout()).map_err(TestCaseError::fail)?;
                }
            }
        }
    }

    #[test]
    fn keep_alive_never_busy_loops(
        interval in 0u64..60_000,
        inputs in proptest::collection::vec((any::<bool>(), 0u64..1_000_000), 0..100),
    ) {
        let mut ka = KeepAlive::new(Duration::from_millis(interval), Instant::ZERO);
        for (write, t) in inputs {
            let now = Instant::from_millis(if t > 999_000 { u64::MAX } else { t });
            if write {
                ka.handle_write(now);
            } else {
                let before = ka.poll_timeout();
                ka.handle_timeout(now);
                check_fired(before, now, ka.poll_timeout()).map_err(TestCaseError::fail)?;
                let _ = ka.poll_transmit();
            }
        }
    }

    #[test]
    fn task_registry_never_busy_loops(
        ttl in 0u64..100_000,
        inputs in proptest::collection::vec((0u8..4, 0u64..300_000), 0..100),
    ) {
        let mut tasks: TaskRegistry<bytes::Bytes> =
            TaskRegistry::new(TaskConfig::new([7; 32]).result_ttl(Duration::from_millis(ttl)).max_tasks(8));
        let mut ids: Vec<String> = Vec::new();
        for (op, t) in inputs {
            let now = Instant::from_millis(t);
            match op {
                0 => {
                    if let Open::Started(c) = tasks.open(None, now) {
                        ids.push(c.task_id().to_owned());
                    }
                }
                1 => {
                    if let Some(id) = ids.last() {
                        let _ = tasks.finish(id, now);
                    }
                }
                2 => {
                    if let Some(id) = ids.first() {
                        let _ = tasks.push(id, bytes::Bytes::from_static(b"data: x\n\n"));
                    }
                }
                _ => {
                    let before = tasks.poll_timeout();
                    tasks.handle_timeout(now);
                    check_fired(before, now, tasks.poll_timeout()).map_err(TestCaseError::fail)?;
                }
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// The ring against a model: it retains exactly the longest suffix of the pushes (since the
    /// last one too large to keep) within both bounds, and `since` answers from that.
    #[test]
    fn replay_buffer_matches_its_model(
        max_events in 0usize..8,
        max_bytes in 0usize..120,
        sizes in proptest::collection::vec(0usize..40, 0..40),
        probe in 0usize..45,
    ) {
        let mut ring = ReplayBuffer::new(max_events, max_bytes);
        let mut wires: Vec<Vec<u8>> = Vec::new();
        let mut start = 0; // first push after the last oversized one
        for (i, size) in sizes.iter().enumerate() {
            let event = Event::builder()
                .id(Utf8Bytes::from(i.to_string()))
                .unwrap()
                .data(Utf8Bytes::from("x".repeat(*size)))
                .build();
            let wire = ring.push(&event).unwrap();
            if wire.len() > max_bytes || max_events == 0 {
                start = i + 1;
            }
            wires.push(wire.to_vec());
        }
        let mut kept = 0;
        let mut bytes = 0;
        for wire in wires[start..].iter().rev() {
            if kept + 1 > max_events || bytes + wire.len() > max_bytes {
                break;
            }
            kept += 1;
            bytes += wire.len();
        }
        prop_assert_eq!(ring.len(), kept);
        prop_assert_eq!(ring.retained_bytes(), bytes);
        prop_assert!(ring.retained_bytes() <= max_bytes && ring.len() <= max_events);
        let first_kept = wires.len() - kept;
        let answer = ring.since(&probe.to_string());
        if probe >= first_kept && probe < wires.len() {
            let replayed: Vec<u8> = answer.unwrap().flat_map(|b| b.to_vec()).collect();
            prop_assert_eq!(replayed, wires[probe + 1..].concat());
        } else if first_kept > 0 {
            prop_assert_eq!(answer.unwrap_err(), Gap::Evicted);
        } else {
            prop_assert_eq!(answer.unwrap_err(), Gap::Unknown);
        }
    }
}
