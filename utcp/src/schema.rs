//! JSON Schema, to check a call's `inputs` and each event's data against a tool's `inputs`
//! and `outputs`: the whole of draft 2020-12 (or the draft a schema's `$schema` names),
//! through the [`jsonschema`] crate, with the typed errors of this module.
//!
//! Before compiling, a schema is read as UTCP tool definitions write it:
//!
//! - `null` is the same as absent for the keywords the official UTCP library's schema
//!   model declares ([`UNSET_AS_NULL`]), in the schema and in its `properties`, `items` and
//!   `additionalProperties` subschemas: its serializer writes every unset one as `null`
//!   (`"const": null` there means no `const`, not "must be null"). [`Schema::as_value`] is
//!   the schema with those removed.
//! - An array `items` (the tuple form of drafts 4 to 2019-09, which the official model
//!   also allows) is read as 2020-12's `prefixItems`, and an `additionalItems` beside it as
//!   `items`, wherever the schema names no other draft.
//! - OpenAPI's `"nullable": true` beside a `type` adds `null` to it.
//!
//! And bounded, for manuals that come from a server:
//!
//! - a schema nests at most [`MAX_DEPTH`] subschemas deep, and an `enum` or `const` value
//!   at most [`MAX_DEPTH`] arrays or objects deep; deeper is a [`SchemaError`];
//! - `pattern` and `patternProperties` use the `regex` crate's engine (linear time, no
//!   look-around or backreferences: a pattern that needs them is a [`SchemaError`]), so a
//!   hostile pattern cannot make a check take exponential time;
//! - a `$ref` to another document is a [`SchemaError`]: nothing is fetched;
//! - `format` is an annotation, as 2020-12 says, not checked.
//!
//! Checking stops at the first mismatch, reported as a [`Mismatch`]: where (a JSON
//! Pointer), what the schema asks for there, what was there.
//!
//! The crate used to check a hand-written subset (818 lines: `type`, `properties`,
//! `required`, `additionalProperties`, `items`, `enum`, `const`, `minimum`, `maximum`);
//! measured against it on the official serializer's schemas, `jsonschema` checks what the
//! subset ignored (`pattern`, `minLength`, `maxLength`, `anyOf`, ...) and checks an event
//! about 4.5 times as fast (about 125 ns against 560 ns), for about 50 more crates to build
//! (see CHANGELOG.md and benches/PERFORMANCE-LOG.md).

use std::fmt;
use std::sync::Arc;

use jsonschema::error::{TypeKind, ValidationErrorKind};
use jsonschema::{PatternOptions, ValidationError, Validator};
use serde_json::{Map, Value};

/// How deep a schema may nest (each subschema — a `properties` entry, `items`, an `anyOf`
/// branch, ... — is one level), and how deep an `enum` or `const` value may be.
///
/// # Example
/// ```
/// use ssekit_utcp::{Schema, MAX_DEPTH};
/// let mut deep = serde_json::json!({"type": "string"});
/// for _ in 0..=MAX_DEPTH {
///     deep = serde_json::json!({"type": "array", "items": deep});
/// }
/// assert!(Schema::new(deep).is_err());
/// ```
pub const MAX_DEPTH: usize = 32;

/// A schema that is not valid JSON Schema, or is out of this module's bounds.
///
/// # Example
/// ```
/// let err = ssekit_utcp::Schema::new(serde_json::json!({"type": "strin"})).unwrap_err();
/// assert_eq!(err.path, "/type");
/// assert_eq!(err.to_string(), "invalid schema at /type: unknown type \"strin\"");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct SchemaError {
    /// Where, as a JSON Pointer (RFC 6901) into the schema; `""` is the schema itself.
    pub path: String,
    /// What is wrong there.
    pub problem: String,
}

impl fmt::Display for SchemaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid schema at {}: {}", at(&self.path), self.problem)
    }
}

impl std::error::Error for SchemaError {}

