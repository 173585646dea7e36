//! [`validated`]: a client's events checked against the protocol its stream speaks, so that
//! the three ways a stream can end are three outcomes: its terminal event (success), its
//! provider's failure event ([`Error::Provider`], with the provider's message, never dropped),
//! and no terminal event at all ([`Error::Sequence`] with
//! [`SequenceError::Unterminated`](ssekit::sequence::SequenceError::Unterminated): a cut, never
//! a success).

use std::collections::VecDeque;
use std::pin::Pin;

use futures_core::Stream;
use futures_lite::StreamExt;
use ssekit::sequence::{Profile, Validator};
use ssekit::Event;

use super::{Item, Items};
use crate::Error;

/// The events of `items`, each checked by `profile` in order:
/// - an event that breaks the profile ends the stream with [`Error::Sequence`];
/// - the terminal event is yielded and ends the stream (the connection closes: nothing may
///   follow it), followed by [`Error::Provider`] when it reports a failure;
/// - a stream that ends (a clean end not reconnected, or `items` running out) before the
///   terminal event ends with [`Error::Sequence`]`(Unterminated)`;
/// - an error of `items` (the policy gave up, a refusal) ends it as it is.
///
/// Comments go to the profile too. The profile sees one stream: across a reconnect it goes
/// on where it was, as a `Last-Event-ID` (or sequence-number) resume continues the stream.
///
/// # Example
/// ```
/// use futures_lite::StreamExt;
/// use ssekit::profile::responses::Stream;
/// use ssekit::Event;
/// use ssekit_http::client::{validated, Item};
/// use ssekit_http::Error;
///
/// // OpenAI's `error` event, in a stream that answered `200`.
/// let error = r#"{"type":"error","code":"rate_limit_exceeded","message":"Rate limit reached"}"#;
/// let items = futures_lite::stream::iter([Ok(Item::Event(Event::message(error)))]);
/// let seen: Vec<_> = futures_lite::future::block_on(validated(Box::pin(items), Stream::new()).collect());
/// assert!(seen[0].is_ok()); // the event itself
/// assert!(matches!(&seen[1], Err(Error::Provider(failure)) if failure.message == "Rate limit reached"));
/// ```
pub fn validated<P>(
    items: Items,
    profile: P,
) -> Pin<Box<dyn Stream<Item = Result<Event, Error>> + Send>>
where
    P: Profile + Send + 'static,
{
    let state = State {
        items: Some(items),
        validator: Validator::new(profile),
        out: VecDeque::new(),
    };
    Box::pin(futures_lite::stream::unfold(
        state,
        |mut state| async move {
            let next = state.next().await?;
            Some((next, state))
        },
    ))
}

struct State<P> {
    /// `None` once the stream has ended (the connection closed with it).
    items: Option<Items>,
    validator: Validator<P>,
    out: VecDeque<Result<Event, Error>>,
}

impl<P: Profile> State<P> {
    async fn next(&mut self) -> Option<Result<Event, Error>> {
        loop {
            if let Some(next) = self.out.pop_front() {
                return Some(next);
            }
            let items = self.items.as_mut()?;
            match items.next().await {
                Some(Ok(Item::Event(event))) => self.event(event),
                Some(Ok(Item::Comment(text))) => {
                    if let Err(e) = self.validator.comment(&text) {
                        self.end(Err(Error::Sequence(e)));
                    }
                }
                Some(Ok(_)) => {}
                Some(Err(e)) => self.end(Err(e)),
                None => match self.validator.finish() {
                    Ok(()) => self.items = None,
                    Err(e) => self.end(Err(Error::Sequence(e))),
                },
            }
        }
    }

    fn event(&mut self, event: Event) {
        if let Err(e) = self.validator.event(&event) {
            return self.end(Err(Error::Sequence(e)));
        }
        if !self.validator.is_terminated() {
            self.out.push_back(Ok(event));
            return;
        }
        let failure = self.validator.profile().failure();
        self.end(Ok(event));
        if let Some(failure) = failure {
            self.out.push_back(Err(Error::Provider(failure)));
        }
    }

    /// `last` is the last item; the connection closes.
    fn end(&mut self, last: Result<Event, Error>) {
        self.out.push_back(last);
        self.items = None;
    }
}

#[cfg(test)]
mod tests {
    use ssekit::profile::ors::ToolCall;

    use super::*;
    use crate::client::Ended;

    fn run(items: Vec<Result<Item, Error>>) -> Vec<Result<Event, Error>> {
        let items: Items = Box::pin(futures_lite::stream::iter(items));
        futures_lite::future::block_on(
            validated(items, ToolCall::new().check_result(false)).collect(),
        )
    }

    fn named(name: &str, data: &str) -> Item {
        let event = Event::builder().event(name.to_owned()).unwrap();
        Item::Event(event.data(data.to_owned()).build())
    }

    #[test]
    fn a_terminal_event_ends_the_stream_and_nothing_after_it_is_read() {
        let seen = run(vec![
            Ok(named("task_id", "t")),
            Ok(named("end", "{}")),
            Ok(named("chunk", "never read")),
        ]);
        assert_eq!(seen.len(), 2);
        assert!(seen.iter().all(Result::is_ok));
    }

    #[test]
    fn a_provider_failure_is_yielded_then_typed() {
        let seen = run(vec![
            Ok(named("task_id", "t")),
            Ok(named("error", "Tool crashed")),
        ]);
        assert_eq!(seen.len(), 3);
        match &seen[2] {
            Err(Error::Provider(failure)) => assert_eq!(failure.message, "Tool crashed"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_stream_that_stops_before_its_terminal_event_is_a_cut() {
        let seen = run(vec![
            Ok(named("task_id", "t")),
            Ok(Item::Disconnected(Ended::Clean)),
        ]);
        assert!(matches!(
            seen.last(),
            Some(Err(Error::Sequence(
                ssekit::sequence::SequenceError::Unterminated { events: 1, .. }
            )))
        ));
    }

    #[test]
    fn a_violation_and_a_transport_error_end_the_stream() {
        let seen = run(vec![Ok(named("chunk", "x")), Ok(named("end", "{}"))]);
        assert!(matches!(seen.as_slice(), [Err(Error::Sequence(_))]));
        let seen = run(vec![Ok(named("task_id", "t")), Err(Error::Truncated)]);
        assert!(matches!(seen.as_slice(), [Ok(_), Err(Error::Truncated)]));
    }
}
