//! The x86-64 wide lowering: each block of lane operations
//! ([`crate::jit::wide::lanes`]) becomes one function
//! `(register file, uniforms) -> exit mask` that runs the block for every
//! lane at once (`xmm` for 4 lanes, `ymm` for 8, `zmm` for 16).
//!
//! The driver and the register allocator are the wide lowerings' shared ones
//! ([`crate::jit::wide::codegen`]); this module is the x86-64 [`Target`].
//! Values live in registers 1–11; registers 0 (the select mask) and 13–15
//! are scratch inside one operation. Every IR primitive is lowered by the
//! shared x86-64 emitter ([`super::emit`]), the single-vertex lowering's too;
//! this module lowers what is the wide engine's alone: rows, uniforms,
//! gathers, stores.

mod isa;
mod kernel;

use crate::jit::wide::codegen::KernelShape;

use super::emit::{S1, S2, S3, U, V};
use crate::arith::f24;
use crate::ir::{BinOp, UnOp};
use crate::jit::JitError;
use crate::jit::wide::codegen::{
    self, Allocation, KernelSource, Kernels, Module, Target, WideCode,
};
use crate::jit::wide::lanes::{LaneBlock, LaneOp};
use crate::jit::wide::layout;
use crate::jit::wide::plan::KernelPlan;
use crate::jit::wide::width::Width;
use crate::state::Uniforms;
use dynasmrt::{DynamicLabel, DynasmApi, DynasmLabelApi, dynasm};
use isa::WideAsm;
use std::mem::offset_of;

/// Compiles `blocks` for `width`; `convert_inputs` (F24) is the mask of the
/// inputs the prologue converts.
pub(crate) fn compile(
    blocks: &[LaneBlock],
    convert_inputs: u16,
    width: Width,
    kernel: Option<&KernelPlan>,
) -> Result<WideCode, JitError> {
    // F24 input rows every block reads only flushed are converted flushed,
    // and their flushes become plain reads (`codegen::flushed`).
    let flushed_inputs = codegen::flushed::flushed_only_rows(blocks, kernel);
    // Of those, the rows no float24 product reads need no lower-bound
    // record in their fast conversion (§9.27).
    let no_lower_bound = flushed_inputs & !codegen::flushed::product_rows(blocks, kernel);
    let rewritten;
    let blocks = if flushed_inputs == 0 {
        blocks
    } else {
        rewritten = codegen::flushed::skip_flushes(blocks, flushed_inputs);
        &rewritten[..]
    };
    let mut a = WideAsm::new(width);
    let mxcsr = super::fp_env::Constants::new(&mut a.ops);
    // F32 products may defer their NaN tests where no float24 fast form
    // shares the region's accumulator (a shader's blocks are of one
    // precision: F32 ones have none).
    let f24_forms = blocks.iter().flat_map(|b| &b.ops).any(|op| {
        matches!(
            op,
            LaneOp::Binary(BinOp::PicaMulF24, ..) | LaneOp::Unary(UnOp::F24Quantize, _)
        )
    });
    let mut code = Code {
        a,
        mxcsr,
        defer_products: !f24_forms,
        flushed_inputs,
        no_lower_bound,
    };
    let (functions, kernel) = codegen::lower_blocks(&mut code, blocks, convert_inputs, kernel)?;
    // The kernel for `shape`, and where its one-group loop is small enough,
    // the one shading two groups per pass; `None` where one did not lower
    // (the driver runs the blocks one by one instead).
    let mut lower_kernels = |plan: &KernelPlan, shape| {
        let source = KernelSource {
            plan,
            blocks,
            convert_inputs,
        };
        let mut lower = |copies| {
            let at = code.offset();
            let lowered = code.function().kernel(source, shape, copies);
            Ok::<_, JitError>(codegen::optional(lowered)?.map(|loop_bytes| (at, loop_bytes)))
        };
        let one = lower(1)?;
        let pair = match one {
            Some((_, bytes)) if bytes <= kernel::MAX_LOOP_BYTES_TO_INTERLEAVE => lower(2)?,
            _ => None,
        };
        Ok::<_, JitError>((one.map(|(at, _)| at), pair.map(|(at, _)| at)))
    };
    let ((states_kernel, pair_kernel), (vertex_kernel, vertex_pair_kernel)) = match kernel {
        Some(plan) => {
            // The vertex layout starts every lane from one state the caller
            // converted already.
            let reset = plan.for_vertices();
            (
                lower_kernels(plan, KernelShape::States)?,
                lower_kernels(&reset, KernelShape::Vertices)?,
            )
        }
        None => ((None, None), (None, None)),
    };
    let Code { mut a, mxcsr, .. } = code;
    let assembled = a.v().finish_with_pool(|ops| mxcsr.emit(ops));
    let kernels = Kernels {
        states: states_kernel,
        states_pair: pair_kernel,
        vertices: vertex_kernel,
        vertices_pair: vertex_pair_kernel,
    };
    WideCode::new(assembled, functions, kernels)
}

/// One generated function.
struct Function<'a> {
    a: &'a mut WideAsm,
    lanes: usize,
    mxcsr: super::fp_env::Constants,
    allocation: Allocation,
    gathered: Vec<bool>,
    /// Batch kernel: stores keep the new value only in the lanes whose
    /// saved condition or lane mask (in this row: `layout::PREDICATE` or a
    /// `layout::MASKS` row) is this.
    predicate: Option<(usize, bool)>,
    /// Batch kernel: which of the groups of a pass `rdi` (its register
    /// file) and `r8`/`r11` (its records) point at now.
    copy: GroupAt,
    /// Inside a deferred region ([`Target::begin_deferred`]): the gathers
    /// done when it started (its exact run gathers again) and the join.
    deferred: Option<(Vec<bool>, DynamicLabel)>,
    /// Bytes of exact runs of deferred regions emitted (cold code inside a
    /// kernel's loop, jumped over).
    pub(super) cold_bytes: usize,
    /// Where the current exact run started.
    cold_start: usize,
    /// The fast forms are on (from [`Target::begin_deferred`] to
    /// [`Target::check_deferred`]).
    deferring: bool,
    /// The deferred region is one of input loads (its check reads
    /// [`LOADS_MIN`] too).
    deferred_loads: bool,
    /// F32 `PicaMul`s have a fast form in deferred regions (their NaN test
    /// accumulated in [`RANGE`]); never beside float24 fast forms, whose
    /// range check reads `RANGE` differently.
    defer_products: bool,
    /// The deferred region holds fast F32 products: its check is for NaN
    /// lanes of [`RANGE`].
    deferred_products: bool,
    /// The next fast F32 product's NaN test is a later canonicalisation's
    /// ([`Target::nan_test_later`]).
    nan_later: bool,
    /// The next fast float24 quantisation's operand is within range
    /// wherever the region's check passes ([`Target::range_known`]): it is
    /// not recorded in [`RANGE`].
    range_known: bool,
    /// F24: bit `r`: row `CONVERTED + r` holds its input's
    /// `f24::flush_input(f24::load(x))` (`codegen::flushed`), so an exact
    /// conversion flushes it.
    flushed_inputs: u64,
    /// F24: bit `r`: row `CONVERTED + r` is one of
    /// [`Self::flushed_inputs`] that no float24 product reads
    /// (`codegen::flushed::product_rows`): its fast conversion records no
    /// lower bound in [`LOADS_MIN`] (§9.27), and it is no bounded row.
    no_lower_bound: u64,
    /// F24, the vertex kernel's loop: bit `r`: row `CONVERTED + r` is read
    /// by no step of the loop, so its fused conversion neither converts
    /// nor stores it (§9.34; 0 outside the loop).
    unread_converted: u64,
    /// The current deferred region of loads has written [`LOADS_MIN`]
    /// (set where first written: a region whose loads all skip the record
    /// has no float24 subnormal test).
    loads_min_written: bool,
    /// Rows [`Target::bounded_row`] names: hoisted rows checked once per
    /// call, converted input rows checked per group (§9.20).
    bounded_rows: std::collections::BTreeSet<u16>,
    /// [`Target::check_hoisted_bounds`] wrote the call's hoisted flag
    /// (`layout::HOISTED_UNBOUNDED`): a group's flag can be made.
    hoisted_checked: bool,
    /// The deferred region of loads under way writes the group's
    /// `layout::OPERANDS_UNBOUNDED` ([`Function::flag_input_bounds`]).
    flag_loads: bool,
    /// A kernel's input conversion writes the group's flag.
    inputs_flagged: bool,
    /// The next fast float24 product is a bounded one
    /// ([`Target::bounded_product`]).
    bounded_next: Option<bool>,
    /// The next fast float24 quantisation's operand is zero or a multiple
    /// of 2^-62 below 2^63 ([`Target::grid_quantization`]).
    grid_next: Option<bool>,
    /// The current deferred region's fast run without bounded products,
    /// for groups whose operands are not bounded
    /// ([`Target::require_bounded_operands`]).
    bounded_exact: Option<DynamicLabel>,
    /// The current deferred region's fast run has written [`RANGE`] (reset
    /// where first written, [`Function::record_range`]); a region that
    /// records nothing passes its check in every group, so it has none.
    range_written: bool,
    /// The current deferred region's fast run without bounded products
    /// is under way or done ([`Target::check_bounded_run`]): cold code.
    unbounded_run: bool,
    /// Where the exact run of a region with bounded products starts, for
    /// its failed checks.
    exact_entry: Option<DynamicLabel>,
    /// The next fast float24 quantisation records its operand bounds
    /// ([`Target::check_operand_bounds`]).
    check_bounds_next: bool,
    /// The current deferred region's bounded run checks operand bounds: a
    /// group failing its check runs the fast run without bounded products
    /// next, not the exact run.
    checks_operands: bool,
}

/// Float24 product operands are bounded (§9.20) where zero or of magnitude
/// below 2^[`OPERAND_BELOW_LOG2`] and at least 2^-[`OPERAND_FROM_LOG2`]: a
/// product of two is then zero or within [2^-46, 2^58], and its 16-bit
/// truncation a multiple of 2^-62, as are sums of such (§9.29).
const OPERAND_BELOW_LOG2: u32 = 29;
/// The bits of 2^[`OPERAND_BELOW_LOG2`].
const OPERAND_BELOW_BITS: u32 = (127 + OPERAND_BELOW_LOG2) << 23;
/// 2^-23, the smallest magnitude of a bounded nonzero operand (§9.29; it
/// was 2^-31 before: products of two were then only at least 2^-62, and
/// their sums could cancel into the float24 subnormal band).
const OPERAND_FROM_LOG2: u32 = 23;
/// The bits of 2^-[`OPERAND_FROM_LOG2`].
const OPERAND_FROM_BITS: u32 = (127 - OPERAND_FROM_LOG2) << 23;
/// A fused input conversion's [`LOADS_MIN`] (the smallest `|x| - 2^-78`)
/// shifted right by [`LOADS_MIN_SHIFT`] is at least this where every
/// loaded `x` is zero, below 2^-78 (loaded as +0) or at least 2^-23:
/// `2^-23 - 2^-78` = `55 << 23` in bits.
const LOADS_MIN_BOUNDED: u32 = 55;
/// See [`LOADS_MIN_BOUNDED`].
const LOADS_MIN_SHIFT: i8 = 23;
const _: () =
    assert!(OPERAND_FROM_BITS == SUBNORMAL_QUANTUM_BITS + (LOADS_MIN_BOUNDED << LOADS_MIN_SHIFT));

