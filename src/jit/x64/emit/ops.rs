//! Instruction selection: one method per vector operation the primitives
//! need, encoded for the emitter's [`Encoding`](super::Encoding).
//!
//! With SSE the two-operand forms copy `a` to `d` first, so `d` must not be
//! `b` unless `a == b`.
//!
//! Masks are vectors in every encoding (a lane is all ones or zero): with
//! AVX-512 a compare writes the opmask `k1`, which `vpmovm2d` turns into such
//! a vector at once, and a select or a mask test reads the vector's sign bits
//! back into `k1` with `vpmovd2m`, which is what `blendvps`/`movmskps` read.
//! The one exception is register [`MASK`] (0, the implicit mask of SSE's
//! `blendvps`): a compare into it is read by selects only, so with AVX-512 it
//! stays in `k1` and the selects use `k1` directly. `dynasm` cannot encode
//! EVEX: the 16-lane arms call [`evex`].

use super::{MASK, S1, S3, Vector, encode};
use crate::jit::x64::evex::{self, Kreg, Mask, Masking, Mem, Src, Zmm};
use dynasmrt::{DynamicLabel, DynasmApi, dynasm};

/// One VEX instruction on `ymm` registers when `$ymm`, else on `xmm`
/// registers: `R(n)` in the instruction stands for the register family.
macro_rules! vex {
    ($ops:expr, $ymm:expr; $($t:tt)*) => {
        if $ymm {
            vex!(@sub $ops, Ry, [] $($t)*)
        } else {
            vex!(@sub $ops, Rx, [] $($t)*)
        }
    };
    (@sub $ops:expr, $r:ident, [$($done:tt)*] R $($rest:tt)*) => {
        vex!(@sub $ops, $r, [$($done)* $r] $($rest)*)
    };
    (@sub $ops:expr, $r:ident, [$($done:tt)*] $next:tt $($rest:tt)*) => {
        vex!(@sub $ops, $r, [$($done)* $next] $($rest)*)
    };
    (@sub $ops:expr, $r:ident, [$($done:tt)*]) => {
        dynasm!($ops ; .arch x64 ; $($done)*)
    };
}

/// A two-source vector operation.
#[derive(Clone, Copy, Debug)]
pub(in crate::jit::x64) enum V {
    Addps,
    Subps,
    Mulps,
    Divps,
    Andps,
    Andnps,
    Orps,
    Xorps,
    Maxps,
    Minps,
    Paddd,
    Psubd,
    Pcmpeqd,
    Pcmpgtd,
    /// `cmpps` with this predicate.
    Cmpps(i8),
}

/// The VEX `pp` field and opcode (map `0F`) of `op` (the same with a
/// register or a memory source), or `None` for `cmpps`, which has an
/// immediate (see [`Vector::v3c`]).
fn vex_rip_opcode(op: V) -> Option<(u8, u8)> {
    Some(match op {
        V::Addps => (0, 0x58),
        V::Subps => (0, 0x5C),
        V::Mulps => (0, 0x59),
        V::Divps => (0, 0x5E),
        V::Andps => (0, 0x54),
        V::Andnps => (0, 0x55),
        V::Orps => (0, 0x56),
        V::Xorps => (0, 0x57),
        V::Maxps => (0, 0x5F),
        V::Minps => (0, 0x5D),
        V::Paddd => (1, 0xFE),
        V::Psubd => (1, 0xFA),
        V::Pcmpeqd => (1, 0x76),
        V::Pcmpgtd => (1, 0x66),
        V::Cmpps(_) => return None,
    })
}

/// `op d, a, [rip + 0]` in the two-byte VEX form `dynasm` writes
/// (`vex_rip_tests::every_form_matches_the_assembler` holds them equal),
/// built at once: the constant-pool operations are the commonest
/// instructions of float24 code, and the assembler's byte-by-byte encoding
/// of them was a tenth of its compilation.
pub(super) fn vex_rip(pp: u8, opcode: u8, d: u8, a: u8, ymm: bool) -> [u8; 8] {
    let r = (!d >> 3) & 1;
    [
        0xC5,
        r << 7 | (!a & 15) << 3 | u8::from(ymm) << 2 | pp,
        opcode,
        (d & 7) << 3 | 0b101,
        0,
        0,
        0,
        0,
    ]
}

/// A one-source vector operation.
#[derive(Clone, Copy, Debug)]
pub(in crate::jit::x64) enum U {
    /// Round toward −inf.
    Floor,
    Sqrt,
    /// Truncating float → i32 (`0x8000_0000` when out of range).
    Cvttps2dq,
    Cvtdq2ps,
    Pslld(i8),
    Psrad(i8),
    Psrld(i8),
}