/// The first place where a value does not match a schema.
///
/// # Example
/// ```
/// use serde_json::json;
/// let schema = ssekit_utcp::Schema::new(json!({"properties": {"price": {"type": "number"}}}))?;
/// let mismatch = schema.validate(&json!({"price": "12.5"})).unwrap_err();
/// assert_eq!(mismatch.path, "/price");
/// assert_eq!(mismatch.expected, "number");
/// assert_eq!(mismatch.to_string(), "at /price: expected number, found string \"12.5\"");
/// # Ok::<(), ssekit_utcp::SchemaError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Mismatch {
    /// Where, as a JSON Pointer (RFC 6901) into the value; `""` is the value itself. For a
    /// missing required property, the path it should have had; for a property that
    /// `"additionalProperties": false` refuses, the property's.
    pub path: String,
    /// What the schema asks for there (`number`, `string or null`, `one of ["a", "b"]`,
    /// `a value (required)`, `at most 5 characters`, ...).
    pub expected: String,
    /// What was there, shortened (`string "12.5"`, `array of 3 items`, `nothing`).
    pub found: String,
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "at {}: expected {}, found {}",
            at(&self.path),
            self.expected,
            self.found
        )
    }
}

impl std::error::Error for Mismatch {}

fn at(path: &str) -> &str {
    if path.is_empty() {
        "the top level"
    } else {
        path
    }
}

/// A compiled schema (see [the module](self)), with the JSON it was made from.
///
/// # Example
/// ```
/// use serde_json::json;
/// use ssekit_utcp::Schema;
/// let schema = Schema::new(json!({
///     "type": "object",
///     "properties": {"symbol": {"type": "string", "maxLength": 5}, "price": {"type": "number"}},
///     "required": ["symbol"]
/// }))?;
/// assert!(schema.validate(&json!({"symbol": "AAPL", "price": 189.5})).is_ok());
/// assert!(schema.validate(&json!({"price": 189.5})).is_err());
/// assert!(schema.validate(&json!({"symbol": "TOOLONG"})).is_err());
/// # Ok::<(), ssekit_utcp::SchemaError>(())
/// ```
#[derive(Clone)]
pub struct Schema {
    source: Value,
    /// `None`: the schema accepts everything (`{}`, `true`), nothing to run.
    validator: Option<Arc<Validator>>,
}

impl fmt::Debug for Schema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Schema")
            .field("source", &self.source)
            .finish_non_exhaustive()
    }
}

impl PartialEq for Schema {
    fn eq(&self, other: &Self) -> bool {
        self.source == other.source
    }
}

impl Default for Schema {
    fn default() -> Self {
        Schema::any()
    }
}

impl Schema {
    /// Compiles `schema`.
    ///
    /// # Example
    /// ```
    /// let schema = ssekit_utcp::Schema::new(serde_json::json!({"type": ["string", "null"]}))?;
    /// assert!(schema.validate(&serde_json::Value::Null).is_ok());
    /// # Ok::<(), ssekit_utcp::SchemaError>(())
    /// ```
    pub fn new(mut schema: Value) -> Result<Schema, SchemaError> {
        let mut path = Vec::new();
        let draft_2020 = schema
            .get("$schema")
            .and_then(Value::as_str)
            .is_none_or(|uri| uri.contains("2020-12"));
        prepare(&mut schema, &mut path, 0, true, draft_2020)?;
        let accepts_all = match &schema {
            Value::Bool(true) => true,
            Value::Object(map) => map.is_empty(),
            _ => false,
        };
        let validator = if accepts_all {
            None
        } else {
            let built = jsonschema::options()
                .with_pattern_options(PatternOptions::regex())
                .build(&schema)
                .map_err(|e| SchemaError {
                    path: e.instance_path().as_str().to_owned(),
                    problem: e.to_string(),
                })?;
            Some(Arc::new(built))
        };
        Ok(Schema {
            source: schema,
            validator,
        })
    }

    /// The empty schema `{}`: every value matches.
    ///
    /// # Example
    /// ```
    /// let any = ssekit_utcp::Schema::any();
    /// assert!(any.validate(&serde_json::json!([1, "two"])).is_ok());
    /// assert_eq!(any.as_value(), &serde_json::json!({}));
    /// ```
    pub fn any() -> Schema {
        Schema {
            source: Value::Object(Map::new()),
            validator: None,
        }
    }

    /// The JSON the schema was compiled from (without the `null`s that mean absent, see
    /// [the module](self)).
    ///
    /// # Example
    /// ```
    /// let json = serde_json::json!({"type": "number"});
    /// assert_eq!(ssekit_utcp::Schema::new(json.clone())?.as_value(), &json);
    /// # Ok::<(), ssekit_utcp::SchemaError>(())
    /// ```
    pub fn as_value(&self) -> &Value {
        &self.source
    }