/// The register that accumulates a deferred region's range check: per
/// lane, the largest magnitude (bits of `|x|` as a signed integer) of the
/// values its fast float24 quantisations saw. Neither a value register nor
/// scratch of one operation.
const RANGE: u8 = 12;

/// The check of a float24 deferred region passes where every recorded
/// magnitude is below 2^[`RECORDED_BELOW_LOG2`] (not only below 2^64, where
/// the fast forms stop being exact): then a sum of up to four recorded
/// values is at most 2^63, and its quantisation need not be recorded
/// ([`Target::range_known`]). A lane at or above 2^61 (never seen in real
/// vertex data) takes the exact run, which is exact for any value.
const RECORDED_BELOW_LOG2: u32 = 61;

/// The bits of 2^[`RECORDED_BELOW_LOG2`].
const RECORDED_BELOW_BITS: u32 = (127 + RECORDED_BELOW_LOG2) << 23;
const _: () = assert!(RECORDED_BELOW_BITS < f24::OVERFLOW_BITS);

/// A deferred region of input loads ([`Target::begin_deferred_loads`]):
/// per lane, the smallest `|x| - 2^-78` (bits, unsigned) of the values it
/// loaded; below `2^-62 - 2^-78` some lane was a float24 subnormal. The
/// loads run before any block, when no value register holds a value (they
/// use the first).
const LOADS_MIN: u8 = 11;

/// The bits of the float24 subnormal quantum 2^-78 (the smallest magnitude
/// a load keeps).
const SUBNORMAL_QUANTUM_BITS: u32 = f24::SUBNORMAL_QUANTUM.to_bits();

/// Where the batch kernel's pointers are: at which of the groups it shades
/// per pass.
#[derive(Clone, Copy, Debug, Default)]
struct GroupAt {
    /// The group `rdi` points at (`layout::file_bytes` apart).
    file: usize,
    /// The group `r8` and `r11` point at (`records` bytes apart).
    records: usize,
    /// Bytes between the records of one group and the next.
    stride: i32,
}

/// The shader's code under construction.
struct Code {
    a: WideAsm,
    mxcsr: super::fp_env::Constants,
    /// [`Function::defer_products`] of its functions.
    defer_products: bool,
    /// [`Function::flushed_inputs`] of its functions.
    flushed_inputs: u64,
    /// [`Function::no_lower_bound`] of its functions.
    no_lower_bound: u64,
}

impl Module for Code {
    type Function<'m> = Function<'m>;

    fn offset(&self) -> usize {
        self.a.ops.offset().0
    }

    fn function(&mut self) -> Function<'_> {
        let mut function = Function::new(&mut self.a, self.mxcsr);
        function.defer_products = self.defer_products;
        function.flushed_inputs = self.flushed_inputs;
        function.no_lower_bound = self.no_lower_bound;
        function
    }
}

impl Target for Function<'_> {
    const VALUE_REGS: &'static [u8] = &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11];
    const LAZY_REMATERIALISATION: bool = true;

    fn allocation(&mut self) -> &mut Allocation {
        &mut self.allocation
    }

    fn load_row(&mut self, reg: u8, row: usize) {
        let off = self.row(row);
        self.a.load(reg, off);
    }

    fn store_row(&mut self, row: usize, reg: u8) {
        let off = self.row(row);
        self.a.store(off, reg);
    }

    fn store_value(&mut self, row: usize, reg: u8) {
        let off = self.row(row);
        match self.predicate {
            None => self.a.store(off, reg),
            // Only the lanes whose saved condition is `when` take the new
            // value.
            Some((mask_row, when)) => {
                let mask = self.row(mask_row);
                self.a.load(S1, mask);
                self.a.load(S2, off);
                if when {
                    self.a.select(S2, S2, reg, S1);
                    self.a.store(off, S2);
                } else {
                    self.a.select(S3, reg, S2, S1);
                    self.a.store(off, S3);
                }
            }
        }
    }

    fn mask_stores(&mut self) -> bool {
        self.predicate = Some((layout::PREDICATE, true));
        true
    }

    fn lane_op(&mut self, op: LaneOp, d: u8, regs: &[u8]) -> Result<(), JitError> {
        self.emit(op, d, regs)
    }

    /// AVX2: products (in either place: their fast forms commute, a NaN
    /// lane taking the exact run; the checked forms load the row into a
    /// scratch register in its place), and the second operand of the
    /// float operations that are one instruction.
    fn reads_row_operand(&self, op: LaneOp, at: usize) -> bool {
        self.a.width == Width::Avx2
            && match op {
                LaneOp::Binary(BinOp::PicaMul | BinOp::PicaMulF24, ..) => true,
                LaneOp::Binary(
                    BinOp::FAdd | BinOp::FSub | BinOp::FMul | BinOp::PicaMax | BinOp::PicaMin,
                    ..,
                ) => at == 1,
                _ => false,
            }
    }

    fn lane_op_row(
        &mut self,
        op: LaneOp,
        d: u8,
        other: u8,
        at: usize,
        row: u16,
    ) -> Result<(), JitError> {
        let off = self.row(row as usize);
        let LaneOp::Binary(b, ..) = op else {
            return Err(JitError::Lowering(
                "a row operand of a non-binary operation".into(),
            ));
        };
        let mul =
            |a: &mut WideAsm| dynasm!(a.ops ; .arch x64 ; vmulps Ry(d), Ry(other), [rdi + off]);
        match b {
            BinOp::PicaMul | BinOp::PicaMulF24 if self.deferring => {
                mul(self.a);
                if b == BinOp::PicaMulF24 {
                    self.quantize_product(d);
                } else {
                    if !self.nan_later {
                        self.record_range();
                        self.a.v().v3(V::Cmpps(3), RANGE, RANGE, d);
                    }
                    self.deferred_products = true;
                }
            }
            // The checked forms, the row in a register their sequences
            // (and their exact runs out of line) leave alone: `S3` beside
            // the F32 product; `RANGE` beside the float24 one, which is not
            // in a deferred region's fast run here (no wild operation takes
            // a row operand).
            BinOp::PicaMul | BinOp::PicaMulF24 => {
                let scratch = if b == BinOp::PicaMul { S3 } else { RANGE };
                self.a.load(scratch, off);
                let (x, y) = if at == 0 {
                    (scratch, other)
                } else {
                    (other, scratch)
                };
                self.a.v().binary(b, d, x, y);
            }
            _ if at == 1 => {
                let o = &mut self.a.ops;
                match b {
                    BinOp::FAdd => dynasm!(o ; .arch x64 ; vaddps Ry(d), Ry(other), [rdi + off]),
                    BinOp::FSub => dynasm!(o ; .arch x64 ; vsubps Ry(d), Ry(other), [rdi + off]),
                    BinOp::FMul => mul(self.a),
                    BinOp::PicaMax => dynasm!(o ; .arch x64 ; vmaxps Ry(d), Ry(other), [rdi + off]),
                    BinOp::PicaMin => dynasm!(o ; .arch x64 ; vminps Ry(d), Ry(other), [rdi + off]),
                    _ => return Err(JitError::Lowering(format!("{b:?} of a row operand"))),
                }
            }
            _ => return Err(JitError::Lowering(format!("{b:?} of a row operand"))),
        }
        Ok(())
    }

    /// AVX2's canonicalisations: the checked form's compare and select
    /// read the operand before writing the result, and the fast form is a
    /// NaN test and a copy, which then copies nothing.
    fn reuses_dying_operand(&self, op: LaneOp) -> bool {
        self.a.width == Width::Avx2 && matches!(op, LaneOp::Unary(UnOp::Canonicalize, _))
    }

    fn f24_load_in_place(&mut self, reg: u8) {
        self.a.v().f24_load(reg);
    }

    fn flush_converted_in_place(&mut self, reg: u8, row: usize) {
        if self.flushed_inputs >> row & 1 != 0 {
            self.a.v().unary(UnOp::F24Flush, reg, reg);
        }
    }

    fn start_block(&mut self, gathers: usize) {
        self.a.forget_masks();
        self.gathered = vec![false; gathers];
    }

    /// Runs with the default floating-point environment whatever the host set.
    fn enter(&mut self) {
        let vex = self.a.width != Width::Sse41;
        super::fp_env::enter(&mut self.a.ops, self.mxcsr, vex, 7, layout::SAVED_FP);
    }

    /// Restores the host's floating-point environment and returns `eax`.
    fn leave(&mut self) {
        super::fp_env::leave(&mut self.a.ops, 7, layout::SAVED_FP);
        self.a.leave();
        dynasm!(self.a.ops ; .arch x64 ; ret);
        self.a.v().emit_slow_paths();
    }

    fn exit_mask(&mut self, reg: u8) {
        self.a.movmsk(reg);
    }

    fn no_exit_mask(&mut self) {
        dynasm!(self.a.ops ; .arch x64 ; xor eax, eax);
    }

    fn store_lane0(&mut self, offset: i32, reg: u8) {
        self.a.store_lane0(offset, reg);
    }

    /// The float24 product and quantisation: their range checks (the only
    /// test of their fast paths) can wait for the region's end. Not with
    /// AVX-512 (its compares write opmasks; no deferred forms there).
    fn defers_check(&self, op: LaneOp) -> bool {
        self.a.width != Width::Avx512
            && match op {
                LaneOp::Binary(BinOp::PicaMulF24, ..) | LaneOp::Unary(UnOp::F24Quantize, _) => true,
                LaneOp::Binary(BinOp::PicaMul, ..) | LaneOp::Unary(UnOp::Canonicalize, _) => {
                    self.defer_products
                }
                _ => false,
            }
    }

    fn begin_deferred(&mut self) -> bool {
        if self.a.width == Width::Avx512 {
            return false;
        }
        let join = self.a.ops.new_dynamic_label();
        self.deferred = Some((self.gathered.clone(), join));
        self.deferring = true;
        // RANGE is reset where the fast run first records (none may).
        self.range_written = false;
        true
    }

    /// Every value the fast forms quantised was below 2^64 in magnitude (not
    /// infinite, not NaN): the fast results are exact; otherwise the exact
    /// run follows.
    fn check_deferred(&mut self) {
        if !self.fast_run_check() {
            return;
        }
        if !self.unbounded_run {
            self.cold_start = self.a.ops.offset().0;
        }
        self.start_exact_run();
    }

    /// The fast run of a region with bounded products passed its check
    /// (to the join) or not (to the exact run); a group whose operands are
    /// not bounded starts here, at the fast run without bounded products
    /// (cold code, as the exact run).
    fn check_bounded_run(&mut self) {
        if !self.fast_run_check() {
            return;
        }
        let exact = self.a.ops.new_dynamic_label();
        // A group failing the check of a run that checked operand bounds
        // (most likely a computed operand out of them) falls through to
        // the run without bounded products, which needs no such bound.
        if self.range_written && !std::mem::take(&mut self.checks_operands) {
            dynasm!(self.a.ops ; .arch x64 ; jmp =>exact);
        }
        self.exact_entry = Some(exact);
        self.cold_start = self.a.ops.offset().0;
        if let Some(unbounded) = self.bounded_exact.take() {
            self.a.bind(unbounded);
            self.a.forget_masks();
        }
        self.unbounded_run = true;
        self.range_written = false;
        self.nan_later = false;
        self.range_known = false;
        self.bounded_next = None;
        self.grid_next = None;
    }

    fn defer_next(&mut self, fast: bool) {
        if self.deferred.is_some() {
            self.deferring = fast;
        }
    }

    fn nan_test_later(&mut self, later: bool) {
        self.nan_later = later && self.deferring;
    }

    fn recorded_below_log2(&self) -> Option<u32> {
        (self.a.width != Width::Avx512).then_some(RECORDED_BELOW_LOG2)
    }

    fn range_known(&mut self, known: bool) {
        self.range_known = known && self.deferring;
    }

    fn begin_deferred_loads(&mut self) -> bool {
        if self.a.width == Width::Avx512 {
            return false;
        }
        let join = self.a.ops.new_dynamic_label();
        self.deferred = Some((self.gathered.clone(), join));
        self.deferred_loads = true;
        // RANGE and LOADS_MIN are written where the fast run first
        // records (`Function::load_deferred`), not reset here: the fast
        // run of loads is straight-line code (else
        // `Function::reset_load_records` resets them first).
        self.range_written = false;
        self.loads_min_written = false;
        true
    }

    fn f24_load_deferred(&mut self, reg: u8) {
        self.load_deferred(reg, true);
    }

    /// A row stored flushed needs no lower-bound record unless it may be a
    /// bounded product operand: one of a fused conversion that flags its
    /// bounds, not of [`Function::no_lower_bound`] (§9.27).
    fn f24_load_deferred_row(&mut self, reg: u8, row: usize) {
        let flushed = self.flushed_inputs >> row & 1 != 0;
        let bounded = self.flag_loads && self.no_lower_bound >> row & 1 == 0;
        self.load_deferred(reg, !flushed || bounded);
    }

    fn bounded_row(&self, row: u16) -> bool {
        self.inputs_flagged && self.bounded_rows.contains(&row)
    }

    /// Per call: each lane of each row is zero or within [2^-23, 2^29)
    /// in magnitude, else the call's `layout::HOISTED_UNBOUNDED` is not 0.
    /// Between the hoisting's preludes no value is live: registers 1 and 2
    /// are free.
    fn check_hoisted_bounds(&mut self, rows: &[u16]) {
        if self.a.width != Width::Avx2 {
            return;
        }
        // The largest |x| and the smallest |x| - 1 (unsigned: a zero wraps
        // to the top, so it never fails the lower bound).
        const MAX: u8 = 1;
        const MIN: u8 = 2;
        let mut v = self.a.v();
        v.constant(MAX, 0);
        v.constant(MIN, u32::MAX);
        for &row in rows {
            let off = self.row(row as usize);
            self.a.load(S2, off);
            self.a.v().v3c(V::Andps, S2, S2, 0x7FFF_FFFF);
            self.a.pmaxsd_into(MAX, S2);
            self.a.v().v3c(V::Psubd, S2, S2, 1);
            self.a.pminud_into(MIN, S2);
        }
        // Some lane at or above 2^29, or neither zero nor at least 2^-23
        // (`min(MIN, 2^-23 - 1)` is not `2^-23 - 1`).
        const BAD: u8 = S1;
        let mut v = self.a.v();
        v.v3c(V::Pcmpgtd, BAD, MAX, OPERAND_BELOW_BITS - 1);
        v.constant(S3, OPERAND_FROM_BITS - 1);
        self.a.pminud_into(S3, MIN);
        let mut v = self.a.v();
        v.v3c(V::Pcmpeqd, S3, S3, OPERAND_FROM_BITS - 1);
        v.v3c(V::Xorps, S3, S3, u32::MAX);
        v.v3(V::Orps, BAD, BAD, S3);
        self.a.movmsk(BAD);
        let flag = self.first_file_header(layout::HOISTED_UNBOUNDED);
        dynasm!(self.a.ops ; .arch x64 ; mov DWORD [rdi + flag], eax);
        self.bounded_rows.extend(rows);
        self.hoisted_checked = true;
    }

    /// A group whose flag is not 0 runs the region's fast run without
    /// bounded products ([`Target::check_bounded_run`] binds the label).
    fn require_bounded_operands(&mut self) {
        let exact = self.a.ops.new_dynamic_label();
        dynasm!(self.a.ops
            ; .arch x64
            ; cmp DWORD [rdi + layout::OPERANDS_UNBOUNDED], 0
            ; jne =>exact
        );
        self.bounded_exact = Some(exact);
    }

    fn bounded_product(&mut self, bounded: Option<bool>) {
        self.bounded_next = bounded.filter(|_| self.deferring);
    }

    fn check_operand_bounds(&mut self, checked: bool) {
        self.check_bounds_next = checked && self.deferring && self.bounded_exact.is_some();
        self.checks_operands |= self.check_bounds_next;
    }

    fn grid_quantization(&mut self, grid: Option<bool>) {
        self.grid_next = grid.filter(|_| self.deferring);
    }

    fn join_deferred(&mut self) {
        self.flag_loads = false;
        self.unbounded_run = false;
        if let Some((_, join)) = self.deferred.take() {
            self.cold_bytes += self.a.ops.offset().0 - self.cold_start;
            self.a.bind(join);
            self.a.forget_masks();
        }
    }
}

