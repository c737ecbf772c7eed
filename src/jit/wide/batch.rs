//! Batches on the wide engine: groups of `W` vertices transposed into the
//! wide register file and out of it, tails included, under each state policy.

use super::lanes::RowSet;
use super::{LaneSink, LaneState, NotIndependent, RunContext, WideShader, layout, set_row};
use crate::interp::{Invocation, enter};
use crate::machine::{ShaderConfig, Stop};
use crate::program::Program;
use crate::state::{Uniforms, UnitState};

/// One vertex's registers (`v0`–`v15` or `o0`–`o15`).
pub(crate) type Registers = [crate::Vec4; 16];

fn bits(mask: u16) -> impl Iterator<Item = usize> {
    (0..16).filter(move |n| mask >> n & 1 != 0)
}

fn active(n: usize) -> u32 {
    if n >= 32 { u32::MAX } else { (1u32 << n) - 1 }
}

/// Runs one invocation per state (each from its own state, left with its
/// final state), as [`crate::Shader::run_batch`] promises; `uniforms` are
/// converted for the shader's precision. Where lanes do not pay (the probe
/// groups' verdict, see [`lanes_pay`]), the other states go one at a time
/// through `sequential` (the single-vertex JIT).
pub(crate) fn run_states(
    wide: &WideShader,
    program: &Program,
    config: &ShaderConfig,
    uniforms: &Uniforms,
    states: &mut [UnitState],
    sequential: &mut impl FnMut(&mut UnitState) -> Stop,
) -> Vec<Stop> {
    let lanes = wide.width().lanes();
    let invocation = Invocation::new(program, config, uniforms);
    let cx = RunContext {
        uniforms,
        invocation: &invocation,
        budget: config.budget,
        entry: config.entry,
        carry: false,
        work: Default::default(),
    };
    let mut stops = vec![Stop::End; states.len()];
    // Only registers some path reads before writing them go in (a lane handed
    // over to the interpreter starts from its own state plus the rows its
    // group wrote); only the components each lane's path wrote come out (the
    // others keep their values).
    let plan = *wide.state_plan();
    let converted = config.precision == crate::Precision::F24
        && program.temps_converted_on_entry(config.entry) != 0;
    with_files(lanes, wide.kernel_files(), |file| {
        // Whole groups in one kernel call where the program is straight
        // (every lane then ends at `end`; the kernel converts on entry):
        // whole passes of the pair kernel, then one more group where one is
        // left; the rest group by group.
        let pass = wide.kernel_files() * lanes;
        let pairs = states.len() / pass * pass;
        let whole = states.len() / lanes * lanes;
        let mut done = 0;
        for part in [0..pairs, pairs..whole] {
            if done == part.start
                && !part.is_empty()
                && wide.run_kernel(file, uniforms, &mut states[part.clone()], config.budget, 0)
            {
                done = part.end;
            }
        }
        // The tail as one group padded with copies of its last state (lanes
        // are independent: the copies only repeat its results).
        let tail = states.len() - whole;
        if done == whole && tail > 0 {
            let mut padded: Vec<UnitState> = (0..lanes)
                .map(|k| states[whole + k.min(tail - 1)].clone())
                .collect();
            if wide.run_kernel(file, uniforms, &mut padded, config.budget, lanes - tail) {
                for (state, result) in states[whole..].iter_mut().zip(padded) {
                    *state = result;
                }
                done = states.len();
            }
        }
        // Every lane a kernel shaded stopped the same way.
        stops[..done].fill(wide.kernel_stop());
        // The rest group by group, unless lanes were found not to pay with
        // these uniforms (then one at a time, as after the probe groups).
        let key = verdict_key(uniforms, false);
        let len = states.len();
        let mut from = if wide.verdicts().lanes_lose(key) {
            done
        } else {
            len
        };
        let f24 = config.precision == crate::Precision::F24;
        let rest = states[done..]
            .chunks_mut(lanes)
            .zip(stops[done..].chunks_mut(lanes));
        for (g, (chunk, stops)) in rest.enumerate() {
            if from < len {
                break;
            }
            if converted {
                for state in chunk.iter_mut() {
                    enter(config.precision, program, config.entry, state);
                }
            }
            file.load_states(chunk, &plan);
            let mut sink = StatesSink {
                states: chunk,
                stops,
            };
            let result = wide.run(file, active(sink.states.len()), &cx, &mut sink);
            debug_assert_eq!(result, Ok(()), "independent lanes never fall back");
            if g + 1 >= PROBE_GROUPS && !lanes_pay(cx.work.get(), g + 1, lanes, f24) {
                wide.verdicts().remember(key);
                from = (done + (g + 1) * lanes).min(len);
            }
        }
        super::count_handed_over(len - from);
        for (state, stop) in states[from..].iter_mut().zip(&mut stops[from..]) {
            *stop = sequential(state);
        }
    });
    stops
}

/// Groups of a `StatePolicy::Reset` batch that run in lanes before the
/// driver's work decides whether the rest do.
const PROBE_GROUPS: usize = 2;

