//! The wide engine: shades `W` vertices per call, one vertex per SIMD lane
//! (structure of arrays), bit-identical to the interpreter.
//!
//! Each basic block of the optimised IR ([`crate::ir::opt`]) is split into
//! lane operations ([`lanes`]) and lowered to one native function per block
//! (`x64/wide/`, `a64/wide/`) that runs the block for all `W` lanes on the
//! wide register file ([`layout`], a per-call memory area). This driver walks
//! the blocks: it charges the budget once per block for all lanes (they run
//! the same instructions), applies each block's exit with the IR's own
//! `apply_exit` and the interpreter's `FlowState::advance` (one flow state for
//! the group), and keeps the stacks exact.
//!
//! * **Uniform decisions** (`ifu`, `callu`, `jmpu`, loop counts) are the same
//!   in every lane.
//! * **Flag decisions** (`ifc`, `callc`, `jmpc`, `breakc`): the block returns
//!   the condition's lane mask. When every active lane agrees the group
//!   follows it once; when they diverge, where the backend has masked block
//!   functions (x86-64 and NEON) the lanes split into paths in one register
//!   file (`run_masked`): the path with the lowest PC runs next under its
//!   lane mask and paths meeting in one flow state merge (reconvergence).
//!   Programs whose decisions cannot differ between lanes have no masked
//!   functions and run as one group (`run_group`); should its lanes still
//!   diverge, each finishes on the interpreter (no register file is ever
//!   copied). Inactive lanes compute values nobody reads,
//!   and a few lanes left on their own go to the single-vertex JIT where the
//!   caller can run them (`LaneSink::single_vertex`).
//! * **Hand-over**: a block entered mid-way, a block the remaining budget
//!   cannot cover, or a block the lowering could not compile, finishes each
//!   lane on the interpreter from the group's progress (the lane's registers
//!   transposed into its own `UnitState`), so budget stops are exact per lane.
//!
//! `docs/semantics.md` ("Wide engine") states the state policies.

pub(crate) mod batch;
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
pub(crate) mod codegen;
pub mod lanes;
pub mod layout;
pub(crate) mod plan;
mod transpose;
pub(crate) mod width;

pub use width::Width;

use crate::interp::Invocation;
use crate::ir::{self, Exit, Ir};
use crate::machine::flow::FlowState;
use crate::machine::{Progress, ShaderConfig, Stop};
use crate::program::{Program, ShaderKind};
use crate::state::{Uniforms, UnitState};
use lanes::RowSet;
pub(crate) use plan::{KernelPlan, StatePlan};
use transpose::File;

use super::JitError;
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
use super::memory::ExecRegion;

