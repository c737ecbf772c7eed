//! The wide driver: a block's function (entry, its operations through the
//! register allocator, the exit mask and a `loop`'s values, exit), the F24
//! input conversion, and the order in which a shader's functions are
//! emitted.

use super::{RegAlloc, Target};
use crate::ir::{BinOp, UnOp};
use crate::jit::JitError;
use crate::jit::wide::lanes::{LaneBlock, LaneOp, LaneRef};
use crate::jit::wide::layout;
use crate::jit::wide::plan::KernelPlan;

/// The driver over a [`Target`]: implemented for every one.
pub(crate) trait Driver: Target {
    /// F24: the inputs of `mask`, converted (`f24::load`) into their
    /// `CONVERTED` rows.
    fn convert_inputs(&mut self, mask: u16) {
        let reg = Self::VALUE_REGS[0];
        let rows = (0..16)
            .filter(|n| mask >> n & 1 != 0)
            .flat_map(|n| (0..4).map(move |c| 4 * n + c));
        // The fast forms under one range check, then (for the rare groups
        // with a float24 subnormal, infinite, NaN or too large lane) the
        // exact loads from the same input rows, which nothing changed.
        if mask != 0 && self.begin_deferred_loads() {
            for row in rows.clone() {
                self.load_row(reg, layout::INPUT + row);
                self.f24_load_deferred_row(reg, row);
                self.store_row(layout::CONVERTED + row, reg);
            }
            self.check_deferred();
        }
        for row in rows {
            self.load_row(reg, layout::INPUT + row);
            self.f24_load_in_place(reg);
            self.flush_converted_in_place(reg, row);
            self.store_row(layout::CONVERTED + row, reg);
        }
        self.join_deferred();
    }

    /// The function converting the inputs of `mask` (F24).
    fn prologue(&mut self, mask: u16) {
        self.enter();
        self.convert_inputs(mask);
        self.no_exit_mask();
        self.leave();
    }

    /// A block's function: its operations, then its exit condition's lane
    /// mask (and a `loop`'s values in the header).
    fn block(&mut self, block: &LaneBlock) -> Result<(), JitError> {
        self.enter();
        self.body(block)?;
        match block.exit_cond {
            Some(cond) => {
                let r = self.reg_of(cond, &[])?;
                self.exit_mask(r);
            }
            None => self.no_exit_mask(),
        }
        if let Some((count, increment)) = block.loop_values {
            let r = self.reg_of(count, &[])?;
            self.store_lane0(layout::LOOP_COUNT, r);
            let r = self.reg_of(increment, &[count])?;
            self.store_lane0(layout::LOOP_INCREMENT, r);
        }
        self.leave();
        Ok(())
    }

