//! `ssekit`: the command-line face of ssekit.
//!
//! - `ssekit demo`: an ORS tool call and a Responses-API stream over 127.0.0.1, each cut on
//!   purpose and resumed, validated, with a readable trace.
//! - `ssekit serve [--addr] [--runtime hyper|smol]`: the demo server, persistent.
//! - `ssekit tail URL`: `curl -N` that decodes, validates and reconnects.
//! - `ssekit check FILE [--profile P]`: lint a captured stream.
//! - `ssekit decode`: stdin bytes → JSON lines of frames.

mod app;
mod check;
mod commands;
mod demo;
mod environment;
mod json_lines;
mod messages;
mod operate;
mod profiles;
mod runtime;
#[cfg(feature = "rustls")]
mod tls;

use std::fmt;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};

/// Server-Sent Events, decoded, validated and resumed.
#[derive(Parser, Debug)]
#[command(name = "ssekit", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run a server on 127.0.0.1, make an ORS tool call and a Responses-API call, cut each
    /// mid-stream, resume, validate, and print what happened.
    Demo {
        /// Keep-alive interval of the demo server, in milliseconds (ORS uses 10 000).
        #[arg(long, default_value_t = 250)]
        keep_alive_ms: u64,
    },
    /// Serve the demo API: ORS (gsm8k), POST /v1/responses (`"background": true` keeps the
    /// response for GET /v1/responses/{id}?stream=true&starting_after=N), POST /v1/messages (Anthropic;
    /// `?error_after=N` ends the stream in an `error` event after N text deltas), GET /stream
    /// and the /events broadcast; alone, or as one of several instances sharing a --store.
    Serve {
        /// Address to listen on (port 0 picks a free one).
        #[arg(long, default_value = "127.0.0.1:8080")]
        addr: String,
        /// Keep-alive interval in milliseconds.
        #[arg(long, default_value_t = 10_000)]
        keep_alive_ms: u64,
        /// Fault injection: cut every new ORS call's stream after N events (keep-alive pings,
        /// which end in no blank line, do not count), inside the next one, so clients must
        /// resume by task id.
        #[arg(long, value_name = "N")]
        cut_ors_after: Option<usize>,
        /// Require `X-API-Key: KEY` on every route but /health (the official client sends it
        /// when ORS_API_KEY is set).
        #[arg(long, value_name = "KEY")]
        api_key: Option<String>,
        /// The transport that serves it: hyper on tokio, or hyper on smol (no tokio runtime).
        #[arg(long, value_enum, default_value_t)]
        runtime: runtime::RuntimeName,
        /// Keep sessions, ORS calls and the /events broadcast in Redis, shared by every
        /// instance started with the same URL (redis://[:PASSWORD@]HOST[:PORT][/DB]), so
        /// that several instances behind a load balancer serve one API.
        #[arg(long, value_name = "URL")]
        store: Option<String>,
        /// On SIGTERM or SIGINT: stop accepting, give running ORS tool calls this many
        /// seconds to finish, then end open streams (after `retry: 250`) and exit.
        #[arg(long, value_name = "SECS", default_value_t = 30)]
        drain_timeout: u64,
        /// Serve HTTPS with this certificate chain (PEM, with --tls-key): HTTP/1.1 and
        /// HTTP/2 by ALPN, so that a browser's EventSources to this origin share one
        /// connection (over HTTP/1.1 it opens six at most). Without it: HTTP/1.1 and h2c.
        #[arg(long, value_name = "PEM", requires = "tls_key")]
        tls_cert: Option<std::path::PathBuf>,
        /// The private key of --tls-cert (PEM: PKCS#8, PKCS#1 or SEC1).
        #[arg(long, value_name = "PEM", requires = "tls_cert")]
        tls_key: Option<std::path::PathBuf>,
        /// Serve every ssekit metric (connections, streams, events, bytes, slow consumers,
        /// refusals, ORS calls, the result cache, the store) as Prometheus text at
        /// `GET http://ADDR/metrics`, an address of its own. Off by default. The log goes to
        /// stderr, filtered by RUST_LOG (default `info`: one access-log line per stream).
        #[arg(long, value_name = "ADDR")]
        metrics_addr: Option<String>,
        /// Close a connection that has not sent a complete request head this long after it
        /// was accepted (a TLS handshake included), first byte included. `500ms`, `30s`,
        /// `2m`; a bare number is seconds.
        #[arg(long, value_name = "DURATION", value_parser = commands::parse_duration, default_value = "30s")]
        request_head_timeout: Duration,
        /// Close a connection that has had no request in flight this long (HTTP/2: after a
        /// GOAWAY). An event stream being sent is a request in flight, however silent.
        #[arg(long, value_name = "DURATION", value_parser = commands::parse_duration, default_value = "30s")]
        idle_timeout: Duration,
        /// Serve at most N connections at once; above, a new connection is answered 503 with
        /// `Retry-After: 1` (over TLS: closed) at once. Default: the open-file limit
        /// (`ulimit -n`) less an eighth, at least 32 less (10 000 where it cannot be read).
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
        max_connections: Option<u64>,
        /// The largest request head (request line and headers), in bytes; a larger one gets
        /// 431 (HTTP/2: its stream reset). At least 8192.
        #[arg(long, value_name = "BYTES", default_value_t = 64 << 10, value_parser = clap::value_parser!(u64).range(8192..))]
        max_request_head: u64,
    },
    /// Stream events from URL: decode, validate, reconnect, print.
    #[command(after_help = TAIL_HELP)]
    Tail(commands::TailArgs),
    /// Lint a captured stream: is it well-formed SSE, and (with --profile) a valid instance
    /// of its protocol? Errors exit 1, warnings are printed (exit 1 with --strict).
    #[command(after_long_help = check::HELP)]
    Check(check::CheckArgs),
    /// Decode stdin into JSON lines, one per frame (events, comments, retry); the schema is
    /// cli/JSON-LINES.md.
    Decode,
}

