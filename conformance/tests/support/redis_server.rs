//! A real `redis-server` on a free loopback port, for the tests of one process: started by
//! [`RedisServer::start`], killed when dropped. Shared by the conformance crate's
//! `instances` test and the CLI's multi-instance tests (`#[path]`). Without `redis-server`
//! on the PATH the tests fail under `CI=true` (CI installs it) and are skipped elsewhere,
//! with a message.

#![allow(dead_code)]

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A `redis-server` child process on `127.0.0.1:port`, without persistence.
pub struct RedisServer {
    child: Option<Child>,
    pub port: u16,
    password: Option<String>,
}

/// Whether `redis-server` can run here; panics under `CI=true` when it cannot.
pub fn available() -> bool {
    let found = Command::new("redis-server")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !found {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "redis-server is not installed: .ci/run installs it (apt-get install redis-server)"
        );
        eprintln!("skipped: redis-server is not installed");
    }
    found
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

impl RedisServer {
    /// Starts one; `None` when `redis-server` is missing outside CI.
    pub fn start() -> Option<RedisServer> {
        RedisServer::start_with(None)
    }

    /// Starts one that requires `password`.
    pub fn start_with(password: Option<&str>) -> Option<RedisServer> {
        if !available() {
            return None;
        }
        // The port was free when asked, but another test of this process may take it before
        // redis-server binds it: that redis-server then exits, and the next port is tried.
        for _ in 0..20 {
            let mut server = RedisServer {
                child: None,
                port: free_port(),
                password: password.map(str::to_owned),
            };
            if server.try_start() {
                return Some(server);
            }
        }
        panic!("redis-server could not bind any of 20 free ports");
    }

    /// `redis://127.0.0.1:PORT` (with the password, if any).
    pub fn url(&self) -> String {
        match &self.password {
            Some(p) => format!("redis://:{p}@127.0.0.1:{}", self.port),
            None => format!("redis://127.0.0.1:{}", self.port),
        }
    }

    /// Kills the server (an outage); [`restart`](Self::restart) brings it back on the same
    /// port, empty.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Stops the server's process (`SIGSTOP`) without closing its sockets: requests sent
    /// meanwhile wait in the kernel, unanswered, until [`thaw`](Self::thaw). A test uses it
    /// to hold a reply back while it drives its futures, whatever the machine's speed.
    pub fn freeze(&self) {
        self.signal("-STOP");
    }

    /// Lets a [`freeze`](Self::freeze)d server go on (`SIGCONT`).
    pub fn thaw(&self) {
        self.signal("-CONT");
    }

    fn signal(&self, signal: &str) {
        let child = self.child.as_ref().expect("the server is running");
        let status = Command::new("kill")
            .args([signal, &child.id().to_string()])
            .status()
            .expect("kill runs");
        assert!(status.success(), "kill {signal} redis-server: {status}");
    }

    /// Starts the server again on the same port and waits until it answers.
    pub fn restart(&mut self) {
        // After an outage the port is this server's to take back; should another listener
        // have taken it meanwhile, the test cannot go on, and says why.
        assert!(
            self.try_start(),
            "redis-server could not take port {} back",
            self.port
        );
    }

    /// Starts the server on `self.port` and waits until it answers `PING` (the port
    /// answering is not enough: it could be another test's server); false if it exited,
    /// which it does when the port is taken.
    fn try_start(&mut self) -> bool {
        self.stop();
        let mut cmd = Command::new("redis-server");
        cmd.args(["--port", &self.port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no", "--daemonize", "no"])
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        if let Some(p) = &self.password {
            cmd.args(["--requirepass", p]);
        }
        let mut child = cmd.spawn().expect("redis-server starts");
        // A hang guard, not a speed budget: a loaded machine may start it slowly.
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Ok(Some(_exited)) = child.try_wait() {
                return false;
            }
            if answers_ping(self.port) {
                self.child = Some(child);
                return true;
            }
            assert!(
                Instant::now() < deadline,
                "hung: redis-server did not listen in 60 s"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Runs one command through `redis-cli` and returns its output (keys, TTLs, stats).
    pub fn cli(&self, args: &[&str]) -> String {
        let mut cmd = Command::new("redis-cli");
        cmd.args(["-p", &self.port.to_string()]);
        if let Some(p) = &self.password {
            cmd.args(["-a", p, "--no-auth-warning"]);
        }
        let out = cmd.args(args).output().expect("redis-cli runs");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

/// Whether a Redis server answers on `127.0.0.1:port`: `+PONG`, or `-NOAUTH` when it
/// requires a password.
fn answers_ping(port: u16) -> bool {
    use std::io::{Read, Write};
    let Ok(mut conn) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = conn.set_read_timeout(Some(Duration::from_secs(5)));
    let mut reply = [0u8; 7];
    conn.write_all(b"PING\r\n").is_ok()
        && conn.read_exact(&mut reply).is_ok()
        && (reply.starts_with(b"+PONG") || reply.starts_with(b"-NOAUTH"))
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.stop();
    }
}
