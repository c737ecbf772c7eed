//! A small AVX-512 (EVEX) encoder for the 512-bit instructions the wide engine
//! needs; `dynasm` encodes SSE and AVX (VEX) but not EVEX.
//!
//! Every function appends one instruction's bytes to any `Extend<u8>` sink, in
//! practice the backend's `VecAssembler`, so the wide lowering can call it
//! between `dynasm!` blocks: labels and jumps stay `dynasm`'s business, this
//! module only knows registers and `[base + index*scale + disp]` operands (and
//! RIP-relative ones, which may name a `dynasm` label).
//!
//! ```text
//! // zmm30{k1} = zmm16 + [rdi + 64]; then k2 = lanes where zmm30 < 1.0f32
//! evex::vaddps(&mut ops, Zmm::new(30), Zmm::new(16),
//!              Src::Mem(Mem::base(Gpr::RDI, 64)), Masking::Merge(Mask::new(1)));
//! evex::with_rip_label(&mut ops, one_label, 0, |b, m| {
//!     evex::vcmpps(b, Kreg::new(2), Zmm::new(30), Src::Bcst(m), cmp::LT_OS, None)
//! });
//! dynasm!(ops ; .arch x64 ; ret);
//! ```
//!
//! (The tests in `evex/tests/execute.rs` assemble and run code like this.)
//!
//! # Encoding choices
//!
//! - **Always 512-bit** (`EVEX.L'L = 10`), element size 32 bits (`EVEX.W = 0`).
//!   Rounding control and `{sae}` (`EVEX.b` on a register source) are never
//!   used, so `EVEX.b` means exactly "memory source broadcast `{1to16}`".
//! - **Register numbers**: bit 3 and bit 4 of each vector register go to the
//!   inverted prefix bits that extend its field: `R`/`R'` for `ModRM.reg`,
//!   `vvvv`/`V'` for the second source, `B`/`X` for a register in `ModRM.rm`;
//!   in a VSIB operand the index uses `X` and `V'`. Fields an instruction does
//!   not use hold their "no register" value (`vvvv = 1111`, `V' = 1`, and
//!   `R' = 1` when `ModRM.reg` names an opmask), which is what decoders and
//!   other assemblers expect.
//! - **Memory operands** take the shortest form: no displacement when it is 0
//!   (except for `rbp`/`r13` bases, whose `mod = 00` encoding means something
//!   else and which get a zero `disp8`), then the compressed `disp8*N`, then
//!   `disp32`. `rsp`/`r12` bases always take a SIB byte. `N` is the memory
//!   access size the instruction's tuple type gives: 64 for full-vector
//!   operands, 4 for broadcasts, single-element loads and gathers.
//! - **Masking** is a type, not a number: [`Mask`] only holds `k1`–`k7`
//!   (`k0` in the mask field means "no mask"), zeroing is only offered where
//!   the hardware allows it (not for stores, compares or gathers), and a
//!   gather requires its mask. Register constructors reject out-of-range
//!   numbers, so every emitted instruction is valid; the one operand conflict
//!   types cannot express (a gather writing its own index register) panics.
//! - **Opmask instructions** (`kmovw`, `kandw`, …) are VEX-encoded; they use
//!   the two-byte VEX prefix unless a general register above `r7` needs the
//!   three-byte one.
//! - **RIP-relative operands** take a raw displacement ([`Mem::rip`]), or a
//!   `dynasm` label through [`with_rip_label`], which registers the
//!   displacement field with `dynasm`'s relocations.
//!
//! The tests decode every form (all registers, masks, and a sweep of memory
//! operands across every field boundary) with an independent decoder, compare
//! the bytes with an independent encoder, and run the instructions on the CPU
//! when it has AVX-512.

use dynasmrt::relocations::{Relocation, RelocationKind, RelocationSize};
use dynasmrt::x64::X64Relocation;
use dynasmrt::{DynamicLabel, DynasmLabelApi};

/// A 512-bit vector register, `zmm0`–`zmm31`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Zmm(u8);

impl Zmm {
    /// `zmm{n}`.
    ///
    /// # Panics
    /// If `n > 31` (at compile time in constants).
    pub(crate) const fn new(n: u8) -> Zmm {
        assert!(n < 32, "zmm registers are zmm0-zmm31");
        Zmm(n)
    }

    /// The register number, 0–31.
    pub(crate) const fn num(self) -> u8 {
        self.0
    }

    /// The low 128 bits of this register (`xmm{n}`).
    pub(crate) const fn xmm(self) -> Xmm {
        Xmm(self.0)
    }
}

/// A 128-bit vector register, `xmm0`–`xmm31` (the low part of the zmm register
/// of the same number), used as the source of a register broadcast.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Xmm(u8);

impl Xmm {
    /// `xmm{n}`.
    ///
    /// # Panics
    /// If `n > 31`.
    pub(crate) const fn new(n: u8) -> Xmm {
        assert!(n < 32, "xmm registers are xmm0-xmm31 with AVX-512");
        Xmm(n)
    }

    /// The register number, 0–31.
    pub(crate) const fn num(self) -> u8 {
        self.0
    }
}

/// A 64-bit general register by hardware number (`rax` = 0 … `r15` = 15); a
/// 32-bit operand (`vpbroadcastd`, `kmovw`) uses its low half.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Gpr(u8);

impl Gpr {
    pub(crate) const RAX: Gpr = Gpr(0);
    pub(crate) const RCX: Gpr = Gpr(1);
    pub(crate) const RDX: Gpr = Gpr(2);
    pub(crate) const RBX: Gpr = Gpr(3);
    pub(crate) const RSP: Gpr = Gpr(4);
    pub(crate) const RBP: Gpr = Gpr(5);
    pub(crate) const RSI: Gpr = Gpr(6);
    pub(crate) const RDI: Gpr = Gpr(7);
    pub(crate) const R8: Gpr = Gpr(8);
    pub(crate) const R9: Gpr = Gpr(9);
    pub(crate) const R10: Gpr = Gpr(10);
    pub(crate) const R11: Gpr = Gpr(11);
    pub(crate) const R12: Gpr = Gpr(12);
    pub(crate) const R13: Gpr = Gpr(13);
    pub(crate) const R14: Gpr = Gpr(14);
    pub(crate) const R15: Gpr = Gpr(15);

