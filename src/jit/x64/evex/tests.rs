//! The EVEX encoder against an independent decoder and encoder (iced-x86), and
//! on the CPU when it has AVX-512.
//!
//! Every encoding is decoded by iced, which must read exactly the emitted bytes
//! as the requested instruction (code, every operand, mask, zeroing,
//! broadcast, full displacement, immediate); then iced's own encoder, asked for
//! the shortest displacement, must produce the same bytes, which pins the
//! choice of `disp8*N` against `disp32` and every "unused" prefix bit.

use super::*;
use iced_x86::{
    Code, Decoder, DecoderOptions, Encoder, Formatter, Instruction, IntelFormatter, OpKind,
    Register,
};

mod execute;

type Buf = Vec<u8>;

/// One expected operand.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Exp {
    Reg(Register),
    /// `disp` is relative to the end of the instruction for `RIP`.
    Mem {
        base: Register,
        index: Register,
        scale: u32,
        disp: i64,
    },
    Imm8(u8),
}

/// The instruction a test asked for.
#[derive(Clone, Debug)]
struct Expect {
    code: Code,
    ops: Vec<Exp>,
    mask: Register,
    zeroing: bool,
    broadcast: bool,
}

fn zmm_reg(z: Zmm) -> Register {
    Register::ZMM0 + u32::from(z.num())
}

fn k_reg(k: u8) -> Register {
    Register::K0 + u32::from(k)
}

fn gpr64(g: Gpr) -> Register {
    Register::RAX + u32::from(g.num())
}

fn gpr32(g: Gpr) -> Register {
    Register::EAX + u32::from(g.num())
}

fn mem_exp(m: Mem) -> Exp {
    match m.address {
        Address::Rip => Exp::Mem {
            base: Register::RIP,
            index: Register::None,
            scale: 1,
            disp: i64::from(m.disp),
        },
        Address::Base { base, index } => Exp::Mem {
            base: gpr64(base),
            index: index.map_or(Register::None, |(i, _)| gpr64(i)),
            scale: index.map_or(1, |(_, s)| 1 << s as u32),
            disp: i64::from(m.disp),
        },
    }
}

fn vsib_exp(v: Vsib) -> Exp {
    Exp::Mem {
        base: gpr64(v.base),
        index: zmm_reg(v.index),
        scale: 1 << v.scale as u32,
        disp: i64::from(v.disp),
    }
}

/// The expected operand and broadcast flag of a `Src`.
fn src_exp(src: Src) -> (Exp, bool) {
    match src {
        Src::Zmm(z) => (Exp::Reg(zmm_reg(z)), false),
        Src::Mem(m) => (mem_exp(m), false),
        Src::Bcst(m) => (mem_exp(m), true),
    }
}

fn mask_exp(masking: Masking) -> (Register, bool) {
    match masking {
        Masking::None => (Register::None, false),
        Masking::Merge(k) => (k_reg(k.num()), false),
        Masking::Zero(k) => (k_reg(k.num()), true),
    }
}

impl Expect {
    fn new(code: Code, ops: Vec<Exp>) -> Expect {
        Expect {
            code,
            ops,
            mask: Register::None,
            zeroing: false,
            broadcast: false,
        }
    }

    fn masked(mut self, masking: Masking) -> Expect {
        (self.mask, self.zeroing) = mask_exp(masking);
        self
    }

    fn broadcast(mut self, broadcast: bool) -> Expect {
        self.broadcast = broadcast;
        self
    }
}

/// Checks encodings and counts them.
struct Oracle {
    checked: usize,
    encoder: Encoder,
}

impl Oracle {
    fn new() -> Oracle {
        Oracle {
            checked: 0,
            encoder: Encoder::new(64),
        }
    }

    /// Decodes `bytes` and compares with `expect`, then re-encodes with iced.
    fn check(&mut self, bytes: &[u8], expect: &Expect) {
        let mut decoder = Decoder::with_ip(64, bytes, 0, DecoderOptions::NONE);
        let decoded = decoder.decode();
        if let Err(why) = self.compare(bytes, &decoded, expect) {
            panic!(
                "{why}\n  bytes {:02X?}\n  iced reads `{}` ({:?}, {} bytes)\n  expected {expect:?}",
                bytes,
                format(&decoded),
                decoded.code(),
                decoded.len(),
            );
        }
        // iced's encoder, free to pick the displacement size, must agree.
        let mut again = decoded;
        if decoded.op_kinds().any(|k| k == OpKind::Memory) && !decoded.is_ip_rel_memory_operand() {
            let none = decoded.memory_displacement64() == 0
                && decoded.memory_base() != Register::RBP
                && decoded.memory_base() != Register::R13;
            again.set_memory_displ_size(if none { 0 } else { 1 });
        }
        let len = self
            .encoder
            .encode(&again, 0)
            .unwrap_or_else(|e| panic!("iced cannot encode `{}`: {e}", format(&decoded)));
        let theirs = self.encoder.take_buffer();
        assert_eq!(len, theirs.len());
        assert_eq!(
            bytes,
            &theirs[..],
            "`{}`: iced encodes it differently",
            format(&decoded)
        );
        self.checked += 1;
    }

