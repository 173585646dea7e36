//! How long compiling a tool's schema and checking an event take, on a schema as the
//! official UTCP serializer (`utcp` 1.2.0) writes it: every unset keyword `null`.
//! A plain timing loop (no criterion: this crate's only bench).
//!
//! ```text
//! cargo bench -p ssekit-utcp --bench schema
//! ```

use std::hint::black_box;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use ssekit_utcp::{Schema, UNSET_AS_NULL};

/// `schema` as the official serializer writes it: every model keyword it lacks as `null`,
/// in its `properties` and `items` too.
fn as_official(schema: Value) -> Value {
    let Value::Object(mut map) = schema else {
        return schema;
    };
    for keyword in UNSET_AS_NULL {
        map.entry(keyword).or_insert(Value::Null);
    }
    if let Some(Value::Object(properties)) = map.get_mut("properties") {
        for sub in properties.values_mut() {
            *sub = as_official(sub.take());
        }
    }
    if let Some(items) = map.get_mut("items").filter(|i| i.is_object()) {
        *items = as_official(items.take());
    }
    Value::Object(map)
}

fn per_op(n: u32, mut op: impl FnMut()) -> Duration {
    let start = Instant::now();
    for _ in 0..n {
        op();
    }
    start.elapsed() / n
}

fn main() {
    let schema = as_official(json!({"type": "object", "properties": {
        "symbol": {"type": "string", "pattern": "^[A-Z]+$", "maxLength": 5},
        "price": {"type": "number", "minimum": 0},
        "tags": {"type": "array", "items": {"type": "string"}},
        "venue": {"type": "string", "enum": ["NYSE", "NASDAQ"]}},
        "required": ["symbol", "price"]}));
    let good = json!({"symbol": "AAPL", "price": 189.5, "tags": ["a", "b"], "venue": "NYSE"});
    let bad = json!({"symbol": "AAPL", "price": "1"});
    let compiled = Schema::new(schema.clone()).expect("a valid schema");
    let compile = per_op(10_000, || {
        black_box(Schema::new(black_box(schema.clone())).is_ok());
    });
    let accept = per_op(1_000_000, || {
        black_box(compiled.validate(black_box(&good)).is_ok());
    });
    let refuse = per_op(1_000_000, || {
        black_box(compiled.validate(black_box(&bad)).is_err());
    });
    println!("schema: compile {compile:?}/schema, a matching event {accept:?}, a mismatch (with its Mismatch) {refuse:?}");
}