    /// A block's operations, from an empty register allocation; values its
    /// exit reads stay live.
    fn body(&mut self, block: &LaneBlock) -> Result<(), JitError> {
        if block.gathers as usize > layout::MAX_GATHERS {
            return Err(JitError::Lowering(
                "too many relative reads in a block".into(),
            ));
        }
        self.allocation().start(block);
        self.start_block(block.gathers as usize);
        // The operations before the first store (stores come last and are
        // the block's only writes of state rows): where two or more of them
        // have a fast form under one deferred range check, they run in their
        // fast forms, then the check, then (for the rare groups it fails) all
        // of them again by their exact sequences, from the same registers
        // and rows; the allocator makes the same decisions both times, so
        // both paths join with every value in the same place.
        let region = (block.ops.iter())
            .position(|op| matches!(op, LaneOp::Store(..)))
            .unwrap_or(block.ops.len());
        // Values that may be infinite or NaN in the ordinary course (`rcp`,
        // `rsq` of 0 or of a negative number, `lg2`'s and `ex2`'s results
        // made from bits, constants at or above 2^64), and what the block
        // computes from them, keep their own checks: were they deferred,
        // such a lane would send the group through the whole region twice.
        let mut wild = vec![false; region];
        for (k, op) in block.ops[..region].iter().enumerate() {
            wild[k] = match *op {
                LaneOp::Binary(BinOp::FDiv, ..) | LaneOp::Unary(UnOp::Sqrt | UnOp::FromBits, _) => {
                    true
                }
                LaneOp::Const(bits) => bits & 0x7FFF_FFFF >= crate::arith::f24::OVERFLOW_BITS,
                _ => op.operands().any(|o| wild[o as usize]),
            };
        }
        let candidate = |target: &Self, k: usize| !wild[k] && target.defers_check(block.ops[k]);
        let later = nan_tests_later(&block.ops, region, |k| candidate(self, k));
        // A canonicalisation is fast only where its test stands for some
        // product's (elsewhere its checked form costs no more).
        let fast = |target: &Self, k: usize| {
            candidate(target, k)
                && (!matches!(block.ops[k], LaneOp::Unary(UnOp::Canonicalize, _))
                    || later.covers[k])
        };
        let rows = row_operands(block, |u, at| {
            // A wild operation's checked form may run inside the fast run.
            (u >= region || !wild[u]) && self.reads_row_operand(block.ops[u], at)
        });
        // Quantisations of the region whose bounds its check tests, so that
        // their products with bounded rows are bounded too (§9.24).
        let checked = checked_operands(
            &block.ops,
            region,
            |k| fast(self, k),
            |v| bounded_operand(self, &block.ops, v),
        );
        // Fast float24 products of two bounded rows (§9.20), or of a bounded
        // row and a checked quantisation (§9.24): zero or within
        // [2^-46, 2^58] where the region's fast run runs.
        let bounded: Vec<bool> = (0..region)
            .map(|k| {
                fast(self, k)
                    && match block.ops[k] {
                        LaneOp::Binary(BinOp::PicaMulF24, a, b) => {
                            let row = |v: LaneRef| bounded_operand(self, &block.ops, v);
                            let is_checked = |v: LaneRef| checked[v as usize];
                            (row(a) && row(b))
                                || (row(a) && is_checked(b))
                                || (is_checked(a) && row(b))
                        }
                        _ => false,
                    }
            })
            .collect();
        let zero_sign_free = zero_sign_unseen(block);
        // A bounded row is zero or within the operand bounds only where
        // the run with bounded products runs (its flag test passed).
        let row_in_bounds = |target: &Self, with_bounded: bool, v: LaneRef| {
            with_bounded && bounded_operand(target, &block.ops, v)
        };
        let known_if = |target: &Self, bounded: &[bool]| match target.recorded_below_log2() {
            Some(log2) => {
                let with_bounded = bounded.contains(&true);
                let level = |k: usize| {
                    if bounded[k] {
                        Some(BOUNDED_PRODUCT_LOG2)
                    } else {
                        row_in_bounds(target, with_bounded, k as LaneRef)
                            .then_some(BOUNDED_OPERAND_LOG2)
                    }
                };
                quantizations_in_range(&block.ops, region, |k| fast(target, k), level, log2)
            }
            None => vec![false; region],
        };
        let known = known_if(self, &bounded);
        let deferred = (0..region).filter(|&k| fast(self, k)).count();
        let mut first = 0;
        if deferred >= 2 && self.begin_deferred() {
            let any_bounded = bounded.contains(&true);
            if any_bounded {
                self.require_bounded_operands();
            }
            let start = self.allocation().clone();
            let fast_run = |target: &mut Self, bounded: &[bool], known: &[bool]| {
                // Only the run with bounded products checks operand bounds.
                let with_bounded = bounded.contains(&true);
                // Quantisations of sums of bounded products (§9.29).
                let row = |v: LaneRef| row_in_bounds(target, with_bounded, v);
                let grid =
                    on_the_grid(&block.ops, region, |k| fast(target, k), bounded, known, row)
                        .into_iter()
                        .enumerate()
                        .map(|(k, g)| g && !(with_bounded && checked[k]))
                        .collect::<Vec<bool>>();
                for (k, op) in block.ops[..region].iter().enumerate() {
                    let fast = fast(target, k);
                    target.defer_next(fast);
                    target.nan_test_later(fast && later.tested_later[k]);
                    target.range_known(fast && known[k]);
                    target.bounded_product(bounded[k].then_some(zero_sign_free[k]));
                    target.check_operand_bounds(with_bounded && checked[k]);
                    target.grid_quantization(grid[k].then_some(zero_sign_free[k]));
                    target.lower(k as LaneRef, *op, &rows)?;
                }
                Ok::<(), JitError>(())
            };
            fast_run(self, &bounded, &known)?;
            let joined = self.allocation().clone();
            if any_bounded {
                // A group whose operands are not bounded runs the fast
                // forms without bounded products (§9.14's, recorded) under
                // their own check, not the exact run straight away.
                self.check_bounded_run();
                *self.allocation() = start.clone();
                let none = vec![false; region];
                fast_run(self, &none, &known_if(self, &none))?;
                if *self.allocation() != joined {
                    return Err(JitError::Lowering(
                        "the unbounded run of a deferred region allocated differently".into(),
                    ));
                }
            }
            self.check_deferred();
            *self.allocation() = start;
            for (k, op) in block.ops[..region].iter().enumerate() {
                self.lower(k as LaneRef, *op, &rows)?;
            }
            // Both runs must leave every value in the same place (they lower
            // the same operations from the same state); were they ever to
            // differ, the block is not lowered rather than joined wrongly.
            if *self.allocation() != joined {
                return Err(JitError::Lowering(
                    "the exact run of a deferred region allocated differently".into(),
                ));
            }
            self.join_deferred();
            first = region;
        }
        for (k, op) in block.ops.iter().enumerate().skip(first) {
            self.lower(k as LaneRef, *op, &rows)?;
        }
        Ok(())
    }