std::thread_local! {
    /// Vertices shaded by wide code on this thread (see [`vertices_shaded`]).
    static SHADED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// How many vertices wide generated code has shaded on this thread (lanes of
/// groups that started in wide code, whether or not a lane was later handed
/// over). Tests read the difference around a batch to know that the wide
/// engine ran.
pub fn vertices_shaded() -> u64 {
    SHADED.with(std::cell::Cell::get)
}

std::thread_local! {
    /// Vertices the batch kernel shaded on this thread (see [`kernel_vertices`]).
    static KERNEL: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// How many vertices the batch kernel (one call for every whole group of a
/// straight-line program's batch: no driver between blocks) has shaded on
/// this thread; they count in [`vertices_shaded`] too.
pub fn kernel_vertices() -> u64 {
    KERNEL.with(std::cell::Cell::get)
}

std::thread_local! {
    /// `run_vertices` calls on this thread that took the short path (see
    /// [`short_path_calls`]).
    static SHORT_PATH: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// How many `Shader::run_vertices` calls on this thread shaded their whole
/// batch with one vertex-kernel call, without the general setup (the
/// common case: `StatePolicy::Reset`, whole groups, every input the program
/// reads given, no temporary converted on entry). Tests read the
/// difference around a call to know which path ran.
pub fn short_path_calls() -> u64 {
    SHORT_PATH.with(std::cell::Cell::get)
}

fn count_short_path() {
    SHORT_PATH.with(|c| c.set(c.get() + 1));
}

std::thread_local! {
    /// Vertices the batch driver handed to the single-vertex JIT on this
    /// thread (see [`vertices_handed_over`]).
    static HANDED: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
    /// Whether the batch driver keeps every vertex in lanes on this thread
    /// (see [`force_lanes`]).
    static FORCE_LANES: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// How many vertices the batch driver has handed to the single-vertex JIT
/// on this thread instead of running them in lanes, because lanes were
/// measured not to pay for their group or batch (with
/// [`vertices_shaded`], tests account for every vertex of a batch).
pub fn vertices_handed_over() -> u64 {
    HANDED.with(std::cell::Cell::get)
}

fn count_handed_over(n: usize) {
    HANDED.with(|c| c.set(c.get() + n as u64));
}

/// Makes the batch driver on this thread run every vertex it starts in lanes
/// (`true`) or hand vertices to the single-vertex JIT where lanes do not pay
/// (`false`, the default); returns the previous setting. Results are the same
/// either way: tests of the wide engine's own paths use it so that every
/// vertex of their batches runs in lanes.
#[doc(hidden)]
pub fn force_lanes(on: bool) -> bool {
    FORCE_LANES.with(|c| c.replace(on))
}

fn lanes_forced() -> bool {
    FORCE_LANES.with(std::cell::Cell::get)
}

fn count_shaded(n: u32) {
    SHADED.with(|c| c.set(c.get() + n as u64));
}

/// The wide register file of one group of lanes (see [`layout`]), 64-byte
/// aligned; for the vertex batch kernel, several such files one after
/// another ([`layout::file_bytes`] apart), one per group it shades at once.
#[derive(Debug)]
pub struct LaneState {
    lanes: usize,
    copies: usize,
    words: Vec<u32>,
    /// Index of the aligned start in `words`.
    base: usize,
}

impl Clone for LaneState {
    fn clone(&self) -> LaneState {
        let mut out = LaneState::with_copies(self.lanes, self.copies);
        // The header and the state rows of each file: the rest is scratch
        // of one block's run, which no block reads before writing it.
        let file = layout::file_bytes(self.lanes) / 4;
        let len = layout::row_offset(layout::STATE_ROWS, self.lanes) as usize / 4;
        for copy in 0..self.copies {
            let (from, to) = (self.base + copy * file, out.base + copy * file);
            out.words[to..to + len].copy_from_slice(&self.words[from..from + len]);
        }
        out
    }
}

impl LaneState {
    /// A zeroed register file for `lanes` lanes.
    pub fn new(lanes: usize) -> LaneState {
        LaneState::with_copies(lanes, 1)
    }

    /// `copies` zeroed register files for `lanes` lanes, one after another.
    fn with_copies(lanes: usize, copies: usize) -> LaneState {
        let len = copies * layout::file_bytes(lanes) / 4;
        let words = vec![0u32; len + 16];
        let misalign = (words.as_ptr() as usize / 4) % 16;
        let base = (16 - misalign) % 16;
        LaneState {
            lanes,
            copies,
            words,
            base,
        }
    }

    /// Lanes per row.
    pub fn lanes(&self) -> usize {
        self.lanes
    }

    /// How many register files this holds.
    pub(crate) fn copies(&self) -> usize {
        self.copies
    }

    fn start(&self, row: usize) -> usize {
        self.base + layout::HEADER_BYTES / 4 + row * self.lanes
    }

    /// The bits of row `row` of file `copy`.
    pub(crate) fn copy_row(&self, copy: usize, row: usize) -> &[u32] {
        let at = self.start(row) + copy * layout::file_bytes(self.lanes) / 4;
        &self.words[at..at + self.lanes]
    }

    /// The bits of row `row` of file `copy`, mutably.
    pub(crate) fn copy_row_mut(&mut self, copy: usize, row: usize) -> &mut [u32] {
        let at = self.start(row) + copy * layout::file_bytes(self.lanes) / 4;
        &mut self.words[at..at + self.lanes]
    }

    /// The bits of row `row`, one per lane.
    pub fn row(&self, row: usize) -> &[u32] {
        let at = self.start(row);
        &self.words[at..at + self.lanes]
    }

    /// The bits of row `row`, mutably.
    pub fn row_mut(&mut self, row: usize) -> &mut [u32] {
        let at = self.start(row);
        &mut self.words[at..at + self.lanes]
    }

    fn header(&self, offset: i32) -> u32 {
        self.words[self.base + offset as usize / 4]
    }

    #[cfg_attr(
        not(any(target_arch = "x86_64", target_arch = "aarch64")),
        allow(dead_code)
    )]
    fn as_mut_ptr(&mut self) -> *mut u8 {
        self.words[self.base..].as_mut_ptr().cast()
    }

    /// The four rows of register `reg` of the file starting at row `base`,
    /// mutably.
    fn rows4_mut(&mut self, base: usize, reg: usize) -> &mut [u32] {
        let at = self.start(base + 4 * reg);
        let n = self.lanes;
        &mut self.words[at..at + 4 * n]
    }

    fn rows4_flat(&self, base: usize, reg: usize) -> &[u32] {
        let at = self.start(base + 4 * reg);
        &self.words[at..at + 4 * self.lanes]
    }

    /// Sets input `v{reg}` of lanes `0..values.len()` to `values[lane][reg]`.
    pub fn set_inputs(&mut self, reg: usize, values: &[[crate::Vec4; 16]]) {
        let lanes = self.lanes;
        let count = values.len().min(lanes);
        let rows = self.rows4_mut(layout::INPUT, reg);
        transpose::to_rows(rows, lanes, count, |lane| values[lane][reg]);
    }

    /// Copies output `o{reg}` of the lanes in `mask` to `out[lane][reg]`.
    pub fn outputs_to(&self, reg: usize, mask: u32, out: &mut [[crate::Vec4; 16]]) {
        let count = out.len().min(self.lanes);
        let rows = self.rows4_flat(layout::OUTPUT, reg);
        transpose::from_rows(rows, self.lanes, count, mask, |lane, v| out[lane][reg] = v);
    }

    /// Loads lanes `0..states.len()` from `states`, as `plan` says: the rows
    /// of the other lanes and registers keep whatever they held (no path
    /// reads them before writing them).
    pub(crate) fn load_states(&mut self, states: &[UnitState], plan: &StatePlan) {
        let lanes = self.lanes;
        let files = [
            (layout::INPUT, File::Input, plan.inputs),
            (layout::TEMP, File::Temp, plan.temps),
            (layout::OUTPUT, File::Output, plan.outputs),
        ];
        for (base, file, mask) in files {
            for n in (0..16).filter(|n| mask >> n & 1 != 0) {
                let rows = self.rows4_mut(base, n);
                transpose::states_to_rows(rows, lanes, states, file, n);
            }
        }
        if plan.small {
            for (lane, state) in states.iter().enumerate() {
                self.load_small(lane, state);
            }
        }
    }

    /// Stores the lanes of `mask` into `states[lane]`: the temporary, output,
    /// address register and flag components in `rows` (the rows their path
    /// wrote; the others keep the state's values).
    pub fn store_states(&self, states: &mut [UnitState], mask: u32, rows: &RowSet) {
        for (base, file) in [(layout::TEMP, File::Temp), (layout::OUTPUT, File::Output)] {
            if !rows.any_in(base, 64) {
                continue;
            }
            for n in 0..16 {
                let comps = rows.register(base, n);
                if comps != 0 {
                    let flat = self.rows4_flat(base, n);
                    transpose::rows_to_states(flat, self.lanes, states, mask, file, n, comps);
                }
            }
        }
        if !rows.any_in(layout::A0X, layout::STATE_ROWS - layout::A0X) {
            return;
        }
        let small = (layout::A0X..layout::STATE_ROWS).filter(|&r| rows.contains(r as u16));
        for row in small {
            for (lane, state) in states.iter_mut().enumerate() {
                if mask >> lane & 1 != 0 {
                    set_row(state, row, self.row(row)[lane]);
                }
            }
        }
    }

    /// Sets lane `lane` of input `v{reg}`.
    pub fn set_input(&mut self, lane: usize, reg: usize, value: crate::Vec4) {
        for (c, x) in value.iter().enumerate() {
            self.row_mut(layout::INPUT + 4 * reg + c)[lane] = x.to_bits();
        }
    }

    /// Lane `lane` of output `o{reg}`.
    pub fn output(&self, lane: usize, reg: usize) -> crate::Vec4 {
        std::array::from_fn(|c| f32::from_bits(self.row(layout::OUTPUT + 4 * reg + c)[lane]))
    }

    /// Sets every state row of lane `lane` from `state`.
    pub fn load_lane(&mut self, lane: usize, state: &UnitState) {
        let regs = [
            (layout::INPUT, &state.inputs),
            (layout::TEMP, &state.temps),
            (layout::OUTPUT, &state.outputs),
        ];
        for (base, file) in regs {
            for (n, reg) in file.iter().enumerate() {
                for (c, x) in reg.iter().enumerate() {
                    self.row_mut(base + 4 * n + c)[lane] = x.to_bits();
                }
            }
        }
        self.row_mut(layout::A0X)[lane] = state.a0[0] as u32;
        self.row_mut(layout::A0Y)[lane] = state.a0[1] as u32;
        self.row_mut(layout::AL)[lane] = state.al as u32;
        for f in 0..2 {
            self.row_mut(layout::CMP + f)[lane] = if state.cmp[f] { u32::MAX } else { 0 };
        }
    }

    fn load_small(&mut self, lane: usize, state: &UnitState) {
        self.row_mut(layout::A0X)[lane] = state.a0[0] as u32;
        self.row_mut(layout::A0Y)[lane] = state.a0[1] as u32;
        self.row_mut(layout::AL)[lane] = state.al as u32;
        for f in 0..2 {
            self.row_mut(layout::CMP + f)[lane] = if state.cmp[f] { u32::MAX } else { 0 };
        }
    }

    /// Copies lane `lane`'s state rows (inputs as given) into `state`.
    pub fn store_lane(&self, lane: usize, state: &mut UnitState) {
        let f = |row: usize| f32::from_bits(self.row(row)[lane]);
        for n in 0..16 {
            for c in 0..4 {
                state.inputs[n][c] = f(layout::INPUT + 4 * n + c);
                state.temps[n][c] = f(layout::TEMP + 4 * n + c);
                state.outputs[n][c] = f(layout::OUTPUT + 4 * n + c);
            }
        }
        state.a0 = [
            self.row(layout::A0X)[lane] as i32,
            self.row(layout::A0Y)[lane] as i32,
        ];
        state.al = self.row(layout::AL)[lane] as i32;
        state.cmp = [0, 1].map(|f| self.row(layout::CMP + f)[lane] != 0);
    }

    /// Copies the rows `rows` (all lanes) from `from`.
    pub fn copy_rows(&mut self, from: &LaneState, rows: &RowSet) {
        for (row, count) in rows.runs() {
            let src = from.start(row as usize);
            let dst = self.start(row as usize);
            let n = self.lanes * count as usize;
            self.words[dst..dst + n].copy_from_slice(&from.words[src..src + n]);
        }
    }
}

/// A program compiled for the wide engine: one function per basic block.
pub struct WideShader {
    width: Width,
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    region: ExecRegion,
    /// Code offset of each IR block's function (`None`: not compiled, handed over).
    entries: Vec<Option<usize>>,
    /// Code offset of each IR block's masked function (stores only in the
    /// lanes of the execution mask); empty where the backend has none.
    masked: Vec<Option<usize>>,
    /// Code offset of the F24 input conversion.
    prologue: Option<usize>,
    /// The optimised IR the blocks were lowered from.
    ir: Ir,
    /// Per block: rows read as it starts and rows it writes.
    facts: Vec<(RowSet, RowSet)>,
    /// Per instruction: the index of its block.
    block_at: Vec<u32>,
    /// Outputs some instruction writes (bit `n`: `o{n}`).
    outputs_written: u16,
    /// Temporaries some instruction writes.
    temps_written: u16,
    /// Rows some block reads as it starts.
    reads: RowSet,
    /// Rows some block writes.
    writes: RowSet,
    /// What a batch of independent states loads.
    plan: StatePlan,
    /// The batch kernel's code offset and the instructions it executes per
    /// vertex.
    #[cfg_attr(
        not(any(target_arch = "x86_64", target_arch = "aarch64")),
        allow(dead_code)
    )]
    kernel: Option<(usize, u64)>,
    /// The batch kernel for the vertex layout: its code offset.
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    vertex_kernel: Option<usize>,
    /// The batch kernel shading two groups per pass (in two register
    /// files): its code offset.
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    pair_kernel: Option<usize>,
    /// The vertex-layout kernel shading two groups per pass (in two
    /// register files): its code offset.
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    vertex_pair_kernel: Option<usize>,
    /// The rows the kernel's paths write.
    kernel_rows: RowSet,
    /// How every lane of a kernel stops (`End`, or `EndOfCode` for a program
    /// that runs past its last instruction).
    #[cfg_attr(
        not(any(target_arch = "x86_64", target_arch = "aarch64")),
        allow(dead_code)
    )]
    kernel_stop: Stop,
    /// Whether the vertex-layout kernel also runs `StatePolicy::Carry`
    /// batches ([`plan::carry_tracking`]).
    kernel_carries: bool,
    /// Where the vertex-layout kernel records the last writer of the rows
    /// some paths leave alone (for `Carry`).
    tracking: Option<plan::Tracking>,
    /// Outputs every lane's kernel path leaves equal to an input
    /// ([`codegen::copies`]; F32): the x86-64 vertex kernel moves them
    /// record to record and leaves their rows in the register file unset.
    output_copies: Vec<codegen::copies::OutputCopy>,
    /// Uniform sets on which running in lanes was measured not to pay
    /// (see [`batch::Verdicts`]).
    verdicts: batch::Verdicts,
}

