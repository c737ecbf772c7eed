//! The slow paths of the x86-64 primitives: rare lanes' exact sequences,
//! entered with `jnz label` from the fast path and returning to `back`.

use super::{S3, Vector};
use dynasmrt::{DynamicLabel, DynasmApi, DynasmLabelApi, dynasm};

/// The terms of [`Vector::f24_dot_sum`] (and of its slow path), by register.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::jit::x64) enum DotTerms {
    /// Four lanes of terms.
    Terms(u8),
    /// `pica_mul_f24(a, b)`, lane w replaced by +0 when `clear_w` (`dp3`).
    Products { a: u8, b: u8, clear_w: bool },
}

/// Out-of-line code of one primitive.
pub(in crate::jit::x64) enum SlowPath {
    /// The exact PICA multiply `d = a * b` (some lane's product is NaN; the
    /// operands are still live).
    PicaMul {
        label: DynamicLabel,
        back: DynamicLabel,
        d: u8,
        a: u8,
        b: u8,
    },
    /// [`SlowPath::PicaMul`] with `b` the 16 bytes at `off` from
    /// general-purpose register `base` (loaded into `S3`, which the exact
    /// multiply leaves alone).
    PicaMulMem {
        label: DynamicLabel,
        back: DynamicLabel,
        d: u8,
        a: u8,
        base: u8,
        off: i32,
    },
    /// The exact PICA multiply then float24 quantisation `d = a * b` (some
    /// lane of the product is at or above 2^64, infinite or NaN; the operands
    /// are still live).
    PicaMulF24 {
        label: DynamicLabel,
        back: DynamicLabel,
        d: u8,
        a: u8,
        b: u8,
    },
    /// The exact float24 load of `d` in place (some lane is a float24
    /// subnormal, at or above 2^64, infinite or NaN; `d` is unchanged).
    F24Load {
        label: DynamicLabel,
        back: DynamicLabel,
        d: u8,
    },
    /// The exact float24 load `d = load(a)` (some lane of `a` is a float24
    /// subnormal, at or above 2^64, infinite or NaN; `a` is unchanged).
    F24LoadFrom {
        label: DynamicLabel,
        back: DynamicLabel,
        d: u8,
        a: u8,
    },
    /// The float24 quantisation's tail in `d` (some lane is at or above
    /// 2^64, infinite or NaN), with `S2` = |bits|.
    F24Overflow {
        label: DynamicLabel,
        back: DynamicLabel,
        d: u8,
    },
    /// A float24 dot product's pairwise sum by the exact sequences (some
    /// lane of some step is at or above 2^64, infinite or NaN; the terms'
    /// registers are still live).
    F24DotSum {
        label: DynamicLabel,
        back: DynamicLabel,
        d: u8,
        terms: DotTerms,
    },
    /// Half of four float24 dot products of `a` by the exact sequences
    /// ([`Vector::f24_dot_pair`]; the operands are still live).
    F24DotPair {
        label: DynamicLabel,
        back: DynamicLabel,
        d: u8,
        a: u8,
        b: [u8; 2],
    },
}

impl Vector<'_> {
    /// Emits the slow paths recorded since the last call.
    pub fn emit_slow_paths(&mut self) {
        for slow in std::mem::take(&mut self.st.slow) {
            let back = match slow {
                SlowPath::PicaMul {
                    label,
                    back,
                    d,
                    a,
                    b,
                } => {
                    self.bind(label);
                    self.exact_pica_mul(d, a, b);
                    back
                }
                SlowPath::PicaMulMem {
                    label,
                    back,
                    d,
                    a,
                    base,
                    off,
                } => {
                    self.bind(label);
                    dynasm!(self.ops ; .arch x64 ; movaps Rx(S3), [Rq(base) + off]);
                    self.exact_pica_mul(d, a, S3);
                    back
                }
                SlowPath::PicaMulF24 {
                    label,
                    back,
                    d,
                    a,
                    b,
                } => {
                    self.bind(label);
                    self.exact_pica_mul_f24(d, a, b);
                    back
                }
                SlowPath::F24Load { label, back, d } => {
                    self.bind(label);
                    self.f24_load_exact(d);
                    back
                }
                SlowPath::F24LoadFrom { label, back, d, a } => {
                    self.bind(label);
                    self.copy(d, a);
                    self.f24_load_exact(d);
                    back
                }
                SlowPath::F24DotSum {
                    label,
                    back,
                    d,
                    terms,
                } => {
                    self.bind(label);
                    self.exact_f24_dot_sum(d, terms);
                    back
                }
                SlowPath::F24DotPair {
                    label,
                    back,
                    d,
                    a,
                    b,
                } => {
                    self.bind(label);
                    self.exact_f24_dot_pair(d, a, b);
                    back
                }
                SlowPath::F24Overflow { label, back, d } => {
                    self.bind(label);
                    self.f24_tail(d, d, d, S3);
                    back
                }
            };
            dynasm!(self.ops ; .arch x64 ; jmp =>back);
        }
    }
}