    /// The register with hardware number `n` (the numbering `dynasm`'s `Rq(n)`
    /// uses).
    ///
    /// # Panics
    /// If `n > 15`.
    pub(crate) const fn new(n: u8) -> Gpr {
        assert!(n < 16, "general registers are 0-15");
        Gpr(n)
    }

    /// The register number, 0–15.
    pub(crate) const fn num(self) -> u8 {
        self.0
    }
}

/// An opmask register, `k0`–`k7`, as an operand of the opmask instructions
/// and the destination of compares.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Kreg(u8);

impl Kreg {
    /// `k{n}`.
    ///
    /// # Panics
    /// If `n > 7`.
    pub(crate) const fn new(n: u8) -> Kreg {
        assert!(n < 8, "opmask registers are k0-k7");
        Kreg(n)
    }

    /// The register number, 0–7.
    pub(crate) const fn num(self) -> u8 {
        self.0
    }
}

/// An opmask register usable as a write mask, `k1`–`k7` (the mask field's
/// value 0 means "unmasked", so `k0` cannot mask).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Mask(u8);

impl Mask {
    /// `k{n}` as a write mask.
    ///
    /// # Panics
    /// If `n` is not 1–7.
    pub(crate) const fn new(n: u8) -> Mask {
        assert!(n >= 1 && n < 8, "write masks are k1-k7");
        Mask(n)
    }

    /// The register number, 1–7.
    pub(crate) const fn num(self) -> u8 {
        self.0
    }
}

impl From<Mask> for Kreg {
    fn from(mask: Mask) -> Kreg {
        Kreg(mask.0)
    }
}

/// How the lanes a write mask leaves out are treated.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub(crate) enum Masking {
    /// Every lane is written.
    #[default]
    None,
    /// `{k}`: lanes whose mask bit is clear keep the destination's value.
    Merge(Mask),
    /// `{k}{z}`: lanes whose mask bit is clear become zero.
    Zero(Mask),
}

impl Masking {
    /// `(EVEX.z, EVEX.aaa)`.
    const fn bits(self) -> (bool, u8) {
        match self {
            Masking::None => (false, 0),
            Masking::Merge(k) => (false, k.0),
            Masking::Zero(k) => (true, k.0),
        }
    }

    /// The merge-only masking of stores, compares and gathers.
    const fn merge(mask: Option<Mask>) -> Masking {
        match mask {
            Some(k) => Masking::Merge(k),
            None => Masking::None,
        }
    }
}

/// The factor applied to an index register.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Scale {
    X1 = 0,
    X2 = 1,
    X4 = 2,
    X8 = 3,
}

/// Where a memory operand's address comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Address {
    /// `[base + index*scale + disp]`.
    Base {
        base: Gpr,
        index: Option<(Gpr, Scale)>,
    },
    /// `[rip + disp]`, `disp` counted from the end of the instruction.
    Rip,
}

/// A memory operand: `[base + index*scale + disp]` or `[rip + disp]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Mem {
    address: Address,
    disp: i32,
}

impl Mem {
    /// `[base + disp]`.
    pub(crate) const fn base(base: Gpr, disp: i32) -> Mem {
        Mem {
            address: Address::Base { base, index: None },
            disp,
        }
    }

    /// `[base + index*scale + disp]`.
    ///
    /// # Panics
    /// If `index` is `rsp`, which x86 cannot use as an index.
    pub(crate) const fn indexed(base: Gpr, index: Gpr, scale: Scale, disp: i32) -> Mem {
        assert!(index.0 != 4, "rsp cannot be an index register");
        Mem {
            address: Address::Base {
                base,
                index: Some((index, scale)),
            },
            disp,
        }
    }

    /// `[rip + disp]`, with `disp` counted from the end of this instruction
    /// (after any immediate byte), as the CPU does.
    pub(crate) const fn rip(disp: i32) -> Mem {
        Mem {
            address: Address::Rip,
            disp,
        }
    }
}

/// A gather's vector-indexed memory operand `[base + index*scale + disp]`,
/// one address per lane of `index` (signed 32-bit elements).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Vsib {
    pub base: Gpr,
    pub index: Zmm,
    pub scale: Scale,
    pub disp: i32,
}

/// The last source of most instructions: a register, 64 bytes of memory, or one
/// 32-bit memory element broadcast to all 16 lanes (`{1to16}`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Src {
    Zmm(Zmm),
    Mem(Mem),
    Bcst(Mem),
}

impl From<Zmm> for Src {
    fn from(zmm: Zmm) -> Src {
        Src::Zmm(zmm)
    }
}

impl From<Mem> for Src {
    fn from(mem: Mem) -> Src {
        Src::Mem(mem)
    }
}

/// The part-register operand of an insert or extract: the low 128 bits
/// (`xmm`) or 256 bits (`ymm`) of the `zmm` named, or that many bytes of
/// memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Part {
    Reg(Zmm),
    Mem(Mem),
}

impl From<Part> for Rm {
    fn from(part: Part) -> Rm {
        match part {
            Part::Reg(r) => Rm::Reg(r.0),
            Part::Mem(m) => mem(m),
        }
    }
}

/// The opcode map (`EVEX.mm`, VEX `m-mmmm`).
#[derive(Clone, Copy)]
enum Map {
    M0F = 1,
    M0F38 = 2,
    M0F3A = 3,
}

/// The implied legacy prefix (`pp`).
#[derive(Clone, Copy)]
enum Pp {
    None = 0,
    P66 = 1,
    PF3 = 2,
}

