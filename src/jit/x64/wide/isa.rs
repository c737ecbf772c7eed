//! The width-parametrised instruction emitter of the wide lowering: one
//! method per vector operation the lane sequences need, encoded for the
//! width's register file (`xmm` with legacy SSE4.1 for 4 lanes, `ymm` with
//! VEX/AVX2 for 8, `zmm` with EVEX/AVX-512 for 16).
//!
//! Register numbers are 0–15; `d` is the result. With SSE the two-operand
//! forms copy `a` to `d` first, so `d` must not be `b` unless `a == b`.
//!
//! Masks are vectors in every width (a lane is all ones or zero), as the
//! lowering expects: with AVX-512 a compare writes the opmask `k1`, which
//! `vpmovm2d` turns into such a vector at once, and a select or a mask test
//! reads the vector's sign bits back into `k1` with `vpmovd2m`, which is what
//! `blendvps`/`movmskps` read. The one exception is register [`MASK`] (0, the
//! implicit mask of SSE's `blendvps`): a compare into it is read by selects
//! only, so with AVX-512 it stays in `k1` and the selects use `k1` directly.
//! `dynasm` cannot encode EVEX: the 16-lane arms call [`evex`](super::super::evex).

use super::super::Asm;
use super::super::evex::{self, Gpr, Kreg, Mask, Masking, Mem, Src, Zmm};
use crate::jit::wide::width::Width;
use dynasmrt::{DynamicLabel, DynasmApi, DynasmLabelApi, dynasm};