/// Whether `groups` groups of `lanes` lanes cost less in lanes (the block
/// driver's `work`) than their lanes would one at a time on the
/// single-vertex JIT, in precision `f24` or F32. The weights are x86-64
/// instructions, fitted to callgrind counts of `run_vertices` (the block
/// driver forced) and of `Shader::run` per vertex on the four branchy
/// shaders of issue 19 at 4 and 8 lanes: per block call (the call, the
/// floating-point environment switch, the exit, the scheduling), per PICA
/// instruction over a whole group, per vertex and per group of
/// transposition, finishing and restoring rows; and a single-vertex
/// invocation's fixed cost and cost per PICA instruction. They pick the
/// faster side on all eight shader × precision pairs measured at 8 lanes.
fn lanes_pay(work: super::DriverWork, groups: usize, lanes: usize, f24: bool) -> bool {
    if super::lanes_forced() {
        return true;
    }
    const CALL: u64 = 565;
    const PER_LANE: u64 = 241;
    const PER_GROUP: u64 = 3450;
    let (group_instruction, vertex, vertex_instruction) =
        if f24 { (47, 300, 22) } else { (18, 260, 8) };
    let vertices = (groups * lanes) as u64;
    let in_lanes = work.calls * CALL
        + work.instructions * group_instruction
        + vertices * PER_LANE
        + groups as u64 * PER_GROUP;
    let alone = vertices * vertex + work.lane_instructions * vertex_instruction;
    in_lanes <= alone
}

/// How many batches a remembered verdict that lanes do not pay decides before
/// the batch driver probes again (later draws with the same uniforms may
/// send their vertices down other paths).
const VERDICT_USES: u32 = 64;

/// Uniform sets (with the state policy) on which the probe groups found that
/// running in lanes does not pay: later batches with the same uniforms go
/// straight to the single-vertex JIT, without probe groups or a register
/// file. A pure speed choice: both sides give the same bits, so a stale or
/// colliding entry costs time, never a result.
#[derive(Debug, Default)]
pub(crate) struct Verdicts(std::sync::Mutex<[(u64, u32); 4]>);

impl Verdicts {
    /// Whether lanes were found not to pay for `key` (using the verdict once).
    fn lanes_lose(&self, key: u64) -> bool {
        if super::lanes_forced() {
            return false;
        }
        let Ok(mut slots) = self.0.lock() else {
            return false;
        };
        for (slot_key, uses) in slots.iter_mut() {
            if *uses > 0 && *slot_key == key {
                *uses -= 1;
                return true;
            }
        }
        false
    }

    /// Remembers that lanes do not pay for `key` (in the slot with the
    /// fewest uses left).
    fn remember(&self, key: u64) {
        let Ok(mut slots) = self.0.lock() else {
            return;
        };
        if let Some(slot) = slots.iter_mut().min_by_key(|(_, uses)| *uses) {
            *slot = (key, VERDICT_USES);
        }
    }
}

/// The key of a verdict: the uniforms' bits (they choose the uniform
/// branches) and the policy.
fn verdict_key(uniforms: &Uniforms, carry: bool) -> u64 {
    let mut h = 0x9e37_79b9_7f4a_7c15u64 ^ u64::from(carry);
    let mut mix = |x: u64| h = (h.rotate_left(5) ^ x).wrapping_mul(0x517c_c1b7_2722_0a95);
    for v in &uniforms.f {
        mix(u64::from(v[0].to_bits()) | u64::from(v[1].to_bits()) << 32);
        mix(u64::from(v[2].to_bits()) | u64::from(v[3].to_bits()) << 32);
    }
    for i in uniforms.i {
        mix(u64::from(u32::from_le_bytes(i)));
    }
    mix(uniforms
        .b
        .iter()
        .enumerate()
        .fold(0, |bits, (n, &b)| bits | u64::from(b) << n));
    h
}

/// What running a batch's vertices one at a time copies per vertex: no more
/// than the registers that can change a result.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Alone {
    /// The batch's input registers (all loaded for a `Carry` batch's last
    /// vertex, whose inputs its final state holds).
    pub input_mask: u16,
    /// Of those, the ones the program reads: the only ones loaded for the
    /// other vertices (the rest change no result).
    pub inputs_read: u16,
    /// The outputs copied out per vertex.
    pub output_mask: u16,
    /// `Reset`: the temporaries set back to the given state's values after
    /// each vertex (those it may have written that a later one may read).
    pub temps: u16,
    /// `Reset`: the outputs set back likewise (those it may have written that
    /// a later one copies out: a subset of `output_mask`).
    pub outputs: u16,
}

/// The temporaries whose value before an invocation can matter to it: those
/// some block reads as it starts.
fn temps_observed(wide: &WideShader) -> u16 {
    let rows = wide.rows_read();
    (0..16)
        .filter(|&reg| (0..4).any(|c| rows.contains((layout::TEMP + 4 * reg + c) as u16)))
        .fold(0, |mask, reg| mask | 1 << reg)
}