impl std::fmt::Debug for WideShader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WideShader")
            .field("width", &self.width)
            .field("blocks", &self.entries.len())
            .finish()
    }
}

/// Signature of a block function: `(register file, uniforms) -> exit
/// condition lane mask`.
#[cfg(target_arch = "x86_64")]
type BlockFn = unsafe extern "sysv64" fn(*mut u8, *const Uniforms) -> u32;

/// Signature of the batch kernel: `(register file, uniforms, states, groups) -> 0`.
#[cfg(target_arch = "x86_64")]
type KernelFn = unsafe extern "sysv64" fn(*mut u8, *const Uniforms, *mut UnitState, usize) -> u32;

/// Groups a pass shades at most with this pair kernel: 2, or 1 without one.
fn groups_per_pass(pair_kernel: Option<usize>) -> usize {
    if pair_kernel.is_some() { 2 } else { 1 }
}

/// Signature of the vertex-layout batch kernel: `(register file, uniforms,
/// inputs, groups, outputs) -> 0`.
#[cfg(target_arch = "x86_64")]
type VertexKernelFn = unsafe extern "sysv64" fn(
    *mut u8,
    *const Uniforms,
    *const batch::Registers,
    usize,
    *mut batch::Registers,
) -> u32;

/// AArch64: a block function also takes the constant pool (the start of the
/// code region): `(register file, uniforms, pool) -> exit condition lane mask`.
#[cfg(target_arch = "aarch64")]
type BlockFn = unsafe extern "C" fn(*mut u8, *const Uniforms, *const u8) -> u32;

/// AArch64: `(register file, uniforms, pool, states, groups) -> 0`.
#[cfg(target_arch = "aarch64")]
type KernelFn =
    unsafe extern "C" fn(*mut u8, *const Uniforms, *const u8, *mut UnitState, usize) -> u32;

/// The wide code could not keep lanes independent (state policy `Carry`): a
/// register was read before the lane wrote it, or a lane had to be handed
/// over. The caller runs the vertices one after another instead.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NotIndependent;

/// Where the lanes of a run go when they stop.
pub(crate) trait LaneSink {
    /// The lanes `mask` stopped with `stop`; `file` holds their final state
    /// in the rows their path wrote (`rows`).
    fn finish(&mut self, mask: u32, file: &LaneState, stop: Stop, rows: &RowSet);

    /// Sets `state` to the state lane `lane` started from (after the entry
    /// conversion) and returns true, for a lane handed over to the
    /// interpreter; false when the register file was loaded with every row of
    /// the lane's state instead.
    fn start_state(&mut self, _lane: usize, _state: &mut UnitState) -> bool {
        false
    }

    /// Takes the lanes `mask`, whose group diverged beyond what running
    /// them in lanes pays, to run each on the single-vertex JIT from the
    /// state it started from (so the budget is the whole one again) and
    /// returns true; false when this sink cannot (the lanes stay wide).
    /// `rows`: the rows their path wrote in the register file so far.
    fn single_vertex(&mut self, _mask: u32, _rows: &RowSet) -> bool {
        false
    }

    /// Whether a stopped lane may report rows its own path did not write
    /// (those of other lanes it ran with after their paths met): true where
    /// every row of every lane holds the lane's starting value until written.
    fn merges_rows(&self) -> bool {
        false
    }
}

impl<F: FnMut(u32, &LaneState, Stop, &RowSet)> LaneSink for F {
    fn finish(&mut self, mask: u32, file: &LaneState, stop: Stop, rows: &RowSet) {
        self(mask, file, stop, rows)
    }
}

/// What a run needs besides the register file.
pub(crate) struct RunContext<'a> {
    /// Uniforms as the unit sees them (converted for the precision).
    pub uniforms: &'a Uniforms,
    /// The interpreter's invocation, for lanes handed over.
    pub invocation: &'a Invocation<'a>,
    /// Instruction budget per vertex.
    pub budget: u64,
    /// Entry point.
    pub entry: u32,
    /// State policy `Carry`: stop with [`NotIndependent`] where lanes would
    /// depend on the state they start from.
    pub carry: bool,
    /// The driver's work so far (for the caller's cost estimate).
    pub work: std::cell::Cell<DriverWork>,
}

/// What the block driver did: the block functions it called, the PICA
/// instructions those blocks hold, and the instructions the lanes executed
/// (a block counted once per active lane).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct DriverWork {
    pub calls: u64,
    pub instructions: u64,
    pub lane_instructions: u64,
}

impl RunContext<'_> {
    fn count_call(&self, len: u64, active: u32) {
        let mut work = self.work.get();
        work.calls += 1;
        work.instructions += len;
        work.lane_instructions += len * active.count_ones() as u64;
        self.work.set(work);
    }
}

/// A sub-group of a masked run: lanes on one path.
#[derive(Clone, Copy)]
struct Path {
    active: u32,
    /// Its flow state, and the most instructions one of its lanes executed
    /// (the budget check).
    progress: Progress,
    /// Rows its blocks wrote (with `merges_rows`, also those of the paths
    /// that joined it).
    written: RowSet,
}

/// A group of lanes still running.
struct Group {
    active: u32,
    progress: Progress,
    written: RowSet,
}

