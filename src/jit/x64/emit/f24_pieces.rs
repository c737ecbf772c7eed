//! The float24 quantisation's and flush's fast paths on `xmm` registers
//! with VEX (the single-vertex code on an AVX host) written in one piece:
//! instructions whose bytes depend on two registers only, constant operands
//! whose pool entries are found once per program, and for the quantisation
//! the `jnz` into its slow path. A float24 shader quantises every product
//! and sum and flushes the inputs of most (sixty-odd and a hundred times in
//! a large one), and building the sequences instruction by instruction
//! ([`Vector::f24_quantize_by_parts`], [`Vector::f24_flush_by_parts`],
//! which the other encodings keep and the tests hold these equal to) cost
//! about six hundred and three hundred host instructions each.

use super::ops::vex_rip;
use super::{Body, MASK, PoolRef, S1, S2, S3, SlowEntry, Vector, encode};
use crate::arith::f24;
use dynasmrt::DynasmApi;

/// The constants the quantisation reads, in the order its instructions
/// address them: `|x|`'s mask, the smallest normal's bits less one, the
/// mantissa mask, the overflow's bits less one.
pub(super) const CONSTANTS: [u32; 4] = [
    0x7FFF_FFFF,
    f24::MIN_NORMAL_BITS - 1,
    f24::MANTISSA_MASK,
    f24::OVERFLOW_BITS - 1,
];

/// The sequence's length in bytes, up to and including the `jnz`'s
/// displacement.
const LEN: usize = 48;

/// Where the displacement of each constant operand starts in the sequence
/// (each is the last field of its instruction), in [`CONSTANTS`]' order.
const DISPS: [usize; 4] = [4, 12, 20, 33];

/// The fast path's bytes for `d = quantize(a)`, constant operands and the
/// `jnz` displacement zero:
///
/// ```text
/// vandps   S2, a, [rip + abs]
/// vpcmpgtd xmm0, S2, [rip + normal]
/// vandps   d, a, [rip + mantissa]
/// vandps   d, d, xmm0
/// vpcmpgtd S3, S2, [rip + overflow]
/// vptest   S3, S3
/// jnz      slow
/// ```
fn bytes(d: u8, a: u8) -> [u8; LEN] {
    let mut out = [0u8; LEN];
    out[0..8].copy_from_slice(&vex_rip(0, 0x54, S2, a, false));
    out[8..16].copy_from_slice(&vex_rip(1, 0x66, MASK, S2, false));
    out[16..24].copy_from_slice(&vex_rip(0, 0x54, d, a, false));
    out[24..29].copy_from_slice(encode::vex_rr(0, 0x54, d, Some(d), MASK, false).bytes());
    out[29..37].copy_from_slice(&vex_rip(1, 0x66, S3, S2, false));
    // `vptest xmm15, xmm15` in the three-byte form `dynasm` writes for a
    // register chosen at run time (map 0F38, pp 66).
    out[37..42].copy_from_slice(&[0xC4, 0x42, 0x79, 0x17, 0xFF]);
    out[42..44].copy_from_slice(&[0x0F, 0x85]);
    out
}

/// The flush's length in bytes.
const FLUSH_LEN: usize = 21;

/// Where the flush's constant operands' displacements start (the first two
/// of [`CONSTANTS`], in order).
const FLUSH_DISPS: [usize; 2] = [4, 12];

/// The flush's bytes for `d = flush(a)`, constant operands zero:
///
/// ```text
/// vandps   S1, a, [rip + abs]
/// vpcmpgtd S1, S1, [rip + normal]
/// vandps   d, a, S1
/// ```
fn flush_bytes(d: u8, a: u8) -> [u8; FLUSH_LEN] {
    let mut out = [0u8; FLUSH_LEN];
    out[0..8].copy_from_slice(&vex_rip(0, 0x54, S1, a, false));
    out[8..16].copy_from_slice(&vex_rip(1, 0x66, S1, S1, false));
    out[16..21].copy_from_slice(encode::vex_rr(0, 0x54, d, Some(a), S1, false).bytes());
    out
}