/// Copies the registers `mask` names.
#[inline]
fn copy_registers(to: &mut Registers, from: &Registers, mut mask: u16) {
    while mask != 0 {
        let n = mask.trailing_zeros() as usize;
        to[n] = from[n];
        mask &= mask - 1;
    }
}

/// Consecutive vertices with the same stop, passed to `record` as one range.
struct StopRuns<'r> {
    range: std::ops::Range<usize>,
    stop: Stop,
    record: &'r mut dyn FnMut(std::ops::Range<usize>, Stop),
}

impl StopRuns<'_> {
    fn push(&mut self, index: usize, stop: Stop) {
        if stop == self.stop && index == self.range.end {
            self.range.end += 1;
        } else {
            self.flush();
            self.range = index..index + 1;
            self.stop = stop;
        }
    }

    fn flush(&mut self) {
        if !self.range.is_empty() {
            (self.record)(self.range.clone(), self.stop);
        }
    }
}

/// Runs `inputs` one vertex at a time through `sequential` (the
/// single-vertex JIT) under the batch's policy: `carry`, each from the state
/// the previous one left (`state` ends as the last one's), else each from
/// `state` (left unchanged). `record` receives the stops, `first` being the
/// index of `inputs[0]` in the batch. Per vertex only the registers `alone`
/// names are copied, as few as [`crate::Shader::run`]'s caller would.
#[allow(clippy::too_many_arguments)]
pub(crate) fn run_alone<S: FnMut(&mut UnitState) -> Stop>(
    alone: &Alone,
    inputs: &[Registers],
    outputs: &mut [Registers],
    first: usize,
    carry: bool,
    state: &mut UnitState,
    record: &mut dyn FnMut(std::ops::Range<usize>, Stop),
    sequential: &mut S,
) {
    let mut runs = StopRuns {
        range: first..first,
        stop: Stop::End,
        record,
    };
    let vertices = inputs.iter().zip(outputs.iter_mut()).enumerate();
    if carry {
        let last = inputs.len().saturating_sub(1);
        for (k, (vertex_in, vertex_out)) in vertices {
            let loaded = if k == last {
                alone.input_mask
            } else {
                alone.inputs_read
            };
            copy_registers(&mut state.inputs, vertex_in, loaded);
            let stop = sequential(state);
            copy_registers(vertex_out, &state.outputs, alone.output_mask);
            runs.push(first + k, stop);
        }
    } else {
        // One scratch state for all: after each vertex what it may have
        // changed and a later one may observe goes back to the given state's
        // values (the F24 entry conversion of temporaries is idempotent).
        let mut scratch = state.clone();
        for (k, (vertex_in, vertex_out)) in vertices {
            copy_registers(&mut scratch.inputs, vertex_in, alone.inputs_read);
            let stop = sequential(&mut scratch);
            // Each output copied out, then set back where it must be.
            let mut out = alone.output_mask;
            while out != 0 {
                let n = out.trailing_zeros() as usize;
                vertex_out[n] = scratch.outputs[n];
                if alone.outputs >> n & 1 != 0 {
                    scratch.outputs[n] = state.outputs[n];
                }
                out &= out - 1;
            }
            runs.push(first + k, stop);
            copy_registers(&mut scratch.temps, &state.temps, alone.temps);
            scratch.a0 = state.a0;
            scratch.al = state.al;
            scratch.cmp = state.cmp;
        }
    }
    runs.flush();
}

/// Stopped lanes of a [`run_vertices`] group under `StatePolicy::Reset`:
/// their outputs go to the batch; lanes its group gives up on wait for the
/// single-vertex JIT.
struct ResetSink<'a, 'r> {
    outputs: &'a mut [Registers],
    /// The outputs copied out per lane.
    lane_outputs: u16,
    /// The rows a lane handed over to the interpreter reports.
    every_row: &'r RowSet,
    /// The rows some stopped lane's path wrote.
    written: RowSet,
    /// Whether a lane was handed over to the interpreter.
    handed_over: bool,
    stops: [Stop; 32],
    /// The lanes to run on the single-vertex JIT instead.
    single_vertex: u32,
}

impl LaneSink for ResetSink<'_, '_> {
    fn finish(&mut self, mask: u32, file: &LaneState, stop: Stop, rows: &RowSet) {
        self.written.union_with(rows);
        self.handed_over |= rows == self.every_row;
        for reg in bits(self.lane_outputs) {
            file.outputs_to(reg, mask, self.outputs);
        }
        for (lane, slot) in self.stops.iter_mut().enumerate() {
            if mask >> lane & 1 != 0 {
                *slot = stop;
            }
        }
    }

    fn single_vertex(&mut self, mask: u32, rows: &RowSet) -> bool {
        // Rows their path wrote are restored for the next group too.
        self.written.union_with(rows);
        self.single_vertex |= mask;
        true
    }

    fn merges_rows(&self) -> bool {
        // Every row of every lane holds the given state's value (restored
        // after each group) until the lane writes it; the outputs copied
        // out are among the restored rows.
        true
    }
}

