//! Many pseudo-random and special values through the arithmetic instructions,
//! compared with a model transcribed from `docs/semantics.md` ("Arithmetic": load,
//! input flush, result step, the PICA multiply rule, the dot-product order, ...).
//! Complements the hand-worked cases: every engine sees a wide range of operands
//! (F24 overflow / underflow / subnormal paths, infinities, NaN payloads).

use crate::common::Case;
use crate::*;
use pica_jit::Precision::{self, F24};

/// The documented model.
mod model {
    use pica_jit::Precision::{self, F24, F32};

    const QNAN: f32 = f32::from_bits(0x7FC0_0000);

    fn canonicalize(x: f32) -> f32 {
        if x.is_nan() { QNAN } else { x }
    }

    /// A value entering the unit.
    pub fn load(p: Precision, x: f32) -> f32 {
        if p == F32 {
            return x;
        }
        let b = x.to_bits();
        let abs = b & 0x7FFF_FFFF;
        if abs > 0x7F80_0000 {
            QNAN
        } else if abs >= 0x5F80_0000 {
            f32::from_bits((b & 0x8000_0000) | 0x7F80_0000)
        } else if abs >= 0x2080_0000 {
            f32::from_bits(b & 0xFFFF_FF80)
        } else {
            // Truncation toward zero to a multiple of 2^-78 (integer 0 gives +0).
            ((x * crate::pow2(78)) as i32) as f32 * crate::pow2(-78)
        }
    }

    /// The arithmetic input step.
    fn inp(p: Precision, x: f32) -> f32 {
        if p == F24 && x.to_bits() & 0x7FFF_FFFF < 0x2080_0000 {
            0.0
        } else {
            x
        }
    }

    /// The arithmetic result step.
    fn res(p: Precision, r: f32) -> f32 {
        match p {
            F32 => canonicalize(r),
            F24 => {
                let b = r.to_bits();
                let abs = b & 0x7FFF_FFFF;
                if abs > 0x7F80_0000 {
                    QNAN
                } else if abs >= 0x5F80_0000 {
                    f32::from_bits((b & 0x8000_0000) | 0x7F80_0000)
                } else if abs < 0x2080_0000 {
                    0.0
                } else {
                    f32::from_bits(b & 0xFFFF_FF80)
                }
            }
        }
    }

    pub fn add(p: Precision, a: f32, b: f32) -> f32 {
        res(p, inp(p, a) + inp(p, b))
    }

    pub fn mul(p: Precision, a: f32, b: f32) -> f32 {
        let (a, b) = (inp(p, a), inp(p, b));
        let r = a * b;
        // inf * 0 = +0 (the only way two non-NaN operands give NaN).
        let r = if r.is_nan() && !a.is_nan() && !b.is_nan() {
            0.0
        } else {
            r
        };
        res(p, r)
    }

    pub fn mad(p: Precision, a: f32, b: f32, c: f32) -> f32 {
        add(p, mul(p, a, b), c)
    }

    pub fn dp4(p: Precision, a: [f32; 4], b: [f32; 4]) -> f32 {
        let t: [f32; 4] = std::array::from_fn(|i| mul(p, a[i], b[i]));
        add(p, add(p, t[0], t[1]), add(p, t[2], t[3]))
    }

    pub fn dp3(p: Precision, a: [f32; 4], b: [f32; 4]) -> f32 {
        let t: [f32; 3] = std::array::from_fn(|i| mul(p, a[i], b[i]));
        add(p, add(p, t[0], t[1]), add(p, t[2], 0.0))
    }

    pub fn dph(p: Precision, a: [f32; 4], b: [f32; 4]) -> f32 {
        dp4(p, [a[0], a[1], a[2], 1.0], b)
    }

    pub fn rcp(p: Precision, x: f32) -> f32 {
        let x = inp(p, x);
        res(p, if x == 0.0 { f32::INFINITY } else { 1.0 / x })
    }

    pub fn rsq(p: Precision, x: f32) -> f32 {
        let x = inp(p, x);
        res(
            p,
            if x == 0.0 {
                f32::INFINITY
            } else {
                1.0 / x.sqrt()
            },
        )
    }

    pub fn flr(p: Precision, x: f32) -> f32 {
        res(p, inp(p, x).floor())
    }

    pub fn max(a: f32, b: f32) -> f32 {
        if a > b { a } else { b }
    }

    pub fn min(a: f32, b: f32) -> f32 {
        if a < b { a } else { b }
    }

    pub fn sge(a: f32, b: f32) -> f32 {
        if a >= b { 1.0 } else { 0.0 }
    }

    pub fn slt(a: f32, b: f32) -> f32 {
        if a < b { 1.0 } else { 0.0 }
    }
}

/// A deterministic generator of interesting f32 values.
struct Values(u64);