impl<'a> Function<'a> {
    /// The quantisation's fast path where no lane is at or above 2^64 (the
    /// check sees it), and, with `lower`, no lane a float24 subnormal (the
    /// check sees that too: [`LOADS_MIN`]): the truncated mantissa, +0
    /// below 2^-62 (magnitudes below 2^-78 load as +0 too). Without
    /// `lower` the result is `f24::quantize_result`, which is
    /// `flush_input ∘ load` (§9.27): exact for a row stored flushed.
    /// The region's first record writes [`RANGE`] (and [`LOADS_MIN`])
    /// itself instead of folding into a reset register.
    fn load_deferred(&mut self, reg: u8, lower: bool) {
        let first = !std::mem::replace(&mut self.range_written, true);
        let abs = if first { RANGE } else { S2 };
        let mut v = self.a.v();
        v.v3c(V::Andps, abs, reg, 0x7FFF_FFFF);
        v.v3c(V::Pcmpgtd, S3, abs, f24::MIN_NORMAL_BITS - 1);
        v.v3(V::Andps, reg, reg, S3);
        v.v3c(V::Andps, reg, reg, f24::MANTISSA_MASK);
        if !first {
            self.a.pmaxsd_into(RANGE, S2);
        }
        if !lower {
            return;
        }
        if std::mem::replace(&mut self.loads_min_written, true) {
            self.a.v().v3c(V::Psubd, S2, abs, SUBNORMAL_QUANTUM_BITS);
            self.a.pminud_into(LOADS_MIN, S2);
        } else {
            self.a
                .v()
                .v3c(V::Psubd, LOADS_MIN, abs, SUBNORMAL_QUANTUM_BITS);
        }
    }

    /// Resets a deferred region of loads' records before a fast run that
    /// is not straight-line code (loads under tests of the output mask).
    pub(super) fn reset_load_records(&mut self) {
        let mut v = self.a.v();
        v.constant(RANGE, 0);
        v.constant(LOADS_MIN, u32::MAX);
        self.range_written = true;
        self.loads_min_written = true;
    }

    /// The end of a deferred region's fast run: the gathers are those of
    /// the region's start again, and the group jumps to the join where
    /// the run's check passes (always, where the run recorded nothing:
    /// `RANGE` would be 0); false outside a deferred region.
    fn fast_run_check(&mut self) -> bool {
        let Some((gathered, join)) = self.deferred.as_ref() else {
            return false;
        };
        let join = *join;
        self.gathered = gathered.clone();
        if self.flag_loads {
            self.write_input_bounds();
        }
        if !self.range_written {
            // Nothing recorded: RANGE would be 0 and the check would pass
            // in every group. The exact run stays, for groups whose
            // operands are not bounded (`Target::require_bounded_operands`).
            self.deferred_products = false;
            dynasm!(self.a.ops ; .arch x64 ; jmp =>join);
            return true;
        }
        if std::mem::take(&mut self.deferred_products) {
            // RANGE is all ones in the lanes where some product was NaN.
            self.a.v().test_zero(RANGE);
            dynasm!(self.a.ops ; .arch x64 ; jz =>join);
            return true;
        }
        let mut v = self.a.v();
        v.v3c(V::Pcmpgtd, S1, RANGE, RECORDED_BELOW_BITS - 1);
        let loads_min = std::mem::take(&mut self.loads_min_written);
        if std::mem::take(&mut self.deferred_loads) && loads_min {
            // Subnormal lanes: `|x| - 2^-78` (unsigned) below
            // `2^-62 - 2^-78` = 2^27, i.e. its top five bits clear.
            const SPAN: u32 = f24::MIN_NORMAL_BITS - SUBNORMAL_QUANTUM_BITS;
            const _: () = assert!(SPAN == 1 << 27);
            v.u(U::Psrld(27), S2, LOADS_MIN);
            v.v3c(V::Pcmpeqd, S2, S2, 0);
            v.v3(V::Orps, S1, S1, S2);
        }
        v.test_zero(S1);
        dynasm!(self.a.ops ; .arch x64 ; jz =>join);
        true
    }

