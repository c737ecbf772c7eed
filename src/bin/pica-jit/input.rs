//! Parsing the `run` command's JSON input (contract in the README).

use crate::error::CliError;
use pica_jit::{Uniforms, UnitState, Vec4};
use serde_json::{Map, Value};

/// The parsed input: uniform overrides, the starting state and the vertices.
pub struct RunInput {
    pub float_uniforms: Vec<(usize, Vec4)>,
    pub int_uniforms: Vec<(usize, [u8; 4])>,
    pub bool_uniforms: Vec<(usize, bool)>,
    pub state: UnitState,
    pub vertices: Vec<Vec<(usize, Vec4)>>,
}

impl RunInput {
    /// Applies the uniform overrides on top of `uniforms`.
    pub fn apply(&self, uniforms: &mut Uniforms) {
        for &(n, v) in &self.float_uniforms {
            uniforms.f[n] = v;
        }
        for &(n, v) in &self.int_uniforms {
            uniforms.i[n] = v;
        }
        for &(n, v) in &self.bool_uniforms {
            uniforms.b[n] = v;
        }
    }
}

fn object<'a>(v: &'a Value, path: &str) -> Result<&'a Map<String, Value>, CliError> {
    v.as_object()
        .ok_or_else(|| CliError::input(path, "expected a JSON object"))
}

fn check_keys(map: &Map<String, Value>, path: &str, allowed: &[&str]) -> Result<(), CliError> {
    for key in map.keys() {
        if !allowed.contains(&key.as_str()) {
            return Err(CliError::input(
                path,
                format!(
                    "unknown field `{key}` (expected one of: {})",
                    allowed.join(", ")
                ),
            ));
        }
    }
    Ok(())
}

fn index(key: &str, path: &str, limit: usize) -> Result<usize, CliError> {
    let ok = !key.is_empty() && key.len() <= 3 && key.bytes().all(|b| b.is_ascii_digit());
    match key.parse::<usize>() {
        Ok(n) if ok && n < limit => Ok(n),
        _ => Err(CliError::input(
            path,
            format!(
                "register key `{key}` must be a decimal number 0-{}",
                limit - 1
            ),
        )),
    }
}

/// A float component: a JSON number, or exactly 8 hex digits of raw f32 bits.
pub fn component(v: &Value, path: &str) -> Result<f32, CliError> {
    match v {
        Value::Number(n) => n
            .as_f64()
            .map(|x| x as f32)
            .ok_or_else(|| CliError::input(path, "number out of range")),
        Value::String(s) if s.len() == 8 && s.bytes().all(|b| b.is_ascii_hexdigit()) => {
            Ok(f32::from_bits(
                u32::from_str_radix(s, 16).map_err(|_| CliError::input(path, "bad hex"))?,
            ))
        }
        _ => Err(CliError::input(
            path,
            "expected a number or a string of exactly 8 hex digits (raw f32 bits)",
        )),
    }
}

fn vec4(v: &Value, path: &str) -> Result<Vec4, CliError> {
    let items = v
        .as_array()
        .filter(|a| a.len() == 4)
        .ok_or_else(|| CliError::input(path, "expected [x, y, z, w]"))?;
    let mut out = [0.0; 4];
    for (i, item) in items.iter().enumerate() {
        out[i] = component(item, &format!("{path}[{i}]"))?;
    }
    Ok(out)
}

fn int4(v: &Value, path: &str) -> Result<[u8; 4], CliError> {
    let items = v
        .as_array()
        .filter(|a| a.len() == 4)
        .ok_or_else(|| CliError::input(path, "expected [x, y, z, w]"))?;
    let mut out = [0u8; 4];
    for (i, item) in items.iter().enumerate() {
        out[i] = item
            .as_u64()
            .and_then(|n| u8::try_from(n).ok())
            .ok_or_else(|| CliError::input(&format!("{path}[{i}]"), "expected an integer 0-255"))?;
    }
    Ok(out)
}

fn boolean(v: &Value, path: &str) -> Result<bool, CliError> {
    v.as_bool()
        .ok_or_else(|| CliError::input(path, "expected true or false"))
}

fn integer(v: &Value, path: &str) -> Result<i32, CliError> {
    v.as_i64()
        .and_then(|n| i32::try_from(n).ok())
        .ok_or_else(|| CliError::input(path, "expected a 32-bit signed integer"))
}

