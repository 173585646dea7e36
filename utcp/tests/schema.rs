//! The JSON Schema of UTCP tools (jsonschema, with UTCP's reading of it): each keyword matched and violated, invalid schemas,
//! the depth limit.

use serde_json::{json, Value};
use ssekit_utcp::{Schema, MAX_DEPTH};

fn schema(json: Value) -> Schema {
    Schema::new(json).unwrap()
}

/// (path, expected, found) of the first mismatch.
fn refused(schema: &Schema, value: Value) -> (String, String, String) {
    let m = schema.validate(&value).unwrap_err();
    (m.path, m.expected, m.found)
}

fn triple(path: &str, expected: &str, found: &str) -> (String, String, String) {
    (path.into(), expected.into(), found.into())
}

#[test]
fn type_names_each_type_and_integer_is_a_number_without_fraction() {
    let cases = [
        ("null", json!(null), json!(0)),
        ("boolean", json!(true), json!("true")),
        ("object", json!({}), json!([])),
        ("array", json!([]), json!({})),
        ("number", json!(1.5), json!("1.5")),
        ("integer", json!(3), json!(3.5)),
        ("string", json!("s"), json!(null)),
    ];
    for (name, good, bad) in cases {
        let s = schema(json!({ "type": name }));
        assert!(s.validate(&good).is_ok(), "{name} accepts {good}");
        let (path, expected, _) = refused(&s, bad.clone());
        assert_eq!(
            (path.as_str(), expected.as_str()),
            ("", name),
            "{name} refuses {bad}"
        );
    }
    let integer = schema(json!({"type": "integer"}));
    assert!(integer.validate(&json!(3.0)).is_ok(), "3.0 is an integer");
    assert!(integer.validate(&json!(u64::MAX)).is_ok());
    assert!(integer.validate(&json!(-7)).is_ok());
    let number = schema(json!({"type": "number"}));
    assert!(number.validate(&json!(3)).is_ok(), "an integer is a number");
    assert_eq!(
        refused(&integer, json!(2.5)),
        triple("", "integer", "number 2.5")
    );
}

#[test]
fn a_type_array_is_any_of_them_and_makes_a_value_nullable() {
    let s = schema(json!({"type": ["string", "null"]}));
    assert!(s.validate(&json!("x")).is_ok());
    assert!(s.validate(&json!(null)).is_ok());
    assert_eq!(
        refused(&s, json!(1)),
        triple("", "null or string", "number 1")
    );
}

#[test]
fn properties_check_present_properties_only() {
    let s = schema(json!({"type": "object", "properties": {"price": {"type": "number"}}}));
    assert!(s.validate(&json!({"price": 1.25})).is_ok());
    assert!(s.validate(&json!({})).is_ok(), "not required");
    assert!(s.validate(&json!({"other": "x"})).is_ok(), "others allowed");
    assert_eq!(
        refused(&s, json!({"price": "1.25"})),
        triple("/price", "number", "string \"1.25\"")
    );
    // Without "type", a non-object passes "properties", as in JSON Schema.
    let untyped = schema(json!({"properties": {"price": {"type": "number"}}}));
    assert!(untyped.validate(&json!("not an object")).is_ok());
}

#[test]
fn required_names_the_missing_property() {
    let s = schema(json!({"type": "object", "required": ["symbol", "price"]}));
    assert!(s.validate(&json!({"symbol": "A", "price": 1})).is_ok());
    assert_eq!(
        refused(&s, json!({"symbol": "A"})),
        triple("/price", "a value (required)", "nothing")
    );
    let nested = schema(json!({"properties": {"quote": {"required": ["a/b"]}}}));
    assert_eq!(
        refused(&nested, json!({"quote": {}})).0,
        "/quote/a~1b",
        "JSON Pointer escapes /"
    );
}

