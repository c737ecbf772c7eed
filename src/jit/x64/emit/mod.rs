//! The x86-64 vector-primitive emitter: every IR primitive (the PICA
//! multiply, min/max, canonicalisation, the float24 conversions, `mova`'s
//! float → int, the comparison tables, floor, sqrt, shifts…) is lowered here
//! once, for every register width and encoding the two lowerings use:
//!
//! | [`Encoding`] | registers | used by |
//! | --- | --- | --- |
//! | `Sse41` | `xmm`, legacy SSE4.1 | single-vertex (baseline), wide 4 lanes |
//! | `Vex128` | `xmm`, VEX (3-operand) | single-vertex on AVX hosts |
//! | `Vex256` | `ymm`, VEX/AVX2 | wide 8 lanes |
//! | `Evex512` | `zmm`, EVEX/AVX-512 ([`super::evex`]) | wide 16 lanes |
//!
//! The single-vertex lowering (`x64/lower/`: x, y, z, w of one vertex in one
//! register) and the wide lowering (`x64/wide/`: one vertex per lane) allocate
//! values in registers 1–12 and call [`Vector`] for the arithmetic; what is
//! theirs alone (swizzles, blends and frame operands; rows, gathers and lane
//! masks) stays in their modules.
//!
//! Register roles inside one primitive: [`MASK`] (register 0, SSE's implicit
//! `blendvps` operand) and [`S1`], [`S2`], [`S3`] are scratch; `d` is the
//! result and never one of the operands' registers. Rare lanes' slow paths
//! are recorded as [`SlowPath`]s and emitted out of line by
//! [`Vector::emit_slow_paths`], the one slow-path table of the backend.

mod dot;
mod encode;
mod f24_pieces;
mod ops;
mod prims;
mod slow;
#[cfg(test)]
mod tests;

pub(in crate::jit::x64) use encode::{
    Mem, movaps_load, movaps_store, pshufd, pshufd_mem, vblendps, write_flag,
};
#[cfg(test)]
pub(in crate::jit::x64) use ops::is_compare;
pub(in crate::jit::x64) use ops::{K, U, V, z};
pub(in crate::jit::x64) use slow::{Body, DotTerms, MatrixRow, SlowEntry};
// Named by the documentation's links only.
#[cfg(doc)]
pub(in crate::jit::x64) use slow::SlowPath;
use slow::SlowPaths;

use super::Asm;
use crate::jit::JitError;
use dynasmrt::{DynamicLabel, DynasmApi, DynasmLabelApi, dynasm};

/// Register width and instruction encoding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::jit::x64) enum Encoding {
    /// `xmm` registers, legacy SSE4.1 (two-operand forms).
    Sse41,
    /// `xmm` registers, VEX (three-operand forms).
    Vex128,
    /// `ymm` registers, VEX/AVX2.
    Vex256,
    /// `zmm` registers, EVEX/AVX-512 (compares write an opmask).
    Evex512,
}

impl Encoding {
    /// Bytes of one register.
    pub fn register_bytes(self) -> usize {
        match self {
            Encoding::Sse41 | Encoding::Vex128 => 16,
            Encoding::Vex256 => 32,
            Encoding::Evex512 => 64,
        }
    }
}

/// The mask register: SSE's implicit `blendvps` operand. A compare into it
/// is only ever read by selects by it (with AVX-512 it stays in `k1`).
pub(in crate::jit::x64) const MASK: u8 = 0;
/// Scratch registers of one primitive.
pub(in crate::jit::x64) const S1: u8 = 13;
pub(in crate::jit::x64) const S2: u8 = 14;
pub(in crate::jit::x64) const S3: u8 = 15;

