//! `serve`, `tail`, `decode`.

use std::borrow::Cow;
use std::io::Write as _;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use clap::Args;
use futures_util::StreamExt;
use ssekit::client::{GiveUpReason, ReconnectConfig};
use ssekit::sequence::Profile;
use ssekit::{Decoder, Event, StreamEnd};
use ssekit_http::client::{Ended, Item};
use ssekit_http::responses::Resume;
use tokio::io::AsyncReadExt;

use crate::app::Settings;
use crate::json_lines::{self, EndReason};
use crate::profiles::{validator, ProfileName};
use crate::runtime::{event_source, Items, RuntimeName};
use crate::{CliError, CLOSED_STDOUT};

/// How `ssekit serve` serves, beside the app's settings.
pub struct Serving {
    /// The shared store's URL (`--store`).
    pub store: Option<String>,
    /// How long running tool calls get to finish on SIGTERM (`--drain-timeout`).
    pub drain: Duration,
    /// The certificate chain and key files of HTTPS (`--tls-cert`, `--tls-key`).
    pub tls: Option<(std::path::PathBuf, std::path::PathBuf)>,
    /// Where Prometheus text is served at `/metrics` (`--metrics-addr`).
    pub metrics: Option<String>,
    /// The connection limits.
    pub limits: Limits,
}

/// `ssekit serve`'s connection limits (`--request-head-timeout`, `--idle-timeout`,
/// `--max-connections`, `--max-request-head`).
pub struct Limits {
    /// From accept to a complete first request head.
    pub request_head_timeout: Duration,
    /// With no request in flight.
    pub idle_timeout: Duration,
    /// Connections served at once; `None`: `ServeOptions`' default.
    pub max_connections: Option<usize>,
    /// The largest request head, in bytes.
    pub max_request_head: usize,
}

/// The connection options of `serving`: HTTPS (ALPN `h2`, `http/1.1`) when it has a
/// certificate, else HTTP/1.1 and h2c.
fn serve_options(serving: &Serving) -> Result<ssekit_http::server::ServeOptions, CliError> {
    let limits = &serving.limits;
    let mut options = ssekit_http::server::ServeOptions::default()
        .request_head_timeout(limits.request_head_timeout)
        .idle_timeout(limits.idle_timeout)
        .max_request_head(limits.max_request_head);
    if let Some(max) = limits.max_connections {
        options = options.max_connections(max);
    }
    let Some((cert, key)) = &serving.tls else {
        return Ok(options);
    };
    #[cfg(feature = "rustls")]
    {
        Ok(options.tls(crate::tls::server_config(cert, key)?))
    }
    #[cfg(not(feature = "rustls"))]
    {
        let _ = (cert, key);
        Err(CliError::Usage(
            "--tls-cert needs ssekit built with its rustls feature".to_owned(),
        ))
    }
}

/// `ssekit serve`: the demo app on `addr`, served by `runtime`'s transport. Run it under
/// that runtime's [`block_on`](RuntimeName::block_on).
pub async fn serve(
    addr: &str,
    runtime: RuntimeName,
    settings: Settings,
    serving: Serving,
) -> Result<ExitCode, CliError> {
    let options = serve_options(&serving)?;
    let scheme = if serving.tls.is_some() {
        "https"
    } else {
        "http"
    };
    let listener = std::net::TcpListener::bind(addr)
        .map_err(|e| CliError::Io(format!("cannot listen on {addr}"), e))?;
    let local = listener
        .local_addr()
        .map_err(|e| CliError::Io("cannot read the local address".into(), e))?;
    let metrics = match serving.metrics.as_deref() {
        None => None,
        Some(addr) => {
            let listener = std::net::TcpListener::bind(addr).map_err(|e| {
                CliError::Io(format!("cannot listen on {addr} (--metrics-addr)"), e)
            })?;
            Some((listener, crate::operate::start_metrics()?))
        }
    };
    let metrics_url = match &metrics {
        Some((listener, _)) => Some(
            listener
                .local_addr()
                .map_err(|e| CliError::Io("cannot read the metrics address".into(), e))?,
        ),
        None => None,
    };
    // The first line is for scripts (the port, when 0 was asked for), printed once the
    // server is ready (its store connected). Printing must not stop the server when nobody
    // reads stdout any more.
    let announce = move || {
        let mut out = std::io::stdout();
        let _ = writeln!(out, "listening on {scheme}://{local}");
        let _ = writeln!(
            out,
            "  ORS:       curl -N -X POST {scheme}://{local}/create_session"
        );
        let _ = writeln!(
            out,
            "  Responses: curl -N -X POST {scheme}://{local}/v1/responses -d '{{\"input\":\"hi\"}}'"
        );
        let _ = writeln!(
            out,
            "  Messages:  curl -N -X POST {scheme}://{local}/v1/messages -d '{{\"stream\":true,\"messages\":[]}}'"
        );
        if let Some(at) = metrics_url {
            let _ = writeln!(out, "  Metrics:   curl http://{at}/metrics");
        }
        let _ = out.flush();
    };
    let around = crate::runtime::Around {
        store: serving.store,
        drain: serving.drain,
        options,
        metrics,
    };
    runtime
        .serve(listener, settings, around, announce)
        .await
        .map_err(|e| CliError::Io("server stopped".into(), e))?;
    Ok(ExitCode::SUCCESS)
}

