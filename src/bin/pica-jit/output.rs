//! Formatting `run` results as the contract's JSON.

use pica_jit::{EmittedVertex, Stop, UnitState, Vec4};
use serde_json::{Value, json};

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