fn registers<T>(
    v: &Value,
    path: &str,
    limit: usize,
    parse: impl Fn(&Value, &str) -> Result<T, CliError>,
) -> Result<Vec<(usize, T)>, CliError> {
    let map = object(v, path)?;
    map.iter()
        .map(|(key, value)| {
            let p = format!("{path}.{key}");
            Ok((index(key, &p, limit)?, parse(value, &p)?))
        })
        .collect()
}

/// Parses the JSON text of a `run` input.
/// A JSON value walked only to find an object that repeats a key
/// (`serde_json::Value` would silently keep the last one).
struct NoDuplicateKeys;

impl<'de> serde::Deserialize<'de> for NoDuplicateKeys {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(NoDuplicateKeysVisitor)
    }
}

struct NoDuplicateKeysVisitor;

impl<'de> serde::de::Visitor<'de> for NoDuplicateKeysVisitor {
    type Value = NoDuplicateKeys;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<NoDuplicateKeys, E> {
        Ok(NoDuplicateKeys)
    }
    fn visit_i64<E>(self, _: i64) -> Result<NoDuplicateKeys, E> {
        Ok(NoDuplicateKeys)
    }
    fn visit_u64<E>(self, _: u64) -> Result<NoDuplicateKeys, E> {
        Ok(NoDuplicateKeys)
    }
    fn visit_f64<E>(self, _: f64) -> Result<NoDuplicateKeys, E> {
        Ok(NoDuplicateKeys)
    }
    fn visit_str<E>(self, _: &str) -> Result<NoDuplicateKeys, E> {
        Ok(NoDuplicateKeys)
    }
    fn visit_unit<E>(self) -> Result<NoDuplicateKeys, E> {
        Ok(NoDuplicateKeys)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(
        self,
        mut seq: A,
    ) -> Result<NoDuplicateKeys, A::Error> {
        while seq.next_element::<NoDuplicateKeys>()?.is_some() {}
        Ok(NoDuplicateKeys)
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(
        self,
        mut map: A,
    ) -> Result<NoDuplicateKeys, A::Error> {
        let mut seen = std::collections::HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            if !seen.insert(key.clone()) {
                return Err(serde::de::Error::custom(format!("duplicate key \"{key}\"")));
            }
            map.next_value::<NoDuplicateKeys>()?;
        }
        Ok(NoDuplicateKeys)
    }
}

pub fn parse(text: &str) -> Result<RunInput, CliError> {
    serde_json::from_str::<NoDuplicateKeys>(text)?;
    let root: Value = serde_json::from_str(text)?;
    let root = object(&root, "$")?;
    check_keys(root, "$", &["uniforms", "state", "vertices"])?;
    let mut input = RunInput {
        float_uniforms: vec![],
        int_uniforms: vec![],
        bool_uniforms: vec![],
        state: UnitState::default(),
        vertices: vec![],
    };
    if let Some(u) = root.get("uniforms") {
        let u = object(u, "$.uniforms")?;
        check_keys(u, "$.uniforms", &["f", "i", "b"])?;
        if let Some(f) = u.get("f") {
            input.float_uniforms = registers(f, "$.uniforms.f", 96, vec4)?;
        }
        if let Some(i) = u.get("i") {
            input.int_uniforms = registers(i, "$.uniforms.i", 4, int4)?;
        }
        if let Some(b) = u.get("b") {
            input.bool_uniforms = registers(b, "$.uniforms.b", 16, boolean)?;
        }
    }
    if let Some(s) = root.get("state") {
        let s = object(s, "$.state")?;
        check_keys(s, "$.state", &["r", "a0", "aL", "cc"])?;
        if let Some(r) = s.get("r") {
            for (n, v) in registers(r, "$.state.r", 16, vec4)? {
                input.state.temps[n] = v;
            }
        }
        if let Some(a0) = s.get("a0") {
            let items = a0
                .as_array()
                .filter(|a| a.len() == 2)
                .ok_or_else(|| CliError::input("$.state.a0", "expected [x, y]"))?;
            input.state.a0 = [
                integer(&items[0], "$.state.a0[0]")?,
                integer(&items[1], "$.state.a0[1]")?,
            ];
        }
        if let Some(al) = s.get("aL") {
            input.state.al = integer(al, "$.state.aL")?;
        }
        if let Some(cc) = s.get("cc") {
            let items = cc
                .as_array()
                .filter(|a| a.len() == 2)
                .ok_or_else(|| CliError::input("$.state.cc", "expected [x, y]"))?;
            input.state.cmp = [
                boolean(&items[0], "$.state.cc[0]")?,
                boolean(&items[1], "$.state.cc[1]")?,
            ];
        }
    }
    if let Some(vs) = root.get("vertices") {
        let vs = vs
            .as_array()
            .ok_or_else(|| CliError::input("$.vertices", "expected an array of objects"))?;
        for (k, v) in vs.iter().enumerate() {
            input
                .vertices
                .push(registers(v, &format!("$.vertices[{k}]"), 16, vec4)?);
        }
    }
    Ok(input)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn components_accept_numbers_and_raw_bits() {
        assert_eq!(component(&serde_json::json!(1.5), "p").unwrap(), 1.5);
        assert_eq!(
            component(&serde_json::json!("7fc00001"), "p")
                .unwrap()
                .to_bits(),
            0x7fc0_0001
        );
        assert_eq!(
            component(&serde_json::json!("FF800000"), "p").unwrap(),
            f32::NEG_INFINITY
        );
        assert!(component(&serde_json::json!("7fc0000"), "p").is_err());
        assert!(component(&serde_json::json!("0x7fc000"), "p").is_err());
        assert!(component(&serde_json::json!(true), "p").is_err());
        // Beyond f32 range rounds to infinity, as an f64 -> f32 conversion does.
        assert_eq!(
            component(&serde_json::json!(1e300), "p").unwrap(),
            f32::INFINITY
        );
    }

    #[test]
    fn full_input_parses() {
        let input = parse(
            r#"{"uniforms": {"f": {"95": [1, 2, 3, "3f800000"]}, "i": {"3": [1, 2, 3, 255]}, "b": {"15": true}},
                "state": {"r": {"2": [0, 0, 0, -1]}, "a0": [-5, 7], "aL": 300, "cc": [false, true]},
                "vertices": [{"0": [1, 2, 3, 4]}, {}]}"#,
        )
        .unwrap();
        assert_eq!(input.float_uniforms, vec![(95, [1.0, 2.0, 3.0, 1.0])]);
        assert_eq!(input.int_uniforms, vec![(3, [1, 2, 3, 255])]);
        assert_eq!(input.bool_uniforms, vec![(15, true)]);
        assert_eq!(input.state.temps[2], [0.0, 0.0, 0.0, -1.0]);
        assert_eq!(input.state.a0, [-5, 7]);
        assert_eq!(input.state.al, 300);
        assert_eq!(input.state.cmp, [false, true]);
        assert_eq!(input.vertices.len(), 2);
        assert_eq!(input.vertices[0], vec![(0, [1.0, 2.0, 3.0, 4.0])]);
    }