#[test]
fn items_checks_every_element_and_names_its_index() {
    let s = schema(json!({"type": "object", "properties": {
        "ticks": {"type": "array", "items": {"type": "object", "properties": {"p": {"type": "number"}}}}
    }}));
    assert!(s
        .validate(&json!({"ticks": [{"p": 1}, {"p": 2.5}]}))
        .is_ok());
    assert!(s.validate(&json!({"ticks": []})).is_ok());
    assert_eq!(
        refused(&s, json!({"ticks": [{"p": 1}, {"p": true}]})),
        triple("/ticks/1/p", "number", "boolean true")
    );
}

/// 2020-12's `prefixItems` checks the first elements by position and `items` only the
/// rest; the older tuple form (`items` an array, `additionalItems` the rest) likewise.
/// Before, `prefixItems` was ignored and `items` applied to every element, so a closed
/// tuple (`"items": false`) refused every non-empty array.
#[test]
fn prefix_items_check_by_position_and_items_the_rest() {
    let closed = schema(json!({"type": "array",
        "prefixItems": [{"type": "string"}, {"type": "number"}], "items": false}));
    assert!(closed.validate(&json!(["AAPL", 189.5])).is_ok());
    assert!(closed.validate(&json!(["AAPL"])).is_ok(), "shorter is fine");
    assert_eq!(
        refused(&closed, json!([189.5, "AAPL"])),
        triple("/0", "string", "number 189.5")
    );
    assert_eq!(
        refused(&closed, json!(["AAPL", 1, 2])),
        triple("/2", "nothing (the schema is false)", "number 2")
    );
    let open = schema(json!({"prefixItems": [{"type": "string"}], "items": {"type": "integer"}}));
    assert!(open.validate(&json!(["a", 1, 2])).is_ok());
    assert_eq!(
        refused(&open, json!(["a", 1, "b"])),
        triple("/2", "integer", "string \"b\"")
    );
    let old = schema(json!({"items": [{"type": "string"}], "additionalItems": false}));
    assert!(old.validate(&json!(["a"])).is_ok());
    assert_eq!(
        refused(&old, json!([1])),
        triple("/0", "string", "number 1")
    );
    assert_eq!(
        refused(&old, json!(["a", "b"])),
        triple("/1", "nothing (the schema is false)", "string \"b\"")
    );
    // The tuple form alone constrains only its positions.
    let tuple = schema(json!({"items": [{"type": "string"}]}));
    assert!(tuple.validate(&json!(["a", 2])).is_ok());
    assert!(tuple.validate(&json!([1, 2])).is_err());
    assert_eq!(
        Schema::new(json!({"prefixItems": {"type": "string"}}))
            .unwrap_err()
            .path,
        "/prefixItems"
    );
}

/// Keys matching a `patternProperties` pattern are exempt from `additionalProperties`;
/// patterns are not read here, so it is not checked where there are any (before, such a
/// key was refused).
#[test]
fn additional_properties_is_not_checked_beside_pattern_properties() {
    let s = schema(
        json!({"type": "object", "properties": {"symbol": {"type": "string"}},
        "patternProperties": {"^x-": {}}, "additionalProperties": false}),
    );
    assert!(s
        .validate(&json!({"symbol": "AAPL", "x-trace": "abc"}))
        .is_ok());
    assert_eq!(
        refused(&s, json!({"symbol": 1})),
        triple("/symbol", "string", "number 1")
    );
}

#[test]
fn enum_and_const_compare_numbers_by_value() {
    let s = schema(json!({"enum": ["up", "down", 1, null, {"a": [1]}]}));
    for good in [json!("up"), json!(1.0), json!(null), json!({"a": [1.0]})] {
        assert!(s.validate(&good).is_ok(), "{good}");
    }
    assert_eq!(
        refused(&s, json!("sideways")),
        triple(
            "",
            "one of [\"up\", \"down\", 1, null, {\"a\":[1]}]",
            "string \"sideways\""
        )
    );
    let c = schema(json!({"const": {"v": 2}}));
    assert!(c.validate(&json!({"v": 2.0})).is_ok());
    assert_eq!(
        refused(&c, json!({"v": 3})),
        triple("", "exactly {\"v\":2}", "object with 1 properties")
    );
}

