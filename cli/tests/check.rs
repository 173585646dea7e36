//! `ssekit check`, run as a person would: on the example streams of the ORS specification
//! (`tests/data/`, see its README) and on streams with each kind of error and warning.

mod common;

use std::path::PathBuf;
use std::process::Output;

use common::{run_with_stdin, ssekit, text};

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

/// `ssekit check ARGS`, with `stdin` written to its standard input.
fn check(args: &[&str], stdin: &[u8]) -> Output {
    let args: Vec<&str> = ["check"].iter().chain(args).copied().collect();
    run_with_stdin(&args, stdin)
}

/// The exit code, the findings (stderr) and the summary (stdout) of `ssekit check ARGS`.
fn outcome(out: &Output) -> (Option<i32>, String, String) {
    (out.status.code(), text(&out.stderr), text(&out.stdout))
}

/// Every example stream of ors-sse-tool-calls.txt passes `--profile ors`; those whose `end`
/// has no `metadata` (as the specification writes them) carry a warning, which `--strict`
/// turns into a failure.
#[test]
fn the_ors_specification_examples_pass_with_warnings_for_the_official_client() {
    let metadata =
        "warning: end has no metadata; the official ors-sdk client raises on it [ors.end-metadata]";
    // A valid capture of a call that failed says so in its summary.
    let lost = ", ends in the provider's failure `error`: Session not found";
    for (file, events, warning, failure) in [
        ("ors-complete-success.sse", 2, Some((35, 2)), ""),
        ("ors-complete-failure.sse", 2, None, lost),
        ("ors-response-stream.sse", 2, Some((38, 2)), ""),
        ("ors-chunked.sse", 4, Some((171, 4)), ""),
        ("ors-tool-logic-error.sse", 2, None, ""),
        ("ors-http-error.sse", 1, None, lost),
        ("ors-sdk-server-crlf.sse", 2, None, ""),
    ] {
        let path = data(file);
        let name = path.to_str().unwrap();
        let s = if events == 1 { "" } else { "s" };
        let findings = warning
            .map(|(at, event)| format!("{name}: byte {at}: event {event}: {metadata}\n"))
            .unwrap_or_default();
        let warnings = if warning.is_some() {
            "1 warning"
        } else {
            "0 warnings"
        };
        assert_eq!(
            outcome(&check(&[name, "--profile", "ors"], b"")),
            (
                Some(0),
                findings.clone(),
                format!(
                    "{name}: ok, {events} event{s}, 0 errors, {warnings} (ors profile{failure})\n"
                )
            ),
            "{file}"
        );
        let strict = check(&[name, "--profile", "ors", "--strict"], b"");
        let (code, verdict, note) = match warning {
            Some(_) => (1, "failed", ", --strict"),
            None => (0, "ok", ""),
        };
        assert_eq!(
            outcome(&strict),
            (
                Some(code),
                findings,
                format!(
                    "{name}: {verdict}, {events} event{s}, 0 errors, {warnings} (ors profile{failure}{note})\n"
                )
            ),
            "{file} --strict"
        );
        // Without a profile, each is well-formed SSE.
        let (code, findings, summary) = outcome(&check(&[name, "--strict"], b""));
        assert_eq!((code, findings.as_str()), (Some(0), ""), "{file}");
        assert!(summary.contains("0 errors, 0 warnings"), "{summary}");
    }
}

/// The specification's generic "SSE Basics" example is well-formed SSE but no ORS tool call
/// (its events are `message` and `done`): the profile refuses it, by name.
#[test]
fn the_generic_sse_example_is_sse_but_no_tool_call() {
    let path = data("sse-basics.sse");
    let name = path.to_str().unwrap();
    assert_eq!(
        outcome(&check(&[name], b"")),
        (
            Some(0),
            String::new(),
            format!("{name}: ok, 3 events, 0 errors, 0 warnings\n")
        )
    );
    assert_eq!(
        outcome(&check(&[name, "--profile", "ors"], b"")),
        (
            Some(1),
            format!("{name}: byte 0: event 1: error: `message` breaks the rule: events are `task_id`, `chunk`, `end` or `error` [ors.unknown-event]\n"),
            format!("{name}: failed, 1 event, 1 error, 0 warnings (ors profile, stopped at byte 46)\n")
        )
    );
}

