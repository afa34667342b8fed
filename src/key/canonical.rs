//! The one canonical serialization that keys are computed over.
//!
//! Rules (changing any of them changes every key, so bump `KEY_SCHEMA_VERSION`):
//! - JSON, UTF-8, no whitespace outside strings;
//! - object keys sorted by their UTF-8 bytes, at every depth;
//! - strings escaped as `serde_json` escapes them (only `"`, `\` and control characters);
//! - integers in decimal; floats in the shortest form that reads back to the
//!   same `f64` (`serde_json`'s ryu), with `-0.0` written as `0.0`, so one value
//!   has one spelling on every machine;
//! - `null` for absent optional values, so adding a field is a visible schema
//!   change; except for fields added later with their old behaviour as default
//!   (`arrival`, a ShareGPT `conversion`, an engine `image`): those are left
//!   out at that default, so every key made before them stays as it was.

use serde_json::Value;

/// Canonical text of a JSON value.
pub fn to_canonical_json(value: &Value) -> String {
    let mut out = Vec::with_capacity(1024);
    write(value, &mut out);
    String::from_utf8(out).expect("JSON text is UTF-8")
}

/// Writes `value` to `out`: strings and scalars as `serde_json` writes them
/// (straight into `out`, no text of their own), objects with sorted keys.
fn write(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
            out.push(b'{');
            for (i, (k, v)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                scalar(k, out);
                out.push(b':');
                write(v, out);
            }
            out.push(b'}');
        }
        Value::Array(items) => {
            out.push(b'[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write(v, out);
            }
            out.push(b']');
        }
        Value::Number(n) => match n.as_f64() {
            Some(f) if n.is_f64() && f == 0.0 => out.extend_from_slice(b"0.0"),
            _ => scalar(n, out),
        },
        other => scalar(other, out),
    }
}

fn scalar(value: &(impl serde::Serialize + ?Sized), out: &mut Vec<u8>) {
    serde_json::to_writer(out, value).expect("writing JSON to memory cannot fail");
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sorts_keys_at_every_depth_and_drops_whitespace() {
        let v = json!({"b": 1, "a": {"z": [1, 2.5, "x"], "y": null}});
        assert_eq!(
            to_canonical_json(&v),
            r#"{"a":{"y":null,"z":[1,2.5,"x"]},"b":1}"#
        );
    }

    #[test]
    fn one_spelling_per_number() {
        assert_eq!(to_canonical_json(&json!(-0.0)), "0.0");
        assert_eq!(to_canonical_json(&json!(0.1)), "0.1");
        assert_eq!(to_canonical_json(&json!(1e21)), "1e+21");
        assert_eq!(to_canonical_json(&json!(42)), "42");
    }
}
