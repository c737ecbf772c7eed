//! The slow paths of the x86-64 primitives: rare lanes' exact sequences,
//! entered with `jnz label` from the fast path and returning to `back`.

use super::{Encoding, PoolRef, S3, Vector, VectorState};
use crate::jit::x64::Asm;
use dynasmrt::{DynamicLabel, DynasmApi, DynasmLabelApi, dynasm};

/// The terms of [`Vector::f24_dot_sum`] (and of its slow path), by register.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::jit::x64) enum DotTerms {
    /// Four lanes of terms.
    Terms(u8),
    /// `pica_mul_f24(a, b)`, lane w replaced by +0 when `clear_w` (`dp3`).
    Products { a: u8, b: u8, clear_w: bool },
}

/// A row of an F32 matrix half ([`Vector::f32_dot_pair`]): a register, or
/// the 16 bytes at `off` from general-purpose register `base`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::jit::x64) enum MatrixRow {
    Reg(u8),
    Mem { base: u8, off: i32 },
}

impl MatrixRow {
    /// 20 bits that only equal rows share (a register below 16; an offset
    /// below 2^16 from one of 8 base registers).
    fn key(self) -> u64 {
        match self {
            MatrixRow::Reg(r) => u64::from(r),
            MatrixRow::Mem { base, off } => {
                debug_assert!((0..1 << 16).contains(&off), "offset {off}");
                1 << 19 | u64::from(base & 7) << 16 | u64::from(off as u32 & 0xFFFF)
            }
        }
    }
}

/// Out-of-line code of one primitive: entered with a `jnz` from the fast
/// path ([`Vector::jnz_to_slow`]), back at `back` ([`Vector::rejoin`]).
///
/// Both jumps are written with their displacements (`jnz rel32`, `jmp
/// rel32`, the forms `dynasm` writes for a dynamic label) rather than
/// through labels: the slow path's place is known once it is emitted, the
/// way back when the fast path rejoins, and a float24 shader has a slow path
/// or more per multiply, whose labels and relocations were a noticeable part
/// of assembling it.
#[derive(Clone, Copy)]
pub(in crate::jit::x64) struct SlowPath {
    entry: SlowEntry,
    /// The code offset the slow path jumps back to.
    back: u32,
    body: Body,
}

/// The `jnz` into a slow path not emitted yet: the code offset just past
/// its 32-bit displacement, which [`Vector::emit_slow_paths`] writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::jit::x64) struct SlowEntry(u32);

/// What a slow path computes, by register: slow paths with equal bodies
/// emit equal code, so [`Vector::emit_slow_paths`] emits it once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::jit::x64) enum Body {
    /// The exact PICA multiply `d = a * b` (some lane's product is NaN; the
    /// operands are still live).
    PicaMul { d: u8, a: u8, b: u8 },
    /// [`Body::PicaMul`] with `b` the 16 bytes at `off` from general-purpose
    /// register `base` (loaded into `S3`, which the exact multiply leaves
    /// alone).
    PicaMulMem { d: u8, a: u8, base: u8, off: i32 },
    /// The exact PICA multiply then float24 quantisation `d = a * b` (some
    /// lane of the product is at or above 2^64, infinite or NaN; the operands
    /// are still live).
    PicaMulF24 { d: u8, a: u8, b: u8 },
    /// The exact float24 load of `d` in place (some lane is a float24
    /// subnormal, at or above 2^64, infinite or NaN; `d` is unchanged).
    F24Load { d: u8 },
    /// The exact float24 load `d = load(a)` (some lane of `a` is a float24
    /// subnormal, at or above 2^64, infinite or NaN; `a` is unchanged).
    F24LoadFrom { d: u8, a: u8 },
    /// The float24 quantisation's tail in `d` (some lane is at or above
    /// 2^64, infinite or NaN), with `S2` = |bits|.
    F24Overflow { d: u8 },
    /// A float24 dot product's pairwise sum by the exact sequences (some
    /// lane of some step is at or above 2^64, infinite or NaN; the terms'
    /// registers are still live).
    F24DotSum { d: u8, terms: DotTerms },
    /// Half of four float24 dot products of `a` by the exact sequences
    /// ([`Vector::f24_dot_pair`]; the operands are still live).
    F24DotPair { d: u8, a: u8, b: [u8; 2] },
    /// Half of four F32 dot products of `a` by the exact multiplies
    /// ([`Vector::f32_dot_pair`]; the operands are still live).
    F32DotPair { d: u8, a: u8, b: [MatrixRow; 2] },
}