    fn compare(&self, bytes: &[u8], d: &Instruction, e: &Expect) -> Result<(), String> {
        if d.code() == Code::INVALID {
            return Err("iced: invalid instruction".into());
        }
        if d.len() != bytes.len() {
            return Err(format!(
                "iced consumed {} of {} bytes",
                d.len(),
                bytes.len()
            ));
        }
        if d.code() != e.code {
            return Err("wrong instruction".into());
        }
        if d.op_count() as usize != e.ops.len() {
            return Err("wrong operand count".into());
        }
        for (i, op) in e.ops.iter().enumerate() {
            let i = i as u32;
            let ok = match *op {
                Exp::Reg(r) => d.op_kind(i) == OpKind::Register && d.op_register(i) == r,
                Exp::Imm8(v) => d.op_kind(i) == OpKind::Immediate8 && d.immediate8() == v,
                Exp::Mem {
                    base,
                    index,
                    scale,
                    disp,
                } => {
                    // iced gives a RIP-relative operand's target (ip = 0).
                    let disp = if base == Register::RIP {
                        disp + bytes.len() as i64
                    } else {
                        disp
                    };
                    d.op_kind(i) == OpKind::Memory
                        && d.memory_base() == base
                        && d.memory_index() == index
                        && d.memory_index_scale() == scale
                        && d.memory_displacement64() as i64 == disp
                }
            };
            if !ok {
                return Err(format!("operand {i} differs"));
            }
        }
        if d.op_mask() != e.mask || d.zeroing_masking() != e.zeroing {
            return Err("masking differs".into());
        }
        if d.is_broadcast() != e.broadcast {
            return Err("broadcast differs".into());
        }
        Ok(())
    }
}

fn format(i: &Instruction) -> String {
    let mut text = String::new();
    IntelFormatter::new().format(i, &mut text);
    text
}

fn emit(f: impl FnOnce(&mut Buf)) -> Buf {
    let mut buf = Buf::new();
    f(&mut buf);
    buf
}

// ---------------------------------------------------------------------------
// Operand sweeps
// ---------------------------------------------------------------------------

/// Unmasked, then merge and zero masking with each of k1–k7.
fn maskings() -> Vec<Masking> {
    let mut all = vec![Masking::None];
    for k in 1..8 {
        all.push(Masking::Merge(Mask::new(k)));
        all.push(Masking::Zero(Mask::new(k)));
    }
    all
}

/// Unmasked, then each of k1–k7 (merge-only forms).
fn merge_masks() -> Vec<Option<Mask>> {
    std::iter::once(None)
        .chain((1..8).map(|k| Some(Mask::new(k))))
        .collect()
}

/// Displacements around every boundary: none, ±1, the `disp8` range, and the
/// `disp8*N` ranges for N = 4 and N = 64 (±N·127 fits, N·128 and −N·129 do
/// not, multiples of 4 that are not multiples of 64), and 32-bit extremes.
const DISPS: &[i32] = &[
    0,
    1,
    -1,
    3,
    4,
    -4,
    64,
    -64,
    68,
    127,
    128,
    -128,
    -129,
    4 * 127,
    4 * 128,
    -4 * 128,
    -4 * 129,
    510,
    64 * 127,
    64 * 128,
    -64 * 128,
    -64 * 129,
    64 * 127 + 4,
    0x1234_5678,
    -0x1234_5678,
    i32::MAX,
    i32::MIN,
];

const SCALES: [Scale; 4] = [Scale::X1, Scale::X2, Scale::X4, Scale::X8];

/// Every base register (rsp/r12 need a SIB byte, rbp/r13 a displacement)
/// with every displacement; every base × index × scale with a rotating
/// displacement; and RIP-relative operands.
fn mem_operands() -> Vec<Mem> {
    let mut all = Vec::new();
    for base in 0..16 {
        for &disp in DISPS {
            all.push(Mem::base(Gpr::new(base), disp));
        }
    }
    let mut turn = 0;
    for base in 0..16 {
        for index in (0..16).filter(|&i| i != 4) {
            for scale in SCALES {
                let disp = DISPS[turn % DISPS.len()];
                turn += 1;
                all.push(Mem::indexed(Gpr::new(base), Gpr::new(index), scale, disp));
            }
        }
    }
    for &disp in DISPS {
        all.push(Mem::rip(disp));
    }
    all
}

/// Register triples in which every pair of the three fields takes all
/// 32 × 32 combinations (the third rotates).
fn reg_triples() -> Vec<(u8, u8, u8)> {
    let mut all = Vec::new();
    for x in 0..32u8 {
        for y in 0..32u8 {
            let z = ((u32::from(x) * 7 + u32::from(y) * 13 + 5) % 32) as u8;
            all.push((x, y, z));
            all.push((z, x, y));
            all.push((x, z, y));
        }
    }
    all
}

fn zmm(n: usize) -> Zmm {
    Zmm::new((n % 32) as u8)
}

/// An immediate that rotates through all 256 values.
fn imm(turn: usize) -> u8 {
    (turn * 37 % 256) as u8
}

/// The register, memory and broadcast forms of a last source, each with a
/// rotating destination, first source, masking and immediate:
/// `(dst, a, src, masking, imm)`.
fn src_cases() -> Vec<(Zmm, Zmm, Src, Masking, u8)> {
    let masks = maskings();
    let mut all = Vec::new();
    for (turn, (d, a, b)) in reg_triples().into_iter().enumerate() {
        let masking = masks[turn % masks.len()];
        all.push((
            zmm(d.into()),
            zmm(a.into()),
            Src::Zmm(zmm(b.into())),
            masking,
            imm(turn),
        ));
    }
    for (turn, m) in mem_operands().into_iter().enumerate() {
        let masking = masks[turn % masks.len()];
        let (d, a) = (zmm(turn * 5 + 1), zmm(turn * 11 + 2));
        all.push((d, a, Src::Mem(m), masking, imm(turn)));
        all.push((
            a,
            d,
            Src::Bcst(m),
            masks[(turn + 7) % masks.len()],
            imm(turn + 1),
        ));
    }
    all
}