    /// Operation `k` of the block; `rows[v]`: the row that value `v`'s one
    /// reader takes from the register file (`v` is not loaded).
    fn lower(&mut self, k: LaneRef, op: LaneOp, rows: &[Option<u16>]) -> Result<(), JitError> {
        // A value nothing reads (the batch kernel's hoisting leaves those) is
        // not computed, unless it has an effect (stores, a gather's rows).
        if self.allocation().unused(k) && !matches!(op, LaneOp::Store(..) | LaneOp::Gather { .. }) {
            return Ok(());
        }
        if rows[k as usize].is_some() {
            return Ok(());
        }
        if Self::LAZY_REMATERIALISATION && self.allocation().defer_rematerialisable(k) {
            return Ok(());
        }
        if let LaneOp::Binary(_, a, b) = op {
            let operands = [a, b];
            let from_row = (0..2).find_map(|at| rows[operands[at] as usize].map(|row| (at, row)));
            if let Some((at, row)) = from_row {
                let r = self.reg_of(operands[1 - at], &operands)?;
                let d = self.alloc(&operands)?;
                self.allocation().assign(k, d);
                self.lane_op_row(op, d, r, at, row)?;
                let ra = self.allocation();
                ra.release(&operands, k);
                if ra.unused(k) {
                    ra.drop_value(k);
                }
                return Ok(());
            }
        }
        let mut operands = [0; 3];
        let mut count = 0;
        for o in op.operands() {
            operands[count] = o;
            count += 1;
        }
        let operands = &operands[..count];
        let mut regs = [0u8; 3];
        for (i, &o) in operands.iter().enumerate() {
            regs[i] = self.reg_of(o, operands)?;
        }
        if let LaneOp::Store(row, _) = op {
            self.store_value(row as usize, regs[0]);
            self.allocation().release(operands, k);
            return Ok(());
        }
        if count == 1
            && self.reuses_dying_operand(op)
            && self.allocation().last_read(operands[0], k)
        {
            // The result takes the register its operand leaves.
            self.allocation().release(operands, k);
            self.allocation().assign(k, regs[0]);
            self.lane_op(op, regs[0], &regs[..1])?;
            if self.allocation().unused(k) {
                self.allocation().drop_value(k);
            }
            return Ok(());
        }
        // Otherwise the result never shares a register with an operand
        // (sequences may write it before reading every operand).
        let d = self.alloc(operands)?;
        self.allocation().assign(k, d);
        self.lane_op(op, d, &regs[..count])?;
        let ra = self.allocation();
        ra.release(operands, k);
        if ra.unused(k) {
            ra.drop_value(k);
        }
        Ok(())
    }
}