impl Body {
    /// Whether other shaders are likely to need this body too, so that it is
    /// worth keeping ([`Vector::slow_body`]). The F32 bodies (the multiply
    /// and the matrix rows, on registers a shader's allocation picks) seldom
    /// recur: measured over the corpus compiled once each, keeping them cost
    /// more than their copies saved (F32 host instructions +2.4 %).
    fn recurs(self) -> bool {
        !matches!(
            self,
            Body::PicaMul { .. } | Body::PicaMulMem { .. } | Body::F32DotPair { .. }
        )
    }

    /// A number that only equal bodies share (the kind, then the registers
    /// a byte each, then the offset).
    fn key(self) -> u64 {
        let r = |kind: u64, regs: [u8; 4]| kind | u64::from(u32::from_le_bytes(regs)) << 8;
        match self {
            Body::PicaMul { d, a, b } => r(1, [d, a, b, 0]),
            Body::PicaMulMem { d, a, base, off } => {
                r(2, [d, a, base, 0]) | u64::from(off as u32) << 32
            }
            Body::PicaMulF24 { d, a, b } => r(3, [d, a, b, 0]),
            Body::F24Load { d } => r(4, [d, 0, 0, 0]),
            Body::F24LoadFrom { d, a } => r(5, [d, a, 0, 0]),
            Body::F24Overflow { d } => r(6, [d, 0, 0, 0]),
            Body::F24DotSum {
                d,
                terms: DotTerms::Terms(t),
            } => r(7, [d, t, 0, 0]),
            Body::F24DotSum {
                d,
                terms: DotTerms::Products { a, b, clear_w },
            } => r(8, [d, a, b, u8::from(clear_w)]),
            Body::F24DotPair { d, a, b: [b0, b1] } => r(9, [d, a, b0, b1]),
            Body::F32DotPair { d, a, b: [b0, b1] } => {
                r(10, [d, a, 0, 0]) | b0.key() << 24 | b1.key() << 44
            }
        }
    }
}

/// A slow path's body assembled on its own ([`Vector::slow_body`]): its code,
/// position-independent but for its constant operands, and those operands
/// (the displacement's offset, the instruction's end, the constant), which
/// the copy's pool entries replace. A copy is byte for byte what assembling
/// the body in place writes, constants pooled in the same order: a float24
/// shader spent a fifth of its compilation assembling the same few dozen
/// exact sequences, shader after shader.
struct Assembled {
    code: Box<[u8]>,
    /// The constants, in the order the body first refers to them.
    constants: Box<[[u32; 4]]>,
    /// The operands: displacement, end, constant (in `constants`).
    refs: Box<[(u32, u32, u8)]>,
}

/// Distinct constants of one body, at most (a copied body has them in an
/// array; one with more is assembled in place every time).
const MAX_CONSTANTS: usize = 32;

impl Assembled {
    /// `body` assembled for `encoding`, unless its code refers to anything
    /// outside itself other than through [`Vector::pool_ref`] (a dynamic
    /// label it does not bind, a slow path of its own): such a body is
    /// assembled in place every time.
    fn new(encoding: Encoding, body: Body) -> Option<Assembled> {
        // Sized for the largest bodies (a few hundred bytes, a few dozen
        // constant operands and internal labels): growing the buffers made
        // assembling a body on its own cost twice assembling it in place.
        let mut ops = Asm::new_with_capacity(0, 2048, 0, 0, 32, 0, 32);
        let mut st = VectorState::new(encoding);
        st.pool.reserve(MAX_CONSTANTS);
        st.pool_refs.reserve(128);
        st.on(&mut ops).assemble_body(body);
        if !st.slow.is_empty() {
            return None;
        }
        // Fails on a reference to a label the body does not bind.
        let code = ops.finalize().ok()?;
        // The scratch pool holds the body's constants in first-use order.
        if st.pool.len() > MAX_CONSTANTS {
            return None;
        }
        let constants = st.pool.iter().map(|&(bits, _)| bits).collect();
        let refs = st
            .pool_refs
            .iter()
            .map(|r| (r.disp_at, r.end, r.entry as u8))
            .collect();
        Some(Assembled {
            code: code.into_boxed_slice(),
            constants,
            refs,
        })
    }
}