// ---------------------------------------------------------------------------
// The instruction table
// ---------------------------------------------------------------------------

type ThreeFn = fn(&mut Buf, Zmm, Zmm, Src, Masking);
type ThreeImmFn = fn(&mut Buf, Zmm, Zmm, Src, u8, Masking);
type TwoFn = fn(&mut Buf, Zmm, Src, Masking);
type TwoImmFn = fn(&mut Buf, Zmm, Src, u8, Masking);
type CmpFn = fn(&mut Buf, Kreg, Zmm, Src, u8, Option<Mask>);
type LoadFn = fn(&mut Buf, Zmm, Mem, Masking);
type StoreFn = fn(&mut Buf, Mem, Zmm, Option<Mask>);
type K3Fn = fn(&mut Buf, Kreg, Kreg, Kreg);
type K2Fn = fn(&mut Buf, Kreg, Kreg);

const THREE: &[(ThreeFn, Code)] = &[
    (vaddps, Code::EVEX_Vaddps_zmm_k1z_zmm_zmmm512b32_er),
    (vsubps, Code::EVEX_Vsubps_zmm_k1z_zmm_zmmm512b32_er),
    (vmulps, Code::EVEX_Vmulps_zmm_k1z_zmm_zmmm512b32_er),
    (vdivps, Code::EVEX_Vdivps_zmm_k1z_zmm_zmmm512b32_er),
    (vmaxps, Code::EVEX_Vmaxps_zmm_k1z_zmm_zmmm512b32_sae),
    (vminps, Code::EVEX_Vminps_zmm_k1z_zmm_zmmm512b32_sae),
    (vandps, Code::EVEX_Vandps_zmm_k1z_zmm_zmmm512b32),
    (vandnps, Code::EVEX_Vandnps_zmm_k1z_zmm_zmmm512b32),
    (vorps, Code::EVEX_Vorps_zmm_k1z_zmm_zmmm512b32),
    (vxorps, Code::EVEX_Vxorps_zmm_k1z_zmm_zmmm512b32),
    (vpandd, Code::EVEX_Vpandd_zmm_k1z_zmm_zmmm512b32),
    (vpandnd, Code::EVEX_Vpandnd_zmm_k1z_zmm_zmmm512b32),
    (vpord, Code::EVEX_Vpord_zmm_k1z_zmm_zmmm512b32),
    (vpxord, Code::EVEX_Vpxord_zmm_k1z_zmm_zmmm512b32),
    (vpaddd, Code::EVEX_Vpaddd_zmm_k1z_zmm_zmmm512b32),
    (vpsubd, Code::EVEX_Vpsubd_zmm_k1z_zmm_zmmm512b32),
    (vblendmps, Code::EVEX_Vblendmps_zmm_k1z_zmm_zmmm512b32),
    (vunpcklps, Code::EVEX_Vunpcklps_zmm_k1z_zmm_zmmm512b32),
    (vunpckhps, Code::EVEX_Vunpckhps_zmm_k1z_zmm_zmmm512b32),
    (vpblendmd, Code::EVEX_Vpblendmd_zmm_k1z_zmm_zmmm512b32),
    (vpermps, Code::EVEX_Vpermps_zmm_k1z_zmm_zmmm512b32),
];

const THREE_IMM: &[(ThreeImmFn, Code)] = &[
    (vshufps, Code::EVEX_Vshufps_zmm_k1z_zmm_zmmm512b32_imm8),
    (
        vpternlogd,
        Code::EVEX_Vpternlogd_zmm_k1z_zmm_zmmm512b32_imm8,
    ),
];

const TWO: &[(TwoFn, Code)] = &[
    (vsqrtps, Code::EVEX_Vsqrtps_zmm_k1z_zmmm512b32_er),
    (vcvtdq2ps, Code::EVEX_Vcvtdq2ps_zmm_k1z_zmmm512b32_er),
    (vcvtps2dq, Code::EVEX_Vcvtps2dq_zmm_k1z_zmmm512b32_er),
    (vcvttps2dq, Code::EVEX_Vcvttps2dq_zmm_k1z_zmmm512b32_sae),
];

const TWO_IMM: &[(TwoImmFn, Code)] = &[
    (
        vrndscaleps,
        Code::EVEX_Vrndscaleps_zmm_k1z_zmmm512b32_imm8_sae,
    ),
    (vpermilps, Code::EVEX_Vpermilps_zmm_k1z_zmmm512b32_imm8),
    (vpslld, Code::EVEX_Vpslld_zmm_k1z_zmmm512b32_imm8),
    (vpsrld, Code::EVEX_Vpsrld_zmm_k1z_zmmm512b32_imm8),
    (vpsrad, Code::EVEX_Vpsrad_zmm_k1z_zmmm512b32_imm8),
];

const CMP: &[(CmpFn, Code)] = &[
    (vcmpps, Code::EVEX_Vcmpps_kr_k1_zmm_zmmm512b32_imm8_sae),
    (vpcmpd, Code::EVEX_Vpcmpd_kr_k1_zmm_zmmm512b32_imm8),
    (vpcmpud, Code::EVEX_Vpcmpud_kr_k1_zmm_zmmm512b32_imm8),
];

/// Loads of 64 bytes and of one element.
const LOAD: &[(LoadFn, Code)] = &[
    (vmovups_load, Code::EVEX_Vmovups_zmm_k1z_zmmm512),
    (vmovaps_load, Code::EVEX_Vmovaps_zmm_k1z_zmmm512),
    (vmovdqu32_load, Code::EVEX_Vmovdqu32_zmm_k1z_zmmm512),
    (vbroadcastss_mem, Code::EVEX_Vbroadcastss_zmm_k1z_xmmm32),
    (vpbroadcastd_mem, Code::EVEX_Vpbroadcastd_zmm_k1z_xmmm32),
];

