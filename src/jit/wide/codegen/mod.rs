//! What the wide lowerings share across ISAs: the [`Target`] trait a
//! backend (`x64/wide/`, `a64/wide/`) implements (its value registers, row
//! loads and stores, function entry and exit, the emission of one lane
//! operation), the register allocator over it ([`regalloc`]) and the driver
//! that turns each block of lane operations into one function ([`driver`]).
//! The allocator and the driver run in the same order on every ISA, so the
//! allocation decisions are the same everywhere.

pub(crate) mod copies;
pub(crate) mod dead;
pub(crate) mod driver;
pub(crate) mod flushed;
pub(crate) mod hoist;
pub(crate) mod regalloc;
pub(crate) mod states;

pub(crate) use driver::{Driver, Functions, Module, lower_blocks, optional};
pub(crate) use hoist::hoist;
pub(crate) use regalloc::{Allocation, RegAlloc};
pub(crate) use states::StateRows;

use crate::jit::JitError;
use crate::jit::wide::lanes::{LaneBlock, LaneOp};
use crate::jit::wide::layout;
use crate::jit::wide::plan::KernelPlan;
use crate::state::UnitState;
use std::mem::offset_of;

/// The machine code of a wide shader (every ISA's lowering returns it).
pub(crate) struct WideCode {
    pub bytes: Vec<u8>,
    /// Offset of each block's function (`None`: the lowering gave up on it).
    pub entries: Vec<Option<usize>>,
    /// Offset of each block's masked function (see [`Functions::masked`]).
    pub masked_entries: Vec<Option<usize>>,
    /// Offset of the F24 input conversion, when there is one.
    pub prologue: Option<usize>,
    /// Offset of the batch kernel, when one was asked for and lowered.
    pub kernel: Option<usize>,
    /// Offset of the batch kernel that shades two groups per pass (see
    /// `vertex_pair_kernel`).
    pub pair_kernel: Option<usize>,
    /// Offset of the batch kernel for the vertex layout.
    pub vertex_kernel: Option<usize>,
    /// Offset of the vertex-layout kernel that shades two groups per pass,
    /// each in its own register file ([`layout::file_bytes`] apart), when
    /// its loop is small enough.
    pub vertex_pair_kernel: Option<usize>,
}

/// What a batch kernel is lowered from.
#[derive(Clone, Copy)]
pub(crate) struct KernelSource<'a> {
    /// Its plan.
    pub plan: &'a KernelPlan,
    /// The shader's lane blocks (the plan's steps name them).
    pub blocks: &'a [LaneBlock],
    /// F24: the inputs converted after loading.
    pub convert_inputs: u16,
}

/// Where a wide shader's batch kernels start (`None`: none asked for, or it
/// did not lower).
#[derive(Default)]
pub(crate) struct Kernels {
    /// The state layout's kernel ([`WideCode::kernel`]).
    pub states: Option<usize>,
    /// Its two-groups-per-pass form ([`WideCode::pair_kernel`]).
    pub states_pair: Option<usize>,
    /// The vertex layout's kernel ([`WideCode::vertex_kernel`]).
    pub vertices: Option<usize>,
    /// Its two-groups-per-pass form ([`WideCode::vertex_pair_kernel`]).
    pub vertices_pair: Option<usize>,
}

impl WideCode {
    /// The code dynasm `assembled`, with its block `functions` and batch
    /// `kernels`.
    pub(crate) fn new<E: std::fmt::Debug>(
        assembled: Result<Vec<u8>, E>,
        functions: Functions,
        kernels: Kernels,
    ) -> Result<WideCode, JitError> {
        Ok(WideCode {
            bytes: assembled.map_err(|e| JitError::Assemble(format!("{e:?}")))?,
            entries: functions.entries,
            masked_entries: functions.masked,
            prologue: functions.prologue,
            kernel: kernels.states,
            pair_kernel: kernels.states_pair,
            vertex_kernel: kernels.vertices,
            vertex_pair_kernel: kernels.vertices_pair,
        })
    }
}

/// The register files of `UnitState` and of the wide register file.
pub(crate) fn files() -> [(usize, usize); 3] {
    [
        (offset_of!(UnitState, inputs), layout::INPUT),
        (offset_of!(UnitState, temps), layout::TEMP),
        (offset_of!(UnitState, outputs), layout::OUTPUT),
    ]
}