/// A two-source vector operation.
#[derive(Clone, Copy, Debug)]
pub(super) enum V {
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

/// A one-source vector operation.
#[derive(Clone, Copy, Debug)]
pub(super) enum U {
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

pub(super) struct WideAsm {
    pub ops: Asm,
    pub width: Width,
    /// Broadcast constants (a whole register each, at least 32 bytes),
    /// emitted after the code.
    pool: Vec<(u32, DynamicLabel)>,
    /// AVX-512: `k1` holds the last compare into [`MASK`] (debug builds
    /// check that a select by [`MASK`] has one to read).
    mask_in_k1: bool,
    /// AVX-512: `k1` holds the sign bits of this vector register (not
    /// [`MASK`]), which a select by it then reads without converting again.
    /// Forgotten when either changes and where paths join ([`Self::bind`]).
    k1_holds: Option<u8>,
}

/// The mask register: SSE's implicit `blendvps` operand; a compare into it is
/// only ever read by selects by it (with AVX-512 it is `k1`, not a vector).
pub(super) const MASK: u8 = 0;

/// The opmask the AVX-512 arms compare into and select by.
const K: Kreg = Kreg::new(1);
const K_MASK: Mask = Mask::new(1);

fn z(r: u8) -> Zmm {
    debug_assert!(r < 16, "the wide lowering uses registers 0-15");
    Zmm::new(r)
}

fn row(off: i32) -> Mem {
    Mem::base(Gpr::RDI, off)
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
fn is_compare(op: V) -> bool {
    matches!(op, V::Pcmpeqd | V::Pcmpgtd | V::Cmpps(_))
}

impl WideAsm {
    pub fn new(width: Width) -> WideAsm {
        WideAsm {
            ops: Asm::new(0),
            width,
            pool: Vec::new(),
            mask_in_k1: false,
            k1_holds: None,
        }
    }

    /// AVX2 (`ymm`, VEX).
    fn vex(&self) -> bool {
        self.width == Width::Avx2
    }

    /// AVX-512 (`zmm`, EVEX).
    fn evex(&self) -> bool {
        self.width == Width::Avx512
    }

    /// Appends the EVEX instruction `emit` writes with `[rip + label]` as its
    /// memory operand.
    fn with_label(&mut self, label: DynamicLabel, emit: impl FnOnce(&mut Vec<u8>, Mem)) {
        evex::with_rip_label(&mut self.ops, label, 0, emit);
    }

    /// Bytes of one constant pool entry (and its alignment): a whole register,
    /// at least 32 bytes.
    fn pool_entry_bytes(&self) -> usize {
        (4 * self.width.lanes()).max(32)
    }

    /// The label of a broadcast constant ([`Self::pool_entry_bytes`] of
    /// `bits`, aligned to that size).
    pub fn pool_label(&mut self, bits: u32) -> DynamicLabel {
        match self.pool.iter().find(|(b, _)| *b == bits) {
            Some(&(_, label)) => label,
            None => {
                let label = self.ops.new_dynamic_label();
                self.pool.push((bits, label));
                label
            }
        }
    }

    /// Emits the constant pool.
    pub fn emit_pool(&mut self) {
        let entry = self.pool_entry_bytes();
        if entry == 64 {
            dynasm!(self.ops ; .arch x64 ; .align 64);
        } else {
            debug_assert_eq!(entry, 32);
            dynasm!(self.ops ; .arch x64 ; .align 32);
        }
        for (bits, label) in std::mem::take(&mut self.pool) {
            dynasm!(self.ops ; .arch x64 ; =>label);
            for _ in 0..entry / 4 {
                dynasm!(self.ops ; .arch x64 ; .u32 bits);
            }
        }
    }

    /// `d = a op b`.
    pub fn v3(&mut self, op: V, d: u8, a: u8, b: u8) {
        if self.evex() {
            evex_v3(&mut self.ops, op, z(d), z(a), Src::Zmm(z(b)));
            self.evex_compare_result(op, d);
            return;
        }
        if self.vex() {
            match op {
                V::Addps => dynasm!(self.ops ; .arch x64 ; vaddps Ry(d), Ry(a), Ry(b)),
                V::Subps => dynasm!(self.ops ; .arch x64 ; vsubps Ry(d), Ry(a), Ry(b)),
                V::Mulps => dynasm!(self.ops ; .arch x64 ; vmulps Ry(d), Ry(a), Ry(b)),
                V::Divps => dynasm!(self.ops ; .arch x64 ; vdivps Ry(d), Ry(a), Ry(b)),
                V::Andps => dynasm!(self.ops ; .arch x64 ; vandps Ry(d), Ry(a), Ry(b)),
                V::Andnps => dynasm!(self.ops ; .arch x64 ; vandnps Ry(d), Ry(a), Ry(b)),
                V::Orps => dynasm!(self.ops ; .arch x64 ; vorps Ry(d), Ry(a), Ry(b)),
                V::Xorps => dynasm!(self.ops ; .arch x64 ; vxorps Ry(d), Ry(a), Ry(b)),
                V::Maxps => dynasm!(self.ops ; .arch x64 ; vmaxps Ry(d), Ry(a), Ry(b)),
                V::Minps => dynasm!(self.ops ; .arch x64 ; vminps Ry(d), Ry(a), Ry(b)),
                V::Paddd => dynasm!(self.ops ; .arch x64 ; vpaddd Ry(d), Ry(a), Ry(b)),
                V::Psubd => dynasm!(self.ops ; .arch x64 ; vpsubd Ry(d), Ry(a), Ry(b)),
                V::Pcmpeqd => dynasm!(self.ops ; .arch x64 ; vpcmpeqd Ry(d), Ry(a), Ry(b)),
                V::Pcmpgtd => dynasm!(self.ops ; .arch x64 ; vpcmpgtd Ry(d), Ry(a), Ry(b)),
                // dynasm writes `vcmpps`'s two sources in the opposite order
                // (see `lower::prims::tests::vex_source_order`).
                V::Cmpps(p) => dynasm!(self.ops ; .arch x64 ; vcmpps Ry(d), Ry(b), Ry(a), p),
            }
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

    /// `d = a op c` with `c` the constant `bits` in every lane; `d` may equal `a`.
    pub fn v3c(&mut self, op: V, d: u8, a: u8, bits: u32) {
        let label = self.pool_label(bits);
        if self.evex() {
            self.with_label(label, |out, m| evex_v3(out, op, z(d), z(a), Src::Mem(m)));
            self.evex_compare_result(op, d);
            return;
        }
        if self.vex() {
            match op {
                V::Andps => dynasm!(self.ops ; .arch x64 ; vandps Ry(d), Ry(a), [=>label]),
                V::Orps => dynasm!(self.ops ; .arch x64 ; vorps Ry(d), Ry(a), [=>label]),
                V::Xorps => dynasm!(self.ops ; .arch x64 ; vxorps Ry(d), Ry(a), [=>label]),
                V::Mulps => dynasm!(self.ops ; .arch x64 ; vmulps Ry(d), Ry(a), [=>label]),
                V::Pcmpgtd => dynasm!(self.ops ; .arch x64 ; vpcmpgtd Ry(d), Ry(a), [=>label]),
                _ => {
                    dynasm!(self.ops ; .arch x64 ; vmovaps Ry(SCRATCH_CONST), [=>label]);
                    self.v3(op, d, a, SCRATCH_CONST);
                }
            }
            return;
        }
        self.copy(d, a);
        match op {
            V::Andps => dynasm!(self.ops ; .arch x64 ; andps Rx(d), [=>label]),
            V::Orps => dynasm!(self.ops ; .arch x64 ; orps Rx(d), [=>label]),
            V::Xorps => dynasm!(self.ops ; .arch x64 ; xorps Rx(d), [=>label]),
            V::Mulps => dynasm!(self.ops ; .arch x64 ; mulps Rx(d), [=>label]),
            V::Pcmpgtd => dynasm!(self.ops ; .arch x64 ; pcmpgtd Rx(d), [=>label]),
            _ => {
                dynasm!(self.ops ; .arch x64 ; movaps Rx(SCRATCH_CONST), [=>label]);
                self.v3(op, d, d, SCRATCH_CONST);
            }
        }
    }

    /// After an AVX-512 `evex_v3` into `d`: a compare's `k1` becomes the vector
    /// `d`, unless `d` is [`MASK`].
    fn evex_compare_result(&mut self, op: V, d: u8) {
        if !is_compare(op) {
            self.evex_wrote(d);
        } else if d == MASK {
            self.mask_in_k1 = true;
            self.k1_holds = None;
        } else {
            evex::vpmovm2d(&mut self.ops, z(d), K);
            self.mask_in_k1 = false;
            self.k1_holds = Some(d);
        }
    }

    /// Binds `label` here: code may arrive from elsewhere, so nothing is
    /// known of `k1`.
    pub fn bind(&mut self, label: DynamicLabel) {
        dynasm!(self.ops ; .arch x64 ; =>label);
        self.forget_masks();
    }

    /// Forgets what `k1` holds (code emitted outside this assembler may
    /// have changed it or the vector it mirrors).
    pub fn forget_masks(&mut self) {
        self.mask_in_k1 = false;
        self.k1_holds = None;
    }

    /// AVX-512: a method other than a compare writes register `d`: when that
    /// is [`MASK`], `k1` no longer holds what a select by it must read.
    fn evex_wrote(&mut self, d: u8) {
        self.mask_in_k1 &= d != MASK;
        if self.k1_holds == Some(d) {
            self.k1_holds = None;
        }
    }

    /// AVX-512: `k1` = the sign bits of `mask` (for [`MASK`], the compare
    /// already there).
    fn evex_mask(&mut self, mask: u8) {
        if mask == MASK {
            debug_assert!(
                self.mask_in_k1,
                "a select by MASK without a compare into it"
            );
        } else if self.k1_holds != Some(mask) {
            evex::vpmovd2m(&mut self.ops, K, z(mask));
            self.mask_in_k1 = false;
            self.k1_holds = Some(mask);
        }
    }

    /// `d = op a`.
    pub fn u(&mut self, op: U, d: u8, a: u8) {
        if self.evex() {
            self.evex_wrote(d);
            let (o, d, a, m) = (&mut self.ops, z(d), Src::Zmm(z(a)), Masking::None);
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
            match op {
                U::Floor => dynasm!(self.ops ; .arch x64 ; vroundps Ry(d), Ry(a), 9),
                U::Sqrt => dynasm!(self.ops ; .arch x64 ; vsqrtps Ry(d), Ry(a)),
                U::Cvttps2dq => dynasm!(self.ops ; .arch x64 ; vcvttps2dq Ry(d), Ry(a)),
                U::Cvtdq2ps => dynasm!(self.ops ; .arch x64 ; vcvtdq2ps Ry(d), Ry(a)),
                U::Pslld(n) => dynasm!(self.ops ; .arch x64 ; vpslld Ry(d), Ry(a), n),
                U::Psrad(n) => dynasm!(self.ops ; .arch x64 ; vpsrad Ry(d), Ry(a), n),
                U::Psrld(n) => dynasm!(self.ops ; .arch x64 ; vpsrld Ry(d), Ry(a), n),
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

    pub fn copy(&mut self, d: u8, a: u8) {
        if d == a {
            return;
        }
        if self.evex() {
            self.evex_wrote(d);
            evex::vmovaps(&mut self.ops, z(d), z(a), Masking::None);
        } else if self.vex() {
            dynasm!(self.ops ; .arch x64 ; vmovaps Ry(d), Ry(a));
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
            evex::vblendmps(&mut self.ops, z(d), z(a), Src::Zmm(z(b)), merge);
            self.evex_wrote(d);
            return;
        }
        if self.vex() {
            dynasm!(self.ops ; .arch x64 ; vblendvps Ry(d), Ry(a), Ry(b), Ry(mask));
            return;
        }
        if mask != 0 {
            dynasm!(self.ops ; .arch x64 ; movaps xmm0, Rx(mask));
        }
        self.copy(d, a);
        dynasm!(self.ops ; .arch x64 ; blendvps Rx(d), Rx(b));
    }

    /// `d = mask ? c : a` with `c` the constant `bits`; `d` may equal `a`.
    pub fn select_c(&mut self, d: u8, a: u8, bits: u32, mask: u8) {
        let label = self.pool_label(bits);
        if self.evex() {
            self.evex_mask(mask);
            let merge = Masking::Merge(K_MASK);
            self.with_label(label, |out, m| {
                evex::vblendmps(out, z(d), z(a), Src::Mem(m), merge);
            });
            self.evex_wrote(d);
            return;
        }
        if self.vex() {
            dynasm!(self.ops ; .arch x64 ; vblendvps Ry(d), Ry(a), [=>label], Ry(mask));
            return;
        }
        if mask != 0 {
            dynasm!(self.ops ; .arch x64 ; movaps xmm0, Rx(mask));
        }
        self.copy(d, a);
        dynasm!(self.ops ; .arch x64 ; blendvps Rx(d), [=>label]);
    }

    /// `d = mask ? a : 0` lane-wise (`mask` all ones or zero in each lane).
    pub fn keep_where(&mut self, d: u8, a: u8, mask: u8) {
        if self.evex() {
            self.evex_mask(mask);
            evex::vmovaps(&mut self.ops, z(d), z(a), Masking::Zero(K_MASK));
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
        if self.evex() {
            self.evex_wrote(d);
            let (o, r) = (&mut self.ops, z(d));
            match bits {
                0 => evex::vpxord(o, r, r, Src::Zmm(r), Masking::None),
                u32::MAX => evex::vpternlogd(o, r, r, Src::Zmm(r), 0xFF, Masking::None),
                _ => {
                    let label = self.pool_label(bits);
                    self.with_label(label, |out, m| {
                        evex::vmovaps_load(out, r, m, Masking::None);
                    });
                }
            }
            return;
        }
        match (bits, self.vex()) {
            (0, true) => dynasm!(self.ops ; .arch x64 ; vxorps Ry(d), Ry(d), Ry(d)),
            (0, false) => dynasm!(self.ops ; .arch x64 ; xorps Rx(d), Rx(d)),
            (u32::MAX, true) => dynasm!(self.ops ; .arch x64 ; vpcmpeqd Ry(d), Ry(d), Ry(d)),
            (u32::MAX, false) => dynasm!(self.ops ; .arch x64 ; pcmpeqd Rx(d), Rx(d)),
            (_, true) => {
                let label = self.pool_label(bits);
                dynasm!(self.ops ; .arch x64 ; vmovaps Ry(d), [=>label]);
            }
            (_, false) => {
                let label = self.pool_label(bits);
                dynasm!(self.ops ; .arch x64 ; movaps Rx(d), [=>label]);
            }
        }
    }

    /// `d = !d` (all bits).
    pub fn not(&mut self, d: u8) {
        if self.evex() {
            // Bit `i` of the immediate is the result for inputs `i` (all
            // three are `d`: 0b000 or 0b111).
            let r = z(d);
            evex::vpternlogd(&mut self.ops, r, r, Src::Zmm(r), 0x55, Masking::None);
            self.evex_wrote(d);
            return;
        }
        self.constant(SCRATCH_CONST, u32::MAX);
        if self.vex() {
            dynasm!(self.ops ; .arch x64 ; vpxor Ry(d), Ry(d), Ry(SCRATCH_CONST));
        } else {
            dynasm!(self.ops ; .arch x64 ; pxor Rx(d), Rx(SCRATCH_CONST));
        }
    }

    /// `d` = the row at `off` of the register file.
    pub fn load(&mut self, d: u8, off: i32) {
        if self.evex() {
            self.evex_wrote(d);
            evex::vmovaps_load(&mut self.ops, z(d), row(off), Masking::None);
        } else if self.vex() {
            dynasm!(self.ops ; .arch x64 ; vmovaps Ry(d), [rdi + off]);
        } else {
            dynasm!(self.ops ; .arch x64 ; movaps Rx(d), [rdi + off]);
        }
    }

    /// The row at `off` of the register file = `s`.
    pub fn store(&mut self, off: i32, s: u8) {
        if self.evex() {
            evex::vmovaps_store(&mut self.ops, row(off), z(s), None);
        } else if self.vex() {
            dynasm!(self.ops ; .arch x64 ; vmovaps [rdi + off], Ry(s));
        } else {
            dynasm!(self.ops ; .arch x64 ; movaps [rdi + off], Rx(s));
        }
    }

    /// `d` = the 32 bits at `off` of the uniforms, in every lane.
    pub fn broadcast(&mut self, d: u8, off: i32) {
        if self.evex() {
            self.evex_wrote(d);
            let m = Mem::base(Gpr::RSI, off);
            evex::vbroadcastss_mem(&mut self.ops, z(d), m, Masking::None);
        } else if self.vex() {
            // The assembler encodes only the 128-bit form of `vbroadcastss`
            // from memory: load the scalar, then broadcast the register.
            dynasm!(self.ops ; .arch x64 ; vmovss Rx(d), [rsi + off] ; vbroadcastss Ry(d), Rx(d));
        } else {
            dynasm!(self.ops ; .arch x64 ; movss Rx(d), [rsi + off] ; shufps Rx(d), Rx(d), 0);
        }
    }

    /// `d` = `eax` in every lane.
    pub fn broadcast_eax(&mut self, d: u8) {
        if self.evex() {
            self.evex_wrote(d);
            evex::vpbroadcastd_gpr(&mut self.ops, z(d), Gpr::RAX, Masking::None);
        } else if self.vex() {
            dynasm!(self.ops ; .arch x64 ; vmovd Rx(d), eax ; vpbroadcastd Ry(d), Rx(d));
        } else {
            dynasm!(self.ops ; .arch x64 ; movd Rx(d), eax ; pshufd Rx(d), Rx(d), 0);
        }
    }

    /// `eax` = the sign bits of `s`'s lanes.
    pub fn movmsk(&mut self, s: u8) {
        if self.evex() {
            evex::vpmovd2m(&mut self.ops, K, z(s));
            evex::kmovw_to_gpr(&mut self.ops, Gpr::RAX, K);
            self.mask_in_k1 = false;
            self.k1_holds = Some(s);
        } else if self.vex() {
            // vmovmskps eax, ymm{s} (VEX.256.0F 50 /r), written out: the
            // assembler's table has no 256-bit form.
            if s < 8 {
                self.ops.extend([0xC5, 0xFC, 0x50, 0xC0 | s]);
            } else {
                self.ops.extend([0xC4, 0xC1, 0x7C, 0x50, 0xC0 | (s & 7)]);
            }
        } else {
            dynasm!(self.ops ; .arch x64 ; movmskps eax, Rx(s));
        }
    }

    /// The 32 bits at `off` of the register file = lane 0 of `s`.
    pub fn store_lane0(&mut self, off: i32, s: u8) {
        // The VEX `vmovd` reads the low 32 bits of `zmm{s}` as well.
        if self.vex() || self.evex() {
            dynasm!(self.ops ; .arch x64 ; vmovd [rdi + off], Rx(s));
        } else {
            dynasm!(self.ops ; .arch x64 ; movd [rdi + off], Rx(s));
        }
    }

    /// Sets ZF when every bit of `s` is zero.
    pub fn test_zero(&mut self, s: u8) {
        if self.evex() {
            evex::vptestmd(&mut self.ops, K, z(s), Src::Zmm(z(s)), None);
            evex::kortestw(&mut self.ops, K, K);
            self.forget_masks();
        } else if self.vex() {
            dynasm!(self.ops ; .arch x64 ; vptest Ry(s), Ry(s));
        } else {
            dynasm!(self.ops ; .arch x64 ; ptest Rx(s), Rx(s));
        }
    }

    /// With a vector gather (16 lanes): the four rows at `rows` = per lane,
    /// the four floats at `[rsi + floats + 16 * slot]`, or `default` in all
    /// four where `slot` (unsigned) is above `last`; registers `scratch` are
    /// clobbered. Returns false, emitting nothing, for the other widths.
    pub fn gather_rows(
        &mut self,
        slot: u8,
        scratch: [u8; 2],
        rows: [i32; 4],
        floats: i32,
        last: u32,
        default: u32,
    ) -> bool {
        if !self.evex() {
            return false;
        }
        const IN_RANGE: Kreg = Kreg::new(2);
        const GATHER: Mask = Mask::new(3);
        self.evex_wrote(scratch[0]);
        self.evex_wrote(scratch[1]);
        let (index, dst) = (z(scratch[0]), z(scratch[1]));
        let vector = self.ops.new_dynamic_label();
        let done = self.ops.new_dynamic_label();
        // Every lane reading one slot (a loop's `aL`, the same `a0` in all
        // vertices) is the common case: one scalar address and four
        // broadcasts, no gather.
        evex::vbroadcastss(&mut self.ops, index, z(slot).xmm(), Masking::None);
        evex::vpcmpeqd(&mut self.ops, IN_RANGE, z(slot), Src::Zmm(index), None);
        evex::kortestw(&mut self.ops, IN_RANGE, IN_RANGE);
        let defaults = self.pool_label(default);
        let last = last as i32;
        dynasm!(self.ops
            ; .arch x64
            ; jnc =>vector
            ; vmovd eax, Rx(slot)
            ; mov ecx, eax
            ; shl ecx, 4
            ; lea rcx, [rsi + rcx + floats]
            ; lea rdx, [=>defaults]
            ; cmp eax, last
            ; cmova rcx, rdx
        );
        for (c, row_off) in (0..).zip(rows) {
            let src = Mem::base(Gpr::RCX, 4 * c);
            evex::vbroadcastss_mem(&mut self.ops, dst, src, Masking::None);
            evex::vmovaps_store(&mut self.ops, row(row_off), dst, None);
        }
        dynasm!(self.ops ; .arch x64 ; jmp =>done);
        self.bind(vector);
        // k2 = the lanes in range; every gather takes a copy in k3, which it
        // clears. Out-of-range lanes read nothing (masked lanes never fault).
        let label = self.pool_label(last as u32);
        self.with_label(label, |out, m| {
            evex::vpcmpud(out, IN_RANGE, z(slot), Src::Mem(m), evex::icmp::LE, None);
        });
        // A vector register is 16 bytes: scale the slot (×16 is no VSIB scale).
        evex::vpslld(&mut self.ops, index, Src::Zmm(z(slot)), 4, Masking::None);
        for (c, row_off) in (0..).zip(rows) {
            self.constant(scratch[1], default);
            evex::kmovw(&mut self.ops, GATHER.into(), IN_RANGE);
            let src = evex::Vsib {
                base: Gpr::RSI,
                index,
                scale: evex::Scale::X1,
                disp: floats + 4 * c,
            };
            evex::vgatherdps(&mut self.ops, dst, src, GATHER);
            evex::vmovaps_store(&mut self.ops, row(row_off), dst, None);
        }
        self.bind(done);
        true
    }

    /// Sets ZF when no lane of `s` is above the constant `bits` (signed);
    /// clobbers `scratch`.
    pub fn test_gt_c(&mut self, s: u8, bits: u32, scratch: u8) {
        if self.evex() {
            let label = self.pool_label(bits);
            self.with_label(label, |out, m| {
                evex::vpcmpd(out, K, z(s), Src::Mem(m), evex::icmp::NLE, None);
            });
            evex::kortestw(&mut self.ops, K, K);
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
            evex::vcmpps(&mut self.ops, K, z(s), Src::Zmm(z(s)), unordered, None);
            evex::kortestw(&mut self.ops, K, K);
            self.forget_masks();
        } else {
            self.v3(V::Cmpps(3), scratch, s, s);
            self.test_zero(scratch);
        }
    }

    /// Leaves vector code (clears the upper halves after 256- and 512-bit code).
    pub fn leave(&mut self) {
        if self.vex() || self.evex() {
            dynasm!(self.ops ; .arch x64 ; vzeroupper);
        }
    }
}

/// Scratch register for constants inside one method.
pub(super) const SCRATCH_CONST: u8 = 15;

#[cfg(test)]
mod tests {
    use super::*;
    use iced_x86::{Code, Decoder, DecoderOptions, Instruction, Mnemonic, OpKind, Register};

    /// The VEX.L bit of the one instruction `emit` writes (true: 256 bits).
    fn vex_l(emit: impl FnOnce(&mut WideAsm)) -> bool {
        let mut a = WideAsm::new(Width::Avx2);
        emit(&mut a);
        a.emit_pool();
        let code = a.ops.finalize().expect("assembles");
        match code[0] {
            0xC5 => code[1] & 4 != 0,
            0xC4 => code[2] & 4 != 0,
            other => panic!("not a VEX instruction: {other:#04x}"),
        }
    }

    /// Every 8-lane operation works on whole `ymm` registers: the assembler
    /// silently encodes some forms (e.g. `vbroadcastss` from memory) with 128
    /// bits, which would leave lanes 4–7 zero.
    #[test]
    fn eight_lane_operations_are_256_bits_wide() {
        let ops = [
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
        for op in ops {
            assert!(vex_l(|a| a.v3(op, 1, 2, 9)), "{op:?}");
            assert!(
                vex_l(|a| a.v3c(op, 1, 2, 0x1234_5678)),
                "{op:?} with a constant"
            );
        }
        let unary = [
            U::Floor,
            U::Sqrt,
            U::Cvttps2dq,
            U::Cvtdq2ps,
            U::Pslld(3),
            U::Psrad(3),
            U::Psrld(3),
        ];
        for op in unary {
            assert!(vex_l(|a| a.u(op, 10, 3)), "{op:?}");
        }
        assert!(vex_l(|a| a.copy(1, 11)));
        assert!(vex_l(|a| a.select(1, 2, 3, 4)));
        assert!(vex_l(|a| a.select_c(1, 2, 0x7FC0_0000, 4)));
        assert!(vex_l(|a| a.constant(5, 0x3F80_0000)));
        assert!(vex_l(|a| a.constant(5, 0)));
        assert!(vex_l(|a| a.constant(5, u32::MAX)));
        assert!(vex_l(|a| a.load(7, 0x40)));
        assert!(vex_l(|a| a.store(0x40, 7)));
        assert!(vex_l(|a| a.test_zero(12)));
    }

    /// The instructions `emit` writes (the constant pool left out), decoded by
    /// iced-x86, with their bytes.
    fn decode_zmm(emit: impl FnOnce(&mut WideAsm)) -> Vec<(Instruction, Vec<u8>)> {
        let mut a = WideAsm::new(Width::Avx512);
        emit(&mut a);
        let end = a.ops.offset().0;
        a.emit_pool();
        let code = a.ops.finalize().expect("assembles");
        let mut decoder = Decoder::with_ip(64, &code[..end], 0, DecoderOptions::NONE);
        let mut out = Vec::new();
        while decoder.can_decode() {
            let at = decoder.position();
            let i = decoder.decode();
            assert_ne!(i.code(), Code::INVALID, "{:02X?}", &code[at..end]);
            out.push((i, code[at..at + i.len()].to_vec()));
        }
        out
    }

    /// Every 16-lane operation is made of 512-bit EVEX instructions (opmask
    /// instructions and `vzeroupper` aside), reads 64 bytes when it reads a
    /// row or a constant, and keeps to registers 0–15.
    fn assert_512_bits(what: &str, emit: impl FnOnce(&mut WideAsm)) {
        let code = decode_zmm(emit);
        let mut vector = 0;
        for (i, bytes) in &code {
            let m = i.mnemonic();
            // Opmask and general-register instructions, and `vmovd` of lane 0
            // into a general register.
            let general = (0..i.op_count()).all(|n| {
                i.op_kind(n) != OpKind::Register
                    || (Register::EAX..=Register::R15).contains(&i.op_register(n))
            });
            if general && bytes[0] != 0x62
                || matches!(
                    m,
                    Mnemonic::Kmovw | Mnemonic::Kortestw | Mnemonic::Vzeroupper | Mnemonic::Vmovd
                )
            {
                continue;
            }
            vector += 1;
            // EVEX, L'L = 10 (512 bits).
            assert!(
                bytes[0] == 0x62 && bytes[3] >> 5 & 3 == 0b10,
                "{what}: `{i}` ({bytes:02X?}) is not a 512-bit EVEX instruction"
            );
            for n in 0..i.op_count() {
                match i.op_kind(n) {
                    OpKind::Register => {
                        let r = i.op_register(n);
                        let zmm = (Register::ZMM0..=Register::ZMM15).contains(&r);
                        let k = (Register::K1..=Register::K3).contains(&r);
                        let eax = r == Register::EAX && m == Mnemonic::Vpbroadcastd;
                        let xmm = (Register::XMM0..=Register::XMM15).contains(&r)
                            && m == Mnemonic::Vbroadcastss;
                        assert!(zmm || k || eax || xmm, "{what}: `{i}`: operand {r:?}");
                    }
                    OpKind::Memory => {
                        let size = i.memory_size().size();
                        let scalar = matches!(m, Mnemonic::Vbroadcastss | Mnemonic::Vgatherdps);
                        assert_eq!(size, if scalar { 4 } else { 64 }, "{what}: `{i}`");
                    }
                    _ => {}
                }
            }
        }
        assert!(vector > 0, "{what}: no vector instruction");
    }

    /// The 16-lane analogue of [`eight_lane_operations_are_256_bits_wide`],
    /// and the AVX-512 forms of the masks: compares go through `k1` into a
    /// vector, selects and `movmsk` read the sign bits.
    #[test]
    fn sixteen_lane_operations_are_512_bits_wide() {
        let ops = [
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
        for op in ops {
            assert_512_bits(&format!("{op:?}"), |a| a.v3(op, 1, 2, 9));
            assert_512_bits(&format!("{op:?} c"), |a| a.v3c(op, 1, 2, 0x1234_5678));
            if is_compare(op) {
                let code = decode_zmm(|a| a.v3(op, 1, 2, 9));
                let m: Vec<_> = code.iter().map(|(i, _)| i.mnemonic()).collect();
                assert_eq!(m[1], Mnemonic::Vpmovm2d, "{op:?}");
            }
        }
        let unary = [
            U::Floor,
            U::Sqrt,
            U::Cvttps2dq,
            U::Cvtdq2ps,
            U::Pslld(3),
            U::Psrad(3),
            U::Psrld(3),
        ];
        for op in unary {
            assert_512_bits(&format!("{op:?}"), |a| a.u(op, 10, 3));
        }
        let floor = decode_zmm(|a| a.u(U::Floor, 10, 3));
        assert_eq!(floor[0].0.mnemonic(), Mnemonic::Vrndscaleps);
        assert_eq!(
            floor[0].0.immediate8(),
            9,
            "roundps 9: floor, inexact masked"
        );
        assert_512_bits("copy", |a| a.copy(1, 11));
        assert_512_bits("select", |a| a.select(1, 2, 3, 4));
        assert_512_bits("select_c", |a| a.select_c(1, 2, 0x7FC0_0000, 4));
        for (bits, what) in [(0x3F80_0000, "constant"), (0, "zero"), (u32::MAX, "ones")] {
            assert_512_bits(what, |a| a.constant(5, bits));
        }
        assert_512_bits("not", |a| a.not(5));
        assert_512_bits("keep_where", |a| a.keep_where(1, 2, 4));
        assert_512_bits("and_c_where", |a| a.and_c_where(1, 2, 0x7F, 4));
        let zeroing = decode_zmm(|a| {
            a.v3c(V::Pcmpgtd, MASK, 2, 0x1234_5678);
            a.keep_where(1, 2, MASK);
            a.and_c_where(1, 2, 0x7F, MASK);
        });
        let m: Vec<_> = zeroing.iter().map(|(i, _)| i.mnemonic()).collect();
        assert_eq!(m, [Mnemonic::Vpcmpd, Mnemonic::Vmovaps, Mnemonic::Vandps]);
        assert!(
            zeroing[1..]
                .iter()
                .all(|(i, _)| i.op_mask() == Register::K1 && i.zeroing_masking())
        );
        assert_512_bits("load", |a| a.load(7, 0x40));
        assert_512_bits("store", |a| a.store(0x40, 7));
        assert_512_bits("broadcast", |a| a.broadcast(7, 0x44));
        assert_512_bits("broadcast_eax", |a| a.broadcast_eax(7));
        assert_512_bits("movmsk", |a| a.movmsk(12));
        assert_512_bits("test_zero", |a| a.test_zero(12));
        let movmsk = decode_zmm(|a| a.movmsk(12));
        let m: Vec<_> = movmsk.iter().map(|(i, _)| format!("{}", i)).collect();
        assert_eq!(m, ["vpmovd2m k1,zmm12", "kmovw eax,k1"]);
        // Lane 0 only: the VEX `vmovd` of the register's low 32 bits.
        let lane0 = decode_zmm(|a| a.store_lane0(8, 12));
        assert_eq!(format!("{}", lane0[0].0), "vmovd [rdi+8],xmm12");
        assert_512_bits("gather_rows", |a| {
            assert!(a.gather_rows(
                3,
                [12, 13],
                [0x40, 0x80, 0xC0, 0x100],
                0x10,
                95,
                0x3F80_0000
            ));
        });
        let gather = decode_zmm(|a| {
            a.gather_rows(
                3,
                [12, 13],
                [0x40, 0x80, 0xC0, 0x100],
                0x10,
                95,
                0x3F80_0000,
            );
        });
        use Mnemonic as M;
        let mnemonics: Vec<_> = gather.iter().map(|(i, _)| i.mnemonic()).collect();
        let uniform = [M::Vbroadcastss, M::Vmovaps];
        let gathered = [M::Vmovaps, M::Kmovw, M::Vgatherdps, M::Vmovaps];
        let mut expected = vec![M::Vbroadcastss, M::Vpcmpeqd, M::Kortestw, M::Jae, M::Vmovd];
        expected.extend([M::Mov, M::Shl, M::Lea, M::Lea, M::Cmp, M::Cmova]);
        expected.extend(uniform.repeat(4));
        expected.extend([M::Jmp, M::Vpcmpud, M::Vpslld]);
        expected.extend(gathered.repeat(4));
        assert_eq!(mnemonics, expected);
        let stores = gather
            .iter()
            .filter(|(i, _)| i.mnemonic() == M::Vmovaps && i.op0_kind() == OpKind::Memory);
        let rows: Vec<_> = stores.map(|(i, _)| i.memory_displacement64()).collect();
        assert_eq!(rows, [0x40, 0x80, 0xC0, 0x100].repeat(2));
        let gathers = gather.iter().filter(|(i, _)| i.mnemonic() == M::Vgatherdps);
        for (c, (g, _)) in gathers.enumerate() {
            assert_eq!(g.op_mask(), Register::K3);
            assert_eq!(
                (g.memory_base(), g.memory_index(), g.memory_index_scale()),
                (Register::RSI, Register::ZMM12, 1)
            );
            assert_eq!(g.memory_displacement64(), 0x10 + 4 * c as u64);
        }
        for width in [Width::Sse41, Width::Avx2] {
            let mut a = WideAsm::new(width);
            assert!(!a.gather_rows(
                3,
                [12, 13],
                [0x40, 0x80, 0xC0, 0x100],
                0x10,
                95,
                0x3F80_0000
            ));
            assert_eq!(a.ops.offset().0, 0, "{width:?}");
        }
        // A compare into MASK stays in k1 for the selects by MASK.
        let paired = decode_zmm(|a| {
            a.v3c(V::Pcmpgtd, MASK, 2, 0x1234_5678);
            a.select(1, 1, 3, MASK);
            a.select_c(1, 1, 0x7FC0_0000, MASK);
        });
        let m: Vec<_> = paired.iter().map(|(i, _)| i.mnemonic()).collect();
        assert_eq!(
            m,
            [Mnemonic::Vpcmpd, Mnemonic::Vblendmps, Mnemonic::Vblendmps]
        );
        assert!(
            paired
                .iter()
                .skip(1)
                .all(|(i, _)| i.op_mask() == Register::K1)
        );
        assert_512_bits("test_nan", |a| a.test_nan(12, 13));
        assert_512_bits("test_gt_c", |a| a.test_gt_c(12, 0x5F7F_FFFF, 13));
        let gt = decode_zmm(|a| a.test_gt_c(12, 0x5F7F_FFFF, 13));
        let m: Vec<_> = gt.iter().map(|(i, _)| i.mnemonic()).collect();
        assert_eq!(m, [Mnemonic::Vpcmpd, Mnemonic::Kortestw]);
        let nan = decode_zmm(|a| a.test_nan(12, 13));
        let m: Vec<_> = nan.iter().map(|(i, _)| format!("{i}")).collect();
        assert_eq!(m, ["vcmpunordps k1,zmm12,zmm12", "kortestw k1,k1"]);
        let leave = decode_zmm(|a| a.leave());
        assert_eq!(leave[0].0.mnemonic(), Mnemonic::Vzeroupper);
    }

    /// Constants of 16-lane code are 64 bytes, 64-byte aligned, and the
    /// RIP-relative operands point at them.
    #[test]
    fn sixteen_lane_constants_are_whole_aligned_registers() {
        let mut a = WideAsm::new(Width::Avx512);
        a.v3c(V::Mulps, 1, 2, 0x4000_0000);
        a.constant(3, 0x3F80_0000);
        a.select_c(4, 4, 0x7FC0_0000, 5);
        let end = a.ops.offset().0;
        a.emit_pool();
        let code = a.ops.finalize().expect("assembles");
        let mut decoder = Decoder::with_ip(64, &code[..end], 0, DecoderOptions::NONE);
        let mut seen = Vec::new();
        while decoder.can_decode() {
            let i = decoder.decode();
            if i.is_ip_rel_memory_operand() {
                let at = i.ip_rel_memory_address() as usize;
                assert_eq!(at % 64, 0, "`{i}` reads {at:#x}");
                let words: Vec<u32> = code[at..at + 64]
                    .chunks(4)
                    .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
                    .collect();
                assert!(words.iter().all(|&w| w == words[0]), "`{i}`");
                seen.push(words[0]);
            }
        }
        assert_eq!(seen, [0x4000_0000, 0x3F80_0000, 0x7FC0_0000]);
    }

    /// A select by [`MASK`] needs a compare into it first (debug builds).
    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "without a compare")]
    fn a_select_by_mask_needs_a_compare() {
        let mut a = WideAsm::new(Width::Avx512);
        a.v3c(V::Pcmpgtd, MASK, 2, 0x1234_5678);
        a.select(1, 1, 3, 4);
        a.select(1, 1, 3, MASK);
    }

    /// `vmovmskps eax, ymm` is written out by hand: pin its bytes.
    #[test]
    fn movmsk_of_a_ymm_register() {
        for (reg, bytes) in [
            (3u8, &[0xC5, 0xFC, 0x50, 0xC3][..]),
            (12, &[0xC4, 0xC1, 0x7C, 0x50, 0xC4]),
        ] {
            let mut a = WideAsm::new(Width::Avx2);
            a.movmsk(reg);
            let code = a.ops.finalize().expect("assembles");
            assert_eq!(&code[..], bytes, "ymm{reg}");
        }
    }
}
