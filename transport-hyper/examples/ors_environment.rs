//! Your own ORS environment: `letters`, two typed tools. How many times does a letter occur
//! in a word? `spell` spells any word; `submit` ends the episode with reward 1 or 0. The
//! inputs are Rust types: `/tools` lists the JSON Schemas schemars derives from them (doc
//! comments become descriptions), and an input that does not fit gets a tool error naming
//! the field. Drive it with the official client (interop/py/check_ors_environment.py) or
//! with `ssekit tail` (RECIPE-ors.md).
//!
//! ```text
//! cargo run -p ssekit-hyper --example ors_environment -- 127.0.0.1:8080
//! ```

use serde_json::json;
use ssekit_hyper::ors::{Env, Server, ToolOutput};

/// A task: the word, and the letter to count in it.
#[derive(serde::Deserialize)]
struct Task {
    word: String,
    letter: char,
}

/// Any word.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Spell {
    word: String,
}

/// How many times the letter occurs in the word.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Submit {
    count: usize,
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let env = Env::new("letters")
        .split("train", [json!({"word": "banana", "letter": "a"})])
        .split("test", [json!({"word": "strawberry", "letter": "r"})])
        .prompt(|t: &Task| format!("How many '{}' in {}?", t.letter, t.word))
        .tool("spell", "Spell a word", |_: &Task, s: Spell| {
            let letters: Vec<String> = s.word.chars().map(String::from).collect();
            letters.join(" ")
        })
        .tool("submit", "Submit the count", |t: &Task, s: Submit| {
            let right = s.count == t.word.matches(t.letter).count();
            let text = if right { "Correct!" } else { "Incorrect." };
            ToolOutput::text(text).reward(right.into()).finished(true)
        });
    let addr = std::env::args().nth(1).unwrap_or("127.0.0.1:0".into());
    let listener = tokio::net::TcpListener::bind(addr).await?;
    println!("listening on http://{}", listener.local_addr()?);
    ssekit_hyper::server::serve(listener, Server::new(vec![std::sync::Arc::new(env)])).await
}