    /// Checks `value`, and names the first mismatch.
    ///
    /// # Example
    /// ```
    /// use serde_json::json;
    /// let schema = ssekit_utcp::Schema::new(json!({"items": {"type": "integer"}}))?;
    /// assert!(schema.validate(&json!([1, 2.0])).is_ok());
    /// assert_eq!(schema.validate(&json!([1, 2.5])).unwrap_err().path, "/1");
    /// # Ok::<(), ssekit_utcp::SchemaError>(())
    /// ```
    pub fn validate(&self, value: &Value) -> Result<(), Mismatch> {
        match &self.validator {
            None => Ok(()),
            Some(validator) => validator.validate(value).map_err(|e| mismatch(&e)),
        }
    }
}

/// The keywords of the official UTCP library's `JsonSchema` model (`utcp` 1.2.0), which
/// its serializer writes as `null` when unset: there, and only there, `null` means absent.
/// (Any other keyword it keeps as written, `null` included.)
///
/// # Example
/// ```
/// use serde_json::json;
/// // As `utcp` 1.2.0's serializer writes `{"type": "string"}`, abridged.
/// let schema = ssekit_utcp::Schema::new(json!({"type": "string", "const": null, "items": null,
///     "required": null, "additionalProperties": null, "minimum": null}))?;
/// assert!(schema.validate(&json!("any text")).is_ok());
/// assert!(ssekit_utcp::UNSET_AS_NULL.contains(&"const"));
/// // `null` in a keyword the model does not declare keeps its meaning.
/// assert!(ssekit_utcp::Schema::new(json!({"prefixItems": null})).is_err());
/// # Ok::<(), ssekit_utcp::SchemaError>(())
/// ```
pub const UNSET_AS_NULL: [&str; 19] = [
    "$schema",
    "$id",
    "title",
    "description",
    "type",
    "properties",
    "items",
    "required",
    "enum",
    "const",
    "default",
    "examples",
    "format",
    "additionalProperties",
    "pattern",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
];

/// JSON Schema's type names.
const TYPES: [&str; 7] = [
    "null", "boolean", "object", "array", "number", "integer", "string",
];

/// Keywords whose value is a schema.
const ONE_SCHEMA: [&str; 12] = [
    "items",
    "additionalProperties",
    "additionalItems",
    "contains",
    "not",
    "if",
    "then",
    "else",
    "propertyNames",
    "unevaluatedItems",
    "unevaluatedProperties",
    "contentSchema",
];
/// Keywords whose value is an array of schemas.
const SCHEMA_ARRAYS: [&str; 4] = ["allOf", "anyOf", "oneOf", "prefixItems"];
/// Keywords whose value is an object of schemas.
const SCHEMA_MAPS: [&str; 5] = [
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
];
/// The subschemas the official model reads as its own (and writes with `null`s).
const MODEL_SUBSCHEMAS: [&str; 3] = ["properties", "items", "additionalProperties"];

/// The path as a JSON Pointer: `/` before each step, `~` written `~0` and `/` written `~1`.
fn pointer(path: &[String]) -> String {
    let mut out = String::new();
    for step in path {
        out.push('/');
        out.push_str(&step.replace('~', "~0").replace('/', "~1"));
    }
    out
}

/// Whether `value` nests at most `limit` arrays or objects deep (recursing at most that far).
fn depth_within(value: &Value, limit: usize) -> bool {
    match value {
        Value::Array(items) => limit > 0 && items.iter().all(|v| depth_within(v, limit - 1)),
        Value::Object(map) => limit > 0 && map.values().all(|v| depth_within(v, limit - 1)),
        _ => true,
    }
}

