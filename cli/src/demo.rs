//! `ssekit demo`: both protocols, cut on purpose, resumed, validated, traced.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use serde_json::{json, Value};
use ssekit::client::ReconnectConfig;
use ssekit::profile::ors::Block;
use ssekit::profile::responses;
use ssekit::sequence::Validator;
use ssekit_hyper::client::{Ended, EventSource, Item};
use ssekit_hyper::ors::{CallOptions, Client, Environment, Trace};

use crate::app::{expected_answer, App, Settings};
use crate::CliError;

struct Clock(Instant);

impl Clock {
    fn stamp(&self) -> String {
        format!("{:>8}", format!("+{:.3}s", self.0.elapsed().as_secs_f64()))
    }
    fn line(&self, text: impl AsRef<str>) {
        println!("   {}  {}", self.stamp(), text.as_ref());
    }
}

fn short(id: &str) -> String {
    id.chars().take(8).collect::<String>() + "…"
}

fn preview(text: &str, max: usize) -> String {
    let one_line = text.replace('\n', "⏎");
    if one_line.chars().count() <= max {
        one_line
    } else {
        one_line.chars().take(max).collect::<String>() + "…"
    }
}

pub async fn run(keep_alive_ms: u64) -> Result<ExitCode, CliError> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| CliError::Io("cannot listen on 127.0.0.1".into(), e))?;
    let addr = listener
        .local_addr()
        .map_err(|e| CliError::Io("cannot read the local address".into(), e))?;
    let keep_alive = Duration::from_millis(keep_alive_ms.max(1));
    tokio::spawn(ssekit_hyper::server::serve(
        listener,
        App::<ssekit_hyper::runtime::Tokio>::new(Settings::new(
            keep_alive,
            Duration::from_millis(25),
        )),
    ));
    let base = format!("http://{addr}");
    let started = Instant::now();
    println!("ssekit demo: an ORS tool call and a Responses-API stream over loopback, each cut on purpose and resumed\n");
    println!(
        "server  {base}   ORS env `gsm8k` + POST /v1/responses   keep-alive `: ping` after {} ms of silence (ORS uses 10 s)",
        keep_alive.as_millis()
    );

    let cuts = ors_part(&base).await? + responses_part(&base).await?;
    println!(
        "\ndone in {:.2}s: {cuts} connections cut mid-stream, {cuts} resumed, every result reassembled and validated",
        started.elapsed().as_secs_f64()
    );
    Ok(ExitCode::SUCCESS)
}

async fn ors_part(base: &str) -> Result<usize, CliError> {
    let clock = Clock(Instant::now());
    let ors = Client::new(base)?.reconnect(
        ReconnectConfig::ors()
            .retry_timeout(Duration::from_millis(200))
            .jitter(0),
    );
    let task = crate::environment::Demo
        .tasks("train")
        .and_then(|t| t.into_iter().next())
        .unwrap_or(Value::Null);
    let input = json!({"delay_ms": 900, "steps": 120});
    println!("\n1. ORS tool call   POST /gsm8k/call  {{\"name\":\"work\",\"input\":{input}}}");
    let sid = ors.open_session("gsm8k", &task).await?;
    clock.line(format!(
        "session {}  (POST /create_session answered as SSE, then POST /create)",
        short(&sid)
    ));
    let mut chunks = 0usize;
    let mut cut_at = None;
    let mut trace = |t: Trace| match t {
        Trace::Connected { resume: None, .. } => clock.line("connected"),
        Trace::Connected {
            resume: Some(id), ..
        } => {
            chunks = 0;
            clock.line(format!(
                "connected again, body now carries \"task_id\":\"{}\"; the result is replayed from its first chunk",
                short(&id)
            ))
        }
        Trace::Event(e) => match e.event_type() {
            "task_id" => clock.line(format!("← task_id  {}", e.data())),
            "chunk" => {
                chunks += 1;
                clock.line(format!(
                    "← chunk    {:5} bytes  {}",
                    e.data().len(),
                    preview(e.data(), 40)
                ));
            }
            other => clock.line(format!(
                "← {other:8} {:5} bytes  {}",
                e.data().len(),
                preview(e.data(), 40)
            )),
        },
        Trace::KeepAlive => clock.line("← : ping    (the tool is still running)"),
        Trace::Cut { after_events } => {
            cut_at = Some(after_events);
            clock.line(format!(
                "✂  cut: the client drops the connection after {after_events} events, on purpose"
            ));
        }
        Trace::Disconnected(why) => clock.line(format!("disconnected: {why}")),
        Trace::Reconnecting { after } => clock.line(format!(
            "resuming by task id in {:.2}s (the server keeps the task; finished results for 60 s)",
            after.as_secs_f64()
        )),
        _ => {}
    };
    let result = ors
        .call_tool_traced(
            "gsm8k",
            &sid,
            "work",
            input,
            CallOptions::default().cut_after(Some(3)),
            &mut trace,
        )
        .await?;
    let text = result
        .output
        .as_ref()
        .and_then(|o| o.blocks.first())
        .and_then(|b| match b {
            Block::Text { text, .. } => Some(text.clone()),
            _ => None,
        })
        .unwrap_or_default();
    let json_len = serde_json::to_string(&result).map_or(0, |s| s.len());
    if cut_at.is_none() || !result.ok || text.lines().count() != 120 {
        return Err(CliError::Invalid(
            "the ORS call did not come back whole".into(),
        ));
    }
    println!(
        "   ✓ validated (ors profile): task_id → {chunks} chunks → end; {json_len} bytes of result JSON reassembled, {} lines of text, none lost or doubled",
        text.lines().count()
    );
    println!(
        "     first line: {}",
        preview(text.lines().next().unwrap_or_default(), 90)
    );

    let submit = ors
        .call_tool("gsm8k", &sid, "submit", json!({"answer": 72}))
        .await?;
    let reward = submit.output.as_ref().and_then(|o| o.reward);
    clock.line(format!(
        "submit {{\"answer\":72}} → ok={} reward={}",
        submit.ok,
        reward.map_or("none".into(), |r| format!("{r:.1}"))
    ));
    let err = ors
        .call_tool("gsm8k", "no-such-session", "submit", json!({"answer": 72}))
        .await
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    clock.line(format!("call with an unknown session → {err}"));
    ors.delete(&sid).await?;
    clock.line("session deleted (POST /delete, POST /delete_session)");
    Ok(1)
}