#[cfg(test)]
impl V {
    /// Every operation (one compare predicate), for the encoding tests.
    pub const ALL: [V; 15] = [
        V::Addps,
        V::Subps,
        V::Mulps,
        V::Divps,
        V::Andps,
        V::Andnps,
        V::Orps,
        V::Xorps,
        V::Maxps,
        V::Minps,
        V::Paddd,
        V::Psubd,
        V::Pcmpeqd,
        V::Pcmpgtd,
        V::Cmpps(1),
    ];
}

#[cfg(test)]
impl U {
    /// Every operation (one shift count), for the encoding tests.
    pub const ALL: [U; 7] = [
        U::Floor,
        U::Sqrt,
        U::Cvttps2dq,
        U::Cvtdq2ps,
        U::Pslld(3),
        U::Psrad(3),
        U::Psrld(3),
    ];
}

/// The opmask the AVX-512 arms compare into and select by.
pub(in crate::jit::x64) const K: Kreg = Kreg::new(1);
const K_MASK: Mask = Mask::new(1);

pub(in crate::jit::x64) fn z(r: u8) -> Zmm {
    debug_assert!(r < 16, "the lowerings use registers 0-15");
    Zmm::new(r)
}

/// Emits the one EVEX instruction of `op` (a compare writes `K`).
fn evex_v3(out: &mut impl Extend<u8>, op: V, d: Zmm, a: Zmm, b: Src) {
    let m = Masking::None;
    match op {
        V::Addps => evex::vaddps(out, d, a, b, m),
        V::Subps => evex::vsubps(out, d, a, b, m),
        V::Mulps => evex::vmulps(out, d, a, b, m),
        V::Divps => evex::vdivps(out, d, a, b, m),
        V::Andps => evex::vandps(out, d, a, b, m),
        V::Andnps => evex::vandnps(out, d, a, b, m),
        V::Orps => evex::vorps(out, d, a, b, m),
        V::Xorps => evex::vxorps(out, d, a, b, m),
        // `a > b ? a : b` (`b` for NaN or two zeros), as `maxps`.
        V::Maxps => evex::vmaxps(out, d, a, b, m),
        V::Minps => evex::vminps(out, d, a, b, m),
        V::Paddd => evex::vpaddd(out, d, a, b, m),
        V::Psubd => evex::vpsubd(out, d, a, b, m),
        V::Pcmpeqd => evex::vpcmpeqd(out, K, a, b, None),
        V::Pcmpgtd => evex::vpcmpd(out, K, a, b, evex::icmp::NLE, None),
        V::Cmpps(p) => evex::vcmpps(out, K, a, b, p as u8, None),
    }
}

/// Whether `op` is a compare (its AVX-512 form writes `K`).
pub(in crate::jit::x64) fn is_compare(op: V) -> bool {
    matches!(op, V::Pcmpeqd | V::Pcmpgtd | V::Cmpps(_))
}