    #[test]
    fn malformed_inputs_are_rejected_with_a_path() {
        for (text, needle) in [
            ("[]", "$"),
            ("{\"unifroms\": {}}", "unknown field `unifroms`"),
            (
                "{\"uniforms\": {\"f\": {\"96\": [0,0,0,0]}}}",
                "$.uniforms.f.96",
            ),
            (
                "{\"uniforms\": {\"f\": {\"c1\": [0,0,0,0]}}}",
                "register key `c1`",
            ),
            (
                "{\"uniforms\": {\"f\": {\"1\": [0,0,0]}}}",
                "expected [x, y, z, w]",
            ),
            (
                "{\"uniforms\": {\"i\": {\"0\": [0,0,0,256]}}}",
                "$.uniforms.i.0[3]",
            ),
            ("{\"uniforms\": {\"b\": {\"16\": true}}}", "$.uniforms.b.16"),
            ("{\"state\": {\"a0\": [1]}}", "$.state.a0"),
            ("{\"state\": {\"aL\": 1.5}}", "$.state.aL"),
            ("{\"state\": {\"cc\": [1, 0]}}", "$.state.cc[0]"),
            ("{\"vertices\": {}}", "$.vertices"),
            ("{\"vertices\": [{\"16\": [0,0,0,0]}]}", "$.vertices[0].16"),
        ] {
            let err = parse(text)
                .err()
                .unwrap_or_else(|| panic!("{text} parsed"))
                .to_string();
            assert!(err.contains(needle), "{text}: {err}");
        }
        assert!(matches!(parse("{"), Err(CliError::Json(_))));
    }
}
