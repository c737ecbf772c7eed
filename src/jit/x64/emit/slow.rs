//! The slow paths of the x86-64 primitives: rare lanes' exact sequences,
//! entered with `jnz label` from the fast path and returning to `back`.

#[cfg(test)]
use super::PoolRef;
use super::{Encoding, S3, Vector, VectorState};
use crate::jit::JitError;
use crate::jit::x64::Asm;
use dynasmrt::{DynasmApi, dynasm};

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
    /// Its body's group in [`SlowPaths::groups`].
    group: u32,
}

/// The slow paths recorded and not emitted yet, grouped by body as they are
/// recorded (so that emitting them finds the bodies several paths share
/// without sorting the paths), and what copying kept bodies into this code
/// has learnt of its pool.
#[derive(Default)]
pub(super) struct SlowPaths {
    paths: Vec<SlowPath>,
    /// The distinct bodies of `paths`, in the order first recorded.
    groups: Vec<Group>,
    /// An index of `groups`: open addressing by a hash of the body's key,
    /// each slot a position in `groups` + 1 (0: empty), at most half full.
    index: Vec<u32>,
    /// Scratch of [`Vector::emit_slow_paths`] (kept for its room): the
    /// shared bodies (key, group), and the `call`s of the shared bodies
    /// (the instruction's end, the group).
    shared: Vec<(u64, u32)>,
    calls: Vec<(u32, u32)>,
    /// The `jnz`s into the emitted paths and the `call`s of the shared
    /// bodies (the instruction's end, its target), whose displacements
    /// [`VectorState::patch_pool_refs`] writes into the finished code with
    /// the constant operands' (through the assembler's modifier, a byte at
    /// a time with its checks, they cost several times as much).
    jumps: Vec<(u32, u32)>,
    /// The constant lists of the kept bodies copied into this code
    /// ([`Assembled::list`]), each with its position in `list_offsets`: a
    /// body whose list another copied body had already pooled refers to the
    /// same entries without asking the pool again. Valid until the pool is
    /// placed ([`SlowPaths::forget_pool`]).
    lists: Vec<(u32, u32)>,
    /// Per list, the pool offsets of its constants (the rest zeros).
    list_offsets: Vec<[u32; MAX_CONSTANTS]>,
    /// The kept bodies copied into this code, whose constant operands'
    /// displacements [`VectorState::patch_pool_refs`] writes: one record per
    /// copy rather than one [`PoolRef`] per operand (a float24 shader's
    /// copies have most of its constant operands, a dozen or more each).
    copies: Vec<Copied>,
}

/// A kept body copied into the code ([`SlowPaths::copies`]).
struct Copied {
    /// Where the copy starts.
    base: u32,
    /// Its constants' pool offsets in [`SlowPaths::list_offsets`].
    list: u32,
    body: std::rc::Rc<Assembled>,
}

/// Paths with one body ([`SlowPaths::groups`]).
#[derive(Clone, Copy)]
struct Group {
    key: u64,
    body: Body,
    /// How many recorded paths have this body.
    paths: u32,
    /// Where its subroutine starts, once emitted (shared bodies).
    at: u32,
}

impl Group {
    /// Whether the body is emitted once as a subroutine the paths call:
    /// more than one path has it and it does not address memory from `rsp`
    /// (which the `call` moves).
    fn shared(&self) -> bool {
        self.paths > 1 && !matches!(self.body, Body::PicaMulMem { base: RSP, .. })
    }
}

/// Slots of [`SlowPaths::index`] to start with (a power of two).
const GROUP_INDEX_SLOTS: usize = 64;

impl SlowPaths {
    /// Makes room for `paths` slow paths.
    pub(super) fn reserve(&mut self, paths: usize) {
        self.paths.reserve(paths);
    }

    /// Whether no slow path waits to be emitted.
    fn is_empty(&self) -> bool {
        self.paths.is_empty()
    }

    /// The group of `body`, a new one if no recorded path has it yet.
    fn group_of(&mut self, body: Body) -> u32 {
        let key = body.key();
        if !self.index.is_empty() {
            let mask = self.index.len() - 1;
            let mut at = group_hash(key) & mask;
            loop {
                let n = self.index[at];
                if n == 0 {
                    break;
                }
                let group = &mut self.groups[n as usize - 1];
                if group.key == key {
                    group.paths += 1;
                    return n - 1;
                }
                at = (at + 1) & mask;
            }
        }
        self.new_group(key, body)
    }