/// `ssekit tail` arguments.
#[derive(Args, Debug)]
pub struct TailArgs {
    /// The stream's URL (http:// or https://). A URL without a scheme, with another scheme or
    /// with a port out of range is bad usage (exit 2).
    url: String,
    /// The method (default GET, or POST with -d).
    #[arg(short = 'X', long = "request")]
    method: Option<String>,
    /// A request header, `Name: value` (repeatable). After a redirect to another origin,
    /// Authorization, Cookie and Proxy-Authorization are no longer sent; other headers are.
    #[arg(short = 'H', long = "header")]
    headers: Vec<String>,
    /// The request body, sent again on every reconnect (`@file` reads a file).
    #[arg(short = 'd', long = "data")]
    data: Option<String>,
    /// Validate the events against a protocol; stop at its terminal event.
    #[arg(long, value_enum)]
    profile: Option<ProfileName>,
    /// Print JSON lines instead of the human view.
    #[arg(long)]
    json: bool,
    /// Give up after this many failed reconnects in a row: refused or reset connections,
    /// timeouts, 5xx and 429 answers, streams cut before any event. A connection that
    /// delivers an event starts the count over; a clean end of the stream is no failure.
    #[arg(long, value_name = "N", default_value_t = 5)]
    retries: u32,
    /// The wait before reconnecting when the server sets none with `retry:`, and before the
    /// first retry after a failure (doubled for each further failure in a row, up to 30 s).
    /// `500ms`, `3s`; a bare number is seconds.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "3s")]
    reconnect_time: Duration,
    /// Do not reconnect: stop at the first end of the stream (exit 0 after a clean end, 1
    /// after a cut or a failure).
    #[arg(long)]
    once: bool,
    /// With a request that is not a GET (-X POST, PUT, PATCH, DELETE, or -d, which implies
    /// POST): reconnect after a clean end and send the request again, as for a GET. Without
    /// it such a request is sent once: its first clean end stops tail (exit 0). Failures are
    /// retried either way.
    #[arg(long, conflicts_with = "once")]
    follow: bool,
    /// Show every connection attempt and every wait on stderr as it happens: the method and
    /// URL of each request, each failure with its cause, and each wait with the retry it
    /// leads to (`retry 2 of 5`) or why it is no failure.
    #[arg(short = 'v', long)]
    verbose: bool,
    /// Drop a connection on which nothing (no event, no keep-alive, no byte) arrived for
    /// this long, and reconnect, resuming after the last event (with --once: stop, exit 1).
    /// `500ms`, `30s`, `2m`; a bare number is seconds. Default: wait for ever.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    idle_timeout: Option<Duration>,
    /// Follow at most this many redirects per connection (0: none; a redirect is then an
    /// error).
    #[arg(long, value_name = "N", default_value_t = 10)]
    max_redirects: u32,
    /// The transport that carries the stream: hyper on tokio, or hyper on smol.
    #[arg(long, value_enum, default_value_t)]
    runtime: RuntimeName,
    /// Trust the certificates of this PEM file for https:// (a private or self-signed
    /// root), beside the Mozilla roots.
    #[arg(long, value_name = "PEM")]
    cacert: Option<std::path::PathBuf>,
    /// Connect through this HTTP proxy (`http://[USER:PASSWORD@]HOST:PORT`, a CONNECT
    /// tunnel), loopback included, instead of the environment's (HTTPS_PROXY, HTTP_PROXY,
    /// ALL_PROXY and NO_PROXY, which never apply to loopback); `none` goes direct.
    #[arg(short = 'x', long, value_name = "URL")]
    proxy: Option<String>,
}

/// A duration on the command line: a number, fractions allowed, of `ms`, `s` (the unit of a
/// bare number) or `m`; more than zero.
pub(crate) fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let unit_at = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(unit_at);
    let number: f64 = number
        .parse()
        .map_err(|_| format!("{text:?} is not a duration (500ms, 30s, 2m)"))?;
    let seconds_per_unit = match unit.trim() {
        "ms" => 0.001,
        "" | "s" => 1.0,
        "m" => 60.0,
        other => {
            return Err(format!(
                "unknown unit {other:?}: use ms, s or m (500ms, 30s, 2m)"
            ))
        }
    };
    let duration = Duration::try_from_secs_f64(number * seconds_per_unit)
        .map_err(|_| format!("{text:?} is too long"))?;
    if duration.is_zero() {
        return Err("the duration must be more than zero".to_owned());
    }
    Ok(duration)
}