/// `(row, byte offset in UnitState, is a flag)` of `a0.x`, `a0.y`, `aL`,
/// `cmp.x`, `cmp.y`.
pub(crate) fn small_rows() -> [(usize, usize, bool); 5] {
    let a0 = offset_of!(UnitState, a0);
    let cmp = offset_of!(UnitState, cmp);
    [
        (layout::A0X, a0, false),
        (layout::A0Y, a0 + 4, false),
        (layout::AL, offset_of!(UnitState, al), false),
        (layout::CMP, cmp, true),
        (layout::CMP + 1, cmp + 1, true),
    ]
}

/// `(byte offset in UnitState, is a flag)` of state row `row` (a temporary,
/// output, address register or flag row): where a kernel finds a lane's
/// starting value of the row.
pub(crate) fn start_field(row: usize) -> (usize, bool) {
    if let Some(&(_, field, flag)) = small_rows().iter().find(|(r, ..)| *r == row) {
        return (field, flag);
    }
    let (base, file) = if row >= layout::OUTPUT {
        (layout::OUTPUT, offset_of!(UnitState, outputs))
    } else {
        (layout::TEMP, offset_of!(UnitState, temps))
    };
    debug_assert!(
        (layout::TEMP..layout::TEMP + 64).contains(&row)
            || (layout::OUTPUT..layout::OUTPUT + 64).contains(&row)
    );
    (file + 4 * (row - base), false)
}

/// What a batch kernel's groups are made of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum KernelShape {
    /// `UnitState`s (`Shader::run_batch`): each lane from its own state, to
    /// its own state.
    States,
    /// The emulator's layout (`Shader::run_vertices` with
    /// `StatePolicy::Reset`): `VertexRegisters` records; every lane starts
    /// from the state at the header's `START_STATE` (converted for F24), its
    /// inputs from its input record; the outputs of the header's
    /// `OUTPUT_MASK` go to its output record.
    Vertices,
}

/// One ISA's side of a generated wide function.
pub(crate) trait Target {
    /// Registers that hold values, in the order the allocator takes them.
    const VALUE_REGS: &'static [u8];

    /// Whether a value that can be emitted again (a constant, a uniform, a
    /// row the block does not write) is emitted where an operation first
    /// reads it rather than where the block defines it: a value defined
    /// long before its first reader then neither holds a register meanwhile
    /// nor is emitted twice (once, then again after its eviction), and one
    /// nothing reads in a register is never emitted.
    const LAZY_REMATERIALISATION: bool = false;

    /// The function's allocation state.
    fn allocation(&mut self) -> &mut Allocation;

    /// Register `reg` = row `row` of the register file.
    fn load_row(&mut self, reg: u8, row: usize);

    /// Row `row` of the register file = register `reg`.
    fn store_row(&mut self, row: usize, reg: u8);

    /// A block's store of register `reg` to row `row` (a backend may keep the
    /// new value in some lanes only).
    fn store_value(&mut self, row: usize, reg: u8) {
        self.store_row(row, reg);
    }

    /// Makes the function's row stores keep the new value only in the lanes
    /// whose `layout::PREDICATE` row is all ones (the driver's execution
    /// mask) and returns true; false where the backend has no masked stores.
    fn mask_stores(&mut self) -> bool {
        false
    }

    /// Emits the value operation `op` into register `d`, its operands in
    /// `regs` (never `d`).
    fn lane_op(&mut self, op: LaneOp, d: u8, regs: &[u8]) -> Result<(), JitError>;

    /// Whether `op` (a binary operation) can read its operand at index `at`
    /// (0 or 1) straight from a row of the register file in every form it
    /// takes ([`lane_op_row`](Self::lane_op_row)); none where the backend
    /// has no such forms.
    fn reads_row_operand(&self, op: LaneOp, at: usize) -> bool {
        let _ = (op, at);
        false
    }