impl WideShader {
    /// Compiles `program` for `config` at `width`. Geometry shaders are not
    /// compiled (they keep the per-invocation path).
    pub fn compile(
        program: &Program,
        config: &ShaderConfig,
        width: Width,
    ) -> Result<WideShader, JitError> {
        if config.kind != ShaderKind::Vertex {
            return Err(JitError::Unsupported(
                "the wide engine shades vertex shaders only",
            ));
        }
        if !Width::available().contains(&width) {
            return Err(JitError::Unsupported(
                "this host lacks the wide width asked for",
            ));
        }
        super::host_support().map_err(JitError::Unsupported)?;
        let analysis = crate::analysis::analyse(program, config.entry, config.kind);
        let built = Ir::from_analysis(program, &analysis, config.kind, config.precision);
        let ir = ir::opt::optimize(&built);
        let f24 = config.precision == crate::Precision::F24;
        let blocks: Vec<lanes::LaneBlock> =
            ir.blocks.iter().map(|b| lanes::split(b, f24)).collect();
        let facts: Vec<(RowSet, RowSet)> = blocks.iter().map(|b| (b.reads, b.writes)).collect();
        let (mut reads, mut writes) = (RowSet::default(), RowSet::default());
        for b in &blocks {
            reads.union_with(&b.reads);
            writes.union_with(&b.writes);
        }
        let (mut outputs_written, mut temps_written) = (0u16, 0u16);
        for b in &blocks {
            for row in b.writes.rows() {
                let row = row as usize;
                if (layout::OUTPUT..layout::OUTPUT + 64).contains(&row) {
                    outputs_written |= 1 << ((row - layout::OUTPUT) / 4);
                }
                if (layout::TEMP..layout::TEMP + 64).contains(&row) {
                    temps_written |= 1 << ((row - layout::TEMP) / 4);
                }
            }
        }
        let registers_read = |base: usize| {
            (0..16).fold(0u16, |m, n| {
                m | u16::from(reads.register(base, n) != 0) << n
            })
        };
        let plan = StatePlan {
            inputs: program.inputs_read(),
            temps: registers_read(layout::TEMP),
            outputs: registers_read(layout::OUTPUT),
            small: (layout::A0X..layout::STATE_ROWS).any(|r| reads.contains(r as u16)),
        };
        let mut block_at = vec![0u32; program.len()];
        for (k, b) in ir.blocks.iter().enumerate() {
            for pc in b.start..=b.last {
                block_at[pc as usize] = k as u32;
            }
        }
        let kernel_plan = plan::kernel_steps(&ir, &block_at, config.entry).map(|(steps, stop)| {
            let mut store = plan::rows_written(&steps, &facts);
            let mut read_first = plan::rows_read_first(&steps, &facts);
            let registers_in = |base: usize| {
                (0..16).fold(0u16, |m, n| {
                    m | u16::from(read_first.register(base, n) != 0) << n
                })
            };
            let mut load = StatePlan {
                inputs: plan.inputs,
                temps: registers_in(layout::TEMP),
                outputs: registers_in(layout::OUTPUT),
                small: read_first.any_in(layout::A0X, layout::STATE_ROWS - layout::A0X),
            };
            // F24 entry conversion in the kernel: a converted register is
            // loaded if some component is read or survives the invocation,
            // and then comes out whole.
            let converted = if f24 {
                program.temps_converted_on_entry(config.entry)
            } else {
                0
            };
            for n in (0..16).filter(|n| converted >> n & 1 != 0) {
                if store.register(layout::TEMP, n) != 0xF || load.temps >> n & 1 != 0 {
                    load.temps |= 1 << n;
                    for c in 0..4 {
                        let row = (layout::TEMP + 4 * n + c) as u16;
                        store.insert(row);
                        read_first.insert(row);
                    }
                }
            }
            // Under `Carry` (see `plan::carry_tracking`).
            let carry = plan::carry_tracking(&steps, &blocks);
            KernelPlan {
                instructions: plan::instructions_bound(&steps, |k| {
                    ir.blocks[k].instrs.len() as u64
                }),
                carries: carry.is_some(),
                tracking: carry.flatten(),
                steps,
                convert_temps: converted & load.temps,
                stop,
                load,
                read_first,
                store,
            }
        });
        #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
        {
            let inputs = if f24 { program.inputs_read() } else { 0 };
            #[cfg(target_arch = "x86_64")]
            let code = super::x64::wide::compile(&blocks, inputs, width, kernel_plan.as_ref())?;
            #[cfg(target_arch = "aarch64")]
            let code = super::a64::wide::compile(&blocks, inputs, kernel_plan.as_ref())?;
            let (pair_kernel, vertex_kernel, vertex_pair_kernel) = (
                code.pair_kernel.filter(|_| code.kernel.is_some()),
                code.vertex_kernel.filter(|_| code.kernel.is_some()),
                code.vertex_pair_kernel.filter(|_| code.kernel.is_some()),
            );
            let output_copies = match &kernel_plan {
                // The vertex kernels' plan (as `lower_wide` gives them).
                // (F24: of the converted inputs.)
                Some(plan) => codegen::copies::output_copies(&plan.for_vertices(), &blocks),
                _ => Vec::new(),
            };
            let kernel_carries = kernel_plan.as_ref().is_some_and(|plan| plan.carries);
            let tracking = kernel_plan.as_ref().and_then(|plan| plan.tracking.clone());
            let kernel_plan_rows = kernel_plan.as_ref().map_or(RowSet::default(), |p| p.store);
            let kernel_stop = kernel_plan.as_ref().map_or(Stop::End, |p| p.stop);
            let kernel = code
                .kernel
                .zip(kernel_plan)
                .map(|(at, plan)| (at, plan.instructions));
            let region = ExecRegion::new(&code.bytes)?;
            Ok(WideShader {
                width,
                region,
                entries: code.entries,
                masked: code.masked_entries,
                prologue: code.prologue,
                ir,
                facts,
                block_at,
                outputs_written,
                temps_written,
                reads,
                writes,
                plan,
                kernel,
                pair_kernel,
                vertex_kernel,
                vertex_pair_kernel,
                kernel_rows: kernel_plan_rows,
                kernel_stop,
                kernel_carries,
                tracking,
                output_copies,
                verdicts: batch::Verdicts::default(),
            })
        }
        #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
        {
            let _ = (
                blocks,
                facts,
                ir,
                block_at,
                outputs_written,
                temps_written,
                reads,
                plan,
                kernel_plan,
            );
            Err(JitError::Unsupported(
                "no wide code generator for this host",
            ))
        }
    }

    /// The batch driver's remembered verdicts on whether lanes pay.
    pub(crate) fn verdicts(&self) -> &batch::Verdicts {
        &self.verdicts
    }

    /// The outputs some instruction of the program writes (bit `n`: `o{n}`);
    /// the others keep the value the invocation started with.
    pub fn outputs_written(&self) -> u16 {
        self.outputs_written
    }

    /// The temporaries some instruction of the program writes.
    pub fn temps_written(&self) -> u16 {
        self.temps_written
    }

    /// The machine code from the vertex-layout kernel's start (`pair`: the
    /// one shading two groups per pass) to the end of the shader's code,
    /// and that start's offset in it; `None` without that kernel.
    #[cfg(all(test, target_arch = "x86_64"))]
    pub(crate) fn vertex_kernel_code(&self, pair: bool) -> Option<(&[u8], usize)> {
        let at = if pair {
            self.vertex_pair_kernel
        } else {
            self.vertex_kernel
        }?;
        // SAFETY: the region holds `code_len()` bytes of code from
        // `as_ptr()`, readable for as long as `self` lives, and nothing
        // writes them once it is made executable.
        let code =
            unsafe { std::slice::from_raw_parts(self.region.as_ptr(), self.region.code_len()) };
        Some((&code[at..], at))
    }

    /// Whether the program has a vertex-layout batch kernel.
    pub(crate) fn has_vertex_kernel(&self) -> bool {
        self.vertex_kernel.is_some() && self.kernel.is_some()
    }

    /// The rows some block reads as it starts: the only temporary, address
    /// register and flag rows whose value before a run can matter to it.
    pub fn rows_read(&self) -> &RowSet {
        &self.reads
    }

    /// The rows some block writes (a lane handed over to the interpreter
    /// reports these as written).
    pub fn rows_written(&self) -> &RowSet {
        &self.writes
    }

    /// What a batch of independent states loads into the register file.
    pub(crate) fn state_plan(&self) -> &StatePlan {
        &self.plan
    }

    /// Groups the vertex-layout kernels shade per pass at most (1, or 2 with
    /// the pair kernel): the register files a call needs (see
    /// [`LaneState::copy_row`]).
    pub(crate) fn vertex_kernel_files(&self) -> usize {
        groups_per_pass(self.vertex_pair_kernel)
    }

    /// Groups the batch kernels shade per pass at most (1, or 2 with the
    /// pair kernel): the register files a call needs.
    pub(crate) fn kernel_files(&self) -> usize {
        groups_per_pass(self.pair_kernel)
    }

    /// The rows the batch kernel's paths write (the vertex-layout kernel's
    /// last register file holds the last lane's values of them after a call).
    pub(crate) fn kernel_rows(&self) -> &RowSet {
        &self.kernel_rows
    }

    /// How every lane a batch kernel shades stops.
    pub(crate) fn kernel_stop(&self) -> Stop {
        self.kernel_stop
    }

    /// The outputs the vertex kernel copies from inputs (their rows in the
    /// register file are not the lanes' values).
    pub(crate) fn output_copies(&self) -> &[codegen::copies::OutputCopy] {
        &self.output_copies
    }

    /// Whether the vertex-layout kernel runs `StatePolicy::Carry` batches too:
    /// no vertex reads a row an earlier one may have written (the rows some
    /// paths leave alone are tracked, and such outputs filled in per vertex:
    /// [`WideShader::carry_tracking`]).
    pub(crate) fn kernel_carries(&self) -> bool {
        self.kernel_carries && self.vertex_kernel.is_some()
    }

    /// Where the vertex-layout kernel records which lanes wrote the rows
    /// some paths leave alone (`None`: the last lane's rows are the state
    /// after a group).
    pub(crate) fn carry_tracking(&self) -> Option<&plan::Tracking> {
        self.tracking.as_ref()
    }

    /// Whether the program has a batch kernel (its flow from the entry point
    /// is blocks falling through, forward branches, `if`s and calls with
    /// straight parts, which the kernel runs under lane masks, and loops
    /// made of those; see `docs/semantics.md`):
    /// `run_batch` then shades its whole groups of states with one call of
    /// generated code ([`kernel_vertices`]).
    pub fn has_batch_kernel(&self) -> bool {
        self.kernel.is_some()
    }

    /// The width it was compiled for.
    pub fn width(&self) -> Width {
        self.width
    }

    /// The generated machine code (every block's function and the constant
    /// pool), for inspection with a disassembler.
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    pub fn code(&self) -> &[u8] {
        // SAFETY: the region is mapped read+execute and immutable for the life
        // of `self`; reading it is always allowed.
        unsafe { std::slice::from_raw_parts(self.region.as_ptr(), self.region.code_len()) }
    }