/// Prints `item`: a JSON line on stdout with `json`, else the human view, events on stdout
/// ([`human_event`]) and the rest on stderr, `-- `-prefixed, with the stream's text
/// (comments, reasons) made safe for a terminal by [`escape_controls`].
fn print_item(item: &Item, json: bool) {
    if json {
        if let Some(line) = json_lines::item(item) {
            println!("{line}");
        }
        return;
    }
    match item {
        Item::Event(e) => println!("{}", human_event(e)),
        Item::Comment(c) => eprintln!(": {}", escape_controls(c)),
        Item::Retry(ms) => eprintln!("-- retry: {ms} ms"),
        Item::Connected { attempt: 0 } => eprintln!("-- connected"),
        Item::Connected { attempt } => eprintln!("-- connected (retry {attempt})"),
        Item::Disconnected(why) => {
            eprintln!("-- disconnected: {}", escape_controls(&why.to_string()));
        }
        Item::Reconnecting { after } => eprintln!("-- reconnecting in {:.1}s", after.as_secs_f64()),
        Item::Skipped(e) => eprintln!("-- skipped: {}", escape_controls(&e.to_string())),
        Item::Dataless(e) => eprintln!("-- dataless block: {}", human_event(e)),
        Item::Redirected { status, to } => eprintln!("-- redirected ({status}) to {to}"),
        _ => {}
    }
}

/// The human view of an event: `TYPE [ID]: DATA` (no ` [ID]` when the event has no id),
/// each further line of DATA indented by four spaces. Whatever the stream sends, the line
/// is safe to print to a terminal and its parts cannot be forged:
/// - control characters (C0, DEL and C1) other than DATA's line breaks are escaped as
///   Rust's `{:?}` escapes them (`\t`, `\0`, `\u{1b}`), by [`escape_controls`];
/// - TYPE and ID are printed as they are, unless they could be misread ([`label`]): then
///   they are quoted as Rust's `{:?}` quotes a string, so an event type
///   `tick [9]: forged` prints as `"tick [9]: forged": DATA`, not as an event with id 9.
///
/// `--json` prints the same fields unchanged, escaped only as JSON escapes them.
fn human_event(e: &Event) -> String {
    let id = e
        .id()
        .map(|id| format!(" [{}]", label(id)))
        .unwrap_or_default();
    format!(
        "{}{id}: {}",
        label(e.event_type()),
        escape_controls(e.data()).replace('\n', "\n    ")
    )
}

/// An event type or id for the human view ([`human_event`]): as it is, or quoted with
/// Rust's `{:?}` when it holds `[`, `]`, `"`, `: `, a control character, or ends with `:`,
/// any of which could pass for the view's own `[ID]` or `: ` or hide in the terminal.
fn label(text: &str) -> Cow<'_, str> {
    let misleading = text.contains(['[', ']', '"'])
        || text.contains(": ")
        || text.ends_with(':')
        || text.chars().any(char::is_control);
    if misleading {
        Cow::Owned(format!("{text:?}"))
    } else {
        Cow::Borrowed(text)
    }
}

/// `text` made safe to print to a terminal: each control character (C0, DEL and C1:
/// [`char::is_control`]) but `\n` is written as Rust's `{:?}` writes it (`\t`, `\r`, `\0`,
/// `\u{1b}`), so that no escape sequence (colours, cursor moves, OSC title or clipboard
/// writes) reaches the terminal. Everything else, backslashes included, is left as it is.
pub(crate) fn escape_controls(text: &str) -> Cow<'_, str> {
    let escaped = |c: char| c.is_control() && c != '\n';
    if !text.chars().any(escaped) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if escaped(c) {
            out.extend(c.escape_debug());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// The URL schemes `tail` speaks: `http`, and `https` with the `rustls` feature.
fn tail_schemes() -> &'static [&'static str] {
    ssekit_http::client::schemes(cfg!(feature = "rustls"))
}

