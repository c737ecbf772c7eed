//! What `bench` feeds a shader: deterministic pseudo-random vertices and
//! uniforms, the same on every run and every host, so numbers compare.

use pica_jit::shbin::Dvle;
use pica_jit::{Uniforms, Vec4, VertexRegisters};

/// The seed of the vertex generator (any fixed value; changing it changes
/// the inputs of every measurement).
pub const SEED: u64 = 0x5eed_b37c_4a11_0008;

/// One draw: uniforms, the vertices' input registers and the register masks
/// an emulator's vertex loader would use.
pub struct Workload {
    pub uniforms: Uniforms,
    pub inputs: Vec<VertexRegisters>,
    /// Input registers copied into the unit per vertex (the DVLE's mask, or all
    /// sixteen when the DVLE declares none).
    pub input_mask: u16,
    /// Output registers copied out per vertex (likewise).
    pub output_mask: u16,
}

impl Workload {
    /// `vertices` vertices for `dvle`.
    ///
    /// Uniforms: every float register holds one row of an identity matrix
    /// (`c{n}` has 1.0 in lane `n % 4`: transform, normal and texture matrices
    /// stay plausible), every integer register `(3, 0, 1, 0)` (a four-pass loop
    /// from 0), even boolean registers true; then the DVLE's own constants on
    /// top, as a loader applies them.
    ///
    /// Inputs: `v0` a position in `[-1, 1)³` with `w = 1`, `v1` a unit normal,
    /// every other register in `[0, 1)` (so `mova` gives small indices).
    pub fn new(dvle: &Dvle, vertices: usize) -> Workload {
        let mut uniforms = Uniforms::default();
        for (n, row) in uniforms.f.iter_mut().enumerate() {
            *row = [0.0; 4];
            row[n % 4] = 1.0;
        }
        uniforms.i = [[3, 0, 1, 0]; 4];
        for (n, b) in uniforms.b.iter_mut().enumerate() {
            *b = n % 2 == 0;
        }
        uniforms.apply_constants(&dvle.constants);

        let mut rng = Rng(SEED);
        let inputs = (0..vertices).map(|_| vertex(&mut rng)).collect();
        Workload {
            uniforms,
            inputs,
            input_mask: mask_or_all(dvle.input_mask),
            output_mask: mask_or_all(dvle.output_mask),
        }
    }

    pub fn len(&self) -> usize {
        self.inputs.len()
    }
}

/// A register mask, or all sixteen registers for an empty one (older
/// assemblers leave the DVLE's masks zero).
fn mask_or_all(mask: u16) -> u16 {
    if mask == 0 { 0xffff } else { mask }
}

fn vertex(rng: &mut Rng) -> VertexRegisters {
    let mut v: VertexRegisters = [[0.0; 4]; 16];
    for reg in v.iter_mut() {
        *reg = std::array::from_fn(|_| rng.unit());
    }
    v[0] = [rng.signed(), rng.signed(), rng.signed(), 1.0];
    v[1] = normal(rng);
    v
}

/// A unit vector (the fallback keeps it finite should all three draws be 0).
fn normal(rng: &mut Rng) -> Vec4 {
    let n = [rng.signed(), rng.signed(), rng.signed()];
    let len = (n[0] * n[0] + n[1] * n[1] + n[2] * n[2]).sqrt();
    if len < 1e-6 {
        return [0.0, 0.0, 1.0, 0.0];
    }
    [n[0] / len, n[1] / len, n[2] / len, 0.0]
}

/// xorshift64*: small, fast, and the same sequence everywhere.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform in `[0, 1)`, on a 2⁻²⁴ grid (exact in f32).
    fn unit(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 24) as f32
    }

    /// Uniform in `[-1, 1)`.
    fn signed(&mut self) -> f32 {
        2.0 * self.unit() - 1.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pica_jit::shbin::{ConstantEntry, ConstantValue};

    #[test]
    fn the_generator_is_xorshift64_star() {
        // Reference values of xorshift64* (Vigna) from seed 1.
        let mut rng = Rng(1);
        assert_eq!(rng.next(), 0x47e4_ce4b_896c_dd1d);
        assert_eq!(rng.next(), 0xabcf_a6a8_e079_651d);
    }

    #[test]
    fn vertices_are_deterministic_and_in_range() {
        let dvle = Dvle::default();
        let a = Workload::new(&dvle, 64);
        let b = Workload::new(&dvle, 64);
        assert_eq!(a.len(), 64);
        assert_eq!(a.inputs, b.inputs);
        assert_ne!(a.inputs[0], a.inputs[1]);
        for v in &a.inputs {
            assert!(v[0][..3].iter().all(|x| (-1.0..1.0).contains(x)));
            assert_eq!(v[0][3], 1.0);
            let len2: f32 = v[1][..3].iter().map(|x| x * x).sum();
            assert!((len2 - 1.0).abs() < 1e-5, "normal length² {len2}");
            assert_eq!(v[1][3], 0.0);
            assert!(v[2..].iter().flatten().all(|x| (0.0..1.0).contains(x)));
        }
    }

    #[test]
    fn uniforms_are_identity_rows_then_the_dvle_constants() {
        let dvle = Dvle {
            input_mask: 0b1011,
            constants: vec![
                ConstantEntry {
                    register: 5,
                    value: ConstantValue::Float([0.5, 0.25, 2.0, 4.0]),
                },
                ConstantEntry {
                    register: 1,
                    value: ConstantValue::Int([7, 0, 1, 0]),
                },
                ConstantEntry {
                    register: 0,
                    value: ConstantValue::Bool(false),
                },
            ],
            ..Dvle::default()
        };
        let w = Workload::new(&dvle, 1);
        assert_eq!(w.uniforms.f[0], [1.0, 0.0, 0.0, 0.0]);
        assert_eq!(w.uniforms.f[6], [0.0, 0.0, 1.0, 0.0]);
        assert_eq!(w.uniforms.f[95], [0.0, 0.0, 0.0, 1.0]);
        assert_eq!(w.uniforms.f[5], [0.5, 0.25, 2.0, 4.0]);
        assert_eq!(w.uniforms.i[0], [3, 0, 1, 0]);
        assert_eq!(w.uniforms.i[1], [7, 0, 1, 0]);
        assert!(!w.uniforms.b[0]);
        assert!(!w.uniforms.b[1]);
        assert!(w.uniforms.b[2]);
        assert_eq!(w.input_mask, 0b1011);
        assert_eq!(w.output_mask, 0xffff, "an empty mask means every register");
    }
}