/// Stopped lanes of [`run_states`] go straight back to their states.
struct StatesSink<'a> {
    states: &'a mut [UnitState],
    stops: &'a mut [Stop],
}

impl LaneSink for StatesSink<'_> {
    fn finish(&mut self, mask: u32, file: &LaneState, stop: Stop, rows: &RowSet) {
        file.store_states(self.states, mask, rows);
        for (lane, slot) in self.stops.iter_mut().enumerate() {
            if mask >> lane & 1 != 0 {
                *slot = stop;
            }
        }
    }

    fn start_state(&mut self, lane: usize, state: &mut UnitState) -> bool {
        // A lane still running has not been stored to: its state is the one
        // it started from.
        state.clone_from(&self.states[lane]);
        true
    }
}

std::thread_local! {
    /// Register files of earlier batches on this thread, reused: a file is
    /// tens of kilobytes, too much to allocate and clear per batch call.
    static SPARE_FILES: std::cell::RefCell<Vec<LaneState>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// Most vertices the vertex-layout kernels shade per pass (16 lanes, two
/// groups at once).
const MAX_KERNEL_LANES: usize = 32;

/// Runs `f` on `copies` register files of `lanes` lanes, one after another,
/// whose rows hold arbitrary bits (left from an earlier batch).
fn with_files<R>(lanes: usize, copies: usize, f: impl FnOnce(&mut LaneState) -> R) -> R {
    let mut file = take_spare_files(lanes, copies);
    let result = f(&mut file);
    give_spare_files(file);
    result
}

/// A spare register file of this shape, else a new one.
fn take_spare_files(lanes: usize, copies: usize) -> LaneState {
    let spare = SPARE_FILES.with(|s| {
        let mut spare = s.borrow_mut();
        let at = spare
            .iter()
            .position(|file| file.lanes() == lanes && file.copies() == copies)?;
        Some(spare.swap_remove(at))
    });
    spare.unwrap_or_else(|| LaneState::with_copies(lanes, copies))
}

/// Keeps `file` for a later batch on this thread (a few at most).
fn give_spare_files(file: LaneState) {
    SPARE_FILES.with(|s| {
        let mut spare = s.borrow_mut();
        if spare.len() < 4 {
            spare.push(file);
        }
    });
}

std::thread_local! {
    /// The register files of [`reset_in_whole_groups`] on this thread: its
    /// own slot, so that the common call finds them without searching the
    /// spare files; they never carry (their `CARRYING` row stays 0).
    static SHORT_PATH_FILES: std::cell::RefCell<Option<LaneState>> =
        const { std::cell::RefCell::new(None) };
}

/// [`with_files`] for a call that does not carry, on this thread's
/// short-path files when they have this shape (else they are swapped for
/// the spare files of this shape, or new ones).
fn with_short_path_files<R>(lanes: usize, copies: usize, f: impl FnOnce(&mut LaneState) -> R) -> R {
    SHORT_PATH_FILES.with(|slot| {
        let Ok(mut slot) = slot.try_borrow_mut() else {
            // (Not reached: the kernel calls back into no Rust code.)
            return with_files(lanes, copies, |file| {
                not_carrying(file);
                f(file)
            });
        };
        match slot.as_mut() {
            Some(file) if file.lanes() == lanes && file.copies() == copies => f(file),
            _ => {
                let mut file = take_spare_files(lanes, copies);
                not_carrying(&mut file);
                if let Some(other) = slot.take() {
                    give_spare_files(other);
                }
                f(slot.insert(file))
            }
        }
    })
}

/// Makes a vertex-kernel call on `file` not carry: no `Step::Fill` runs, no
/// pass runs again.
fn not_carrying(file: &mut LaneState) {
    for copy in 0..file.copies() {
        file.copy_row_mut(copy, layout::CARRYING)[0] = 0;
    }
}

/// The register file and lane of the last vertex a vertex-layout kernel
/// call (`per_pass` files) ran that wrote the rows whose sequence row is
/// `seq` (see [`super::plan::Tracking`]): the highest count, then the later
/// file of the pass, then the higher lane; `None` when no vertex did.
fn last_writer(file: &LaneState, per_pass: usize, seq: u16) -> Option<(usize, usize)> {
    let mut best: Option<(u32, usize, usize)> = None;
    for copy in 0..per_pass {
        for (lane, &count) in file.copy_row(copy, seq as usize).iter().enumerate() {
            if count != 0 && best.is_none_or(|b| (count, copy, lane) > b) {
                best = Some((count, copy, lane));
            }
        }
    }
    best.map(|(_, copy, lane)| (copy, lane))
}

/// Prepares the vertex kernel's [`super::plan::Step::Fill`]s of the output
/// rows `fills` (with their sequence rows) for a call: under
/// `StatePolicy::Carry` (`carried`: the state the call starts from) they
/// run, each from the starting value of its row, else (`Reset`: every
/// vertex copies out the starting value where it does not write) not.
fn set_fills(file: &mut LaneState, fills: &[(u16, u16)], carried: Option<&UnitState>) {
    if fills.is_empty() {
        return;
    }
    let (Some(start), lanes) = (carried, file.lanes()) else {
        return;
    };
    for &(row, _) in fills {
        // (Scalar `j` from row `CARRIED`'s start: `layout::carried_offset`.)
        let j = row as usize - layout::OUTPUT;
        file.copy_row_mut(0, layout::CARRIED + j / lanes)[j % lanes] =
            start.outputs[j / 4][j % 4].to_bits();
    }
}

/// What stays the same over a draw's [`run_vertices`] calls: the shader's
/// wide code, its program and configuration, and the uniforms as the unit
/// sees them.
#[derive(Clone, Copy)]
pub(crate) struct VertexDraw<'a> {
    pub wide: &'a WideShader,
    pub program: &'a Program,
    pub config: &'a ShaderConfig,
    pub uniforms: &'a Uniforms,
}