impl<T: Target + ?Sized> Driver for T {}

/// Per operation of `block`: the row it reads, where it is a [`LaneOp::Row`]
/// of a row the block does not write whose one reader (not the exit) is a
/// binary operation that takes it from the register file instead of a
/// register (`takes(reader, at)`: with it as operand `at`).
fn row_operands(block: &LaneBlock, takes: impl Fn(usize, usize) -> bool) -> Vec<Option<u16>> {
    let n = block.ops.len();
    let mut readers = vec![0u32; n];
    let mut reader = vec![usize::MAX; n];
    for (u, op) in block.ops.iter().enumerate() {
        for o in op.operands() {
            readers[o as usize] += 1;
            reader[o as usize] = u;
        }
    }
    for v in block.exit_values() {
        readers[v as usize] += 2;
    }
    let mut rows: Vec<Option<u16>> = (0..n)
        .map(|v| match block.ops[v] {
            LaneOp::Row(row) if readers[v] == 1 && !block.writes.contains(row) => {
                match block.ops[reader[v]] {
                    LaneOp::Binary(_, a, b) if a != b => {
                        let at = usize::from(b as usize == v);
                        takes(reader[v], at).then_some(row)
                    }
                    _ => None,
                }
            }
            _ => None,
        })
        .collect();
    // One operand from the register file: the other in a register.
    for op in &block.ops {
        if let LaneOp::Binary(_, a, b) = *op
            && rows[b as usize].is_some()
        {
            rows[a as usize] = None;
        }
    }
    rows
}

/// Which F32 products of a deferred region need no NaN test of their own
/// ([`Target::nan_test_later`]), and which canonicalisations stand for them.
struct NanTestsLater {
    /// Per operation of the region: an F32 product whose every use is an
    /// addition (or sign flip) or a fast canonicalisation of the region,
    /// the additions' uses likewise: a NaN in any lane of it makes the
    /// canonicalisation's operand NaN in that lane.
    tested_later: Vec<bool>,
    /// Per operation: a canonicalisation that some such product reaches.
    covers: Vec<bool>,
}

/// [`NanTestsLater`] of the first `region` operations of `ops`, where
/// `candidate(k)` says whether operation `k` may take its fast form.
fn nan_tests_later(
    ops: &[LaneOp],
    region: usize,
    candidate: impl Fn(usize) -> bool,
) -> NanTestsLater {
    let canonicalize = |k: usize| matches!(ops[k], LaneOp::Unary(UnOp::Canonicalize, _));
    let passes_nan = |k: usize| {
        matches!(
            ops[k],
            LaneOp::Binary(BinOp::FAdd, ..) | LaneOp::Unary(UnOp::FlipSign, _)
        )
    };
    // Backwards: every use of a value comes after it, so a value's uses are
    // all seen before the value itself.
    let mut reaches = vec![true; region];
    let mut used = vec![false; region];
    for u in (0..ops.len()).rev() {
        let carries = u < region
            && if canonicalize(u) {
                candidate(u)
            } else {
                passes_nan(u) && used[u] && reaches[u]
            };
        for o in ops[u].operands() {
            let o = o as usize;
            if o < region {
                used[o] = true;
                reaches[o] &= carries;
            }
        }
    }
    let tested_later: Vec<bool> = (0..region)
        .map(|k| {
            matches!(ops[k], LaneOp::Binary(BinOp::PicaMul, ..))
                && candidate(k)
                && used[k]
                && reaches[k]
        })
        .collect();
    // Forwards: the canonicalisations such a product reaches.
    let mut from_product = tested_later.clone();
    let mut covers = vec![false; region];
    for k in 0..region {
        if canonicalize(k) || passes_nan(k) {
            let reached = ops[k].operands().any(|o| from_product[o as usize]);
            from_product[k] = reached;
            covers[k] = reached && canonicalize(k);
        }
    }
    NanTestsLater {
        tested_later,
        covers,
    }
}