/// What the emitter keeps between primitives of one code buffer.
pub(in crate::jit::x64) struct VectorState {
    encoding: Encoding,
    /// Constants (a 16-byte pattern repeated over a whole register), emitted
    /// after the code.
    pool: Vec<[u32; 4]>,
    /// The label of each pool entry, where something asked for one
    /// ([`Vector::pool_label_lanes`]: AVX-512 operands, the wide engine's
    /// rows); [`Vector::place_pool`] binds them. Most entries are only
    /// addressed through [`Vector::pool_ref`] and need none.
    pool_labels: Vec<Option<DynamicLabel>>,
    /// An index of `pool`: open addressing by a hash of the pattern, each
    /// slot a position in `pool` + 1 (0: empty), at most half of them full.
    /// The exact sequences ask for the same few dozen patterns a hundred
    /// times or more per shader, which a search of `pool` made a noticeable
    /// part of compiling.
    pool_index: Vec<u32>,
    /// RIP-relative references to pool entries whose displacement
    /// [`VectorState::patch_pool_refs`] writes once the pool is placed (see
    /// [`PoolRef`]). Patching them directly costs a fraction of a dynamic
    /// label's relocation, and the exact float24 sequences refer to the
    /// pool a thousand times per shader.
    pool_refs: Vec<PoolRef>,
    /// log2 of a pool entry's bytes (one register).
    entry_shift: u32,
    /// AVX-512: `k1` holds the last compare into [`MASK`] (debug builds
    /// check that a select by [`MASK`] has one to read).
    mask_in_k1: bool,
    /// AVX-512: `k1` holds the sign bits of this vector register (not
    /// [`MASK`]), which a select by it then reads without converting again.
    /// Forgotten when either changes and where paths join
    /// ([`Vector::bind`]).
    k1_holds: Option<u8>,
    /// Slow paths still to emit, and what emitting them needs.
    slow: SlowPaths,
    /// The pool entries of the float24 quantisation's constants
    /// ([`f24_pieces::CONSTANTS`]), once a quantisation pooled them (until
    /// the pool is placed).
    quantize_pool: Option<[u32; 4]>,
    /// The pool entries of the float24 flush's two constants (the first
    /// two of [`f24_pieces::CONSTANTS`]), once a flush pooled them.
    flush_pool: Option<[u32; 2]>,
}

/// The lists of a [`VectorState`], empty: what a state dropped on this
/// thread leaves for the next one ([`SPARE_LISTS`]).
#[derive(Default)]
struct Lists {
    pool: Vec<[u32; 4]>,
    pool_labels: Vec<Option<DynamicLabel>>,
    pool_index: Vec<u32>,
    pool_refs: Vec<PoolRef>,
    slow: SlowPaths,
}

thread_local! {
    /// The lists of the last [`VectorState`] dropped on this thread, emptied,
    /// with their room: a compilation's state takes them instead of
    /// allocating a dozen lists (and freeing them at its end).
    static SPARE_LISTS: std::cell::Cell<Option<Lists>> = const { std::cell::Cell::new(None) };
}

impl VectorState {
    pub fn new(encoding: Encoding) -> VectorState {
        let Lists {
            pool,
            pool_labels,
            pool_index,
            pool_refs,
            slow,
        } = SPARE_LISTS
            .try_with(std::cell::Cell::take)
            .ok()
            .flatten()
            .unwrap_or_default();
        VectorState {
            encoding,
            pool,
            pool_labels,
            pool_index,
            pool_refs,
            entry_shift: encoding.register_bytes().trailing_zeros(),
            mask_in_k1: false,
            k1_holds: None,
            slow,
            quantize_pool: None,
            flush_pool: None,
        }
    }

    /// Makes room for `refs` constant operands, `patterns` constants and
    /// `slow` slow paths, so that the lists do not grow (copying what they
    /// hold) operand by operand while a program is emitted.
    pub fn reserve(&mut self, refs: usize, patterns: usize, slow: usize) {
        self.pool_refs.reserve(refs);
        self.pool.reserve(patterns);
        self.pool_labels.reserve(patterns);
        self.slow.reserve(slow);
    }

    /// Writes the displacement of every constant operand into `code`, the
    /// finished buffer whose pool [`Vector::place_pool`] placed at `base`.
    pub fn patch_pool_refs(&mut self, code: &mut [u8], base: usize) -> Result<(), JitError> {
        self.slow.patch_copies(code, base as u32)?;
        // The code and its pool are far below 2 GiB long.
        let base = base as i32;
        for r in &self.pool_refs {
            let at = r.disp_at as usize;
            let Some(field) = code.get_mut(at..).and_then(<[u8]>::first_chunk_mut::<4>) else {
                return Err(JitError::Assemble("constant operand past the code".into()));
            };
            *field = r.disp_less_base.wrapping_add(base).to_le_bytes();
        }
        self.pool_refs.clear();
        Ok(())
    }

