//! The JSON Schema subset UTCP tool definitions use, to check a call's `inputs` and each
//! event's data against a tool's `inputs` and `outputs`.
//!
//! Supported, with JSON Schema's meaning:
//!
//! | keyword | accepted form | checks |
//! |---|---|---|
//! | `type` | a name or a non-empty array of names: `null`, `boolean`, `object`, `array`, `number`, `integer`, `string` | the value is of one of them; `integer` is a number without a fractional part (`3` and `3.0`), `number` any number; `["string", "null"]` is how a value is made nullable, and OpenAPI's `"nullable": true` beside a `type` adds `null` to it |
//! | `properties` | an object of schemas | each present property matches its schema |
//! | `required` | an array of strings | each named property is present |
//! | `additionalProperties` | `false` or a schema | properties not in `properties` are refused, or match the schema; not checked where the schema has `patternProperties`, whose patterns are not read here (keys matching one are exempt from it) |
//! | `prefixItems` | an array of schemas | the first elements of an array match them, by position (the array may be shorter) |
//! | `items` | a schema | every element after those of `prefixItems` matches it |
//! | `items` (the older tuple form), `additionalItems` | an array of schemas; a schema | as `prefixItems` and `items`, where there is no `prefixItems` |
//! | `enum` | an array | the value equals one of them (numbers by value: `1` equals `1.0`) |
//! | `const` | any value | the value equals it |
//! | `minimum`, `maximum` | a number | a number is at least / at most it (other types pass) |
//!
//! Numbers compare by value and exactly: two integers as integers, an integer and a float
//! without rounding the integer to an `f64` (`9007199254740993` is more than
//! `9007199254740992.0`), two floats as `f64`s. A number written with a fraction or an
//! exponent is read as an `f64`, so `9007199254740993.0` in the JSON text already is
//! `9007199254740992.0`.
//! | `true`, `false` as a schema | | anything / nothing matches |
//!
//! `null` is the same as absent for the keywords the official UTCP library's schema model
//! declares ([`UNSET_AS_NULL`]), in the schema and in its `properties`, `items` and
//! `additionalProperties` subschemas: its serializer writes every unset one as `null`
//! (`"const": null` there means no `const`, not "must be null"). [`Schema::as_value`] is
//! the schema with those removed.
//!
//! Every other keyword is ignored, and no keyword ignored here narrows one checked here, so a
//! schema using one only accepts more than its author meant (with one exception: beside a
//! `$ref`, the keywords above are checked, as JSON Schema 2019-09 and later read them, where
//! drafts 4 to 7 ignore every sibling of a `$ref`): `description`, `title`,
//! `default`, `examples`, `format`, `pattern`, `minLength`, `maxLength`, `minItems`,
//! `maxItems`, `uniqueItems`, `exclusiveMinimum`, `exclusiveMaximum`, `multipleOf`,
//! `minProperties`, `maxProperties`, `patternProperties`, `propertyNames`,
//! `dependentRequired`, `contains`, `allOf`, `anyOf`, `oneOf`, `not`, `if`/`then`/`else`,
//! `$ref`, `$defs`/`definitions`, `$schema`, `$id`. A known keyword in a form the table does not list (`"type": 5`,
//! `"required": "x"`, an unknown type name) makes the schema invalid: [`SchemaError`].
//!
//! Bounds: a schema nests at most [`MAX_DEPTH`] subschemas deep, and an `enum` or `const`
//! value at most [`MAX_DEPTH`] arrays or objects deep; deeper is a [`SchemaError`], so
//! compiling recurses at most that deep and checking a value (which only descends where the
//! schema does) too, whatever the value's own depth. Checking stops at the first mismatch.
//! JSON text read by serde_json is less than 128 levels deep; a `Value` built in code
//! deeper than the stack allows cannot be cloned or dropped by serde_json itself, whatever
//! this module does, so keep such values out.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::fmt;

use serde_json::{Map, Number, Value};

/// How deep a schema may nest (each `properties` entry, `items` and `additionalProperties`
/// schema is one level), and how deep an `enum` or `const` value may be.
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