const STORE: &[(StoreFn, Code)] = &[
    (vmovups_store, Code::EVEX_Vmovups_zmmm512_k1z_zmm),
    (vmovaps_store, Code::EVEX_Vmovaps_zmmm512_k1z_zmm),
    (vmovdqu32_store, Code::EVEX_Vmovdqu32_zmmm512_k1z_zmm),
];

const K3: &[(K3Fn, Code)] = &[
    (kandw, Code::VEX_Kandw_kr_kr_kr),
    (kandnw, Code::VEX_Kandnw_kr_kr_kr),
    (korw, Code::VEX_Korw_kr_kr_kr),
    (kxorw, Code::VEX_Kxorw_kr_kr_kr),
    (kxnorw, Code::VEX_Kxnorw_kr_kr_kr),
];

const K2: &[(K2Fn, Code)] = &[
    (kmovw, Code::VEX_Kmovw_kr_km16),
    (knotw, Code::VEX_Knotw_kr_kr),
    (kortestw, Code::VEX_Kortestw_kr_kr),
    (ktestw, Code::VEX_Ktestw_kr_kr),
];

// ---------------------------------------------------------------------------
// The sweeps
// ---------------------------------------------------------------------------

#[test]
fn vector_instructions_decode_as_requested() {
    let mut oracle = Oracle::new();
    let cases = src_cases();
    for &(f, code) in THREE {
        for &(d, a, b, masking, _) in &cases {
            let (b_exp, broadcast) = src_exp(b);
            let ops = vec![Exp::Reg(zmm_reg(d)), Exp::Reg(zmm_reg(a)), b_exp];
            let expect = Expect::new(code, ops).masked(masking).broadcast(broadcast);
            oracle.check(&emit(|buf| f(buf, d, a, b, masking)), &expect);
        }
    }
    for &(f, code) in THREE_IMM {
        for &(d, a, b, masking, imm) in &cases {
            let (b_exp, broadcast) = src_exp(b);
            let ops = vec![
                Exp::Reg(zmm_reg(d)),
                Exp::Reg(zmm_reg(a)),
                b_exp,
                Exp::Imm8(imm),
            ];
            let expect = Expect::new(code, ops).masked(masking).broadcast(broadcast);
            oracle.check(&emit(|buf| f(buf, d, a, b, imm, masking)), &expect);
        }
    }
    for &(f, code) in TWO {
        for &(d, _, b, masking, _) in &cases {
            let (b_exp, broadcast) = src_exp(b);
            let expect = Expect::new(code, vec![Exp::Reg(zmm_reg(d)), b_exp])
                .masked(masking)
                .broadcast(broadcast);
            oracle.check(&emit(|buf| f(buf, d, b, masking)), &expect);
        }
    }
    for &(f, code) in TWO_IMM {
        for &(d, _, b, masking, imm) in &cases {
            let (b_exp, broadcast) = src_exp(b);
            let ops = vec![Exp::Reg(zmm_reg(d)), b_exp, Exp::Imm8(imm)];
            let expect = Expect::new(code, ops).masked(masking).broadcast(broadcast);
            oracle.check(&emit(|buf| f(buf, d, b, imm, masking)), &expect);
        }
    }
    eprintln!(
        "vector instructions: {} encodings agree with iced",
        oracle.checked
    );
    assert!(oracle.checked > 100_000, "{}", oracle.checked);
}

#[test]
fn compares_decode_as_requested() {
    let mut oracle = Oracle::new();
    let masks = merge_masks();
    let cases = src_cases();
    for (turn, &(d, a, b, _, imm)) in cases.iter().enumerate() {
        let k = (d.num() % 8, masks[turn % masks.len()]);
        let (b_exp, broadcast) = src_exp(b);
        let expect = |code| {
            let ops = vec![Exp::Reg(k_reg(k.0)), Exp::Reg(zmm_reg(a)), b_exp];
            Expect::new(code, ops)
                .masked(Masking::merge(k.1))
                .broadcast(broadcast)
        };
        for &(f, code) in CMP {
            let mut e = expect(code);
            e.ops.push(Exp::Imm8(imm));
            oracle.check(&emit(|buf| f(buf, Kreg::new(k.0), a, b, imm, k.1)), &e);
        }
        let e = expect(Code::EVEX_Vpcmpeqd_kr_k1_zmm_zmmm512b32);
        oracle.check(&emit(|buf| vpcmpeqd(buf, Kreg::new(k.0), a, b, k.1)), &e);
        let e = expect(Code::EVEX_Vptestmd_kr_k1_zmm_zmmm512b32);
        oracle.check(&emit(|buf| vptestmd(buf, Kreg::new(k.0), a, b, k.1)), &e);
    }
    // Every destination with every mask.
    for dst in 0..8 {
        for &mask in &masks {
            let ops = vec![
                Exp::Reg(k_reg(dst)),
                Exp::Reg(Register::ZMM31),
                Exp::Reg(Register::ZMM16),
                Exp::Imm8(cmp::LT_OS),
            ];
            let e = Expect::new(Code::EVEX_Vcmpps_kr_k1_zmm_zmmm512b32_imm8_sae, ops)
                .masked(Masking::merge(mask));
            let (a, b) = (Zmm::new(31), Src::Zmm(Zmm::new(16)));
            oracle.check(
                &emit(|buf| vcmpps(buf, Kreg::new(dst), a, b, cmp::LT_OS, mask)),
                &e,
            );
        }
    }
    eprintln!("compares: {} encodings agree with iced", oracle.checked);
    assert!(oracle.checked > 20_000, "{}", oracle.checked);
}

