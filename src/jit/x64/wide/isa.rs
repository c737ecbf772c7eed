//! The wide lowering's own vector operations: rows of the register file
//! (`[rdi + off]`), uniforms (`[rsi + off]`), lane masks into `eax`, and the
//! 16-lane gather. The arithmetic is the shared emitter's
//! ([`crate::jit::x64::emit`]), reached through [`WideAsm::v`].

use super::super::Asm;
use super::super::emit::{Encoding, Vector, VectorState};
use super::super::evex::{self, Gpr, Kreg, Mask, Masking, Mem, Src};
use crate::jit::wide::width::Width;
use crate::jit::x64::emit::{K, z};
use dynasmrt::{DynamicLabel, DynasmApi, DynasmLabelApi, dynasm};

pub(super) struct WideAsm {
    pub ops: Asm,
    pub width: Width,
    vector: VectorState,
}

fn row(off: i32) -> Mem {
    Mem::base(Gpr::RDI, off)
}

impl WideAsm {
    pub fn new(width: Width) -> WideAsm {
        let encoding = match width {
            Width::Avx2 => Encoding::Vex256,
            Width::Avx512 => Encoding::Evex512,
            _ => Encoding::Sse41,
        };
        WideAsm {
            ops: Asm::new(0),
            width,
            vector: VectorState::new(encoding),
        }
    }

