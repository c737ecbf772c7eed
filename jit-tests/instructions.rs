//! Per-instruction behaviour: every arithmetic opcode, the spec's floating-point
//! table, F24 load conversion, relative addressing, masks / swizzles / negation,
//! CMP, EX2/LG2, LITP and DST, each exercised through real instructions and (unless
//! a rule is precision specific) in both precisions. Every case runs on every engine
//! (see `common::Case::run`), and every expectation is derived from the documented
//! rules (`docs/semantics.md`, the spec), compared
//! bit for bit where exactness matters. `sweep` adds pseudo-random and special
//! operands checked against a model transcribed from those documents.

mod common;

#[path = "instructions/arith_ops.rs"]
mod arith_ops;
#[path = "instructions/compare.rs"]
mod compare;
#[path = "instructions/dst.rs"]
mod dst;
#[path = "instructions/exp_log.rs"]
mod exp_log;
#[path = "instructions/f24_facts.rs"]
mod f24_facts;
#[path = "instructions/f24_load.rs"]
mod f24_load;
#[path = "instructions/float_table.rs"]
mod float_table;
#[path = "instructions/litp.rs"]
mod litp;
#[path = "instructions/operands.rs"]
mod operands;
#[path = "instructions/relative.rs"]
mod relative;
#[path = "instructions/sweep.rs"]
mod sweep;

use common::{Case, Outcome};
use pica_jit::Precision;

/// Both precision modes, F32 first.
pub(crate) const BOTH: [Precision; 2] = [Precision::F32, Precision::F24];

/// An `f32` from its raw bits.
pub(crate) const fn fb(bits: u32) -> f32 {
    f32::from_bits(bits)
}

pub(crate) const INF: f32 = f32::INFINITY;
pub(crate) const NEG_INF: f32 = f32::NEG_INFINITY;
/// Bits of the canonical NaN, the only NaN arithmetic produces.
pub(crate) const QNAN_BITS: u32 = 0x7FC0_0000;
/// The canonical NaN.
pub(crate) const QNAN: f32 = fb(QNAN_BITS);
/// A signalling NaN with payload 1.
pub(crate) const PAYLOAD_NAN: f32 = fb(0x7F80_0001);
/// A negative quiet NaN with a payload.
pub(crate) const NEG_PAYLOAD_NAN: f32 = fb(0xFFC0_0123);
pub(crate) const NEG_ZERO: f32 = -0.0;
pub(crate) const NEG_ZERO_BITS: u32 = 0x8000_0000;
pub(crate) const INF_BITS: u32 = 0x7F80_0000;
pub(crate) const NEG_INF_BITS: u32 = 0xFF80_0000;
pub(crate) const ONE_BITS: u32 = 0x3F80_0000;
/// s: the largest float24 subnormal, 65535 * 2^-78 (raw float24 0x00FFFF).
pub(crate) const S_BITS: u32 = 0x207F_FF00;
pub(crate) const S: f32 = fb(S_BITS);
/// n: the smallest positive float24 normal, 2^-62.
pub(crate) const N_BITS: u32 = 0x2080_0000;
pub(crate) const N: f32 = fb(N_BITS);

/// 2^k, exactly, for k in -149..=127 (built from bits).
pub(crate) fn pow2(k: i32) -> f32 {
    assert!((-149..=127).contains(&k), "2^{k} is not a finite f32");
    if k >= -126 {
        fb(((k + 127) as u32) << 23)
    } else {
        fb(1u32 << (k + 149))
    }
}

/// Picks the F32 or the F24 expectation.
pub(crate) fn pick<T>(p: Precision, f32_value: T, f24_value: T) -> T {
    match p {
        Precision::F32 => f32_value,
        Precision::F24 => f24_value,
    }
}

/// The bits of a vector.
pub(crate) fn bits(v: [f32; 4]) -> [u32; 4] {
    v.map(f32::to_bits)
}

/// The same bits in all four lanes.
pub(crate) fn splat(b: u32) -> [u32; 4] {
    [b; 4]
}

fn show(v: [u32; 4]) -> String {
    let lanes: Vec<String> = v
        .iter()
        .map(|&b| format!("{b:#010x} ({:e})", f32::from_bits(b)))
        .collect();
    format!("[{}]", lanes.join(", "))
}

/// Asserts that two vectors have identical bits, printing both in hex.
#[track_caller]
pub(crate) fn check(actual: [u32; 4], expected: [u32; 4], what: &str) {
    assert!(
        actual == expected,
        "{what}:\n  got      {}\n  expected {}",
        show(actual),
        show(expected)
    );
}

/// A case in precision `p` with inputs v0, v1, ... set from `inputs`.
pub(crate) fn case(p: Precision, src: &str, inputs: &[[f32; 4]]) -> Case {
    inputs
        .iter()
        .enumerate()
        .fold(Case::new(src).precision(p), |c, (n, v)| c.input(n, *v))
}

/// Runs `src` in precision `p` with inputs v0, v1, ... (on every engine).
pub(crate) fn run(p: Precision, src: &str, inputs: &[[f32; 4]]) -> Outcome {
    case(p, src, inputs).run()
}

/// Runs `src` and returns the bits of o0.
pub(crate) fn o0(p: Precision, src: &str, inputs: &[[f32; 4]]) -> [u32; 4] {
    run(p, src, inputs).out_bits(0)
}

/// `{op} o0, v0` with v0 = `a`: the bits of o0.
pub(crate) fn unary(p: Precision, op: &str, a: [f32; 4]) -> [u32; 4] {
    o0(p, &format!("{op} o0, v0"), &[a])
}

/// `{op} o0, v0, v1` with v0 = `a`, v1 = `b`: the bits of o0.
pub(crate) fn binary(p: Precision, op: &str, a: [f32; 4], b: [f32; 4]) -> [u32; 4] {
    o0(p, &format!("{op} o0, v0, v1"), &[a, b])
}

/// `{op} o0, v0, v1, v2` (mad): the bits of o0.
pub(crate) fn ternary(p: Precision, op: &str, a: [f32; 4], b: [f32; 4], c: [f32; 4]) -> [u32; 4] {
    o0(p, &format!("{op} o0, v0, v1, v2"), &[a, b, c])
}

/// A broadcasting unary op (rcp, rsq, ex2, lg2) on the scalar `x` in lane x (the
/// other lanes hold distracting values): asserts the result is broadcast and
/// returns its bits.
#[track_caller]
pub(crate) fn scalar(p: Precision, op: &str, x: f32) -> u32 {
    let r = unary(p, op, [x, 2.0, -3.0, QNAN]);
    assert!(
        r.iter().all(|&b| b == r[0]),
        "{op}({x:e}) {p:?}: not broadcast: {}",
        show(r)
    );
    r[0]
}

/// Asserts a scalar result's bits, printing both in hex.
#[track_caller]
pub(crate) fn check1(actual: u32, expected: u32, what: &str) {
    check(splat(actual), splat(expected), what);
}