    /// Records the first path of `body` (whose key is `key`).
    #[cold]
    #[inline(never)]
    fn new_group(&mut self, key: u64, body: Body) -> u32 {
        self.groups.push(Group {
            key,
            body,
            paths: 1,
            at: 0,
        });
        if 2 * self.groups.len() > self.index.len() {
            // Twice as many slots (or the first ones): every group placed
            // again.
            let slots = (2 * self.index.len()).max(GROUP_INDEX_SLOTS);
            self.index.clear();
            self.index.resize(slots, 0);
            for k in 0..self.groups.len() {
                place(&mut self.index, self.groups[k].key, k);
            }
        } else {
            place(&mut self.index, key, self.groups.len() - 1);
        }
        return self.groups.len() as u32 - 1;

        /// Records group `k` (of key `key`) in the first free slot from its
        /// hash on.
        fn place(index: &mut [u32], key: u64, k: usize) {
            let mask = index.len() - 1;
            let mut at = group_hash(key) & mask;
            while index[at] != 0 {
                at = (at + 1) & mask;
            }
            index[at] = k as u32 + 1;
        }
    }

    /// Forgets the recorded paths and their groups (emitted).
    fn clear_paths(&mut self) {
        self.paths.clear();
        if !self.groups.is_empty() {
            self.groups.clear();
            self.index.fill(0);
        }
    }

    /// Forgets everything (for a state of another code).
    pub(super) fn clear(&mut self) {
        self.paths.clear();
        self.groups.clear();
        // Empty: the first group sizes it.
        self.index.clear();
        self.shared.clear();
        self.jumps.clear();
        self.calls.clear();
        self.lists.clear();
        self.list_offsets.clear();
        self.copies.clear();
    }

    /// The pool was placed: its entries are no longer this code's (the
    /// copies' offsets stay until their operands are patched).
    pub(super) fn forget_pool(&mut self) {
        self.lists.clear();
    }

    /// The constant operands of the copied bodies, one [`PoolRef`] each.
    #[cfg(test)]
    pub(super) fn copied_refs(&self) -> impl Iterator<Item = PoolRef> + '_ {
        self.copies.iter().flat_map(move |copy| {
            let offsets = &self.list_offsets[copy.list as usize];
            (copy.body.refs.iter()).map(move |&(disp_at, end, k)| PoolRef {
                disp_at: copy.base + disp_at,
                disp_less_base: offsets[usize::from(k)].wrapping_sub(copy.base + end) as i32,
            })
        })
    }

    /// Writes the displacements of the copied bodies' constant operands into
    /// `code`, whose pool is at `pool`, and of the jumps into and calls out
    /// of the paths, and forgets them.
    pub(super) fn patch_copies(&mut self, code: &mut [u8], pool: u32) -> Result<(), JitError> {
        for copy in &self.copies {
            let base = copy.base as usize;
            let Some(copied) = code.get_mut(base..base + copy.body.code.len()) else {
                return Err(JitError::Assemble("slow path past the code".into()));
            };
            let offsets = &self.list_offsets[copy.list as usize];
            // The displacement of the operand of constant k ending at `end`:
            // `pool + offsets[k] - (base + end)`.
            let from_pool = pool.wrapping_sub(copy.base);
            for &(disp_at, end, k) in &copy.body.refs {
                // (`k` is below `MAX_CONSTANTS`: no bounds check.)
                let offset = offsets[usize::from(k) % MAX_CONSTANTS];
                let disp = from_pool.wrapping_add(offset).wrapping_sub(end);
                let at = disp_at as usize;
                copied[at..at + 4].copy_from_slice(&disp.to_le_bytes());
            }
        }
        for &(end, target) in &self.jumps {
            let at = end as usize - 4;
            let Some(field) = code.get_mut(at..).and_then(<[u8]>::first_chunk_mut::<4>) else {
                return Err(JitError::Assemble("slow-path jump past the code".into()));
            };
            *field = target.wrapping_sub(end).to_le_bytes();
        }
        self.forget_copies();
        Ok(())
    }

    /// Forgets the copies and jumps (their displacements written).
    pub(super) fn forget_copies(&mut self) {
        self.copies.clear();
        self.list_offsets.clear();
        self.jumps.clear();
    }

    /// The jumps into and calls out of the emitted paths (the instruction's
    /// end, its target; see [`SlowPaths::jumps`]).
    #[cfg(test)]
    pub(super) fn jumps(&self) -> &[(u32, u32)] {
        &self.jumps
    }
}

