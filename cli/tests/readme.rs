//! Every shell example of the README, run against a real `ssekit serve` on 127.0.0.1.
//!
//! Each line of a ```` ```sh ```` block is one command (a line ending in `\` goes on with the
//! next; `#` outside quotes starts a comment). Before running a line the harness
//! - skips `ssekit serve …`, with or without `NAME=value` before it (it runs the server
//!   itself, on a free port, with `--metrics-addr` on another), `cargo …` lines
//!   (they build, test or benchmark the workspace this test is part of) and `scripts/…`, and
//!   lines holding a placeholder (`$NAME`, `${…}`, `<NAME>` or `…` outside a comment);
//! - runs `cargo run [--release] -p ssekit-cli -- ARGS` as `ssekit ARGS` (the demo is quick);
//! - rewrites `127.0.0.1:8080` to the server's address and `127.0.0.1:9090` to its metrics
//!   address, and puts the directory of the
//!   `ssekit` binary under test first in `PATH`.
//!
//! Each runs with `bash -o pipefail -c` in one scratch directory shared by all lines (a file a line
//! writes, the next can read), within [`TIMEOUT`], and must exit 0. Where a line promises
//! output, that is checked and no more: `?count=N` promises N events (`"type":"event"` lines
//! from `decode` and `tail --json`, lines starting with the event type `tick` from `tail`).
//!
//! The examples use `curl`; without it they are skipped, except under `CI=true`, where a
//! missing `curl` fails the test.

use std::io::{BufRead, BufReader, Read};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

/// How long one README line may run before it is killed and the test fails.
const TIMEOUT: Duration = Duration::from_secs(30);

/// One command of a ```` ```sh ```` block: where it starts in the README, and its text
/// (continuation lines joined).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Example {
    line: usize,
    text: String,
}

/// What the harness does with a command.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Plan {
    /// Run this (comment removed, `cargo run -p ssekit-cli --` made `ssekit`).
    Run(String),
    /// Not run, and why.
    Skip(&'static str),
}

/// The commands of every ```` ```sh ```` (or `bash`, `shell`) block, in order.
fn sh_examples(markdown: &str) -> Vec<Example> {
    let mut examples = Vec::new();
    let mut in_sh = false;
    let mut in_other = false;
    let mut pending: Option<Example> = None;
    for (i, raw) in markdown.lines().enumerate() {
        let trimmed = raw.trim_start();
        if let Some(info) = trimmed.strip_prefix("```") {
            if in_sh || in_other {
                if let Some(open) = pending.take() {
                    examples.push(open);
                }
                in_sh = false;
                in_other = false;
            } else {
                let lang = info.split([',', ' ']).next().unwrap_or("").trim();
                in_sh = matches!(lang, "sh" | "bash" | "shell");
                in_other = !in_sh;
            }
            continue;
        }
        if !in_sh {
            continue;
        }
        let (body, continues) = match raw.trim_end().strip_suffix('\\') {
            Some(body) => (body, true),
            None => (raw.trim_end(), false),
        };
        let example = match pending.take() {
            Some(mut open) => {
                open.text.push(' ');
                open.text.push_str(body.trim());
                open
            }
            None if body.trim().is_empty() => continue,
            None => Example {
                line: i + 1,
                text: body.trim().to_owned(),
            },
        };
        if continues {
            pending = Some(example);
        } else {
            examples.push(example);
        }
    }
    examples.extend(pending);
    examples
}

/// The command without its comment: `#` at the start of a word, outside quotes.
fn strip_comment(line: &str) -> &str {
    let (mut single, mut double, mut escaped) = (false, false, false);
    let mut previous = ' ';
    for (i, c) in line.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if !single => escaped = true,
            '\'' if !double => single = !single,
            '"' if !single => double = !double,
            '#' if !single && !double && previous.is_whitespace() => return line[..i].trim_end(),
            _ => {}
        }
        previous = c;
    }
    line.trim_end()
}