/// A batch in the emulator's layout (see [`crate::Shader::run_vertices`]).
pub(crate) struct VertexBatch<'a> {
    pub inputs: &'a [Registers],
    pub input_mask: u16,
    pub outputs: &'a mut [Registers],
    pub output_mask: u16,
}

/// The common case of [`run_vertices`] without its general setup (counted
/// by [`super::short_path_calls`]):
/// `StatePolicy::Reset`, a vertex kernel, every input it reads in the
/// batch, whole groups (no padded tail) and an entry that converts no
/// temporary (so the state the kernel starts each vertex from is `state`
/// itself, not an entered copy). Shades the whole batch with one kernel
/// call and returns how many vertices, else hands `batch` back untouched.
/// (The general path would shade the same vertices with the same kernel
/// code: under `Reset` lanes are independent, so one call over all groups
/// equals its passes and padded tail.)
fn reset_in_whole_groups<'a>(
    draw: &VertexDraw<'_>,
    batch: VertexBatch<'a>,
    carry: bool,
    state: &UnitState,
) -> Result<usize, VertexBatch<'a>> {
    let (wide, program, config) = (draw.wide, draw.program, draw.config);
    let lanes = wide.width().lanes();
    let len = batch.inputs.len();
    let applies = !carry
        && len != 0
        && len.is_multiple_of(lanes)
        && batch.input_mask & program.inputs_read() == program.inputs_read()
        && wide.has_vertex_kernel()
        && (config.precision == crate::Precision::F32
            || program.temps_converted_on_entry(config.entry) == 0);
    if !applies {
        return Err(batch);
    }
    let VertexBatch {
        inputs,
        input_mask,
        outputs,
        output_mask,
    } = batch;
    let ran = with_short_path_files(lanes, wide.vertex_kernel_files(), |file| {
        wide.run_vertex_kernel(
            file,
            draw.uniforms,
            state,
            inputs,
            outputs,
            output_mask,
            config.budget,
            0,
        )
        .is_some()
    });
    if !ran {
        // (Only a budget below the kernel's count: the general path finds
        // the same and runs the vertices another way.)
        return Err(VertexBatch {
            inputs,
            input_mask,
            outputs,
            output_mask,
        });
    }
    super::count_short_path();
    Ok(len)
}

/// How many vertices [`run_vertices`] shaded where.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Shaded {
    /// Vertices the wide engine started (in lanes).
    pub wide: usize,
    /// Of those, the vertices it handed to the single-vertex JIT (`sequential`)
    /// after their group's lanes diverged.
    pub single_vertex: usize,
}

/// Runs `batch` on the wide engine; `carry` selects the state policy
/// `Carry` (else `Reset`). `record(range, stop)` receives every vertex's stop
/// in order; `sequential` runs one vertex from the state given on the
/// single-vertex path (`Carry` groups whose lanes are not independent).
/// Returns how many vertices the wide engine shaded.
pub(crate) fn run_vertices(
    draw: &VertexDraw<'_>,
    batch: VertexBatch<'_>,
    carry: bool,
    state: &mut UnitState,
    record: &mut dyn FnMut(std::ops::Range<usize>, Stop),
    sequential: &mut impl FnMut(&mut UnitState) -> Stop,
) -> Shaded {
    // The common case first, before any other setup.
    let batch = match reset_in_whole_groups(draw, batch, carry, state) {
        Ok(shaded) => {
            record(0..shaded, draw.wide.kernel_stop());
            return Shaded {
                wide: shaded,
                single_vertex: 0,
            };
        }
        Err(batch) => batch,
    };
    run_vertices_generally(draw, batch, carry, state, record, sequential)
}

