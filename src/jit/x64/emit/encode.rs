//! Hand-written encodings of the commonest instruction forms of the
//! single-vertex lowering, byte for byte what `dynasm` writes for them
//! (`tests` below walk every register and operand they accept).
//!
//! Why: `dynasm` appends each instruction's constant bytes with
//! `Extend<&u8>` from a slice, which the compiler leaves as a call that
//! ends in `memcpy` (one per instruction, about 3 % of compiling a large
//! shader), and decides REX and the operand bytes at run time with a branch
//! per register. Here an instruction is built in a [`Code`] and appended by
//! [`Code::put`] with one capacity check and a short copy loop — the same
//! idea as `ops::vex_rip` for the constant-pool forms.
//!
//! What `dynasm` does that these must match: a displacement that is not a
//! literal is always 32 bits; a base register that is not a literal
//! (`[Rq(base) + off]`) always goes through a SIB byte (index none); a
//! legacy instruction with a register that is not a literal always has a
//! REX prefix (`0x40` when no bit is needed); a VEX instruction whose ModRM.rm
//! register is not a literal always takes the three-byte VEX prefix.

/// One instruction's bytes (at most 14 here: [`write_flag`]'s three).
#[derive(Clone, Copy)]
pub(in crate::jit::x64) struct Code {
    /// Room for 16 so that [`Code::byte`] indexes it with the length's low
    /// four bits: no bounds check (and panic path) per byte, which where
    /// the length depends on the operands (a prefix, a SIB byte, an
    /// immediate) was most of an encoding's cost.
    bytes: [u8; 16],
    len: u8,
}

impl Code {
    fn new() -> Code {
        Code {
            bytes: [0; 16],
            len: 0,
        }
    }

    fn byte(mut self, b: u8) -> Code {
        // Never more than 14 bytes: the mask never wraps.
        self.bytes[usize::from(self.len & 15)] = b;
        self.len += 1;
        self
    }

    fn dword(self, v: i32) -> Code {
        let [a, b, c, d] = v.to_le_bytes();
        self.byte(a).byte(b).byte(c).byte(d)
    }

    /// The instruction's bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }

    /// Appends the bytes to `out` (an iterator of known length: one capacity
    /// check, no `memcpy` call).
    pub fn put(&self, out: &mut impl Extend<u8>) {
        out.extend(self.bytes().iter().copied());
    }
}

/// A 16-byte memory operand `[base + disp]` with a 32-bit displacement.
#[derive(Clone, Copy, Debug)]
pub(in crate::jit::x64) struct Mem {
    /// A general-purpose register below 8, not `rbp` (5).
    base: u8,
    disp: i32,
    /// Through a SIB byte even when the base does not need one (`dynasm`'s
    /// form for a base register chosen at run time).
    sib: bool,
}

impl Mem {
    /// `[base + disp]` as `dynasm` writes it with the base register named
    /// (`[rsi + off]`): a SIB byte only for `rsp`.
    pub fn named(base: u8, disp: i32) -> Mem {
        debug_assert!(base < 8 && base != 5, "base register {base}");
        Mem {
            base,
            disp,
            sib: base == 4,
        }
    }

    /// `[Rq(base) + disp]` as `dynasm` writes it (always a SIB byte).
    pub fn dynamic(base: u8, disp: i32) -> Mem {
        debug_assert!(base < 8 && base != 5, "base register {base}");
        Mem {
            base,
            disp,
            sib: true,
        }
    }
}

/// A legacy SSE instruction `prefix? REX 0F opcode ModRM ...`, `reg` in
/// ModRM.reg (REX always: see the module comment).
fn legacy(prefix: Option<u8>, opcode: u8, reg: u8, rm_high: bool) -> Code {
    let mut code = Code::new();
    if let Some(p) = prefix {
        code = code.byte(p);
    }
    let rex = 0x40 | (reg >> 3 & 1) << 2 | u8::from(rm_high);
    code.byte(rex).byte(0x0F).byte(opcode)
}