/// Reads `schema` as UTCP writes it and checks the bounds (see [the module](self)):
/// removes the `null`s that mean absent (where `model`: a schema the official model
/// wrote), rewrites an array `items` (in a 2020-12 schema) and `nullable`, and refuses
/// nesting past [`MAX_DEPTH`]. Recurses once per subschema level, so at most that deep.
fn prepare(
    schema: &mut Value,
    path: &mut Vec<String>,
    depth: usize,
    model: bool,
    draft_2020: bool,
) -> Result<(), SchemaError> {
    let fail = |path: &[String], problem: String| SchemaError {
        path: pointer(path),
        problem,
    };
    if depth > MAX_DEPTH {
        return Err(fail(
            path,
            format!("subschemas nest deeper than {MAX_DEPTH} levels"),
        ));
    }
    let Value::Object(map) = schema else {
        return Ok(()); // `true`, `false`, or not a schema (the compiler says so)
    };
    if model {
        map.retain(|key, value| !(value.is_null() && UNSET_AS_NULL.contains(&key.as_str())));
    }
    if draft_2020
        && map.get("items").is_some_and(Value::is_array)
        && !map.contains_key("prefixItems")
    {
        if let Some(tuple) = map.remove("items") {
            map.insert("prefixItems".to_owned(), tuple);
        }
        if let Some(rest) = map.remove("additionalItems") {
            map.insert("items".to_owned(), rest);
        }
    }
    if map.get("nullable") == Some(&Value::Bool(true)) {
        match map.get_mut("type") {
            Some(Value::String(one)) if one != "null" => {
                let one = std::mem::take(one);
                map.insert("type".to_owned(), Value::from(vec![one, "null".to_owned()]));
            }
            Some(Value::Array(types)) if !types.iter().any(|t| t == "null") => {
                types.push(Value::from("null"));
            }
            _ => {}
        }
    }
    // The commonest slip, named plainly (jsonschema's meta-schema says "... is not valid
    // under any of the schemas listed in the 'anyOf' keyword").
    let names = match map.get("type") {
        Some(Value::String(one)) => vec![one.as_str()],
        Some(Value::Array(many)) => many.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    if let Some(unknown) = names.into_iter().find(|name| !TYPES.contains(name)) {
        path.push("type".to_owned());
        return Err(fail(path, format!("unknown type {unknown:?}")));
    }
    for keyword in ["enum", "const"] {
        let limit = if keyword == "enum" {
            MAX_DEPTH + 1
        } else {
            MAX_DEPTH
        };
        if map.get(keyword).is_some_and(|v| !depth_within(v, limit)) {
            path.push(keyword.to_owned());
            let err = fail(
                path,
                format!("a value nests deeper than {MAX_DEPTH} levels"),
            );
            return Err(err);
        }
    }
    for (keyword, value) in map.iter_mut() {
        let keyword = keyword.as_str();
        let sub_model = model && MODEL_SUBSCHEMAS.contains(&keyword);
        path.push(keyword.to_owned());
        if ONE_SCHEMA.contains(&keyword) {
            match value {
                // The older tuple form, in a schema of another draft.
                Value::Array(items) if keyword == "items" => {
                    for (i, sub) in items.iter_mut().enumerate() {
                        path.push(i.to_string());
                        prepare(sub, path, depth + 1, sub_model, draft_2020)?;
                        path.pop();
                    }
                }
                sub => prepare(sub, path, depth + 1, sub_model, draft_2020)?,
            }
        } else if SCHEMA_ARRAYS.contains(&keyword) {
            if let Value::Array(items) = value {
                for (i, sub) in items.iter_mut().enumerate() {
                    path.push(i.to_string());
                    prepare(sub, path, depth + 1, false, draft_2020)?;
                    path.pop();
                }
            }
        } else if SCHEMA_MAPS.contains(&keyword)
            && let Value::Object(subs) = value
        {
            for (name, sub) in subs.iter_mut() {
                path.push(name.clone());
                prepare(sub, path, depth + 1, sub_model, draft_2020)?;
                path.pop();
            }
        }
        path.pop();
    }
    Ok(())
}

/// A short description of a value for messages: its type and, for scalars, the value
/// (strings cut after 40 characters).
fn describe(value: &Value) -> String {
    match value {
        Value::Null => "null".to_owned(),
        Value::Bool(b) => format!("boolean {b}"),
        Value::Number(n) => format!("number {n}"),
        Value::String(s) => {
            let mut cut: String = s.chars().take(40).collect();
            if cut.len() < s.len() {
                cut.push('…');
            }
            format!("string {cut:?}")
        }
        Value::Array(items) => format!("array of {} items", items.len()),
        Value::Object(map) => format!("object with {} properties", map.len()),
    }
}

/// A value as JSON for a message, cut after 100 characters.
fn short_json(value: &Value) -> String {
    let text = value.to_string();
    let mut cut: String = text.chars().take(100).collect();
    if cut.len() < text.len() {
        cut.push('…');
    }
    cut
}

/// `[a, b, c]` for an `enum`'s message, cut after 8 values.
fn list(values: &Value) -> String {
    let values = values.as_array().map_or(&[][..], Vec::as_slice);
    let mut out = String::from("[");
    for (i, v) in values.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        if i == 8 {
            out.push_str(&format!("... {} more", values.len() - i));
            break;
        }
        out.push_str(&short_json(v));
    }
    out.push(']');
    out
}