    /// The emitter writing into `ops`.
    pub fn on<'a>(&'a mut self, ops: &'a mut Asm) -> Vector<'a> {
        Vector { ops, st: self }
    }
}

impl Drop for VectorState {
    /// Leaves the lists, emptied, for the next state on this thread.
    fn drop(&mut self) {
        let mut lists = Lists {
            pool: std::mem::take(&mut self.pool),
            pool_labels: std::mem::take(&mut self.pool_labels),
            pool_index: std::mem::take(&mut self.pool_index),
            pool_refs: std::mem::take(&mut self.pool_refs),
            slow: std::mem::take(&mut self.slow),
        };
        lists.pool.clear();
        lists.pool_labels.clear();
        // Empty: the first pattern pooled sizes it.
        lists.pool_index.clear();
        lists.pool_refs.clear();
        lists.slow.clear();
        // Where the thread is exiting, they are simply dropped.
        let _ = SPARE_LISTS.try_with(|spare| spare.set(Some(lists)));
    }
}

/// A RIP-relative reference to a pool entry (see [`VectorState::pool_refs`]):
/// where its displacement is, and the displacement less the pool's offset
/// (the entry's offset in the pool less the instruction's end, where RIP is
/// when it runs), so that placing the pool only adds its offset.
#[derive(Clone, Copy, Debug)]
struct PoolRef {
    disp_at: u32,
    disp_less_base: i32,
}

impl PoolRef {
    /// The reference to pool entry `entry` (of `1 << entry_shift` bytes)
    /// from the displacement at `disp_at` of an instruction ending at `end`.
    #[inline]
    fn new(disp_at: u32, end: u32, entry: u32, entry_shift: u32) -> PoolRef {
        PoolRef {
            disp_at,
            disp_less_base: (entry << entry_shift).wrapping_sub(end) as i32,
        }
    }

    /// The entry and the instruction's end of a reference made by
    /// [`PoolRef::new`] with `entry_shift`, where the end is below
    /// `1 << entry_shift` (and above 0).
    fn entry_and_end(self, entry_shift: u32) -> (u32, u32) {
        // `(entry << shift) - end` lies between `(entry - 1) << shift` and
        // `entry << shift`, both excluded.
        // (an arithmetic shift: the entry may be 0).
        let entry = (self.disp_less_base >> entry_shift) + 1;
        let end = (entry << entry_shift).wrapping_sub(self.disp_less_base);
        (entry as u32, end as u32)
    }
}

/// Slots of [`VectorState::pool_index`] to start with (a power of two).
const POOL_INDEX_SLOTS: usize = 64;

/// The hash of a pool pattern that [`VectorState::pool_index`] is probed
/// from (the multiplication's high bits depend on every bit of its
/// operand).
fn pool_hash(bits: [u32; 4]) -> usize {
    let folded = u64::from(bits[0] ^ bits[2].rotate_left(16))
        | u64::from(bits[1] ^ bits[3].rotate_left(16)) << 32;
    (folded.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40) as usize
}

/// The emitter: a code buffer and the emitter's state.
pub(in crate::jit::x64) struct Vector<'a> {
    pub ops: &'a mut Asm,
    st: &'a mut VectorState,
}