/// `prefix? 0F opcode xmm(reg), mem` (and the trailing immediate, if any).
fn legacy_mem(prefix: Option<u8>, opcode: u8, reg: u8, mem: Mem, imm: Option<u8>) -> Code {
    let code = legacy(prefix, opcode, reg, false);
    let code = if mem.sib {
        code.byte(0b10_000_100 | (reg & 7) << 3)
            .byte(0b00_100_000 | mem.base)
    } else {
        code.byte(0b10_000_000 | (reg & 7) << 3 | mem.base)
    };
    let code = code.dword(mem.disp);
    match imm {
        Some(i) => code.byte(i),
        None => code,
    }
}

/// `movaps xmm(d), mem`.
pub(in crate::jit::x64) fn movaps_load(d: u8, mem: Mem) -> Code {
    legacy_mem(None, 0x28, d, mem, None)
}

/// `movaps mem, xmm(s)`.
pub(in crate::jit::x64) fn movaps_store(mem: Mem, s: u8) -> Code {
    legacy_mem(None, 0x29, s, mem, None)
}

/// `pshufd xmm(d), mem, imm`.
pub(in crate::jit::x64) fn pshufd_mem(d: u8, mem: Mem, imm: u8) -> Code {
    legacy_mem(Some(0x66), 0x70, d, mem, Some(imm))
}

/// `pshufd xmm(d), xmm(s), imm`.
pub(in crate::jit::x64) fn pshufd(d: u8, s: u8, imm: u8) -> Code {
    legacy(Some(0x66), 0x70, d, s >= 8)
        .byte(0b11_000_000 | (d & 7) << 3 | (s & 7))
        .byte(imm)
}

/// A VEX instruction on registers only in `dynasm`'s three-byte form (see
/// the module comment): `d` in ModRM.reg, `vvvv` (the second source, or
/// `None` for 1111) in VEX.vvvv, `rm` in ModRM.rm; `map` is VEX.mmmmm
/// (1: `0F`, 3: `0F 3A`).
fn vex3(map: u8, pp: u8, opcode: u8, d: u8, vvvv: Option<u8>, rm: u8, ymm: bool) -> Code {
    let r = !d >> 3 & 1;
    let x = 1;
    let b = !rm >> 3 & 1;
    let vvvv = match vvvv {
        Some(a) => !a & 15,
        None => 15,
    };
    Code::new()
        .byte(0xC4)
        .byte(r << 7 | x << 6 | b << 5 | map)
        .byte(vvvv << 3 | u8::from(ymm) << 2 | pp)
        .byte(opcode)
        .byte(0b11_000_000 | (d & 7) << 3 | (rm & 7))
}

/// `op d, a, b` for a VEX instruction of map `0F` (`a` = `None`: one
/// source, `op d, b`).
pub(in crate::jit::x64) fn vex_rr(
    pp: u8,
    opcode: u8,
    d: u8,
    a: Option<u8>,
    b: u8,
    ymm: bool,
) -> Code {
    vex3(1, pp, opcode, d, a, b, ymm)
}

/// `vcmpps d, a, b, predicate` (`d` = lanes where `a` `predicate` `b`)
/// exactly as `dynasm` writes `vcmpps d, b, a, predicate`: it puts its
/// first source in ModRM.rm and its second in VEX.vvvv, the opposite of
/// the manual (`emit::tests::vex_source_order`), so the emitter names the
/// sources the other way round and this encodes what that produces.
pub(in crate::jit::x64) fn vcmpps(d: u8, a: u8, b: u8, predicate: u8, ymm: bool) -> Code {
    vex3(1, 0, 0xC2, d, Some(a), b, ymm).byte(predicate)
}

/// `vblendps d, a, b, imm` (`d` = `b` in the lanes of `imm`'s bits, else
/// `a`), which `dynasm` writes for `vblendps d, b, a, imm` (its sources
/// swapped as for [`vcmpps`]).
pub(in crate::jit::x64) fn vblendps(d: u8, a: u8, b: u8, imm: u8, ymm: bool) -> Code {
    vex3(3, 1, 0x0C, d, Some(a), b, ymm).byte(imm)
}