/// A schema that is not in the supported subset's form, or nests too deep.
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
    /// missing required property, the path it should have had.
    pub path: String,
    /// What the schema asks for there (`number`, `string or null`, `one of ["a", "b"]`,
    /// `a value (required)`, ...).
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

/// A compiled schema of the supported subset (see [the module](self)), with the JSON it was
/// made from.
///
/// # Example
/// ```
/// use serde_json::json;
/// use ssekit_utcp::Schema;
/// let schema = Schema::new(json!({
///     "type": "object",
///     "properties": {"symbol": {"type": "string"}, "price": {"type": "number"}},
///     "required": ["symbol"]
/// }))?;
/// assert!(schema.validate(&json!({"symbol": "AAPL", "price": 189.5})).is_ok());
/// assert!(schema.validate(&json!({"price": 189.5})).is_err());
/// # Ok::<(), ssekit_utcp::SchemaError>(())
/// ```
#[derive(Clone, Debug)]
pub struct Schema {
    source: Value,
    root: Node,
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
        drop_unset(&mut schema, 0);
        let mut path = Vec::new();
        let root = compile(&schema, &mut path, 0)?;
        Ok(Schema {
            source: schema,
            root,
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
            root: Node::Any,
        }
    }

    /// The JSON the schema was compiled from.
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
        let mut path = Vec::new();
        check(&self.source, &self.root, value, &mut path)
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

/// Removes the [`UNSET_AS_NULL`] keywords whose value is `null`, in the schema and the
/// subschemas the official model reads as schemas (`properties`' values, `items`, an
/// object `additionalProperties`), to [`MAX_DEPTH`] + 1 levels (deeper is refused by
/// [`compile`] anyway).
fn drop_unset(schema: &mut Value, depth: usize) {
    let Value::Object(map) = schema else { return };
    map.retain(|key, value| !(value.is_null() && UNSET_AS_NULL.contains(&key.as_str())));
    if depth > MAX_DEPTH {
        return;
    }
    if let Some(Value::Object(properties)) = map.get_mut("properties") {
        for sub in properties.values_mut() {
            drop_unset(sub, depth + 1);
        }
    }
    match map.get_mut("items") {
        Some(Value::Array(items)) => items.iter_mut().for_each(|sub| drop_unset(sub, depth + 1)),
        Some(sub) => drop_unset(sub, depth + 1),
        None => {}
    }
    if let Some(sub) = map.get_mut("additionalProperties") {
        drop_unset(sub, depth + 1);
    }
}

/// One compiled (sub)schema. Built only by [`compile`], so never deeper than [`MAX_DEPTH`].
#[derive(Clone, Debug)]
enum Node {
    /// `true`, or an object with no supported keyword.
    Any,
    /// `false`.
    Never,
    Rule(Box<Rule>),
}

#[derive(Clone, Debug, Default)]
struct Rule {
    /// A set of [`TYPES`] bits.
    types: Option<u8>,
    /// Where the `enum` array is in the schema's JSON, as a JSON Pointer: read from there,
    /// not copied (parsed JSON is large, and an `enum` can be most of a schema).
    one_of: Option<String>,
    /// Where the `const` value is, likewise.
    constant: Option<String>,
    minimum: Option<Number>,
    maximum: Option<Number>,
    required: Vec<String>,
    properties: BTreeMap<String, Node>,
    additional: Option<Node>,
    /// Schemas of the first elements, by position (`prefixItems`, or the old `items`
    /// array).
    prefix: Vec<Node>,
    /// The schema of the elements after `prefix` (`items`, or the old `additionalItems`).
    items: Option<Node>,
}

/// The type names, in the order a set of them is written out.
const TYPES: [&str; 7] = [
    "null", "boolean", "object", "array", "number", "integer", "string",
];
const INTEGER: u8 = 1 << 5;
const NUMBER: u8 = 1 << 4;

/// A step of a path: an object key or an array index.
#[derive(Clone, Copy)]
enum Step<'a> {
    Key(&'a str),
    Index(usize),
}

/// The path as a JSON Pointer: `/` before each step, `~` written `~0` and `/` written `~1`.
fn pointer(path: &[Step<'_>]) -> String {
    let mut out = String::new();
    for step in path {
        out.push('/');
        match step {
            Step::Key(key) => {
                for c in key.chars() {
                    match c {
                        '~' => out.push_str("~0"),
                        '/' => out.push_str("~1"),
                        c => out.push(c),
                    }
                }
            }
            Step::Index(i) => out.push_str(&i.to_string()),
        }
    }
    out
}

fn invalid(path: &[Step<'_>], problem: impl Into<String>) -> SchemaError {
    SchemaError {
        path: pointer(path),
        problem: problem.into(),
    }
}

/// Whether `value` nests at most `limit` arrays or objects deep (recursing at most that far).
fn depth_within(value: &Value, limit: usize) -> bool {
    match value {
        Value::Array(items) => limit > 0 && items.iter().all(|v| depth_within(v, limit - 1)),
        Value::Object(map) => limit > 0 && map.values().all(|v| depth_within(v, limit - 1)),
        _ => true,
    }
}

fn compile<'a>(
    schema: &'a Value,
    path: &mut Vec<Step<'a>>,
    depth: usize,
) -> Result<Node, SchemaError> {
    if depth > MAX_DEPTH {
        return Err(invalid(
            path,
            format!("subschemas nest deeper than {MAX_DEPTH} levels"),
        ));
    }
    let map = match schema {
        Value::Bool(true) => return Ok(Node::Any),
        Value::Bool(false) => return Ok(Node::Never),
        Value::Object(map) => map,
        other => {
            return Err(invalid(
                path,
                format!(
                    "a schema is an object or a boolean, not {}",
                    describe(other)
                ),
            ))
        }
    };
    let mut rule = Rule::default();
    let mut constrained = false;
    for (keyword, value) in map {
        path.push(Step::Key(keyword));
        match keyword.as_str() {
            "type" => rule.types = Some(compile_types(value, path)?),
            "properties" => {
                let Value::Object(properties) = value else {
                    return Err(invalid(path, "properties is not an object"));
                };
                for (name, sub) in properties {
                    path.push(Step::Key(name));
                    let node = compile(sub, path, depth + 1)?;
                    path.pop();
                    rule.properties.insert(name.clone(), node);
                }
            }
            "required" => {
                let names = value.as_array().and_then(|names| {
                    names
                        .iter()
                        .map(|n| n.as_str().map(str::to_owned))
                        .collect::<Option<Vec<_>>>()
                });
                rule.required =
                    names.ok_or_else(|| invalid(path, "required is not an array of strings"))?;
            }
            "additionalProperties" => rule.additional = Some(compile(value, path, depth + 1)?),
            "items" | "prefixItems" | "additionalItems" => {
                // Read together after the loop: which applies where depends on the others.
                path.pop();
                continue;
            }
            "enum" => {
                if !value.is_array() {
                    return Err(invalid(path, "enum is not an array"));
                }
                if !depth_within(value, MAX_DEPTH + 1) {
                    return Err(invalid(
                        path,
                        format!("a value nests deeper than {MAX_DEPTH} levels"),
                    ));
                }
                rule.one_of = Some(pointer(path));
            }
            "const" => {
                if !depth_within(value, MAX_DEPTH) {
                    return Err(invalid(
                        path,
                        format!("the value nests deeper than {MAX_DEPTH} levels"),
                    ));
                }
                rule.constant = Some(pointer(path));
            }
            "minimum" | "maximum" => {
                let Value::Number(n) = value else {
                    return Err(invalid(path, format!("{keyword} is not a number")));
                };
                if keyword == "minimum" {
                    rule.minimum = Some(n.clone());
                } else {
                    rule.maximum = Some(n.clone());
                }
            }
            _ => {
                path.pop();
                continue;
            }
        }
        constrained = true;
        path.pop();
    }
    constrained |= compile_elements(map, &mut rule, path, depth)?;
    // Keys that match a pattern are exempt from `additionalProperties`, and patterns are
    // not read here: it is left unchecked rather than refuse such keys.
    if map.contains_key("patternProperties") {
        rule.additional = None;
    }
    // OpenAPI 3.0's `nullable: true` adds `null` to `type`.
    if let (Some(types), Some(Value::Bool(true))) = (rule.types.as_mut(), map.get("nullable")) {
        *types |= 1;
    }
    Ok(if constrained {
        Node::Rule(Box::new(rule))
    } else {
        Node::Any
    })
}

/// The array keywords of a schema object into `rule.prefix` and `rule.items`: 2020-12's
/// `prefixItems` and `items` (the elements after the prefix), or the older tuple form, an
/// `items` array with `additionalItems` for the rest. Returns whether any was there.
fn compile_elements<'s>(
    map: &'s Map<String, Value>,
    rule: &mut Rule,
    path: &mut Vec<Step<'s>>,
    depth: usize,
) -> Result<bool, SchemaError> {
    let (prefix, rest) = match (map.get_key_value("prefixItems"), map.get_key_value("items")) {
        (Some((keyword, list)), items) => {
            (Some((keyword, list)), items.filter(|(_, v)| !v.is_array()))
        }
        (None, Some((keyword, list))) if list.is_array() => {
            (Some((keyword, list)), map.get_key_value("additionalItems"))
        }
        (None, items) => (None, items),
    };
    if let Some((keyword, list)) = prefix {
        path.push(Step::Key(keyword));
        let Value::Array(list) = list else {
            return Err(invalid(
                path,
                format!("{keyword} is not an array of schemas"),
            ));
        };
        for (i, sub) in list.iter().enumerate() {
            path.push(Step::Index(i));
            rule.prefix.push(compile(sub, path, depth + 1)?);
            path.pop();
        }
        path.pop();
    }
    if let Some((keyword, value)) = rest {
        path.push(Step::Key(keyword));
        rule.items = Some(compile(value, path, depth + 1)?);
        path.pop();
    }
    Ok(prefix.is_some() || rest.is_some())
}

fn compile_types(value: &Value, path: &[Step<'_>]) -> Result<u8, SchemaError> {
    let bit = |name: &str| -> Result<u8, SchemaError> {
        TYPES
            .iter()
            .position(|t| *t == name)
            .map(|i| 1u8 << i)
            .ok_or_else(|| invalid(path, format!("unknown type {name:?}")))
    };
    match value {
        Value::String(name) => bit(name),
        Value::Array(names) if !names.is_empty() => {
            let mut set = 0;
            for name in names {
                let Value::String(name) = name else {
                    return Err(invalid(path, "type is not a name or an array of names"));
                };
                set |= bit(name)?;
            }
            Ok(set)
        }
        Value::Array(_) => Err(invalid(path, "type is an empty array")),
        _ => Err(invalid(path, "type is not a name or an array of names")),
    }
}

fn types_text(set: u8) -> String {
    let names: Vec<&str> = TYPES
        .iter()
        .enumerate()
        .filter(|(i, _)| set & (1 << i) != 0)
        .map(|(_, name)| *name)
        .collect();
    names.join(" or ")
}

fn is_integer(n: &Number) -> bool {
    n.is_i64()
        || n.is_u64()
        || n.as_f64()
            .is_some_and(|f| f.is_finite() && f.fract() == 0.0)
}

/// The type bits `value` has (an integral number is both `number` and `integer`).
fn type_bits(value: &Value) -> u8 {
    match value {
        Value::Null => 1,
        Value::Bool(_) => 1 << 1,
        Value::Object(_) => 1 << 2,
        Value::Array(_) => 1 << 3,
        Value::Number(n) if is_integer(n) => NUMBER | INTEGER,
        Value::Number(_) => NUMBER,
        Value::String(_) => 1 << 6,
    }
}

/// The value of a number written as an integer (every `i64` and `u64` fits an `i128`).
fn integer(n: &Number) -> Option<i128> {
    n.as_i64()
        .map(i128::from)
        .or_else(|| n.as_u64().map(i128::from))
}

/// Two numbers by value, exactly: integers as integers, an integer against a float exactly
/// too (`9007199254740993` is more than `9007199254740992.0`, which it is not as an `f64`),
/// floats as `f64`s.
fn compare(a: &Number, b: &Number) -> Option<Ordering> {
    match (integer(a), integer(b)) {
        (Some(x), Some(y)) => Some(x.cmp(&y)),
        (Some(x), None) => integer_vs_float(x, b.as_f64()?),
        (None, Some(y)) => integer_vs_float(y, a.as_f64()?).map(Ordering::reverse),
        (None, None) => a.as_f64()?.partial_cmp(&b.as_f64()?),
    }
}

/// `int` against `float`, exactly: by the float's integral part (exact as an `i128` below
/// 2^64 in magnitude, and beyond every integer JSON gives otherwise), then its fraction.
fn integer_vs_float(int: i128, float: f64) -> Option<Ordering> {
    const TWO_TO_64: f64 = 18_446_744_073_709_551_616.0;
    if float.is_nan() {
        return None;
    }
    if float >= TWO_TO_64 {
        return Some(Ordering::Less);
    }
    if float <= -TWO_TO_64 {
        return Some(Ordering::Greater);
    }
    let whole = float.trunc();
    // Exact: `whole` is an integer of magnitude below 2^64.
    let whole_int = whole as i128;
    match int.cmp(&whole_int) {
        // Same integral part: the fraction decides (`float - whole` is exact).
        Ordering::Equal => 0.0f64.partial_cmp(&(float - whole)),
        unequal => Some(unequal),
    }
}

/// JSON equality with numbers compared by value. Recurses only while both sides are
/// containers, so no deeper than the schema's value (at most [`MAX_DEPTH`]).
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => compare(x, y) == Some(Ordering::Equal),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        (x, y) => x == y,
    }
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
fn list(values: &[Value]) -> String {
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

fn mismatch(path: &[Step<'_>], expected: impl Into<String>, found: String) -> Mismatch {
    Mismatch {
        path: pointer(path),
        expected: expected.into(),
        found,
    }
}

fn never(path: &[Step<'_>], found: String) -> Mismatch {
    mismatch(path, "nothing (the schema is false)", found)
}

/// Recurses once per schema level (each call descends into a subschema), so at most
/// [`MAX_DEPTH`] deep.
fn check<'v>(
    source: &Value,
    node: &Node,
    value: &'v Value,
    path: &mut Vec<Step<'v>>,
) -> Result<(), Mismatch> {
    let rule = match node {
        Node::Any => return Ok(()),
        Node::Never => return Err(never(path, describe(value))),
        Node::Rule(rule) => rule,
    };
    if let Some(types) = rule.types {
        if type_bits(value) & types == 0 {
            return Err(mismatch(path, types_text(types), describe(value)));
        }
    }
    if let Some(at) = &rule.one_of {
        // Compiled from `source`, so `at` is there (an empty list if it were not).
        let values = source
            .pointer(at)
            .and_then(Value::as_array)
            .map_or(&[][..], Vec::as_slice);
        if !values.iter().any(|v| same(v, value)) {
            return Err(mismatch(
                path,
                format!("one of {}", list(values)),
                describe(value),
            ));
        }
    }
    if let Some(at) = &rule.constant {
        // Compiled from `source`, so the value is there (nothing matches if it were not).
        let constant = source.pointer(at);
        if !constant.is_some_and(|c| same(c, value)) {
            return Err(mismatch(
                path,
                format!("exactly {}", short_json(constant.unwrap_or(&Value::Null))),
                describe(value),
            ));
        }
    }
    if let Value::Number(n) = value {
        if let Some(min) = &rule.minimum {
            if compare(n, min).is_none_or(|o| o == Ordering::Less) {
                return Err(mismatch(path, format!("at least {min}"), describe(value)));
            }
        }
        if let Some(max) = &rule.maximum {
            if compare(n, max).is_none_or(|o| o == Ordering::Greater) {
                return Err(mismatch(path, format!("at most {max}"), describe(value)));
            }
        }
    }
    match value {
        Value::Object(map) => check_object(source, rule, map, path),
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                let Some(item) = rule.prefix.get(i).or(rule.items.as_ref()) else {
                    break;
                };
                path.push(Step::Index(i));
                check(source, item, v, path)?;
                path.pop();
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

fn check_object<'v>(
    source: &Value,
    rule: &Rule,
    map: &'v Map<String, Value>,
    path: &mut Vec<Step<'v>>,
) -> Result<(), Mismatch> {
    for name in &rule.required {
        if !map.contains_key(name) {
            let mut at = pointer(path);
            at.push_str(&pointer(&[Step::Key(name)]));
            return Err(Mismatch {
                path: at,
                expected: "a value (required)".to_owned(),
                found: "nothing".to_owned(),
            });
        }
    }
    for (key, v) in map {
        let sub = match rule.properties.get(key) {
            Some(sub) => sub,
            None => match &rule.additional {
                Some(Node::Never) => {
                    path.push(Step::Key(key));
                    let err = mismatch(
                        path,
                        "no such property (additionalProperties is false)",
                        describe(v),
                    );
                    return Err(err);
                }
                Some(sub) => sub,
                None => continue,
            },
        };
        path.push(Step::Key(key));
        check(source, sub, v, path)?;
        path.pop();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pointers_escape_tilde_and_slash() {
        assert_eq!(
            pointer(&[Step::Key("a/b~c"), Step::Index(3), Step::Key("")]),
            "/a~1b~0c/3/"
        );
    }

    #[test]
    fn depth_within_stops_at_the_limit() {
        let mut v = Value::Null;
        for _ in 0..10 {
            v = Value::Array(vec![v]);
        }
        assert!(depth_within(&v, 10));
        assert!(!depth_within(&v, 9));
    }

    #[test]
    fn numbers_compare_exactly_when_integral() {
        let big = Number::from(u64::MAX);
        let near = Number::from(u64::MAX - 1);
        assert_eq!(compare(&near, &big), Some(Ordering::Less));
        assert_eq!(compare(&Number::from(-1), &big), Some(Ordering::Less));
        let one_f = Number::from_f64(1.0).unwrap();
        assert_eq!(compare(&Number::from(1), &one_f), Some(Ordering::Equal));
    }

    #[test]
    fn an_integer_and_a_float_compare_exactly() {
        let f = |x: f64| Number::from_f64(x).unwrap();
        let i = |x: i64| Number::from(x);
        let two_53 = f(9_007_199_254_740_992.0);
        // 2^53 + 1 is 2^53 as an f64: compared as f64s they would be equal.
        let above = Number::from(9_007_199_254_740_993u64);
        assert_eq!(compare(&above, &two_53), Some(Ordering::Greater));
        assert_eq!(compare(&two_53, &above), Some(Ordering::Less));
        assert_eq!(
            compare(&i(9_007_199_254_740_992), &two_53),
            Some(Ordering::Equal)
        );
        // Fractions on both sides of zero, and -0.0.
        assert_eq!(compare(&i(2), &f(2.5)), Some(Ordering::Less));
        assert_eq!(compare(&i(3), &f(2.5)), Some(Ordering::Greater));
        assert_eq!(compare(&i(-2), &f(-2.5)), Some(Ordering::Greater));
        assert_eq!(compare(&i(-3), &f(-2.5)), Some(Ordering::Less));
        assert_eq!(compare(&i(0), &f(-0.0)), Some(Ordering::Equal));
        assert_eq!(compare(&i(0), &f(0.25)), Some(Ordering::Less));
        // At and past the ends of u64 and i64.
        let max = Number::from(u64::MAX);
        assert_eq!(
            compare(&max, &f(18_446_744_073_709_551_616.0)),
            Some(Ordering::Less)
        );
        assert_eq!(compare(&max, &f(1e300)), Some(Ordering::Less));
        assert_eq!(
            compare(&i(i64::MIN), &f(-9_223_372_036_854_775_808.0)),
            Some(Ordering::Equal)
        );
        assert_eq!(compare(&i(i64::MIN), &f(-1e300)), Some(Ordering::Greater));
        assert_eq!(compare(&f(1.5), &f(2.5)), Some(Ordering::Less));
    }
}