#[test]
fn moves_and_broadcasts_decode_as_requested() {
    let mut oracle = Oracle::new();
    let masks = maskings();
    let merge = merge_masks();
    for (turn, m) in mem_operands().into_iter().enumerate() {
        let masking = masks[turn % masks.len()];
        let r = zmm(turn * 7 + 3);
        for &(f, code) in LOAD {
            let e = Expect::new(code, vec![Exp::Reg(zmm_reg(r)), mem_exp(m)]).masked(masking);
            oracle.check(&emit(|buf| f(buf, r, m, masking)), &e);
        }
        let mask = merge[turn % merge.len()];
        for &(f, code) in STORE {
            let e = Expect::new(code, vec![mem_exp(m), Exp::Reg(zmm_reg(r))])
                .masked(Masking::merge(mask));
            oracle.check(&emit(|buf| f(buf, m, r, mask)), &e);
        }
    }
    for d in 0..32 {
        for s in 0..32 {
            let masking = masks[(d * 32 + s) % masks.len()];
            let (d, s) = (zmm(d), zmm(s));
            let e = Expect::new(
                Code::EVEX_Vmovaps_zmm_k1z_zmmm512,
                vec![Exp::Reg(zmm_reg(d)), Exp::Reg(zmm_reg(s))],
            )
            .masked(masking);
            oracle.check(&emit(|buf| vmovaps(buf, d, s, masking)), &e);
            let xmm = Register::XMM0 + u32::from(s.num());
            let e = Expect::new(
                Code::EVEX_Vbroadcastss_zmm_k1z_xmmm32,
                vec![Exp::Reg(zmm_reg(d)), Exp::Reg(xmm)],
            )
            .masked(masking);
            oracle.check(&emit(|buf| vbroadcastss(buf, d, s.xmm(), masking)), &e);
        }
        for g in 0..16 {
            let masking = masks[(d * 16 + g) % masks.len()];
            let (d, g) = (zmm(d), Gpr::new(g as u8));
            let e = Expect::new(
                Code::EVEX_Vpbroadcastd_zmm_k1z_r32,
                vec![Exp::Reg(zmm_reg(d)), Exp::Reg(gpr32(g))],
            )
            .masked(masking);
            oracle.check(&emit(|buf| vpbroadcastd_gpr(buf, d, g, masking)), &e);
        }
    }
    eprintln!(
        "moves and broadcasts: {} encodings agree with iced",
        oracle.checked
    );
    assert!(oracle.checked > 10_000, "{}", oracle.checked);
}

#[test]
fn gathers_decode_as_requested() {
    let mut oracle = Oracle::new();
    let mut turn = 0;
    let mut gather = |oracle: &mut Oracle, base: u8, index: usize, scale: Scale, disp: i32| {
        let src = Vsib {
            base: Gpr::new(base),
            index: zmm(index),
            scale,
            disp,
        };
        // Any destination but the index; every mask.
        let dst = zmm(index + 1 + turn % 31);
        let mask = Mask::new((turn % 7 + 1) as u8);
        turn += 1;
        let e = Expect::new(
            Code::EVEX_Vgatherdps_zmm_k1_vm32z,
            vec![Exp::Reg(zmm_reg(dst)), vsib_exp(src)],
        )
        .masked(Masking::Merge(mask));
        oracle.check(&emit(|buf| vgatherdps(buf, dst, src, mask)), &e);
    };
    for base in 0..16 {
        for index in 0..32 {
            for scale in SCALES {
                gather(&mut oracle, base, index, scale, DISPS[index % DISPS.len()]);
            }
        }
        for (i, &disp) in DISPS.iter().enumerate() {
            gather(&mut oracle, base, i * 5, Scale::X4, disp);
        }
    }
    eprintln!("gathers: {} encodings agree with iced", oracle.checked);
    assert_eq!(oracle.checked, 16 * (32 * 4 + DISPS.len()));
}

type InsertFn = fn(&mut Buf, Zmm, Zmm, Part, u8, Masking);
type ExtractFn = fn(&mut Buf, Part, Zmm, u8, Option<Mask>);

/// The inserts and extracts of a part of a `zmm`: `(insert, extract, their
/// codes, the part's register file, parts per zmm, disp8 scale N)`.
const PART_MOVES: [(InsertFn, ExtractFn, Code, Code, Register, usize, i32); 2] = [
    (
        vinsertf32x4,
        vextractf32x4,
        Code::EVEX_Vinsertf32x4_zmm_k1z_zmm_xmmm128_imm8,
        Code::EVEX_Vextractf32x4_xmmm128_k1z_zmm_imm8,
        Register::XMM0,
        4,
        16,
    ),
    (
        vinsertf32x8,
        vextractf32x8,
        Code::EVEX_Vinsertf32x8_zmm_k1z_zmm_ymmm256_imm8,
        Code::EVEX_Vextractf32x8_ymmm256_k1z_zmm_imm8,
        Register::YMM0,
        2,
        32,
    ),
];