impl Vector<'_> {
    /// Appends the EVEX instruction `emit` writes with `[rip + label]` as its
    /// memory operand.
    pub fn with_label(&mut self, label: DynamicLabel, emit: impl FnOnce(&mut Vec<u8>, Mem)) {
        evex::with_rip_label(&mut *self.ops, label, 0, emit);
    }

    /// `d = a op b`.
    ///
    /// The VEX forms (every instruction of the single-vertex code on an AVX
    /// host) are encoded by a small function of their own: asked for a few
    /// thousand times per large shader, they no longer pay for saving the
    /// registers the other encodings' arms need.
    #[inline]
    pub fn v3(&mut self, op: V, d: u8, a: u8, b: u8) {
        if self.vex() {
            self.v3_vex(op, d, a, b);
        } else {
            self.v3_other(op, d, a, b);
        }
    }

    /// [`Self::v3`] with VEX.
    #[inline(never)]
    fn v3_vex(&mut self, op: V, d: u8, a: u8, b: u8) {
        let y = self.ymm();
        // Encoded by hand (`encode`): `dynasm` spends a `memcpy` call on each.
        if let V::Cmpps(p) = op {
            encode::vcmpps(d, a, b, p as u8, y).put(&mut *self.ops);
        } else if let Some((pp, opcode)) = vex_rip_opcode(op) {
            encode::vex_rr(pp, opcode, d, Some(a), b, y).put(&mut *self.ops);
        }
    }

    /// [`Self::v3`] with SSE or AVX-512.
    #[inline(never)]
    fn v3_other(&mut self, op: V, d: u8, a: u8, b: u8) {
        if self.evex() {
            evex_v3(&mut *self.ops, op, z(d), z(a), Src::Zmm(z(b)));
            self.evex_compare_result(op, d);
            return;
        }
        debug_assert!(d != b || a == b, "xmm{d} = xmm{a} op xmm{b}");
        self.copy(d, a);
        match op {
            V::Addps => dynasm!(self.ops ; .arch x64 ; addps Rx(d), Rx(b)),
            V::Subps => dynasm!(self.ops ; .arch x64 ; subps Rx(d), Rx(b)),
            V::Mulps => dynasm!(self.ops ; .arch x64 ; mulps Rx(d), Rx(b)),
            V::Divps => dynasm!(self.ops ; .arch x64 ; divps Rx(d), Rx(b)),
            V::Andps => dynasm!(self.ops ; .arch x64 ; andps Rx(d), Rx(b)),
            V::Andnps => dynasm!(self.ops ; .arch x64 ; andnps Rx(d), Rx(b)),
            V::Orps => dynasm!(self.ops ; .arch x64 ; orps Rx(d), Rx(b)),
            V::Xorps => dynasm!(self.ops ; .arch x64 ; xorps Rx(d), Rx(b)),
            V::Maxps => dynasm!(self.ops ; .arch x64 ; maxps Rx(d), Rx(b)),
            V::Minps => dynasm!(self.ops ; .arch x64 ; minps Rx(d), Rx(b)),
            V::Paddd => dynasm!(self.ops ; .arch x64 ; paddd Rx(d), Rx(b)),
            V::Psubd => dynasm!(self.ops ; .arch x64 ; psubd Rx(d), Rx(b)),
            V::Pcmpeqd => dynasm!(self.ops ; .arch x64 ; pcmpeqd Rx(d), Rx(b)),
            V::Pcmpgtd => dynasm!(self.ops ; .arch x64 ; pcmpgtd Rx(d), Rx(b)),
            V::Cmpps(p) => dynasm!(self.ops ; .arch x64 ; cmpps Rx(d), Rx(b), p),
        }
    }

    /// `d = a op [base + off]`, the 16 bytes at `off` from general-purpose
    /// register `base` (aligned): `xmm` code only (the single-vertex
    /// lowering). The float arithmetic takes the memory operand directly;
    /// any other operation loads it into [`S3`] first.
    pub fn v3m(&mut self, op: V, d: u8, a: u8, base: u8, off: i32) {
        debug_assert!(!self.evex() && !self.ymm(), "a 16-byte memory operand");
        if self.vex() {
            match op {
                V::Addps => dynasm!(self.ops ; .arch x64 ; vaddps Rx(d), Rx(a), [Rq(base) + off]),
                V::Subps => dynasm!(self.ops ; .arch x64 ; vsubps Rx(d), Rx(a), [Rq(base) + off]),
                V::Mulps => dynasm!(self.ops ; .arch x64 ; vmulps Rx(d), Rx(a), [Rq(base) + off]),
                V::Maxps => dynasm!(self.ops ; .arch x64 ; vmaxps Rx(d), Rx(a), [Rq(base) + off]),
                V::Minps => dynasm!(self.ops ; .arch x64 ; vminps Rx(d), Rx(a), [Rq(base) + off]),
                _ => {
                    dynasm!(self.ops ; .arch x64 ; vmovaps Rx(S3), [Rq(base) + off]);
                    self.v3(op, d, a, S3);
                }
            }
            return;
        }
        // `d` may equal `a`: the memory operand is the second either way.
        self.copy(d, a);
        match op {
            V::Addps => dynasm!(self.ops ; .arch x64 ; addps Rx(d), [Rq(base) + off]),
            V::Subps => dynasm!(self.ops ; .arch x64 ; subps Rx(d), [Rq(base) + off]),
            V::Mulps => dynasm!(self.ops ; .arch x64 ; mulps Rx(d), [Rq(base) + off]),
            V::Maxps => dynasm!(self.ops ; .arch x64 ; maxps Rx(d), [Rq(base) + off]),
            V::Minps => dynasm!(self.ops ; .arch x64 ; minps Rx(d), [Rq(base) + off]),
            _ => {
                dynasm!(self.ops ; .arch x64 ; movaps Rx(S3), [Rq(base) + off]);
                self.v3(op, d, d, S3);
            }
        }
    }

    /// `d = a op c` with `c` the constant `bits` in every lane (a memory
    /// operand); `d` may equal `a`. A VEX `cmpps` clobbers [`S1`].
    ///
    /// The VEX forms with a memory operand (the commonest instructions of
    /// float24 code) are encoded by a small function of their own, as in
    /// [`Self::v3`].
    #[inline]
    pub fn v3c(&mut self, op: V, d: u8, a: u8, bits: u32) {
        match vex_rip_opcode(op) {
            Some((pp, opcode)) if self.vex() => self.v3c_vex(pp, opcode, d, a, bits),
            _ => self.v3c_other(op, d, a, bits),
        }
    }

    /// [`Self::v3c`] with VEX, for an operation of VEX `pp` and `opcode`
    /// (map `0F`): `op d, a, [rip + 0]`, the displacement written with the
    /// pool's ([`Self::pool_ref`]).
    #[inline(never)]
    fn v3c_vex(&mut self, pp: u8, opcode: u8, d: u8, a: u8, bits: u32) {
        // The bytes first, then the pool's entry: the operands are dead
        // before the calls of the slow paths (pooling, growing a list), so
        // fewer values live across them to keep in saved registers.
        let bytes = vex_rip(pp, opcode, d, a, self.ymm());
        self.ops.extend(&bytes);
        let entry = self.pool_const(bits);
        self.pool_ref(entry, 0);
    }

    /// [`Self::v3c`] but for its VEX memory forms.
    #[inline(never)]
    fn v3c_other(&mut self, op: V, d: u8, a: u8, bits: u32) {
        if self.evex() {
            let label = self.pool_label(bits);
            self.with_label(label, |out, m| evex_v3(out, op, z(d), z(a), Src::Mem(m)));
            self.evex_compare_result(op, d);
            return;
        }
        if self.vex() {
            // Only `cmpps` comes here with VEX ([`Self::v3c_vex`] has the
            // rest). The assembler encodes `vcmpps` with a memory operand
            // wrongly (see `v3`): the constant goes through `S1`.
            debug_assert!(d != S1 && a != S1, "v3c(cmpps) clobbers S1");
            self.constant(S1, bits);
            self.v3(op, d, a, S1);
            return;
        }
        // The constant is addressed as `[rip + 0]`, its displacement written
        // with the pool's (`pool_ref`).
        let entry = self.pool_const(bits);
        self.copy(d, a);
        match op {
            V::Addps => dynasm!(self.ops ; .arch x64 ; addps Rx(d), [rip + 0]),
            V::Subps => dynasm!(self.ops ; .arch x64 ; subps Rx(d), [rip + 0]),
            V::Mulps => dynasm!(self.ops ; .arch x64 ; mulps Rx(d), [rip + 0]),
            V::Divps => dynasm!(self.ops ; .arch x64 ; divps Rx(d), [rip + 0]),
            V::Andps => dynasm!(self.ops ; .arch x64 ; andps Rx(d), [rip + 0]),
            V::Andnps => dynasm!(self.ops ; .arch x64 ; andnps Rx(d), [rip + 0]),
            V::Orps => dynasm!(self.ops ; .arch x64 ; orps Rx(d), [rip + 0]),
            V::Xorps => dynasm!(self.ops ; .arch x64 ; xorps Rx(d), [rip + 0]),
            V::Maxps => dynasm!(self.ops ; .arch x64 ; maxps Rx(d), [rip + 0]),
            V::Minps => dynasm!(self.ops ; .arch x64 ; minps Rx(d), [rip + 0]),
            V::Paddd => dynasm!(self.ops ; .arch x64 ; paddd Rx(d), [rip + 0]),
            V::Psubd => dynasm!(self.ops ; .arch x64 ; psubd Rx(d), [rip + 0]),
            V::Pcmpeqd => dynasm!(self.ops ; .arch x64 ; pcmpeqd Rx(d), [rip + 0]),
            V::Pcmpgtd => dynasm!(self.ops ; .arch x64 ; pcmpgtd Rx(d), [rip + 0]),
            V::Cmpps(p) => {
                dynasm!(self.ops ; .arch x64 ; cmpps Rx(d), [rip + 0], p);
                self.pool_ref(entry, 1);
                return;
            }
        }
        self.pool_ref(entry, 0);
    }

    /// After an AVX-512 `evex_v3` into `d`: a compare's `k1` becomes the vector
    /// `d`, unless `d` is [`MASK`].
    fn evex_compare_result(&mut self, op: V, d: u8) {
        if !is_compare(op) {
            self.evex_wrote(d);
        } else if d == MASK {
            self.st.mask_in_k1 = true;
            self.st.k1_holds = None;
        } else {
            evex::vpmovm2d(&mut *self.ops, z(d), K);
            self.st.mask_in_k1 = false;
            self.st.k1_holds = Some(d);
        }
    }

    /// AVX-512: a method other than a compare writes register `d`: when that
    /// is [`MASK`], `k1` no longer holds what a select by it must read.
    pub fn evex_wrote(&mut self, d: u8) {
        self.st.mask_in_k1 &= d != MASK;
        if self.st.k1_holds == Some(d) {
            self.st.k1_holds = None;
        }
    }

    /// AVX-512: `k1` now holds the sign bits of vector register `s`.
    pub fn evex_k1_mirrors(&mut self, s: u8) {
        self.st.mask_in_k1 = false;
        self.st.k1_holds = Some(s);
    }

    /// AVX-512: `k1` = the sign bits of `mask` (for [`MASK`], the compare
    /// already there).
    fn evex_mask(&mut self, mask: u8) {
        if mask == MASK {
            debug_assert!(
                self.st.mask_in_k1,
                "a select by MASK without a compare into it"
            );
        } else if self.st.k1_holds != Some(mask) {
            evex::vpmovd2m(&mut *self.ops, K, z(mask));
            self.evex_k1_mirrors(mask);
        }
    }

    /// `d = op a`.
    pub fn u(&mut self, op: U, d: u8, a: u8) {
        if self.evex() {
            self.evex_wrote(d);
            let (o, d, a, m) = (&mut *self.ops, z(d), Src::Zmm(z(a)), Masking::None);
            match op {
                // Toward −inf, precision exception suppressed: `roundps` 9.
                U::Floor => evex::vrndscaleps(o, d, a, evex::ROUND_FLOOR, m),
                U::Sqrt => evex::vsqrtps(o, d, a, m),
                U::Cvttps2dq => evex::vcvttps2dq(o, d, a, m),
                U::Cvtdq2ps => evex::vcvtdq2ps(o, d, a, m),
                U::Pslld(n) => evex::vpslld(o, d, a, n as u8, m),
                U::Psrad(n) => evex::vpsrad(o, d, a, n as u8, m),
                U::Psrld(n) => evex::vpsrld(o, d, a, n as u8, m),
            }
            return;
        }
        if self.vex() {
            let y = self.ymm();
            match op {
                U::Floor => vex!(self.ops, y; vroundps R(d), R(a), 9),
                U::Sqrt => vex!(self.ops, y; vsqrtps R(d), R(a)),
                U::Cvttps2dq => vex!(self.ops, y; vcvttps2dq R(d), R(a)),
                U::Cvtdq2ps => vex!(self.ops, y; vcvtdq2ps R(d), R(a)),
                U::Pslld(n) => vex!(self.ops, y; vpslld R(d), R(a), n),
                U::Psrad(n) => vex!(self.ops, y; vpsrad R(d), R(a), n),
                U::Psrld(n) => vex!(self.ops, y; vpsrld R(d), R(a), n),
            }
            return;
        }
        match op {
            U::Floor => dynasm!(self.ops ; .arch x64 ; roundps Rx(d), Rx(a), 9),
            U::Sqrt => dynasm!(self.ops ; .arch x64 ; sqrtps Rx(d), Rx(a)),
            U::Cvttps2dq => dynasm!(self.ops ; .arch x64 ; cvttps2dq Rx(d), Rx(a)),
            U::Cvtdq2ps => dynasm!(self.ops ; .arch x64 ; cvtdq2ps Rx(d), Rx(a)),
            U::Pslld(n) => {
                self.copy(d, a);
                dynasm!(self.ops ; .arch x64 ; pslld Rx(d), n);
            }
            U::Psrad(n) => {
                self.copy(d, a);
                dynasm!(self.ops ; .arch x64 ; psrad Rx(d), n);
            }
            U::Psrld(n) => {
                self.copy(d, a);
                dynasm!(self.ops ; .arch x64 ; psrld Rx(d), n);
            }
        }
    }

    /// The register a compare read only by masked operations writes:
    /// [`MASK`] with AVX-512 (it stays in `k1`), else `scratch` (SSE then
    /// needs no copy into `xmm0`).
    pub fn mask_or(&self, scratch: u8) -> u8 {
        if self.evex() { MASK } else { scratch }
    }

    /// `d = a`.
    pub fn copy(&mut self, d: u8, a: u8) {
        if d == a {
            return;
        }
        if self.evex() {
            self.evex_wrote(d);
            evex::vmovaps(&mut *self.ops, z(d), z(a), Masking::None);
        } else if self.vex() {
            encode::vex_rr(0, 0x28, d, None, a, self.ymm()).put(&mut *self.ops);
        } else {
            dynasm!(self.ops ; .arch x64 ; movaps Rx(d), Rx(a));
        }
    }

    /// `d = mask ? b : a` lane-wise; `d` may equal `a` but no other operand.
    /// Clobbers register 0 (SSE's implicit mask, [`MASK`]).
    pub fn select(&mut self, d: u8, a: u8, b: u8, mask: u8) {
        if self.evex() {
            // The sign bits, as `blendvps` reads them.
            self.evex_mask(mask);
            let merge = Masking::Merge(K_MASK);
            evex::vblendmps(&mut *self.ops, z(d), z(a), Src::Zmm(z(b)), merge);
            self.evex_wrote(d);
            return;
        }
        if self.vex() {
            let y = self.ymm();
            vex!(self.ops, y; vblendvps R(d), R(a), R(b), R(mask));
            return;
        }
        if mask != MASK {
            dynasm!(self.ops ; .arch x64 ; movaps xmm0, Rx(mask));
        }
        self.copy(d, a);
        dynasm!(self.ops ; .arch x64 ; blendvps Rx(d), Rx(b));
    }

    /// `d = mask ? c : a` with `c` the constant `bits`; `d` may equal `a`.
    pub fn select_c(&mut self, d: u8, a: u8, bits: u32, mask: u8) {
        if self.evex() {
            let label = self.pool_label(bits);
            self.evex_mask(mask);
            let merge = Masking::Merge(K_MASK);
            self.with_label(label, |out, m| {
                evex::vblendmps(out, z(d), z(a), Src::Mem(m), merge);
            });
            self.evex_wrote(d);
            return;
        }
        if self.vex() {
            let y = self.ymm();
            let entry = self.pool_const(bits);
            vex!(self.ops, y; vblendvps R(d), R(a), [rip + 0], R(mask));
            // The mask register's byte follows the displacement.
            self.pool_ref(entry, 1);
            return;
        }
        let entry = self.pool_const(bits);
        if mask != MASK {
            dynasm!(self.ops ; .arch x64 ; movaps xmm0, Rx(mask));
        }
        self.copy(d, a);
        dynasm!(self.ops ; .arch x64 ; blendvps Rx(d), [rip + 0]);
        self.pool_ref(entry, 0);
    }

    /// `d = mask ? a : 0` lane-wise (`mask` all ones or zero in each lane).
    pub fn keep_where(&mut self, d: u8, a: u8, mask: u8) {
        if self.evex() {
            self.evex_mask(mask);
            evex::vmovaps(&mut *self.ops, z(d), z(a), Masking::Zero(K_MASK));
            self.evex_wrote(d);
            return;
        }
        self.v3(V::Andps, d, a, mask);
    }

    /// `d = mask ? a & c : 0` lane-wise with `c` the constant `bits`; `d` may
    /// equal `a`, not `mask`.
    pub fn and_c_where(&mut self, d: u8, a: u8, bits: u32, mask: u8) {
        if self.evex() {
            self.evex_mask(mask);
            let label = self.pool_label(bits);
            let zero = Masking::Zero(K_MASK);
            self.with_label(label, |out, m| {
                evex::vandps(out, z(d), z(a), Src::Mem(m), zero)
            });
            self.evex_wrote(d);
            return;
        }
        debug_assert_ne!(d, mask);
        self.v3c(V::Andps, d, a, bits);
        self.v3(V::Andps, d, d, mask);
    }

    /// `d` = the constant `bits` in every lane.
    pub fn constant(&mut self, d: u8, bits: u32) {
        self.constant_lanes(d, [bits; 4]);
    }

    /// `d` = the constant whose every 16 bytes are `bits`.
    pub fn constant_lanes(&mut self, d: u8, bits: [u32; 4]) {
        if self.evex() {
            self.evex_wrote(d);
            let (o, r) = (&mut *self.ops, z(d));
            match bits {
                [0, 0, 0, 0] => evex::vpxord(o, r, r, Src::Zmm(r), Masking::None),
                [u32::MAX, u32::MAX, u32::MAX, u32::MAX] => {
                    evex::vpternlogd(o, r, r, Src::Zmm(r), 0xFF, Masking::None)
                }
                _ => {
                    let label = self.pool_label_lanes(bits);
                    self.with_label(label, |out, m| {
                        evex::vmovaps_load(out, r, m, Masking::None);
                    });
                }
            }
            return;
        }
        let (vex, y) = (self.vex(), self.ymm());
        // The VEX forms are encoded by hand as `dynasm` writes them
        // (`vex_rip_tests`): a float24 shader loads a hundred constants.
        if bits == [0; 4] {
            if vex {
                encode::vex_rr(0, 0x57, d, Some(d), d, y).put(&mut *self.ops);
            } else {
                dynasm!(self.ops ; .arch x64 ; xorps Rx(d), Rx(d));
            }
        } else if bits == [u32::MAX; 4] {
            if vex {
                encode::vex_rr(1, 0x76, d, Some(d), d, y).put(&mut *self.ops);
            } else {
                dynasm!(self.ops ; .arch x64 ; pcmpeqd Rx(d), Rx(d));
            }
        } else {
            let entry = self.pool_entry(bits);
            if vex {
                // `vmovaps d, [rip + 0]`: no second source (VEX.vvvv 1111).
                self.ops.extend(&vex_rip(0, 0x28, d, 0, y));
            } else {
                dynasm!(self.ops ; .arch x64 ; movaps Rx(d), [rip + 0]);
            }
            self.pool_ref(entry, 0);
        }
    }

    /// `d = !d` (all bits).
    pub fn not(&mut self, d: u8) {
        if self.evex() {
            // Bit `i` of the immediate is the result for inputs `i` (all
            // three are `d`: 0b000 or 0b111).
            let r = z(d);
            evex::vpternlogd(&mut *self.ops, r, r, Src::Zmm(r), 0x55, Masking::None);
            self.evex_wrote(d);
            return;
        }
        self.v3c(V::Xorps, d, d, u32::MAX);
    }

    /// Sets ZF when every bit of `s` is zero.
    pub fn test_zero(&mut self, s: u8) {
        if self.evex() {
            evex::vptestmd(&mut *self.ops, K, z(s), Src::Zmm(z(s)), None);
            evex::kortestw(&mut *self.ops, K, K);
            self.forget_masks();
        } else if self.vex() {
            let y = self.ymm();
            vex!(self.ops, y; vptest R(s), R(s));
        } else {
            dynasm!(self.ops ; .arch x64 ; ptest Rx(s), Rx(s));
        }
    }

    /// Sets ZF when no lane of `s` is above the constant `bits` (signed);
    /// clobbers `scratch`.
    pub fn test_gt_c(&mut self, s: u8, bits: u32, scratch: u8) {
        if self.evex() {
            let label = self.pool_label(bits);
            self.with_label(label, |out, m| {
                evex::vpcmpd(out, K, z(s), Src::Mem(m), evex::icmp::NLE, None);
            });
            evex::kortestw(&mut *self.ops, K, K);
            self.forget_masks();
        } else {
            self.v3c(V::Pcmpgtd, scratch, s, bits);
            self.test_zero(scratch);
        }
    }

    /// Sets ZF when no lane of `s` is NaN; clobbers `scratch`.
    pub fn test_nan(&mut self, s: u8, scratch: u8) {
        if self.evex() {
            let unordered = evex::cmp::UNORD_Q;
            evex::vcmpps(&mut *self.ops, K, z(s), Src::Zmm(z(s)), unordered, None);
            evex::kortestw(&mut *self.ops, K, K);
            self.forget_masks();
        } else {
            self.v3(V::Cmpps(3), scratch, s, s);
            self.test_zero(scratch);
        }
    }
}