/// Checks `url` before anything starts: a URL `tail` cannot use is bad usage (exit 2), and
/// the message says what to fix: a missing scheme (`add http://`), a scheme `tail` does not
/// speak, a missing host, a port that is no number or out of range (1 to 65535).
fn check_url(url: &str) -> Result<(), CliError> {
    let schemes = tail_schemes();
    let shown = ssekit_http::redacted_url(url);
    let bad = |why: &str| CliError::Usage(format!("bad URL {shown:?}: {why}"));
    let speaks = schemes
        .iter()
        .map(|s| format!("{s}://"))
        .collect::<Vec<_>>()
        .join(" or ");
    if url.is_empty() {
        return Err(bad(&format!("empty; expected {speaks}HOST[:PORT]/PATH")));
    }
    let Some((scheme, rest)) = url.split_once("://") else {
        let lower = url.to_ascii_lowercase();
        if schemes.iter().any(|s| lower.starts_with(&format!("{s}:"))) {
            return Err(bad(&format!("expected {speaks}HOST[:PORT]/PATH")));
        }
        return Err(bad(&format!("no scheme; add http:// (http://{shown})")));
    };
    if !schemes.iter().any(|s| s.eq_ignore_ascii_case(scheme)) {
        let rustls = if scheme.eq_ignore_ascii_case("https") {
            "; https:// needs ssekit built with its rustls feature"
        } else {
            ""
        };
        return Err(bad(&format!(
            "unsupported scheme {scheme}://; tail speaks {speaks}{rustls}"
        )));
    }
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let (host, port) = match host_port.strip_prefix('[') {
        Some(v6) => match v6.split_once(']') {
            Some((host, after)) => (host, after.strip_prefix(':')),
            None => return Err(bad("an IPv6 address without its closing `]`")),
        },
        None => match host_port.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (host_port, None),
        },
    };
    if host.is_empty() {
        return Err(bad(&format!("no host; expected {speaks}HOST[:PORT]/PATH")));
    }
    if let Some(port) = port.filter(|p| !p.is_empty()) {
        if !port.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad(&format!("the port {port:?} is not a number")));
        }
        if !port.parse::<u16>().is_ok_and(|p| p > 0) {
            return Err(bad(&format!(
                "port out of range: {port} (ports are 1 to 65535)"
            )));
        }
    }
    url.parse::<http::Uri>()
        .map_err(|e| bad(&e.to_string()))
        .map(drop)
}

/// A request the library could not build from the arguments (a URL, a path, a header or a
/// proxy URL) is bad usage, as the checks of [`check_url`] are.
fn usage_if_bad_request(e: CliError) -> CliError {
    use ssekit_http::RequestErrorKind as Kind;
    match e {
        CliError::Transport(ssekit_http::Error::Request(r))
            if matches!(
                r.kind(),
                Kind::Url | Kind::Path | Kind::Header | Kind::ProxyUrl
            ) =>
        {
            CliError::Usage(r.to_string())
        }
        other => other,
    }
}

/// The error that ended the stream; a give-up after the retries is told as such, with the
/// right number of retries ([`CliError::GaveUp`]).
fn ended_by(e: ssekit_http::Error) -> CliError {
    match e {
        ssekit_http::Error::Exhausted { attempts, last } => CliError::GaveUp {
            retries: attempts,
            last: last.to_string(),
        },
        ssekit_http::Error::GaveUp(GiveUpReason::MaxAttempts { attempts, last, .. }) => {
            CliError::GaveUp {
                retries: attempts,
                last: last.to_string(),
            }
        }
        other => CliError::Transport(other),
    }
}

/// What `tail` prints beside the stream's own items: with `-v`, every attempt and every wait
/// as it happens (on stderr); and, once, how the stream ended (see [`Report::end`]).
struct Report {
    json: bool,
    verbose: bool,
    /// `--retries`.
    retries: u32,
    /// Failed attempts in a row, as the reconnect policy counts them: a failure adds one, an
    /// event (progress) or a stream alive for [`RESET_AFTER`] starts over, a clean end is
    /// none. Shared with the hook that prints each request (`-v`).
    failures: Arc<AtomicU32>,
    /// When the open connection was accepted, and when it last delivered something.
    opened: Option<(std::time::Instant, std::time::Instant)>,
    /// The end was told.
    ended: bool,
}

/// How long a stream must have been alive for its end to start the failure count over: the
/// reconnect policy's default `reset_after`, which `tail` does not change.
const RESET_AFTER: Duration = Duration::from_secs(60);

impl Report {
    fn new(args: &TailArgs) -> Self {
        Report {
            json: args.json,
            verbose: args.verbose,
            retries: args.retries,
            failures: Arc::new(AtomicU32::new(0)),
            opened: None,
            ended: false,
        }
    }

    /// Prints `item` ([`print_item`]; with `-v` and `--json`, the connection's story also
    /// on stderr) after counting it.
    fn item(&mut self, item: &Item) {
        self.count(item);
        match item {
            Item::Reconnecting { after } if self.verbose => {
                if self.json {
                    print_item(item, true);
                }
                let why = match self.failures.load(Ordering::Relaxed) {
                    0 => "after a clean end, which is no failure".to_owned(),
                    n => format!("retry {n} of {}", self.retries),
                };
                eprintln!("-- reconnecting in {:.1}s ({why})", after.as_secs_f64());
            }
            Item::Connected { .. }
            | Item::Disconnected(_)
            | Item::Redirected { .. }
            | Item::Skipped(_)
                if self.verbose && self.json =>
            {
                print_item(item, true);
                print_item(item, false);
            }
            _ => print_item(item, self.json),
        }
    }

