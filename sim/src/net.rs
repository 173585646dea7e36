//! [`Net`]: an in-memory network of byte pipes between simulated clients and servers, with
//! seeded faults: connections refused, cut after a drawn number of response bytes (mid-frame
//! as often as not), bytes delayed by a drawn time (in order, as TCP delivers them), reads of
//! a drawn size, small buffers (a slow reader pushes back), hosts partitioned away, and
//! balancers that pick a live instance per connection.
//!
//! ```text
//!  Dial::tcp("lb") ─▶ balancer: a live backend, drawn ─▶ listener queue ─▶ Accept::accept
//!  client Socket ══ up: client→server ══▶ server Socket
//!                ◀═ down: server→client, cut after N bytes (a drawn fault) ══
//! ```

use std::collections::{BTreeMap, VecDeque};
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::task::{Context, Poll, Waker};

use futures_lite::io::{AsyncRead, AsyncWrite};
use smol_hyper::rt::FuturesIo;
use ssekit_http::client::Dial;
use ssekit_http::server::{serve_on, Accept, HttpService, ResponseBody, ServeOptions};

use crate::lock;
use crate::world::{Node, Shared, Sim};

/// The faults a [`Net`] draws for each connection.
///
/// # Example
/// ```
/// let faults = ssekit_sim::NetFaults { cut: 0.2, ..ssekit_sim::NetFaults::default() };
/// assert_eq!(faults.refuse, 0.0);
/// ```
#[derive(Clone, Copy, Debug)]
pub struct NetFaults {
    /// The chance a connect is refused although the host listens.
    pub refuse: f64,
    /// The chance a connection is cut (reset) once the server has sent a drawn number of
    /// bytes, up to `cut_within`.
    pub cut: f64,
    /// The most response bytes before a cut.
    pub cut_within: u64,
    /// Reads return between 1 and this many bytes (drawn per read).
    pub max_read: usize,
    /// Each direction's buffer: a writer waits while it is full (bytes in flight count).
    pub buffer: usize,
    /// Each write reaches the reader after a delay drawn up to this many milliseconds, never
    /// before the bytes written earlier (0: at once).
    pub delay_ms: u64,
}

impl Default for NetFaults {
    fn default() -> Self {
        NetFaults {
            refuse: 0.0,
            cut: 0.0,
            cut_within: 4096,
            max_read: 64 << 10,
            buffer: 64 << 10,
            delay_ms: 0,
        }
    }
}

#[derive(Default)]
struct State {
    listeners: BTreeMap<String, Listening>,
    balancers: BTreeMap<String, Vec<String>>,
    partitioned: BTreeMap<String, bool>,
    links: Vec<(String, Weak<Mutex<Link>>)>,
    faults: NetFaults,
    connections: u64,
    cuts: u64,
}

struct Listening {
    node: Node,
    open: bool,
    queue: VecDeque<Socket>,
    waker: Option<Waker>,
}

/// The network of a [`World`](crate::World).
#[derive(Default)]
pub struct Net {
    state: Mutex<State>,
}

impl Net {
    fn lock(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }

    /// The faults drawn for new connections.
    pub fn set_faults(&self, faults: NetFaults) {
        self.lock().faults = faults;
    }

    /// A listener for `host` on `node` (port ignored: one per host).
    pub fn listen(&self, node: Node, host: &str) -> Listener {
        self.lock().listeners.insert(
            host.to_owned(),
            Listening {
                node,
                open: true,
                queue: VecDeque::new(),
                waker: None,
            },
        );
        Listener {
            host: host.to_owned(),
        }
    }

    /// Connections to `name` go to one of `hosts` that listens, drawn per connection.
    pub fn balance(&self, name: &str, hosts: &[&str]) {
        self.lock().balancers.insert(
            name.to_owned(),
            hosts.iter().map(|h| (*h).to_owned()).collect(),
        );
    }

    /// Cuts `host` off (connects refused, its connections reset) or lets it back.
    pub fn partition(&self, host: &str, away: bool) {
        let links = {
            let mut state = self.lock();
            state.partitioned.insert(host.to_owned(), away);
            if !away {
                return;
            }
            state
                .links
                .iter()
                .filter(|(h, _)| h == host)
                .filter_map(|(_, l)| l.upgrade())
                .collect::<Vec<_>>()
        };
        for link in links {
            lock(&link).reset();
        }
    }