    /// The shared vector emitter on this code.
    pub fn v(&mut self) -> Vector<'_> {
        self.vector.on(&mut self.ops)
    }

    /// AVX2 (`ymm`, VEX).
    fn vex(&self) -> bool {
        self.width == Width::Avx2
    }

    /// AVX-512 (`zmm`, EVEX).
    fn evex(&self) -> bool {
        self.width == Width::Avx512
    }

    /// `d = mask ? b : a` lane-wise (see [`Vector::select`]).
    pub fn select(&mut self, d: u8, a: u8, b: u8, mask: u8) {
        self.v().select(d, a, b, mask);
    }

    /// Binds `label` (see [`Vector::bind`]).
    pub fn bind(&mut self, label: DynamicLabel) {
        self.v().bind(label);
    }

    /// Forgets what `k1` holds (see [`Vector::forget_masks`]).
    pub fn forget_masks(&mut self) {
        self.v().forget_masks();
    }

    /// Emits the constant pool (the tests' way; compilations end with
    /// [`Vector::finish_with_pool`]).
    #[cfg(test)]
    pub fn emit_pool(&mut self) {
        self.v().emit_pool();
    }

    /// `d` = the row at `off` of the register file.
    pub fn load(&mut self, d: u8, off: i32) {
        if self.evex() {
            self.v().evex_wrote(d);
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
            self.v().evex_wrote(d);
            let m = Mem::base(Gpr::RSI, off);
            evex::vbroadcastss_mem(&mut self.ops, z(d), m, Masking::None);
        } else if self.vex() {
            // The assembler encodes only the 128-bit form of `vbroadcastss`
            // from memory: the 256-bit one (VEX.256.66.0F38.W0 18 /r,
            // `[rsi + disp32]`) written here, one instruction where a load
            // and a register broadcast were two.
            let disp = off.to_le_bytes();
            self.ops.extend(&[
                0xC4,
                ((!d >> 3) & 1) << 7 | 0b0110_0010,
                0x7D,
                0x18,
                0b10 << 6 | (d & 7) << 3 | 0b110,
                disp[0],
                disp[1],
                disp[2],
                disp[3],
            ]);
        } else {
            dynasm!(self.ops ; .arch x64 ; movss Rx(d), [rsi + off] ; shufps Rx(d), Rx(d), 0);
        }
    }

    /// `d` = `eax` in every lane.
    pub fn broadcast_eax(&mut self, d: u8) {
        if self.evex() {
            self.v().evex_wrote(d);
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
            self.v().evex_k1_mirrors(s);
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
        self.v().evex_wrote(scratch[0]);
        self.v().evex_wrote(scratch[1]);
        let (index, dst) = (z(scratch[0]), z(scratch[1]));
        let vector = self.ops.new_dynamic_label();
        let done = self.ops.new_dynamic_label();
        // Every lane reading one slot (a loop's `aL`, the same `a0` in all
        // vertices) is the common case: one scalar address and four
        // broadcasts, no gather.
        evex::vbroadcastss(&mut self.ops, index, z(slot).xmm(), Masking::None);
        evex::vpcmpeqd(&mut self.ops, IN_RANGE, z(slot), Src::Zmm(index), None);
        evex::kortestw(&mut self.ops, IN_RANGE, IN_RANGE);
        let defaults = self.v().pool_label(default);
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
        let mut v = self.v();
        let label = v.pool_label(last as u32);
        v.with_label(label, |out, m| {
            evex::vpcmpud(out, IN_RANGE, z(slot), Src::Mem(m), evex::icmp::LE, None);
        });
        // A vector register is 16 bytes: scale the slot (×16 is no VSIB scale).
        evex::vpslld(&mut self.ops, index, Src::Zmm(z(slot)), 4, Masking::None);
        for (c, row_off) in (0..).zip(rows) {
            self.v().constant(scratch[1], default);
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

    /// `d = max(d, s)` lane-wise, as signed 32-bit integers (SSE4.1 and
    /// AVX2 only: the deferred range checks are not used with AVX-512).
    pub fn pmaxsd_into(&mut self, d: u8, s: u8) {
        debug_assert!(!self.evex());
        if self.vex() {
            dynasm!(self.ops ; .arch x64 ; vpmaxsd Ry(d), Ry(d), Ry(s));
        } else {
            dynasm!(self.ops ; .arch x64 ; pmaxsd Rx(d), Rx(s));
        }
    }

    /// `d = min(d, s)` lane-wise, as unsigned 32-bit integers (SSE4.1 and
    /// AVX2 only, as [`pmaxsd_into`](Self::pmaxsd_into)).
    pub fn pminud_into(&mut self, d: u8, s: u8) {
        debug_assert!(!self.evex());
        if self.vex() {
            dynasm!(self.ops ; .arch x64 ; vpminud Ry(d), Ry(d), Ry(s));
        } else {
            dynasm!(self.ops ; .arch x64 ; pminud Rx(d), Rx(s));
        }
    }

    /// Leaves vector code (clears the upper halves after 256- and 512-bit code).
    pub fn leave(&mut self) {
        if self.vex() || self.evex() {
            dynasm!(self.ops ; .arch x64 ; vzeroupper);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jit::x64::emit::{MASK, U, V, is_compare};
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
        for op in V::ALL {
            assert!(vex_l(|a| a.v().v3(op, 1, 2, 9)), "{op:?}");
            assert!(
                vex_l(|a| a.v().v3c(op, 1, 2, 0x1234_5678)),
                "{op:?} with a constant"
            );
        }
        for op in U::ALL {
            assert!(vex_l(|a| a.v().u(op, 10, 3)), "{op:?}");
        }
        assert!(vex_l(|a| a.v().copy(1, 11)));
        assert!(vex_l(|a| a.select(1, 2, 3, 4)));
        assert!(vex_l(|a| a.v().select_c(1, 2, 0x7FC0_0000, 4)));
        assert!(vex_l(|a| a.v().constant(5, 0x3F80_0000)));
        assert!(vex_l(|a| a.v().constant(5, 0)));
        assert!(vex_l(|a| a.v().constant(5, u32::MAX)));
        assert!(vex_l(|a| a.load(7, 0x40)));
        assert!(vex_l(|a| a.store(0x40, 7)));
        assert!(vex_l(|a| a.v().test_zero(12)));
        assert!(vex_l(|a| a.broadcast(9, 0x5F4)));
    }

    /// The 8-lane uniform broadcast is one `vbroadcastss ymm, [rsi + off]`
    /// (written byte by byte, the assembler having only the 128-bit form)
    /// into the register asked for, from the offset asked for, for every
    /// register and offsets of one, two and four bytes.
    #[test]
    fn eight_lane_uniform_broadcasts_read_memory_in_one_instruction() {
        for d in 0..16u8 {
            for off in [0, 0x7C, 0x5F4, 0x1_0000] {
                let mut a = WideAsm::new(Width::Avx2);
                a.broadcast(d, off);
                let code = a.ops.finalize().expect("assembles");
                let mut decoder = Decoder::with_ip(64, &code, 0, DecoderOptions::NONE);
                let i = decoder.decode();
                assert_eq!(i.code(), Code::VEX_Vbroadcastss_ymm_m32, "{d} {off:#x}");
                assert_eq!(i.op0_register(), Register::YMM0 + u32::from(d));
                assert_eq!(i.memory_base(), Register::RSI);
                assert_eq!(i.memory_displacement64(), off as u64);
                assert_eq!(i.len(), code.len(), "one instruction");
            }
        }
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
        for op in V::ALL {
            assert_512_bits(&format!("{op:?}"), |a| a.v().v3(op, 1, 2, 9));
            assert_512_bits(&format!("{op:?} c"), |a| a.v().v3c(op, 1, 2, 0x1234_5678));
            if is_compare(op) {
                let code = decode_zmm(|a| a.v().v3(op, 1, 2, 9));
                let m: Vec<_> = code.iter().map(|(i, _)| i.mnemonic()).collect();
                assert_eq!(m[1], Mnemonic::Vpmovm2d, "{op:?}");
            }
        }
        for op in U::ALL {
            assert_512_bits(&format!("{op:?}"), |a| a.v().u(op, 10, 3));
        }
        let floor = decode_zmm(|a| a.v().u(U::Floor, 10, 3));
        assert_eq!(floor[0].0.mnemonic(), Mnemonic::Vrndscaleps);
        assert_eq!(
            floor[0].0.immediate8(),
            9,
            "roundps 9: floor, inexact masked"
        );
        assert_512_bits("copy", |a| a.v().copy(1, 11));
        assert_512_bits("select", |a| a.select(1, 2, 3, 4));
        assert_512_bits("select_c", |a| a.v().select_c(1, 2, 0x7FC0_0000, 4));
        for (bits, what) in [(0x3F80_0000, "constant"), (0, "zero"), (u32::MAX, "ones")] {
            assert_512_bits(what, |a| a.v().constant(5, bits));
        }
        assert_512_bits("not", |a| a.v().not(5));
        assert_512_bits("keep_where", |a| a.v().keep_where(1, 2, 4));
        assert_512_bits("and_c_where", |a| a.v().and_c_where(1, 2, 0x7F, 4));
        let zeroing = decode_zmm(|a| {
            a.v().v3c(V::Pcmpgtd, MASK, 2, 0x1234_5678);
            a.v().keep_where(1, 2, MASK);
            a.v().and_c_where(1, 2, 0x7F, MASK);
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
        assert_512_bits("test_zero", |a| a.v().test_zero(12));
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
            a.v().v3c(V::Pcmpgtd, MASK, 2, 0x1234_5678);
            a.select(1, 1, 3, MASK);
            a.v().select_c(1, 1, 0x7FC0_0000, MASK);
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
        assert_512_bits("test_nan", |a| a.v().test_nan(12, 13));
        assert_512_bits("test_gt_c", |a| a.v().test_gt_c(12, 0x5F7F_FFFF, 13));
        let gt = decode_zmm(|a| a.v().test_gt_c(12, 0x5F7F_FFFF, 13));
        let m: Vec<_> = gt.iter().map(|(i, _)| i.mnemonic()).collect();
        assert_eq!(m, [Mnemonic::Vpcmpd, Mnemonic::Kortestw]);
        let nan = decode_zmm(|a| a.v().test_nan(12, 13));
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
        a.v().v3c(V::Mulps, 1, 2, 0x4000_0000);
        a.v().constant(3, 0x3F80_0000);
        a.v().select_c(4, 4, 0x7FC0_0000, 5);
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
        a.v().v3c(V::Pcmpgtd, MASK, 2, 0x1234_5678);
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