#[cfg(test)]
mod vex_rip_tests {
    use super::{V, vex_rip, vex_rip_opcode};
    use dynasmrt::x64::X64Relocation;
    use dynasmrt::{DynasmApi, VecAssembler, dynasm};

    /// `dynasm`'s encoding of `op d, a, [rip + 0]`.
    fn assembled(op: V, d: u8, a: u8, ymm: bool) -> Vec<u8> {
        let mut ops: VecAssembler<X64Relocation> = VecAssembler::new(0);
        match op {
            V::Addps => vex!(ops, ymm; vaddps R(d), R(a), [rip + 0]),
            V::Subps => vex!(ops, ymm; vsubps R(d), R(a), [rip + 0]),
            V::Mulps => vex!(ops, ymm; vmulps R(d), R(a), [rip + 0]),
            V::Divps => vex!(ops, ymm; vdivps R(d), R(a), [rip + 0]),
            V::Andps => vex!(ops, ymm; vandps R(d), R(a), [rip + 0]),
            V::Andnps => vex!(ops, ymm; vandnps R(d), R(a), [rip + 0]),
            V::Orps => vex!(ops, ymm; vorps R(d), R(a), [rip + 0]),
            V::Xorps => vex!(ops, ymm; vxorps R(d), R(a), [rip + 0]),
            V::Maxps => vex!(ops, ymm; vmaxps R(d), R(a), [rip + 0]),
            V::Minps => vex!(ops, ymm; vminps R(d), R(a), [rip + 0]),
            V::Paddd => vex!(ops, ymm; vpaddd R(d), R(a), [rip + 0]),
            V::Psubd => vex!(ops, ymm; vpsubd R(d), R(a), [rip + 0]),
            V::Pcmpeqd => vex!(ops, ymm; vpcmpeqd R(d), R(a), [rip + 0]),
            V::Pcmpgtd => vex!(ops, ymm; vpcmpgtd R(d), R(a), [rip + 0]),
            V::Cmpps(_) => unreachable!("no VEX memory form"),
        }
        ops.finalize().expect("assembles")
    }