/// `enum` and `const` are read where they are in the schema (not copied): under property
/// names that need escaping in a JSON Pointer, the empty name, and `items`.
#[test]
fn enum_and_const_are_read_under_any_property_name() {
    let s = schema(json!({"properties": {
        "a/b~c": {"enum": [1, "x"]},
        "": {"const": {"k": [2]}},
        "list": {"items": {"properties": {"~1": {"const": true}}}}
    }}));
    assert!(s
        .validate(&json!({"a/b~c": 1.0, "": {"k": [2.0]}, "list": [{"~1": true}]}))
        .is_ok());
    assert_eq!(
        refused(&s, json!({"a/b~c": 2})),
        triple("/a~1b~0c", "one of [1, \"x\"]", "number 2")
    );
    assert_eq!(
        refused(&s, json!({"": {"k": [3]}})),
        triple("/", "exactly {\"k\":[2]}", "object with 1 properties")
    );
    assert_eq!(
        refused(&s, json!({"list": [{"~1": true}, {"~1": false}]})),
        triple("/list/1/~01", "exactly true", "boolean false")
    );
}

#[test]
fn additional_properties_false_or_a_schema() {
    let closed = schema(json!({"properties": {"a": {}}, "additionalProperties": false}));
    assert!(closed.validate(&json!({"a": 1})).is_ok());
    assert_eq!(
        refused(&closed, json!({"a": 1, "b": "x"})),
        triple(
            "/b",
            "no such property (additionalProperties is false)",
            "string \"x\""
        )
    );
    let map = schema(json!({"additionalProperties": {"type": "number"}}));
    assert!(map.validate(&json!({"x": 1, "y": 2})).is_ok());
    assert_eq!(
        refused(&map, json!({"x": 1, "y": "2"})),
        triple("/y", "number", "string \"2\"")
    );
}

#[test]
fn minimum_and_maximum_bound_numbers_only() {
    let s = schema(json!({"minimum": 0, "maximum": 10.5}));
    for good in [json!(0), json!(10.5), json!(3), json!("not a number")] {
        assert!(s.validate(&good).is_ok(), "{good}");
    }
    assert_eq!(
        refused(&s, json!(-1)),
        triple("", "at least 0", "number -1")
    );
    assert_eq!(
        refused(&s, json!(11)),
        triple("", "at most 10.5", "number 11")
    );
    let big = schema(json!({"maximum": u64::MAX - 1}));
    assert!(
        big.validate(&json!(u64::MAX)).is_err(),
        "exact for integers"
    );
}

/// Integers past 2^53 are not rounded to an `f64` when compared with a float, in
/// `minimum`, `maximum`, `const` and `enum` (2^53 + 1 as an `f64` is 2^53).
#[test]
fn an_integer_past_2_pow_53_and_a_float_compare_exactly() {
    let two_53 = serde_json::Number::from_f64(9_007_199_254_740_992.0).unwrap();
    let above = json!(9_007_199_254_740_993u64);
    let below = json!(9_007_199_254_740_991u64);
    let max = schema(json!({ "maximum": two_53 }));
    assert_eq!(
        refused(&max, above.clone()),
        triple("", "at most 9007199254740992.0", "number 9007199254740993")
    );
    assert!(max.validate(&json!(9_007_199_254_740_992u64)).is_ok());
    let min = schema(json!({"minimum": 9_007_199_254_740_993u64}));
    assert_eq!(
        refused(&min, json!(two_53)),
        triple("", "at least 9007199254740993", "number 9007199254740992.0")
    );
    assert!(min.validate(&above).is_ok());
    for keyword in [json!({ "const": two_53 }), json!({ "enum": [two_53] })] {
        let s = schema(keyword.clone());
        assert!(s.validate(&above).is_err(), "{keyword}");
        assert!(s.validate(&below).is_err(), "{keyword}");
        assert!(
            s.validate(&json!(9_007_199_254_740_992u64)).is_ok(),
            "{keyword}"
        );
    }
    // Past u64: 2^64 as a float is more than every integer JSON gives.
    let top = schema(json!({"maximum": u64::MAX}));
    assert!(top
        .validate(&json!(18_446_744_073_709_551_616.0f64))
        .is_err());
    // Two integers were already exact.
    let c = schema(json!({"const": 9_007_199_254_740_993u64}));
    assert!(c.validate(&json!(9_007_199_254_740_992u64)).is_err());
}