    fn new(a: &'a mut WideAsm, mxcsr: super::fp_env::Constants) -> Function<'a> {
        let lanes = a.width.lanes();
        Function {
            a,
            lanes,
            mxcsr,
            allocation: Allocation::new(),
            gathered: Vec::new(),
            predicate: None,
            copy: GroupAt::default(),
            deferred: None,
            cold_bytes: 0,
            cold_start: 0,
            deferring: false,
            deferred_loads: false,
            defer_products: false,
            deferred_products: false,
            nan_later: false,
            range_known: false,
            flushed_inputs: 0,
            no_lower_bound: 0,
            unread_converted: 0,
            loads_min_written: false,
            bounded_rows: Default::default(),
            hoisted_checked: false,
            flag_loads: false,
            inputs_flagged: false,
            bounded_next: None,
            grid_next: None,
            bounded_exact: None,
            range_written: false,
            unbounded_run: false,
            exact_entry: None,
            check_bounds_next: false,
            checks_operands: false,
        }
    }

    /// The exact run of a deferred region starts here (cold code): where a
    /// group with unbounded operands jumps from the region's start too,
    /// and a fused conversion's exact run leaves the group's operands
    /// unbounded.
    fn start_exact_run(&mut self) {
        if let Some(exact) = self.exact_entry.take() {
            self.a.bind(exact);
            self.a.forget_masks();
        }
        if self.flag_loads {
            dynasm!(self.a.ops
                ; .arch x64
                ; mov DWORD [rdi + layout::OPERANDS_UNBOUNDED], 1
            );
        }
        // The exact run's operations take their own sequences.
        self.deferring_off();
    }

    /// A fused conversion's fast run passed or not (the check follows):
    /// the group's `layout::OPERANDS_UNBOUNDED` is 0 where every value it
    /// loaded is below 2^29 in magnitude and zero, below 2^-78 or at least
    /// 2^-23 (so its converted value is +0 or within [2^-23, 2^29)), and
    /// the call's hoisted operands are bounded.
    fn write_input_bounds(&mut self) {
        let mut v = self.a.v();
        v.v3c(V::Pcmpgtd, S1, RANGE, OPERAND_BELOW_BITS - 1);
        if !self.loads_min_written {
            // No lower bound recorded (no row of the region is bounded):
            // the lanes at or above 2^29 only.
            self.a.movmsk(S1);
        } else {
            v.u(U::Psrld(LOADS_MIN_SHIFT), S2, LOADS_MIN);
            v.v3c(V::Pcmpgtd, S2, S2, LOADS_MIN_BOUNDED - 1);
            v.v3(V::Andnps, S1, S1, S2);
            self.a.movmsk(S1);
            let all = (1u32 << self.lanes) - 1;
            dynasm!(self.a.ops ; .arch x64 ; xor eax, all as i32);
        }
        let hoisted = self.first_file_header(layout::HOISTED_UNBOUNDED);
        dynasm!(self.a.ops
            ; .arch x64
            ; or eax, DWORD [rdi + hoisted]
            ; mov DWORD [rdi + layout::OPERANDS_UNBOUNDED], eax
        );
    }

    /// The exact sequences from here on.
    fn deferring_off(&mut self) {
        self.deferring = false;
        self.check_bounds_next = false;
        self.checks_operands = false;
        self.nan_later = false;
        self.range_known = false;
        self.bounded_next = None;
        self.grid_next = None;
    }

    /// A fast float24 product `d` (the IEEE product) quantised: a bounded
    /// one (§9.20: zero or within [2^-46, 2^58]) is its truncated mantissa,
    /// plus +0 (-0 + 0 = +0, exact otherwise) unless no reader tells zeros
    /// apart; any other by [`Self::quantize_deferred`].
    fn quantize_product(&mut self, d: u8) {
        match self.bounded_next.take() {
            Some(zero_sign_unseen) => {
                let mut v = self.a.v();
                v.v3c(V::Andps, d, d, f24::MANTISSA_MASK);
                if !zero_sign_unseen {
                    v.v3c(V::Addps, d, d, 0);
                }
                if std::mem::take(&mut self.check_bounds_next) {
                    // A checked bounded product (§9.36): its magnitude and
                    // nonzero lanes for the operand-bounds record.
                    v.v3c(V::Andps, S2, d, 0x7FFF_FFFF);
                    v.v3c(V::Pcmpgtd, S1, S2, f24::MIN_NORMAL_BITS - 1);
                    self.record_operand_bounds();
                }
            }
            None => self.quantize_deferred(d, d),
        }
    }

    /// `d = f24::quantize_result(a)` where `a` is zero or a multiple of
    /// 2^-62 below 2^63 in magnitude ([`Target::grid_quantization`], §9.29):
    /// never a float24 subnormal, never out of range, so the truncated
    /// mantissa, plus +0 (`-0 + 0 = +0`, exact otherwise) unless no reader
    /// tells zeros apart. No record: the value needs no check.
    fn quantize_on_the_grid(&mut self, d: u8, a: u8, zero_sign_unseen: bool) {
        self.range_known = false;
        let mut v = self.a.v();
        v.v3c(V::Andps, d, a, f24::MANTISSA_MASK);
        if !zero_sign_unseen {
            v.v3c(V::Addps, d, d, 0);
        }
    }

    /// Before a fused input conversion's deferred region (the vertex
    /// kernel's `load_group`): its check also writes the group's
    /// `layout::OPERANDS_UNBOUNDED` (0 where every value it loads is
    /// bounded and so are the call's hoisted operands), and the converted
    /// rows of `inputs` are [`Target::bounded_row`]s from here on.
    pub(super) fn flag_input_bounds(&mut self, inputs: u16) {
        if !self.hoisted_checked || self.a.width != Width::Avx2 || inputs == 0 {
            return;
        }
        self.flag_loads = true;
        self.inputs_flagged = true;
        for n in (0..16).filter(|n| inputs >> n & 1 != 0) {
            for c in (0..4).filter(|c| self.no_lower_bound >> (4 * n + c) & 1 == 0) {
                self.bounded_rows
                    .insert((layout::CONVERTED + 4 * n + c) as u16);
            }
        }
    }

    /// The offset from `rdi` of the first file's header field `field`.
    fn first_file_header(&self, field: i32) -> i32 {
        field - (self.copy.file * layout::file_bytes(self.lanes)) as i32
    }

    /// `d = f24::quantize_result(a)` where `|a| < 2^64` (the deferred
    /// check sees `|a|`, unless [`Target::range_known`] said it is so
    /// anyway): the truncated mantissa, +0 below 2^-62.
    fn quantize_deferred(&mut self, d: u8, a: u8) {
        let mut v = self.a.v();
        v.v3c(V::Andps, S2, a, 0x7FFF_FFFF);
        v.v3c(V::Pcmpgtd, S1, S2, f24::MIN_NORMAL_BITS - 1);
        v.v3c(V::Andps, d, a, f24::MANTISSA_MASK);
        v.v3(V::Andps, d, d, S1);
        if !std::mem::take(&mut self.range_known) {
            self.record_range();
            self.a.pmaxsd_into(RANGE, S2);
        }
        if std::mem::take(&mut self.check_bounds_next) {
            self.record_operand_bounds();
        }
    }

    /// After [`Self::quantize_deferred`] (`S2` = `|a|`, `S1` = where
    /// `|a| >= 2^-62`): records in [`RANGE`] a lane at or above
    /// 2^[`RECORDED_BELOW_LOG2`] where `|a| >= 2^29` or
    /// `2^-62 <= |a| < 2^-23` (§9.24, §9.29). Where the region's check
    /// passes, the quantised value is then +0 or within [2^-23, 2^29) (truncation toward zero keeps a value at least 2^-23 at least 2^-23): a bounded
    /// operand. `|a| * 2^32` (its bits plus 32 in the exponent) is below
    /// 2^61 exactly where `|a|` is below 2^29, and it does not wrap: `|a|`
    /// is either recorded itself (the check fails unless it is below 2^61)
    /// or at most 2^63 wherever the check passes
    /// (`codegen::driver::quantizations_in_range`). A tiny nonzero lane
    /// gives `0x7FFF_FFFF`, above any finite bound.
    fn record_operand_bounds(&mut self) {
        const SCALE: u32 = (RECORDED_BELOW_LOG2 - OPERAND_BELOW_LOG2) << 23;
        self.record_range();
        let mut v = self.a.v();
        v.v3c(V::Pcmpgtd, S3, S2, OPERAND_FROM_BITS - 1);
        v.v3(V::Andnps, S3, S3, S1);
        v.u(U::Psrld(1), S3, S3);
        v.v3c(V::Paddd, S2, S2, SCALE);
        v.v3(V::Orps, S2, S2, S3);
        self.a.pmaxsd_into(RANGE, S2);
    }

    /// The fast run is about to accumulate into [`RANGE`]: where it first
    /// does, RANGE is reset. The fast run is straight-line code, so this
    /// first write runs before every later one.
    fn record_range(&mut self) {
        if !std::mem::replace(&mut self.range_written, true) {
            self.a.v().constant(RANGE, 0);
        }
    }

    /// Row `row`'s offset from `rdi`. The hoisted rows of a kernel are
    /// computed once per call, in the first register file of a pass: a
    /// later group's file reads them there (`rdi` then points
    /// `layout::file_bytes` further per group).
    fn row(&self, row: usize) -> i32 {
        let at = layout::row_offset(row, self.lanes);
        if (layout::HOIST..layout::HOIST + layout::HOIST_ROWS).contains(&row) {
            at - (self.copy.file * layout::file_bytes(self.lanes)) as i32
        } else {
            at
        }
    }

    fn emit(&mut self, op: LaneOp, d: u8, r: &[u8]) -> Result<(), JitError> {
        match op {
            LaneOp::Const(bits) => self.a.v().constant(d, bits),
            LaneOp::Row(row) => {
                let off = self.row(row as usize);
                self.a.load(d, off);
            }
            LaneOp::Uniform(off) => self.a.broadcast(d, off as i32),
            LaneOp::UniformByte { offset, mask } => {
                let off = offset as i32;
                dynasm!(self.a.ops ; .arch x64 ; movzx eax, BYTE [rsi + off]);
                if mask {
                    dynasm!(self.a.ops ; .arch x64 ; neg eax);
                }
                self.a.broadcast_eax(d);
            }
            LaneOp::Gather { comp, group, .. } => {
                if !self.gathered[group as usize] {
                    self.gather(r[0], group);
                    self.gathered[group as usize] = true;
                }
                let off = self.row(layout::GATHER + 4 * group as usize + comp as usize);
                self.a.load(d, off);
            }
            // In a deferred region: the fast forms, checked at its end. A
            // product below 2^64 in magnitude is not NaN, so it is the PICA
            // product (`arith::mul_rule` differs from IEEE only where the
            // IEEE product is NaN).
            LaneOp::Unary(UnOp::F24Quantize, _) if self.deferring => match self.grid_next.take() {
                Some(zero_sign_unseen) => self.quantize_on_the_grid(d, r[0], zero_sign_unseen),
                None => self.quantize_deferred(d, r[0]),
            },
            LaneOp::Binary(BinOp::PicaMulF24, _, _) if self.deferring => {
                self.a.v().v3(V::Mulps, d, r[0], r[1]);
                self.quantize_product(d);
            }
            // The IEEE product is the PICA one unless a lane is NaN
            // (`arith::mul_rule`); RANGE (0 as the region starts) becomes
            // all ones, itself a NaN, in such a lane and stays so.
            LaneOp::Binary(BinOp::PicaMul, _, _) if self.deferring => {
                self.a.v().v3(V::Mulps, d, r[0], r[1]);
                if !self.nan_later {
                    self.record_range();
                    self.a.v().v3(V::Cmpps(3), RANGE, RANGE, d);
                }
                self.deferred_products = true;
            }
            // A NaN lane sends the group to the exact run, so the fast form
            // has none to canonicalise; the products whose NaN tests it
            // stands for made no test of their own.
            LaneOp::Unary(UnOp::Canonicalize, _) if self.deferring => {
                self.record_range();
                let mut v = self.a.v();
                v.v3(V::Cmpps(3), RANGE, RANGE, r[0]);
                v.copy(d, r[0]);
                self.deferred_products = true;
            }
            LaneOp::Unary(u, _) => self.a.v().unary(u, d, r[0]),
            LaneOp::Binary(b, _, _) => self.a.v().binary(b, d, r[0], r[1]),
            LaneOp::FCmp(c, _, _) => self.a.v().fcmp(c, d, r[0], r[1]),
            LaneOp::ICmp(c, _, _) => self.a.v().icmp(c, d, r[0], r[1]),
            LaneOp::Select(..) => self.a.select(d, r[2], r[1], r[0]),
            LaneOp::Store(..) => unreachable!("stores define no value"),
        }
        Ok(())
    }

    /// Gathers `c[slot]` per lane into the four rows of `group` (1.0 for a
    /// slot outside `0..96`).
    fn gather(&mut self, slot: u8, group: u16) {
        let rows = self.row(layout::GATHER + 4 * group as usize);
        let stride = (4 * self.lanes) as i32;
        let floats = offset_of!(Uniforms, f) as i32;
        let one = 1.0f32.to_bits();
        let row_offs = [0, 1, 2, 3].map(|c| rows + c * stride);
        if self
            .a
            .gather_rows(slot, [S1, S2], row_offs, floats, 95, one)
        {
            return;
        }
        let index = self.row(layout::INDEX);
        self.a.store(index, slot);
        let ones = self.a.v().pool_label(one);
        // Every lane reading the same slot (a uniform `a0`, `aL` in a loop)
        // is the common case: one read, broadcast into each row.
        let (per_lane, done) = (
            self.a.ops.new_dynamic_label(),
            self.a.ops.new_dynamic_label(),
        );
        dynasm!(self.a.ops ; .arch x64 ; mov eax, [rdi + index]);
        self.a.broadcast_eax(S1);
        self.a.v().v3(V::Pcmpeqd, S1, S1, slot);
        self.a.movmsk(S1);
        let all = ((1u64 << self.lanes) - 1) as i32;
        dynasm!(self.a.ops
            ; .arch x64
            ; cmp eax, all
            ; jne =>per_lane
            ; mov eax, [rdi + index]
            ; mov ecx, eax
            ; shl ecx, 4
            ; lea rcx, [rsi + rcx + floats]
            ; lea rdx, [=>ones]
            ; cmp eax, 95
            ; cmova rcx, rdx
        );
        for (c, &off) in row_offs.iter().enumerate() {
            dynasm!(self.a.ops ; .arch x64 ; mov eax, [rcx + 4 * c as i32]);
            self.a.broadcast_eax(S1);
            self.a.store(off, S1);
        }
        dynasm!(self.a.ops ; .arch x64 ; jmp =>done);
        self.a.bind(per_lane);
        for lane in 0..self.lanes as i32 {
            let at = index + 4 * lane;
            let out = rows + 4 * lane;
            dynasm!(self.a.ops
                ; .arch x64
                ; mov eax, [rdi + at]
                ; mov ecx, eax
                ; shl ecx, 4
                ; lea rcx, [rsi + rcx + floats]
                ; lea rdx, [=>ones]
                ; cmp eax, 95
                ; cmova rcx, rdx
                ; mov eax, [rcx]
                ; mov [rdi + out], eax
                ; mov eax, [rcx + 4]
                ; mov [rdi + out + stride], eax
                ; mov eax, [rcx + 8]
                ; mov [rdi + out + 2 * stride], eax
                ; mov eax, [rcx + 12]
                ; mov [rdi + out + 3 * stride], eax
            );
        }
        self.a.bind(done);
    }
}

#[cfg(test)]
mod tests {
    use crate::jit::wide::{Width, layout};
    use crate::{
        EngineKind, Precision, Program, Shader, ShaderConfig, StatePolicy, Uniforms, UnitState,
    };
    use iced_x86::{Code, Decoder, DecoderOptions, Instruction, Mnemonic, OpKind, Register};
    use std::sync::Arc;