    /// The connections still open, each as `host: up <bytes queued>/<closed>, down ...`: what
    /// a stuck run's report shows.
    pub fn open_links(&self) -> Vec<String> {
        let state = self.lock();
        state
            .links
            .iter()
            .filter_map(|(host, link)| {
                let link = link.upgrade()?;
                let link = lock(&link);
                let dir = |d: &Dir| {
                    format!(
                        "{} queued{}{}{}{}",
                        d.buf.len(),
                        if d.closed { ", closed" } else { "" },
                        if d.reader_gone { ", reader gone" } else { "" },
                        if d.reader.is_some() {
                            ", reader waits"
                        } else {
                            ""
                        },
                        if d.writer.is_some() {
                            ", writer waits"
                        } else {
                            ""
                        }
                    )
                };
                Some(format!(
                    "{host}: up {}; down {}{}",
                    dir(&link.dirs[CLIENT]),
                    dir(&link.dirs[SERVER]),
                    if link.reset { "; reset" } else { "" }
                ))
            })
            .collect()
    }

    /// Connections made and cut so far.
    pub fn counts(&self) -> (u64, u64) {
        let state = self.lock();
        (state.connections, state.cuts)
    }

    /// Closes the listeners of `node`: new connects are refused, those queued are closed
    /// (its open connections close as its tasks end or are dropped).
    pub fn stop_listening(&self, node: Node) {
        let queued: Vec<Socket> = {
            let mut state = self.lock();
            let mut queued = Vec::new();
            for listening in state.listeners.values_mut() {
                if listening.node == node {
                    listening.open = false;
                    queued.extend(listening.queue.drain(..));
                }
            }
            queued
        };
        drop(queued);
    }

    fn connect(&self, shared: &Arc<Shared>, host: &str) -> io::Result<Socket> {
        let mut state = self.lock();
        let refused = || io::Error::from(io::ErrorKind::ConnectionRefused);
        let up = |state: &State, h: &str| {
            state.listeners.get(h).is_some_and(|l| l.open)
                && !state.partitioned.get(h).copied().unwrap_or(false)
        };
        let target = match state.balancers.get(host) {
            Some(backends) => {
                let live: Vec<&String> = backends.iter().filter(|h| up(&state, h)).collect();
                if live.is_empty() {
                    return Err(refused());
                }
                let at = shared.draw(|rng| rng.usize(..live.len()));
                live.get(at).map(|h| (*h).clone()).ok_or_else(refused)?
            }
            None => host.to_owned(),
        };
        if !up(&state, &target) {
            return Err(refused());
        }
        let faults = state.faults;
        let (refuse, cut, cut_at, seed) = shared.draw(|rng| {
            (
                rng.f64() < faults.refuse,
                rng.f64() < faults.cut,
                rng.u64(1..=faults.cut_within.max(1)),
                rng.u64(..),
            )
        });
        if refuse {
            return Err(refused());
        }
        state.connections += 1;
        if cut {
            state.cuts += 1;
        }
        let link = Arc::new(Mutex::new(Link {
            dirs: [Dir::new(faults.buffer), Dir::new(faults.buffer)],
            cut_after: cut.then_some(cut_at),
            sent_down: 0,
            reset: false,
            rng: fastrand::Rng::with_seed(seed),
            max_read: faults.max_read.max(1),
            delay_ms: faults.delay_ms,
            clock: Arc::downgrade(shared),
        }));
        state.links.retain(|(_, l)| l.strong_count() > 0);
        state.links.push((target.clone(), Arc::downgrade(&link)));
        let listening = state.listeners.get_mut(&target).ok_or_else(refused)?;
        listening.queue.push_back(Socket {
            link: link.clone(),
            side: SERVER,
        });
        if let Some(waker) = listening.waker.take() {
            waker.wake();
        }
        Ok(Socket { link, side: CLIENT })
    }
}

const CLIENT: usize = 0;
const SERVER: usize = 1;

struct Dir {
    buf: VecDeque<u8>,
    cap: usize,
    /// Bytes written and read so far, and when the bytes up to an offset arrive: (virtual
    /// ms, end offset), in order of both.
    written: u64,
    taken: u64,
    arrivals: VecDeque<(u64, u64)>,
    /// The end offset of the bytes that have arrived.
    arrived: u64,
    /// The writer shut down or went away: the reader sees the end once the buffer is read.
    closed: bool,
    /// The reader went away: writes fail.
    reader_gone: bool,
    reader: Option<Waker>,
    writer: Option<Waker>,
}

