//! The sans-IO core over a blocking `std::net::TcpStream`: no async runtime, no HTTP crate.
//! It serves three events on 127.0.0.1 from a thread, reads them with a plain socket and the
//! core `Decoder`, and checks them. `cargo run -p ssekit --example blocking_tcp`.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};

use ssekit::{Decoder, Frame, StreamEnd};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let addr = serve_three_events()?;

    // HTTP/1.0, so the body is the bytes up to the close (no chunked encoding to undo).
    let mut socket = TcpStream::connect(addr)?;
    socket.write_all(b"GET /events HTTP/1.0\r\nAccept: text/event-stream\r\n\r\n")?;
    let mut reader = BufReader::new(socket);
    let mut line = String::new();
    while reader.read_line(&mut line)? > 2 {
        line.clear(); // the status line and headers, up to the blank line
    }

    let mut decoder = Decoder::new();
    let mut events = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = reader.read(&mut buf)?;
        if n == 0 {
            break;
        }
        decoder.feed_slice(&buf[..n])?;
        while let Some(frame) = decoder.next_frame()? {
            if let Frame::Event(event) = frame {
                println!(
                    "{} [{}]: {}",
                    event.event_type(),
                    event.id().unwrap_or(""),
                    event.data()
                );
                events.push(event);
            }
        }
    }
    assert_eq!(decoder.finish(), StreamEnd::Clean);
    assert_eq!(events.len(), 3);
    assert_eq!(decoder.last_event_id(), "3");
    Ok(())
}

/// A one-shot SSE server on a free port: three `tick` events, then the close.
fn serve_three_events() -> std::io::Result<std::net::SocketAddr> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    std::thread::spawn(move || {
        if let Ok((mut conn, _)) = listener.accept() {
            let mut request = [0u8; 1024];
            let _ = conn.read(&mut request);
            let _ = conn.write_all(b"HTTP/1.0 200 OK\r\nContent-Type: text/event-stream\r\n\r\n");
            for n in 1..=3 {
                let _ = write!(conn, "event: tick\nid: {n}\ndata: {{\"n\":{n}}}\n\n");
            }
        }
    });
    Ok(addr)
}