    /// `text`'s `run_vertices` (F32, Reset) at every width equals the
    /// interpreter's bit for bit on `inputs`, the kernel shading every vertex.
    fn assert_f32_vertices_match(text: &str, inputs: &[crate::VertexRegisters]) {
        assert_vertices_match(text, inputs, Precision::F32);
    }

    /// [`assert_f32_vertices_match`] in `precision`.
    fn assert_vertices_match(text: &str, inputs: &[crate::VertexRegisters], precision: Precision) {
        assert_masked_vertices_match(text, inputs, precision, 0xffff, &UnitState::default());
    }

    /// [`assert_vertices_match`] with output mask `output_mask`, every
    /// vertex starting from `start`; the outputs the mask leaves out keep
    /// the caller's values.
    fn assert_masked_vertices_match(
        text: &str,
        inputs: &[crate::VertexRegisters],
        precision: Precision,
        output_mask: u16,
        start: &UnitState,
    ) {
        let shbin = crate::asm::assemble_str("case.pica", text).expect("assembles");
        let program = Arc::new(
            Program::new(shbin.dvlp.code.clone(), shbin.dvlp.descriptors.clone()).expect("loads"),
        );
        let config = ShaderConfig {
            entry: shbin.dvles[0].main,
            precision,
            ..ShaderConfig::default()
        };
        let mut uniforms = Uniforms::default();
        uniforms.f[0] = [0.0, 1.5, f32::INFINITY, -2.0];
        uniforms.f[1] = [0.25, 0.0, -0.5, f32::NEG_INFINITY];
        let run = |shader: &Shader| {
            let mut outputs = vec![[[-7.5f32; 4]; 16]; inputs.len()];
            let summary = shader
                .run_vertices(
                    &uniforms,
                    inputs,
                    0xffff,
                    &mut outputs,
                    output_mask,
                    StatePolicy::Reset,
                    &mut start.clone(),
                    &mut (),
                )
                .expect("runs");
            (outputs, summary)
        };
        let interp = Shader::new(program.clone(), config, EngineKind::Interpreter).expect("builds");
        let (want, _) = run(&interp);
        for width in Width::available() {
            let wide = Shader::new(program.clone(), config, EngineKind::Jit)
                .expect("builds")
                .with_batch_width(Some(width))
                .expect("width available");
            let (got, summary) = run(&wide);
            assert_eq!(
                summary.wide_vertices,
                inputs.len(),
                "{width:?}: the kernel shaded all"
            );
            for (k, (g, w)) in got.iter().zip(&want).enumerate() {
                let bits = |v: &crate::VertexRegisters| v.map(|r| r.map(f32::to_bits));
                assert_eq!(
                    bits(g),
                    bits(w),
                    "{width:?} {precision:?} mask {output_mask:#06x}: vertex {k}\n{text}"
                );
            }
        }
    }

    /// The vertex kernel's stores under every kind of output mask: exactly
    /// the outputs the program writes (one test per group, the stores
    /// untested), fewer, more (outputs no step writes come from the
    /// starting state), all and none (the tested stores, out of the loop),
    /// with outputs copied from inputs and written in part, whole groups
    /// and a partial one, in both precisions, and a program writing none;
    /// outputs outside the mask keep the caller's values.
    #[test]
    fn every_output_mask_stores_what_it_asks_for() {
        // Writes o0, o1 (from v1: a copy), o2.xy, o4; not o3.
        let text = "
.constf k(0.5, -0.5, 2.0, 0.25)
.proc main
    dp4 o0.x, v0, k
    dp4 o0.y, v2, k
    mul o0.zw, v0, v2
    mov o1, v1
    add o2.xy, v0, k
    mov o4, v2.wzyx
    end
.end
";
        let written = 0b1_0111u16;
        let inputs: Vec<crate::VertexRegisters> = (0..2 * 16 + 3)
            .map(|k| {
                std::array::from_fn(|r| {
                    std::array::from_fn(|c| ((k * 64 + r * 4 + c) as f32 * 0.37).sin())
                })
            })
            .collect();
        let mut start = UnitState::default();
        for (n, o) in start.outputs.iter_mut().enumerate() {
            *o = std::array::from_fn(|c| 100.0 + (4 * n + c) as f32);
        }
        for mask in [
            written,
            0b1_0011,
            0b1_1111,
            0b1000_0001_0111,
            0xffff,
            0b1000,
            0,
        ] {
            for precision in [Precision::F32, Precision::F24] {
                assert_masked_vertices_match(text, &inputs, precision, mask, &start);
            }
        }
        // A program that writes no output: every output the mask asks for
        // is the starting state's.
        let nothing = ".proc main\n    end\n.end\n";
        for mask in [0b0111, 0xffff, 0] {
            for precision in [Precision::F32, Precision::F24] {
                assert_masked_vertices_match(nothing, &inputs, precision, mask, &start);
            }
        }
    }

    /// The 8-lane vertex kernels of `text` (F32): the instructions of the
    /// one-group kernel and of the two-group one, each up to its `ret`.
    fn avx2_vertex_kernels(text: &str) -> Option<[Vec<iced_x86::Instruction>; 2]> {
        avx2_vertex_kernels_in(text, Precision::F32)
    }

    /// Whether this CPU runs AVX2 kernels. Where it does not, the calling
    /// test says so on stdout (a `SKIPPED` line naming it), or fails under
    /// `PICA_REQUIRE_AVX2=1` (CI on an AVX2 host), never passing silently.
    pub(super) fn avx2_available() -> bool {
        if Width::available().contains(&Width::Avx2) {
            return true;
        }
        let test = std::thread::current().name().unwrap_or("?").to_string();
        if std::env::var_os("PICA_REQUIRE_AVX2").is_some_and(|v| v == "1") {
            panic!("{test}: PICA_REQUIRE_AVX2=1 but this CPU lacks AVX2");
        }
        println!("SKIPPED {test}: this CPU lacks AVX2 (PICA_REQUIRE_AVX2=1 makes this a failure)");
        false
    }

    /// The vertex kernel's test of the group's operands-unbounded flag
    /// (`cmp [rdi + OPERANDS_UNBOUNDED], …`), which starts a region with
    /// bounded products.
    fn operands_flag_test(i: &Instruction) -> bool {
        i.mnemonic() == Mnemonic::Cmp
            && i.op0_kind() == OpKind::Memory
            && i.memory_displacement64() == layout::OPERANDS_UNBOUNDED as u64
    }

    /// [`avx2_vertex_kernels`] in `precision`.
    pub(super) fn avx2_vertex_kernels_in(
        text: &str,
        precision: Precision,
    ) -> Option<[Vec<iced_x86::Instruction>; 2]> {
        if !avx2_available() {
            return None;
        }
        let shbin = crate::asm::assemble_str("case.pica", text).expect("assembles");
        let program =
            Program::new(shbin.dvlp.code.clone(), shbin.dvlp.descriptors.clone()).expect("loads");
        let config = ShaderConfig {
            entry: shbin.dvles[0].main,
            precision,
            ..ShaderConfig::default()
        };
        let wide = crate::jit::wide::WideShader::compile(&program, &config, Width::Avx2)
            .expect("compiles");
        Some([false, true].map(|pair| {
            let (code, at) = wide.vertex_kernel_code(pair).expect("a vertex kernel");
            let mut decoder = Decoder::with_ip(64, code, at as u64, DecoderOptions::NONE);
            let mut out = Vec::new();
            while decoder.can_decode() {
                let i = decoder.decode();
                assert_ne!(i.code(), Code::INVALID);
                out.push(i);
                if i.mnemonic() == Mnemonic::Ret {
                    break;
                }
            }
            out
        }))
    }

    /// The float24 input flushes (`vandps s, a, [abs]`, `vpcmpgtd s, s,
    /// [2^-62 - 1]`, `vandps d, a, s` not followed by a mantissa mask of
    /// `d`, which would make it a load or a quantisation) in `code`.
    fn f24_flushes(code: &[Instruction]) -> usize {
        let mem = |i: &Instruction, n: u32| i.op_count() > n && i.op_kind(n) == OpKind::Memory;
        code.windows(4)
            .filter(|w| {
                let [and, cmp, keep, next] = w else {
                    return false;
                };
                let (s, a) = (and.op0_register(), and.op1_register());
                and.mnemonic() == Mnemonic::Vandps
                    && mem(and, 2)
                    && cmp.mnemonic() == Mnemonic::Vpcmpgtd
                    && cmp.op1_register() == s
                    && mem(cmp, 2)
                    && keep.mnemonic() == Mnemonic::Vandps
                    && keep.op_count() == 3
                    && keep.op1_register() == a
                    && keep.op2_register() == cmp.op0_register()
                    && !(next.mnemonic() == Mnemonic::Vandps
                        && next.op1_register() == keep.op0_register()
                        && mem(next, 2))
            })
            .count()
    }