    /// `dynasm`'s encoding of `op d, a, b` on registers.
    fn assembled_rr(op: V, d: u8, a: u8, b: u8, ymm: bool) -> Vec<u8> {
        let mut ops: VecAssembler<X64Relocation> = VecAssembler::new(0);
        match op {
            V::Addps => vex!(ops, ymm; vaddps R(d), R(a), R(b)),
            V::Subps => vex!(ops, ymm; vsubps R(d), R(a), R(b)),
            V::Mulps => vex!(ops, ymm; vmulps R(d), R(a), R(b)),
            V::Divps => vex!(ops, ymm; vdivps R(d), R(a), R(b)),
            V::Andps => vex!(ops, ymm; vandps R(d), R(a), R(b)),
            V::Andnps => vex!(ops, ymm; vandnps R(d), R(a), R(b)),
            V::Orps => vex!(ops, ymm; vorps R(d), R(a), R(b)),
            V::Xorps => vex!(ops, ymm; vxorps R(d), R(a), R(b)),
            V::Maxps => vex!(ops, ymm; vmaxps R(d), R(a), R(b)),
            V::Minps => vex!(ops, ymm; vminps R(d), R(a), R(b)),
            V::Paddd => vex!(ops, ymm; vpaddd R(d), R(a), R(b)),
            V::Psubd => vex!(ops, ymm; vpsubd R(d), R(a), R(b)),
            V::Pcmpeqd => vex!(ops, ymm; vpcmpeqd R(d), R(a), R(b)),
            V::Pcmpgtd => vex!(ops, ymm; vpcmpgtd R(d), R(a), R(b)),
            V::Cmpps(_) => unreachable!("written by dynasm"),
        }
        ops.finalize().expect("assembles")
    }