/// How a memory operand's `disp8` is scaled (Intel SDM tuple types, for 32-bit
/// elements and 512-bit vectors).
#[derive(Clone, Copy)]
enum Tuple {
    /// Full vector, broadcast allowed (FV): N = 64, or 4 when broadcasting.
    Full,
    /// Full vector memory, no broadcast (FVM): N = 64.
    FullMem,
    /// One 32-bit element (T1S; also gathers): N = 4.
    Scalar,
    /// Eight 32-bit elements, a 256-bit half (T8): N = 32.
    Half,
    /// Four 32-bit elements, a 128-bit quarter (T4): N = 16.
    Quarter,
}

/// One instruction's fixed encoding fields.
#[derive(Clone, Copy)]
struct Op {
    map: Map,
    pp: Pp,
    opcode: u8,
    tuple: Tuple,
}

const fn op(map: Map, pp: Pp, opcode: u8, tuple: Tuple) -> Op {
    Op {
        map,
        pp,
        opcode,
        tuple,
    }
}

/// What `ModRM.rm` (with SIB and displacement) addresses.
#[derive(Clone, Copy)]
enum Rm {
    /// A register number (vector 0–31 or general 0–15).
    Reg(u8),
    Mem {
        mem: Mem,
        broadcast: bool,
    },
    Vsib(Vsib),
}

impl From<Src> for Rm {
    fn from(src: Src) -> Rm {
        match src {
            Src::Zmm(z) => Rm::Reg(z.0),
            Src::Mem(mem) => Rm::Mem {
                mem,
                broadcast: false,
            },
            Src::Bcst(mem) => Rm::Mem {
                mem,
                broadcast: true,
            },
        }
    }
}

/// The longest instruction this module emits: EVEX (4) + opcode + ModRM + SIB
/// + disp32 + imm8.
const MAX_LEN: usize = 4 + 1 + 1 + 1 + 4 + 1;

/// Instruction bytes collected before one `extend` call on the sink.
struct Bytes {
    buf: [u8; MAX_LEN],
    len: usize,
}

impl Bytes {
    fn new() -> Bytes {
        Bytes {
            buf: [0; MAX_LEN],
            len: 0,
        }
    }

    fn push(&mut self, byte: u8) {
        self.buf[self.len] = byte;
        self.len += 1;
    }

    fn push_i32(&mut self, value: i32) {
        for byte in value.to_le_bytes() {
            self.push(byte);
        }
    }

    fn flush(&self, out: &mut impl Extend<u8>) {
        out.extend(self.buf[..self.len].iter().copied());
    }
}

/// Appends ModRM, SIB and displacement for `rm`, with `reg` (low three bits
/// used) in `ModRM.reg`; `n` scales a `disp8`.
fn modrm(bytes: &mut Bytes, reg: u8, rm: Rm, n: i32) {
    let reg = (reg & 7) << 3;
    let (base, index, disp) = match rm {
        Rm::Reg(r) => {
            bytes.push(0xC0 | reg | (r & 7));
            return;
        }
        Rm::Mem { mem, .. } => match mem.address {
            Address::Rip => {
                bytes.push(reg | 0b101);
                bytes.push_i32(mem.disp);
                return;
            }
            Address::Base { base, index } => (base.0, index.map(|(i, s)| (i.0, s)), mem.disp),
        },
        Rm::Vsib(v) => (v.base.0, Some((v.index.0, v.scale)), v.disp),
    };
    let base_low = base & 7;
    // rbp/r13 with mod = 00 would mean [rip + disp32] (or no base under SIB).
    let (mode, disp_bytes) = if disp == 0 && base_low != 0b101 {
        (0b00, 0)
    } else if disp % n == 0 && i8::try_from(disp / n).is_ok() {
        (0b01, 1)
    } else {
        (0b10, 4)
    };
    // rm = 100 announces a SIB byte, needed for an index and for rsp/r12.
    if index.is_some() || base_low == 0b100 {
        bytes.push(mode << 6 | reg | 0b100);
        let (index_low, scale) = match index {
            Some((i, s)) => (i & 7, s as u8),
            None => (0b100, 0),
        };
        bytes.push(scale << 6 | index_low << 3 | base_low);
    } else {
        bytes.push(mode << 6 | reg | base_low);
    }
    match disp_bytes {
        0 => {}
        1 => bytes.push((disp / n) as u8),
        _ => bytes.push_i32(disp),
    }
}

/// Appends one EVEX instruction: `reg` is `ModRM.reg` (a vector register, an
/// opmask, or an opcode extension), `vvvv` the second source (0 when unused,
/// which encodes as "none"), `rm` the last operand.
fn evex(
    out: &mut impl Extend<u8>,
    op: Op,
    reg: u8,
    vvvv: u8,
    rm: Rm,
    masking: Masking,
    imm: Option<u8>,
) {
    let (rex_x, rex_b, v_high, broadcast) = match rm {
        // A register in rm: B extends it to 16, X to 32 registers.
        Rm::Reg(r) => (r >> 4 & 1, r >> 3 & 1, vvvv >> 4 & 1, false),
        Rm::Mem { mem, broadcast } => match mem.address {
            Address::Rip => (0, 0, vvvv >> 4 & 1, broadcast),
            Address::Base { base, index } => (
                index.map_or(0, |(i, _)| i.0 >> 3 & 1),
                base.0 >> 3 & 1,
                vvvv >> 4 & 1,
                broadcast,
            ),
        },
        // VSIB: X and V' extend the vector index (vvvv is unused).
        Rm::Vsib(v) => (
            v.index.0 >> 3 & 1,
            v.base.0 >> 3 & 1,
            v.index.0 >> 4 & 1,
            false,
        ),
    };
    let (zeroing, aaa) = masking.bits();
    let n = match (op.tuple, broadcast) {
        (Tuple::Full, false) | (Tuple::FullMem, _) => 64,
        (Tuple::Full, true) | (Tuple::Scalar, _) => 4,
        (Tuple::Half, _) => 32,
        (Tuple::Quarter, _) => 16,
    };
    let mut bytes = Bytes::new();
    bytes.push(0x62);
    bytes.push(
        (!(reg >> 3) & 1) << 7
            | (!rex_x & 1) << 6
            | (!rex_b & 1) << 5
            | (!(reg >> 4) & 1) << 4
            | op.map as u8,
    );
    // W = 0 (32-bit elements), bit 2 is always 1.
    bytes.push((!vvvv & 0xF) << 3 | 1 << 2 | op.pp as u8);
    bytes.push(
        u8::from(zeroing) << 7
            | 0b10 << 5 // L'L: 512-bit
            | u8::from(broadcast) << 4
            | (!v_high & 1) << 3
            | aaa,
    );
    bytes.push(op.opcode);
    modrm(&mut bytes, reg, rm, n);
    if let Some(imm) = imm {
        bytes.push(imm);
    }
    bytes.flush(out);
}