    /// F24 inputs that only arithmetic reads (`add`, `mul`, `dp4` of `v0`
    /// and `v1`): the AVX2 vertex kernel flushes each of their eight
    /// components once, in the exact conversion a failed load check runs,
    /// and its blocks read the stored rows as they are, in both runs of
    /// their deferred regions; `v2`, also copied raw by `mov`, keeps its
    /// flushes where arithmetic reads it. (Leaving the blocks' flushes in,
    /// `skip_flushes` not applied in `compile`, fails it: 24 = 8 + 2 × 8.)
    #[test]
    fn f24_inputs_read_only_flushed_are_not_flushed_by_the_blocks() {
        let text = "
.proc main
    add o0, v0, v1
    mul o1, v0, v1
    dp4 o2.x, v0, v1
    end
.end
";
        let Some([one, _]) = avx2_vertex_kernels_in(text, Precision::F24) else {
            return;
        };
        assert_eq!(f24_flushes(&one), 8);
        let text = "
.proc main
    add o0, v0, v2
    mov o1, v2
    end
.end
";
        let Some([one, _]) = avx2_vertex_kernels_in(text, Precision::F24) else {
            return;
        };
        // v0 flushed on conversion (4), v2 by the block's `add` in both runs
        // of its deferred region (2 × 4).
        assert_eq!(f24_flushes(&one), 12);
    }

    /// §9.33: `mov r0.xyz, v0` and products of `r0` only: the loop does not
    /// store `r0` (no step reads it), so its blocks read `v0`'s rows only
    /// flushed and the loop converts them flushed (the exact conversion's
    /// three flushes) and flushes them nowhere else; the carrying call's
    /// last pass after the loop, which stores `r0` = `load(v0)`, converts
    /// them as loaded and flushes them in each of its three runs of the
    /// region (3 × 3). (Not converting them flushed in the loop,
    /// `loop_flushed` 0 in `kernel`, fails it: 18, the loop's runs flushing
    /// them too; so does restoring no row before the last pass: 15.)
    #[test]
    fn f24_input_copies_no_step_reads_are_converted_flushed_in_the_loop() {
        let text = "
.fvec m[4], one
.proc main
    mov r0.xyz, v0
    mov r0.w, one.xxxx
    dp4 o0.x, m[0], r0
    dp4 o0.y, m[1], r0
    dp4 o0.z, m[2], r0
    dp4 o0.w, m[3], r0
    end
.end
";
        let Some([one, _]) = avx2_vertex_kernels_in(text, Precision::F24) else {
            return;
        };
        // The flushes of values loaded from (or stored to) `CONVERTED`
        // rows, not the hoisted uniforms'.
        let converted = layout::row_offset(layout::CONVERTED, 8) as u64
            ..layout::row_offset(layout::TEMP, 8) as u64;
        let row_access = |i: &Instruction| {
            (0..i.op_count()).any(|n| i.op_kind(n) == OpKind::Memory)
                && i.memory_base() == Register::RDI
                && converted.contains(&i.memory_displacement64())
        };
        let flushes = (1..one.len().saturating_sub(4))
            .filter(|&k| {
                f24_flushes(&one[k..k + 4]) == 1
                    && (row_access(&one[k - 1]) || row_access(&one[k + 3]))
            })
            .count();
        assert_eq!(flushes, 3 + 3 * 3);
    }

    /// §9.34: `mov r0.xyz, v0` and products of `r0` only: no step of the
    /// loop reads `v0.w`, so the loop's fused conversion stores three of
    /// `v0`'s four `CONVERTED` rows, in its fast run and in its exact run
    /// (3 + 3); the carrying call's last pass converts and stores all four
    /// in both (4 + 4). (Converting every row, `unread_converted` left 0 in
    /// `kernel`, fails it: 16.)
    #[test]
    fn f24_input_rows_no_step_reads_are_not_converted_in_the_loop() {
        let text = "
.fvec m[4], one
.proc main
    mov r0.xyz, v0
    mov r0.w, one.xxxx
    dp4 o0.x, m[0], r0
    dp4 o0.y, m[1], r0
    dp4 o0.z, m[2], r0
    dp4 o0.w, m[3], r0
    end
.end
";
        let Some([one, _]) = avx2_vertex_kernels_in(text, Precision::F24) else {
            return;
        };
        let converted = layout::row_offset(layout::CONVERTED, 8) as u64
            ..layout::row_offset(layout::TEMP, 8) as u64;
        let row_stores = (one.iter())
            .filter(|i| {
                i.op_count() == 2
                    && i.op0_kind() == OpKind::Memory
                    && i.memory_base() == Register::RDI
                    && converted.contains(&i.memory_displacement64())
            })
            .count();
        assert_eq!(row_stores, 3 + 3 + 4 + 4);
    }

    /// The instructions of `code` recording a fused conversion's lower
    /// bound (`vpsubd` or `vpminud` into [`LOADS_MIN`]), and those reading
    /// it in the check (`vpsrld` of it).
    fn lower_bound_records_and_reads(code: &[Instruction]) -> (usize, usize) {
        let loads_min = Register::YMM0 as u32 + super::LOADS_MIN as u32;
        let count = |m: &[Mnemonic], reg: fn(&Instruction) -> Register| {
            (code.iter())
                .filter(|i| m.contains(&i.mnemonic()) && reg(i) as u32 == loads_min)
                .count()
        };
        (
            count(
                &[Mnemonic::Vpsubd, Mnemonic::Vpminud],
                Instruction::op0_register,
            ),
            count(&[Mnemonic::Vpsrld], Instruction::op1_register),
        )
    }

    /// §9.27: F24 inputs only added (`v0`, `v1`: stored flushed, read by
    /// no product) record no lower bound in the fused conversion's fast
    /// run; an input transformed by a uniform matrix (`v2`, bounded
    /// product operands) records one per row, the first written straight
    /// into `LOADS_MIN` (`vpsubd`) and the other three folded in
    /// (`vpminud`), read by the check's subnormal test and by the group's
    /// bounds flag. With no input read by a product, nothing records and
    /// nothing reads `LOADS_MIN`. (Recording every row,
    /// `f24_load_deferred_row` passing true, fails it: (12, 2) for (4, 2).)
    #[test]
    fn inputs_no_product_reads_record_no_lower_bound() {
        let text = "
.fvec m[4]
.proc main
    add o0, v0, v1
    dp4 o1.x, m[0], v2
    dp4 o1.y, m[1], v2
    dp4 o1.z, m[2], v2
    dp4 o1.w, m[3], v2
    end
.end
";
        let Some([one, _]) = avx2_vertex_kernels_in(text, Precision::F24) else {
            return;
        };
        assert_eq!(lower_bound_records_and_reads(&one), (4, 2));
        let text = "
.proc main
    add o0, v0, v1
    add o1, v1, v0
    end
.end
";
        let Some([one, _]) = avx2_vertex_kernels_in(text, Precision::F24) else {
            return;
        };
        assert_eq!(lower_bound_records_and_reads(&one), (0, 0));
    }

    /// The `vpmaxsd` range records and the `vpcmpgtd` compares (flushes,
    /// checks) of `code`.
    fn records_and_compares(code: &[Instruction]) -> (usize, usize) {
        let count = |m: Mnemonic| code.iter().filter(|i| i.mnemonic() == m).count();
        (count(Mnemonic::Vpmaxsd), count(Mnemonic::Vpcmpgtd))
    }

    /// §9.20: an input transformed by a uniform matrix (`m4x4`: sixteen
    /// products of a converted input row and a hoisted uniform row) takes
    /// the bounded products: no flush compare and no record of its own in
    /// the fast run, nor in their sums' quantisations (on the grid, §9.29:
    /// truncations, +0 added to the four stored), and the region starts
    /// with the one test of the group's flag. (`on_the_grid` all false
    /// fails it: 12 flush compares.)
    #[test]
    fn bounded_products_of_inputs_and_uniforms_neither_flush_nor_record() {
        let text = "
.fvec m[4]
.proc main
    dp4 o0.x, m[0], v0
    dp4 o0.y, m[1], v0
    dp4 o0.z, m[2], v0
    dp4 o0.w, m[3], v0
    end
.end
";
        let Some([one, _]) = avx2_vertex_kernels_in(text, Precision::F24) else {
            return;
        };
        assert_eq!(one.iter().filter(|i| operands_flag_test(i)).count(), 1);
        // The fast run: from the flag's test to the jump to the join. It
        // records nothing, so it has no check (no `RANGE` reset, compare
        // or `vptest`): it always joins.
        let start = one
            .iter()
            .position(operands_flag_test)
            .expect("a flag test");
        let end = start
            + (one[start..].iter())
                .position(|i| i.mnemonic() == Mnemonic::Jmp)
                .expect("the region's jump to its join");
        let fast = &one[start..end];
        assert!(!fast.iter().any(|i| i.mnemonic() == Mnemonic::Vptest));
        let products = fast
            .iter()
            .filter(|i| i.mnemonic() == Mnemonic::Vmulps)
            .count();
        assert_eq!(products, 16);
        // Three sums per `dp4`, none recorded (§9.14) and, sums of
        // bounded products, none flushed (§9.29): truncated only, the
        // four stored ones with +0 added.
        assert_eq!(records_and_compares(fast), (0, 0));
        assert_eq!(additions_of_zero(fast), 4);
        // RANGE is neither reset nor read in the fast run.
        let range = |i: &Instruction| {
            (0..i.op_count()).any(|n| {
                i.op_kind(n) == OpKind::Register
                    && vector_number(i.op_register(n)) == Some(super::RANGE as u32)
            })
        };
        assert!(!fast.iter().any(range));
        // A group whose operands are not bounded jumps from the flag's test
        // to the fast run without bounded products (§9.14's: each product
        // flushed and recorded, 16 records), under its own check, and on to
        // the exact run only where that fails; not to the exact run.
        let jne = &one[start + 1];
        assert_eq!(jne.mnemonic(), Mnemonic::Jne);
        let at = (one.iter())
            .position(|i| i.ip() == jne.near_branch_target())
            .expect("the unbounded run");
        let check = at
            + (one[at..].iter())
                .position(|i| i.mnemonic() == Mnemonic::Vptest)
                .expect("the unbounded run's check");
        let unbounded = &one[at..check];
        let count = |m: Mnemonic| unbounded.iter().filter(|i| i.mnemonic() == m).count();
        assert_eq!(count(Mnemonic::Vmulps), 16);
        // 16 products and 12 sums flushed, the records compared once.
        assert_eq!(records_and_compares(unbounded), (16, 16 + 12 + 1));
        assert_eq!(one[check + 1].mnemonic(), Mnemonic::Je);
        // The group's flag: written by the fused conversion's check (and
        // set to 1 by its exact run), the call's by the hoisting.
        let writes = |field: i32| {
            (one.iter())
                .filter(|i| {
                    i.mnemonic() == Mnemonic::Mov
                        && i.op0_kind() == OpKind::Memory
                        && i.memory_displacement64() == field as u64
                })
                .count()
        };
        assert_eq!(writes(layout::OPERANDS_UNBOUNDED), 2);
        assert_eq!(writes(layout::HOISTED_UNBOUNDED), 1);
    }