/// Every insert and extract of a 128- or 256-bit part with every register
/// pair, every part and masking, and every memory operand (with the
/// `disp8*N` boundaries of its tuple).
#[test]
fn part_moves_decode_as_requested() {
    let mut oracle = Oracle::new();
    let masks = maskings();
    let merges = merge_masks();
    let triples = reg_triples();
    let mut expected = 0;
    for (insert, extract, insert_code, extract_code, file, parts, n) in PART_MOVES {
        // Register forms (every pair of fields), then memory forms.
        let mut cases: Vec<(Zmm, Zmm, Part)> = triples
            .iter()
            .map(|&(d, a, b)| (zmm(d.into()), zmm(a.into()), Part::Reg(zmm(b.into()))))
            .collect();
        let mut mems = mem_operands();
        for disp in [n, -n, n + n / 2, n * 127, n * 128, -n * 128, -n * 129] {
            mems.push(Mem::base(Gpr::R8, disp));
            mems.push(Mem::rip(disp));
        }
        cases.extend(
            mems.into_iter()
                .enumerate()
                .map(|(turn, m)| (zmm(turn * 5 + 1), zmm(turn * 11 + 2), Part::Mem(m))),
        );
        expected += 2 * cases.len();
        for (turn, &(d, a, part)) in cases.iter().enumerate() {
            let part_exp = match part {
                Part::Reg(r) => Exp::Reg(file + u32::from(r.num())),
                Part::Mem(m) => mem_exp(m),
            };
            let masking = masks[turn % masks.len()];
            let which = (turn % parts) as u8;
            let ops = vec![
                Exp::Reg(zmm_reg(d)),
                Exp::Reg(zmm_reg(a)),
                part_exp,
                Exp::Imm8(which),
            ];
            let expect = Expect::new(insert_code, ops).masked(masking);
            oracle.check(
                &emit(|buf| insert(buf, d, a, part, which, masking)),
                &expect,
            );
            let mask = merges[turn % merges.len()];
            let ops = vec![part_exp, Exp::Reg(zmm_reg(a)), Exp::Imm8(which)];
            let expect = Expect::new(extract_code, ops).masked(Masking::merge(mask));
            oracle.check(&emit(|buf| extract(buf, part, a, which, mask)), &expect);
        }
    }
    eprintln!(
        "part inserts and extracts: {} encodings agree with iced",
        oracle.checked
    );
    assert_eq!(oracle.checked, expected);
}

/// The full product of base × (no index | index × scale) × displacement for
/// one instruction of each tuple type (full vector with and without
/// broadcast, full vector memory load and store, one element), and for a
/// compare, whose immediate follows the displacement.
#[test]
fn memory_operands_full_product() {
    let mut oracle = Oracle::new();
    let mut mems = Vec::new();
    for base in 0..16 {
        let base = Gpr::new(base);
        for &disp in DISPS {
            mems.push(Mem::base(base, disp));
            for index in (0..16).filter(|&i| i != 4) {
                for scale in SCALES {
                    mems.push(Mem::indexed(base, Gpr::new(index), scale, disp));
                }
            }
        }
    }
    let (d, a) = (Zmm::new(23), Zmm::new(8));
    let masking = Masking::Merge(Mask::new(4));
    let (dst, src) = (Exp::Reg(zmm_reg(d)), Exp::Reg(zmm_reg(a)));
    for &m in &mems {
        let code = Code::EVEX_Vaddps_zmm_k1z_zmm_zmmm512b32_er;
        for (src_b, broadcast) in [(Src::Mem(m), false), (Src::Bcst(m), true)] {
            let e = Expect::new(code, vec![dst, src, mem_exp(m)])
                .masked(masking)
                .broadcast(broadcast);
            oracle.check(&emit(|b| vaddps(b, d, a, src_b, masking)), &e);
        }
        let e = Expect::new(Code::EVEX_Vmovups_zmm_k1z_zmmm512, vec![dst, mem_exp(m)]);
        oracle.check(&emit(|b| vmovups_load(b, d, m, Masking::None)), &e);
        let e = Expect::new(Code::EVEX_Vmovups_zmmm512_k1z_zmm, vec![mem_exp(m), src]);
        oracle.check(&emit(|b| vmovups_store(b, m, a, None)), &e);
        let e = Expect::new(
            Code::EVEX_Vbroadcastss_zmm_k1z_xmmm32,
            vec![dst, mem_exp(m)],
        );
        oracle.check(&emit(|b| vbroadcastss_mem(b, d, m, Masking::None)), &e);
        let ops = vec![
            Exp::Reg(Register::K6),
            src,
            mem_exp(m),
            Exp::Imm8(cmp::NLE_US),
        ];
        let e = Expect::new(Code::EVEX_Vcmpps_kr_k1_zmm_zmmm512b32_imm8_sae, ops);
        let k6 = Kreg::new(6);
        oracle.check(
            &emit(|b| vcmpps(b, k6, a, Src::Mem(m), cmp::NLE_US, None)),
            &e,
        );
    }
    eprintln!(
        "memory operands: {} encodings agree with iced",
        oracle.checked
    );
    assert_eq!(oracle.checked, 6 * 16 * DISPS.len() * (1 + 15 * 4));
}

#[test]
#[should_panic(expected = "cannot overwrite its index")]
fn gather_refuses_to_overwrite_its_index() {
    let src = Vsib {
        base: Gpr::RDI,
        index: Zmm::new(3),
        scale: Scale::X4,
        disp: 0,
    };
    vgatherdps(&mut Buf::new(), Zmm::new(3), src, Mask::new(1));
}