impl Vector<'_> {
    /// [`Self::f24_flush_by_parts`]' bytes and constant operands in one
    /// piece (VEX on `xmm` only).
    pub(super) fn f24_flush_vex128(&mut self, d: u8, a: u8) {
        debug_assert_eq!(self.encoding(), super::Encoding::Vex128);
        let entries = match self.st.flush_pool {
            Some(entries) => entries,
            None => self.flush_pool_entries(),
        };
        let start = self.ops.offset().0 as u32;
        self.ops.extend(&flush_bytes(d, a));
        let shift = self.st.entry_shift;
        for (disp, entry) in FLUSH_DISPS.into_iter().zip(entries) {
            let at = start + disp as u32;
            self.st
                .pool_refs
                .push(PoolRef::new(at, at + 4, entry, shift));
        }
    }

    /// Pools the flush's two constants in their order (as the sequence by
    /// parts does) and keeps their entries for the program's later flushes.
    #[cold]
    #[inline(never)]
    fn flush_pool_entries(&mut self) -> [u32; 2] {
        let entries = [CONSTANTS[0], CONSTANTS[1]].map(|bits| self.pool_const(bits) as u32);
        self.st.flush_pool = Some(entries);
        entries
    }

    /// [`Self::f24_quantize_by_parts`]' bytes, constant operands and slow
    /// path in one piece (VEX on `xmm` only).
    pub(super) fn f24_quantize_vex128(&mut self, d: u8, a: u8) {
        debug_assert_eq!(self.encoding(), super::Encoding::Vex128);
        let entries = match self.st.quantize_pool {
            Some(entries) => entries,
            None => self.quantize_pool_entries(),
        };
        let start = self.ops.offset().0 as u32;
        self.ops.extend(&bytes(d, a));
        let shift = self.st.entry_shift;
        for (disp, entry) in DISPS.into_iter().zip(entries) {
            let at = start + disp as u32;
            self.st
                .pool_refs
                .push(PoolRef::new(at, at + 4, entry, shift));
        }
        self.rejoin(SlowEntry(start + LEN as u32), Body::F24Overflow { d });
    }

    /// Pools [`CONSTANTS`] in their order (the order the instruction by
    /// instruction sequence pools them in, so the pool is the same) and
    /// keeps their entries for the program's later quantisations.
    #[cold]
    #[inline(never)]
    fn quantize_pool_entries(&mut self) -> [u32; 4] {
        let entries = CONSTANTS.map(|bits| self.pool_const(bits) as u32);
        self.st.quantize_pool = Some(entries);
        entries
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Asm, Encoding, S1, V, VectorState};
    use crate::ir::UnOp;

    /// The code, slow paths and pool of `emit` on a fresh VEX `xmm`
    /// state, finished.
    fn finished(emit: impl Fn(&mut super::Vector)) -> Vec<u8> {
        let mut ops = Asm::new(0);
        let mut state = VectorState::new(Encoding::Vex128);
        let mut v = state.on(&mut ops);
        emit(&mut v);
        v.emit_slow_paths();
        v.emit_pool();
        ops.finalize().expect("assembles")
    }

    /// Every result and operand register: the sequence in one piece is
    /// byte for byte the sequence by parts (instructions, constant
    /// operands' displacements, the pool's order, the slow path and its
    /// `jnz`), for a first quantisation (which pools the constants), later
    /// ones (which reuse the entries) and quantisations after other
    /// constants were pooled.
    #[test]
    fn the_quantisation_in_one_piece_is_the_sequence_by_parts() {
        for d in 1..16u8 {
            for a in 0..16u8 {
                let program = |v: &mut super::Vector, one_piece: bool| {
                    let quantize = |v: &mut super::Vector, d: u8, a: u8| {
                        if one_piece {
                            v.f24_quantize_vex128(d, a);
                        } else {
                            v.f24_quantize_by_parts(d, a);
                        }
                    };
                    v.v3c(V::Addps, 3, 4, 0x3F80_0000);
                    quantize(v, d, a);
                    v.v3c(V::Andps, S1, 5, super::CONSTANTS[2]);
                    quantize(v, a.max(1), d);
                    quantize(v, d, a);
                };
                assert_eq!(
                    finished(|v| program(v, true)),
                    finished(|v| program(v, false)),
                    "xmm{d} = quantize(xmm{a})"
                );
            }
        }
    }

    /// Every result and operand register: the flush in one piece is byte
    /// for byte the flush by parts, first (pooling its constants) and
    /// again, and interleaved with quantisations, which pool two of the
    /// same constants (the pool's order is the one by parts gives, whichever
    /// comes first).
    #[test]
    fn the_flush_in_one_piece_is_the_sequence_by_parts() {
        for d in 1..16u8 {
            for a in 0..16u8 {
                for quantize_first in [false, true] {
                    let program = |v: &mut super::Vector, one_piece: bool| {
                        let flush = |v: &mut super::Vector, d: u8, a: u8| {
                            if one_piece {
                                v.f24_flush_vex128(d, a);
                            } else {
                                v.f24_flush_by_parts(d, a);
                            }
                        };
                        v.v3c(V::Addps, 3, 4, 0x3F80_0000);
                        if quantize_first {
                            v.f24_quantize_vex128(2, 6);
                        }
                        flush(v, d, a);
                        v.v3c(V::Andps, S1, 5, super::CONSTANTS[3]);
                        flush(v, a.max(1), d);
                        v.f24_quantize_vex128(d, a);
                        flush(v, d, a);
                    };
                    assert_eq!(
                        finished(|v| program(v, true)),
                        finished(|v| program(v, false)),
                        "xmm{d} = flush(xmm{a}), quantisation first: {quantize_first}"
                    );
                }
            }
        }
    }

    /// The IR's quantisation and flush go through the pieces on VEX `xmm`:
    /// the same code as by parts.
    #[test]
    fn unary_quantisation_and_flush_on_vex_xmm_are_the_sequences_by_parts() {
        let by_unary = finished(|v| v.unary(UnOp::F24Quantize, 7, 9));
        let by_parts = finished(|v| v.f24_quantize_by_parts(7, 9));
        assert_eq!(by_unary, by_parts);
        let by_unary = finished(|v| v.unary(UnOp::F24Flush, 7, 9));
        let by_parts = finished(|v| v.f24_flush_by_parts(7, 9));
        assert_eq!(by_unary, by_parts);
    }
}