/// The bound of a bounded operand (zero or of magnitude within [2^-23,
/// 2^29): `Target::bounded_row`), as a power of two.
const BOUNDED_OPERAND_LOG2: u32 = 29;

/// The bound of a product of two bounded operands: at most 2^58.
const BOUNDED_PRODUCT_LOG2: u32 = 2 * BOUNDED_OPERAND_LOG2;

/// Per operation of the first `region` of `ops`: a fast float24
/// quantisation (`fast(k)`) whose operand is known below 2^63 (`known[k]`,
/// [`quantizations_in_range`]) and, wherever the region's bounded run runs,
/// zero or a multiple of 2^-62 (*on the grid*): then it is never in the
/// float24 subnormal band, and `f24::quantize_result` of it is its
/// truncated mantissa (a `-0` aside), with no flush (§9.29).
///
/// On the grid: a bounded product (`bounded[k]`: its operands zero or at
/// least 2^-23, so a nonzero product is at least 2^-46 and its 16-bit
/// truncation a multiple of 2^(-46-16)); a bounded row or its flush
/// (`row(k)`: zero or at least 2^-23 in magnitude, so a multiple of the
/// f32 ulp at 2^-23, 2^-46, whatever its bits; §9.33); a constant that is zero or a
/// finite multiple of 2^-62; a sum or difference of two values on the grid
/// (the exact sum is a multiple of 2^-62; below 2^-38 it is representable,
/// so exact, and above, its rounding is a multiple of its binade's ulp,
/// 2^-61 or more); a quantisation of a value on the grid (truncating a
/// multiple of 2^-62 whose exponent is e keeps a multiple of 2^(e-16) or
/// of 2^-62, whichever is coarser, both multiples of 2^-62).
fn on_the_grid(
    ops: &[LaneOp],
    region: usize,
    fast: impl Fn(usize) -> bool,
    bounded: &[bool],
    known: &[bool],
    row: impl Fn(LaneRef) -> bool,
) -> Vec<bool> {
    let mut grid = vec![false; region];
    let mut quantize = vec![false; region];
    for k in 0..region {
        let of = |v: LaneRef| grid[v as usize];
        grid[k] = match ops[k] {
            LaneOp::Const(bits) => {
                let c = f32::from_bits(bits);
                c.is_finite() && (f64::from(c) * 2f64.powi(62)).fract() == 0.0
            }
            LaneOp::Binary(BinOp::PicaMulF24, ..) => bounded[k],
            LaneOp::Row(_) | LaneOp::Unary(UnOp::F24Flush, _) => row(k as LaneRef),
            LaneOp::Binary(BinOp::FAdd | BinOp::FSub, a, b) => of(a) && of(b),
            LaneOp::Unary(UnOp::F24Quantize, a) if fast(k) && known[k] && of(a) => {
                quantize[k] = true;
                true
            }
            _ => false,
        };
    }
    quantize
}

/// Whether value `v` is a row [`Target::bounded_row`] names, or the input
/// flush of one (`flush_input` of zero or of a value at least 2^-62 in
/// magnitude is that value or +0: still bounded).
fn bounded_operand<T: Target + ?Sized>(target: &T, ops: &[LaneOp], v: LaneRef) -> bool {
    match ops[v as usize] {
        LaneOp::Row(row) => target.bounded_row(row),
        LaneOp::Unary(UnOp::F24Flush, a) => {
            matches!(ops[a as usize], LaneOp::Row(row) if target.bounded_row(row))
        }
        _ => false,
    }
}