    /// `constant_lanes`' hand-encoded VEX forms: the load from the pool
    /// (`vex_rip` without a second source), and the zeros and ones of a
    /// register with itself (`encode::vex_rr`).
    #[test]
    fn constant_loads_match_the_assembler() {
        for ymm in [false, true] {
            for d in 0..16 {
                let mut ops: VecAssembler<X64Relocation> = VecAssembler::new(0);
                vex!(ops, ymm; vmovaps R(d), [rip + 0]);
                let want = ops.finalize().expect("assembles");
                assert_eq!(vex_rip(0, 0x28, d, 0, ymm)[..], want[..], "load {d} {ymm}");
                let mut ops: VecAssembler<X64Relocation> = VecAssembler::new(0);
                vex!(ops, ymm; vxorps R(d), R(d), R(d));
                let want = ops.finalize().expect("assembles");
                let code = super::super::encode::vex_rr(0, 0x57, d, Some(d), d, ymm);
                assert_eq!(code.bytes(), &want[..], "zeros {d} {ymm}");
                let mut ops: VecAssembler<X64Relocation> = VecAssembler::new(0);
                vex!(ops, ymm; vpcmpeqd R(d), R(d), R(d));
                let want = ops.finalize().expect("assembles");
                let code = super::super::encode::vex_rr(1, 0x76, d, Some(d), d, ymm);
                assert_eq!(code.bytes(), &want[..], "ones {d} {ymm}");
            }
        }
    }