/// The hash of a body's key that [`SlowPaths::index`] is probed from.
fn group_hash(key: u64) -> usize {
    (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40) as usize
}

/// The `jnz` into a slow path not emitted yet: the code offset just past
/// its 32-bit displacement, which [`Vector::emit_slow_paths`] writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::jit::x64) struct SlowEntry(pub(super) u32);

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
    /// A number only bodies with these `constants` share (many bodies,
    /// the same sequence on other registers, have the same list).
    list: u32,
    /// The operands: displacement, end, constant (in `constants`).
    refs: Box<[(u32, u32, u8)]>,
}

/// Distinct constants of one body, at most (a copied body has them in an
/// array; one with more is assembled in place every time).
const MAX_CONSTANTS: usize = 32;

/// log2 of a pool entry's bytes in the scratch state a body is assembled in
/// on its own: large enough that a reference's entry and end can be read
/// back from its [`PoolRef`] ([`PoolRef::entry_and_end`]; a body's code is
/// far below 2^16 bytes).
const SCRATCH_ENTRY_SHIFT: u32 = 16;

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
        st.entry_shift = SCRATCH_ENTRY_SHIFT;
        st.pool.reserve(MAX_CONSTANTS);
        st.pool_refs.reserve(128);
        st.on(&mut ops).assemble_body(body);
        if !st.slow.is_empty() {
            return None;
        }
        // Fails on a reference to a label the body does not bind.
        let code = ops.finalize().ok()?;
        // The scratch pool holds the body's constants in first-use order.
        if st.pool.len() > MAX_CONSTANTS || code.len() >= 1 << SCRATCH_ENTRY_SHIFT {
            return None;
        }
        let refs = st
            .pool_refs
            .iter()
            .map(|r| {
                let (entry, end) = r.entry_and_end(SCRATCH_ENTRY_SHIFT);
                (r.disp_at, end, entry as u8)
            })
            .collect();
        Some(Assembled {
            code: code.into_boxed_slice(),
            list: constant_list(&st.pool),
            constants: st.pool[..].into(),
            refs,
        })
    }
}

/// The number of the constant list `constants` ([`Assembled::list`]): the
/// same as an earlier list of this thread with the same constants, else a
/// new one, unique in the process (so that no two lists ever share one,
/// whichever thread numbered them).
fn constant_list(constants: &[[u32; 4]]) -> u32 {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    LISTS.with_borrow_mut(|lists| {
        if let Some((_, number)) = lists.iter().find(|(list, _)| **list == *constants) {
            return *number;
        }
        let number = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        lists.push((constants.into(), number));
        number
    })
}

/// A body's constants and their list's number ([`constant_list`]).
type ConstantList = (Box<[[u32; 4]]>, u32);

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
    /// The constant lists of those bodies, each with its number (a few
    /// dozen: one per kind of sequence, not per register assignment).
    static LISTS: std::cell::RefCell<Vec<ConstantList>> = Default::default();
}

/// `rsp`, which a `call` moves: a body that addresses memory from it is
/// never called.
const RSP: u8 = 4;