/// Per operation of the first `region` of `ops`: a fast float24
/// quantisation (`fast(k)`) whose bounds the region's check should test
/// (`Target::check_operand_bounds`): one read by at least two fast
/// products whose other operand is a bounded row (`row(v)`). The test costs
/// about six instructions per lane vector; each product it makes bounded
/// saves four (its flush compare, flush mask, magnitude and record).
fn checked_operands(
    ops: &[LaneOp],
    region: usize,
    fast: impl Fn(usize) -> bool,
    row: impl Fn(LaneRef) -> bool,
) -> Vec<bool> {
    const READERS_THAT_PAY: u32 = 2;
    let mut readers = vec![0u32; region];
    for (u, op) in ops[..region].iter().enumerate() {
        if let LaneOp::Binary(BinOp::PicaMulF24, a, b) = *op
            && a != b
            && fast(u)
        {
            for (v, other) in [(a, b), (b, a)] {
                if row(other) {
                    readers[v as usize] += 1;
                }
            }
        }
    }
    (0..region)
        .map(|k| {
            matches!(
                ops[k],
                LaneOp::Unary(UnOp::F24Quantize, _) | LaneOp::Binary(BinOp::PicaMulF24, ..)
            ) && fast(k)
                && readers[k] >= READERS_THAT_PAY
        })
        .collect()
}

/// Per operation of `block`: whether no reader can tell its zeros apart
/// (-0 from +0). A float24 quantisation maps both to +0; an addition or
/// subtraction with another operand gives the same result for either zero,
/// or a zero of either sign when the other operand is a zero too (x ± 0 = x
/// for x not zero, and NaN or infinity stays itself), so its result's
/// readers must not tell zeros apart either. Any other reader (a store, a
/// product, `max`/`min`, a comparison, an exit value) may.
fn zero_sign_unseen(block: &LaneBlock) -> Vec<bool> {
    let mut free = vec![true; block.ops.len()];
    for v in block.exit_values() {
        free[v as usize] = false;
    }
    // Readers come after what they read: a reader's own answer is final
    // when it is visited.
    for k in (0..block.ops.len()).rev() {
        let passes = match block.ops[k] {
            LaneOp::Unary(UnOp::F24Quantize, _) => true,
            LaneOp::Binary(BinOp::FAdd | BinOp::FSub, ..) => free[k],
            _ => false,
        };
        if !passes {
            for o in block.ops[k].operands() {
                free[o as usize] = false;
            }
        }
    }
    free
}

/// Per operation of the first `region` of `ops`: a float24 quantisation
/// that takes its fast form (`fast(k)`) whose operand is at most 2^63 in
/// magnitude wherever the region's check passes (so it need not be
/// recorded: [`Target::range_known`]), where every recorded value is below
/// 2^`recorded` (`recorded` < 63).
///
/// Each value gets a bound 2^`level` on its magnitude, valid where the check
/// passes: a recorded fast form (a product, or a quantisation that is not
/// known) is below 2^`recorded`, a product or row with a level of its own
/// (`fixed(k)`: a bounded product, a bounded row or its flush in the run
/// with bounded products) below that level; a finite constant is below
/// 2^(e + 1) for its exponent e; a sum or difference of two bounded values is at most the sum of
/// their bounds, 2^(larger level + 1) (IEEE rounding is monotonic and the
/// bound is a power of two, so the rounded sum stays within it); a
/// quantisation truncates toward zero, keeping its operand's bound. A
/// quantisation of a value bounded by 2^63 (a `dp4`'s final sum of four
/// products below 2^61) is then known. Other values have no bound.
fn quantizations_in_range(
    ops: &[LaneOp],
    region: usize,
    fast: impl Fn(usize) -> bool,
    fixed: impl Fn(usize) -> Option<u32>,
    recorded: u32,
) -> Vec<bool> {
    const KNOWN_BELOW: u32 = 63;
    debug_assert!(recorded < KNOWN_BELOW);
    let mut level: Vec<Option<u32>> = vec![None; region];
    let mut known = vec![false; region];
    for k in 0..region {
        let of = |v: LaneRef| level[v as usize];
        level[k] = match ops[k] {
            LaneOp::Const(bits) => {
                let exponent = (bits >> 23) & 0xFF;
                match bits & 0x7FFF_FFFF {
                    0 => Some(0),
                    // |c| < 2^(e - 126) for a biased exponent e (subnormals:
                    // below 2^-126); no bound for inf, NaN or |c| >= 2^62.
                    _ if exponent < 127 => Some(0),
                    _ if exponent - 126 <= recorded => Some(exponent - 126),
                    _ => None,
                }
            }
            LaneOp::Binary(BinOp::PicaMulF24, ..) if fast(k) => {
                Some(fixed(k).map_or(recorded, |l| l.min(recorded)))
            }
            LaneOp::Row(_) | LaneOp::Unary(UnOp::F24Flush, _) => fixed(k),
            LaneOp::Binary(BinOp::FAdd | BinOp::FSub, a, b) => match (of(a), of(b)) {
                (Some(x), Some(y)) => Some(x.max(y) + 1),
                _ => None,
            },
            LaneOp::Unary(UnOp::F24Quantize, a) if fast(k) => match of(a) {
                Some(l) if l <= KNOWN_BELOW => {
                    known[k] = true;
                    Some(l)
                }
                _ => Some(recorded),
            },
            _ => None,
        };
    }
    known
}