    /// The hand-encoded register forms of `v3` and `copy` (`encode::vex_rr`).
    #[test]
    fn every_register_form_matches_the_assembler() {
        for ymm in [false, true] {
            for d in 0..16 {
                for a in 0..16 {
                    let mut ops: VecAssembler<X64Relocation> = VecAssembler::new(0);
                    vex!(ops, ymm; vmovaps R(d), R(a));
                    let want = ops.finalize().expect("assembles");
                    let code = super::encode::vex_rr(0, 0x28, d, None, a, ymm);
                    assert_eq!(code.bytes(), &want[..], "vmovaps {d} {a} ymm={ymm}");
                    for op in V::ALL.into_iter().filter(|op| !matches!(op, V::Cmpps(_))) {
                        let (pp, opcode) = vex_rip_opcode(op).expect("a VEX form");
                        for b in 0..16 {
                            let code = super::encode::vex_rr(pp, opcode, d, Some(a), b, ymm);
                            assert_eq!(
                                code.bytes(),
                                &assembled_rr(op, d, a, b, ymm)[..],
                                "{op:?} {d} {a} {b} ymm={ymm}"
                            );
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn every_form_matches_the_assembler() {
        // Every operation but the compare, which has no VEX memory form here.
        for op in V::ALL.into_iter().filter(|op| !matches!(op, V::Cmpps(_))) {
            let (pp, opcode) = vex_rip_opcode(op).expect("a VEX memory form");
            for ymm in [false, true] {
                for d in 0..16 {
                    for a in 0..16 {
                        assert_eq!(
                            vex_rip(pp, opcode, d, a, ymm),
                            assembled(op, d, a, ymm)[..],
                            "{op:?} {d} {a} ymm={ymm}"
                        );
                    }
                }
            }
        }
        assert_eq!(vex_rip_opcode(V::Cmpps(1)), None);
    }
}