/// One stream with every kind of warning and error: each on its own line, in the order
/// found, with the offset of its event, line or byte and the event's number from 1.
#[test]
fn every_kind_of_finding_is_reported_with_its_offset_and_event() {
    let stream: &[u8] = b"\xef\xbb\xbfdata: 1\n\n\
        retry: soon\n\
        id: a\x00b\n\
        Event: x\n\
        nocolon\n\
        \xef\xbb\xbfdata: joined\n\
        data: a\xffb\xef\xbb\xbf\n\n\
        event: ping\n\n\
        data: cr\r\r\
        data: cut";
    let out = check(&["-"], stream);
    let expected = [
        "-: byte 12: event 2: warning: a `retry:` value that is not all ASCII digits: ignored [sse.retry-ignored]",
        "-: byte 24: event 2: warning: an `id:` value with a NUL character: ignored, the last event ID stays [sse.id-nul]",
        "-: byte 32: event 2: warning: unknown field `Event` (fields are event, data, id and retry, case-sensitive): ignored [sse.unknown-field]",
        "-: byte 41: event 2: warning: a line without a colon: per the spec the field `nocolon` with an empty value; the official ors-sdk client raises on it [sse.no-colon]",
        "-: byte 49: event 2: warning: a byte-order mark (U+FEFF) starts this line: only one at the start of the stream is stripped, so the field name is unknown and the line is ignored (two captures joined?) [sse.bom]",
        "-: byte 72: event 2: error: invalid UTF-8 (bytes ff): a decoder puts U+FFFD in their place [sse.invalid-utf8]",
        "-: byte 74: event 2: warning: a byte-order mark (U+FEFF) after the start of the stream: only a leading one is stripped, so this one is text [sse.bom]",
        "-: byte 79: event 3: warning: a block without a `data:` line (event type `ping`): a browser drops it, and it is not counted as an event [sse.dataless]",
        "-: byte 100: event 3: warning: a line ends with a lone CR (first one; the rest are not reported): valid, but clients that split lines on LF only, such as the official ors-sdk client, read one long line [sse.cr-line-ending]",
        "-: byte 102: event 4: error: the stream ends inside event 4 (no blank line after it): a client discards it [sse.truncated]",
    ];
    let (code, findings, summary) = outcome(&out);
    assert_eq!(findings.lines().collect::<Vec<_>>(), expected);
    assert_eq!(
        (code, summary.as_str()),
        (Some(1), "-: failed, 3 events, 2 errors, 8 warnings\n")
    );
}

/// Warnings alone exit 0 (1 with --strict); the ID of a finding repeated many times is shown
/// 10 times, and the summary counts all.
#[test]
fn warnings_exit_0_unless_strict_and_repeats_are_counted_not_shown() {
    let stream = "nocolon\n".repeat(25) + "data: x\n\n";
    let (code, findings, summary) = outcome(&check(&["-"], stream.as_bytes()));
    let lines: Vec<&str> = findings.lines().collect();
    assert_eq!(lines.len(), 11, "{findings}");
    assert!(lines[9].starts_with("-: byte 72: event 1: warning: a line without a colon"));
    assert_eq!(lines[10], "-: 15 more [sse.no-colon] not shown");
    assert_eq!(
        (code, summary.as_str()),
        (Some(0), "-: ok, 1 event, 0 errors, 25 warnings\n")
    );
    let (code, _, summary) = outcome(&check(&["-", "--strict"], stream.as_bytes()));
    assert_eq!(
        (code, summary.as_str()),
        (
            Some(1),
            "-: failed, 1 event, 0 errors, 25 warnings (--strict)\n"
        )
    );
}

/// A line over the decoder's 16 MiB limit is an error where it starts; checking stops there,
/// without reading the rest.
#[test]
fn a_line_over_the_limit_stops_the_check() {
    let mut stream = b"data: small\n\n".to_vec();
    stream.extend(std::iter::repeat_n(b'x', (16 << 20) + 10));
    stream.extend(b"\n\ndata: after\n\n");
    let (code, findings, summary) = outcome(&check(&["-"], &stream));
    assert_eq!(code, Some(1));
    assert!(
        findings.starts_with("-: byte 13: event 2: error: line at byte 13 reached "),
        "{findings}"
    );
    assert!(
        findings
            .ends_with("over the 16777216-byte limit; checking stops here [sse.line-too-long]\n"),
        "{findings}"
    );
    assert!(
        summary.starts_with("-: failed, 1 event, 1 error, 0 warnings (stopped at byte "),
        "{summary}"
    );
}

/// The stream's text cannot drive the terminal from a finding: control characters of a
/// field name or an event type are escaped.
#[test]
fn findings_escape_control_characters() {
    let (_, findings, _) = outcome(&check(&["-"], b"x\x1b]0;pwned\x07: 1\n\n"));
    assert!(!findings.contains('\u{1b}') && !findings.contains('\u{7}'));
    assert!(
        findings.contains(r"unknown field `x\u{1b}]0;pwned\u{7}`"),
        "{findings}"
    );
}

/// `--help` lists what is checked; bad usage exits 2.
#[test]
fn help_lists_the_findings_and_bad_usage_exits_2() {
    let help = ssekit().args(["check", "--help"]).output().unwrap();
    let help = text(&help.stdout);
    for id in [
        "sse.truncated",
        "sse.invalid-utf8",
        "sse.line-too-long",
        "sse.cr-line-ending",
        "sse.bom",
        "sse.no-colon",
        "sse.unknown-field",
        "sse.retry-ignored",
        "sse.id-nul",
        "sse.dataless",
        "ors.end-metadata",
        "--strict",
    ] {
        assert!(help.contains(id), "{id} missing from:\n{help}");
    }
    assert_eq!(check(&[], b"").status.code(), Some(2));
    assert_eq!(
        check(&["-", "--profile", "nope"], b"").status.code(),
        Some(2)
    );
}