// ---------------------------------------------------------------------------
// RIP-relative operands on dynasm labels
// ---------------------------------------------------------------------------

/// Emits the one EVEX instruction `emit` writes for a `[rip + label + offset]`
/// operand: `emit` gets that operand as a [`Mem`] and must pass it to one
/// encoder function; `dynasm` fills the displacement in when it resolves its
/// labels, as for its own `[->label]` operands (so constants can live after
/// the code, as the other lowerings keep theirs).
///
/// # Panics
/// If `emit` did not write exactly one EVEX instruction with a RIP-relative
/// operand.
pub(crate) fn with_rip_label<A>(
    ops: &mut A,
    label: DynamicLabel,
    offset: isize,
    emit: impl FnOnce(&mut Vec<u8>, Mem),
) where
    A: DynasmLabelApi<Relocation = X64Relocation> + Extend<u8>,
{
    let mut bytes = Vec::with_capacity(MAX_LEN);
    emit(&mut bytes, Mem::rip(0));
    // EVEX (4 bytes), opcode, ModRM (mod = 00, rm = 101), disp32, then at most
    // an imm8.
    assert!(
        bytes.first() == Some(&0x62)
            && (10..=11).contains(&bytes.len())
            && bytes[5] & 0xC7 == 0b101,
        "with_rip_label: expected one EVEX instruction with a [rip] operand, got {bytes:02X?}"
    );
    let field_from_end = (bytes.len() - 6) as u8;
    ops.extend(bytes);
    // The displacement counts from the end of the instruction (ref_offset 0).
    let relocation = X64Relocation::from_size(RelocationKind::Relative, RelocationSize::DWord);
    ops.dynamic_relocation(label, offset, field_from_end, 0, relocation);
}

// ---------------------------------------------------------------------------
// Moves and broadcasts
// ---------------------------------------------------------------------------

const VMOVUPS_LOAD: Op = op(Map::M0F, Pp::None, 0x10, Tuple::FullMem);
const VMOVUPS_STORE: Op = op(Map::M0F, Pp::None, 0x11, Tuple::FullMem);
const VMOVAPS_LOAD: Op = op(Map::M0F, Pp::None, 0x28, Tuple::FullMem);
const VMOVAPS_STORE: Op = op(Map::M0F, Pp::None, 0x29, Tuple::FullMem);
const VMOVDQU32_LOAD: Op = op(Map::M0F, Pp::PF3, 0x6F, Tuple::FullMem);
const VMOVDQU32_STORE: Op = op(Map::M0F, Pp::PF3, 0x7F, Tuple::FullMem);
const VBROADCASTSS: Op = op(Map::M0F38, Pp::P66, 0x18, Tuple::Scalar);
const VPBROADCASTD: Op = op(Map::M0F38, Pp::P66, 0x58, Tuple::Scalar);
const VPBROADCASTD_GPR: Op = op(Map::M0F38, Pp::P66, 0x7C, Tuple::Scalar);

fn mem(mem: Mem) -> Rm {
    Rm::Mem {
        mem,
        broadcast: false,
    }
}

/// `vmovups dst{masking}, m512`.
pub(crate) fn vmovups_load(out: &mut impl Extend<u8>, dst: Zmm, src: Mem, masking: Masking) {
    evex(out, VMOVUPS_LOAD, dst.0, 0, mem(src), masking, None);
}

/// `vmovups m512{mask}, src` (a masked store leaves memory of clear lanes
/// untouched and does not fault on it).
pub(crate) fn vmovups_store(out: &mut impl Extend<u8>, dst: Mem, src: Zmm, mask: Option<Mask>) {
    evex(
        out,
        VMOVUPS_STORE,
        src.0,
        0,
        self::mem(dst),
        Masking::merge(mask),
        None,
    );
}

/// `vmovaps dst{masking}, m512` (64-byte aligned address).
pub(crate) fn vmovaps_load(out: &mut impl Extend<u8>, dst: Zmm, src: Mem, masking: Masking) {
    evex(out, VMOVAPS_LOAD, dst.0, 0, mem(src), masking, None);
}

/// `vmovaps m512{mask}, src` (64-byte aligned address).
pub(crate) fn vmovaps_store(out: &mut impl Extend<u8>, dst: Mem, src: Zmm, mask: Option<Mask>) {
    evex(
        out,
        VMOVAPS_STORE,
        src.0,
        0,
        self::mem(dst),
        Masking::merge(mask),
        None,
    );
}

/// `vmovaps dst{masking}, src`: a register copy, or with a mask a per-lane
/// select (merge) or clear (zero).
pub(crate) fn vmovaps(out: &mut impl Extend<u8>, dst: Zmm, src: Zmm, masking: Masking) {
    evex(out, VMOVAPS_LOAD, dst.0, 0, Rm::Reg(src.0), masking, None);
}