impl Dir {
    fn new(cap: usize) -> Self {
        Dir {
            buf: VecDeque::new(),
            cap: cap.max(1),
            written: 0,
            taken: 0,
            arrivals: VecDeque::new(),
            arrived: 0,
            closed: false,
            reader_gone: false,
            reader: None,
            writer: None,
        }
    }

    /// Records `n` bytes written at `now` that arrive at `at` (not before earlier bytes).
    fn send(&mut self, n: usize, at: u64) {
        if n == 0 {
            return;
        }
        self.written += n as u64;
        let at = self.arrivals.back().map_or(at, |(last, _)| at.max(*last));
        match self.arrivals.back_mut() {
            Some((last, end)) if *last == at => *end = self.written,
            _ => self.arrivals.push_back((at, self.written)),
        }
    }

    /// The bytes a reader can take at `now`, or when the next ones arrive.
    fn readable(&mut self, now: u64) -> Result<usize, Option<u64>> {
        while let Some(&(at, end)) = self.arrivals.front() {
            if at > now {
                break;
            }
            self.arrived = end;
            self.arrivals.pop_front();
        }
        match usize::try_from(self.arrived - self.taken) {
            Ok(0) | Err(_) => Err(self.arrivals.front().map(|(at, _)| *at)),
            Ok(n) => Ok(n),
        }
    }

    fn wake(&mut self) {
        self.reader
            .take()
            .into_iter()
            .chain(self.writer.take())
            .for_each(Waker::wake);
    }
}

struct Link {
    /// `dirs[CLIENT]` carries client to server, `dirs[SERVER]` server to client.
    dirs: [Dir; 2],
    cut_after: Option<u64>,
    sent_down: u64,
    reset: bool,
    rng: fastrand::Rng,
    max_read: usize,
    delay_ms: u64,
    clock: Weak<Shared>,
}

impl Link {
    fn now(&self) -> u64 {
        self.clock
            .upgrade()
            .map_or(u64::MAX, |shared| shared.now_ms())
    }

    fn reset(&mut self) {
        self.reset = true;
        self.dirs.iter_mut().for_each(Dir::wake);
    }
}

/// One end of a simulated connection.
pub struct Socket {
    link: Arc<Mutex<Link>>,
    side: usize,
}

impl AsyncRead for Socket {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        out: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        let side = self.side;
        let mut link = lock(&self.link);
        let max_read = link.max_read;
        let draw = link.rng.usize(1..=max_read);
        let reset = link.reset;
        let now = link.now();
        let clock = link.clock.clone();
        let Some(dir) = link.dirs.get_mut(1 - side) else {
            return Poll::Ready(Err(io::ErrorKind::InvalidInput.into()));
        };
        let readable = match dir.readable(now) {
            Ok(n) => n,
            Err(next) => {
                if reset {
                    return Poll::Ready(Err(io::ErrorKind::ConnectionReset.into()));
                }
                match next {
                    // Bytes in flight: wake when they land (and on a write or a reset).
                    Some(at) => {
                        if let Some(shared) = clock.upgrade() {
                            shared.wake_at(at, cx.waker().clone());
                        }
                    }
                    None if dir.closed || out.is_empty() => return Poll::Ready(Ok(0)),
                    None => {}
                }
                dir.reader = Some(cx.waker().clone());
                return Poll::Pending;
            }
        };
        let n = readable.min(out.len()).min(draw);
        for (to, from) in out.iter_mut().zip(dir.buf.drain(..n)) {
            *to = from;
        }
        dir.taken += n as u64;
        if let Some(writer) = dir.writer.take() {
            writer.wake();
        }
        Poll::Ready(Ok(n))
    }
}