impl Vector<'_> {
    pub fn encoding(&self) -> Encoding {
        self.st.encoding
    }

    /// VEX, `xmm` or `ymm` (three-operand forms, no opmasks).
    fn vex(&self) -> bool {
        matches!(self.st.encoding, Encoding::Vex128 | Encoding::Vex256)
    }

    /// VEX with `ymm` registers.
    fn ymm(&self) -> bool {
        self.st.encoding == Encoding::Vex256
    }

    /// AVX-512 (`zmm`, EVEX).
    fn evex(&self) -> bool {
        self.st.encoding == Encoding::Evex512
    }

    /// The label of the constant whose every 16 bytes are `bits` (a whole
    /// register, aligned to its size).
    #[inline]
    pub fn pool_label_lanes(&mut self, bits: [u32; 4]) -> DynamicLabel {
        let entry = self.pool_entry(bits);
        match self.st.pool_labels[entry] {
            Some(label) => label,
            None => {
                let label = self.ops.new_dynamic_label();
                self.st.pool_labels[entry] = Some(label);
                label
            }
        }
    }

    /// The position in the pool of the constant whose every 16 bytes are
    /// `bits`, pooled now if it is not yet.
    #[inline]
    fn pool_entry(&mut self, bits: [u32; 4]) -> usize {
        match self.pool_find(bits) {
            Some(entry) => entry,
            None => self.pool_new(bits),
        }
    }

    /// The position in the pool of `bits`, if it is pooled.
    #[inline]
    fn pool_find(&self, bits: [u32; 4]) -> Option<usize> {
        // The index is empty until the first pattern is pooled.
        let mask = self.st.pool_index.len().wrapping_sub(1);
        if !self.st.pool_index.is_empty() {
            let mut at = pool_hash(bits) & mask;
            loop {
                let n = self.st.pool_index[at];
                if n == 0 {
                    break;
                }
                if self.st.pool[n as usize - 1] == bits {
                    return Some(n as usize - 1);
                }
                at = (at + 1) & mask;
            }
        }
        None
    }

    /// Pools `bits` (not pooled yet); its position.
    #[cold]
    #[inline(never)]
    fn pool_new(&mut self, bits: [u32; 4]) -> usize {
        self.st.pool.push(bits);
        self.st.pool_labels.push(None);
        let st = &mut *self.st;
        if 2 * st.pool.len() > st.pool_index.len() {
            // Twice as many slots (or the first ones): every pattern placed
            // again.
            let slots = (2 * st.pool_index.len()).max(POOL_INDEX_SLOTS);
            st.pool_index.clear();
            st.pool_index.resize(slots, 0);
            for k in 0..st.pool.len() {
                place(&mut st.pool_index, st.pool[k], k);
            }
        } else {
            place(&mut st.pool_index, bits, st.pool.len() - 1);
        }
        return st.pool.len() - 1;

        /// Records pool entry `k` (of pattern `bits`) in the first free
        /// slot from its hash on.
        fn place(index: &mut [u32], bits: [u32; 4], k: usize) {
            let mask = index.len() - 1;
            let mut at = pool_hash(bits) & mask;
            while index[at] != 0 {
                at = (at + 1) & mask;
            }
            index[at] = k as u32 + 1;
        }
    }

    /// The pool entry of the constant `bits` in every lane, for an
    /// instruction about to address it as `[rip + 0]` and then report it
    /// with [`Self::pool_ref`].
    ///
    /// A miss goes to [`Self::pool_new_const`], which takes the one word:
    /// [`Self::pool_new`] takes the pattern by reference, and building it in
    /// memory for that call made every hit (most of the thousand constant
    /// operands of a large float24 shader) read it back from the stack.
    #[inline]
    pub fn pool_const(&mut self, bits: u32) -> usize {
        match self.pool_find([bits; 4]) {
            Some(entry) => entry,
            None => self.pool_new_const(bits),
        }
    }

    /// [`Self::pool_new`] of `bits` in every lane.
    #[cold]
    #[inline(never)]
    fn pool_new_const(&mut self, bits: u32) -> usize {
        self.pool_new([bits; 4])
    }

    /// The instruction just emitted addresses pool entry `entry` as
    /// `[rip + 0]`, its displacement followed by `tail` bytes (of an
    /// immediate): [`Self::emit_pool`] writes the displacement.
    #[inline]
    pub fn pool_ref(&mut self, entry: usize, tail: u32) {
        let end = self.ops.offset().0 as u32;
        let r = PoolRef::new(end - 4 - tail, end, entry as u32, self.st.entry_shift);
        self.st.pool_refs.push(r);
    }

    /// The label of the constant `bits` in every lane.
    pub fn pool_label(&mut self, bits: u32) -> DynamicLabel {
        self.pool_label_lanes([bits; 4])
    }

    /// Emits the constant pool, and writes the constant operands'
    /// displacements into the buffer: the tests' oracle for the compilers'
    /// way ([`Self::place_pool`], then [`VectorState::patch_pool_refs`] on
    /// the finished code).
    #[cfg(test)]
    pub fn emit_pool(&mut self) {
        let base = self.place_pool();
        let copied: Vec<PoolRef> = self.st.slow.copied_refs().collect();
        let mut code = self.ops.alter();
        for r in self.st.pool_refs.drain(..).chain(copied) {
            code.goto(dynasmrt::AssemblyOffset(r.disp_at as usize));
            code.push_i32(r.disp_less_base.wrapping_add(base as i32));
        }
        for &(end, target) in self.st.slow.jumps() {
            code.goto(dynasmrt::AssemblyOffset(end as usize - 4));
            code.push_i32(target.wrapping_sub(end) as i32);
        }
        self.st.slow.forget_copies();
    }

    /// Places the constant pool ([`Self::place_pool`]), lets `then` emit
    /// what follows it, and takes the finished code out of the assembler
    /// (labels resolved) with the constant operands' displacements written
    /// into it ([`VectorState::patch_pool_refs`]): the bytes
    /// [`Self::emit_pool`], `then` and finalising the assembler give,
    /// without the assembler's modifier per operand (the wide engine's
    /// functions and kernels end this way).
    pub fn finish_with_pool(&mut self, then: impl FnOnce(&mut Asm)) -> Result<Vec<u8>, JitError> {
        let base = self.place_pool();
        then(&mut *self.ops);
        let mut code = self
            .ops
            .take()
            .map_err(|err| JitError::Assemble(format!("{err:?}")))?;
        self.st.patch_pool_refs(&mut code, base)?;
        Ok(code)
    }

    /// Emits the constant pool and returns its offset; the constant
    /// operands' displacements are left for [`VectorState::patch_pool_refs`]
    /// to write into the finished code (a slice: a few instructions per
    /// operand, where the assembler's modifier checks and stores byte by
    /// byte).
    pub fn place_pool(&mut self) -> usize {
        let entry = self.st.encoding.register_bytes();
        match entry {
            16 => dynasm!(self.ops ; .arch x64 ; .align 16),
            32 => dynasm!(self.ops ; .arch x64 ; .align 32),
            _ => dynasm!(self.ops ; .arch x64 ; .align 64),
        }
        self.st.pool_index.clear();
        let base = self.ops.offset().0;
        for (&bits, label) in self.st.pool.iter().zip(&self.st.pool_labels) {
            if let Some(label) = *label {
                dynasm!(self.ops ; .arch x64 ; =>label);
            }
            for _ in 0..entry / 16 {
                dynasm!(self.ops ; .arch x64 ; .u32 bits[0], bits[1], bits[2], bits[3]);
            }
        }
        self.st.pool.clear();
        self.st.pool_labels.clear();
        self.st.quantize_pool = None;
        self.st.flush_pool = None;
        self.st.slow.forget_pool();
        base
    }

    /// Binds `label` here: code may arrive from elsewhere, so nothing is
    /// known of `k1`.
    pub fn bind(&mut self, label: DynamicLabel) {
        dynasm!(self.ops ; .arch x64 ; =>label);
        self.forget_masks();
    }

    /// Forgets what `k1` holds (code emitted outside this emitter may have
    /// changed it or the vector it mirrors).
    pub fn forget_masks(&mut self) {
        self.st.mask_in_k1 = false;
        self.st.k1_holds = None;
    }
}