/// `vmovdqu32 dst{masking}, m512`.
pub(crate) fn vmovdqu32_load(out: &mut impl Extend<u8>, dst: Zmm, src: Mem, masking: Masking) {
    evex(out, VMOVDQU32_LOAD, dst.0, 0, mem(src), masking, None);
}

/// `vmovdqu32 m512{mask}, src`.
pub(crate) fn vmovdqu32_store(out: &mut impl Extend<u8>, dst: Mem, src: Zmm, mask: Option<Mask>) {
    evex(
        out,
        VMOVDQU32_STORE,
        src.0,
        0,
        self::mem(dst),
        Masking::merge(mask),
        None,
    );
}

/// Defines `fn name(out, dst, a, b, imm, masking)`: `a` with its part
/// `imm` (128 or 256 bits, counted from the low end) replaced by `b`.
macro_rules! insert_part {
    ($($(#[$doc:meta])* $name:ident = $opcode:literal, $tuple:ident;)*) => {$(
        $(#[$doc])*
        pub(crate) fn $name(
            out: &mut impl Extend<u8>,
            dst: Zmm,
            a: Zmm,
            b: Part,
            imm: u8,
            masking: Masking,
        ) {
            const OP: Op = op(Map::M0F3A, Pp::P66, $opcode, Tuple::$tuple);
            evex(out, OP, dst.0, a.0, b.into(), masking, Some(imm));
        }
    )*};
}

insert_part! {
    /// `vinsertf32x4 dst{masking}, a, b, imm`: quarter `imm & 3` replaced.
    vinsertf32x4 = 0x18, Quarter;
    /// `vinsertf32x8 dst{masking}, a, b, imm` (AVX512DQ): half `imm & 1`
    /// (0 low, 1 high) replaced.
    vinsertf32x8 = 0x1A, Half;
}

/// Defines `fn name(out, dst, src, imm, mask)`: `dst` = part `imm` of `src`
/// (128 or 256 bits, counted from the low end); a register destination has
/// the rest of its `zmm` cleared, a masked one keeps the lanes `mask` clears.
macro_rules! extract_part {
    ($($(#[$doc:meta])* $name:ident = $opcode:literal, $tuple:ident;)*) => {$(
        $(#[$doc])*
        pub(crate) fn $name(
            out: &mut impl Extend<u8>,
            dst: Part,
            src: Zmm,
            imm: u8,
            mask: Option<Mask>,
        ) {
            const OP: Op = op(Map::M0F3A, Pp::P66, $opcode, Tuple::$tuple);
            evex(out, OP, src.0, 0, dst.into(), Masking::merge(mask), Some(imm));
        }
    )*};
}

extract_part! {
    /// `vextractf32x4 dst{mask}, src, imm`: quarter `imm & 3`.
    vextractf32x4 = 0x19, Quarter;
    /// `vextractf32x8 dst{mask}, src, imm` (AVX512DQ): half `imm & 1`.
    vextractf32x8 = 0x1B, Half;
}

/// `vbroadcastss dst{masking}, src`: the low float of `src` in every lane.
pub(crate) fn vbroadcastss(out: &mut impl Extend<u8>, dst: Zmm, src: Xmm, masking: Masking) {
    evex(out, VBROADCASTSS, dst.0, 0, Rm::Reg(src.0), masking, None);
}

/// `vbroadcastss dst{masking}, m32`.
pub(crate) fn vbroadcastss_mem(out: &mut impl Extend<u8>, dst: Zmm, src: Mem, masking: Masking) {
    evex(out, VBROADCASTSS, dst.0, 0, mem(src), masking, None);
}

/// `vpbroadcastd dst{masking}, r32`.
pub(crate) fn vpbroadcastd_gpr(out: &mut impl Extend<u8>, dst: Zmm, src: Gpr, masking: Masking) {
    evex(
        out,
        VPBROADCASTD_GPR,
        dst.0,
        0,
        Rm::Reg(src.0),
        masking,
        None,
    );
}

/// `vpbroadcastd dst{masking}, m32`.
pub(crate) fn vpbroadcastd_mem(out: &mut impl Extend<u8>, dst: Zmm, src: Mem, masking: Masking) {
    evex(out, VPBROADCASTD, dst.0, 0, mem(src), masking, None);
}

// ---------------------------------------------------------------------------
// Three-operand arithmetic and logic: dst{masking} = a OP b
// ---------------------------------------------------------------------------

/// Defines `fn name(out, dst, a, b, masking)` for a full-vector instruction
/// with the second source in `vvvv` and the third in `ModRM.rm`.
macro_rules! three_operand {
    ($($(#[$doc:meta])* $name:ident = $map:ident, $pp:ident, $opcode:literal;)*) => {$(
        $(#[$doc])*
        pub(crate) fn $name(out: &mut impl Extend<u8>, dst: Zmm, a: Zmm, b: Src, masking: Masking) {
            const OP: Op = op(Map::$map, Pp::$pp, $opcode, Tuple::Full);
            evex(out, OP, dst.0, a.0, b.into(), masking, None);
        }
    )*};
}

three_operand! {
    /// `vunpcklps dst{masking}, a, b`: per 128-bit block, `a0 b0 a1 b1`.
    vunpcklps = M0F, None, 0x14;
    /// `vunpckhps dst{masking}, a, b`: per 128-bit block, `a2 b2 a3 b3`.
    vunpckhps = M0F, None, 0x15;
    /// `vaddps dst{masking}, a, b`.
    vaddps = M0F, None, 0x58;
    /// `vmulps dst{masking}, a, b`.
    vmulps = M0F, None, 0x59;
    /// `vsubps dst{masking}, a, b` (`a - b`).
    vsubps = M0F, None, 0x5C;
    /// `vminps dst{masking}, a, b` (`a < b ? a : b`, so `b` when either is NaN).
    vminps = M0F, None, 0x5D;
    /// `vdivps dst{masking}, a, b` (`a / b`).
    vdivps = M0F, None, 0x5E;
    /// `vmaxps dst{masking}, a, b` (`a > b ? a : b`, so `b` when either is NaN).
    vmaxps = M0F, None, 0x5F;
    /// `vandps dst{masking}, a, b` (AVX512DQ).
    vandps = M0F, None, 0x54;
    /// `vandnps dst{masking}, a, b` (`!a & b`, AVX512DQ).
    vandnps = M0F, None, 0x55;
    /// `vorps dst{masking}, a, b` (AVX512DQ).
    vorps = M0F, None, 0x56;
    /// `vxorps dst{masking}, a, b` (AVX512DQ).
    vxorps = M0F, None, 0x57;
    /// `vpandd dst{masking}, a, b`.
    vpandd = M0F, P66, 0xDB;
    /// `vpandnd dst{masking}, a, b` (`!a & b`).
    vpandnd = M0F, P66, 0xDF;
    /// `vpord dst{masking}, a, b`.
    vpord = M0F, P66, 0xEB;
    /// `vpxord dst{masking}, a, b`.
    vpxord = M0F, P66, 0xEF;
    /// `vpaddd dst{masking}, a, b`.
    vpaddd = M0F, P66, 0xFE;
    /// `vpsubd dst{masking}, a, b` (`a - b`).
    vpsubd = M0F, P66, 0xFA;
    /// `vblendmps dst{k}, a, b`: lane `i` is `b[i]` where `k` is set, else `a[i]`
    /// (with zeroing: else 0). Unmasked it copies `b`.
    vblendmps = M0F38, P66, 0x65;
    /// `vpblendmd dst{k}, a, b`: the integer form of [`vblendmps`].
    vpblendmd = M0F38, P66, 0x64;
    /// `vpermps dst{masking}, index, table`: lane `i` is
    /// `table[index[i] & 15]`.
    vpermps = M0F38, P66, 0x16;
}

/// Defines `fn name(out, dst, a, b, imm, masking)` for a full-vector
/// instruction with an immediate.
macro_rules! three_operand_imm {
    ($($(#[$doc:meta])* $name:ident = $map:ident, $pp:ident, $opcode:literal;)*) => {$(
        $(#[$doc])*
        pub(crate) fn $name(
            out: &mut impl Extend<u8>,
            dst: Zmm,
            a: Zmm,
            b: Src,
            imm: u8,
            masking: Masking,
        ) {
            const OP: Op = op(Map::$map, Pp::$pp, $opcode, Tuple::Full);
            evex(out, OP, dst.0, a.0, b.into(), masking, Some(imm));
        }
    )*};
}

three_operand_imm! {
    /// `vshufps dst{masking}, a, b, imm`: per 128-bit block, two lanes of `a`
    /// then two of `b`, each picked by two bits of `imm`.
    vshufps = M0F, None, 0xC6;
    /// `vpternlogd dst{masking}, a, b, imm`: bit-wise, the result is bit
    /// `(dst << 2 | a << 1 | b)` of `imm` (`dst` is also the first input).
    vpternlogd = M0F3A, P66, 0x25;
}

// ---------------------------------------------------------------------------
// Two-operand instructions: dst{masking} = OP(src)
// ---------------------------------------------------------------------------

/// Defines `fn name(out, dst, src, masking)` for a full-vector instruction
/// with one source in `ModRM.rm`.
macro_rules! two_operand {
    ($($(#[$doc:meta])* $name:ident = $map:ident, $pp:ident, $opcode:literal;)*) => {$(
        $(#[$doc])*
        pub(crate) fn $name(out: &mut impl Extend<u8>, dst: Zmm, src: Src, masking: Masking) {
            const OP: Op = op(Map::$map, Pp::$pp, $opcode, Tuple::Full);
            evex(out, OP, dst.0, 0, src.into(), masking, None);
        }
    )*};
}

two_operand! {
    /// `vsqrtps dst{masking}, src`.
    vsqrtps = M0F, None, 0x51;
    /// `vcvtdq2ps dst{masking}, src`: signed integers to floats (rounded as
    /// MXCSR says).
    vcvtdq2ps = M0F, None, 0x5B;
    /// `vcvtps2dq dst{masking}, src`: floats to signed integers, rounded as
    /// MXCSR says; NaN and out-of-range give `i32::MIN`.
    vcvtps2dq = M0F, P66, 0x5B;
    /// `vcvttps2dq dst{masking}, src`: floats to signed integers, truncated;
    /// NaN and out-of-range give `i32::MIN`.
    vcvttps2dq = M0F, PF3, 0x5B;
}

/// Defines `fn name(out, dst, src, imm, masking)` for a full-vector
/// instruction with one source in `ModRM.rm` and an immediate.
macro_rules! two_operand_imm {
    ($($(#[$doc:meta])* $name:ident = $map:ident, $pp:ident, $opcode:literal;)*) => {$(
        $(#[$doc])*
        pub(crate) fn $name(
            out: &mut impl Extend<u8>,
            dst: Zmm,
            src: Src,
            imm: u8,
            masking: Masking,
        ) {
            const OP: Op = op(Map::$map, Pp::$pp, $opcode, Tuple::Full);
            evex(out, OP, dst.0, 0, src.into(), masking, Some(imm));
        }
    )*};
}

two_operand_imm! {
    /// `vrndscaleps dst{masking}, src, imm`: rounds to `imm >> 4` fraction
    /// bits; `imm & 3` picks the rounding (0 nearest-even, 1 down, 2 up,
    /// 3 toward zero) unless bit 2 says "as MXCSR", bit 3 suppresses the
    /// precision exception. [`ROUND_FLOOR`] and friends are the usual values.
    vrndscaleps = M0F3A, P66, 0x08;
    /// `vpermilps dst{masking}, src, imm`: within each 128-bit block, lane
    /// `j` takes lane `imm >> 2j & 3`.
    vpermilps = M0F3A, P66, 0x04;
}

/// `vrndscaleps` immediate: round to an integer toward −∞, without raising the
/// precision exception.
pub(crate) const ROUND_FLOOR: u8 = 0x09;
/// `vrndscaleps` immediate: round to an integer toward +∞.
pub(crate) const ROUND_CEIL: u8 = 0x0A;
/// `vrndscaleps` immediate: round to an integer toward zero.
pub(crate) const ROUND_TRUNC: u8 = 0x0B;
/// `vrndscaleps` immediate: round to the nearest integer, ties to even.
pub(crate) const ROUND_NEAREST: u8 = 0x08;

/// Defines `fn name(out, dst, src, imm, masking)` for the shifts by an
/// immediate, which put the destination in `vvvv` and an opcode extension in
/// `ModRM.reg`.
macro_rules! shift_imm {
    ($($(#[$doc:meta])* $name:ident = /$ext:literal;)*) => {$(
        $(#[$doc])*
        pub(crate) fn $name(
            out: &mut impl Extend<u8>,
            dst: Zmm,
            src: Src,
            count: u8,
            masking: Masking,
        ) {
            const OP: Op = op(Map::M0F, Pp::P66, 0x72, Tuple::Full);
            evex(out, OP, $ext, dst.0, src.into(), masking, Some(count));
        }
    )*};
}

shift_imm! {
    /// `vpsrld dst{masking}, src, count` (logical; counts above 31 give 0).
    vpsrld = /2;
    /// `vpsrad dst{masking}, src, count` (arithmetic; counts above 31 act as 31).
    vpsrad = /4;
    /// `vpslld dst{masking}, src, count` (counts above 31 give 0).
    vpslld = /6;
}

// ---------------------------------------------------------------------------
// Compares into opmask registers
// ---------------------------------------------------------------------------

/// `vcmpps` predicates (the immediate), the subset the wide engine uses.
pub(crate) mod cmp {
    /// Equal, ordered, quiet.
    pub(crate) const EQ_OQ: u8 = 0x00;
    /// Less than, ordered, signalling.
    pub(crate) const LT_OS: u8 = 0x01;
    /// Less or equal, ordered, signalling.
    pub(crate) const LE_OS: u8 = 0x02;
    /// Unordered (either is NaN), quiet.
    pub(crate) const UNORD_Q: u8 = 0x03;
    /// Not equal, unordered, quiet.
    pub(crate) const NEQ_UQ: u8 = 0x04;
    /// Not less than, unordered, signalling.
    pub(crate) const NLT_US: u8 = 0x05;
    /// Not less or equal, unordered, signalling.
    pub(crate) const NLE_US: u8 = 0x06;
    /// Ordered (neither is NaN), quiet.
    pub(crate) const ORD_Q: u8 = 0x07;
    /// Greater or equal, ordered, signalling.
    pub(crate) const GE_OS: u8 = 0x0D;
    /// Greater than, ordered, signalling.
    pub(crate) const GT_OS: u8 = 0x0E;
}

/// `vpcmpd`/`vpcmpud` predicates (the immediate).
pub(crate) mod icmp {
    pub(crate) const EQ: u8 = 0;
    pub(crate) const LT: u8 = 1;
    pub(crate) const LE: u8 = 2;
    pub(crate) const NE: u8 = 4;
    /// Not less than: greater or equal.
    pub(crate) const NLT: u8 = 5;
    /// Not less or equal: greater than.
    pub(crate) const NLE: u8 = 6;
}

const VCMPPS: Op = op(Map::M0F, Pp::None, 0xC2, Tuple::Full);
const VPCMPD: Op = op(Map::M0F3A, Pp::P66, 0x1F, Tuple::Full);
const VPCMPUD: Op = op(Map::M0F3A, Pp::P66, 0x1E, Tuple::Full);
const VPCMPEQD: Op = op(Map::M0F, Pp::P66, 0x76, Tuple::Full);

/// `vcmpps dst{mask}, a, b, predicate`: bit `i` of `dst` is the predicate
/// ([`cmp`]) on lane `i`, and 0 where `mask` is clear.
pub(crate) fn vcmpps(
    out: &mut impl Extend<u8>,
    dst: Kreg,
    a: Zmm,
    b: Src,
    predicate: u8,
    mask: Option<Mask>,
) {
    let masking = Masking::merge(mask);
    evex(out, VCMPPS, dst.0, a.0, b.into(), masking, Some(predicate));
}

/// `vpcmpd dst{mask}, a, b, predicate`: signed compare ([`icmp`]).
pub(crate) fn vpcmpd(
    out: &mut impl Extend<u8>,
    dst: Kreg,
    a: Zmm,
    b: Src,
    predicate: u8,
    mask: Option<Mask>,
) {
    let masking = Masking::merge(mask);
    evex(out, VPCMPD, dst.0, a.0, b.into(), masking, Some(predicate));
}

/// `vpcmpud dst{mask}, a, b, predicate`: unsigned compare ([`icmp`]).
pub(crate) fn vpcmpud(
    out: &mut impl Extend<u8>,
    dst: Kreg,
    a: Zmm,
    b: Src,
    predicate: u8,
    mask: Option<Mask>,
) {
    let masking = Masking::merge(mask);
    evex(out, VPCMPUD, dst.0, a.0, b.into(), masking, Some(predicate));
}

/// `vpcmpeqd dst{mask}, a, b`.
pub(crate) fn vpcmpeqd(out: &mut impl Extend<u8>, dst: Kreg, a: Zmm, b: Src, mask: Option<Mask>) {
    let masking = Masking::merge(mask);
    evex(out, VPCMPEQD, dst.0, a.0, b.into(), masking, None);
}

const VPTESTMD: Op = op(Map::M0F38, Pp::P66, 0x27, Tuple::Full);

/// `vptestmd dst{mask}, a, b`: bit `i` of `dst` is set where `a[i] & b[i]` is
/// not zero (and 0 where `mask` is clear).
pub(crate) fn vptestmd(out: &mut impl Extend<u8>, dst: Kreg, a: Zmm, b: Src, mask: Option<Mask>) {
    let masking = Masking::merge(mask);
    evex(out, VPTESTMD, dst.0, a.0, b.into(), masking, None);
}

// ---------------------------------------------------------------------------
// Between opmasks and vectors (AVX512DQ)
// ---------------------------------------------------------------------------

const VPMOVM2D: Op = op(Map::M0F38, Pp::PF3, 0x38, Tuple::Full);
const VPMOVD2M: Op = op(Map::M0F38, Pp::PF3, 0x39, Tuple::Full);

/// `vpmovm2d dst, src`: lane `i` is all ones where bit `i` of `src` is set,
/// else zero (AVX512DQ; no write mask).
pub(crate) fn vpmovm2d(out: &mut impl Extend<u8>, dst: Zmm, src: Kreg) {
    evex(out, VPMOVM2D, dst.0, 0, Rm::Reg(src.0), Masking::None, None);
}

/// `vpmovd2m dst, src`: bit `i` of `dst` is the sign bit of lane `i`
/// (AVX512DQ; no write mask).
pub(crate) fn vpmovd2m(out: &mut impl Extend<u8>, dst: Kreg, src: Zmm) {
    evex(out, VPMOVD2M, dst.0, 0, Rm::Reg(src.0), Masking::None, None);
}

// ---------------------------------------------------------------------------
// Gather
// ---------------------------------------------------------------------------

const VGATHERDPS: Op = op(Map::M0F38, Pp::P66, 0x92, Tuple::Scalar);

/// `vgatherdps dst{mask}, [base + index*scale + disp]`: loads lane `i` from
/// its own address where `mask` is set (other lanes keep their value) and
/// clears `mask` as lanes complete, so it is all zero afterwards.
///
/// # Panics
/// If `dst` is the index register (the CPU raises #UD for that).
pub(crate) fn vgatherdps(out: &mut impl Extend<u8>, dst: Zmm, src: Vsib, mask: Mask) {
    assert_ne!(dst, src.index, "vgatherdps cannot overwrite its index");
    evex(
        out,
        VGATHERDPS,
        dst.0,
        0,
        Rm::Vsib(src),
        Masking::Merge(mask),
        None,
    );
}

// ---------------------------------------------------------------------------
// Opmask instructions (VEX-encoded)
// ---------------------------------------------------------------------------

/// Appends a VEX opmask instruction of map 0F, W = 0, no implied prefix:
/// `reg` in `ModRM.reg`, `vvvv` (0 when unused), a register `rm`.
fn vex_k(out: &mut impl Extend<u8>, opcode: u8, l: bool, reg: u8, vvvv: u8, rm: u8) {
    let mut bytes = Bytes::new();
    let rex_r = reg >> 3 & 1;
    let rex_b = rm >> 3 & 1;
    let tail = (!vvvv & 0xF) << 3 | u8::from(l) << 2;
    if rex_b == 0 {
        bytes.push(0xC5);
        bytes.push((!rex_r & 1) << 7 | tail);
    } else {
        bytes.push(0xC4);
        // X = 1 (no index), m-mmmm = 0F.
        bytes.push((!rex_r & 1) << 7 | 1 << 6 | (!rex_b & 1) << 5 | Map::M0F as u8);
        bytes.push(tail);
    }
    bytes.push(opcode);
    bytes.push(0xC0 | (reg & 7) << 3 | (rm & 7));
    bytes.flush(out);
}

/// `kmovw dst, src`.
pub(crate) fn kmovw(out: &mut impl Extend<u8>, dst: Kreg, src: Kreg) {
    vex_k(out, 0x90, false, dst.0, 0, src.0);
}

/// `kmovw dst, src32`: the low 16 bits of a general register.
pub(crate) fn kmovw_from_gpr(out: &mut impl Extend<u8>, dst: Kreg, src: Gpr) {
    vex_k(out, 0x92, false, dst.0, 0, src.0);
}

/// `kmovw dst32, src`: zero-extends the mask into a general register.
pub(crate) fn kmovw_to_gpr(out: &mut impl Extend<u8>, dst: Gpr, src: Kreg) {
    vex_k(out, 0x93, false, dst.0, 0, src.0);
}

/// `knotw dst, src`.
pub(crate) fn knotw(out: &mut impl Extend<u8>, dst: Kreg, src: Kreg) {
    vex_k(out, 0x44, false, dst.0, 0, src.0);
}

/// `kortestw a, b`: ZF = `(a | b) == 0`, CF = `(a | b) == 0xFFFF`.
pub(crate) fn kortestw(out: &mut impl Extend<u8>, a: Kreg, b: Kreg) {
    vex_k(out, 0x98, false, a.0, 0, b.0);
}

/// `ktestw a, b` (AVX512DQ): ZF = `(a & b) == 0`, CF = `(!a & b) == 0`.
pub(crate) fn ktestw(out: &mut impl Extend<u8>, a: Kreg, b: Kreg) {
    vex_k(out, 0x99, false, a.0, 0, b.0);
}

/// Defines `fn name(out, dst, a, b)` for the two-source opmask logic.
macro_rules! k_logic {
    ($($(#[$doc:meta])* $name:ident = $opcode:literal;)*) => {$(
        $(#[$doc])*
        pub(crate) fn $name(out: &mut impl Extend<u8>, dst: Kreg, a: Kreg, b: Kreg) {
            vex_k(out, $opcode, true, dst.0, a.0, b.0);
        }
    )*};
}

k_logic! {
    /// `kandw dst, a, b`.
    kandw = 0x41;
    /// `kandnw dst, a, b` (`!a & b`).
    kandnw = 0x42;
    /// `korw dst, a, b`.
    korw = 0x45;
    /// `kxnorw dst, a, b` (`kxnorw k, k, k` sets all 16 bits).
    kxnorw = 0x46;
    /// `kxorw dst, a, b`.
    kxorw = 0x47;
}

#[cfg(test)]
mod tests;