#[test]
fn opmask_instructions_decode_as_requested() {
    let mut oracle = Oracle::new();
    for d in 0..8 {
        for a in 0..8 {
            let (kd, ka) = (Kreg::new(d), Kreg::new(a));
            for &(f, code) in K2 {
                let e = Expect::new(code, vec![Exp::Reg(k_reg(d)), Exp::Reg(k_reg(a))]);
                oracle.check(&emit(|buf| f(buf, kd, ka)), &e);
            }
            for b in 0..8 {
                for &(f, code) in K3 {
                    let ops = vec![Exp::Reg(k_reg(d)), Exp::Reg(k_reg(a)), Exp::Reg(k_reg(b))];
                    oracle.check(
                        &emit(|buf| f(buf, kd, ka, Kreg::new(b))),
                        &Expect::new(code, ops),
                    );
                }
            }
        }
        for g in 0..16 {
            let (k, g) = (Kreg::new(d), Gpr::new(g));
            let e = Expect::new(
                Code::VEX_Kmovw_kr_r32,
                vec![Exp::Reg(k_reg(d)), Exp::Reg(gpr32(g))],
            );
            oracle.check(&emit(|buf| kmovw_from_gpr(buf, k, g)), &e);
            let e = Expect::new(
                Code::VEX_Kmovw_r32_kr,
                vec![Exp::Reg(gpr32(g)), Exp::Reg(k_reg(d))],
            );
            oracle.check(&emit(|buf| kmovw_to_gpr(buf, g, k)), &e);
        }
    }
    eprintln!(
        "opmask instructions: {} encodings agree with iced",
        oracle.checked
    );
    assert_eq!(oracle.checked, 64 * K2.len() + 512 * K3.len() + 8 * 16 * 2);
}

#[test]
fn opmask_vector_moves_decode_as_requested() {
    let mut oracle = Oracle::new();
    for k in 0..8 {
        for z in 0..32 {
            let (kr, zr) = (Kreg::new(k), zmm(z));
            let e = Expect::new(
                Code::EVEX_Vpmovm2d_zmm_kr,
                vec![Exp::Reg(zmm_reg(zr)), Exp::Reg(k_reg(k))],
            );
            oracle.check(&emit(|buf| vpmovm2d(buf, zr, kr)), &e);
            let e = Expect::new(
                Code::EVEX_Vpmovd2m_kr_zmm,
                vec![Exp::Reg(k_reg(k)), Exp::Reg(zmm_reg(zr))],
            );
            oracle.check(&emit(|buf| vpmovd2m(buf, kr, zr)), &e);
        }
    }
    eprintln!(
        "opmask-vector moves: {} encodings agree with iced",
        oracle.checked
    );
    assert_eq!(oracle.checked, 8 * 32 * 2);
}

/// The named registers are the hardware numbers the encodings use.
#[test]
fn named_registers_are_hardware_numbers() {
    let gprs = [
        Gpr::RAX,
        Gpr::RCX,
        Gpr::RDX,
        Gpr::RBX,
        Gpr::RSP,
        Gpr::RBP,
        Gpr::RSI,
        Gpr::RDI,
        Gpr::R8,
        Gpr::R9,
        Gpr::R10,
        Gpr::R11,
        Gpr::R12,
        Gpr::R13,
        Gpr::R14,
        Gpr::R15,
    ];
    for (n, g) in gprs.into_iter().enumerate() {
        assert_eq!((g.num(), Gpr::new(n as u8)), (n as u8, g));
    }
    for n in 0..32 {
        assert_eq!(Xmm::new(n).num(), n);
        assert_eq!(Zmm::new(n).xmm(), Xmm::new(n));
    }
    for n in 0..8 {
        assert_eq!(Kreg::new(n).num(), n);
    }
}

/// A few encodings worked out by hand from the Intel SDM's EVEX layout, so a
/// shared misreading of the manual by this module and iced would still show.
#[test]
fn hand_assembled_encodings() {
    // vaddps zmm1, zmm2, zmm3: P0 = RXBR' all 1 | mm 01; P1 = W0 vvvv=~2 1 pp00;
    // P2 = z0 L'L=10 b0 V'=1 aaa=000.
    let bytes = emit(|b| {
        vaddps(
            b,
            Zmm::new(1),
            Zmm::new(2),
            Src::Zmm(Zmm::new(3)),
            Masking::None,
        )
    });
    assert_eq!(bytes, [0x62, 0xF1, 0x6C, 0x48, 0x58, 0xCB]);
    // vaddps zmm31{k7}{z}, zmm30, [rax + 128]: disp8 = 128 / 64 = 2.
    let m = Mem::base(Gpr::RAX, 128);
    let bytes = emit(|b| {
        vaddps(
            b,
            Zmm::new(31),
            Zmm::new(30),
            Src::Mem(m),
            Masking::Zero(Mask::new(7)),
        )
    });
    // R = R' = 0 (zmm31), vvvv = ~30 & 15 = 0001, V' = 0, z = 1, aaa = 7.
    assert_eq!(bytes, [0x62, 0x61, 0x0C, 0xC7, 0x58, 0x78, 0x02]);
    // Broadcast of [rax + 128]: N = 4, disp8 = 32, b = 1.
    let bytes = emit(|b| vaddps(b, Zmm::new(0), Zmm::new(0), Src::Bcst(m), Masking::None));
    assert_eq!(bytes, [0x62, 0xF1, 0x7C, 0x58, 0x58, 0x40, 0x20]);
    // [r13] needs a zero disp8; [r12] needs a SIB byte.
    let bytes = emit(|b| vmovups_load(b, Zmm::new(0), Mem::base(Gpr::R13, 0), Masking::None));
    assert_eq!(bytes, [0x62, 0xD1, 0x7C, 0x48, 0x10, 0x45, 0x00]);
    let bytes = emit(|b| vmovups_load(b, Zmm::new(0), Mem::base(Gpr::R12, 0), Masking::None));
    assert_eq!(bytes, [0x62, 0xD1, 0x7C, 0x48, 0x10, 0x04, 0x24]);
    // 64 * 128 does not fit disp8*64: disp32.
    let bytes = emit(|b| vmovups_load(b, Zmm::new(0), Mem::base(Gpr::RAX, 8192), Masking::None));
    assert_eq!(
        bytes,
        [0x62, 0xF1, 0x7C, 0x48, 0x10, 0x80, 0x00, 0x20, 0x00, 0x00]
    );
    // vgatherdps zmm1{k1}, [rax + zmm20*4 + 8]: X = 0 and V' = 1 (inverted:
    // X̄ = 1, V̄' = 0) for index 20 = 0b10100, map 0F38, pp 66, disp8 = 8 / 4.
    let src = Vsib {
        base: Gpr::RAX,
        index: Zmm::new(20),
        scale: Scale::X4,
        disp: 8,
    };
    assert_eq!(
        emit(|b| vgatherdps(b, Zmm::new(1), src, Mask::new(1))),
        [0x62, 0xF2, 0x7D, 0x41, 0x92, 0x4C, 0xA0, 0x02]
    );
    // vpslld zmm17, zmm2, 5: /6 in ModRM.reg, the destination in vvvv and V'.
    assert_eq!(
        emit(|b| vpslld(b, Zmm::new(17), Src::Zmm(Zmm::new(2)), 5, Masking::None)),
        [0x62, 0xF1, 0x75, 0x40, 0x72, 0xF2, 0x05]
    );
    // vcmpltps k2{k1}, zmm3, zmm4: the opmask destination in ModRM.reg.
    assert_eq!(
        emit(|b| vcmpps(
            b,
            Kreg::new(2),
            Zmm::new(3),
            Src::Zmm(Zmm::new(4)),
            1,
            Some(Mask::new(1))
        )),
        [0x62, 0xF1, 0x64, 0x49, 0xC2, 0xD4, 0x01]
    );
    // kmovw k1, r9d takes the three-byte VEX for B; kmovw k1, eax the two-byte one.
    assert_eq!(
        emit(|b| kmovw_from_gpr(b, Kreg::new(1), Gpr::R9)),
        [0xC4, 0xC1, 0x78, 0x92, 0xC9]
    );
    assert_eq!(
        emit(|b| kmovw_from_gpr(b, Kreg::new(1), Gpr::RAX)),
        [0xC5, 0xF8, 0x92, 0xC8]
    );
}