impl Vector<'_> {
    /// Leaves the fast path for a new slow path where the flags say not
    /// zero (`jnz rel32`, the displacement written into the finished code
    /// once the slow path is placed, see [`SlowPaths::jumps`]); the code up
    /// to [`Self::rejoin`] is the fast path's rest.
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
        let slow = &mut self.st.slow;
        let group = slow.group_of(body);
        slow.paths.push(SlowPath { entry, back, group });
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
    ///
    /// The paths come in the order recorded, then the subroutines by body
    /// key; the `jnz`s into the paths and the `call`s (`call rel32`, as
    /// `dynasm` writes a call to a dynamic label) get their displacements in
    /// the finished code ([`SlowPaths::jumps`]).
    pub fn emit_slow_paths(&mut self) {
        if self.st.slow.is_empty() {
            return;
        }
        // Taken for the loop (bodies are emitted through `self`), given
        // back emptied with their room.
        let paths = std::mem::take(&mut self.st.slow.paths);
        let mut groups = std::mem::take(&mut self.st.slow.groups);
        let mut shared = std::mem::take(&mut self.st.slow.shared);
        let mut jumps = std::mem::take(&mut self.st.slow.jumps);
        let mut calls = std::mem::take(&mut self.st.slow.calls);
        shared.extend(
            (groups.iter().enumerate())
                .filter(|(_, group)| group.shared())
                .map(|(g, group)| (group.key, g as u32)),
        );
        // Few (one per shared body): the order the subroutines are placed in.
        shared.sort_unstable();
        for &SlowPath { entry, back, group } in &paths {
            jumps.push((entry.0, self.ops.offset().0 as u32));
            self.forget_masks();
            let Group { key, body, .. } = groups[group as usize];
            if groups[group as usize].shared() {
                // `call rel32` to the subroutine, placed below.
                self.ops.extend(&[0xE8, 0, 0, 0, 0]);
                calls.push((self.ops.offset().0 as u32, group));
            } else {
                self.slow_body_keyed(body, key);
            }
            self.jmp_back(back);
        }
        for &(key, g) in &shared {
            let group = &mut groups[g as usize];
            group.at = self.ops.offset().0 as u32;
            let body = group.body;
            self.forget_masks();
            self.slow_body_keyed(body, key);
            dynasm!(self.ops ; .arch x64 ; ret);
        }
        jumps.extend(calls.iter().map(|&(end, g)| (end, groups[g as usize].at)));
        let slow = &mut self.st.slow;
        slow.paths = paths;
        slow.groups = groups;
        slow.clear_paths();
        shared.clear();
        calls.clear();
        (slow.shared, slow.jumps, slow.calls) = (shared, jumps, calls);
    }

    /// The code of one slow path, between its entry and its way back: a
    /// copy of the body's code assembled once per thread ([`ASSEMBLED`]),
    /// or assembled here.
    #[cfg(test)]
    fn slow_body(&mut self, body: Body) {
        self.slow_body_keyed(body, body.key());
    }

    /// [`Self::slow_body`] of `body`, whose [`Body::key`] is `key`.
    fn slow_body_keyed(&mut self, body: Body, key: u64) {
        let encoding = self.st.encoding;
        // AVX-512 code depends on what `k1` holds on entry.
        if encoding == Encoding::Evex512 || !body.recurs() {
            return self.assemble_body(body);
        }
        let key = (key, encoding as u8);
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
        let list = self.pooled_list(&assembled);
        self.st.slow.copies.push(Copied {
            base,
            list,
            body: assembled,
        });
    }

    /// The position in [`SlowPaths::list_offsets`] of the pool offsets of
    /// `assembled`'s constants: its constants pooled in the order it first
    /// asks for them, unless a body with the same list did that already
    /// (pooling them again would find every one pooled).
    fn pooled_list(&mut self, assembled: &Assembled) -> u32 {
        let slow = &self.st.slow;
        if let Some(&(_, at)) = slow.lists.iter().find(|(list, _)| *list == assembled.list) {
            return at;
        }
        let mut offsets = [0; MAX_CONSTANTS];
        for (offset, &bits) in offsets.iter_mut().zip(&assembled.constants) {
            *offset = (self.pool_entry(bits) as u32) << self.st.entry_shift;
        }
        let slow = &mut self.st.slow;
        let at = slow.list_offsets.len() as u32;
        slow.list_offsets.push(offsets);
        slow.lists.push((assembled.list, at));
        at
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
    use super::{ASSEMBLED, Body, DotTerms, Encoding, MatrixRow, RSP, SlowPaths};
    use crate::jit::x64::Asm;
    use crate::jit::x64::emit::{Vector, VectorState};

    /// Slow paths are grouped by body as they are recorded: every path of a
    /// body in its group (numbered in the order bodies first come), no two
    /// bodies in one, the paths counted, as the index grows past its first
    /// slots; a group is shared (called) when it has two paths or more and
    /// does not address memory from `rsp`.
    #[test]
    fn slow_paths_are_grouped_by_body_as_recorded() {
        let mut slow = SlowPaths::default();
        // 90 bodies of four kinds, several sharing registers (distinct keys,
        // close to each other), the `rsp` one among them.
        let bodies: Vec<Body> = (0..90u8)
            .map(|k| match k % 4 {
                0 => Body::F24Overflow { d: k },
                1 => Body::F24Load { d: k },
                2 => Body::PicaMulF24 { d: k, a: 1, b: 2 },
                _ => Body::PicaMulMem {
                    d: 1,
                    a: 2,
                    base: if k == 3 { RSP } else { 5 },
                    off: 16 * i32::from(k),
                },
            })
            .collect();
        // Each body once, then every third again, then every ninth again.
        let order = (0..90).chain((0..90).step_by(3)).chain((0..90).step_by(9));
        for k in order {
            let group = slow.group_of(bodies[k]);
            assert_eq!(group as usize, k, "{:?}", bodies[k]);
        }
        assert_eq!(slow.groups.len(), bodies.len());
        for (k, group) in slow.groups.iter().enumerate() {
            let paths = 1 + u32::from(k % 3 == 0) + u32::from(k % 9 == 0);
            assert_eq!((group.body, group.paths), (bodies[k], paths), "group {k}");
            assert_eq!(group.key, bodies[k].key());
            assert_eq!(group.shared(), paths > 1 && k != 3, "group {k}");
        }
        // Emptied, the groups start again from the first.
        slow.clear_paths();
        assert_eq!(slow.group_of(bodies[7]), 0);
        assert_eq!(slow.group_of(bodies[5]), 1);
        assert_eq!(slow.group_of(bodies[7]), 0);
        assert_eq!(slow.groups[0].paths, 2);
    }

    /// The compilers' way of finishing code with slow paths (the pool
    /// placed, then the constant operands, the jumps into the paths and the
    /// calls of shared bodies written into the finished code) gives the
    /// bytes of the same code assembled in place with labels: kept bodies
    /// copied (two with the same constant list on other registers, whose
    /// second copy reuses the first's pool entries, and one with another
    /// list), a body shared by two paths, new constants pooled between them,
    /// in both `xmm` encodings.
    #[test]
    fn slow_paths_patched_in_the_finished_code_are_the_code_assembled_in_place() {
        use dynasmrt::{DynasmLabelApi, dynasm};
        let first = Body::F24Overflow { d: 2 };
        let second = Body::F24Overflow { d: 6 };
        let other = Body::F24LoadFrom { d: 9, a: 3 };
        let shared = Body::PicaMulF24 { d: 3, a: 4, b: 5 };
        for encoding in [Encoding::Sse41, Encoding::Vex128] {
            for pass in ["first", "cached"] {
                let mut ops = Asm::new(0);
                let mut state = VectorState::new(encoding);
                let mut v = state.on(&mut ops);
                v.constant(1, 0x1234_5678);
                for body in [first, other, shared, second, shared] {
                    let entry = v.jnz_to_slow();
                    v.constant(7, 0x4000_0000 | body.key() as u32);
                    v.rejoin(entry, body);
                }
                v.emit_slow_paths();
                dynasm!(v.ops ; .arch x64 ; int3);
                let pool = v.place_pool();
                let mut patched = ops.finalize().expect("assembles");
                state
                    .patch_pool_refs(&mut patched, pool)
                    .expect("in the code");
                assert!(state.slow.jumps.is_empty() && state.slow.copies.is_empty());
                drop(state);

                let mut ops = Asm::new(0);
                let mut state = VectorState::new(encoding);
                let mut v = state.on(&mut ops);
                v.constant(1, 0x1234_5678);
                let labels: Vec<_> = (0..11).map(|_| v.ops.new_dynamic_label()).collect();
                let (into, back, sub) = (&labels[..5], &labels[5..10], labels[10]);
                for (k, body) in [first, other, shared, second, shared].iter().enumerate() {
                    dynasm!(v.ops ; .arch x64 ; jnz =>into[k]);
                    v.constant(7, 0x4000_0000 | body.key() as u32);
                    dynasm!(v.ops ; .arch x64 ; =>back[k]);
                }
                for (k, body) in [first, other, shared, second, shared].iter().enumerate() {
                    dynasm!(v.ops ; .arch x64 ; =>into[k]);
                    if *body == shared {
                        dynasm!(v.ops ; .arch x64 ; call =>sub);
                    } else {
                        v.assemble_body(*body);
                    }
                    dynasm!(v.ops ; .arch x64 ; jmp =>back[k]);
                }
                dynasm!(v.ops ; .arch x64 ; =>sub);
                v.assemble_body(shared);
                dynasm!(v.ops ; .arch x64 ; ret ; int3);
                v.emit_pool();
                let in_place = ops.finalize().expect("assembles");
                assert_eq!(patched, in_place, "{encoding:?} ({pass})");
            }
        }
    }

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