    /// [`lane_op`](Self::lane_op) of a binary `op` whose operand at index
    /// `at` is row `row` (which the block does not write), read from the
    /// register file, and whose other operand is in register `other`.
    fn lane_op_row(
        &mut self,
        op: LaneOp,
        d: u8,
        other: u8,
        at: usize,
        row: u16,
    ) -> Result<(), JitError> {
        let _ = (op, d, other, at, row);
        Err(JitError::Lowering("no row operands on this backend".into()))
    }

    /// Whether the one-operand `op` may write its result into its
    /// operand's register where that operand is read for the last time
    /// ([`lane_op`](Self::lane_op) then gets `d` equal to the operand's
    /// register, in every form `op` takes): a copy saved where the form is
    /// a test and a copy.
    fn reuses_dying_operand(&self, op: LaneOp) -> bool {
        let _ = op;
        false
    }

    /// `arith::f24::load` of register `reg` in place.
    fn f24_load_in_place(&mut self, reg: u8);

    /// F24: after the exact conversion of input row `row` (`0..64`, the
    /// `CONVERTED` row's offset) into register `reg`: `f24::flush_input` of
    /// it in place where the backend stores that row flushed
    /// ([`flushed`]); nothing elsewhere.
    fn flush_converted_in_place(&mut self, reg: u8, row: usize) {
        let _ = (reg, row);
    }

    /// Before a block's operations (`gathers`: how many slots it gathers).
    fn start_block(&mut self, gathers: usize);

    /// Function entry (the host's floating-point environment saved).
    fn enter(&mut self);

    /// Function exit (the host's environment back), returning the exit mask.
    fn leave(&mut self);

    /// Exit mask = the sign bit of each lane of register `reg`.
    fn exit_mask(&mut self, reg: u8);

    /// Exit mask = 0.
    fn no_exit_mask(&mut self);

    /// Header field at byte `offset` = lane 0 of register `reg`.
    fn store_lane0(&mut self, offset: i32, reg: u8);

    /// Whether `op` has a cheaper form under a deferred range check
    /// ([`Driver::body`]); none where the backend has no such forms.
    fn defers_check(&self, op: LaneOp) -> bool {
        let _ = op;
        false
    }

    /// Starts a block's deferred region: the operations
    /// [`defers_check`](Self::defers_check) names emit their fast forms,
    /// which are exact in every lane a single range check at the region's
    /// end passes. Returns false (emitting nothing) where the backend has
    /// none.
    fn begin_deferred(&mut self) -> bool {
        false
    }

    /// Inside a deferred region: whether the next operation takes its fast
    /// form (one that [`defers_check`](Self::defers_check) names) or its own
    /// checked sequence.
    fn defer_next(&mut self, fast: bool) {
        let _ = fast;
    }

    /// Inside a deferred region, before the next operation (when it takes
    /// its fast form): its own NaN test can be left out, because a NaN in
    /// any lane of its result reaches a fast
    /// [`UnOp::Canonicalize`](crate::ir::UnOp::Canonicalize) of the same
    /// region through additions only (a NaN operand makes the sum NaN), and
    /// that one's test sends the group to the exact run.
    fn nan_test_later(&mut self, later: bool) {
        let _ = later;
    }

    /// The magnitude below which the region's one check passes for every
    /// value a fast float24 form recorded, as a power of two (`Some(61)`:
    /// below 2^61); `None` where the backend's fast forms record every value
    /// (no operation leaves its record out, [`range_known`](Self::range_known)).
    fn recorded_below_log2(&self) -> Option<u32> {
        None
    }

    /// Inside a deferred region, before the next operation (a fast float24
    /// quantisation): its operand is at most 2^63 in magnitude (finite, not
    /// NaN) wherever the region's check passes, being a sum of values the
    /// region's fast forms recorded (each below
    /// [`recorded_below_log2`](Self::recorded_below_log2)), so its fast form
    /// is exact without recording it.
    fn range_known(&mut self, known: bool) {
        let _ = known;
    }

    /// Rows whose every lane is, wherever a deferred region that
    /// [`require_bounded_operands`](Self::require_bounded_operands) takes its
    /// fast run, zero or of magnitude within the backend's operand bounds
    /// (2^-23 to 2^29 on x86-64): the hoisted rows checked once per call
    /// ([`check_hoisted_bounds`](Self::check_hoisted_bounds)) and the input
    /// rows whose conversion checked them per group. None by default.
    fn bounded_row(&self, row: u16) -> bool {
        let _ = row;
        false
    }