    /// Whether a block read before any write makes the lanes depend on the
    /// state they start from on every path (the entry block reads it): then
    /// state policy `Carry` never runs wide.
    pub fn carry_always_dependent(&self, entry: u32) -> bool {
        match self.ir.locate(entry) {
            Some((block, 0)) => {
                let index = self.ir.blocks.iter().position(|b| b.start == block.start);
                index.is_some_and(|k| self.facts[k].0 != RowSet::default())
            }
            _ => true,
        }
    }

    #[cfg(target_arch = "x86_64")]
    fn call(&self, offset: usize, state: &mut LaneState, uniforms: &Uniforms) -> u32 {
        assert_eq!(
            state.lanes(),
            self.width.lanes(),
            "a register file of this width"
        );
        // SAFETY: `offset` is the start of a function compiled with the
        // `BlockFn` signature into this region, which lives as long as `self`.
        let f: BlockFn =
            unsafe { std::mem::transmute::<*const u8, BlockFn>(self.region.as_ptr().add(offset)) };
        // SAFETY: the function reads and writes only the register file (rows
        // of `layout::ROWS` with this width's lane count, which `state` has)
        // and reads the uniforms; both outlive the call and nothing else
        // accesses them meanwhile.
        unsafe { f(state.as_mut_ptr(), uniforms) }
    }

    #[cfg(target_arch = "aarch64")]
    fn call(&self, offset: usize, state: &mut LaneState, uniforms: &Uniforms) -> u32 {
        assert_eq!(
            state.lanes(),
            self.width.lanes(),
            "a register file of this width"
        );
        let pool = self.region.as_ptr();
        // SAFETY: `offset` is the start of a function compiled with the
        // `BlockFn` signature into this region, which lives as long as `self`.
        let f: BlockFn = unsafe { std::mem::transmute::<*const u8, BlockFn>(pool.add(offset)) };
        // SAFETY: the function reads and writes only the register file (rows
        // of `layout::ROWS` with this width's lane count, which `state` has)
        // and reads the uniforms and the region's constant pool; all outlive
        // the call and nothing else accesses them meanwhile.
        unsafe { f(state.as_mut_ptr(), uniforms, pool) }
    }

    /// The kernel (`single`, or `pair` for whole pairs of groups) for `len`
    /// lanes and the groups it shades per pass; `None` when `len` is not
    /// whole groups or `file` lacks the register files.
    fn pick_kernel(
        &self,
        single: usize,
        pair: Option<usize>,
        len: usize,
        file: &LaneState,
    ) -> Option<(usize, usize)> {
        let lanes = self.width.lanes();
        let (offset, per_pass) = match pair {
            Some(pair) if len.is_multiple_of(2 * lanes) => (pair, 2),
            _ => (single, 1),
        };
        (len.is_multiple_of(lanes) && file.lanes() == lanes && file.copies() >= per_pass)
            .then_some((offset, per_pass))
    }

    /// Runs whole groups of states (`states.len()` is a multiple of the
    /// width) through the batch kernel, each from its own state (the kernel
    /// does the F24 entry conversion) to `end`, and leaves each with its
    /// final state; the last `padding` states are copies that pad a tail to
    /// a whole group (not counted as shaded). Two groups per pass when there
    /// is a pair kernel and the length is a multiple of two groups. False,
    /// with nothing done, when there is no kernel or `budget` does not cover
    /// it.
    pub(crate) fn run_kernel(
        &self,
        file: &mut LaneState,
        uniforms: &Uniforms,
        states: &mut [UnitState],
        budget: u64,
        padding: usize,
    ) -> bool {
        let Some((single, instructions)) = self.kernel else {
            return false;
        };
        let pair = self.pair_kernel;
        let Some((offset, per_pass)) = self.pick_kernel(single, pair, states.len(), file) else {
            return false;
        };
        if budget < instructions {
            return false;
        }
        let passes = states.len() / (per_pass * self.width.lanes());
        self.call_kernel(offset, file, uniforms, states, passes);
        let shaded = states.len().saturating_sub(padding);
        count_shaded(shaded as u32);
        KERNEL.with(|c| c.set(c.get() + shaded as u64));
        true
    }