    /// §9.33: a position `(v0.xyz, 1)` transformed by a uniform matrix
    /// (`dph`): each adds the matrix's `w` column (a hoisted row, checked
    /// once per call beside the product operands) to its bounded product
    /// of `z`, so that sum is on the grid too, and the bounded run has no
    /// flush compare and no record at all (the four stored sums add +0).
    /// (Leaving rows that additions read out of the per-call check, as
    /// before, fails it: (4, 9), the `z + w` sums quantised in full and
    /// recorded, and the region's check.)
    #[test]
    fn hoisted_rows_added_to_bounded_products_are_on_the_grid() {
        let text = "
.fvec m[4]
.proc main
    dph o0.x, v0, m[0]
    dph o0.y, v0, m[1]
    dph o0.z, v0, m[2]
    dph o0.w, v0, m[3]
    end
.end
";
        let Some([one, _]) = avx2_vertex_kernels_in(text, Precision::F24) else {
            return;
        };
        let start = one
            .iter()
            .position(operands_flag_test)
            .expect("a flag test");
        let end = start
            + (one[start..].iter())
                .position(|i| i.mnemonic() == Mnemonic::Jmp)
                .expect("the region's jump to its join");
        let fast = &one[start..end];
        let count = |m: Mnemonic| fast.iter().filter(|i| i.mnemonic() == m).count();
        // Three products per `dph` (the fourth term is the hoisted row).
        assert_eq!(count(Mnemonic::Vmulps), 12);
        assert_eq!(records_and_compares(fast), (0, 0));
        assert_eq!(additions_of_zero(fast), 4);
    }

    /// §9.24: a position transformed twice (`m4x4` of `v0` by one uniform
    /// matrix into `r1`, then of `r1` by another): the second sixteen
    /// products read `r1`'s quantised components, each by four products,
    /// so the region's check tests those four against the operand bounds
    /// (one record and one more compare each) and the products are bounded
    /// (no flush, no record). A group failing that check falls through to
    /// the run without bounded products (no `jmp` to the exact run).
    /// Checking no computed operand (`checked_operands` never paying)
    /// fails it: (16, 29) records and compares instead of (4, 9); so does
    /// quantising no sum on the grid (`on_the_grid` all false, §9.29):
    /// (4, 29).
    #[test]
    fn products_of_checked_computed_values_neither_flush_nor_record() {
        let text = "
.fvec m[4], n[4]
.proc main
    dp4 r1.x, m[0], v0
    dp4 r1.y, m[1], v0
    dp4 r1.z, m[2], v0
    dp4 r1.w, m[3], v0
    dp4 o0.x, n[0], r1
    dp4 o0.y, n[1], r1
    dp4 o0.z, n[2], r1
    dp4 o0.w, n[3], r1
    end
.end
";
        let Some([one, _]) = avx2_vertex_kernels_in(text, Precision::F24) else {
            return;
        };
        let start = one
            .iter()
            .position(operands_flag_test)
            .expect("a flag test");
        // The bounded fast run: from the flag's test to its check's `jz`.
        let check = start
            + (one[start..].iter())
                .position(|i| i.mnemonic() == Mnemonic::Vptest)
                .expect("the bounded run's check");
        let fast = &one[start..check];
        let count = |m: Mnemonic| fast.iter().filter(|i| i.mnemonic() == m).count();
        assert_eq!(count(Mnemonic::Vmulps), 32);
        // Records: the four checked values. Compares: the four checked
        // values' flushes and lower bounds, the check's; the other 20
        // sums, of bounded products, are truncated only (§9.29), the four
        // stored ones with +0 added.
        assert_eq!(records_and_compares(fast), (4, 4 + 4 + 1));
        assert_eq!(additions_of_zero(fast), 4);
        assert_eq!(one[check + 1].mnemonic(), Mnemonic::Je);
        // Failing, the group falls through to the run without bounded
        // products, where the flag's `jne` also leads.
        let jne = &one[start + 1];
        assert_eq!(jne.mnemonic(), Mnemonic::Jne);
        assert_eq!(one[check + 2].ip(), jne.near_branch_target());
        let at = check + 2;
        let end = at
            + (one[at..].iter())
                .position(|i| i.mnemonic() == Mnemonic::Vptest)
                .expect("the unbounded run's check");
        // There every product is flushed and recorded, as before §9.24.
        assert_eq!(records_and_compares(&one[at..end]), (32, 32 + 24 + 1));
    }

    /// The `vaddps` of a pool constant in `code`: the `+0` of a bounded
    /// product or of a quantisation on the grid (§9.20, §9.29).
    fn additions_of_zero(code: &[Instruction]) -> usize {
        code.iter()
            .filter(|i| i.mnemonic() == Mnemonic::Vaddps && i.memory_base() == Register::RIP)
            .count()
    }

    /// The vector register number (0–31) of `r`, if it is one.
    fn vector_number(r: Register) -> Option<u32> {
        let (r, x, y) = (r as u32, Register::XMM0 as u32, Register::YMM0 as u32);
        if (x..x + 32).contains(&r) {
            Some(r - x)
        } else if (y..y + 32).contains(&r) {
            Some(r - y)
        } else {
            None
        }
    }

    /// The vector registers instruction `i` reads and the one it writes.
    fn vector_use(i: &Instruction) -> (Vec<u32>, Option<u32>) {
        let regs: Vec<Option<u32>> = (0..i.op_count())
            .map(|n| match i.op_kind(n) {
                OpKind::Register => vector_number(i.op_register(n)),
                _ => None,
            })
            .collect();
        // `vptest` and stores write no vector register.
        let writes = i.mnemonic() != Mnemonic::Vptest;
        let written = regs[0].filter(|_| writes);
        let skip = usize::from(writes);
        (regs[skip..].iter().flatten().copied().collect(), written)
    }

    /// The vertex kernel's data movement on a matrix-transform shader (8
    /// lanes, F32): no row loaded into a register is overwritten before
    /// something reads it (constants, uniforms and unwritten rows are
    /// emitted where first read, `Target::LAZY_REMATERIALISATION`); a
    /// canonicalisation's NaN test is followed by no copy of its operand
    /// (`Target::reuses_dying_operand`); each group's stores test the
    /// output mask once (`Function::store_vertices`), and the kernel
    /// shading two groups per pass hoists its uniform values once, as the
    /// one-group kernel does, its second group reading the first's rows.
    #[test]
    fn the_vertex_kernel_moves_no_value_it_does_not_need() {
        let text = "
.constf k(0.0, 1.0, -1.0, -0.5)
.proc main
    mov r0.xyz, v0
    mov r0.w, k.y
    dp4 r1.x, c8, r0
    dp4 r1.y, c9, r0
    dp4 r1.z, c10, r0
    dp4 r1.w, c11, r0
    mov o3, -r1
    dp4 r2.x, c4, r1
    dp4 r2.y, c5, r1
    dp4 r2.z, c6, r1
    dp4 r2.w, c7, r1
    dp4 o0.x, c0, r2
    dp4 o0.y, c1, r2
    dp4 o0.z, c2, r2
    dp4 o0.w, c3, r2
    mov o1, v1
    dp3 r3.x, c8, v2
    rsq r3.y, r3.x
    mul o2, r3.y, v2
    end
.end
";
        let Some(kernels) = avx2_vertex_kernels(text) else {
            return;
        };
        let mut broadcasts_before_the_loop = Vec::new();
        for (pair, code) in kernels.iter().enumerate() {
            let targets: Vec<u64> = code
                .iter()
                .filter(|i| i.op0_kind() == OpKind::NearBranch64)
                .map(|i| i.near_branch_target())
                .collect();
            let straight = |i: &Instruction| {
                i.op0_kind() != OpKind::NearBranch64 && i.mnemonic() != Mnemonic::Ret
            };
            for (k, load) in code.iter().enumerate() {
                let from_row = load.mnemonic() == Mnemonic::Vmovaps
                    && load.op_count() == 2
                    && load.op1_kind() == OpKind::Memory
                    && load.memory_base() == Register::RDI;
                let Some(r) = from_row
                    .then(|| vector_number(load.op0_register()))
                    .flatten()
                else {
                    continue;
                };
                for next in &code[k + 1..] {
                    if targets.contains(&next.ip()) || !straight(next) {
                        break;
                    }
                    let (reads, written) = vector_use(next);
                    if reads.contains(&r) {
                        break;
                    }
                    assert_ne!(
                        written,
                        Some(r),
                        "{pair}: the load at {:#x} is never read",
                        load.ip()
                    );
                }
            }
            for w in code.windows(2) {
                // `vcmpunordps ymm12, ymm12, b`.
                let nan_test = w[0].mnemonic() == Mnemonic::Vcmpps
                    && w[0].immediate8() == 3
                    && w[0].op0_register() == Register::YMM12;
                let copy = w[1].mnemonic() == Mnemonic::Vmovaps
                    && w[1].op_count() == 2
                    && w[1].op1_kind() == OpKind::Register
                    && w[1].op1_register() == w[0].op2_register();
                assert!(!(nan_test && copy), "{pair}: a copy at {:#x}", w[1].ip());
            }
            // The loop: from the target of the branch after `dec r9` to it.
            let end = code
                .iter()
                .position(|i| i.mnemonic() == Mnemonic::Dec && i.op0_register() == Register::R9)
                .expect("a group loop");
            let top = code[end + 1].near_branch_target();
            let start = code
                .iter()
                .position(|i| i.ip() == top)
                .expect("the loop's start");
            let mask_reads: Vec<Mnemonic> = code[start..end]
                .iter()
                .filter(|i| {
                    (0..i.op_count()).any(|n| i.op_kind(n) == OpKind::Memory)
                        && i.memory_base() == Register::RDI
                        && i.memory_displacement64() == layout::OUTPUT_MASK as u64
                })
                .map(|i| i.mnemonic())
                .collect();
            // Per group: the stores' test and the direct outputs' (kernel.rs
            // `outputs_from_registers`: the last block writes outputs whole).
            assert_eq!(mask_reads, vec![Mnemonic::Cmp; 2 * (pair + 1)], "{pair}");
            broadcasts_before_the_loop.push(
                code[..start]
                    .iter()
                    .filter(|i| i.mnemonic() == Mnemonic::Vbroadcastss)
                    .count(),
            );
        }
        assert!(broadcasts_before_the_loop[0] > 0);
        assert_eq!(broadcasts_before_the_loop[0], broadcasts_before_the_loop[1]);
    }