impl Values {
    fn next_u32(&mut self) -> u32 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 32) as u32
    }

    fn value(&mut self) -> f32 {
        const SPECIAL: [f32; 16] = [
            0.0,
            NEG_ZERO,
            INF,
            NEG_INF,
            QNAN,
            PAYLOAD_NAN,
            NEG_PAYLOAD_NAN,
            S,
            N,
            fb(0x1880_0000), // 2^-78
            fb(0x5F7F_FF80), // float24 MAX
            1.0,
            -1.0,
            0.5,
            fb(0x5F00_0000), // 2^63
            fb(0xA07F_FF00), // -s
        ];
        let r = self.next_u32();
        if r.is_multiple_of(4) {
            return SPECIAL[(r >> 8) as usize % SPECIAL.len()];
        }
        let r2 = self.next_u32();
        // Exponents 2^-80 ..= 2^71: below the float24 normals to above its range.
        let exp = 47 + (r2 % 152);
        fb((r & 0x8000_0000) | (exp << 23) | (r2 >> 9))
    }

    fn vec4(&mut self) -> [f32; 4] {
        [self.value(), self.value(), self.value(), self.value()]
    }
}

/// Results are compared as bits; NaNs must be the canonical one except for the
/// selections (max, min), which the model reproduces bit for bit anyway.
#[track_caller]
fn check_model(actual: [u32; 4], expected: [f32; 4], what: &str) {
    check(actual, bits(expected), what);
}

const BINARY: [&str; 9] = [
    "add", "mul", "dp3", "dp4", "dph", "max", "min", "sge", "slt",
];

fn binary_model(p: Precision, op: &str, a: [f32; 4], b: [f32; 4]) -> [f32; 4] {
    let lanes =
        |f: &dyn Fn(f32, f32) -> f32| -> [f32; 4] { std::array::from_fn(|i| f(a[i], b[i])) };
    match op {
        "add" => lanes(&|x, y| model::add(p, x, y)),
        "mul" => lanes(&|x, y| model::mul(p, x, y)),
        "dp3" => [model::dp3(p, a, b); 4],
        "dp4" => [model::dp4(p, a, b); 4],
        "dph" => [model::dph(p, a, b); 4],
        "max" => lanes(&model::max),
        "min" => lanes(&model::min),
        "sge" => lanes(&model::sge),
        "slt" => lanes(&model::slt),
        _ => unreachable!("{op}"),
    }
}

#[test]
fn binary_operations_match_the_documented_model() {
    let mut values = Values(0x5EED);
    for p in BOTH {
        for op in BINARY {
            // o_k = op(v_k, v_{k+8}) for k in 0..8, then op(c_k, r_k) into r8..r15.
            let src: String = (0..8)
                .map(|k| {
                    format!(
                        "{op} o{k}, v{k}, v{}\n{op} r{}, c{}, r{k}\n",
                        k + 8,
                        k + 8,
                        k + 10
                    )
                })
                .collect();
            for _ in 0..6 {
                let mut case = Case::new(&src).precision(p);
                let inputs: [[f32; 4]; 16] = std::array::from_fn(|_| values.vec4());
                let temps: [[f32; 4]; 8] = std::array::from_fn(|_| values.vec4());
                let consts: [[f32; 4]; 8] = std::array::from_fn(|_| values.vec4());
                for (k, v) in inputs.iter().enumerate() {
                    case = case.input(k, *v);
                }
                for k in 0..8 {
                    case = case.temp(k, temps[k]).f(k + 10, consts[k]);
                }
                let t = case.run();
                let load = |v: [f32; 4]| v.map(|x| model::load(p, x));
                for k in 0..8 {
                    let (a, b) = (load(inputs[k]), load(inputs[k + 8]));
                    let what = format!("{op} {a:?}, {b:?} {p:?}");
                    check_model(t.out_bits(k), binary_model(p, op, a, b), &what);
                    let (a, b) = (load(consts[k]), load(temps[k]));
                    let what = format!("{op} {a:?}, {b:?} {p:?}");
                    check_model(t.temp_bits(k + 8), binary_model(p, op, a, b), &what);
                }
            }
        }
    }
}