#[cfg(test)]
mod pool_tests {
    use super::{Asm, Encoding, PoolRef, V, VectorState};

    /// A reference's entry and end read back from it as [`PoolRef::new`]
    /// wrote them (how a body assembled on its own learns its operands),
    /// entry 0 and the largest end included; the displacement it patches
    /// is the entry's offset less the end plus the pool's.
    #[test]
    fn a_pool_references_entry_and_end_read_back() {
        for shift in [4, 5, 6, 16] {
            for entry in [0, 1, 2, 31] {
                for end in [1u32, 4, 5, 300, (1 << shift.min(16)) - 1] {
                    if end >= 1 << shift {
                        continue;
                    }
                    let r = PoolRef::new(end.saturating_sub(4), end, entry, shift);
                    assert_eq!(
                        r.entry_and_end(shift),
                        (entry, end),
                        "{shift} {entry} {end}"
                    );
                    let pool = 4096;
                    let target = pool + (entry << shift) as i64 - i64::from(end);
                    assert_eq!(
                        i64::from(r.disp_less_base.wrapping_add(pool as i32)),
                        target
                    );
                }
            }
        }
    }

    /// A state that takes the lists a dropped state left on this thread
    /// emits what a state with fresh lists does (the lists come emptied:
    /// no pattern, label, operand or slow path of the other code).
    #[test]
    fn a_state_on_the_lists_of_a_dropped_one_emits_what_a_fresh_one_does() {
        let emit = |state: &mut VectorState, patterns: std::ops::Range<u32>| {
            let mut ops = Asm::new(0);
            let mut v = state.on(&mut ops);
            for bits in patterns {
                v.v3c(V::Addps, 3, 4, bits);
                v.pool_label(bits ^ 1);
                v.binary(crate::ir::BinOp::PicaMulF24, 5, 3, 4);
            }
            v.emit_slow_paths();
            v.emit_pool();
            ops.finalize().expect("assembles")
        };
        for encoding in [Encoding::Sse41, Encoding::Vex128] {
            // Leaves its lists, full, to the next state.
            let mut dropped = VectorState::new(encoding);
            let mut ops = Asm::new(0);
            let mut v = dropped.on(&mut ops);
            for bits in 0..40 {
                v.v3c(V::Andps, 3, 4, bits);
                v.binary(crate::ir::BinOp::PicaMulF24, 5, 3, 4);
            }
            v.constant_lanes(6, [1, 2, 3, 4]);
            drop(dropped);
            let mut recycled = VectorState::new(encoding);
            // The spare lists are taken: this one is fresh.
            let mut fresh = VectorState::new(encoding);
            assert_eq!(
                emit(&mut recycled, 7..30),
                emit(&mut fresh, 7..30),
                "{encoding:?}"
            );
        }
    }