/// [`run_vertices`] past its short path. Not inlined into it: the setup
/// here (its stack frame, the addresses it prepares) would otherwise run
/// in every call, the short path's included.
#[inline(never)]
fn run_vertices_generally(
    draw: &VertexDraw<'_>,
    batch: VertexBatch<'_>,
    carry: bool,
    state: &mut UnitState,
    record: &mut dyn FnMut(std::ops::Range<usize>, Stop),
    sequential: &mut impl FnMut(&mut UnitState) -> Stop,
) -> Shaded {
    let VertexDraw {
        wide,
        program,
        config,
        uniforms,
    } = *draw;
    let lanes = wide.width().lanes();
    let invocation = Invocation::new(program, config, uniforms);
    let cx = RunContext {
        uniforms,
        invocation: &invocation,
        budget: config.budget,
        entry: config.entry,
        carry,
        work: Default::default(),
    };
    // Inputs the program reads: per lane where the batch gives them, else the
    // starting state's (no instruction writes an input).
    let lane_inputs = batch.input_mask & program.inputs_read();
    // Outputs per lane where the program writes them, else the starting state's.
    let lane_outputs = batch.output_mask & wide.outputs_written();
    let kept_outputs = batch.output_mask & !wide.outputs_written();
    let mut start = state.clone();
    enter(config.precision, program, config.entry, &mut start);
    // Whole groups in one kernel call where the program has one and every
    // input it reads comes from the batch; under `Carry` only where no vertex
    // reads what an earlier one may have written (then each vertex sees the
    // first one's starting state; see `plan::carry_tracking`).
    let mut done = 0;
    let inputs_covered = batch.input_mask & program.inputs_read() == program.inputs_read();
    if inputs_covered && wide.has_vertex_kernel() && (!carry || wide.kernel_carries()) {
        let len = batch.inputs.len();
        // The kernels shade up to `files` groups of `lanes` lanes per pass,
        // each in its own register file.
        let files = wide.vertex_kernel_files();
        let pass = files * lanes;
        let whole = len / pass * pass;
        // The whole passes in place, then the tail padded with copies of the
        // last vertex to one group, or to a pass when it is longer (lanes are
        // independent: the copies only repeat its results, in lanes nobody
        // reads back).
        assert!(pass <= MAX_KERNEL_LANES, "a pass fits the padding");
        // (Allocated for a padded tail only: a pass's registers are 16 KiB.)
        let mut pad_in = Vec::new();
        let mut pad_out = Vec::new();
        for part in [0..whole, whole..len] {
            let count = part.len();
            if count == 0 || done != part.start {
                continue;
            }
            let padded_to = if count <= lanes { lanes } else { pass };
            let padded = part.start == whole;
            if padded {
                pad_in = (0..padded_to)
                    .map(|k| batch.inputs[(part.start + k).min(len - 1)])
                    .collect();
                pad_out = vec![Registers::default(); padded_to];
                pad_out[..count].copy_from_slice(&batch.outputs[part.clone()]);
            }
            let mut last = None;
            let tracking = wide.carry_tracking().filter(|_| carry);
            let ran = with_files(lanes, files, |file| {
                if let Some(tracking) = tracking {
                    // No group counted yet, no tracked row written.
                    for copy in 0..file.copies() {
                        for row in tracking.cleared() {
                            file.copy_row_mut(copy, row as usize).fill(0);
                        }
                    }
                }
                // Whether the call carries (its `Step::Fill`s run, and the
                // last pass runs again with the stores its loop leaves out:
                // `codegen::dead`).
                let on = if carry { u32::MAX } else { 0 };
                for copy in 0..file.copies() {
                    file.copy_row_mut(copy, layout::CARRYING)[0] = on;
                }
                if let Some(fills) = wide.carry_tracking().map(|t| &t.outputs) {
                    set_fills(file, fills, carry.then_some(&start));
                }
                let (inputs, outputs) = if padded {
                    (&pad_in[..padded_to], &mut pad_out[..padded_to])
                } else {
                    (
                        &batch.inputs[part.clone()],
                        &mut batch.outputs[part.clone()],
                    )
                };
                let ran = wide.run_vertex_kernel(
                    file,
                    uniforms,
                    &start,
                    inputs,
                    outputs,
                    batch.output_mask,
                    config.budget,
                    if padded { padded_to - count } else { 0 },
                );
                if let (Some(per_pass), true) = (ran, carry) {
                    // The last vertex's final state: the rows every path
                    // writes from its lane of the last group (or a copy of
                    // it), the tracked rows from their last writer, the
                    // start's elsewhere.
                    let mut end = start.clone();
                    let tracked = tracking.map(|t| t.rows()).unwrap_or_default();
                    for row in wide.kernel_rows().difference(&tracked).rows() {
                        let last_lane = file.copy_row(per_pass - 1, row as usize)[lanes - 1];
                        set_row(&mut end, row as usize, last_lane);
                    }
                    // (Rows sharing a sequence row share their last writer.)
                    let mut writers = [None; layout::MASK_ROWS];
                    for &(row, seq) in tracking.iter().flat_map(|t| &t.rows) {
                        let writer = writers[seq as usize - layout::MASKS]
                            .get_or_insert_with(|| last_writer(file, per_pass, seq));
                        if let Some((copy, lane)) = *writer {
                            set_row(
                                &mut end,
                                row as usize,
                                file.copy_row(copy, row as usize)[lane],
                            );
                        }
                    }
                    end.load_inputs(&batch.inputs[part.end - 1], batch.input_mask);
                    for copy in wide.output_copies() {
                        // (F24: the input's conversion, as the kernel's.)
                        end.outputs[copy.output as usize] = batch.inputs[part.end - 1]
                            [copy.input as usize]
                            .map(|x| crate::arith::load(config.precision, x));
                    }
                    last = Some(end);
                }
                ran.is_some()
            });
            if !ran {
                break;
            }
            if padded {
                batch.outputs[part.clone()].copy_from_slice(&pad_out[..count]);
            }
            record(part.clone(), wide.kernel_stop());
            done = part.end;
            if let Some(end) = last {
                *state = end;
                start = state.clone();
                enter(config.precision, program, config.entry, &mut start);
            }
        }
        if done == len {
            return Shaded {
                wide: done,
                single_vertex: 0,
            };
        }
    }
    let len = batch.inputs.len();
    let mut shaded = Shaded {
        wide: done,
        single_vertex: 0,
    };
    let alone = Alone {
        input_mask: batch.input_mask,
        inputs_read: lane_inputs,
        output_mask: batch.output_mask,
        temps: wide.temps_written() & temps_observed(wide),
        outputs: wide.outputs_written() & batch.output_mask,
    };
    // Carry where every vertex reads what the one before wrote: one after
    // another (not counted as wide).
    if carry && wide.carry_always_dependent(config.entry) {
        let (inputs, outputs) = (&batch.inputs[done..], &mut batch.outputs[done..]);
        run_alone(
            &alone, inputs, outputs, done, true, state, record, sequential,
        );
        return shaded;
    }
    // Where earlier batches with these uniforms found that lanes do not pay:
    // the single-vertex JIT at once, without probe groups.
    let key = verdict_key(uniforms, carry);
    if wide.verdicts().lanes_lose(key) {
        let (inputs, outputs) = (&batch.inputs[done..], &mut batch.outputs[done..]);
        run_alone(
            &alone, inputs, outputs, done, carry, state, record, sequential,
        );
        shaded.wide = len;
        shaded.single_vertex = len - done;
        super::count_handed_over(len - done);
        return shaded;
    }
    let mut base = LaneState::new(lanes);
    for lane in 0..lanes {
        base.load_lane(lane, &start);
    }
    let mut file = base.clone();
    // Rows a group may observe from the one before: rows some block reads
    // as it starts, and the outputs copied out per lane. (A lane handed over
    // to the interpreter may read any row: then every row written is
    // restored; it reports every row the program writes.)
    let every_row = *wide.rows_written();
    let mut observable = *wide.rows_read();
    // (A lane handed over mid-block reads what its instructions read.)
    for reg in bits(program.temps_read()) {
        for c in 0..4 {
            observable.insert((layout::TEMP + 4 * reg + c) as u16);
        }
    }
    for row in layout::A0X..layout::STATE_ROWS {
        observable.insert(row as u16);
    }
    for reg in bits(lane_outputs) {
        for c in 0..4 {
            observable.insert((layout::OUTPUT + 4 * reg + c) as u16);
        }
    }
    // Carry: each lane's values of the rows its path wrote.
    let mut lane_values = vec![[0u32; layout::STATE_ROWS]; if carry { lanes } else { 0 }];
    let groups = batch.inputs[done..]
        .chunks(lanes)
        .zip(batch.outputs[done..].chunks_mut(lanes));
    // Where the rest of the batch goes one vertex at a time, and whether
    // those vertices count as handed over by the wide engine (lanes did not
    // pay) rather than never started in lanes (lanes not independent).
    let mut rest = None;
    // Whether running in lanes pays, from the driver's work on the groups so
    // far against one vertex at a time (see `lanes_pay`).
    let lanes_lose = |g: usize| {
        let f24 = config.precision == crate::Precision::F24;
        g + 1 >= PROBE_GROUPS && !lanes_pay(cx.work.get(), g + 1, lanes, f24)
    };
    for (g, (inputs, outputs)) in groups.enumerate() {
        let first = done + g * lanes;
        for reg in bits(lane_inputs) {
            file.set_inputs(reg, inputs);
        }
        let n = inputs.len();
        if !carry {
            let mut sink = ResetSink {
                outputs,
                lane_outputs,
                every_row: &every_row,
                written: RowSet::default(),
                handed_over: false,
                stops: [Stop::End; 32],
                single_vertex: 0,
            };
            let result = wide.run(&mut file, active(n), &cx, &mut sink);
            debug_assert_eq!(result, Ok(()), "independent lanes never fall back");
            let ResetSink {
                outputs,
                written,
                handed_over,
                mut stops,
                single_vertex,
                ..
            } = sink;
            // Outputs no instruction writes keep the given state's value.
            for vertex in outputs.iter_mut() {
                start.store_outputs(vertex, kept_outputs);
            }
            // Lanes of a group that diverged too far: one at a time on the
            // single-vertex JIT, each from the given state.
            for lane in (0..n).filter(|lane| single_vertex >> lane & 1 != 0) {
                let mut alone = state.clone();
                alone.load_inputs(&inputs[lane], batch.input_mask);
                stops[lane] = sequential(&mut alone);
                alone.store_outputs(&mut outputs[lane], batch.output_mask);
            }
            for (k, &stop) in stops[..n].iter().enumerate() {
                record(first + k..first + k + 1, stop);
            }
            shaded.wide += n;
            shaded.single_vertex += single_vertex.count_ones() as usize;
            super::count_handed_over(single_vertex.count_ones() as usize);
            // The next group starts from the given state again.
            if handed_over {
                file.copy_rows(&base, &written);
            } else {
                file.copy_rows(&base, &written.intersection(&observable));
            }
            if lanes_lose(g) {
                rest = Some((first + n, true));
                break;
            }
            continue;
        }
        // Carry: each lane's own writes over the state the previous vertex
        // left (converted as the invocation starts).
        let mut stops = [None; 32];
        let outcome = wide.run(
            &mut file,
            active(n),
            &cx,
            &mut |mask, f: &LaneState, stop, rows: &RowSet| {
                for (lane, slot) in stops.iter_mut().enumerate().take(n) {
                    if mask >> lane & 1 != 0 {
                        *slot = Some((stop, *rows));
                        let values = &mut lane_values[lane];
                        for r in rows.rows() {
                            values[r as usize] = f.row(r as usize)[lane];
                        }
                    }
                }
            },
        );
        if outcome == Err(NotIndependent) {
            // Lanes depend on each other here (and most likely in the next
            // groups too): one after another from this group on.
            rest = Some((first, false));
            break;
        }
        let written = stops[0].map(|(_, rows)| rows);
        if n > 0
            && stops[..n]
                .iter()
                .all(|r| r.map(|(_, rows)| rows) == written)
        {
            // Every lane wrote the same rows (one path): a row no lane
            // wrote ends every vertex with the carried state's value
            // converted as an invocation starts (the conversion is
            // idempotent), the others with the lane's own value.
            let rows = written.expect("every lane finishes");
            enter(config.precision, program, config.entry, state);
            for (k, vertex_out) in outputs.iter_mut().enumerate() {
                for reg in bits(batch.output_mask) {
                    let mut v = state.outputs[reg];
                    for (c, x) in v.iter_mut().enumerate() {
                        let row = layout::OUTPUT + 4 * reg + c;
                        if rows.contains(row as u16) {
                            *x = f32::from_bits(lane_values[k][row]);
                        }
                    }
                    vertex_out[reg] = v;
                }
                record(
                    first + k..first + k + 1,
                    stops[k].expect("every lane finishes").0,
                );
            }
            state.load_inputs(&inputs[n - 1], batch.input_mask);
            for row in rows.rows() {
                set_row(state, row as usize, lane_values[n - 1][row as usize]);
            }
        } else {
            for (k, result) in stops[..n].iter().enumerate() {
                let (stop, rows) = result.expect("every lane finishes");
                state.load_inputs(&inputs[k], batch.input_mask);
                enter(config.precision, program, config.entry, state);
                for row in rows.rows() {
                    set_row(state, row as usize, lane_values[k][row as usize]);
                }
                state.store_outputs(&mut outputs[k], batch.output_mask);
                record(first + k..first + k + 1, stop);
            }
        }
        shaded.wide += n;
        if lanes_lose(g) {
            rest = Some((first + n, true));
            break;
        }
    }
    if let Some((from, handed)) = rest {
        if handed {
            // Lanes do not pay here: the rest of this batch, and later
            // batches with these uniforms, one vertex at a time.
            wide.verdicts().remember(key);
            shaded.wide += len - from;
            shaded.single_vertex += len - from;
            super::count_handed_over(len - from);
        }
        let (inputs, outputs) = (&batch.inputs[from..], &mut batch.outputs[from..]);
        run_alone(
            &alone, inputs, outputs, from, carry, state, record, sequential,
        );
    }
    shaded
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jit::wide::DriverWork;

    #[test]
    fn lanes_pay_for_long_shared_blocks_and_not_for_short_scattered_ones() {
        // Two groups of 8 on one path of two 150-instruction blocks.
        let shared = DriverWork {
            calls: 4,
            instructions: 600,
            lane_instructions: 8 * 600,
        };
        assert!(lanes_pay(shared, 2, 8, false));
        assert!(lanes_pay(shared, 2, 8, true));
        // The corpus's picodrive shader as the driver ran it: 27 block calls
        // of 116 instructions in all for two groups of 8 whose lanes ran 764.
        let scattered = DriverWork {
            calls: 27,
            instructions: 116,
            lane_instructions: 764,
        };
        assert!(!lanes_pay(scattered, 2, 8, false));
        assert!(!lanes_pay(scattered, 2, 8, true));
        // The normal-mapping example's uniform path: lanes pay in F24 only.
        let normal = DriverWork {
            calls: 10,
            instructions: 100,
            lane_instructions: 800,
        };
        assert!(!lanes_pay(normal, 2, 8, false));
        assert!(lanes_pay(normal, 2, 8, true));
    }
}