    /// Follows the failure count of the reconnect policy (see [`Report::failures`]).
    fn count(&mut self, item: &Item) {
        let now = std::time::Instant::now();
        match item {
            Item::Connected { attempt } => {
                self.opened = Some((now, now));
                // The policy's own count, when it says more than "a reconnect".
                if *attempt > 1 {
                    self.failures.store(*attempt, Ordering::Relaxed);
                }
            }
            Item::Event(_) => {
                self.failures.store(0, Ordering::Relaxed);
                if let Some((_, alive)) = &mut self.opened {
                    *alive = now;
                }
            }
            Item::Comment(_) | Item::Retry(_) | Item::Dataless(_) | Item::Skipped(_) => {
                if let Some((_, alive)) = &mut self.opened {
                    *alive = now;
                }
            }
            Item::Disconnected(why) => {
                if let Some((since, alive)) = self.opened.take()
                    && alive.saturating_duration_since(since) >= RESET_AFTER
                {
                    self.failures.store(0, Ordering::Relaxed);
                }
                if !matches!(why, Ended::Clean) {
                    self.failures.fetch_add(1, Ordering::Relaxed);
                }
            }
            _ => {}
        }
    }

    /// The hook run before each request is sent (`-v`): one line with its method and URL
    /// (user info and query hidden), and the retry it is.
    fn connecting(&self) -> impl Fn(&http::Request<Bytes>) + Send + 'static {
        let failures = Arc::clone(&self.failures);
        let retries = self.retries;
        move |req| {
            let url = ssekit_http::redacted_url(&req.uri().to_string());
            let retry = match failures.load(Ordering::Relaxed) {
                0 => String::new(),
                n => format!(" (retry {n} of {retries})"),
            };
            eprintln!(
                "-- connecting: {} {}{retry}",
                req.method(),
                escape_controls(&url)
            );
        }
    }

    /// Tells, once, how the stream ended: with `--json` a line of type `end`, the last one;
    /// in the human view a `-- ` line on stderr for an end that is no error (`-- 204: the
    /// server closed the stream for good`, `-- end: …`); an error is told by the
    /// `ssekit: error:` line that follows.
    fn end(&mut self, reason: EndReason, message: &str) {
        if std::mem::replace(&mut self.ended, true) {
            return;
        }
        if self.json {
            if let Some(line) = json_lines::end(reason, message) {
                println!("{line}");
            }
            return;
        }
        match reason {
            EndReason::NoContent => eprintln!("-- {}", escape_controls(message)),
            EndReason::Clean | EndReason::Terminal => {
                eprintln!("-- end: {}", escape_controls(message));
            }
            EndReason::GaveUp | EndReason::Failed | EndReason::Interrupted => {}
        }
    }
}

/// The `message` of a 204's end.
const NO_CONTENT: &str = "204: the server closed the stream for good";

pub async fn tail(args: TailArgs) -> Result<ExitCode, CliError> {
    check_url(&args.url)?;
    let mut report = Report::new(&args);
    let outcome = follow(&args, &mut report).await;
    if let Err(e) = &outcome {
        let reason = match e {
            // Bad usage starts nothing: there is no end to tell.
            CliError::Usage(_) => return outcome,
            CliError::GaveUp { .. } => EndReason::GaveUp,
            _ => EndReason::Failed,
        };
        report.end(reason, &e.to_string());
    }
    outcome
}