/// `ssekit tail --help`'s closing text: the reconnect lifecycle and the exit codes.
const TAIL_HELP: &str = "\
Lifecycle, as a browser's EventSource: a clean end of the stream is no failure; tail reconnects \
after the server's `retry:` (else --reconnect-time) with Last-Event-ID, for ever, until the \
server answers 204, the --profile's terminal event arrives, --once, or Ctrl-C. Failures \
(refused or reset connections, timeouts, 5xx, 429 with its Retry-After, streams cut before any \
event) back off with jitter and count toward --retries; an event delivered starts the count \
over. Any other 4xx ends at once, showing the status and the body the server sent.

A request that is not a GET (POST, PUT, PATCH, DELETE, or -d, which implies POST) is sent \
once: its first clean end stops tail (exit 0), since sending it again would, say, create \
another session. --follow reconnects and sends it again, as for a GET. Failures are still \
retried. With --profile ors, a call whose task id is known is resumed by its task id.

How it ended is the last thing printed: `-- 204: the server closed the stream for good`, \
`-- end: …` for a clean end it stopped at, or `ssekit: error: gave up after 5 retries: …`; \
with --json, a line of type `end` (cli/JSON-LINES.md). -v shows every connection attempt and \
every wait as it happens.

Exit codes:
  0    the stream ended as asked: 204, the profile's terminal event, or the clean end
       of a request sent once (--once, or not a GET without --follow)
  1    gave up, refused, cut with --once, or a protocol violation or failure event
  2    bad usage, a bad URL included (no scheme, an unknown scheme, a port out of range)
  130  interrupted (Ctrl-C)";

/// Everything the commands report, one line each.
#[derive(Debug)]
pub enum CliError {
    /// From the transport.
    Transport(ssekit_http::Error),
    /// Reading a file, stdin, or binding a port.
    Io(String, std::io::Error),
    /// The stream broke its protocol, or was cut.
    Invalid(String),
    /// The stream ended validly in its provider's failure event (`error` after a `200`,
    /// `response.failed`): the provider's code and message.
    Failed(ssekit::sequence::Failure),
    /// Bad arguments.
    Usage(String),
    /// The reconnect policy gave up after `retries` failed retries in a row; `last` is the
    /// last failure, as a message.
    GaveUp {
        /// Retries made.
        retries: u32,
        /// The last failure.
        last: String,
    },
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CliError::Transport(e) => write!(f, "{e}"),
            CliError::Io(what, e) => write!(f, "{what}: {e}"),
            CliError::Invalid(msg) | CliError::Usage(msg) => f.write_str(msg),
            CliError::Failed(failure) => {
                write!(f, "the stream ended with the failure event {failure}")
            }
            CliError::GaveUp { retries: 0, last } => {
                write!(f, "gave up without retrying (--retries 0): {last}")
            }
            CliError::GaveUp { retries: 1, last } => write!(f, "gave up after 1 retry: {last}"),
            CliError::GaveUp { retries, last } => {
                write!(f, "gave up after {retries} retries: {last}")
            }
        }
    }
}