/// `with_rip_label` operands point at the label, forward and backward, with
/// and without an immediate after the displacement.
#[test]
fn rip_label_operands_point_at_the_label() {
    use dynasmrt::x64::X64Relocation;
    use dynasmrt::{DynasmApi, DynasmLabelApi, VecAssembler, dynasm};

    let mut ops: VecAssembler<X64Relocation> = VecAssembler::new(0);
    let target = ops.new_dynamic_label();
    let (d, a) = (Zmm::new(17), Zmm::new(3));
    let masking = Masking::Zero(Mask::new(5));
    // (instruction, offset from the label)
    type Case = (fn(&mut Buf, Mem), isize);
    let forward: [Case; 4] = [
        (
            |b, m| vaddps(b, Zmm::new(17), Zmm::new(3), Src::Mem(m), Masking::None),
            0,
        ),
        (
            |b, m| {
                vpternlogd(
                    b,
                    Zmm::new(17),
                    Zmm::new(3),
                    Src::Bcst(m),
                    0x96,
                    Masking::None,
                )
            },
            4,
        ),
        (
            |b, m| vcmpps(b, Kreg::new(2), Zmm::new(3), Src::Mem(m), cmp::LE_OS, None),
            64,
        ),
        (
            |b, m| vmovups_store(b, m, Zmm::new(31), Some(Mask::new(1))),
            -8,
        ),
    ];
    for (emit, offset) in forward {
        with_rip_label(&mut ops, target, offset, emit);
    }
    dynasm!(ops ; .arch x64 ; ret ; .align 64 ; =>target ; .bytes [0u8; 128].iter());
    with_rip_label(&mut ops, target, 64, |b, m| {
        vbroadcastss_mem(b, d, m, masking)
    });
    with_rip_label(&mut ops, target, 0, |b, m| {
        vshufps(b, d, a, Src::Mem(m), 0x1B, masking)
    });
    let code = ops.finalize().expect("labels resolve");
    let label_at = 64u64;
    let mut decoder = Decoder::with_ip(64, &code, 0, DecoderOptions::NONE);
    let mut seen = Vec::new();
    while decoder.can_decode() {
        let i = decoder.decode();
        if i.is_ip_rel_memory_operand() {
            seen.push((
                i.mnemonic(),
                i.memory_displacement64().wrapping_sub(label_at) as i64,
            ));
        }
        if i.code() == iced_x86::Code::Retnq {
            decoder.set_position(label_at as usize + 128).unwrap();
            decoder.set_ip(label_at + 128);
        }
    }
    use iced_x86::Mnemonic as M;
    assert_eq!(
        seen,
        [
            (M::Vaddps, 0),
            (M::Vpternlogd, 4),
            (M::Vcmpps, 64),
            (M::Vmovups, -8),
            (M::Vbroadcastss, 64),
            (M::Vshufps, 0)
        ]
    );
}

#[test]
#[should_panic(expected = "with_rip_label")]
fn rip_label_needs_a_rip_operand() {
    use dynasmrt::VecAssembler;
    use dynasmrt::x64::X64Relocation;

    let mut ops: VecAssembler<X64Relocation> = VecAssembler::new(0);
    let target = ops.new_dynamic_label();
    with_rip_label(&mut ops, target, 0, |b, _| {
        vaddps(
            b,
            Zmm::new(1),
            Zmm::new(2),
            Src::Zmm(Zmm::new(3)),
            Masking::None,
        )
    });
}