/// `movd eax, xmm(s) ; and eax, 1 ; mov BYTE [rsi + off], al`: bit 0 of
/// lane 0 of `s` stored as a byte (a PICA comparison flag), 14 bytes
/// built at once where `dynasm` appends them in six pieces, each with its
/// own capacity check (a float24 shader with comparisons writes a flag a
/// hundred times).
pub(in crate::jit::x64) fn write_flag(s: u8, off: i32) -> Code {
    let rex = 0x40 | (s >> 3 & 1) << 2;
    Code::new()
        .byte(0x66)
        .byte(rex)
        .byte(0x0F)
        .byte(0x7E)
        .byte(0b11_000_000 | (s & 7) << 3)
        .byte(0x83)
        .byte(0xE0)
        .byte(0x01)
        .byte(0x88)
        .byte(0b10_000_110)
        .dword(off)
}

#[cfg(test)]
mod tests {
    use super::*;
    use dynasmrt::x64::X64Relocation;
    use dynasmrt::{DynasmApi, VecAssembler, dynasm};

    type Ops = VecAssembler<X64Relocation>;

    fn assembled(emit: impl FnOnce(&mut Ops)) -> Vec<u8> {
        let mut ops = Ops::new(0);
        emit(&mut ops);
        ops.finalize().expect("assembles")
    }

    /// Displacements around the disp8/disp32 boundaries and the extremes.
    const DISPS: [i32; 8] = [0, 1, -128, 127, 128, -129, i32::MIN, i32::MAX];

    #[test]
    fn movaps_and_pshufd_with_named_bases_match_the_assembler() {
        for d in 0..16u8 {
            for disp in DISPS {
                let imm = 0x1Bu8;
                let cases: [(Code, Vec<u8>); 8] = [
                    (
                        movaps_load(d, Mem::named(6, disp)),
                        assembled(|o| dynasm!(o ; .arch x64 ; movaps Rx(d), [rsi + disp])),
                    ),
                    (
                        movaps_load(d, Mem::named(2, disp)),
                        assembled(|o| dynasm!(o ; .arch x64 ; movaps Rx(d), [rdx + disp])),
                    ),
                    (
                        movaps_load(d, Mem::named(7, disp)),
                        assembled(|o| dynasm!(o ; .arch x64 ; movaps Rx(d), [rdi + disp])),
                    ),
                    (
                        movaps_load(d, Mem::named(4, disp)),
                        assembled(|o| dynasm!(o ; .arch x64 ; movaps Rx(d), [rsp + disp])),
                    ),
                    (
                        movaps_store(Mem::named(6, disp), d),
                        assembled(|o| dynasm!(o ; .arch x64 ; movaps [rsi + disp], Rx(d))),
                    ),
                    (
                        pshufd_mem(d, Mem::named(2, disp), imm),
                        assembled(
                            |o| dynasm!(o ; .arch x64 ; pshufd Rx(d), [rdx + disp], imm as i8),
                        ),
                    ),
                    (
                        pshufd_mem(d, Mem::named(4, disp), imm),
                        assembled(
                            |o| dynasm!(o ; .arch x64 ; pshufd Rx(d), [rsp + disp], imm as i8),
                        ),
                    ),
                    (
                        pshufd_mem(d, Mem::named(6, disp), imm),
                        assembled(
                            |o| dynasm!(o ; .arch x64 ; pshufd Rx(d), [rsi + disp], imm as i8),
                        ),
                    ),
                ];
                for (k, (code, want)) in cases.iter().enumerate() {
                    assert_eq!(code.bytes(), &want[..], "case {k}: xmm{d} disp {disp}");
                }
            }
        }
    }

