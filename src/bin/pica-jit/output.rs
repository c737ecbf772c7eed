//! Formatting `run` results: the contract's JSON, or a table for people.

use pica_jit::shbin::Dvle;
use pica_jit::{EmittedVertex, ShaderKind, Stop, UnitState, Vec4};
use serde_json::{Value, json};
use std::fmt::Write as _;

/// A float as 8 lowercase hex digits of its f32 bits.
pub fn hex(x: f32) -> String {
    format!("{:08x}", x.to_bits())
}

fn registers(regs: &[Vec4]) -> Value {
    Value::Array(
        regs.iter()
            .map(|r| Value::Array(r.iter().map(|&x| Value::String(hex(x))).collect()))
            .collect(),
    )
}

fn emit(e: &EmittedVertex) -> Value {
    json!({
        "vertex_id": e.vertex_id,
        "primitive": e.primitive,
        "winding": e.winding,
        "o": registers(&e.outputs),
    })
}

/// One invocation's result object.
pub fn result(stop: Stop, state: &UnitState, emits: &[EmittedVertex]) -> Value {
    json!({
        "status": stop.status().name(),
        "stop": stop.name(),
        "o": registers(&state.outputs),
        "r": registers(&state.temps),
        "a0": [state.a0[0], state.a0[1]],
        "aL": state.al,
        "cc": [state.cmp[0], state.cmp[1]],
        "emits": emits.iter().map(emit).collect::<Vec<_>>(),
    })
}

/// What the table's first line says about the run.
pub struct TableHeader<'a> {
    pub file: &'a str,
    pub dvle_index: usize,
    pub dvle: &'a Dvle,
    pub engine: &'a str,
    pub precision: &'a str,
}

/// The declared outputs of `dvle`'s table, one line each: register, mask,
/// semantic name and the lanes' decimal values.
fn output_lines(text: &mut String, dvle: &Dvle, outputs: &[Vec4], indent: &str) {
    if dvle.outputs.is_empty() {
        let _ = writeln!(text, "{indent}(this DVLE declares no outputs)");
    }
    for entry in &dvle.outputs {
        let Some(value) = outputs.get(usize::from(entry.register)) else {
            continue;
        };
        let mut lanes = String::new();
        let mut values = Vec::new();
        for (lane, name) in ['x', 'y', 'z', 'w'].iter().enumerate() {
            if entry.mask & (1 << lane) != 0 {
                lanes.push(*name);
                values.push(format!("{:>12}", format!("{:?}", value[lane])));
            }
        }
        let reg = format!("o{}.{lanes}", entry.register);
        let _ = writeln!(
            text,
            "{indent}{reg:<8} {:<11}{}",
            entry.semantic_name(),
            values.join("")
        );
    }
}

/// The human-readable form of a run: decimal values of the outputs the DVLE
/// declares, named by semantic; emitted vertices for geometry shaders.
pub fn table(header: &TableHeader<'_>, runs: &[(Stop, UnitState, Vec<EmittedVertex>)]) -> String {
    let mut text = String::new();
    let kind = match header.dvle.kind {
        ShaderKind::Vertex => "vertex shader",
        ShaderKind::Geometry => "geometry shader",
    };
    let _ = writeln!(
        text,
        "{} DVLE {} ({kind}), engine {}, precision {}: {} invocation(s)",
        header.file,
        header.dvle_index,
        header.engine,
        header.precision,
        runs.len()
    );
    for (i, (stop, state, emits)) in runs.iter().enumerate() {
        let _ = writeln!(
            text,
            "vertex {i}: {} ({})",
            stop.status().name(),
            stop.name()
        );
        if header.dvle.kind == ShaderKind::Geometry {
            if emits.is_empty() {
                let _ = writeln!(text, "  no vertex emitted");
            }
            for (k, e) in emits.iter().enumerate() {
                let _ = writeln!(
                    text,
                    "  emit {k}: vertex slot {}{}{}",
                    e.vertex_id,
                    if e.primitive {
                        ", ends a primitive"
                    } else {
                        ""
                    },
                    if e.winding { ", inverted winding" } else { "" }
                );
                output_lines(&mut text, header.dvle, &e.outputs, "    ");
            }
        } else {
            output_lines(&mut text, header.dvle, &state.outputs, "  ");
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_are_lowercase_hex_bits() {
        assert_eq!(hex(1.0), "3f800000");
        assert_eq!(hex(-0.0), "80000000");
        assert_eq!(hex(f32::from_bits(0x7FC0_0000)), "7fc00000");
        assert_eq!(hex(f32::NEG_INFINITY), "ff800000");
    }

    #[test]
    fn result_has_the_contract_fields() {
        let mut state = UnitState::default();
        state.outputs[3] = [1.0, 2.0, 0.5, -1.0];
        state.a0 = [-3, 4];
        state.al = 9;
        state.cmp = [true, false];
        let v = result(Stop::End, &state, &[]);
        assert_eq!(v["status"], "ok");
        assert_eq!(v["o"].as_array().unwrap().len(), 16);
        assert_eq!(
            v["o"][3],
            json!(["3f800000", "40000000", "3f000000", "bf800000"])
        );
        assert_eq!(
            v["r"][15],
            json!(["00000000", "00000000", "00000000", "00000000"])
        );
        assert_eq!(v["a0"], json!([-3, 4]));
        assert_eq!(v["aL"], 9);
        assert_eq!(v["cc"], json!([true, false]));
        assert_eq!(v["emits"], json!([]));
        assert_eq!(
            result(Stop::BreakOutsideLoop, &state, &[])["status"],
            "budget_exceeded"
        );
    }
}