impl AsyncWrite for Socket {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        let side = self.side;
        let mut link = lock(&self.link);
        if link.reset {
            return Poll::Ready(Err(io::ErrorKind::ConnectionReset.into()));
        }
        let left = link.cut_after.map(|cut| cut.saturating_sub(link.sent_down));
        let now = link.now();
        let at = match link.delay_ms {
            0 => now,
            most => now.saturating_add(link.rng.u64(0..=most)),
        };
        let Some(dir) = link.dirs.get_mut(side) else {
            return Poll::Ready(Err(io::ErrorKind::InvalidInput.into()));
        };
        if dir.reader_gone || dir.closed {
            return Poll::Ready(Err(io::ErrorKind::BrokenPipe.into()));
        }
        let room = dir.cap.saturating_sub(dir.buf.len());
        if room == 0 {
            dir.writer = Some(cx.waker().clone());
            return Poll::Pending;
        }
        let mut n = room.min(data.len());
        let mut cut = false;
        if side == SERVER
            && let Some(left) = left
            && n as u64 >= left
        {
            n = usize::try_from(left).unwrap_or(n);
            cut = true;
        }
        dir.buf.extend(data.iter().take(n));
        dir.send(n, at);
        if let Some(reader) = dir.reader.take() {
            reader.wake();
        }
        if side == SERVER {
            link.sent_down += n as u64;
        }
        if cut {
            link.reset();
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::ConnectionReset.into()));
            }
        }
        Poll::Ready(Ok(n))
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_close(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        let side = self.side;
        let mut link = lock(&self.link);
        if let Some(dir) = link.dirs.get_mut(side) {
            dir.closed = true;
            dir.wake();
        }
        Poll::Ready(Ok(()))
    }
}

impl Drop for Socket {
    fn drop(&mut self) {
        let side = self.side;
        let mut link = lock(&self.link);
        if let Some(dir) = link.dirs.get_mut(side) {
            dir.closed = true;
            dir.wake();
        }
        if let Some(dir) = link.dirs.get_mut(1 - side) {
            dir.reader_gone = true;
            dir.buf.clear();
            dir.arrivals.clear();
            dir.taken = dir.written;
            dir.arrived = dir.written;
            dir.wake();
        }
    }
}

/// A listening host of a [`Net`], as `serve_on` accepts on it.
pub struct Listener {
    host: String,
}

impl Listener {
    /// Serves `service` here with ssekit's `serve_on` and its default options, until the
    /// node is killed.
    ///
    /// # Example
    /// ```
    /// use ssekit_sim::{Node, World};
    /// let world = World::new(1);
    /// let listener = world.net().listen(Node(1), "s0");
    /// let service = hyper::service::service_fn(|_req: http::Request<hyper::body::Incoming>| async {
    ///     Ok::<_, std::convert::Infallible>(http::Response::new(http_body_util::Empty::<bytes::Bytes>::new()))
    /// });
    /// world.spawn_on(Node(1), listener.serve(world.sim(), service));
    /// ```
    pub async fn serve<S, B>(self, sim: Sim, service: S)
    where
        S: HttpService<B>,
        B: ResponseBody,
    {
        let stop = std::future::pending();
        let _ = serve_on(sim, self, service, stop, ServeOptions::default()).await;
    }
}

impl Accept<Sim> for Listener {
    type Conn = FuturesIo<Socket>;

    async fn accept(&self, runtime: &Sim) -> io::Result<Self::Conn> {
        let shared = runtime.shared.clone();
        std::future::poll_fn(|cx| {
            let mut state = shared.net.lock();
            let Some(listening) = state.listeners.get_mut(&self.host) else {
                return Poll::Ready(Err(io::ErrorKind::NotConnected.into()));
            };
            match listening.queue.pop_front() {
                Some(socket) => Poll::Ready(Ok(FuturesIo::new(socket))),
                None => {
                    listening.waker = Some(cx.waker().clone());
                    Poll::Pending
                }
            }
        })
        .await
    }
}

impl Dial for Sim {
    type Tcp = Socket;

    async fn tcp(host: &str, _port: u16) -> io::Result<Socket> {
        let sim = Sim::default();
        sim.shared.net.connect(&sim.shared, host)
    }
}