    /// Runs whole groups of vertices (`inputs.len()` is a multiple of the
    /// width, `outputs` as long) through the vertex-layout batch kernel, each
    /// from `start` (entry conversion done) with its inputs (`v{n}` from
    /// `inputs` for every input the program reads: the caller checked its
    /// input mask covers them) to `end`; every output of `output_mask` goes
    /// to `outputs` (the lane's value where the kernel's path writes it, else
    /// `start`'s); the last `padding` vertices pad a tail to a whole group
    /// (not counted as shaded). Two groups per pass when there is a pair
    /// kernel and the length is a multiple of two groups. Returns the groups
    /// per pass (the last vertex's rows are in that register file of
    /// `file`), or `None`, with nothing done, when there is no kernel or
    /// `budget` does not cover it.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn run_vertex_kernel(
        &self,
        file: &mut LaneState,
        uniforms: &Uniforms,
        start: &UnitState,
        inputs: &[batch::Registers],
        outputs: &mut [batch::Registers],
        output_mask: u16,
        budget: u64,
        padding: usize,
    ) -> Option<usize> {
        let (Some(single), Some((_, instructions))) = (self.vertex_kernel, self.kernel) else {
            return None;
        };
        let pair = self.vertex_pair_kernel;
        let (offset, per_pass) = self.pick_kernel(single, pair, inputs.len(), file)?;
        if budget < instructions || inputs.len() != outputs.len() {
            return None;
        }
        let passes = inputs.len() / (per_pass * self.width.lanes());
        self.call_vertex_kernel(
            offset,
            file,
            uniforms,
            start,
            inputs,
            outputs,
            output_mask,
            passes,
        );
        let shaded = inputs.len().saturating_sub(padding);
        count_shaded(shaded as u32);
        KERNEL.with(|c| c.set(c.get() + shaded as u64));
        Some(per_pass)
    }

    /// Writes the vertex kernel's arguments that live in each register
    /// file's header (the output mask and the starting state's address) and
    /// returns the first file's start.
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    fn set_vertex_headers(
        &self,
        file: &mut LaneState,
        start: &UnitState,
        output_mask: u16,
    ) -> *mut u8 {
        let first = file.as_mut_ptr();
        for copy in 0..file.copies() {
            // SAFETY: `file` holds `copies()` register files of
            // `layout::file_bytes` bytes each from its 64-byte-aligned start;
            // each header is the first `layout::HEADER_BYTES` bytes of its
            // file, and `OUTPUT_MASK` and `START_STATE` are aligned slots
            // inside it that no other code uses during the kernel's call.
            unsafe {
                let header = first.add(copy * layout::file_bytes(self.width.lanes()));
                header
                    .add(layout::OUTPUT_MASK as usize)
                    .cast::<u32>()
                    .write(output_mask as u32);
                header
                    .add(layout::START_STATE as usize)
                    .cast::<*const UnitState>()
                    .write(start);
            }
        }
        first
    }

    #[cfg(target_arch = "x86_64")]
    #[allow(clippy::too_many_arguments)]
    fn call_vertex_kernel(
        &self,
        offset: usize,
        file: &mut LaneState,
        uniforms: &Uniforms,
        start: &UnitState,
        inputs: &[batch::Registers],
        outputs: &mut [batch::Registers],
        output_mask: u16,
        passes: usize,
    ) {
        let first = self.set_vertex_headers(file, start, output_mask);
        // SAFETY: `offset` is the start of the vertex-layout kernel, compiled
        // with the `VertexKernelFn` signature into this region, which lives
        // as long as `self`.
        let f: VertexKernelFn = unsafe {
            std::mem::transmute::<*const u8, VertexKernelFn>(self.region.as_ptr().add(offset))
        };
        // SAFETY: the kernel reads and writes the register files (this
        // width's rows, one per group of a pass: the caller checked `file`
        // has that many), reads the uniforms and `start`, reads `inputs` and
        // writes `outputs` (`passes` passes of whole groups are
        // `inputs.len()` records, and the caller checked `outputs` is as
        // long); all outlive the call and nothing else accesses them.
        unsafe {
            f(
                first,
                uniforms,
                inputs.as_ptr(),
                passes,
                outputs.as_mut_ptr(),
            )
        };
    }

    #[cfg(target_arch = "aarch64")]
    #[allow(clippy::too_many_arguments)]
    fn call_vertex_kernel(
        &self,
        offset: usize,
        file: &mut LaneState,
        uniforms: &Uniforms,
        start: &UnitState,
        inputs: &[batch::Registers],
        outputs: &mut [batch::Registers],
        output_mask: u16,
        groups: usize,
    ) {
        /// AArch64: `(register file, uniforms, pool, inputs, groups,
        /// outputs) -> 0` (one group per pass).
        type VertexKernelFn = unsafe extern "C" fn(
            *mut u8,
            *const Uniforms,
            *const u8,
            *const batch::Registers,
            usize,
            *mut batch::Registers,
        ) -> u32;
        let lanes = self.width.lanes();
        assert!(
            file.lanes() == lanes
                && inputs.len() == groups * lanes
                && outputs.len() == inputs.len()
        );
        let header = self.set_vertex_headers(file, start, output_mask);
        let pool = self.region.as_ptr();
        // SAFETY: `offset` is the start of the vertex-layout kernel, compiled
        // with the `VertexKernelFn` signature into this region, which lives
        // as long as `self`.
        let f: VertexKernelFn =
            unsafe { std::mem::transmute::<*const u8, VertexKernelFn>(pool.add(offset)) };
        // SAFETY: the kernel reads and writes the first register file (this
        // width's rows, which `file` has), reads the uniforms, the region's
        // constant pool and `start`, reads `inputs` and writes `outputs`
        // (`groups` whole groups of records each, as asserted); all outlive
        // the call and nothing else accesses them meanwhile.
        unsafe {
            f(
                header,
                uniforms,
                pool,
                inputs.as_ptr(),
                groups,
                outputs.as_mut_ptr(),
            )
        };
    }

    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    #[allow(clippy::too_many_arguments)]
    fn call_vertex_kernel(
        &self,
        _offset: usize,
        _file: &mut LaneState,
        _uniforms: &Uniforms,
        _start: &UnitState,
        _inputs: &[batch::Registers],
        _outputs: &mut [batch::Registers],
        _output_mask: u16,
        _passes: usize,
    ) {
        unreachable!("no wide code exists on this host")
    }

    #[cfg(target_arch = "x86_64")]
    fn call_kernel(
        &self,
        offset: usize,
        file: &mut LaneState,
        uniforms: &Uniforms,
        states: &mut [UnitState],
        passes: usize,
    ) {
        let lanes = self.width.lanes();
        let per_pass = states.len() / lanes / passes.max(1);
        assert!(
            file.lanes() == lanes
                && file.copies() >= per_pass
                && states.len() == passes * per_pass * lanes
        );
        // SAFETY: `offset` is the start of a batch kernel shading `per_pass`
        // groups per pass, compiled with the `KernelFn` signature into this
        // region, which lives as long as `self`.
        let f: KernelFn =
            unsafe { std::mem::transmute::<*const u8, KernelFn>(self.region.as_ptr().add(offset)) };
        // SAFETY: the kernel reads and writes the register files (this
        // width's rows, one per group of a pass, which `file` has), reads the
        // uniforms, and reads and writes `UnitState` fields of
        // `states[0..passes * per_pass * W]` (that many exist, as asserted);
        // all outlive the call and nothing else accesses them.
        unsafe { f(file.as_mut_ptr(), uniforms, states.as_mut_ptr(), passes) };
    }

    #[cfg(target_arch = "aarch64")]
    fn call_kernel(
        &self,
        offset: usize,
        file: &mut LaneState,
        uniforms: &Uniforms,
        states: &mut [UnitState],
        groups: usize,
    ) {
        let lanes = self.width.lanes();
        assert!(file.lanes() == lanes && states.len() == groups * lanes);
        let pool = self.region.as_ptr();
        // SAFETY: `offset` is the start of the batch kernel, compiled with
        // the `KernelFn` signature into this region, which lives as long as
        // `self`.
        let f: KernelFn = unsafe { std::mem::transmute::<*const u8, KernelFn>(pool.add(offset)) };
        // SAFETY: the kernel reads and writes the register file (this
        // width's rows, which `file` has), reads the uniforms and the
        // region's constant pool, and reads and writes `UnitState` fields of
        // `states[0..groups * W]` (that many exist, as asserted); all outlive
        // the call and nothing else accesses them.
        unsafe {
            f(
                file.as_mut_ptr(),
                uniforms,
                pool,
                states.as_mut_ptr(),
                groups,
            )
        };
    }

    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    fn call_kernel(
        &self,
        _offset: usize,
        _file: &mut LaneState,
        _uniforms: &Uniforms,
        _states: &mut [UnitState],
    ) {
        unreachable!("no wide code exists on this host")
    }

    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    fn call(&self, _offset: usize, _state: &mut LaneState, _uniforms: &Uniforms) -> u32 {
        unreachable!("no wide code exists on this host")
    }

    /// Runs the lanes `active` of `state` (their registers loaded, the F24
    /// entry conversion of temporaries done) until each stops; `finish` receives
    /// each set of lanes that stopped together, the register file holding
    /// their final state, their stop and the rows their path wrote.
    pub(crate) fn run(
        &self,
        state: &mut LaneState,
        active: u32,
        cx: &RunContext<'_>,
        finish: &mut dyn LaneSink,
    ) -> Result<(), NotIndependent> {
        if let Some(prologue) = self.prologue {
            self.call(prologue, state, cx.uniforms);
        }
        count_shaded(active.count_ones());
        if !self.masked.is_empty() {
            return self.run_masked(state, active, cx, finish);
        }
        let mut group = Group {
            active,
            progress: Progress {
                flow: FlowState::at(cx.entry),
                ..Progress::default()
            },
            written: RowSet::default(),
        };
        self.run_group(state, &mut group, cx, finish)
    }

    /// [`WideShader::run`] with execution masks: the lanes are split into
    /// sub-groups of one path each (one program counter and flow state), in
    /// one register file. The sub-group with the lowest program counter runs
    /// next, its blocks' stores kept in its own lanes only, so lanes that
    /// went different ways meet again where their paths join (the end of an
    /// `if`, a forward jump's target) and go on as one sub-group.
    fn run_masked(
        &self,
        lanes: &mut LaneState,
        active: u32,
        cx: &RunContext<'_>,
        finish: &mut dyn LaneSink,
    ) -> Result<(), NotIndependent> {
        let merges_rows = finish.merges_rows();
        // Instructions each lane executed.
        let mut executed = [0u64; 32];
        let mut current = Path {
            active,
            progress: Progress {
                flow: FlowState::at(cx.entry),
                executed: 0,
            },
            written: RowSet::default(),
        };
        // The other sub-groups (no allocation unless lanes diverge).
        let mut waiting: Vec<Path> = Vec::new();
        loop {
            let pc = current.progress.flow.pc;
            let stopped = 'run: {
                let Some(&k) = self.block_at.get(pc as usize) else {
                    break 'run Some(Stop::EndOfCode);
                };
                let k = k as usize;
                let block = &self.ir.blocks[k];
                let remaining = cx.budget.saturating_sub(current.progress.executed);
                let alone = waiting.is_empty();
                let entry = if alone {
                    self.entries[k]
                } else {
                    self.masked[k]
                };
                let whole = pc == block.start && remaining >= block.instrs.len() as u64;
                let (Some(offset), true) = (entry, whole) else {
                    if cx.carry {
                        return Err(NotIndependent);
                    }
                    self.hand_over_path(lanes, &current, &executed, cx, finish);
                    current.active = 0;
                    break 'run None;
                };
                if cx.carry && !self.facts[k].0.is_subset(&current.written) {
                    return Err(NotIndependent);
                }
                if !alone {
                    for (lane, bits) in lanes.row_mut(layout::PREDICATE).iter_mut().enumerate() {
                        *bits = if current.active >> lane & 1 != 0 {
                            u32::MAX
                        } else {
                            0
                        };
                    }
                }
                let mask = self.call(offset, lanes, cx.uniforms);
                let len = block.instrs.len() as u64;
                cx.count_call(len, current.active);
                current.progress.executed += len;
                let mut left = current.active;
                while left != 0 {
                    executed[left.trailing_zeros() as usize] += len;
                    left &= left - 1;
                }
                current.written.union_with(&self.facts[k].1);
                if block.exit == Exit::Next && !block.stack_check {
                    current.progress.flow.pc = block.last + 1;
                    break 'run None;
                }
                let conditional = match block.exit {
                    Exit::Jump { .. } | Exit::If { .. } => true,
                    Exit::Call { taken, .. } | Exit::Break { taken } => taken.is_some(),
                    _ => false,
                };
                let taken = mask & current.active;
                if conditional && taken != 0 && taken != current.active {
                    // The lanes diverge: those that did not take the branch
                    // wait as a sub-group of their own.
                    let mut other = Path {
                        active: current.active & !taken,
                        ..current
                    };
                    current.active = taken;
                    // Past a few paths at once, a side of a few lanes goes
                    // to the single-vertex JIT: every path costs a whole
                    // group's work per block.
                    let few = if other.active.count_ones() < taken.count_ones() {
                        other.active
                    } else {
                        taken
                    };
                    let alone = waiting.len() + 2 > MAX_PATHS
                        && few.count_ones() <= few_lanes(lanes.lanes())
                        && finish.single_vertex(few, &current.written);
                    if !(alone && few == other.active) {
                        let active = other.active;
                        match self.apply_exit(k, false, lanes, &mut other.progress, active) {
                            Ok(()) => waiting.push(other),
                            Err(stop) => finish.finish(active, lanes, stop, &other.written),
                        }
                    }
                    if alone && few == taken {
                        current.active = 0;
                        break 'run None;
                    }
                }
                let active = current.active;
                self.apply_exit(k, taken != 0, lanes, &mut current.progress, active)
                    .err()
            };
            if let Some(stop) = stopped {
                finish.finish(current.active, lanes, stop, &current.written);
                current.active = 0;
            }
            // Sub-groups at the same place go on as one.
            if current.active != 0 && !waiting.is_empty() {
                waiting.retain(|path| {
                    let same = path.progress.flow == current.progress.flow
                        && (merges_rows || path.written == current.written);
                    if same {
                        current.active |= path.active;
                        current.written.union_with(&path.written);
                        let most = current.progress.executed.max(path.progress.executed);
                        current.progress.executed = most;
                    }
                    !same
                });
            }
            // The lowest program counter runs next.
            let lowest = waiting
                .iter()
                .enumerate()
                .min_by_key(|(_, path)| path.progress.flow.pc)
                .map(|(at, path)| (at, path.progress.flow.pc));
            match lowest {
                Some((at, pc)) if current.active == 0 || pc < current.progress.flow.pc => {
                    let next = waiting.swap_remove(at);
                    if current.active != 0 {
                        waiting.push(current);
                    }
                    current = next;
                }
                None if current.active == 0 => return Ok(()),
                _ => {}
            }
        }
    }

    /// Finishes each lane of `path` on the interpreter from the path's flow
    /// state and the lane's instruction count.
    fn hand_over_path(
        &self,
        lanes: &mut LaneState,
        path: &Path,
        executed: &[u64; 32],
        cx: &RunContext<'_>,
        finish: &mut dyn LaneSink,
    ) {
        for lane in (0..lanes.lanes()).filter(|lane| path.active >> lane & 1 != 0) {
            let group = Group {
                active: 1 << lane,
                progress: Progress {
                    flow: path.progress.flow,
                    executed: executed[lane],
                },
                written: path.written,
            };
            self.hand_over(lanes, &group, cx, finish);
        }
    }

    /// [`WideShader::run`] where the program has no masked functions (no
    /// decision can differ between its lanes): the lanes run as one group.
    fn run_group(
        &self,
        lanes: &mut LaneState,
        group: &mut Group,
        cx: &RunContext<'_>,
        finish: &mut dyn LaneSink,
    ) -> Result<(), NotIndependent> {
        loop {
            let pc = group.progress.flow.pc;
            let Some(&k) = self.block_at.get(pc as usize) else {
                finish.finish(group.active, lanes, Stop::EndOfCode, &group.written);
                return Ok(());
            };
            let k = k as usize;
            let block = &self.ir.blocks[k];
            let first = pc - block.start;
            let remaining = cx.budget.saturating_sub(group.progress.executed);
            let entry = self.entries[k];
            let whole = first == 0 && remaining >= block.instrs.len() as u64;
            let (Some(offset), true) = (entry, whole) else {
                if cx.carry {
                    return Err(NotIndependent);
                }
                self.hand_over(lanes, group, cx, finish);
                return Ok(());
            };
            if cx.carry && !self.facts[k].0.is_subset(&group.written) {
                return Err(NotIndependent);
            }
            let mask = self.call(offset, lanes, cx.uniforms);
            cx.count_call(block.instrs.len() as u64, group.active);
            group.progress.executed += block.instrs.len() as u64;
            group.written.union_with(&self.facts[k].1);
            if block.exit == Exit::Next && !block.stack_check {
                group.progress.flow.pc = block.last + 1;
                continue;
            }
            let conditional = match block.exit {
                Exit::Jump { .. } | Exit::If { .. } => true,
                Exit::Call { taken, .. } | Exit::Break { taken } => taken.is_some(),
                _ => false,
            };
            let taken_lanes = mask & group.active;
            if conditional && taken_lanes != 0 && taken_lanes != group.active {
                // Lanes diverge only where the backend has masked functions
                // (`run_masked`); without them the register file cannot hold
                // two paths, so each lane finishes on the interpreter.
                if cx.carry {
                    return Err(NotIndependent);
                }
                self.finish_lanes_apart(k, taken_lanes, lanes, group, cx, finish);
                return Ok(());
            }
            let taken = taken_lanes != 0;
            if let Err(stop) = self.apply_exit(k, taken, lanes, &mut group.progress, group.active) {
                finish.finish(group.active, lanes, stop, &group.written);
                return Ok(());
            }
        }
    }

    /// Applies block `k`'s exit lane by lane (`taken_lanes` took it) and
    /// finishes each lane of `group` on the interpreter from there.
    fn finish_lanes_apart(
        &self,
        k: usize,
        taken_lanes: u32,
        lanes: &mut LaneState,
        group: &Group,
        cx: &RunContext<'_>,
        finish: &mut dyn LaneSink,
    ) {
        for lane in (0..lanes.lanes()).filter(|lane| group.active >> lane & 1 != 0) {
            let mut alone = Group {
                active: 1 << lane,
                progress: group.progress,
                written: group.written,
            };
            let taken = taken_lanes >> lane & 1 != 0;
            match self.apply_exit(k, taken, lanes, &mut alone.progress, alone.active) {
                Ok(()) => self.hand_over(lanes, &alone, cx, finish),
                Err(stop) => finish.finish(alone.active, lanes, stop, &alone.written),
            }
        }
    }

    /// Applies block `k`'s exit (its condition `taken`) and chooses the next PC.
    fn apply_exit(
        &self,
        k: usize,
        taken: bool,
        lanes: &mut LaneState,
        progress: &mut Progress,
        active: u32,
    ) -> Result<(), Stop> {
        let block = &self.ir.blocks[k];
        let (count, increment) = (
            lanes.header(layout::LOOP_COUNT),
            lanes.header(layout::LOOP_INCREMENT),
        );
        let int = |v: ir::Value| match block.exit {
            Exit::Loop { count: c, .. } if c == v => count,
            _ => increment,
        };
        let jump = ir::eval::apply_exit(&block.exit, &|_| taken, &int, progress, &mut |_| {
            unreachable!("vertex shaders do not emit")
        })?;
        let flow = &mut progress.flow;
        flow.pc = if block.stack_check {
            // `aL` changes by the same increment in every active lane.
            let mut delta = 0i32;
            let next = flow.advance(block.last, jump, &mut delta);
            if delta != 0 {
                for (lane, al) in lanes.row_mut(layout::AL).iter_mut().enumerate() {
                    if active >> lane & 1 != 0 {
                        *al = (*al as i32).wrapping_add(delta) as u32;
                    }
                }
            }
            next
        } else {
            jump.unwrap_or(block.last + 1)
        };
        Ok(())
    }

    /// Finishes each lane of `group` on the interpreter from the group's progress.
    fn hand_over(
        &self,
        lanes: &mut LaneState,
        group: &Group,
        cx: &RunContext<'_>,
        finish: &mut dyn LaneSink,
    ) {
        let mut unit = UnitState::default();
        for lane in 0..lanes.lanes() {
            if group.active >> lane & 1 == 0 {
                continue;
            }
            if finish.start_state(lane, &mut unit) {
                // The rows this group's path wrote are the lane's; the others
                // are still the state it started from.
                for row in group.written.rows() {
                    set_row(&mut unit, row as usize, lanes.row(row as usize)[lane]);
                }
            } else {
                lanes.store_lane(lane, &mut unit);
            }
            let mut progress = group.progress;
            let stop = cx.invocation.run(&mut unit, &mut (), &mut progress);
            super::frame::count_rust_call();
            lanes.load_lane(lane, &unit);
            // The interpreter may have written any register the program writes.
            finish.finish(1 << lane, lanes, stop, &self.writes);
        }
    }
}