    /// Before a kernel's group loop: the hoisted `rows` (read as float24
    /// product operands, or added to a sum a float24 quantisation reads)
    /// are checked once per call against the operand bounds, and
    /// [`bounded_row`](Self::bounded_row) names those checked.
    /// Nothing by default.
    fn check_hoisted_bounds(&mut self, rows: &[u16]) {
        let _ = rows;
    }

    /// Right after [`begin_deferred`](Self::begin_deferred) returned true:
    /// the region has bounded products (operands [`bounded_row`](Self::bounded_row)s),
    /// so the group goes to the exact run straight away unless this group's
    /// operands passed their bounds check.
    fn require_bounded_operands(&mut self) {}

    /// After the fast run of a region with bounded products: its check
    /// (to the join where it passes, else to the exact run); the code
    /// emitted next, up to [`check_deferred`](Self::check_deferred), is the
    /// region's fast run without bounded products, where a group whose
    /// operands are not bounded starts
    /// ([`require_bounded_operands`](Self::require_bounded_operands)).
    fn check_bounded_run(&mut self) {}

    /// Inside a deferred region, before the next operation (a fast
    /// float24 product whose operands are [`bounded_row`](Self::bounded_row)s,
    /// `Some`): its product is zero or of magnitude within [2^-46, 2^58]
    /// wherever the region's fast run runs, so it needs neither the flush
    /// of a tiny result nor a record; `Some(true)`: the sign of its zero is
    /// seen by no reader either (only additions that end in quantisations
    /// read it).
    fn bounded_product(&mut self, bounded: Option<bool>) {
        let _ = bounded;
    }

    /// Inside a deferred region with bounded products, before the next
    /// operation (a fast float24 quantisation some bounded products read,
    /// `true`): its fast form also records, for the region's check, whether
    /// its operand is below 2^29 in magnitude and, where it does not
    /// quantise to +0, at least 2^-23: where the check passes, the
    /// quantised value is zero or within the operand bounds of
    /// [`bounded_row`](Self::bounded_row), as a bounded row's lanes are.
    /// Nothing by default (a backend with no bounded rows is never asked).
    fn check_operand_bounds(&mut self, checked: bool) {
        let _ = checked;
    }

    /// Inside a deferred region with bounded products, before the next
    /// operation (a fast float24 quantisation whose operand is known below
    /// 2^63 and zero or a multiple of 2^-62 wherever the region's bounded
    /// run runs, `Some`: `codegen::driver::on_the_grid`): its quantisation
    /// is the truncated mantissa alone, except that a `-0` must become
    /// `+0` unless no reader tells zeros apart (`Some(true)`). Nothing by
    /// default (a backend with no bounded rows is never asked).
    fn grid_quantization(&mut self, grid: Option<bool>) {
        let _ = grid;
    }

    /// Ends the deferred region: the one range check, which jumps to the
    /// join when every lane passes; the code emitted next (up to
    /// [`join_deferred`](Self::join_deferred)) runs the region again with
    /// the exact sequences, from the same state (the region stores no row).
    fn check_deferred(&mut self) {}

    /// The join after the exact run of a deferred region.
    fn join_deferred(&mut self) {}

    /// Starts a deferred region of float24 input loads: each
    /// [`f24_load_deferred`](Self::f24_load_deferred) is exact in every lane
    /// the region's one check ([`check_deferred`](Self::check_deferred))
    /// passes. Returns false (emitting nothing) where the backend has none.
    fn begin_deferred_loads(&mut self) -> bool {
        false
    }

    /// `arith::f24::load` of register `reg` in place, by the fast form of a
    /// deferred region of loads.
    fn f24_load_deferred(&mut self, reg: u8) {
        self.f24_load_in_place(reg);
    }

    /// [`f24_load_deferred`](Self::f24_load_deferred) of input row
    /// `CONVERTED + row` (into `reg`): a backend may record less for a row
    /// its readers need less of. By default the same.
    fn f24_load_deferred_row(&mut self, reg: u8, row: usize) {
        let _ = row;
        self.f24_load_deferred(reg);
    }
}
