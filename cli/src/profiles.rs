//! `--profile NAME` → a validator over any built-in profile.

use clap::ValueEnum;
use ssekit::profile::{a2a, agent, anthropic, chat, ors, responses, workflow};
use ssekit::sequence::{Profile, Rule, Validator};
use ssekit::{Event, EventRef, Utf8Bytes};

/// The protocols `tail` and `check` can validate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ProfileName {
    /// ORS tool call: task_id, chunk*, end | error.
    Ors,
    /// OpenAI Responses API / Open Responses Server.
    Responses,
    /// Agent platform run stream.
    Agent,
    /// Agent platform workflow stream.
    Workflow,
    /// Chat Completions: data chunks, then `[DONE]`.
    Chat,
    /// Anthropic Messages API: message_start, content blocks, message_delta, message_stop
    /// (or error).
    Anthropic,
    /// A2A `message/stream`: JSON-RPC results (task, status and artifact updates) until a
    /// final one.
    A2a,
}

/// Any profile behind one type, so one validator type serves every `--profile`.
pub struct AnyProfile(Box<dyn Profile + Send>);

impl Profile for AnyProfile {
    fn event(&mut self, event: &Event) -> Result<(), Rule> {
        self.0.event(event)
    }
    fn event_ref(&mut self, event: EventRef<'_>) -> Result<(), Rule> {
        self.0.event_ref(event)
    }
    fn comment(&mut self, text: &str) -> Result<(), Rule> {
        self.0.comment(text)
    }
    fn is_terminated(&self) -> bool {
        self.0.is_terminated()
    }
    fn failure(&self) -> Option<ssekit::sequence::Failure> {
        self.0.failure()
    }
    fn poll_warning(&mut self) -> Option<Rule> {
        self.0.poll_warning()
    }
    fn event_name(&self, event: EventRef<'_>) -> Utf8Bytes {
        self.0.event_name(event)
    }
}

pub fn validator(name: ProfileName) -> Validator<AnyProfile> {
    let profile: Box<dyn Profile + Send> = match name {
        ProfileName::Ors => Box::new(ors::ToolCall::new()),
        ProfileName::Responses => Box::new(responses::Stream::new()),
        ProfileName::Agent => Box::new(agent::Run::new()),
        ProfileName::Workflow => Box::new(workflow::Workflow::new()),
        ProfileName::Chat => Box::new(chat::Completions::new()),
        ProfileName::Anthropic => Box::new(anthropic::Messages::new()),
        ProfileName::A2a => Box::new(a2a::Stream::new()),
    };
    Validator::new(AnyProfile(profile))
}