impl From<ssekit_http::Error> for CliError {
    fn from(e: ssekit_http::Error) -> Self {
        CliError::Transport(e)
    }
}

/// The exit code when stdout is a closed pipe (`ssekit tail … | head`): that is a normal way
/// to stop reading, so the command stops quietly with what a shell reports for a process
/// killed by SIGPIPE (128 + 13), as `cat` does.
pub const CLOSED_STDOUT: u8 = 141;

/// Panics become one line on stderr, never a backtrace. `println!` panics when stdout is a
/// closed pipe (`ssekit tail … | head`): that exits quietly with [`CLOSED_STDOUT`]. Commands
/// that write with `write!` do the same on `ErrorKind::BrokenPipe`.
fn quiet_panics() {
    std::panic::set_hook(Box::new(|info| {
        let message = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("unknown panic");
        if message.contains("Broken pipe") {
            std::process::exit(i32::from(CLOSED_STDOUT));
        }
        eprintln!("ssekit: internal error: {message}");
        std::process::exit(101);
    }));
}

fn main() -> ExitCode {
    quiet_panics();
    let cli = Cli::parse();
    if let Command::Serve { .. } = cli.command
        && let Err(e) = operate::start_logging()
    {
        eprintln!("ssekit: error: {e}");
        return ExitCode::from(2);
    }
    // `serve` runs on the runtime it serves with; the other commands on tokio.
    let on = match &cli.command {
        Command::Serve { runtime, .. } => *runtime,
        _ => runtime::RuntimeName::Hyper,
    };
    let outcome = on.block_on(async {
        match cli.command {
            Command::Demo { keep_alive_ms } => demo::run(keep_alive_ms).await,
            Command::Serve {
                addr,
                keep_alive_ms,
                cut_ors_after,
                api_key,
                runtime,
                store,
                drain_timeout,
                tls_cert,
                tls_key,
                metrics_addr,
                request_head_timeout,
                idle_timeout,
                max_connections,
                max_request_head,
            } => {
                let mut settings = app::Settings::new(
                    Duration::from_millis(keep_alive_ms),
                    Duration::from_millis(40),
                );
                settings.cut_ors_after = cut_ors_after;
                settings.api_key = api_key;
                let serving = commands::Serving {
                    store,
                    drain: Duration::from_secs(drain_timeout),
                    tls: tls_cert.zip(tls_key),
                    metrics: metrics_addr,
                    limits: commands::Limits {
                        request_head_timeout,
                        idle_timeout,
                        max_connections: max_connections
                            .map(|n| usize::try_from(n).unwrap_or(usize::MAX)),
                        max_request_head: usize::try_from(max_request_head).unwrap_or(usize::MAX),
                    },
                };
                commands::serve(&addr, runtime, settings, serving).await
            }
            Command::Tail(args) => commands::tail(args).await,
            Command::Check(args) => check::check(args).await,
            Command::Decode => commands::decode().await,
        }
    });
    let outcome = match outcome {
        Ok(outcome) => outcome,
        Err(e) => {
            eprintln!("ssekit: error: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match outcome {
        Ok(code) => code,
        Err(e) => {
            // Errors can quote the stream (a failure event's data, an event name): no
            // control character of it reaches the terminal.
            eprintln!(
                "ssekit: error: {}",
                commands::escape_controls(&e.to_string())
            );
            match e {
                // As clap's own usage errors.
                CliError::Usage(_) => ExitCode::from(2),
                _ => ExitCode::FAILURE,
            }
        }
    }
}