/// An Anthropic Messages stream from Anthropic's streaming documentation
/// (https://docs.anthropic.com/en/docs/build-with-claude/streaming), with its `error` event
/// after a delta: a valid capture of a call that failed, which the summary says. Cut before
/// `message_stop`, it fails.
#[test]
fn check_profile_anthropic_names_the_providers_failure_and_fails_a_cut() {
    let head = concat!(
        "event: message_start\n",
        "data: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1nZdL29xx5MUA1yADyHTEsnR8uuvGzszyY\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"claude-opus-4-20250514\",\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":25,\"output_tokens\":1}}}\n\n",
        "event: content_block_start\n",
        "data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
        "event: ping\n",
        "data: {\"type\": \"ping\"}\n\n",
        "event: content_block_delta\n",
        "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hello\"}}\n\n",
    );
    let error = "event: error\ndata: {\"type\": \"error\", \"error\": {\"type\": \"overloaded_error\", \"message\": \"Overloaded\"}}\n\n";
    let failed = format!("{head}{error}");
    let (code, findings, summary) =
        outcome(&check(&["--profile", "anthropic", "-"], failed.as_bytes()));
    assert_eq!(code, Some(0), "{findings}");
    assert!(
        summary.contains("anthropic profile, ends in the provider's failure `error` (overloaded_error): Overloaded"),
        "{summary}"
    );
    let (code, findings, _) = outcome(&check(&["--profile", "anthropic", "-"], head.as_bytes()));
    assert_eq!(code, Some(1));
    assert!(findings.contains("[sequence.unterminated]"), "{findings}");
}

/// An A2A `message/stream` answer as the A2A specification shows it (§9.3,
/// https://a2a-protocol.org/v0.3.0/specification/#93-streaming-task-execution-sse), shortened:
/// the task, an artifact, the final status. It passes `--profile a2a`; a task that fails is a
/// valid capture of a failed call, named in the summary; cut before the final status, it fails.
#[test]
fn check_profile_a2a_passes_the_spec_stream_names_a_failed_task_and_fails_a_cut() {
    let task = r#"{"jsonrpc": "2.0", "id": 1, "result": {"id": "225d6247", "contextId": "05217e44", "status": {"state": "submitted"}, "kind": "task"}}"#;
    let chunk = r#"{"jsonrpc": "2.0", "id": 1, "result": {"taskId": "225d6247", "contextId": "05217e44", "artifact": {"artifactId": "9b6934dd", "parts": [{"kind":"text", "text": "<section 1...>"}]}, "append": false, "lastChunk": true, "kind":"artifact-update"}}"#;
    let done = r#"{"jsonrpc": "2.0", "id": 1, "result": {"taskId": "225d6247", "contextId": "05217e44", "status": {"state": "completed"}, "final": true, "kind":"status-update"}}"#;
    let failed = r#"{"jsonrpc": "2.0", "id": 1, "result": {"taskId": "225d6247", "contextId": "05217e44", "status": {"state": "failed", "message": {"role": "agent", "messageId": "m1", "parts": [{"kind": "text", "text": "the model is down"}]}}, "final": true, "kind":"status-update"}}"#;
    let stream =
        |events: &[&str]| -> String { events.iter().map(|e| format!("data: {e}\n\n")).collect() };
    let (code, findings, summary) = outcome(&check(
        &["--profile", "a2a", "-"],
        stream(&[task, chunk, done]).as_bytes(),
    ));
    assert_eq!((code, findings.as_str()), (Some(0), ""), "{summary}");
    assert!(
        summary.contains("ok, 3 events, 0 errors, 0 warnings (a2a profile)"),
        "{summary}"
    );
    let (code, _, summary) = outcome(&check(
        &["--profile", "a2a", "-"],
        stream(&[task, chunk, failed]).as_bytes(),
    ));
    assert_eq!(code, Some(0));
    assert!(
        summary
            .contains("ends in the provider's failure `status-update` (failed): the model is down"),
        "{summary}"
    );
    let (code, findings, _) = outcome(&check(
        &["--profile", "a2a", "-"],
        stream(&[task, chunk]).as_bytes(),
    ));
    assert_eq!(code, Some(1));
    assert!(findings.contains("[sequence.unterminated]"), "{findings}");
}

/// A relayed Chat Completions stream whose last chunk is an `error` object (as gateways
/// relay a provider's failure): valid, and named.
#[test]
fn check_profile_chat_names_a_relayed_error_chunk() {
    let wire = concat!(
        "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\n",
        "data: {\"error\":{\"message\":\"The server had an error while processing your request.\",\"type\":\"server_error\",\"code\":null}}\n\n",
        "data: [DONE]\n\n",
    );
    let (code, findings, summary) = outcome(&check(&["--profile", "chat", "-"], wire.as_bytes()));
    assert_eq!((code, findings.as_str()), (Some(0), ""), "{summary}");
    assert!(
        summary.contains(
            "ends in the provider's failure `error` (server_error): The server had an error"
        ),
        "{summary}"
    );
}