async fn responses_part(base: &str) -> Result<usize, CliError> {
    let clock = Clock(Instant::now());
    println!("\n2. Responses-API stream   POST /v1/responses?cut_after=5  (the server cuts the first response mid-event)");
    let mut items = EventSource::post(
        &format!("{base}/v1/responses?cut_after=5"),
        r#"{"input":"How many clips did Natalia sell?"}"#,
    )?
    .reconnect(
        ReconnectConfig::default()
            .retry_timeout(Duration::from_millis(100))
            .min_delay(Duration::from_millis(50))
            .jitter(0)
            .max_attempts(Some(3)),
    )
    .header("content-type", "application/json")?
    .stream();
    let mut validator = Validator::new(responses::Stream::new());
    let mut cuts = 0;
    let mut last_id = String::new();
    while let Some(item) = items.next().await {
        match item? {
            Item::Connected { attempt: 0 } => clock.line("connected"),
            Item::Connected { .. } => clock.line(format!(
                "connected again with Last-Event-ID: {last_id} (same POST body)"
            )),
            Item::Event(e) => {
                validator
                    .event(&e)
                    .map_err(|err| CliError::Invalid(err.to_string()))?;
                last_id = e.id().unwrap_or_default().to_owned();
                let detail = serde_json::from_str::<Value>(e.data())
                    .ok()
                    .and_then(|v| v["delta"].as_str().map(|d| format!("{d:?}")))
                    .unwrap_or_default();
                clock.line(format!("← [{last_id:>2}] {:28} {detail}", e.event_type()));
                if validator.is_terminated() {
                    break;
                }
            }
            Item::Comment(_) => clock.line("← : ping"),
            Item::Disconnected(why) => {
                if why == Ended::Truncated {
                    cuts += 1;
                }
                clock.line(format!(
                    "disconnected: {why} (detected: no blank line closed the last event)"
                ));
            }
            Item::Reconnecting { after } => {
                clock.line(format!("reconnecting in {:.2}s", after.as_secs_f64()))
            }
            _ => {}
        }
    }
    validator
        .finish()
        .map_err(|err| CliError::Invalid(err.to_string()))?;
    let text = validator.profile().text(0).unwrap_or_default().to_owned();
    if text != expected_answer() || cuts != 1 {
        return Err(CliError::Invalid(
            "the Responses stream did not come back whole".into(),
        ));
    }
    println!(
        "   ✓ validated (responses profile): created → in_progress → deltas → completed, {} events",
        validator.events()
    );
    println!("     text: {text:?}");
    Ok(cuts)
}