/// Whether the command holds something the reader is meant to fill in.
fn has_placeholder(code: &str) -> bool {
    if code.contains('…') {
        return true;
    }
    let bytes = code.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        let next = bytes.get(i + 1).copied().unwrap_or(b' ');
        match b {
            // `$URL`, `${URL}`: a variable nobody set (`$(…)` and `$?` are shell, not gaps).
            b'$' if next == b'{' || next.is_ascii_uppercase() => return true,
            // `<URL>`, `<file>`: a name in angle brackets (`< file` is a redirect).
            b'<' if next.is_ascii_alphabetic() => {
                let rest = &code[i + 1..];
                if let Some(end) = rest.find('>')
                    && rest[..end]
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
                {
                    return true;
                }
            }
            _ => {}
        }
    }
    false
}

/// What to do with one README command.
fn plan(text: &str) -> Plan {
    let code = strip_comment(text);
    if code.is_empty() {
        return Plan::Skip("a comment");
    }
    let mut words = code.split_whitespace();
    let first = words.next().unwrap_or("");
    // `RUST_LOG=debug ssekit serve …`: the variables set for one command come first.
    let mut command = code
        .split_whitespace()
        .skip_while(|w| w.split_once('=').is_some_and(|(name, _)| is_env_name(name)));
    if command.next() == Some("ssekit") && command.next() == Some("serve") {
        return Plan::Skip("the harness runs the server");
    }
    if first == "cargo" {
        let rest: Vec<&str> = words.collect();
        if rest.first() == Some(&"run")
            && let Some(sep) = rest.iter().position(|w| *w == "--")
        {
            let options: Vec<&str> = rest[1..sep]
                .iter()
                .copied()
                .filter(|w| *w != "--release")
                .collect();
            if options == ["-p", "ssekit-cli"] {
                let args = rest[sep + 1..].join(" ");
                return Plan::Run(format!("ssekit {args}").trim_end().to_owned());
            }
        }
        return Plan::Skip("builds, tests or benchmarks the workspace");
    }
    if first.starts_with("scripts/") {
        return Plan::Skip("a workspace script");
    }
    if has_placeholder(code) {
        return Plan::Skip("a placeholder");
    }
    Plan::Run(code.to_owned())
}

/// Whether `name` can be an environment variable's name in `NAME=value` before a command.
fn is_env_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

/// `127.0.0.1:8080` becomes the server's address, `127.0.0.1:9090` its metrics address.
fn rewrite(command: &str, addr: &str, metrics: &str) -> String {
    command
        .replace("127.0.0.1:8080", addr)
        .replace("127.0.0.1:9090", metrics)
}

/// Whether the command calls `program` (as a word at the start of a pipeline stage).
fn calls(command: &str, program: &str) -> bool {
    command
        .split(['|', ';', '&', '('])
        .any(|stage| stage.split_whitespace().next() == Some(program))
}