/// Most paths (sub-groups of lanes at different places) a masked run keeps
/// before it hands sides of a few lanes to the single-vertex JIT.
const MAX_PATHS: usize = 3;

/// Most lanes of a diverging side that go to the single-vertex JIT instead
/// of on in lanes: a quarter of the group. (Measured with `pica-jit bench`
/// on the branchy corpus shaders: a group block costs about two to three
/// single-vertex blocks, plus the driver's work between blocks.)
fn few_lanes(lanes: usize) -> u32 {
    (lanes / 4).max(1) as u32
}

/// Sets the state register component of wide-register-file row `row`.
pub(crate) fn set_row(state: &mut UnitState, row: usize, bits: u32) {
    let f = f32::from_bits(bits);
    match row {
        r if r < layout::CONVERTED => state.inputs[r / 4][r % 4] = f,
        r if r < layout::TEMP => {}
        r if r < layout::OUTPUT => state.temps[(r - layout::TEMP) / 4][r % 4] = f,
        r if r < layout::A0X => state.outputs[(r - layout::OUTPUT) / 4][r % 4] = f,
        layout::A0X => state.a0[0] = bits as i32,
        layout::A0Y => state.a0[1] = bits as i32,
        layout::AL => state.al = bits as i32,
        r if r < layout::STATE_ROWS => state.cmp[r - layout::CMP] = bits != 0,
        _ => {}
    }
}