/// Bodies kept per thread, at most (each a few hundred bytes; the register
/// assignment bounds how many distinct ones the corpus has, far fewer).
const MAX_ASSEMBLED: usize = 4096;

/// A slow path's key: [`Body::key`] and the encoding.
type AssembledKey = (u64, u8);

type AssembledBodies = std::collections::HashMap<
    AssembledKey,
    std::rc::Rc<Assembled>,
    std::hash::BuildHasherDefault<crate::ir::hash::WordHasher>,
>;

thread_local! {
    /// The bodies this thread has assembled (see [`Assembled`]).
    static ASSEMBLED: std::cell::RefCell<AssembledBodies> = Default::default();
}

/// `rsp`, which a `call` moves: a body that addresses memory from it is
/// never called.
const RSP: u8 = 4;

impl Vector<'_> {
    /// Leaves the fast path for a new slow path where the flags say not
    /// zero (`jnz rel32`, the displacement written when the slow path is
    /// emitted); the code up to [`Self::rejoin`] is the fast path's rest.
    pub(super) fn jnz_to_slow(&mut self) -> SlowEntry {
        self.ops.extend(&[0x0F, 0x85, 0, 0, 0, 0]);
        SlowEntry(self.ops.offset().0 as u32)
    }

    /// Where the slow path entered at `entry` ([`Self::jnz_to_slow`]),
    /// computing `body`, comes back to: here. Code may arrive from
    /// elsewhere, so nothing is known of `k1` ([`Self::bind`]).
    pub(super) fn rejoin(&mut self, entry: SlowEntry, body: Body) {
        let back = self.ops.offset().0 as u32;
        self.forget_masks();
        self.st.slow.push(SlowPath { entry, back, body });
    }

    /// Writes the displacement of the jump or call whose instruction ends at
    /// `end` (its last four bytes) so that it goes to `target`.
    fn patch_rel32(&mut self, end: u32, target: usize) {
        let disp = (target as i64 - i64::from(end)) as i32;
        let mut code = self.ops.alter();
        code.goto(dynasmrt::AssemblyOffset(end as usize - 4));
        code.push_i32(disp);
    }

    /// `jmp rel32` to the code offset `target` (emitted already).
    fn jmp_back(&mut self, target: u32) {
        let end = self.ops.offset().0 as i64 + 5;
        let [a, b, c, d] = ((i64::from(target) - end) as i32).to_le_bytes();
        self.ops.extend(&[0xE9, a, b, c, d]);
    }

    /// Emits the slow paths recorded since the last call. A body that more
    /// than one slow path needs (the same sequence on the same registers:
    /// a shader's repeated `dp4`s and multiplies by one matrix) is emitted
    /// once, as a subroutine each of them calls, and the others keep their
    /// own copy: the fast paths are unchanged, a shared slow path costs a
    /// `call` and a `ret` more when it runs, and compiling (whose time was
    /// mostly spent assembling these exact sequences in a float24 shader)
    /// assembles each body once. The subroutine pushes its return address
    /// below `rsp`, which no generated code uses for anything else (the
    /// frame and its spill slots are above it).
    pub fn emit_slow_paths(&mut self) {
        let slow = std::mem::take(&mut self.st.slow);
        // Per slow path, the subroutine it calls (where another has the same
        // body): the paths sorted by body, equal bodies next to each other
        // (a search per path made a shader of many slow paths slower to
        // compile than their copies did).
        let mut called: Vec<Option<DynamicLabel>> = vec![None; slow.len()];
        let mut subroutines: Vec<(DynamicLabel, Body)> = Vec::new();
        if slow.len() > 1 {
            let mut by_body: Vec<(u64, u32)> = (0..slow.len())
                .map(|k| (slow[k].body.key(), k as u32))
                .collect();
            by_body.sort_unstable();
            for same in by_body.chunk_by(|x, y| x.0 == y.0) {
                let body = slow[same[0].1 as usize].body;
                if same.len() < 2 || matches!(body, Body::PicaMulMem { base: RSP, .. }) {
                    continue;
                }
                let sub = self.ops.new_dynamic_label();
                for &(_, k) in same {
                    called[k as usize] = Some(sub);
                }
                subroutines.push((sub, body));
            }
        }
        for (path, sub) in slow.iter().zip(called) {
            let SlowPath { entry, back, body } = *path;
            let here = self.ops.offset().0;
            self.patch_rel32(entry.0, here);
            self.forget_masks();
            match sub {
                Some(sub) => dynasm!(self.ops ; .arch x64 ; call =>sub),
                None => self.slow_body(body),
            }
            self.jmp_back(back);
        }
        for (sub, body) in subroutines {
            self.bind(sub);
            self.slow_body(body);
            dynasm!(self.ops ; .arch x64 ; ret);
        }
    }

    /// The code of one slow path, between its entry and its way back: a
    /// copy of the body's code assembled once per thread ([`ASSEMBLED`]),
    /// or assembled here.
    fn slow_body(&mut self, body: Body) {
        let encoding = self.st.encoding;
        // AVX-512 code depends on what `k1` holds on entry.
        if encoding == Encoding::Evex512 || !body.recurs() {
            return self.assemble_body(body);
        }
        let key = (body.key(), encoding as u8);
        let hit = ASSEMBLED.with_borrow(|bodies| bodies.get(&key).cloned());
        let assembled = match hit {
            Some(assembled) => assembled,
            None => match Assembled::new(encoding, body) {
                Some(assembled) => {
                    let assembled = std::rc::Rc::new(assembled);
                    ASSEMBLED.with_borrow_mut(|bodies| {
                        if bodies.len() < MAX_ASSEMBLED {
                            bodies.insert(key, assembled.clone());
                        }
                    });
                    assembled
                }
                None => return self.assemble_body(body),
            },
        };
        let base = self.ops.offset().0 as u32;
        self.ops.extend(&assembled.code[..]);
        // The body's constants pooled in the order it first asks for them.
        let mut entries = [0u32; MAX_CONSTANTS];
        for (entry, &bits) in entries.iter_mut().zip(&assembled.constants) {
            *entry = self.pool_entry(bits) as u32;
        }
        self.st
            .pool_refs
            .extend(assembled.refs.iter().map(|&(disp_at, end, k)| PoolRef {
                disp_at: base + disp_at,
                end: base + end,
                entry: entries[usize::from(k)],
            }));
    }

    /// Assembles the code of one slow path.
    fn assemble_body(&mut self, body: Body) {
        match body {
            Body::PicaMul { d, a, b } => self.exact_pica_mul(d, a, b),
            Body::PicaMulMem { d, a, base, off } => {
                dynasm!(self.ops ; .arch x64 ; movaps Rx(S3), [Rq(base) + off]);
                self.exact_pica_mul(d, a, S3);
            }
            Body::PicaMulF24 { d, a, b } => self.exact_pica_mul_f24(d, a, b),
            Body::F24Load { d } => self.f24_load_exact(d),
            Body::F24LoadFrom { d, a } => {
                self.copy(d, a);
                self.f24_load_exact(d);
            }
            Body::F24DotSum { d, terms } => self.exact_f24_dot_sum(d, terms),
            Body::F24DotPair { d, a, b } => self.exact_f24_dot_pair(d, a, b),
            Body::F32DotPair { d, a, b } => self.exact_f32_dot_pair(d, a, b),
            Body::F24Overflow { d } => self.f24_tail(d, d, d, S3),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{ASSEMBLED, Body, DotTerms, Encoding, MatrixRow};
    use crate::jit::x64::Asm;
    use crate::jit::x64::emit::{Vector, VectorState};

    /// The whole buffer (code, then the pool) after a constant pooled first
    /// (so the body's constants land at other pool entries than in its own
    /// assembly) and `body` by `emit`.
    fn buffer(encoding: Encoding, emit: impl FnOnce(&mut Vector)) -> Vec<u8> {
        let mut ops = Asm::new(0);
        let mut state = VectorState::new(encoding);
        let mut v = state.on(&mut ops);
        v.constant(1, 0x1234_5678);
        emit(&mut v);
        v.emit_pool();
        ops.finalize().expect("assembles")
    }

    /// The jumps into and out of slow paths, written with their
    /// displacements, are byte for byte the assembler's jumps to dynamic
    /// labels at the same places: two slow paths of their own (one jumping
    /// forward past the other's fast path) and two sharing a body (called as
    /// a subroutine), in both `xmm` encodings.
    #[test]
    fn slow_path_jumps_are_the_assemblers_label_jumps() {
        use dynasmrt::{DynasmLabelApi, dynasm};
        let overflow = Body::F24Overflow { d: 2 };
        let load = Body::F24Load { d: 5 };
        let shared = Body::PicaMul { d: 3, a: 4, b: 6 };
        for encoding in [Encoding::Sse41, Encoding::Vex128] {
            let patched = buffer(encoding, |v| {
                let first = v.jnz_to_slow();
                dynasm!(v.ops ; .arch x64 ; nop ; nop);
                let second = v.jnz_to_slow();
                v.rejoin(second, load);
                dynasm!(v.ops ; .arch x64 ; nop);
                v.rejoin(first, overflow);
                for _ in 0..2 {
                    let entry = v.jnz_to_slow();
                    dynasm!(v.ops ; .arch x64 ; int3);
                    v.rejoin(entry, shared);
                }
                v.emit_slow_paths();
            });
            let labelled = buffer(encoding, |v| {
                let l: Vec<_> = (0..9).map(|_| v.ops.new_dynamic_label()).collect();
                dynasm!(v.ops
                    ; .arch x64
                    ; jnz =>l[0] ; nop ; nop
                    ; jnz =>l[1] ; =>l[2] ; nop ; =>l[3]
                    ; jnz =>l[4] ; int3 ; =>l[5]
                    ; jnz =>l[6] ; int3 ; =>l[7]
                    // In the order the paths rejoined.
                    ; =>l[1]
                );
                v.assemble_body(load);
                dynasm!(v.ops ; .arch x64 ; jmp =>l[2] ; =>l[0]);
                v.assemble_body(overflow);
                dynasm!(v.ops
                    ; .arch x64
                    ; jmp =>l[3]
                    ; =>l[4] ; call =>l[8] ; jmp =>l[5]
                    ; =>l[6] ; call =>l[8] ; jmp =>l[7]
                    ; =>l[8]
                );
                v.assemble_body(shared);
                dynasm!(v.ops ; .arch x64 ; ret);
            });
            assert_eq!(patched, labelled, "{encoding:?}");
        }
    }

    /// A body copied from the per-thread assembly, the first time and from
    /// the cache, is byte for byte the body assembled in place: code,
    /// constant displacements and pool, in every encoding that copies; the
    /// float24 bodies are kept, the F32 ones assembled in place.
    #[test]
    fn copied_slow_bodies_are_the_bodies_assembled_in_place() {
        let bodies = [
            Body::PicaMul { d: 3, a: 4, b: 5 },
            Body::PicaMulMem {
                d: 6,
                a: 2,
                base: 2,
                off: 48,
            },
            Body::PicaMulF24 { d: 7, a: 8, b: 9 },
            Body::F24Load { d: 10 },
            Body::F24LoadFrom { d: 11, a: 12 },
            Body::F24Overflow { d: 2 },
            Body::F24DotSum {
                d: 3,
                terms: DotTerms::Terms(4),
            },
            Body::F24DotSum {
                d: 5,
                terms: DotTerms::Products {
                    a: 6,
                    b: 7,
                    clear_w: true,
                },
            },
            Body::F24DotPair {
                d: 8,
                a: 9,
                b: [10, 11],
            },
            Body::F32DotPair {
                d: 2,
                a: 3,
                b: [MatrixRow::Reg(4), MatrixRow::Mem { base: 7, off: 64 }],
            },
        ];
        for encoding in [Encoding::Sse41, Encoding::Vex128, Encoding::Vex256] {
            for body in bodies {
                let in_place = buffer(encoding, |v| v.assemble_body(body));
                for pass in ["first", "cached"] {
                    let copied = buffer(encoding, |v| v.slow_body(body));
                    assert_eq!(copied, in_place, "{encoding:?} {body:?} ({pass})");
                }
                let key = (body.key(), encoding as u8);
                assert_eq!(
                    ASSEMBLED.with_borrow(|bodies| bodies.contains_key(&key)),
                    body.recurs(),
                    "{encoding:?} {body:?} kept or not"
                );
            }
        }
    }
}
