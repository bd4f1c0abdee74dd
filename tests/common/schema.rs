//! A JSON Schema validator for the keywords docs/result-schema.json uses
//! (`type`, `enum`, `minimum`, `maximum`, `required`, `properties`,
//! `additionalProperties`, `items`, `oneOf`, `$ref` into `$defs`), with their
//! 2020-12 meaning. A schema that uses any other keyword is refused, so a
//! rule the schema states is never silently left unchecked. A full
//! validator crate took four minutes of the suite's build for these ten.

use serde_json::{Map, Value};

/// Keywords that only annotate: nothing to check.
const ANNOTATIONS: [&str; 5] = ["$schema", "$id", "$defs", "title", "description"];

/// Every way `value` breaks `schema`, each as `<JSON pointer>: <what>`.
pub fn errors(schema: &Value, value: &Value) -> Vec<String> {
    let mut found = Vec::new();
    check(schema, schema, value, "", &mut found);
    found
}

fn check(root: &Value, schema: &Value, value: &Value, at: &str, found: &mut Vec<String>) {
    let rules = match schema {
        Value::Bool(true) => return,
        Value::Bool(false) => return found.push(format!("{at}: nothing is allowed here")),
        Value::Object(rules) => rules,
        other => panic!("{at}: a schema is an object or a boolean, not {other}"),
    };
    for (keyword, rule) in rules {
        match keyword.as_str() {
            k if ANNOTATIONS.contains(&k) => {}
            "$ref" => check(root, resolve(root, rule), value, at, found),
            "type" => check_type(rule, value, at, found),
            "enum" => {
                let allowed = rule.as_array().expect("enum is an array");
                if !allowed.contains(value) {
                    found.push(format!("{at}: {value} is not one of {rule}"));
                }
            }
            "minimum" => {
                let least = rule.as_f64().expect("minimum is a number");
                if value.as_f64().is_some_and(|v| v < least) {
                    found.push(format!("{at}: {value} is less than the minimum of {least}"));
                }
            }
            "maximum" => {
                let most = rule.as_f64().expect("maximum is a number");
                if value.as_f64().is_some_and(|v| v > most) {
                    found.push(format!("{at}: {value} is more than the maximum of {most}"));
                }
            }
            "required" => {
                if let Value::Object(fields) = value {
                    for name in rule.as_array().expect("required is an array") {
                        let name = name.as_str().expect("required names are strings");
                        if !fields.contains_key(name) {
                            found.push(format!("{at}: \"{name}\" is a required property"));
                        }
                    }
                }
            }
            "properties" => {
                if let Value::Object(fields) = value {
                    let known = rule.as_object().expect("properties is an object");
                    for (name, sub) in known {
                        if let Some(field) = fields.get(name) {
                            check(root, sub, field, &format!("{at}/{name}"), found);
                        }
                    }
                }
            }
            "additionalProperties" => {
                if let Value::Object(fields) = value {
                    let known = rules.get("properties").and_then(Value::as_object);
                    check_additional(root, rule, known, fields, at, found);
                }
            }
            "items" => {
                if let Value::Array(items) = value {
                    for (i, item) in items.iter().enumerate() {
                        check(root, rule, item, &format!("{at}/{i}"), found);
                    }
                }
            }
            "oneOf" => {
                let options = rule.as_array().expect("oneOf is an array");
                let passing = options
                    .iter()
                    .filter(|option| {
                        let mut none = Vec::new();
                        check(root, option, value, at, &mut none);
                        none.is_empty()
                    })
                    .count();
                if passing != 1 {
                    found.push(format!(
                        "{at}: {passing} of the oneOf schemas match, where exactly one must"
                    ));
                }
            }
            other => panic!("{at}: the schema uses '{other}', which this validator does not check"),
        }
    }
}

fn check_additional(
    root: &Value,
    rule: &Value,
    known: Option<&Map<String, Value>>,
    fields: &Map<String, Value>,
    at: &str,
    found: &mut Vec<String>,
) {
    for (name, field) in fields {
        if known.is_some_and(|k| k.contains_key(name)) {
            continue;
        }
        match rule {
            Value::Bool(false) => found.push(format!(
                "{at}: additional property \"{name}\" is not allowed"
            )),
            sub => check(root, sub, field, &format!("{at}/{name}"), found),
        }
    }
}

fn check_type(rule: &Value, value: &Value, at: &str, found: &mut Vec<String>) {
    let is = |name: &str| match name {
        "null" => value.is_null(),
        "boolean" => value.is_boolean(),
        "object" => value.is_object(),
        "array" => value.is_array(),
        "string" => value.is_string(),
        "number" => value.is_number(),
        "integer" => {
            value.is_i64() || value.is_u64() || value.as_f64().is_some_and(|v| v.fract() == 0.0)
        }
        other => panic!("{at}: unknown type '{other}'"),
    };
    let ok = match rule {
        Value::String(name) => is(name),
        Value::Array(names) => names.iter().any(|n| is(n.as_str().expect("type names"))),
        other => panic!("{at}: type is a name or a list of names, not {other}"),
    };
    if !ok {
        found.push(format!("{at}: {value} is not of type {rule}"));
    }
}

/// The schema a `$ref` names: `#/$defs/NAME` (or any JSON pointer from the
/// root document).
fn resolve<'a>(root: &'a Value, reference: &Value) -> &'a Value {
    let reference = reference.as_str().expect("$ref is a string");
    let pointer = reference
        .strip_prefix('#')
        .unwrap_or_else(|| panic!("only local references are supported: {reference}"));
    root.pointer(pointer)
        .unwrap_or_else(|| panic!("$ref {reference} names nothing in the schema"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_keyword_refuses_what_it_forbids() {
        let schema = json!({
            "$defs": {"count": {"type": "integer", "minimum": 1, "maximum": 9}},
            "type": "object",
            "required": ["n", "kind"],
            "additionalProperties": false,
            "properties": {
                "n": {"$ref": "#/$defs/count"},
                "kind": {"enum": ["a", "b"]},
                "list": {"type": "array", "items": {"type": ["string", "null"]}},
                "one": {"oneOf": [{"required": ["x"]}, {"required": ["y"]}]}
            }
        });
        let good = json!({"n": 2, "kind": "a", "list": ["s", null], "one": {"x": 1}});
        assert!(
            errors(&schema, &good).is_empty(),
            "{:?}",
            errors(&schema, &good)
        );
        for (bad, at) in [
            (json!({"n": 0, "kind": "a"}), "/n"),
            (json!({"n": 10, "kind": "a"}), "/n"),
            (json!({"n": 1.5, "kind": "a"}), "/n"),
            (json!({"n": 1, "kind": "c"}), "/kind"),
            (json!({"n": 1}), ": \"kind\""),
            (json!({"n": 1, "kind": "a", "extra": 1}), "\"extra\""),
            (json!({"n": 1, "kind": "a", "list": [3]}), "/list/0"),
            (
                json!({"n": 1, "kind": "a", "one": {"x": 1, "y": 2}}),
                "/one",
            ),
            (json!({"n": 1, "kind": "a", "one": {}}), "/one"),
        ] {
            let found = errors(&schema, &bad);
            assert!(found.iter().any(|e| e.contains(at)), "{bad}: {found:?}");
        }
    }

    #[test]
    #[should_panic(expected = "does not check")]
    fn an_unknown_keyword_is_refused() {
        errors(&json!({"pattern": "^a"}), &json!("b"));
    }
}