impl ssekit_http::client::Connect for Sim {
    type Client = ssekit_http::client::Pool<Sim>;
    type Body = ssekit_http::client::PooledBody;
    const SCHEMES: &'static [&'static str] = &["http"];
    const TARGET: ssekit_http::client::Target = ssekit_http::client::Target::Origin;

    fn client(
        options: ssekit_http::client::ClientOptions<Self>,
    ) -> Result<Self::Client, ssekit_http::Error> {
        Ok(ssekit_http::client::Pool::with_options(options))
    }

    async fn request_limited(
        client: &Self::Client,
        request: http::Request<bytes::Bytes>,
        limit: usize,
    ) -> Result<http::Response<bytes::Bytes>, ssekit_http::Error> {
        client.request_limited(request, limit).await
    }

    async fn send(
        client: &Self::Client,
        uri: &http::Uri,
        request: http::Request<bytes::Bytes>,
    ) -> Result<http::Response<Self::Body>, ssekit_http::Error> {
        client.send(uri, request).await
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use futures_lite::{AsyncReadExt, AsyncWriteExt};
    use ssekit_http::runtime::Runtime;

    use super::*;
    use crate::{Ran, World};

    /// The server end of the connection `Dial::tcp` just made to `host`.
    fn accepted(world: &World, host: &str) -> Socket {
        let mut state = world.net().lock();
        let queued = state
            .listeners
            .get_mut(host)
            .and_then(|l| l.queue.pop_front());
        queued.expect("a connection queued")
    }

    #[test]
    fn delayed_bytes_arrive_in_order_within_the_drawn_delay() {
        for seed in 0..16 {
            let world = World::new(seed);
            world.net().set_faults(NetFaults {
                delay_ms: 50,
                ..NetFaults::default()
            });
            let _listener = world.net().listen(Node(1), "srv");
            let arrivals = Arc::new(Mutex::new(Vec::new()));
            let (sim, seen) = (world.sim(), arrivals.clone());
            world.spawn_on(Node(2), async move {
                let mut socket = Sim::tcp("srv", 80).await.unwrap();
                let mut byte = [0; 1];
                while socket.read(&mut byte).await.unwrap() == 1 {
                    let now = sim.now().since_origin().as_millis();
                    seen.lock().unwrap().push((byte[0], now));
                }
            });
            assert_eq!(world.run_until(1, || false), Ran::Quiescent);
            let mut server = accepted(&world, "srv");
            let sim = world.sim();
            world.spawn_on(Node(1), async move {
                for i in 0..20u8 {
                    server.write_all(&[i]).await.unwrap();
                    sim.sleep(Duration::from_millis(10)).await;
                }
                server.close().await.unwrap();
            });
            assert_eq!(world.run_until(10_000, || false), Ran::Quiescent);
            let seen = arrivals.lock().unwrap().clone();
            let order: Vec<u8> = seen.iter().map(|(b, _)| *b).collect();
            assert_eq!(order, (0..20).collect::<Vec<_>>(), "seed {seed}");
            let mut late = 0;
            for (i, (_, at)) in seen.iter().enumerate() {
                let written = 10 * i as u128;
                assert!(
                    *at >= written && *at <= written + 50,
                    "seed {seed}: {seen:?}"
                );
                late += u32::from(*at > written);
            }
            assert!(late > 10, "seed {seed}: delays were drawn: {seen:?}");
        }
    }

    #[test]
    fn a_cut_resets_both_ends_after_the_drawn_bytes() {
        let world = World::new(3);
        world.net().set_faults(NetFaults {
            cut: 1.0,
            cut_within: 100,
            ..NetFaults::default()
        });
        let _listener = world.net().listen(Node(1), "srv");
        let got = Arc::new(Mutex::new(None));
        let seen = got.clone();
        world.spawn_on(Node(2), async move {
            let mut socket = Sim::tcp("srv", 80).await.unwrap();
            let mut all = Vec::new();
            let end = socket.read_to_end(&mut all).await;
            *seen.lock().unwrap() = Some((all, end.map_err(|e| e.kind())));
        });
        assert_eq!(world.run_until(1, || false), Ran::Quiescent);
        let mut server = accepted(&world, "srv");
        let wrote = Arc::new(Mutex::new(None));
        let result = wrote.clone();
        world.spawn_on(Node(1), async move {
            let sent = server.write_all(&[7; 1000]).await;
            *result.lock().unwrap() = Some(sent.map_err(|e| e.kind()));
        });
        assert_eq!(world.run_until(1_000, || false), Ran::Quiescent);
        let (bytes, end) = got.lock().unwrap().take().unwrap();
        assert!(
            !bytes.is_empty() && bytes.len() <= 100,
            "{} bytes",
            bytes.len()
        );
        assert_eq!(end, Err(io::ErrorKind::ConnectionReset));
        let sent = wrote.lock().unwrap().take().unwrap();
        assert_eq!(sent, Err(io::ErrorKind::ConnectionReset));
        assert_eq!(world.net().counts(), (1, 1));
    }
}