#[test]
fn boolean_schemas_and_the_keywords_the_old_subset_ignored() {
    assert!(schema(json!(true)).validate(&json!([1])).is_ok());
    assert!(schema(json!({})).validate(&json!([1])).is_ok());
    assert_eq!(
        refused(&schema(json!(false)), json!(1)),
        triple("", "nothing (the schema is false)", "number 1")
    );
    // The hand-written subset ignored these: jsonschema checks them.
    let s = schema(json!({
        "type": "string", "minLength": 2, "maxLength": 4, "pattern": "^x",
        "format": "date-time", "description": "d"
    }));
    assert!(
        s.validate(&json!("xab")).is_ok(),
        "format is an annotation in 2020-12"
    );
    assert_eq!(
        refused(&s, json!("x")),
        triple("", "at least 2 characters", "string \"x\"")
    );
    assert_eq!(
        refused(&s, json!("xabcd")),
        triple("", "at most 4 characters", "string \"xabcd\"")
    );
    assert_eq!(
        refused(&s, json!("ab")),
        triple("", "a string matching \"^x\"", "string \"ab\"")
    );
    let any_of = schema(json!({"anyOf": [{"type": "number"}, {"type": "string"}]}));
    assert!(any_of.validate(&json!(1)).is_ok());
    assert_eq!(
        refused(&any_of, json!(null)),
        triple("", "a match for one of the anyOf schemas", "null")
    );
    let with_ref = schema(json!({"$defs": {"price": {"type": "number", "minimum": 0}},
        "properties": {"p": {"$ref": "#/$defs/price"}}}));
    assert_eq!(
        refused(&with_ref, json!({"p": -1})),
        triple("/p", "at least 0", "number -1")
    );
    // OpenAPI's `nullable: true` adds `null` to the type.
    let nullable = schema(json!({"type": "string", "nullable": true}));
    assert!(nullable.validate(&json!(null)).is_ok());
    assert!(nullable.validate(&json!(1)).is_err());
    assert!(schema(json!({"type": "string", "nullable": false}))
        .validate(&json!(null))
        .is_err());
}

#[test]
fn a_schema_of_a_wrong_form_or_out_of_bounds_is_refused() {
    for (bad, path, problem_starts) in [
        (json!(5), "", "5 is not of types"),
        (json!({"type": "strin"}), "/type", "unknown type \"strin\""),
        (
            json!({"type": ["string", "nul"]}),
            "/type",
            "unknown type \"nul\"",
        ),
        (json!({"type": 5}), "/type", ""),
        (json!({"required": "a"}), "/required", ""),
        (json!({"properties": []}), "/properties", ""),
        (json!({"enum": "a"}), "/enum", ""),
        (json!({"minimum": "0"}), "/minimum", ""),
        (
            json!({"properties": {"p": {"items": {"type": "numbr"}}}}),
            "/properties/p/items/type",
            "unknown type \"numbr\"",
        ),
        // No remote document is fetched; a pattern the linear-time engine cannot run
        // (a backreference) is refused rather than run by a backtracking one.
        (json!({"$ref": "https://example.com/schema.json"}), "", ""),
        (json!({"pattern": "(a)\\1"}), "/pattern", ""),
        (json!({"$ref": "#/nowhere"}), "", ""),
    ] {
        let err = Schema::new(bad.clone()).unwrap_err();
        assert_eq!(err.path, path, "{bad}: {err}");
        assert!(err.problem.starts_with(problem_starts), "{bad}: {err}");
    }
}