/// A wide shader's code under construction: where the next function starts
/// and a [`Target`](super::Target) that emits it.
pub(crate) trait Module {
    /// One function being emitted.
    type Function<'m>: Driver
    where
        Self: 'm;

    /// Byte offset of the next function.
    fn offset(&self) -> usize;

    /// A function emitted at [`Module::offset`].
    fn function(&mut self) -> Self::Function<'_>;
}

/// The functions every wide shader has.
pub(crate) struct Functions {
    /// Offset of the F24 input conversion, when there is one.
    pub prologue: Option<usize>,
    /// Offset of each block's function (`None`: the lowering gave up on it).
    pub entries: Vec<Option<usize>>,
    /// Offset of each block's masked function, whose row stores change only
    /// the lanes of the execution mask (empty where the backend has no
    /// masked stores or no decision of the program can differ between
    /// lanes; the block's own function where it writes no row;
    /// `None`: it did not lower).
    pub masked: Vec<Option<usize>>,
}

/// Emits the input conversion (when `convert_inputs` asks for one) and one
/// function per block; returns them and `kernel` if every block it runs
/// lowered on its own (the same lowering again cannot fail half-way and leave
/// a cold path's label undefined).
pub(crate) fn lower_blocks<'p, M: Module>(
    m: &mut M,
    blocks: &[LaneBlock],
    convert_inputs: u16,
    kernel: Option<&'p KernelPlan>,
) -> Result<(Functions, Option<&'p KernelPlan>), JitError> {
    let prologue = (convert_inputs != 0).then(|| {
        let at = m.offset();
        m.function().prologue(convert_inputs);
        at
    });
    let mut entries = Vec::with_capacity(blocks.len());
    for block in blocks {
        let at = m.offset();
        // `None`: nothing calls this; the driver hands the block over (the
        // half-emitted code stays unreachable).
        entries.push(optional(m.function().block(block))?.map(|()| at));
    }
    // The masked variants, for the lanes of a group that took one path
    // while others wait at another (a block that stores nothing needs none);
    // none at all where no decision can differ between lanes.
    let mut masked = Vec::new();
    let lanes_may_diverge = blocks
        .iter()
        .any(|b| b.exit_cond.is_some_and(|c| !b.is_uniform(c)));
    for (block, entry) in blocks.iter().zip(&entries) {
        if !lanes_may_diverge {
            break;
        }
        let stores = block.ops.iter().any(|op| matches!(op, LaneOp::Store(..)));
        if entry.is_none() || !stores {
            masked.push(*entry);
            continue;
        }
        let at = m.offset();
        let mut f = m.function();
        if !f.mask_stores() {
            masked.clear();
            break;
        }
        masked.push(optional(f.block(block))?.map(|()| at));
    }
    let kernel = kernel.filter(|plan| {
        plan.steps
            .iter()
            .all(|s| s.block().is_none_or(|k| entries[k].is_some()))
    });
    Ok((
        Functions {
            prologue,
            entries,
            masked,
        },
        kernel,
    ))
}

/// `Ok(None)` where the lowering gave up ([`JitError::Lowering`]: the driver
/// runs the blocks one by one instead), other errors as they are.
pub(crate) fn optional<T>(result: Result<T, JitError>) -> Result<Option<T>, JitError> {
    match result {
        Ok(value) => Ok(Some(value)),
        Err(JitError::Lowering(_)) => Ok(None),
        Err(e) => Err(e),
    }
}