    /// `pool_const` (its own miss path, [`Vector::pool_new_const`]) and
    /// `pool_entry` of the same word in every lane agree, hit or miss, as
    /// the index grows: one entry per word, holding the word in all four
    /// lanes, in the order first asked for.
    #[test]
    fn pool_const_and_pool_entry_share_one_entry_per_word() {
        let mut ops = Asm::new(0);
        let mut state = VectorState::new(Encoding::Vex128);
        let mut v = state.on(&mut ops);
        let words: Vec<u32> = (0..150u32).map(|k| k.wrapping_mul(0x9E37_79B9)).collect();
        // Half pooled through `pool_entry` first, half through `pool_const`.
        let first: Vec<usize> = words
            .iter()
            .enumerate()
            .map(|(k, &w)| {
                if k % 2 == 0 {
                    v.pool_const(w)
                } else {
                    v.pool_entry([w; 4])
                }
            })
            .collect();
        for (k, &w) in words.iter().enumerate().rev() {
            assert_eq!(v.pool_const(w), first[k], "word {k}");
            assert_eq!(v.pool_entry([w; 4]), first[k], "word {k}");
        }
        assert_eq!(first, (0..words.len()).collect::<Vec<_>>());
        let want: Vec<[u32; 4]> = words.iter().map(|&w| [w; 4]).collect();
        assert_eq!(state.pool, want);
    }

    #[test]
    fn pool_labels_are_one_per_pattern_as_the_index_grows() {
        let mut ops = Asm::new(0);
        let mut state = VectorState::new(Encoding::Sse41);
        let mut v = state.on(&mut ops);
        // More patterns than the index starts with slots (so it grows, and
        // probes pass over others), asked for in two interleaved orders.
        let patterns: Vec<[u32; 4]> = (0..200u32)
            .map(|k| [k.wrapping_mul(0x9E37_79B9), k, !k, k << 7])
            .collect();
        let first: Vec<_> = patterns.iter().map(|&p| v.pool_label_lanes(p)).collect();
        for (k, &p) in patterns.iter().enumerate().rev() {
            assert_eq!(v.pool_label_lanes(p), first[k], "pattern {k}");
            assert_eq!(v.pool_label_lanes(patterns[k / 2]), first[k / 2]);
        }
        for (i, a) in first.iter().enumerate() {
            assert!(first[i + 1..].iter().all(|b| b != a), "label {i} shared");
        }
        // The pool holds each pattern once, in the order first asked for.
        assert_eq!(state.pool, patterns);
    }
}