#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use super::*;
    use crate::shbin::Shbin;

    /// The default shader's batch kernels are small enough to shade two
    /// groups per pass at every width in F32; a pass of two groups gives the
    /// bits two passes of one group give, and the vertex layout's leaves the
    /// last vertex's rows in the second register file.
    #[test]
    fn small_vertex_kernels_shade_two_groups_per_pass() {
        let shbin = Shbin::parse(crate::DEFAULT_SHADER).expect("parses");
        let dvle = &shbin.dvles[0];
        let program =
            Program::new(shbin.dvlp.code.clone(), shbin.dvlp.descriptors.clone()).expect("loads");
        let config = ShaderConfig {
            entry: dvle.main,
            precision: crate::Precision::F32,
            ..Default::default()
        };
        let mut uniforms = Uniforms::default();
        for (n, f) in uniforms.f.iter_mut().enumerate() {
            *f = std::array::from_fn(|c| ((n * 4 + c) as f32 * 0.37).sin());
        }
        uniforms.apply_constants(&dvle.constants);
        let start = UnitState::default();
        for width in Width::available() {
            let lanes = width.lanes();
            let wide = WideShader::compile(&program, &config, width).expect("compiles");
            assert!(
                wide.vertex_pair_kernel.is_some(),
                "{width:?}: a pair kernel"
            );
            let inputs: Vec<batch::Registers> = (0..2 * lanes)
                .map(|k| {
                    std::array::from_fn(|r| {
                        std::array::from_fn(|c| ((k * 64 + r * 4 + c) as f32 * 0.731).sin())
                    })
                })
                .collect();
            let mut paired = vec![[[0.0f32; 4]; 16]; inputs.len()];
            let mut file = LaneState::with_copies(lanes, 2);
            let ran = wide.run_vertex_kernel(
                &mut file,
                &uniforms,
                &start,
                &inputs,
                &mut paired,
                0xffff,
                u64::MAX,
                0,
            );
            assert_eq!(ran, Some(2), "{width:?}: two groups per pass");
            let last_pos: Vec<u32> = (0..4)
                .map(|c| file.copy_row(1, layout::OUTPUT + c)[lanes - 1])
                .collect();
            let mut single = vec![[[-7.5f32; 4]; 16]; inputs.len()];
            for (ins, outs) in inputs.chunks(lanes).zip(single.chunks_mut(lanes)) {
                let ran = wide.run_vertex_kernel(
                    &mut file,
                    &uniforms,
                    &start,
                    ins,
                    outs,
                    0xffff,
                    u64::MAX,
                    0,
                );
                assert_eq!(ran, Some(1), "{width:?}: one group per pass");
            }
            let bits = |v: &[batch::Registers]| -> Vec<u32> {
                v.iter().flatten().flatten().map(|x| x.to_bits()).collect()
            };
            assert_eq!(bits(&paired), bits(&single), "{width:?}");
            let expected: Vec<u32> = single[2 * lanes - 1][0]
                .iter()
                .map(|x| x.to_bits())
                .collect();
            assert_eq!(last_pos, expected, "{width:?}: the last vertex's o0 rows");
            // The `UnitState` kernel likewise.
            assert!(wide.pair_kernel.is_some(), "{width:?}: a pair kernel");
            let states: Vec<UnitState> = inputs
                .iter()
                .map(|v| UnitState {
                    inputs: *v,
                    ..UnitState::default()
                })
                .collect();
            let mut paired = states.clone();
            assert!(wide.run_kernel(&mut file, &uniforms, &mut paired, u64::MAX, 0));
            let mut single = states.clone();
            for group in single.chunks_mut(lanes) {
                assert!(wide.run_kernel(&mut file, &uniforms, group, u64::MAX, 0));
            }
            let state_bits = |v: &[UnitState]| -> Vec<u64> {
                v.iter()
                    .flat_map(|s| {
                        let floats = s.temps.iter().chain(&s.outputs).flatten();
                        let ints = s.a0.iter().chain([&s.al]).map(|&i| i as u32 as u64);
                        floats
                            .map(|x| x.to_bits() as u64)
                            .chain(ints)
                            .chain(s.cmp.map(u64::from))
                    })
                    .collect()
            };
            assert_ne!(state_bits(&paired), state_bits(&states), "states shaded");
            assert_eq!(
                state_bits(&paired),
                state_bits(&single),
                "{width:?}: states"
            );
        }
    }

    /// A program run as one group (no masked functions) whose lanes still
    /// diverge finishes each lane on the interpreter from the decision:
    /// every lane ends with the interpreter's bits, its stop and its budget.
    #[test]
    fn diverging_lanes_without_masked_functions_finish_apart_exactly() {
        let source = "
            .constf one(1.0, 2.0, 3.0, 4.0)
            .out o0 position
            .out o1 color
            .proc main
                cmp one, gt, gt, v0
                jmpc !cmp.x, big
                mul r0, v0, one
                add r0, r0, r0
                mov o0, r0
                mov o1, one
                end
            big:
                dp4 r1, v0, one
                mov o0, r1
                mov o1, v0
                end
            .end
        ";
        let shbin = crate::asm::assemble_str("diverge.pica", source).expect("assembles");
        let dvle = &shbin.dvles[0];
        let program =
            Program::new(shbin.dvlp.code.clone(), shbin.dvlp.descriptors.clone()).expect("loads");
        let mut uniforms = Uniforms::default();
        uniforms.apply_constants(&dvle.constants);
        for precision in [crate::Precision::F32, crate::Precision::F24] {
            for budget in [u64::MAX, 4] {
                let config = ShaderConfig {
                    entry: dvle.main,
                    precision,
                    budget,
                    ..Default::default()
                };
                for width in Width::available() {
                    let mut wide = WideShader::compile(&program, &config, width).expect("compiles");
                    assert!(!wide.masked.is_empty(), "{width:?}: lanes may diverge");
                    // The backend without masked functions this path is for.
                    wide.masked.clear();
                    wide.kernel = None;
                    wide.pair_kernel = None;
                    let lanes = width.lanes();
                    let start: Vec<UnitState> = (0..3 * lanes)
                        .map(|k| {
                            let mut state = UnitState::default();
                            let x = if k % 3 == 0 { 0.25 } else { 1.5 + k as f32 };
                            state.inputs[0] = [x, -0.5 * k as f32, 7.0, 1.0];
                            state
                        })
                        .collect();
                    let mut expected = start.clone();
                    let expected_stops: Vec<Stop> = expected
                        .iter_mut()
                        .map(|s| crate::interp::run(&program, &config, &uniforms, s, &mut ()))
                        .collect();
                    let mut got = start.clone();
                    let was = force_lanes(true);
                    let calls = crate::jit::frame::rust_calls();
                    let stops = batch::run_states(
                        &wide,
                        &program,
                        &config,
                        &uniforms,
                        &mut got,
                        &mut |_| panic!("no single-vertex JIT here"),
                    );
                    force_lanes(was);
                    assert!(
                        crate::jit::frame::rust_calls() > calls,
                        "{width:?}: lanes finished on the interpreter"
                    );
                    assert_eq!(stops, expected_stops, "{precision:?} {width:?} {budget}");
                    for (k, (g, e)) in got.iter().zip(&expected).enumerate() {
                        let bits = |s: &UnitState| -> Vec<u32> {
                            s.outputs
                                .iter()
                                .chain(&s.temps)
                                .flatten()
                                .map(|x| x.to_bits())
                                .collect()
                        };
                        assert_eq!(
                            bits(g),
                            bits(e),
                            "{precision:?} {width:?} {budget} state {k}"
                        );
                        assert_eq!(g.cmp, e.cmp, "state {k}");
                    }
                }
            }
        }
    }
}