#[test]
fn mad_and_madi_match_the_documented_model() {
    let mut values = Values(0xAD);
    for p in BOTH {
        // mad o_k = v_k * c_k + r_k; madi r_{k+8} = v_k * r_k + c_{k+8}.
        let src: String = (0..8)
            .map(|k| {
                format!(
                    "mad o{k}, v{k}, c{k}, r{k}\nmadi r{}, v{k}, r{k}, c{}\n",
                    k + 8,
                    k + 8
                )
            })
            .collect();
        for _ in 0..6 {
            let mut case = Case::new(&src).precision(p);
            let v: [[f32; 4]; 8] = std::array::from_fn(|_| values.vec4());
            let r: [[f32; 4]; 8] = std::array::from_fn(|_| values.vec4());
            let c: [[f32; 4]; 16] = std::array::from_fn(|_| values.vec4());
            for k in 0..8 {
                case = case.input(k, v[k]).temp(k, r[k]);
            }
            for (k, ck) in c.iter().enumerate() {
                case = case.f(k, *ck);
            }
            let t = case.run();
            let load = |x: [f32; 4]| x.map(|x| model::load(p, x));
            for k in 0..8 {
                let (a, b, cc) = (load(v[k]), load(c[k]), load(r[k]));
                let expected: [f32; 4] = std::array::from_fn(|i| model::mad(p, a[i], b[i], cc[i]));
                check_model(
                    t.out_bits(k),
                    expected,
                    &format!("mad {a:?} {b:?} {cc:?} {p:?}"),
                );
                let (a, b, cc) = (load(v[k]), load(r[k]), load(c[k + 8]));
                let expected: [f32; 4] = std::array::from_fn(|i| model::mad(p, a[i], b[i], cc[i]));
                check_model(
                    t.temp_bits(k + 8),
                    expected,
                    &format!("madi {a:?} {b:?} {cc:?} {p:?}"),
                );
            }
        }
    }
}

#[test]
fn unary_operations_match_the_documented_model() {
    let mut values = Values(0x0123_4567);
    for p in BOTH {
        for op in ["rcp", "rsq", "flr", "mov"] {
            let src: String = (0..16).map(|k| format!("{op} o{k}, v{k}\n")).collect();
            for _ in 0..4 {
                let inputs: [[f32; 4]; 16] = std::array::from_fn(|_| values.vec4());
                let t = (0..16)
                    .fold(Case::new(&src).precision(p), |c, k| c.input(k, inputs[k]))
                    .run();
                for (k, v) in inputs.iter().enumerate() {
                    let a = v.map(|x| model::load(p, x));
                    let expected = match op {
                        "rcp" => [model::rcp(p, a[0]); 4],
                        "rsq" => [model::rsq(p, a[0]); 4],
                        "flr" => a.map(|x| model::flr(p, x)),
                        _ => a,
                    };
                    check_model(t.out_bits(k), expected, &format!("{op} {a:?} {p:?}"));
                }
            }
        }
    }
}

#[test]
fn ex2_and_lg2_stay_accurate_over_a_sweep() {
    // Documented accuracy: relative error below 2^-20 (F32) for normal results;
    // F24 truncates to float24 afterwards.
    let mut values = Values(0xE8);
    for p in BOTH {
        for _ in 0..8 {
            // ex2 inputs in [-60, 60), lg2 inputs positive over a wide range.
            let xs: [f32; 16] = std::array::from_fn(|_| {
                let r = values.next_u32();
                model::load(p, (r % 120_000) as f32 / 1000.0 - 60.0)
            });
            let ys: [f32; 16] = std::array::from_fn(|_| model::load(p, values.value().abs()));
            let src: String = (0..16)
                .map(|k| format!("ex2 o{k}, v{k}\nlg2 r{k}, c{k}\n"))
                .collect();
            let mut case = Case::new(&src).precision(p);
            for k in 0..16 {
                case = case
                    .input(k, [xs[k], 0.0, 0.0, 0.0])
                    .f(k, [ys[k], 0.0, 0.0, 0.0]);
            }
            let t = case.run();
            let tolerance = pick(p, 2f64.powi(-20), 2f64.powi(-15));
            for k in 0..16 {
                let e = fb(t.out_bits(k)[0]);
                let exact = 2f64.powf(xs[k] as f64);
                let rel = ((e as f64 - exact) / exact).abs();
                assert!(rel < tolerance, "ex2({}) {p:?} = {e}, exact {exact}", xs[k]);
                let y = ys[k];
                let l = fb(t.temp_bits(k)[0]);
                let flushed = p == F24 && y < N;
                let expected_special = if y.is_nan() {
                    Some(QNAN_BITS)
                } else if y == INF {
                    Some(INF_BITS)
                } else if y == 0.0 || flushed {
                    Some(NEG_INF_BITS)
                } else if y == 1.0 {
                    Some(0)
                } else {
                    None
                };
                match expected_special {
                    Some(b) => check1(l.to_bits(), b, &format!("lg2({y:e}) {p:?}")),
                    None => {
                        let exact = (y as f64).log2();
                        let rel = ((l as f64 - exact) / exact).abs();
                        assert!(rel < tolerance, "lg2({y:e}) {p:?} = {l}, exact {exact}");
                    }
                }
                if p == F24 {
                    assert_eq!(
                        t.out_bits(k)[0] & 0x7F,
                        0,
                        "ex2 F24 result off the float24 grid"
                    );
                    assert_eq!(
                        t.temp_bits(k)[0] & 0x7F,
                        0,
                        "lg2 F24 result off the float24 grid"
                    );
                }
            }
        }
    }
}