/// The number of events the command promises: `count=N` in its URL.
fn promised_events(command: &str) -> Option<usize> {
    let at = command.find("count=")? + "count=".len();
    let digits: String = command[at..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// What the command's output must show, beyond exit 0: `Err` says what is missing.
fn check_promise(command: &str, stdout: &str) -> Result<(), String> {
    let Some(n) = promised_events(command) else {
        return Ok(());
    };
    let json_events = stdout
        .lines()
        .filter(|l| l.contains(r#""type":"event""#))
        .count();
    let (seen, what) = if calls(command, "curl") && command.contains("ssekit check") {
        return Ok(()); // the capture is checked; the command prints no events
    } else if command.contains("ssekit decode")
        || (command.contains("ssekit tail") && command.contains("--json"))
    {
        (json_events, r#"JSON lines with "type":"event""#)
    } else if command.contains("ssekit tail") {
        let ticks = stdout.lines().filter(|l| l.starts_with("tick")).count();
        (ticks, "lines starting with `tick`")
    } else {
        return Ok(());
    };
    if seen == n {
        Ok(())
    } else {
        Err(format!("promised {n} events, saw {seen} {what}"))
    }
}

/// The server under test: killed when dropped.
struct Server {
    child: Child,
    addr: String,
    /// Where it serves `/metrics`.
    metrics: String,
    _stdout: BufReader<ChildStdout>,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve() -> Server {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ssekit"))
        .args([
            "serve",
            "--addr",
            "127.0.0.1:0",
            "--metrics-addr",
            "127.0.0.1:0",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("ssekit serve starts");
    let mut stdout = BufReader::new(child.stdout.take().expect("piped stdout"));
    let mut first = String::new();
    stdout
        .read_line(&mut first)
        .expect("serve prints its address");
    let addr = first
        .trim()
        .strip_prefix("listening on http://")
        .unwrap_or_else(|| panic!("unexpected first line of serve: {first:?}"))
        .to_owned();
    let mut metrics = None;
    while metrics.is_none() {
        let mut line = String::new();
        if stdout.read_line(&mut line).unwrap_or(0) == 0 {
            panic!("serve did not print its metrics address");
        }
        metrics = line
            .trim()
            .strip_prefix("Metrics:   curl http://")
            .map(|url| url.trim_end_matches("/metrics").to_owned());
    }
    Server {
        child,
        addr,
        metrics: metrics.unwrap_or_default(),
        _stdout: stdout,
    }
}

/// The outcome of one command.
struct Ran {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    timed_out: bool,
}

/// `bash -o pipefail -c command` in `dir`, with `path` as `PATH`, killed with its whole process group
/// after [`TIMEOUT`].
fn run(command: &str, dir: &Path, path: &str) -> Ran {
    let mut child = Command::new("bash")
        .args(["-o", "pipefail", "-c", command])
        .current_dir(dir)
        .env("PATH", path)
        .env("RUST_BACKTRACE", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .expect("bash starts");
    let collect = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = pipe.read_to_end(&mut bytes);
            String::from_utf8_lossy(&bytes).into_owned()
        })
    };
    let stdout = collect(Box::new(child.stdout.take().expect("piped stdout")));
    let stderr = collect(Box::new(child.stderr.take().expect("piped stderr")));
    let deadline = Instant::now() + TIMEOUT;
    let mut timed_out = false;
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for bash") {
            break status;
        }
        if Instant::now() > deadline {
            timed_out = true;
            // The whole group: a pipeline's curl and ssekit, not only bash.
            let _ = Command::new("kill")
                .args(["-KILL", "--", &format!("-{}", child.id())])
                .status();
            break child.wait().expect("wait for bash");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Ran {
        code: status.code(),
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
        timed_out,
    }
}

fn on_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0")
}

fn have_curl() -> bool {
    Command::new("curl")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn scratch_dir() -> PathBuf {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let dir = std::env::temp_dir().join(format!("ssekit-readme-{}-{nanos}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch directory");
    dir
}

#[test]
fn every_shell_example_of_the_readme_runs_against_ssekit_serve() {
    let readme_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../README.md");
    let readme = std::fs::read_to_string(&readme_path).expect("README.md");
    let examples = sh_examples(&readme);
    let runnable: Vec<(Example, String)> = examples
        .iter()
        .filter_map(|e| match plan(&e.text) {
            Plan::Run(command) => Some((e.clone(), command)),
            Plan::Skip(_) => None,
        })
        .collect();
    assert!(
        runnable.len() >= 4,
        "too few runnable shell examples in the README: {examples:#?}"
    );

    let curl = have_curl();
    if !curl && on_ci() && runnable.iter().any(|(_, c)| calls(c, "curl")) {
        panic!("curl is missing, and the README's examples need it (CI=true: not skipped)");
    }

    let server = serve();
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_ssekit"))
        .parent()
        .expect("the binary's directory");
    let path = match std::env::var_os("PATH") {
        Some(rest) => format!("{}:{}", bin_dir.display(), rest.to_string_lossy()),
        None => bin_dir.display().to_string(),
    };
    let dir = scratch_dir();

    let mut failures = Vec::new();
    for (example, command) in &runnable {
        if !curl && calls(command, "curl") {
            eprintln!(
                "README.md:{}: skipped, no curl here: {command}",
                example.line
            );
            continue;
        }
        let command = rewrite(command, &server.addr, &server.metrics);
        let started = Instant::now();
        let ran = run(&command, &dir, &path);
        eprintln!(
            "README.md:{}: exit {:?} after {:.1} s: {command}",
            example.line,
            ran.code,
            started.elapsed().as_secs_f64()
        );
        let problem = if ran.timed_out {
            Some(format!(
                "still running after {} s, killed",
                TIMEOUT.as_secs()
            ))
        } else if ran.code != Some(0) {
            Some(format!("exit code {:?}", ran.code))
        } else {
            check_promise(&command, &ran.stdout).err()
        };
        if let Some(problem) = problem {
            failures.push(format!(
                "README.md:{}: `{command}`: {problem}\n--- stdout\n{}--- stderr\n{}",
                example.line, ran.stdout, ran.stderr
            ));
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        failures.is_empty(),
        "{} of {} README shell examples failed:\n\n{}",
        failures.len(),
        runnable.len(),
        failures.join("\n")
    );
}

#[test]
fn blocks_are_found_and_joined_and_other_languages_left_out() {
    let markdown = "text\n\
        ```sh\n\
        ssekit serve --addr 127.0.0.1:8080 &   # the server\n\
        \n\
        curl -sN 'http://127.0.0.1:8080/stream?count=3' \\\n\
        \x20   | ssekit decode\n\
        ```\n\
        ```rust\n\
        let x = 1;\n\
        ```\n\
        ```text\n\
        ssekit not a command\n\
        ```\n\
        ```bash\n\
        ssekit demo\n\
        ```\n";
    let found = sh_examples(markdown);
    assert_eq!(
        found,
        vec![
            Example {
                line: 3,
                text: "ssekit serve --addr 127.0.0.1:8080 &   # the server".into()
            },
            Example {
                line: 5,
                text: "curl -sN 'http://127.0.0.1:8080/stream?count=3' | ssekit decode".into()
            },
            Example {
                line: 15,
                text: "ssekit demo".into()
            },
        ]
    );
}

#[test]
fn comments_are_cut_at_a_word_starting_with_a_hash_outside_quotes() {
    assert_eq!(strip_comment("ssekit demo    # the demo"), "ssekit demo");
    assert_eq!(strip_comment("# only a comment"), "");
    assert_eq!(
        strip_comment("curl 'http://h/#frag' -d \"a # b\"  # c"),
        "curl 'http://h/#frag' -d \"a # b\""
    );
    assert_eq!(strip_comment("echo a#b"), "echo a#b");
    assert_eq!(strip_comment(r"echo \# x"), r"echo \# x");
}

#[test]
fn plans_follow_the_rules_of_the_module_docs() {
    assert_eq!(
        plan("cargo run --release -p ssekit-cli -- demo    # the demo"),
        Plan::Run("ssekit demo".into())
    );
    assert_eq!(
        plan("cargo run -p ssekit-cli -- tail 'http://127.0.0.1:8080/stream?count=3'"),
        Plan::Run("ssekit tail 'http://127.0.0.1:8080/stream?count=3'".into())
    );
    assert!(matches!(
        plan("cargo test --workspace   # the tests"),
        Plan::Skip(_)
    ));
    assert!(matches!(
        plan("cargo bench -p ssekit-benches --bench decode"),
        Plan::Skip(_)
    ));
    assert!(matches!(plan("cargo run -p other -- demo"), Plan::Skip(_)));
    assert!(matches!(plan("scripts/bench-table"), Plan::Skip(_)));
    assert!(matches!(
        plan("ssekit serve --addr 127.0.0.1:8080 &   # the API"),
        Plan::Skip("the harness runs the server")
    ));
    assert!(matches!(
        plan("RUST_LOG=info,ssekit::client=debug ssekit serve --metrics-addr 127.0.0.1:9090 &"),
        Plan::Skip("the harness runs the server")
    ));
    assert!(matches!(
        plan("ssekit tail \"$URL\" --idle-timeout 45s"),
        Plan::Skip("a placeholder")
    ));
    assert!(matches!(
        plan("ssekit tail ${URL}"),
        Plan::Skip("a placeholder")
    ));
    assert!(matches!(
        plan("ssekit check <file>"),
        Plan::Skip("a placeholder")
    ));
    assert!(matches!(
        plan("ssekit tail http://host/… "),
        Plan::Skip("a placeholder")
    ));
    // Not placeholders: a redirect, command substitution, an ellipsis in a comment.
    assert_eq!(
        plan("ssekit decode < captured.sse"),
        Plan::Run("ssekit decode < captured.sse".into())
    );
    assert_eq!(
        plan("echo $(ssekit --version)   # prints …"),
        Plan::Run("echo $(ssekit --version)".into())
    );
    assert_eq!(
        plan("curl -sN 'http://127.0.0.1:8080/stream?count=3' > captured.sse && ssekit check captured.sse"),
        Plan::Run(
            "curl -sN 'http://127.0.0.1:8080/stream?count=3' > captured.sse && ssekit check captured.sse"
                .into()
        )
    );
}

#[test]
fn the_address_is_rewritten_and_promises_are_read_from_the_url() {
    assert_eq!(
        rewrite(
            "curl -sN 'http://127.0.0.1:8080/stream?count=3'",
            "127.0.0.1:41234",
            "127.0.0.1:41235"
        ),
        "curl -sN 'http://127.0.0.1:41234/stream?count=3'"
    );
    assert_eq!(
        rewrite(
            "curl -s http://127.0.0.1:9090/metrics",
            "a:1",
            "127.0.0.1:41235"
        ),
        "curl -s http://127.0.0.1:41235/metrics"
    );
    assert!(calls("curl -sN x | ssekit decode", "curl"));
    assert!(calls("curl -sN x | ssekit decode", "ssekit"));
    assert!(!calls("ssekit tail http://curl.example/", "curl"));
    assert_eq!(
        promised_events("ssekit tail 'http://a/stream?count=12&interval_ms=5'"),
        Some(12)
    );
    assert_eq!(promised_events("ssekit tail http://a/v1/responses"), None);

    let event = r#"{"v":1,"type":"event","event":"tick","id":"1","data":"x"}"#;
    let three = format!("{event}\n{event}\n{event}\n");
    let decode = "curl -sN 'http://a/stream?count=3' | ssekit decode";
    assert_eq!(check_promise(decode, &three), Ok(()));
    assert!(check_promise(decode, &format!("{event}\n")).is_err());
    let json = "ssekit tail 'http://a/stream?count=3' --json";
    let with_lifecycle = format!("{{\"v\":1,\"type\":\"connected\",\"attempt\":1}}\n{three}");
    assert_eq!(check_promise(json, &with_lifecycle), Ok(()));
    let human = "ssekit tail 'http://a/stream?count=3'";
    assert_eq!(
        check_promise(human, "tick [1]: a\ntick [2]: b\ntick [3]: c\n"),
        Ok(())
    );
    assert!(check_promise(human, "tick [1]: a\n").is_err());
    let capture = "curl -sN 'http://a/stream?count=3' > c.sse && ssekit check c.sse";
    assert_eq!(check_promise(capture, ""), Ok(()));
    assert_eq!(check_promise("ssekit demo", ""), Ok(()));
}