    /// Rows read once, by a product (either operand) or as the second
    /// operand of an addition, subtraction, `max` or `min`, come from the
    /// register file instead of a register (`Target::lane_op_row`): uniform
    /// rows the kernel hoists and input rows, with signed zeros, NaNs and
    /// infinities (the exact runs of products load the row into a scratch
    /// register), in both precisions.
    #[test]
    fn rows_read_once_are_operands_from_memory() {
        let programs = [
            "dp4 o0, c0, v0\n    dp4 o1, v1, c1\n    mul o2, c1, v2",
            "max o0, c0, v0\n    min o1, v1, c1\n    max o2, v2, c0\n    min o3, c1, v1",
            "add o0, c0, -v0\n    add o1, v1, -c1\n    mad o2, v2, c0, v1",
            "mul r0, v0, c0\n    mul o0, r0, v1\n    dp3 o1, c1, v2\n    add o2, r0, c1",
        ];
        let specials = [
            0.0,
            -0.0,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            1e-30,
            -3.5,
        ];
        let inputs: Vec<crate::VertexRegisters> = (0..64)
            .map(|k| {
                std::array::from_fn(|r| {
                    std::array::from_fn(|c| {
                        let n = k * 16 + r * 4 + c;
                        // Most groups all ordinary; some lanes special.
                        if k % 8 == 3 || (k % 16 == 9 && c == 1) {
                            specials[n % specials.len()]
                        } else {
                            1.0 + n as f32 * 0.125
                        }
                    })
                })
            })
            .collect();
        for body in programs {
            let text = format!(".proc main\n    {body}\n    end\n.end\n");
            for precision in [Precision::F32, Precision::F24] {
                assert_vertices_match(&text, &inputs, precision);
            }
        }
    }

    /// Products whose NaN tests a canonicalised sum stands for
    /// (`Target::nan_test_later`): one lane of a group whose only NaN is one
    /// such product's `0 * inf` (PICA: +0; IEEE: NaN, and so the sum) takes
    /// the exact run; a product read elsewhere too keeps its own test. Each
    /// vertex of 64 has at most one special component, in no more than one
    /// lane of a group, in turn in every product.
    #[test]
    fn a_canonicalised_sum_tests_the_products_it_adds() {
        let programs = [
            // Input × input, and the uniform matrix form (c0, c1 hold 0 and
            // infinities against the inputs' zeros and infinities).
            "dp4 o0, v0, v1\n    dp3 o1, v1, v2",
            "dp4 o0, c0, v0\n    dp4 o1, c1, v0\n    dp3 o2, c0, v1",
            // A product that is stored too, and a sum read by a `mul`.
            "mul r0, v0, v1\n    add o0, r0, v2\n    mov o1, r0\n    dp4 o2, v1, v2",
            "add r1, v0, v1\n    dp4 o0, r1, v2\n    mul o1, r1, v1\n    dph o2, v0, v1",
            // A product only stored, beside sums of other products.
            "mul o1, v0, v1\n    dp4 o0, v2, v2\n    mad o2, v1, v2, v2",
        ];
        let specials = [f32::INFINITY, f32::NEG_INFINITY, 0.0, -0.0, f32::NAN];
        let inputs: Vec<crate::VertexRegisters> = (0..64)
            .map(|k| {
                let mut v: crate::VertexRegisters = std::array::from_fn(|r| {
                    std::array::from_fn(|c| 1.0 + (k * 16 + r * 4 + c) as f32 * 0.125)
                });
                // One vertex in four: a special value, against a zero or an
                // infinity in the other input of the same component.
                if k % 4 == (k / 4) % 4 {
                    let (r, c) = ((k / 16) % 3, (k / 3) % 4);
                    v[r][c] = specials[(k / 4) % specials.len()];
                    v[(r + 1) % 3][c] = if k % 2 == 0 { 0.0 } else { f32::INFINITY };
                }
                v
            })
            .collect();
        for body in programs {
            let text = format!(".proc main\n    {body}\n    end\n.end\n");
            assert_f32_vertices_match(&text, &inputs);
        }
    }

    /// The range records (`pmaxsd` into `RANGE`) of `text`'s block functions
    /// in F24 at `width`, and of the instructions in all.
    fn range_records(text: &str, width: Width) -> usize {
        use iced_x86::{Decoder, DecoderOptions, Mnemonic};
        let shbin = crate::asm::assemble_str("case.pica", text).expect("assembles");
        let program =
            Program::new(shbin.dvlp.code.clone(), shbin.dvlp.descriptors.clone()).expect("loads");
        let ir = crate::ir::Ir::build(
            &program,
            shbin.dvles[0].main,
            crate::ShaderKind::Vertex,
            Precision::F24,
        );
        let ir = crate::ir::opt::optimize(&ir);
        let blocks: Vec<_> = ir
            .blocks
            .iter()
            .map(|b| crate::jit::wide::lanes::split(b, true))
            .collect();
        let code = super::compile(&blocks, 0, width, None).expect("compiles");
        Decoder::new(64, &code.bytes, DecoderOptions::NONE)
            .into_iter()
            .filter(|i| matches!(i.mnemonic(), Mnemonic::Pmaxsd | Mnemonic::Vpmaxsd))
            .count()
    }

    /// A `dp4`'s three sums of four recorded products are at most 2^63
    /// wherever the region's check (every recorded value below 2^61)
    /// passes, so their quantisations record nothing; a fourth addition
    /// (2^64 possible) records again, and so does a sum with a row or
    /// uniform (no bound). (Returning `None` from `recorded_below_log2`, or
    /// letting a sum with a value of no bound go unrecorded, fails it.)
    #[test]
    fn sums_of_recorded_products_record_nothing() {
        for width in [Width::Sse41, Width::Avx2] {
            if !Width::available().contains(&width) {
                continue;
            }
            let records = |body: &str| {
                range_records(&format!(".proc main\n    {body}\n    end\n.end\n"), width)
            };
            // Four products, three known sums.
            assert_eq!(records("dp4 o0.x, v0, v1"), 4, "{width:?}");
            // dp3: three products, `p2 + 0.0` and two sums, all bounded.
            assert_eq!(records("dp3 o0.x, v0, v1"), 3, "{width:?}");
            // The dp4 and one more product, then their sum (up to 2^63 +
            // 2^61: recorded).
            assert_eq!(
                records("dp4 r0.x, v0, v1\n    mul r1.x, v2.x, v3.x\n    add o0.x, r0.x, r1.x"),
                6,
                "{width:?}"
            );
            // A product plus an input row: the row has no bound.
            assert_eq!(records("mad o0.x, v0.x, v1.x, v2.x"), 2, "{width:?}");
        }
    }

    /// Dot products whose products are just below 2^61 (their sums reach
    /// 2^63, the fast run is exact), at 2^61 and above (the group takes the
    /// exact run), and whose sums reach 2^64 (infinite) from products below
    /// it, one lane per group, against the interpreter at every width.
    #[test]
    fn sums_near_the_recorded_bound_match_the_interpreter() {
        let p = |e: i32| 2f32.powi(e);
        let below = p(61) * (1.0 - p(-24));
        // (v0 component, v1 component) making each product.
        let products = [
            (below, 1.0),
            (-below, 1.0),
            (p(30), p(31)),
            (p(31), p(31)),
            (p(40), p(22)),
            (1.5 * p(31), p(32)),
            (p(-40), p(-30)),
            (p(63), 1.5),
        ];
        let inputs: Vec<crate::VertexRegisters> = (0..8 * 16)
            .map(|k| {
                let mut v: crate::VertexRegisters = std::array::from_fn(|r| {
                    std::array::from_fn(|c| 1.0 + (k * 16 + r * 4 + c) as f32 * 0.125)
                });
                // One vertex in four: every product of that vertex from the
                // list, rotated by vertex.
                if k % 4 == (k / 4) % 4 {
                    for c in 0..4 {
                        let (a, b) = products[(k / 4 + c) % products.len()];
                        v[0][c] = a;
                        v[1][c] = if k % 8 == 0 { -b } else { b };
                    }
                }
                v
            })
            .collect();
        let text = ".proc main
    dp4 o0.x, v0, v1
    dp3 o0.y, v0, v1
    dph o0.z, v0, v1
    dp4 r0.x, v0, v1
    mul r1.x, v0.x, v1.x
    add o0.w, r0.x, r1.x
    add r2, v0, v1
    dp4 o1.x, r2, v1
    end
.end
";
        assert_vertices_match(text, &inputs, Precision::F24);
    }

    /// F32 products in a deferred region (several in one block, their NaN
    /// tests accumulated): a group where one lane's `0 * inf` (PICA: +0) or
    /// NaN operand occurs in one product only, in any lane and any
    /// position, takes the exact run; the bits equal the interpreter's at
    /// every width, and the kernel shaded every vertex.
    #[test]
    fn deferred_products_see_a_nan_in_any_lane_of_any_product() {
        let text = "
.constf k(0.5, -0.5, 2.0, 0.25)
.proc main
    mul r0, v0, v1
    mul r1, v2, k
    dp4 o0, r0, v2
    mul o1, r1, v0.wzyx
    dp3 o2, v1, v2
    end
.end
";
        let specials = [f32::INFINITY, f32::NEG_INFINITY, f32::NAN, 0.0, -0.0];
        // Eight groups of the widest width (more of the narrower ones).
        // Vertex k: one special value in input k % 3, component (k / 3) % 4;
        // a zero in another input's component, so some product is `0 * inf`.
        let inputs: Vec<crate::VertexRegisters> = (0..8 * 16)
            .map(|k| {
                let mut v: crate::VertexRegisters = std::array::from_fn(|r| {
                    std::array::from_fn(|c| 1.0 + (k * 16 + r * 4 + c) as f32 * 0.125)
                });
                if k % 5 != 4 {
                    let (r, c) = (k % 3, (k / 3) % 4);
                    v[r][c] = specials[k % specials.len()];
                    v[(r + 1) % 3][c] = 0.0;
                }
                v
            })
            .collect();
        assert_f32_vertices_match(text, &inputs);
    }

    /// §9.36: products of an input by uniform components stored in a
    /// temporary (`mul r2.x, m[0].x, v1.x`, the particle shaders' scaled
    /// matrix) and read by four `dp3` of uniform rows: the `dp3`s read the
    /// products without a flush (a float24 product is quantised), each
    /// product is a checked value (its bounds recorded: one `vpmaxsd` and
    /// two compares), and the twelve `dp3` products are bounded, their
    /// sums on the grid (no flush compare, no record). Keeping the flushes
    /// of quantised lanes in `lanes::split` fails it (the `dp3`s then read
    /// flushes, not checked values: (12, 12 + 12 + 1 + 3) records and
    /// compares); so does checking quantisations only (`checked_operands`
    /// without `PicaMulF24`: (12, 12 + 12 + 1)).
    #[test]
    fn products_read_by_products_of_uniform_rows_are_checked_values() {
        let text = "
.fvec m[4], n[4]
.proc main
    mul r2.x, m[0].x, v1.x
    mul r2.y, m[1].x, v1.x
    mul r2.z, m[2].x, v1.x
    dp3 o0.x, n[0], r2
    dp3 o0.y, n[1], r2
    dp3 o0.z, n[2], r2
    dp3 o0.w, n[3], r2
    end
.end
";
        let Some([one, _]) = avx2_vertex_kernels_in(text, Precision::F24) else {
            return;
        };
        let start = one
            .iter()
            .position(operands_flag_test)
            .expect("a flag test");
        let check = start
            + (one[start..].iter())
                .position(|i| i.mnemonic() == Mnemonic::Vptest)
                .expect("the bounded run's check");
        let fast = &one[start..check];
        let count = |m: Mnemonic| fast.iter().filter(|i| i.mnemonic() == m).count();
        assert_eq!(count(Mnemonic::Vmulps), 3 + 12);
        // Records: the three checked products. Compares: their nonzero
        // lanes and lower bounds, the check's.
        assert_eq!(records_and_compares(fast), (3, 3 + 3 + 1));
        assert_eq!(f24_flushes(fast), 0);
    }
}