/// `n thing` or `n things`.
fn count(n: u64, thing: &str) -> String {
    format!("{n} {thing}{}", if n == 1 { "" } else { "s" })
}

/// The [`Mismatch`] for the first error `jsonschema` found.
fn mismatch(error: &ValidationError<'_>) -> Mismatch {
    let path = error.instance_path().as_str().to_owned();
    let instance: &Value = error.instance();
    let found = describe(instance);
    let expected = match error.kind() {
        ValidationErrorKind::Type { kind } => match kind {
            TypeKind::Single(t) => t.to_string(),
            TypeKind::Multiple(set) => set
                .iter()
                .map(|t| t.to_string())
                .collect::<Vec<_>>()
                .join(" or "),
        },
        ValidationErrorKind::Required { property } => {
            let name = property.as_str().unwrap_or_default();
            return Mismatch {
                path: format!("{path}{}", pointer(&[name.to_owned()])),
                expected: "a value (required)".to_owned(),
                found: "nothing".to_owned(),
            };
        }
        ValidationErrorKind::AdditionalProperties { unexpected } => {
            let name = unexpected.first().map_or("", String::as_str);
            return Mismatch {
                path: format!("{path}{}", pointer(&[name.to_owned()])),
                expected: "no such property (additionalProperties is false)".to_owned(),
                found: instance.get(name).map_or_else(String::new, describe),
            };
        }
        ValidationErrorKind::Enum { options } => format!("one of {}", list(options)),
        ValidationErrorKind::Constant { expected_value } => {
            format!("exactly {}", short_json(expected_value))
        }
        ValidationErrorKind::Minimum { limit } => format!("at least {limit}"),
        ValidationErrorKind::Maximum { limit } => format!("at most {limit}"),
        ValidationErrorKind::ExclusiveMinimum { limit } => format!("more than {limit}"),
        ValidationErrorKind::ExclusiveMaximum { limit } => format!("less than {limit}"),
        ValidationErrorKind::MultipleOf { multiple_of } => format!("a multiple of {multiple_of}"),
        ValidationErrorKind::MinLength { limit } => {
            format!("at least {}", count(*limit, "character"))
        }
        ValidationErrorKind::MaxLength { limit } => {
            format!("at most {}", count(*limit, "character"))
        }
        ValidationErrorKind::MinItems { limit } => format!("at least {}", count(*limit, "item")),
        ValidationErrorKind::MaxItems { limit } => format!("at most {}", count(*limit, "item")),
        ValidationErrorKind::MinProperties { limit } => {
            format!(
                "at least {}",
                count(*limit, "property").replace("propertys", "properties")
            )
        }
        ValidationErrorKind::MaxProperties { limit } => {
            format!(
                "at most {}",
                count(*limit, "property").replace("propertys", "properties")
            )
        }
        ValidationErrorKind::Pattern { pattern } => format!("a string matching {pattern:?}"),
        ValidationErrorKind::UniqueItems => "unique items".to_owned(),
        ValidationErrorKind::FalseSchema => "nothing (the schema is false)".to_owned(),
        ValidationErrorKind::AnyOf { .. } => "a match for one of the anyOf schemas".to_owned(),
        ValidationErrorKind::OneOfNotValid { .. } => {
            "a match for one of the oneOf schemas".to_owned()
        }
        ValidationErrorKind::OneOfMultipleValid { .. } => {
            "a match for exactly one of the oneOf schemas".to_owned()
        }
        ValidationErrorKind::Not { schema } => {
            format!("a value not matching {}", short_json(schema))
        }
        ValidationErrorKind::Contains => "an item matching the contains schema".to_owned(),
        // The rest (additional items, unevaluated items and properties, property names,
        // content, custom keywords) in jsonschema's own words.
        _ => error.to_string(),
    };
    Mismatch {
        path,
        expected,
        found,
    }
}