    #[test]
    fn movaps_and_pshufd_with_dynamic_bases_match_the_assembler() {
        for d in 0..16u8 {
            for base in [0u8, 1, 2, 3, 4, 6, 7] {
                for disp in DISPS {
                    let imm = 0xE4u8;
                    let want = assembled(
                        |o| dynasm!(o ; .arch x64 ; pshufd Rx(d), [Rq(base) + disp], imm as i8),
                    );
                    let code = pshufd_mem(d, Mem::dynamic(base, disp), imm);
                    assert_eq!(
                        code.bytes(),
                        &want[..],
                        "pshufd xmm{d} base {base} disp {disp}"
                    );
                    let want =
                        assembled(|o| dynasm!(o ; .arch x64 ; movaps Rx(d), [Rq(base) + disp]));
                    let code = movaps_load(d, Mem::dynamic(base, disp));
                    assert_eq!(
                        code.bytes(),
                        &want[..],
                        "movaps xmm{d} base {base} disp {disp}"
                    );
                }
            }
        }
    }

    #[test]
    fn pshufd_on_registers_matches_the_assembler() {
        for d in 0..16u8 {
            for s in 0..16u8 {
                for imm in [0u8, 0x1B, 0xFF] {
                    let want =
                        assembled(|o| dynasm!(o ; .arch x64 ; pshufd Rx(d), Rx(s), imm as i8));
                    assert_eq!(pshufd(d, s, imm).bytes(), &want[..], "xmm{d} xmm{s} {imm}");
                }
            }
        }
    }

    /// The two instructions whose sources `dynasm` swaps: the encoders
    /// take them in the manual's order and match what the emitter writes.
    #[test]
    fn vcmpps_and_vblendps_match_the_assembler() {
        for d in 0..16u8 {
            for a in 0..16u8 {
                for b in 0..16u8 {
                    let (p, imm) = (1u8, 0b0101u8);
                    let want =
                        assembled(|o| dynasm!(o ; .arch x64 ; vcmpps Rx(d), Rx(b), Rx(a), p as i8));
                    assert_eq!(
                        vcmpps(d, a, b, p, false).bytes(),
                        &want[..],
                        "vcmpps xmm{d} xmm{a} xmm{b}"
                    );
                    let want =
                        assembled(|o| dynasm!(o ; .arch x64 ; vcmpps Ry(d), Ry(b), Ry(a), p as i8));
                    assert_eq!(
                        vcmpps(d, a, b, p, true).bytes(),
                        &want[..],
                        "vcmpps ymm{d} ymm{a} ymm{b}"
                    );
                    let want = assembled(
                        |o| dynasm!(o ; .arch x64 ; vblendps Rx(d), Rx(b), Rx(a), imm as i8),
                    );
                    assert_eq!(
                        vblendps(d, a, b, imm, false).bytes(),
                        &want[..],
                        "vblendps xmm{d} xmm{a} xmm{b}"
                    );
                }
            }
        }
    }

    #[test]
    fn write_flag_matches_the_assembler() {
        for s in 0..16u8 {
            for disp in DISPS {
                let want = assembled(|o| {
                    dynasm!(o
                        ; .arch x64
                        ; movd eax, Rx(s)
                        ; and eax, 1
                        ; mov BYTE [rsi + disp], al
                    )
                });
                assert_eq!(write_flag(s, disp).bytes(), &want[..], "xmm{s} {disp}");
            }
        }
    }

    /// Every length a [`Code`] can have: `put` appends exactly its bytes.
    #[test]
    fn put_appends_exactly_the_bytes_at_every_length() {
        for len in 0..=16u8 {
            let mut code = Code::new();
            for k in 0..len {
                code = code.byte(0xA0 ^ k);
            }
            let mut out = vec![0x90];
            code.put(&mut out);
            let want: Vec<u8> = std::iter::once(0x90)
                .chain((0..len).map(|k| 0xA0 ^ k))
                .collect();
            assert_eq!(out, want, "{len} bytes");
        }
    }

    #[test]
    fn put_appends_exactly_the_bytes() {
        let mut ops = Ops::new(0);
        dynasm!(ops ; .arch x64 ; nop);
        movaps_load(9, Mem::named(6, 0x30)).put(&mut ops);
        dynasm!(ops ; .arch x64 ; nop);
        let code = ops.finalize().expect("assembles");
        assert_eq!(code, [0x90, 0x44, 0x0F, 0x28, 0x8E, 0x30, 0, 0, 0, 0x90]);
    }
}
