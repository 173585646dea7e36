//! The sans-IO core over `reqwest`'s byte stream: reqwest does the HTTP, the core `Decoder`
//! the SSE, fed each chunk as it arrives, zero-copy (`Bytes` in, frames out). It serves
//! three events on 127.0.0.1 and checks what it reads.
//! `cargo run -p ssekit --example reqwest_stream`.

use futures_util::StreamExt;
use ssekit::{Decoder, Frame, StreamEnd};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = serve_three_events().await?;

    let response = reqwest::Client::new()
        .get(url)
        .header("accept", "text/event-stream")
        .send()
        .await?
        .error_for_status()?;
    let mut body = response.bytes_stream();
    let mut decoder = Decoder::new();
    let mut seen = 0;
    while let Some(chunk) = body.next().await {
        decoder.feed(chunk?)?;
        while let Some(frame) = decoder.next_frame()? {
            if let Frame::Event(event) = frame {
                println!(
                    "{} [{}]: {}",
                    event.event_type(),
                    event.id().unwrap_or(""),
                    event.data()
                );
                seen += 1;
            }
        }
    }
    assert_eq!(decoder.finish(), StreamEnd::Clean);
    assert_eq!((seen, decoder.last_event_id()), (3, "3"));
    Ok(())
}

/// A one-shot SSE server on a free port: three `tick` events, then the close.
async fn serve_three_events() -> std::io::Result<String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/events", listener.local_addr()?);
    tokio::spawn(async move {
        if let Ok((mut conn, _)) = listener.accept().await {
            let mut request = [0u8; 1024];
            let _ = conn.read(&mut request).await;
            let head =
                "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n";
            let _ = conn.write_all(head.as_bytes()).await;
            for n in 1..=3 {
                let event = format!("event: tick\nid: {n}\ndata: {{\"n\":{n}}}\n\n");
                let _ = conn.write_all(event.as_bytes()).await;
            }
        }
    });
    Ok(url)
}