/// `tail` once its URL is known to be good: opens the stream, prints it, validates it, and
/// tells how it ended through `report`.
async fn follow(args: &TailArgs, report: &mut Report) -> Result<ExitCode, CliError> {
    let body = match &args.data {
        Some(d) if d.starts_with('@') => Bytes::from(
            tokio::fs::read(&d[1..])
                .await
                .map_err(|e| CliError::Io(format!("cannot read {}", &d[1..]), e))?,
        ),
        Some(d) => Bytes::from(d.clone()),
        None => Bytes::new(),
    };
    let method = match &args.method {
        Some(m) => http::Method::from_bytes(m.to_ascii_uppercase().as_bytes())
            .map_err(|_| CliError::Usage(format!("bad method {m:?}")))?,
        None if args.data.is_some() => http::Method::POST,
        None => http::Method::GET,
    };
    // Sending a POST again would, say, create another session: a request that is not a GET
    // (nor another safe method: HEAD, OPTIONS, TRACE) is sent once, unless --follow.
    let send_once = !method.is_safe() && !args.follow;
    // ORS streams restart on every connection: a reconnect resumes the call by putting the
    // task id into the (JSON) body, and the validator starts over with the replayed stream.
    // So an ORS call is followed after a clean end once its task id is known.
    let ors = args.profile == Some(ProfileName::Ors);
    let task_id = Arc::new(Mutex::new(None::<String>));
    // A background Responses stream is resumed by its response id and the last sequence
    // number (`GET …/responses/{id}?stream=true&starting_after=N`): the stream goes on
    // where it was cut, so the validator goes on too.
    let background = args.profile == Some(ProfileName::Responses)
        && serde_json::from_slice::<serde_json::Value>(&body)
            .is_ok_and(|v| v["background"] == serde_json::Value::Bool(true));
    let responses = background.then(Resume::new);
    let mut items = open(
        args,
        method.clone(),
        body,
        send_once && !ors && !background,
        report,
        &task_id,
        responses.clone(),
    )
    .map_err(usage_if_bad_request)?;
    let mut checker = args.profile.map(validator);
    // One Ctrl-C future for the whole run: it stays subscribed to SIGINT, so a Ctrl-C that
    // arrives while an item is being printed is seen on the next pass (a new future each pass
    // missed every signal between two passes, which on a busy stream was nearly all of them).
    // Polled first, so that a busy stream cannot keep it waiting.
    let ctrl_c = tokio::signal::ctrl_c();
    tokio::pin!(ctrl_c);
    // Whether the last item was a clean end: the stream stopping right after one stopped
    // there (--once, or a request sent once); stopping after anything else is a 204.
    let mut after_clean_end = false;
    loop {
        let item = tokio::select! {
            biased;
            _ = &mut ctrl_c => {
                report.end(EndReason::Interrupted, "interrupted (Ctrl-C)");
                return Ok(ExitCode::from(130));
            }
            item = items.next() => item,
        };
        let Some(item) = item else { break };
        let item = item.map_err(ended_by)?;
        report.item(&item);
        after_clean_end = matches!(item, Item::Disconnected(Ended::Clean));
        match &item {
            // A resumed ORS call replays its stream from the start.
            Item::Connected { attempt } if ors && *attempt > 0 => {
                checker = args.profile.map(validator);
            }
            // An ORS call that ended before naming its task id cannot be resumed: sending
            // the request again would start another call.
            Item::Disconnected(Ended::Clean)
                if ors
                    && send_once
                    && task_id
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .is_none() =>
            {
                break;
            }
            // A background response cut before its id arrived cannot be resumed: sending
            // the request again would make another.
            Item::Disconnected(_)
                if responses.as_ref().is_some_and(|r| r.position().is_none()) && send_once =>
            {
                break;
            }
            Item::Disconnected(Ended::Truncated) if args.once => {
                return Err(CliError::Invalid(
                    "the stream was cut inside an event".to_owned(),
                ));
            }
            Item::Disconnected(Ended::IdleTimeout) if args.once => {
                let after = args.idle_timeout.unwrap_or_default();
                return Err(CliError::Invalid(format!(
                    "the stream stalled: nothing arrived for {after:?} (--idle-timeout)"
                )));
            }
            Item::Event(e) => {
                if let Some(resume) = &responses {
                    resume.observe(e);
                }
                if ors && e.event_type() == "task_id" {
                    *task_id.lock().unwrap_or_else(PoisonError::into_inner) =
                        Some(e.data().to_owned());
                }
                if let Some(v) = checker.as_mut() {
                    v.event(e)
                        .map_err(|err| CliError::Invalid(err.to_string()))?;
                    for warning in v.warnings() {
                        eprintln!("-- warning: {}", escape_controls(&warning.to_string()));
                    }
                    if v.is_terminated() {
                        let name = v.profile().event_name(e.as_event_ref());
                        let failure = v.profile().failure();
                        let what = if failure.is_some() {
                            "a failure"
                        } else {
                            "success"
                        };
                        report.end(
                            EndReason::Terminal,
                            &format!(
                                "the terminal event `{}` ({what})",
                                escape_controls(name.as_str())
                            ),
                        );
                        return match failure {
                            Some(failure) => Err(CliError::Failed(failure)),
                            None => Ok(ExitCode::SUCCESS),
                        };
                    }
                }
            }
            _ => {}
        }
    }
    // The stream ended without an error: a 204, or a clean end not followed (--once, a
    // request sent once); cuts and failures returned above.
    if after_clean_end {
        let why = if args.once {
            "the server ended the stream cleanly; not reconnecting (--once)".to_owned()
        } else {
            format!(
                "the server ended the stream cleanly; a {method} is sent once (--follow sends it again)"
            )
        };
        report.end(EndReason::Clean, &why);
    } else {
        report.end(EndReason::NoContent, NO_CONTENT);
    }
    // Before the profile's terminal event, that is no success either.
    if let Some(v) = checker.as_mut() {
        v.finish()
            .map_err(|err| CliError::Invalid(err.to_string()))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Opens the stream of `args` as `method` with `body`: the reconnect policy (stopping at
/// a clean end when `stop_on_clean_end`), TLS, proxy, headers, and the hook that resumes an
/// ORS call by its task id or a background response by its sequence number and, with `-v`,
/// prints each request.
fn open(
    args: &TailArgs,
    method: http::Method,
    body: Bytes,
    stop_on_clean_end: bool,
    report: &Report,
    task_id: &Arc<Mutex<Option<String>>>,
    responses: Option<Resume>,
) -> Result<Items, CliError> {
    #[cfg(feature = "rustls")]
    let tls = args
        .cacert
        .as_deref()
        .map(crate::tls::client_config)
        .transpose()?;
    #[cfg(not(feature = "rustls"))]
    if args.cacert.is_some() {
        return Err(CliError::Usage(
            "--cacert needs ssekit built with its rustls feature".to_owned(),
        ));
    }
    let proxy = match args.proxy.as_deref() {
        None => None,
        Some("none") => Some(ssekit_http::proxy::Proxy::none()),
        Some(url) => Some(
            ssekit_http::proxy::Proxy::all(url)
                .map_err(|e| CliError::Usage(format!("bad --proxy: {e}")))?,
        ),
    };
    let resume = (args.profile == Some(ProfileName::Ors)).then(|| Arc::clone(task_id));
    let connecting = args.verbose.then(|| report.connecting());
    let items = event_source!(args.runtime, method, &args.url, body, |source| {
        let mut source = source
            .reconnect(
                ReconnectConfig::default()
                    .retry_timeout(args.reconnect_time)
                    .max_delay(Duration::from_secs(30).max(args.reconnect_time))
                    .max_attempts(Some(args.retries))
                    .idle_timeout(args.idle_timeout)
                    .reconnect(!args.once)
                    .stop_on_clean_end(stop_on_clean_end),
            )
            .max_redirects(args.max_redirects);
        #[cfg(feature = "rustls")]
        if let Some(tls) = &tls {
            source = source.tls(tls.clone());
        }
        if let Some(proxy) = &proxy {
            source = source.proxy(proxy.clone());
        }
        for h in &args.headers {
            let Some((name, value)) = h.split_once(':') else {
                return Err(CliError::Usage(format!(
                    "bad header {h:?}: expected `Name: value`"
                )));
            };
            source = source.header(name.trim(), value.trim())?;
        }
        if resume.is_some() || connecting.is_some() || responses.is_some() {
            source = source.on_connect(move |req| {
                if let Some(task_id) = &resume {
                    resume_with(task_id, req);
                }
                if let Some(responses) = &responses {
                    responses.rewrite(req);
                }
                if let Some(connecting) = &connecting {
                    connecting(req);
                }
            });
        }
        source
    });
    Ok(items)
}

/// Puts the task id of the ORS call being tailed, once known, into the body of a
/// reconnect's request, so the server resumes the call instead of starting another.
fn resume_with(task_id: &Mutex<Option<String>>, req: &mut http::Request<Bytes>) {
    let id = task_id
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone();
    if let Some(id) = id
        && let Ok(serde_json::Value::Object(mut body)) =
            serde_json::from_slice::<serde_json::Value>(req.body())
    {
        body.insert("task_id".into(), serde_json::Value::String(id));
        *req.body_mut() = Bytes::from(serde_json::Value::Object(body).to_string());
    }
}

pub async fn decode() -> Result<ExitCode, CliError> {
    let mut stdin = tokio::io::stdin();
    let mut decoder = Decoder::new();
    let mut buf = vec![0u8; 64 << 10];
    let mut out = std::io::stdout().lock();
    loop {
        let n = stdin
            .read(&mut buf)
            .await
            .map_err(|e| CliError::Io("cannot read stdin".into(), e))?;
        if n == 0 {
            break;
        }
        decoder
            .feed_slice(buf.get(..n).unwrap_or_default())
            .map_err(|e| CliError::Invalid(e.to_string()))?;
        while let Some(frame) = decoder
            .next_frame()
            .map_err(|e| CliError::Invalid(e.to_string()))?
        {
            if let Some(line) = json_lines::frame(&frame)
                && let Err(e) = writeln!(out, "{line}")
            {
                return stdout_failed(e);
            }
        }
        if let Err(e) = out.flush() {
            return stdout_failed(e);
        }
    }
    match decoder.finish() {
        StreamEnd::Clean => Ok(ExitCode::SUCCESS),
        StreamEnd::Truncated {
            unterminated_line, ..
        } => Err(CliError::Invalid(format!(
            "the input ends inside an event; {unterminated_line} bytes after the last line ending were discarded"
        ))),
        _ => Ok(ExitCode::SUCCESS),
    }
}

/// A write to stdout failed. A closed pipe (`ssekit decode | head`) is a normal way to stop
/// reading: the command ends quietly with [`CLOSED_STDOUT`], as `println!`'s does through the
/// panic hook in `main.rs`. Any other failure is an error.
fn stdout_failed(e: std::io::Error) -> Result<ExitCode, CliError> {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        return Ok(ExitCode::from(CLOSED_STDOUT));
    }
    Err(CliError::Io("cannot write stdout".into(), e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_take_ms_s_or_m_and_a_bare_number_is_seconds() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("1.5"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration(" 45 s "), Ok(Duration::from_secs(45)));
        for bad in [
            "", "s", "soon", "-1s", "1h", "1e3", "1.2.3s", "0", "0ms", "1e400", "inf",
        ] {
            assert!(parse_duration(bad).is_err(), "{bad:?} accepted");
        }
        let huge = "9".repeat(400);
        assert!(parse_duration(&huge).is_err());
    }

    fn event(kind: &str, id: Option<&str>, data: &str) -> Event {
        let mut builder = Event::builder().event(kind.to_owned()).unwrap();
        if let Some(id) = id {
            builder = builder.id(id.to_owned()).unwrap();
        }
        builder.data(data.to_owned()).build()
    }

    #[test]
    fn the_human_view_is_plain_for_plain_events() {
        assert_eq!(
            human_event(&event("tick", Some("1"), "real")),
            "tick [1]: real"
        );
        assert_eq!(human_event(&Event::message("a\nb")), "message: a\n    b");
        assert_eq!(
            human_event(&event("response.created", Some("7"), r#"{"a":"b\"c\\d"}"#)),
            r#"response.created [7]: {"a":"b\"c\\d"}"#,
            "quotes and backslashes in data are left alone"
        );
        assert_eq!(
            human_event(&event("a:b", Some("x:y"), "é ✓")),
            "a:b [x:y]: é ✓"
        );
    }

    /// An event type or id cannot pass for the view's own `[ID]` or `: `, and no control
    /// character (VT, ESC, an OSC sequence, C1) reaches the terminal.
    #[test]
    fn the_human_view_cannot_be_forged_and_escapes_control_characters() {
        assert_eq!(
            human_event(&event("tick [999]: forged line", Some("2"), "x")),
            r#""tick [999]: forged line" [2]: x"#
        );
        assert_eq!(
            human_event(&event("tick", Some("1]: forged ["), "x")),
            r#"tick ["1]: forged ["]: x"#
        );
        assert_eq!(human_event(&event("tick:", None, "x")), r#""tick:": x"#);
        assert_eq!(
            human_event(&event(r#"say "hi""#, None, "x")),
            r#""say \"hi\"": x"#
        );
        assert_eq!(
            human_event(&event("message", Some("3"), "ok\u{b}message [4]: forged")),
            r"message [3]: ok\u{b}message [4]: forged"
        );
        assert_eq!(
            human_event(&event(
                "t\u{1b}[2J",
                None,
                "\u{1b}]0;pwned\u{7}\tend\u{85}\u{7f}\nnext"
            )),
            "\"t\\u{1b}[2J\": \\u{1b}]0;pwned\\u{7}\\tend\\u{85}\\u{7f}\n    next"
        );
        for text in ["\u{0}", "\u{1f}", "\r", "\u{9b}", "\u{9f}"] {
            assert!(
                !escape_controls(text).chars().any(char::is_control),
                "{text:?}"
            );
        }
        assert_eq!(escape_controls("a\nb"), "a\nb");
    }

    /// The agent platform and workflows name their events in the JSON data's `event` field,
    /// with no `event:` line: their failure events must end `tail` with an error too, and
    /// every profile's failure keeps the provider's message.
    #[test]
    fn every_profile_reports_its_failure_event_with_the_message() {
        let cases = [
            (
                ProfileName::Agent,
                r#"{"event":"start","run_id":"r1","session_id":"s1"}"#,
                r#"{"event":"error","message":"the model crashed"}"#,
                "`error`: the model crashed",
            ),
            (
                ProfileName::Workflow,
                r#"{"event":"workflow_start","execution_id":"e1"}"#,
                r#"{"event":"workflow_error","execution_id":"e1","error":"boom"}"#,
                "`workflow_error`: boom",
            ),
        ];
        for (profile, start, end, want) in cases {
            let mut v = validator(profile);
            v.event(&Event::message(start)).unwrap();
            v.event(&Event::message(end)).unwrap();
            assert!(v.is_terminated(), "{profile:?}");
            let failure = v.profile().failure();
            let failure =
                failure.unwrap_or_else(|| panic!("{profile:?}: a failed run reads as success"));
            assert_eq!(failure.to_string(), want);
        }
        // A successful end is no failure, and SSE-typed failures still count.
        let mut v = validator(ProfileName::Agent);
        v.event(&Event::message(
            r#"{"event":"start","run_id":"r1","session_id":"s1"}"#,
        ))
        .unwrap();
        let complete =
            Event::message(r#"{"event":"complete","run_id":"r1","content":"","usage":{}}"#);
        v.event(&complete).unwrap();
        assert!(v.is_terminated());
        assert_eq!(v.profile().failure(), None);
        let ors_error = Event::builder()
            .event("error")
            .unwrap()
            .data("no such tool")
            .build();
        let mut ors = validator(ProfileName::Ors);
        ors.event(&ors_error).unwrap();
        assert_eq!(ors.profile().failure().unwrap().message, "no such tool");
        let failed = Event::builder()
            .event("response.failed")
            .unwrap()
            .data(r#"{"type":"response.failed","response":{"status":"failed","error":{"code":"server_error","message":"down"}}}"#)
            .build();
        let mut responses = validator(ProfileName::Responses);
        responses.event(&failed).unwrap();
        let failure = responses.profile().failure().unwrap();
        assert_eq!(
            failure.to_string(),
            "`response.failed` (server_error): down"
        );
    }
}