fn nested_items(levels: usize) -> Value {
    let mut s = json!({"type": "number"});
    for _ in 0..levels {
        s = json!({"type": "array", "items": s});
    }
    s
}

#[test]
fn schemas_nest_at_most_max_depth_levels() {
    assert_eq!(MAX_DEPTH, 32);
    let deepest = schema(nested_items(MAX_DEPTH));
    let mut value = json!(1);
    for _ in 0..MAX_DEPTH {
        value = json!([value]);
    }
    assert!(deepest.validate(&value).is_ok());
    let err = Schema::new(nested_items(MAX_DEPTH + 1)).unwrap_err();
    assert_eq!(err.problem, "subschemas nest deeper than 32 levels");
    assert_eq!(err.path, "/items".repeat(MAX_DEPTH + 1));
    // properties and additionalProperties count as levels too.
    let mut props = json!({});
    for _ in 0..=MAX_DEPTH {
        props = json!({"additionalProperties": {"properties": {"p": props}}});
    }
    assert!(Schema::new(props).is_err());
    // enum and const values are bounded too (they are compared recursively).
    let mut deep = json!(1);
    for _ in 0..=MAX_DEPTH {
        deep = json!([deep]);
    }
    assert!(Schema::new(json!({"const": deep})).is_err());
    assert!(Schema::new(json!({"enum": [deep]})).is_err());
    assert!(Schema::new(json!({"enum": [deep[0]]})).is_ok());
}

/// Takes a nested array apart without serde_json's recursive drop.
fn dismantle(mut v: Value) {
    while let Value::Array(mut items) = v {
        match items.pop() {
            Some(inner) => v = inner,
            None => return,
        }
    }
}

#[test]
fn a_hostile_schema_or_payload_does_not_recurse_past_the_limit() {
    // On a 1 MiB stack: checking a payload 100 000 arrays deep would overflow it if the
    // check followed the payload rather than the schema.
    let worker = std::thread::Builder::new()
        .stack_size(1024 * 1024)
        .spawn(|| {
            let mut payload = json!(1);
            for _ in 0..100_000 {
                payload = Value::Array(vec![payload]);
            }
            let shallow = Schema::new(nested_items(MAX_DEPTH)).unwrap();
            let m = shallow.validate(&payload).unwrap_err();
            assert_eq!(m.found, "array of 1 items");
            assert_eq!(m.path, "/0".repeat(MAX_DEPTH));
            let with_enum = Schema::new(json!({"enum": [[[[1]]]]})).unwrap();
            assert!(with_enum.validate(&payload).is_err());
            assert!(Schema::any().validate(&payload).is_ok());
            dismantle(payload);
            // The deepest schema JSON text can carry (serde_json refuses 128 levels),
            // through subschemas and through an ignored keyword.
            let text = format!("{}{{}}{}", r#"{"items":"#.repeat(126), "}".repeat(126));
            let err = Schema::new(serde_json::from_str(&text).unwrap()).unwrap_err();
            assert_eq!(err.problem, "subschemas nest deeper than 32 levels");
            let text = format!(r#"{{"examples":{}1{}}}"#, "[".repeat(126), "]".repeat(126));
            assert!(Schema::new(serde_json::from_str(&text).unwrap()).is_ok());
        })
        .unwrap();
    worker.join().unwrap();
}

#[test]
fn long_values_are_cut_in_messages() {
    let s = schema(json!({"type": "number"}));
    let found = refused(&s, json!("é".repeat(1000))).2;
    assert_eq!(found, format!("string \"{}…\"", "é".repeat(40)));
}
