//! The batch kernel ([`KernelPlan`]): one function
//! `(register file, uniforms, states, groups) -> 0` that, for each of
//! `groups` whole groups of `W` consecutive `UnitState`s, transposes the
//! group into the register file, runs a straight run of blocks and
//! transposes the rows they wrote back: a straight-line shader costs one
//! call per batch (and one floating-point environment switch) instead of the
//! driver's calls and loops per group.
//!
//! Registers move in blocks of four lanes with a 4×4 transpose of `xmm`
//! registers (VEX-encoded on the wider widths, so no SSE/AVX transition
//! occurs); the state of lane `k` of the current group is at
//! `r8 + k * size_of::<UnitState>()` (for the vertex layout: its inputs at
//! `r8`, its outputs at `r11`, `VertexRegisters` each), `r9` counts the
//! groups left and `r10` a loop's iterations left (block code never touches
//! `r8`–`r11`).

use super::super::emit::V;
use super::super::evex;
use super::{Function, GroupAt, S1, S2};
use crate::jit::JitError;
use crate::jit::wide::codegen::copies::{OutputCopy, output_copies, without_copies};
use crate::jit::wide::codegen::{
    Driver, KernelShape, KernelSource, RegAlloc, StateRows, Target, hoist, start_field,
};
use crate::jit::wide::codegen::{dead, flushed};
use crate::jit::wide::lanes::{LaneBlock, LaneOp, RowSet};
use crate::jit::wide::layout;
use crate::jit::wide::plan::{KernelPlan, Step, ops_block};
use crate::state::UnitState;

/// One vertex's registers in the emulator's layout (`crate::VertexRegisters`).
type VertexRegisters = [crate::Vec4; 16];
use dynasmrt::{DynasmApi, DynasmLabelApi, dynasm};
use std::mem::size_of;

/// `rdi` (the register file) or `r8` (the states) plus a displacement.
#[derive(Clone, Copy)]
struct Mem {
    base: u8,
    disp: i32,
}

impl Mem {
    /// The same operand for the EVEX encoder.
    fn evex(self) -> evex::Mem {
        evex::Mem::base(evex::Gpr::new(self.base), self.disp)
    }
}

const FILE: u8 = 7;
const STATES: u8 = 8;
const OUTPUTS: u8 = 11;
/// `[rdi + off]`: a row of the register file, for the EVEX encoder.
fn file_row(off: i32) -> evex::Mem {
    evex::Mem::base(evex::Gpr::RDI, off)
}

fn state_offset(lane: usize, field: usize) -> i32 {
    (lane * size_of::<UnitState>() + field) as i32
}

/// Where a group's per-lane records are.
#[derive(Clone, Copy)]
enum LaneSource {
    /// `UnitState`s at `r8`.
    States,
    /// Input `VertexRegisters` at `r8`.
    Vertices,
    /// Output `VertexRegisters` at `r11`.
    Outputs,
}

impl LaneSource {
    /// The `Vec4` at `field` of lane `lane`'s record.
    fn record(self, lane: usize, field: usize) -> Mem {
        self.slots(lane, 1, field)[0]
    }

    /// The `Vec4` at `field` of lanes `first..first + chunk` (the last four
    /// unused with a chunk of 4).
    fn slots(self, first: usize, chunk: usize, field: usize) -> [Mem; 8] {
        let (base, record) = match self {
            LaneSource::States => (STATES, size_of::<UnitState>()),
            LaneSource::Vertices => (STATES, size_of::<VertexRegisters>()),
            LaneSource::Outputs => (OUTPUTS, size_of::<VertexRegisters>()),
        };
        std::array::from_fn(|k| Mem {
            base,
            disp: ((first + k % chunk) * record + field) as i32,
        })
    }
}

/// Stores of one group emitted out of the kernel's loop (see
/// `Function::store_vertices`).
#[derive(Clone, Copy)]
struct OutOfLine {
    /// Where they start.
    start: dynasmrt::DynamicLabel,
    /// Where they jump back to.
    back: dynasmrt::DynamicLabel,
    /// The group the pointers are at there.
    at: GroupAt,
}

/// The longest group loop (bytes, one group per pass) of a vertex-layout
/// kernel that is emitted again to shade two groups per pass: each step's
/// block runs for one group, then for the other, so one group's long
/// dependency chains (`rsq`, `lg2`, `ex2`) overlap the other's work. Two
/// copies of a longer loop outgrow the 32 KiB L1 instruction cache of
/// current x86-64 cores and run slower than one (measured on the default
/// shader: `docs/benchmarks.md`).
pub(crate) const MAX_LOOP_BYTES_TO_INTERLEAVE: usize = 17 * 1024;

impl Function<'_> {
    /// Emits the kernel of `source` for `shape`. Each pass of its loop
    /// shades `copies` groups (each in its own register file), one after
    /// another per step. Returns the loop's size in bytes.
    pub(super) fn kernel(
        &mut self,
        source: KernelSource<'_>,
        shape: KernelShape,
        copies: usize,
    ) -> Result<usize, JitError> {
        let KernelSource {
            plan,
            blocks,
            convert_inputs,
        } = source;
        self.enter();
        let record = match shape {
            KernelShape::States => size_of::<UnitState>(),
            KernelShape::Vertices => size_of::<VertexRegisters>(),
        };
        let stride = (self.lanes * record) as i32;
        self.copy = GroupAt {
            file: 0,
            records: 0,
            stride,
        };
        let (group, done) = (
            self.a.ops.new_dynamic_label(),
            self.a.ops.new_dynamic_label(),
        );
        if shape == KernelShape::Vertices {
            // The outputs pointer arrives in r8, which the groups' records
            // take over.
            dynasm!(self.a.ops ; .arch x64 ; mov r11, r8);
        }
        dynasm!(self.a.ops
            ; .arch x64
            ; mov r8, rdx
            ; mov r9, rcx
            ; test r9, r9
            ; jz =>done
        );
        // Outputs that are copies of inputs move record to record (F24:
        // converted on the way, not at 16 lanes, whose rows convert them);
        // the blocks do not store them, and inputs nothing else reads are
        // neither transposed nor converted.
        let mut passed = match shape {
            KernelShape::Vertices if convert_inputs == 0 || self.lanes <= 8 => {
                output_copies(plan, blocks)
            }
            _ => Vec::new(),
        };
        if convert_inputs != 0 && !passed.is_empty() {
            // F24: not the copies of inputs the blocks read too, which would
            // be converted twice (in rows and on the way; measured slower).
            // Their stores read only their own inputs, so this is final.
            let (_, read) = without_copies(blocks, &passed);
            passed.retain(|copy| read >> copy.input & 1 == 0);
        }
        let convert_copies = convert_inputs != 0;
        let trimmed;
        let (blocks, inputs, convert_inputs) = if passed.is_empty() {
            (blocks, plan.load.inputs, convert_inputs)
        } else {
            let (without, inputs) = without_copies(blocks, &passed);
            trimmed = without;
            (&trimmed[..], inputs, convert_inputs & inputs)
        };
        // Temporaries, `a0` and `cmp` rows no step reads: neither they nor
        // the operations only they read are in the loop; stored by the last
        // pass only, when the call carries (after the loop).
        let unread = match shape {
            KernelShape::Vertices => dead::unread_rows(plan, blocks),
            KernelShape::States => None,
        };
        let full = blocks;
        // The rows some step changes (outputs that copy inputs among them,
        // though their stores moved to the records), and of those the rows
        // the loop changes: the rest of the starting state is loaded once
        // per call (unread rows a step reads before it stores them among
        // them), those the loop changes again per group, and those the
        // steps change again in a carrying call's last pass.
        let written = dead::stored_rows(plan, source.blocks);
        let written_in_loop = written.difference(&unread.unwrap_or_default());
        let trimmed_of_unread;
        let blocks = match &unread {
            Some(rows) => {
                trimmed_of_unread = dead::without_stores(blocks, rows);
                &trimmed_of_unread[..]
            }
            None => blocks,
        };
        // F24 (§9.33): input rows the loop's blocks read only flushed once
        // those stores are gone (`mov r0, v0`, then products of `r0`) are
        // converted flushed in the loop too, and read there unflushed; the
        // carrying call's last pass, which stores the temporaries, converts
        // and reads them as every other function does.
        let kept_flushed = self.flushed_inputs;
        let loop_flushed = match &unread {
            Some(_) => flushed::flushed_only_rows(blocks, Some(plan)) & !kept_flushed,
            None => 0,
        };
        let flushed_in_loop;
        let blocks = if loop_flushed == 0 {
            blocks
        } else {
            flushed_in_loop = flushed::skip_flushes(blocks, loop_flushed);
            &flushed_in_loop[..]
        };
        self.flushed_inputs = kept_flushed | loop_flushed;
        // Of those, the rows no product reads record no lower bound (§9.27).
        let kept_no_lower_bound = self.no_lower_bound;
        self.no_lower_bound |= loop_flushed & !flushed::product_rows(blocks, Some(plan));
        // F24: the inputs whose raw rows some block reads (others are
        // converted on their way in, never stored raw).
        let raw_read = full
            .iter()
            .flat_map(|b| &b.ops)
            .fold(0u16, |m, op| match *op {
                LaneOp::Row(row) if (row as usize) < layout::INPUT + 64 => {
                    m | 1 << ((row as usize - layout::INPUT) / 4)
                }
                _ => m,
            });
        // Values computed from uniforms only, once per call instead of once
        // per group (and per loop iteration), in the first group's file,
        // where every group of a pass reads them (`Function::row`).
        let hoisted = hoist(self, plan, blocks)?;
        let blocks = &hoisted[..];
        // F24 (§9.34): converted input rows no step of the loop reads
        // (`v0.w` after `mov r0.xyz, v0` once `r0` is not stored) are
        // neither converted nor stored by the loop's fused conversion; the
        // carrying call's last pass, which stores the temporaries, converts
        // every row.
        if shape == KernelShape::Vertices {
            self.unread_converted = !flushed::converted_rows_read(blocks, Some(plan));
            for copy in 0..copies {
                self.file_at(copy);
                self.load_start_once(plan, &written_in_loop);
            }
        }
        self.file_at(0);
        self.a.bind(group);
        let loop_start = self.a.ops.offset().0;
        let cold_before = self.cold_bytes;
        for copy in 0..copies {
            self.group_at(copy);
            match shape {
                KernelShape::States => {
                    self.load_states(plan);
                    self.convert_inputs(convert_inputs);
                }
                KernelShape::Vertices => {
                    let inputs = inputs & plan.load.inputs;
                    let again = plan.read_first.intersection(&written_in_loop);
                    self.load_group(inputs, convert_inputs, raw_read, &again);
                }
            }
            for n in (0..16).filter(|n| plan.convert_temps >> n & 1 != 0) {
                for c in 0..4 {
                    let off = self.row(layout::TEMP + 4 * n + c);
                    self.a.load(1, off);
                    self.a.v().f24_load(1);
                    self.a.store(off, 1);
                }
            }
        }
        self.file_at(0);
        let direct = match shape {
            KernelShape::Vertices => self.direct_outputs(plan, blocks, &passed),
            KernelShape::States => None,
        };
        self.steps(plan, blocks, copies, direct.as_ref())?;
        let skipped = direct.as_ref().map_or(0, |d| d.mask());
        let mut pending = Vec::new();
        for copy in 0..copies {
            self.group_at(copy);
            match shape {
                KernelShape::States => self.store_states(plan),
                KernelShape::Vertices => {
                    pending.extend(self.store_vertices(plan, &passed, convert_copies, skipped));
                }
            }
        }
        self.group_at(0);
        let pass = stride * copies as i32;
        match shape {
            KernelShape::States => dynasm!(self.a.ops ; .arch x64 ; add r8, pass),
            KernelShape::Vertices => {
                dynasm!(self.a.ops ; .arch x64 ; add r8, pass ; add r11, pass);
            }
        }
        dynasm!(self.a.ops
            ; .arch x64
            ; dec r9
            ; jnz =>group
        );
        // The exact runs of deferred regions are jumped over: not the loop's.
        let loop_bytes = self.a.ops.offset().0 - loop_start - (self.cold_bytes - cold_before);
        self.tested_stores(plan, &passed, convert_copies, &pending);
        self.flushed_inputs = kept_flushed;
        self.no_lower_bound = kept_no_lower_bound;
        self.unread_converted = 0;
        if unread.is_some() {
            // A carrying call's state is its last pass's: that pass again,
            // with every store (its records are not written again).
            let carrying = self.row(layout::CARRYING);
            dynasm!(self.a.ops
                ; .arch x64
                ; cmp DWORD [rdi + carrying], 0
                ; je =>done
                ; sub r8, pass
                ; sub r11, pass
            );
            let hoisted = hoist(self, plan, full)?;
            for copy in 0..copies {
                self.group_at(copy);
                let inputs = inputs & plan.load.inputs;
                let again = plan.read_first.intersection(&written);
                self.load_group(inputs, convert_inputs, raw_read, &again);
            }
            self.file_at(0);
            // (Its records are written: no output is stored from registers.)
            self.steps(plan, &hoisted, copies, None)?;
            self.group_at(0);
        }
        self.a.bind(done);
        dynasm!(self.a.ops ; .arch x64 ; xor eax, eax);
        self.leave();
        Ok(loop_bytes)
    }

    /// Points `rdi` at group `copy`'s register file.
    fn file_at(&mut self, copy: usize) {
        let file_bytes = layout::file_bytes(self.lanes) as i32;
        let delta = (copy as i32 - self.copy.file as i32) * file_bytes;
        if delta != 0 {
            dynasm!(self.a.ops ; .arch x64 ; add rdi, delta);
        }
        self.copy.file = copy;
    }

    /// Points `rdi` at group `copy`'s register file and `r8`, `r11` at its
    /// records.
    fn group_at(&mut self, copy: usize) {
        self.file_at(copy);
        let delta = (copy as i32 - self.copy.records as i32) * self.copy.stride;
        if delta != 0 {
            dynasm!(self.a.ops ; .arch x64 ; add r8, delta ; add r11, delta);
        }
        self.copy.records = copy;
    }

    /// The rows of the vertex layout's starting state (every lane the same,
    /// at the header's `START_STATE`) that the kernel needs and no step
    /// writes (not in `written`): once per call, before the first group (no
    /// group changes them). Output registers the program writes only in
    /// part are among them (they come out whole).
    fn load_start_once(&mut self, plan: &KernelPlan, written: &RowSet) {
        let mut needed = plan.read_first;
        for n in 0..16 {
            if plan.store.register(layout::OUTPUT, n) != 0 {
                for c in 0..4 {
                    needed.insert((layout::OUTPUT + 4 * n + c) as u16);
                }
            }
        }
        dynasm!(self.a.ops ; .arch x64 ; mov rdx, QWORD [rdi + layout::START_STATE]);
        for row in needed.difference(written).rows() {
            let (field, flag) = start_field(row as usize);
            self.broadcast_state(field, row as usize, flag);
        }
    }

    /// A group of vertices' input registers of `inputs` → their rows, those
    /// of `convert` (F24) converted too, and the starting state's rows of
    /// `again` (see [`Self::load_vertices`]). With
    /// AVX2, an input converted and not read raw (`raw_read`) is converted
    /// between its transpose and its rows' stores: its raw rows are neither
    /// stored nor loaded again.
    fn load_group(&mut self, inputs: u16, convert: u16, raw_read: u16, again: &RowSet) {
        let fused = if self.a.width == crate::jit::wide::width::Width::Avx2 {
            convert & inputs & !raw_read
        } else {
            0
        };
        self.load_vertices(inputs & !fused, again);
        self.convert_inputs(convert & !fused);
        if fused == 0 {
            return;
        }
        // The fast conversions under one range check, then (for the rare
        // group with a float24 subnormal, infinite, NaN or huge component)
        // the exact ones from the same input records.
        self.flag_input_bounds(fused);
        if self.begin_deferred_loads() {
            self.load_converted(fused, true);
            self.check_deferred();
        }
        self.load_converted(fused, false);
        self.join_deferred();
    }

    /// AVX2: the `CONVERTED` rows of the inputs of `mask` = `f24::load` of
    /// the group's records, each register transposed into `ymm` registers
    /// and converted there; by the fast form of a deferred region of loads
    /// when `fast`.
    fn load_converted(&mut self, mask: u16, fast: bool) {
        for n in (0..16).filter(|n| mask >> n & 1 != 0) {
            for first in (0..self.lanes).step_by(8) {
                let records = LaneSource::Vertices.slots(first, 8, 16 * n);
                let rows = self.row_slots(first, layout::CONVERTED + 4 * n);
                let out = self.transpose_records(records, true, true);
                for (c, (&r, m)) in out.iter().zip(&rows).enumerate() {
                    if self.unread_converted >> (4 * n + c) & 1 != 0 {
                        continue;
                    }
                    if fast {
                        self.f24_load_deferred_row(r, 4 * n + c);
                    } else {
                        self.a.v().f24_load(r);
                        self.flush_converted_in_place(r, 4 * n + c);
                    }
                    self.store_vector(true, true, *m, r);
                }
            }
        }
    }

    /// A group of vertices' input registers (at `r8`, `VertexRegisters` each)
    /// → the input rows; the rows `again` of the starting state (at the
    /// header's `START_STATE`): those a lane may observe and some step of
    /// the pass writes (a previous group changed them).
    fn load_vertices(&mut self, inputs: u16, again: &RowSet) {
        for n in (0..16).filter(|n| inputs >> n & 1 != 0) {
            self.load_lanes(LaneSource::Vertices, 16 * n, layout::INPUT + 4 * n);
        }
        if again.is_empty() {
            return;
        }
        dynasm!(self.a.ops ; .arch x64 ; mov rdx, QWORD [rdi + layout::START_STATE]);
        for row in again.rows() {
            let (field, flag) = start_field(row as usize);
            self.broadcast_state(field, row as usize, flag);
        }
    }

    /// Row `row` = the 32 bits (a `bool` as a lane mask when `flag`) at
    /// `field` of the starting state (at `rdx`), in every lane.
    fn broadcast_state(&mut self, field: usize, row: usize, flag: bool) {
        let field = field as i32;
        if flag {
            dynasm!(self.a.ops ; .arch x64 ; movzx eax, BYTE [rdx + field] ; neg eax);
        } else {
            dynasm!(self.a.ops ; .arch x64 ; mov eax, [rdx + field]);
        }
        self.a.broadcast_eax(S1);
        let off = self.row(row);
        self.a.store(off, S1);
    }

    /// The group's vertices (at `r11`), each output register of the header's
    /// `OUTPUT_MASK`: the lane's value where the program writes it (`passed`:
    /// its input's, from the input records at `r8`, converted to float24
    /// when `convert`), else the starting state's (at the header's
    /// `START_STATE`).
    ///
    /// The usual output mask, every output the kernel writes and no other,
    /// takes one test per group and its stores untested; another mask
    /// jumps to the tested stores, emitted out of the loop
    /// ([`Self::tested_stores`]) from the returned [`OutOfLine`] (none for
    /// a kernel that writes no output: its tested stores are in line).
    fn store_vertices(
        &mut self,
        plan: &KernelPlan,
        passed: &[OutputCopy],
        convert: bool,
        direct: u32,
    ) -> Option<OutOfLine> {
        let every = (0..16)
            .filter(|&n| plan.store.register(layout::OUTPUT, n) != 0)
            .fold(0u32, |m, n| m | 1 << n);
        if every == 0 {
            // Nothing to store untested: the starting state's outputs the
            // mask asks for, in line.
            self.store_outputs(plan, passed, convert, true, 0);
            return None;
        }
        let out = OutOfLine {
            start: self.a.ops.new_dynamic_label(),
            back: self.a.ops.new_dynamic_label(),
            at: self.copy,
        };
        dynasm!(self.a.ops
            ; .arch x64
            ; cmp DWORD [rdi + layout::OUTPUT_MASK], every as i32
            ; jne =>out.start
        );
        self.store_outputs(plan, passed, convert, false, direct);
        self.a.bind(out.back);
        Some(out)
    }

    /// The stores of `pending` under tests of the output mask, each
    /// jumping back where its untested stores end; the pointers are where
    /// they were at its jump (no code moves them).
    fn tested_stores(
        &mut self,
        plan: &KernelPlan,
        passed: &[OutputCopy],
        convert: bool,
        pending: &[OutOfLine],
    ) {
        if pending.is_empty() {
            return;
        }
        let past = self.a.ops.new_dynamic_label();
        dynasm!(self.a.ops ; .arch x64 ; jmp =>past);
        let now = self.copy;
        for out in pending {
            self.a.bind(out.start);
            self.copy = out.at;
            self.store_outputs(plan, passed, convert, true, 0);
            dynasm!(self.a.ops ; .arch x64 ; jmp =>out.back);
        }
        self.copy = now;
        self.a.bind(past);
    }

    /// [`Self::store_vertices`]' stores, each output's under a test of the
    /// output mask when `tested` (else every output the kernel writes but
    /// those of `direct`, which the last block stored from registers).
    fn store_outputs(
        &mut self,
        plan: &KernelPlan,
        passed: &[OutputCopy],
        convert: bool,
        tested: bool,
        direct: u32,
    ) {
        let vex = self.a.width != crate::jit::wide::width::Width::Sse41;
        if convert && !passed.is_empty() {
            // The fast conversions under one range check, then (for the rare
            // group with a float24 subnormal, infinite, NaN or huge
            // component) the exact ones from the same input records, as the
            // inputs' conversion does.
            if self.begin_deferred_loads() {
                if tested {
                    // Each conversion under its own test: the first to
                    // record may be skipped. (Records left from earlier
                    // code could only fail the check more often, never pass
                    // it wrongly: maxima and minima over every value
                    // converted still cover them. Reset for a check that
                    // depends on this group alone.)
                    self.reset_load_records();
                }
                self.convert_copies(passed, true, tested);
                self.check_deferred();
            }
            self.convert_copies(passed, false, tested);
            self.join_deferred();
        } else if !convert {
            // F32: the bits move unchanged.
            for copy in passed {
                let skip = self.skip_unless(tested, 1 << copy.output);
                for lane in 0..self.lanes {
                    let from = LaneSource::Vertices.record(lane, 16 * copy.input as usize);
                    let to = LaneSource::Outputs.record(lane, 16 * copy.output as usize);
                    let r = (lane % 4) as u8;
                    if vex {
                        dynasm!(self.a.ops ; .arch x64 ; vmovups Rx(r), [Rq(from.base) + from.disp]);
                    } else {
                        dynasm!(self.a.ops ; .arch x64 ; movups Rx(r), [Rq(from.base) + from.disp]);
                    }
                    self.store_vector(vex, false, to, r);
                }
                self.bind_skip(skip);
            }
        }
        let written = |n: usize| {
            plan.store.register(layout::OUTPUT, n) != 0
                && !passed.iter().any(|c| c.output as usize == n)
                && direct >> n & 1 == 0
        };
        for n in (0..16).filter(|&n| written(n)) {
            let skip = self.skip_unless(tested, 1 << n);
            self.store_lanes(layout::OUTPUT + 4 * n, LaneSource::Outputs, 16 * n);
            self.bind_skip(skip);
        }
        // The outputs no step writes, usually outside the caller's mask: one
        // test for all of them rather than one per register.
        let kept = (0..16)
            .filter(|&n| plan.store.register(layout::OUTPUT, n) == 0)
            .fold(0u32, |m, n| m | 1 << n);
        // (Untested: the mask has none of them.)
        if kept == 0 || !tested {
            return;
        }
        let none_kept = self.a.ops.new_dynamic_label();
        dynasm!(self.a.ops
            ; .arch x64
            ; test DWORD [rdi + layout::OUTPUT_MASK], kept as i32
            ; jz =>none_kept
            ; mov rdx, QWORD [rdi + layout::START_STATE]
        );
        for n in (0..16).filter(|&n| kept >> n & 1 != 0) {
            let skip = self.a.ops.new_dynamic_label();
            dynasm!(self.a.ops
                ; .arch x64
                ; test DWORD [rdi + layout::OUTPUT_MASK], 1 << n
                ; jz =>skip
            );
            // Here, while the group's records are in the cache, rather than
            // in a pass over the batch afterwards.
            let field = 16 * n;
            let from = (std::mem::offset_of!(UnitState, outputs) + field) as i32;
            if vex {
                dynasm!(self.a.ops ; .arch x64 ; vmovaps Rx(S1), [rdx + from]);
            } else {
                dynasm!(self.a.ops ; .arch x64 ; movaps Rx(S1), [rdx + from]);
            }
            for lane in 0..self.lanes {
                let to = LaneSource::Outputs.record(lane, field);
                self.store_vector(vex, false, to, S1);
            }
            self.a.bind(skip);
        }
        self.a.bind(none_kept);
    }

    /// F24: each output of `passed` in the header's `OUTPUT_MASK`, in every
    /// lane, = `f24::load` of its input, record to record; by the fast form
    /// of a deferred region of loads when `fast`.
    /// Each under a test of the output mask when `tested`.
    /// Untested (the usual mask: every output is stored), each input is
    /// converted once for all the outputs copying it (`mov o1, v1` and
    /// `mov o2, v1`): the conversion is a function of the input's bits, so
    /// every such output gets the same bits. Tested, each output on its
    /// own under its own test (out of the loop).
    fn convert_copies(&mut self, passed: &[OutputCopy], fast: bool, tested: bool) {
        if tested {
            for &copy in passed {
                let skip = self.skip_unless(tested, 1 << copy.output);
                self.convert_copy(copy.input, &[copy.output], fast);
                self.bind_skip(skip);
            }
            return;
        }
        for (input, outputs) in copies_by_input(passed) {
            self.convert_copy(input, &outputs, fast);
        }
    }

    /// When `tested`: a jump to the returned label unless the output mask
    /// has a bit of `bits`.
    fn skip_unless(&mut self, tested: bool, bits: u32) -> Option<dynasmrt::DynamicLabel> {
        if !tested {
            return None;
        }
        let skip = self.a.ops.new_dynamic_label();
        dynasm!(self.a.ops
            ; .arch x64
            ; test DWORD [rdi + layout::OUTPUT_MASK], bits as i32
            ; jz =>skip
        );
        Some(skip)
    }

    /// Binds [`Self::skip_unless`]'s label, if any.
    fn bind_skip(&mut self, skip: Option<dynasmrt::DynamicLabel>) {
        if let Some(skip) = skip {
            self.a.bind(skip);
        }
    }

    /// F24: each of `outputs` of every lane = `f24::load` of its input
    /// `input`, record to record (each record converted once, stored to
    /// every output). The conversion works component by
    /// component, so it gives the bits the rows' conversion would; at 8
    /// lanes one `ymm` converts lanes `k` and `k + 4` (the `xmm` halves).
    /// Uses registers 1–4 and the conversion's scratch; `fast`: the
    /// deferred form (no test of its own), else the exact sequence (its
    /// rare cases out of line).
    fn convert_copy(&mut self, input: u8, outputs: &[u8], fast: bool) {
        let wide = self.lanes == 8;
        let vex = self.a.width != crate::jit::wide::width::Width::Sse41;
        let from = 16 * input as usize;
        let registers = if wide { self.lanes / 2 } else { self.lanes };
        for k in 0..registers {
            let r = 1 + (k % 4) as u8;
            let m = LaneSource::Vertices.record(k, from);
            if vex {
                dynasm!(self.a.ops ; .arch x64 ; vmovups Rx(r), [Rq(m.base) + m.disp]);
            } else {
                dynasm!(self.a.ops ; .arch x64 ; movups Rx(r), [Rq(m.base) + m.disp]);
            }
            if wide {
                let hi = LaneSource::Vertices.record(k + 4, from);
                dynasm!(self.a.ops
                    ; .arch x64
                    ; vinsertf128 Ry(r), Ry(r), [Rq(hi.base) + hi.disp], 1
                );
            }
            if fast {
                self.f24_load_deferred(r);
            } else {
                self.a.v().f24_load(r);
            }
            for &output in outputs {
                let to = 16 * output as usize;
                self.store_vector(vex, false, LaneSource::Outputs.record(k, to), r);
                if wide {
                    let hi = LaneSource::Outputs.record(k + 4, to);
                    dynasm!(self.a.ops
                        ; .arch x64
                        ; vextractf128 [Rq(hi.base) + hi.disp], Ry(r), 1
                    );
                }
            }
        }
    }

    /// Emits `plan`'s steps, each for the `copies` groups in turn.
    fn steps(
        &mut self,
        plan: &KernelPlan,
        blocks: &[LaneBlock],
        copies: usize,
        direct: Option<&DirectOutputs>,
    ) -> Result<(), JitError> {
        // The first step of the loop body being emitted.
        let mut body_start = None;
        let last = plan.steps.len().wrapping_sub(1);
        for (at, &step) in plan.steps.iter().enumerate() {
            if let (true, Some(direct), Step::Block(k)) = (at == last, direct, step) {
                for copy in 0..copies {
                    self.file_at(copy);
                    self.allocation().keep_to_end(&direct.values());
                    self.body(&blocks[k])?;
                    self.outputs_from_registers(plan, direct, copy)?;
                }
                self.file_at(0);
                continue;
            }
            match (step, step.block()) {
                (Step::LoopEnd, None) => {
                    let top = body_start.take().ok_or_else(|| {
                        JitError::Lowering("a kernel loop end without its start".into())
                    })?;
                    // aL += i.z in every lane (also after the last iteration),
                    // then another iteration unless none is left.
                    for copy in 0..copies {
                        self.file_at(copy);
                        let al = self.row(layout::AL);
                        self.a.load(S1, al);
                        dynasm!(self.a.ops ; .arch x64 ; mov eax, [rdi + layout::LOOP_INCREMENT]);
                        self.a.broadcast_eax(S2);
                        self.a.v().v3(V::Paddd, S1, S1, S2);
                        self.a.store(al, S1);
                    }
                    self.file_at(0);
                    let done = self.a.ops.new_dynamic_label();
                    dynasm!(self.a.ops
                        ; .arch x64
                        ; test r10d, r10d
                        ; jz =>done
                        ; dec r10d
                        ; jmp =>top
                    );
                    self.a.bind(done);
                }
                (_, Some(k)) => {
                    for copy in 0..copies {
                        self.file_at(copy);
                        self.step(step, &blocks[k])?;
                    }
                    self.file_at(0);
                    if let Step::LoopStart(_) = step {
                        // r10d = iterations left after this one (the same in
                        // every group's header).
                        let top = self.a.ops.new_dynamic_label();
                        dynasm!(self.a.ops ; .arch x64 ; mov r10d, [rdi + layout::LOOP_COUNT]);
                        self.a.bind(top);
                        body_start = Some(top);
                    }
                }
                (Step::Mask { .. } | Step::Track { .. } | Step::Count(_), None) => {
                    let block = ops_block(step)
                        .ok_or_else(|| JitError::Lowering("a step without operations".into()))?;
                    for copy in 0..copies {
                        self.file_at(copy);
                        self.body(&block)?;
                    }
                    self.file_at(0);
                }
                (Step::Fill { row, seq, counter }, None) => {
                    for copy in 0..copies {
                        self.file_at(copy);
                        self.fill(row, seq, counter);
                    }
                    self.file_at(0);
                }
                _ => return Err(JitError::Lowering("a malformed kernel step".into())),
            }
        }
        Ok(())
    }

    /// [`Step::Fill`] for the group `rdi` points at, lane after lane with
    /// scalar code (the value moves from lane to lane): skipped unless the
    /// call carries. The carried value is in the pass's first file.
    fn fill(&mut self, row: u16, seq: u16, counter: u16) {
        let file_bytes = layout::file_bytes(self.lanes) as i32;
        let carried = self.row(layout::CARRIED) + layout::carried_offset(row as usize)
            - self.copy.file as i32 * file_bytes;
        let (carrying, counter) = (self.row(layout::CARRYING), self.row(counter as usize));
        let (row, seq) = (self.row(row as usize), self.row(seq as usize));
        let skip = self.a.ops.new_dynamic_label();
        dynasm!(self.a.ops
            ; .arch x64
            ; cmp DWORD [rdi + carrying], 0
            ; je =>skip
            ; mov edx, [rdi + counter]
            ; mov ecx, [rdi + carried]
        );
        for lane in 0..self.lanes as i32 {
            let (value, count) = (row + 4 * lane, seq + 4 * lane);
            dynasm!(self.a.ops
                ; .arch x64
                ; mov eax, [rdi + value]
                ; cmp [rdi + count], edx
                ; cmove ecx, eax
                ; mov [rdi + value], ecx
            );
        }
        dynasm!(self.a.ops ; .arch x64 ; mov [rdi + carried], ecx);
        self.a.bind(skip);
    }

    /// One step's block for the group `rdi` points at: a branch saves its
    /// condition, a predicated block keeps the other lanes' rows, a loop's
    /// start leaves its count and increment in the header.
    fn step(&mut self, step: Step, block: &LaneBlock) -> Result<(), JitError> {
        match step {
            Step::Block(_) => self.body(block),
            Step::Branch(_) => {
                self.body(block)?;
                let cond = block.exit_cond.ok_or_else(|| {
                    JitError::Lowering("a kernel branch without a condition".into())
                })?;
                let r = self.reg_of(cond, &[])?;
                let off = self.row(layout::PREDICATE);
                self.a.store(off, r);
                Ok(())
            }
            Step::Predicated { when, .. } => {
                // Skipped when no lane of the group has the condition `when`
                // (a uniform condition, or lanes that agree): its stores
                // would keep every row.
                let skip = self.a.ops.new_dynamic_label();
                let off = self.row(layout::PREDICATE);
                self.a.load(S1, off);
                self.a.movmsk(S1);
                if when {
                    dynasm!(self.a.ops ; .arch x64 ; test eax, eax ; jz =>skip);
                } else {
                    let every = ((1u32 << self.lanes) - 1) as i32;
                    dynasm!(self.a.ops ; .arch x64 ; cmp eax, every ; je =>skip);
                }
                self.predicate = Some((layout::PREDICATE, when));
                let result = self.body(block);
                self.predicate = None;
                self.a.bind(skip);
                self.a.forget_masks();
                result
            }
            Step::Guarded { mask, .. } => {
                // Skipped when no lane of the group is in the mask: its
                // stores would keep every row.
                let skip = self.a.ops.new_dynamic_label();
                let off = self.row(mask as usize);
                self.a.load(S1, off);
                self.a.movmsk(S1);
                dynasm!(self.a.ops ; .arch x64 ; test eax, eax ; jz =>skip);
                self.predicate = Some((mask as usize, true));
                let result = self.body(block);
                self.predicate = None;
                self.a.bind(skip);
                self.a.forget_masks();
                result
            }
            Step::Decide { mask, cond, .. } => {
                self.predicate = mask.map(|row| (row as usize, true));
                let result = self.body(block);
                self.predicate = None;
                result?;
                let c = block.exit_cond.ok_or_else(|| {
                    JitError::Lowering("a kernel branch without a condition".into())
                })?;
                let r = self.reg_of(c, &[])?;
                let off = self.row(cond as usize);
                self.a.store(off, r);
                Ok(())
            }
            Step::LoopStart(_) => {
                self.body(block)?;
                let (count, increment) = block
                    .loop_values
                    .ok_or_else(|| JitError::Lowering("a kernel loop without its values".into()))?;
                let r = self.reg_of(count, &[])?;
                self.a.store_lane0(layout::LOOP_COUNT, r);
                let r = self.reg_of(increment, &[count])?;
                self.a.store_lane0(layout::LOOP_INCREMENT, r);
                Ok(())
            }
            Step::LoopEnd
            | Step::Mask { .. }
            | Step::Track { .. }
            | Step::Count(_)
            | Step::Fill { .. } => Err(JitError::Lowering("a step without a block".into())),
        }
    }

    /// Lanes moved by one `xmm`/`ymm` transpose (4 and 8 lanes; 16 lanes
    /// transpose in `zmm` registers): 8 in `ymm` halves where the rows are
    /// that wide (a row then comes from one 32-byte store, which the block's
    /// loads of it can forward from), else 4.
    fn chunk(&self) -> usize {
        if self.lanes >= 8 { 8 } else { 4 }
    }

    /// Rows `row..row + 4` of every lane = the `Vec4` at `field` of the
    /// lane's record in `source`.
    fn load_lanes(&mut self, source: LaneSource, field: usize, row: usize) {
        if self.lanes == 16 {
            // Register k holds the records of lanes k, k + 4, k + 8, k + 12
            // in its four 128-bit blocks; one 4×4 transpose per block gives
            // the rows, each stored whole (64 bytes, which the block's load
            // of it forwards from).
            for k in 0..4u8 {
                let records: [Mem; 4] =
                    std::array::from_fn(|j| source.record(k as usize + 4 * j, field));
                self.load_quarters(k, records);
            }
            for (c, r) in self.transpose_blocks().into_iter().enumerate() {
                let off = self.row(row + c);
                evex::vmovaps_store(&mut self.a.ops, file_row(off), evex::Zmm::new(r), None);
            }
            return;
        }
        let chunk = self.chunk();
        for first in (0..self.lanes).step_by(chunk) {
            let records = source.slots(first, chunk, field);
            let rows = self.row_slots(first, row);
            self.transpose_in(records, rows, chunk == 8);
        }
    }

    /// The `Vec4` at `field` of each lane's record in `source` = rows
    /// `row..row + 4` of the lane.
    fn store_lanes(&mut self, row: usize, source: LaneSource, field: usize) {
        if self.lanes == 16 {
            // Each row with one 64-byte load (from the block's 64-byte store
            // of it), a 4×4 transpose per 128-bit block, then register k's
            // blocks are the records of lanes k, k + 4, k + 8, k + 12.
            for c in 0..4u8 {
                let off = self.row(row + c as usize);
                evex::vmovaps_load(
                    &mut self.a.ops,
                    evex::Zmm::new(c),
                    file_row(off),
                    evex::Masking::None,
                );
            }
            for (k, r) in self.transpose_blocks().into_iter().enumerate() {
                let records: [Mem; 4] = std::array::from_fn(|j| source.record(k + 4 * j, field));
                self.store_quarters(r, records);
            }
            return;
        }
        let chunk = self.chunk();
        for first in (0..self.lanes).step_by(chunk) {
            let records = source.slots(first, chunk, field);
            let rows = self.row_slots(first, row);
            self.transpose_out(rows, records, chunk == 8);
        }
    }

    /// 16 lanes: register `d`'s four 128-bit blocks = the vectors at
    /// `records`.
    fn load_quarters(&mut self, d: u8, records: [Mem; 4]) {
        let (m, z) = (records[0], evex::Zmm::new(d));
        dynasm!(self.a.ops ; .arch x64 ; vmovups Rx(d), [Rq(m.base) + m.disp]);
        for (j, &m) in (1u8..).zip(&records[1..]) {
            let none = evex::Masking::None;
            let quarter = evex::Part::Mem(m.evex());
            evex::vinsertf32x4(&mut self.a.ops, z, z, quarter, j, none);
        }
    }

    /// 16 lanes: the vectors at `records` = register `s`'s four 128-bit
    /// blocks.
    fn store_quarters(&mut self, s: u8, records: [Mem; 4]) {
        let m = records[0];
        dynasm!(self.a.ops ; .arch x64 ; vmovups [Rq(m.base) + m.disp], Rx(s));
        for (j, &m) in (1u8..).zip(&records[1..]) {
            let quarter = evex::Part::Mem(m.evex());
            evex::vextractf32x4(&mut self.a.ops, quarter, evex::Zmm::new(s), j, None);
        }
    }

    /// 16 lanes: transposes the 4×4 matrix in each 128-bit block of
    /// registers 0–3 (element `c` of register `k`'s block goes to element `k`
    /// of the block of the register returned at index `c`). Uses registers
    /// 0–7.
    fn transpose_blocks(&mut self) -> [u8; 4] {
        let z = evex::Zmm::new;
        let none = evex::Masking::None;
        let o = &mut self.a.ops;
        evex::vunpcklps(o, z(4), z(0), evex::Src::Zmm(z(1)), none);
        evex::vunpckhps(o, z(5), z(0), evex::Src::Zmm(z(1)), none);
        evex::vunpcklps(o, z(6), z(2), evex::Src::Zmm(z(3)), none);
        evex::vunpckhps(o, z(7), z(2), evex::Src::Zmm(z(3)), none);
        // 0x44: elements 0, 1 of each; 0xEE: elements 2, 3 of each.
        evex::vshufps(o, z(0), z(4), evex::Src::Zmm(z(6)), 0x44, none);
        evex::vshufps(o, z(1), z(4), evex::Src::Zmm(z(6)), 0xEE, none);
        evex::vshufps(o, z(2), z(5), evex::Src::Zmm(z(7)), 0x44, none);
        evex::vshufps(o, z(3), z(5), evex::Src::Zmm(z(7)), 0xEE, none);
        [0, 1, 2, 3]
    }

    /// Lanes from `first` of rows `row..row + 4`.
    fn row_slots(&self, first: usize, row: usize) -> [Mem; 4] {
        std::array::from_fn(|c| Mem {
            base: FILE,
            disp: self.row(row + c) + 4 * first as i32,
        })
    }

    /// Rows `rows` (4 or, when `wide`, 8 lanes each) = the transpose of the
    /// vectors `states` (vector `k`'s element `c` is lane `k` of row `c`).
    /// Uses `xmm0`–`xmm5`/`ymm0`–`ymm5`. Rows are aligned; records are
    /// not (a caller's `VertexRegisters` slice is only 4-byte aligned), so
    /// they move with unaligned loads and stores.
    fn transpose_in(&mut self, states: [Mem; 8], rows: [Mem; 4], wide: bool) {
        let vex = self.a.width != crate::jit::wide::width::Width::Sse41;
        let out = self.transpose_records(states, vex, wide);
        for (&r, m) in out.iter().zip(&rows) {
            self.store_vector(vex, wide, *m, r);
        }
    }

    /// The transpose of the vectors `states` in registers (returned: the
    /// one of each component), as [`Self::transpose_in`] stores them.
    fn transpose_records(&mut self, states: [Mem; 8], vex: bool, wide: bool) -> [u8; 4] {
        for r in 0..4u8 {
            let (lo, hi) = (states[r as usize], states[r as usize + 4]);
            if !vex {
                dynasm!(self.a.ops ; .arch x64 ; movups Rx(r), [Rq(lo.base) + lo.disp]);
                continue;
            }
            dynasm!(self.a.ops ; .arch x64 ; vmovups Rx(r), [Rq(lo.base) + lo.disp]);
            if wide {
                // Lane k + 4 in the upper half.
                dynasm!(self.a.ops
                    ; .arch x64
                    ; vinsertf128 Ry(r), Ry(r), [Rq(hi.base) + hi.disp], 1
                );
            }
        }
        self.transpose_registers(vex, wide)
    }

    /// The vectors `states` = the transpose of rows `rows`.
    fn transpose_out(&mut self, rows: [Mem; 4], states: [Mem; 8], wide: bool) {
        let vex = self.a.width != crate::jit::wide::width::Width::Sse41;
        for (r, m) in rows.iter().enumerate() {
            let (r, b, d) = (r as u8, m.base, m.disp);
            match (vex, wide) {
                (false, _) => dynasm!(self.a.ops ; .arch x64 ; movaps Rx(r), [Rq(b) + d]),
                (true, false) => dynasm!(self.a.ops ; .arch x64 ; vmovaps Rx(r), [Rq(b) + d]),
                (true, true) => dynasm!(self.a.ops ; .arch x64 ; vmovaps Ry(r), [Rq(b) + d]),
            }
        }
        let out = self.transpose_registers(vex, wide);
        for (k, &r) in out.iter().enumerate() {
            let (lo, hi) = (states[k], states[k + 4]);
            self.store_vector(vex, false, lo, r);
            if wide {
                dynasm!(self.a.ops
                    ; .arch x64
                    ; vextractf128 [Rq(hi.base) + hi.disp], Ry(r), 1
                );
            }
        }
    }

    /// `m` = register `r` (`xmm`, or `ymm` when `wide`), unaligned: `m` may be
    /// a record.
    fn store_vector(&mut self, vex: bool, wide: bool, m: Mem, r: u8) {
        let (b, d) = (m.base, m.disp);
        match (vex, wide) {
            (false, _) => dynasm!(self.a.ops ; .arch x64 ; movups [Rq(b) + d], Rx(r)),
            (true, false) => dynasm!(self.a.ops ; .arch x64 ; vmovups [Rq(b) + d], Rx(r)),
            (true, true) => dynasm!(self.a.ops ; .arch x64 ; vmovups [Rq(b) + d], Ry(r)),
        }
    }

    /// Transposes the 4×4 matrices in registers 0–3 (each 128-bit half on
    /// its own when `wide`): element `c` of register `k` goes to element `k`
    /// of the register returned at index `c`. Uses registers 0–5.
    fn transpose_registers(&mut self, vex: bool, wide: bool) -> [u8; 4] {
        match (vex, wide) {
            (true, true) => {
                dynasm!(self.a.ops
                    ; .arch x64
                    ; vunpcklps ymm4, ymm0, ymm1
                    ; vunpckhps ymm0, ymm0, ymm1
                    ; vunpcklps ymm5, ymm2, ymm3
                    ; vunpckhps ymm2, ymm2, ymm3
                    ; vunpcklpd ymm1, ymm4, ymm5
                    ; vunpckhpd ymm3, ymm4, ymm5
                    ; vunpcklpd ymm4, ymm0, ymm2
                    ; vunpckhpd ymm5, ymm0, ymm2
                );
            }
            (true, false) => {
                dynasm!(self.a.ops
                    ; .arch x64
                    ; vunpcklps xmm4, xmm0, xmm1
                    ; vunpckhps xmm0, xmm0, xmm1
                    ; vunpcklps xmm5, xmm2, xmm3
                    ; vunpckhps xmm2, xmm2, xmm3
                    ; vunpcklpd xmm1, xmm4, xmm5
                    ; vunpckhpd xmm3, xmm4, xmm5
                    ; vunpcklpd xmm4, xmm0, xmm2
                    ; vunpckhpd xmm5, xmm0, xmm2
                );
            }
            (false, _) => {
                dynasm!(self.a.ops
                    ; .arch x64
                    ; movaps xmm4, xmm0
                    ; unpcklps xmm4, xmm1
                    ; unpckhps xmm0, xmm1
                    ; movaps xmm5, xmm2
                    ; unpcklps xmm5, xmm3
                    ; unpckhps xmm2, xmm3
                    ; movaps xmm1, xmm4
                    ; unpcklpd xmm1, xmm5
                    ; unpckhpd xmm4, xmm5
                    ; movaps xmm3, xmm0
                    ; unpcklpd xmm3, xmm2
                    ; unpckhpd xmm0, xmm2
                );
                return [1, 4, 3, 0];
            }
        }
        [1, 3, 4, 5]
    }
}

/// Output registers the kernel's last step (a [`Step::Block`]) writes
/// whole, which the kernel transposes into the group's records straight from
/// the registers holding their values at the block's end (under the usual
/// output mask) instead of reloading the rows the block stored.
pub(super) struct DirectOutputs {
    /// Each output register and the values of its four components.
    outputs: Vec<(usize, [crate::jit::wide::lanes::LaneRef; 4])>,
}

impl DirectOutputs {
    /// The output registers (bit `n`: `o{n}`).
    fn mask(&self) -> u32 {
        self.outputs.iter().fold(0, |m, &(n, _)| m | 1 << n)
    }

    /// The values kept live to the block's end.
    fn values(&self) -> Vec<crate::jit::wide::lanes::LaneRef> {
        self.outputs.iter().flat_map(|(_, v)| *v).collect()
    }
}

/// At most this many values are kept live to the last block's end for
/// [`DirectOutputs`] (of 11 value registers; the rest stay for the block).
const MAX_DIRECT_VALUES: usize = 8;

impl Function<'_> {
    /// The outputs [`DirectOutputs`] applies to: AVX2 (8 lanes, one `ymm`
    /// transpose per output and group), the plan's last step a whole-lane
    /// [`Step::Block`] that stores all four rows of the output (then they
    /// hold those values at the group's end), not a copy of an input.
    fn direct_outputs(
        &self,
        plan: &KernelPlan,
        blocks: &[LaneBlock],
        passed: &[OutputCopy],
    ) -> Option<DirectOutputs> {
        if self.a.width != crate::jit::wide::width::Width::Avx2 || self.lanes != 8 {
            return None;
        }
        let Some(&Step::Block(k)) = plan.steps.last() else {
            return None;
        };
        let block = blocks.get(k)?;
        let mut stored: [Option<crate::jit::wide::lanes::LaneRef>; 64] = [None; 64];
        for op in &block.ops {
            if let LaneOp::Store(row, v) = *op {
                let row = row as usize;
                if (layout::OUTPUT..layout::OUTPUT + 64).contains(&row) {
                    stored[row - layout::OUTPUT] = Some(v);
                }
            }
        }
        let mut outputs = Vec::new();
        for n in 0..16 {
            if plan.store.register(layout::OUTPUT, n) == 0
                || passed.iter().any(|c| c.output as usize == n)
            {
                continue;
            }
            let [Some(x), Some(y), Some(z), Some(w)] = [0, 1, 2, 3].map(|c| stored[4 * n + c])
            else {
                continue;
            };
            if 4 * (outputs.len() + 1) > MAX_DIRECT_VALUES {
                break;
            }
            outputs.push((n, [x, y, z, w]));
        }
        (!outputs.is_empty()).then_some(DirectOutputs { outputs })
    }

    /// After the last block of group `copy` (its values of `direct` kept
    /// live): under the usual output mask (every output the kernel writes),
    /// each output of `direct` transposed from the registers holding its
    /// components into the group's records; the rows stay stored for the
    /// other masks' stores from rows.
    fn outputs_from_registers(
        &mut self,
        plan: &KernelPlan,
        direct: &DirectOutputs,
        copy: usize,
    ) -> Result<(), JitError> {
        let every = (0..16)
            .filter(|&n| plan.store.register(layout::OUTPUT, n) != 0)
            .fold(0u32, |m, n| m | 1 << n);
        let skip = self.a.ops.new_dynamic_label();
        dynasm!(self.a.ops
            ; .arch x64
            ; cmp DWORD [rdi + layout::OUTPUT_MASK], every as i32
            ; jne =>skip
        );
        // `r11` is at the records of group `self.copy.records`.
        let shift = (copy as i32 - self.copy.records as i32) * self.copy.stride;
        for &(n, values) in &direct.outputs {
            let mut regs = [0u8; 4];
            for (r, &v) in regs.iter_mut().zip(&values) {
                *r = self.reg_of(v, &values)?;
            }
            let [x, y, z, w] = regs;
            let record = |lane: usize| {
                let m = LaneSource::Outputs.record(lane, 16 * n);
                (m.base, m.disp + shift)
            };
            // Scratch: the mask register and two of one primitive's (no
            // value lives there between operations).
            const T0: u8 = 0;
            const T1: u8 = S1;
            const O: u8 = S2;
            for half in 0..2usize {
                if half == 0 {
                    dynasm!(self.a.ops
                        ; .arch x64
                        ; vunpcklps Ry(T0), Ry(x), Ry(y)
                        ; vunpcklps Ry(T1), Ry(z), Ry(w)
                    );
                } else {
                    dynasm!(self.a.ops
                        ; .arch x64
                        ; vunpckhps Ry(T0), Ry(x), Ry(y)
                        ; vunpckhps Ry(T1), Ry(z), Ry(w)
                    );
                }
                // Lanes 2 * half and 2 * half + 1 (and 4 above each).
                for odd in 0..2usize {
                    if odd == 0 {
                        dynasm!(self.a.ops ; .arch x64 ; vunpcklpd Ry(O), Ry(T0), Ry(T1));
                    } else {
                        dynasm!(self.a.ops ; .arch x64 ; vunpckhpd Ry(O), Ry(T0), Ry(T1));
                    }
                    let lane = 2 * half + odd;
                    let (lo_base, lo) = record(lane);
                    let (hi_base, hi) = record(lane + 4);
                    dynasm!(self.a.ops
                        ; .arch x64
                        ; vmovups [Rq(lo_base) + lo], Rx(O)
                        ; vextractf128 [Rq(hi_base) + hi], Ry(O), 1
                    );
                }
            }
        }
        self.a.bind(skip);
        self.a.forget_masks();
        Ok(())
    }
}

impl StateRows for Function<'_> {
    fn load_register(&mut self, field: usize, row: usize) {
        self.load_lanes(LaneSource::States, field, row);
    }

    fn store_register(&mut self, row: usize, field: usize) {
        self.store_lanes(row, LaneSource::States, field);
    }

    fn load_scalars(&mut self, row: usize, field: usize, flag: bool) {
        for lane in 0..self.lanes {
            let from = state_offset(lane, field);
            let to = self.row(row) + 4 * lane as i32;
            if flag {
                dynasm!(self.a.ops ; .arch x64 ; movzx eax, BYTE [r8 + from] ; neg eax);
            } else {
                dynasm!(self.a.ops ; .arch x64 ; mov eax, [r8 + from]);
            }
            dynasm!(self.a.ops ; .arch x64 ; mov [rdi + to], eax);
        }
    }

    fn store_scalars(&mut self, row: usize, field: usize, flag: bool) {
        for lane in 0..self.lanes {
            let from = self.row(row) + 4 * lane as i32;
            let to = state_offset(lane, field);
            dynasm!(self.a.ops ; .arch x64 ; mov eax, [rdi + from]);
            if flag {
                dynasm!(self.a.ops ; .arch x64 ; and eax, 1 ; mov BYTE [r8 + to], al);
            } else {
                dynasm!(self.a.ops ; .arch x64 ; mov [r8 + to], eax);
            }
        }
    }
}

/// The copied inputs of `passed`, each once (in order of first copy), with
/// every output copying it.
fn copies_by_input(passed: &[OutputCopy]) -> Vec<(u8, Vec<u8>)> {
    let mut by_input: Vec<(u8, Vec<u8>)> = Vec::new();
    for copy in passed {
        match by_input.iter_mut().find(|(input, _)| *input == copy.input) {
            Some((_, outputs)) => outputs.push(copy.output),
            None => by_input.push((copy.input, vec![copy.output])),
        }
    }
    by_input
}

#[cfg(test)]
mod tests {
    use crate::ShaderConfig;
    use crate::jit::wide::layout;
    use iced_x86::{Mnemonic, OpKind, Register};

    /// The AVX2 one-group vertex kernel of `text` (F32), decoded up to its
    /// `ret` (the out-of-line tested stores included).
    fn avx2_vertex_kernel(text: &str) -> Option<Vec<iced_x86::Instruction>> {
        avx2_vertex_kernel_in(text, ShaderConfig::default().precision)
    }

    /// [`avx2_vertex_kernel`] in `precision` (the one-group kernel of
    /// `super::tests::avx2_vertex_kernels_in`, which skips visibly without AVX2).
    fn avx2_vertex_kernel_in(
        text: &str,
        precision: crate::Precision,
    ) -> Option<Vec<iced_x86::Instruction>> {
        super::super::tests::avx2_vertex_kernels_in(text, precision).map(|[one_group, _]| one_group)
    }

    /// Loads of output rows (`vmovaps ymm, [rdi + row]`) in `code`.
    fn output_row_loads(code: &[iced_x86::Instruction]) -> usize {
        let rows: Vec<u64> = (layout::OUTPUT..layout::OUTPUT + 64)
            .map(|row| layout::row_offset(row, 8) as u64)
            .collect();
        code.iter()
            .filter(|i| {
                i.mnemonic() == Mnemonic::Vmovaps
                    && i.op_count() == 2
                    && i.op1_kind() == OpKind::Memory
                    && i.memory_base() == Register::RDI
                    && rows.contains(&i.memory_displacement64())
            })
            .count()
    }

    /// Two outputs written whole by the one block: the usual mask's stores
    /// transpose them from registers, so only the other masks' tested
    /// stores load their rows (4 each); a partly written `o2` (its `zw`
    /// from the starting state) is loaded on both paths. Without the direct
    /// path (`direct_outputs` giving `None`) both paths load every row:
    /// 24, not 16.
    #[test]
    fn outputs_written_whole_by_the_last_block_are_not_reloaded() {
        let text = "
.proc main
    add o0, v0, v1
    mul o1, v0, v1
    mov o2.xy, v2
    end
.end
";
        let Some(code) = avx2_vertex_kernel(text) else {
            return;
        };
        assert_eq!(output_row_loads(&code), 4 + 4 + 2 * 4);
        let extracts = code
            .iter()
            .filter(|i| i.mnemonic() == Mnemonic::Vextractf128)
            .count();
        // Four upper-half records per output and path: o0, o1 from
        // registers, o2 from rows, and all three on the tested path.
        assert_eq!(extracts, 4 * (2 + 1 + 3));
    }

    /// The input records of `v{input}` an AVX2 kernel loads (`[r8 + disp]`,
    /// records of 256 bytes at 8 lanes: register `n` at `16 * n` in each).
    fn input_record_loads(code: &[iced_x86::Instruction], input: u32) -> usize {
        code.iter()
            .filter(|i| {
                (0..i.op_count()).any(|n| i.op_kind(n) == OpKind::Memory)
                    && i.memory_base() == Register::R8
                    && i.memory_displacement32() % 256 == 16 * input
                    && i.op0_kind() == OpKind::Register
            })
            .count()
    }

    /// F24: three outputs copying `v1` and one copying `v2` (the blocks
    /// read neither): on the untested path (the usual output mask) each
    /// record pair of `v1` is loaded and converted once for its three
    /// outputs, in the fast run and in the exact run; the tested path (out
    /// of the loop) converts per output. A conversion of one input loads
    /// 8 records (8 lanes: `vmovups` and `vinsertf128` into each of four
    /// `ymm`). (Converting per output on the untested path too, as before,
    /// fails it: 8 × (2 × 3 + 2 × 3) = 96 loads of `v1`.)
    #[test]
    fn f24_copies_of_one_input_convert_it_once() {
        let text = "
.proc main
    dp4 o0.x, c0, v0
    mov o1, v1
    mov o2, v1
    mov o3, v2
    mov o4, v1
    end
.end
";
        let Some(code) = avx2_vertex_kernel_in(text, crate::Precision::F24) else {
            return;
        };
        // Untested: fast and exact runs, once each; tested: both runs,
        // once per output.
        assert_eq!(input_record_loads(&code, 1), 8 * (2 + 2 * 3));
        assert_eq!(input_record_loads(&code, 2), 8 * (2 + 2));
        // Every copy is stored by both runs on both paths, `o0` (from
        // rows) once per path: 4 upper halves per output, run and path.
        let extracts = code
            .iter()
            .filter(|i| i.mnemonic() == Mnemonic::Vextractf128)
            .count();
        assert_eq!(extracts, 4 * (2 * 2 * 4 + 2));
    }

    /// The group loop of a one-group kernel: from the target of the jump
    /// back (after `dec r9`) up to that `dec`.
    fn group_loop(code: &[iced_x86::Instruction]) -> &[iced_x86::Instruction] {
        let end = (code.iter())
            .position(|i| i.mnemonic() == Mnemonic::Dec && i.op0_register() == Register::R9)
            .expect("a group loop");
        let back = code[end + 1].near_branch_target();
        let start = (code.iter())
            .position(|i| i.ip() == back)
            .expect("the loop's start");
        &code[start..end]
    }

    /// Stores (`vmovaps [rdi + row], ymm`) to the four rows of `r{reg}` in
    /// `code`.
    fn row_stores(code: &[iced_x86::Instruction], reg: usize) -> usize {
        let rows: Vec<u64> = (0..4)
            .map(|c| layout::row_offset(layout::TEMP + 4 * reg + c, 8) as u64)
            .collect();
        code.iter()
            .filter(|i| {
                i.mnemonic() == Mnemonic::Vmovaps
                    && i.op0_kind() == OpKind::Memory
                    && i.memory_base() == Register::RDI
                    && rows.contains(&i.memory_displacement64())
            })
            .count()
    }

    /// `mnemonic`s in `code`.
    fn count(code: &[iced_x86::Instruction], mnemonic: Mnemonic) -> usize {
        code.iter().filter(|i| i.mnemonic() == mnemonic).count()
    }

    /// Under `Reset` (§9.35): `r1` and `r2` of the starting state, which no
    /// step writes, are broadcast once per call, not per group (F24: they
    /// are temporaries converted on entry, which the unit-state kernel
    /// stores back), and the sum nothing reads (`r0`, stored by no step's
    /// reader) is not computed, nor the flushes of its operands: the F24
    /// loop has no broadcast, no addition and no flush left. The controls:
    /// where the sum is an output, its additions are in the loop, and where
    /// a later step reads `r1` after the program stored it, the loop
    /// broadcasts its four rows per group, and where no step reads it after
    /// the store, the loop neither broadcasts nor stores them. (Dropping only the dead stores, not the
    /// operations only they read, leaves 2 × 4 additions, fast and exact
    /// runs; loading the rows of `KernelPlan::store` per group, as before,
    /// leaves 8 broadcasts.)
    #[test]
    fn the_loop_neither_reloads_the_starting_state_nor_computes_unread_temporaries() {
        let program = |body: &str| format!(".proc main\n{body}\n    end\n.end\n");
        for precision in [crate::Precision::F24, crate::Precision::F32] {
            let Some(code) =
                avx2_vertex_kernel_in(&program("    mov r0, r1\n    add r0, r1, r2"), precision)
            else {
                return;
            };
            let body = group_loop(&code);
            assert_eq!(count(body, Mnemonic::Vpbroadcastd), 0, "{precision:?}");
            assert_eq!(
                row_stores(body, 1) + row_stores(body, 2),
                0,
                "{precision:?}"
            );
            assert_eq!(count(body, Mnemonic::Vaddps), 0, "{precision:?}");
            assert_eq!(count(body, Mnemonic::Vpcmpgtd), 0, "{precision:?}");
            // The once-per-call broadcasts of r1 and r2 (F24: the two are
            // stored back, so they come whole).
            let once = count(&code, Mnemonic::Vpbroadcastd) - count(body, Mnemonic::Vpbroadcastd);
            assert!(once >= 8, "{precision:?}: {once}");

            let code = avx2_vertex_kernel_in(&program("    add o0, r1, r2"), precision)
                .expect("AVX2 as above");
            assert!(
                count(group_loop(&code), Mnemonic::Vaddps) >= 4,
                "{precision:?}"
            );
            // `r1` read at the start, stored, and read by a later step: its
            // rows broadcast per group (4 stores), and stored by the block
            // (4 more).
            let text =
                "    add o0, r1, r2\n    mov r1, v0\n    ifu b0\n        add o1, r1, r2\n    .end";
            let code = avx2_vertex_kernel_in(&program(text), precision).expect("AVX2 as above");
            assert_eq!(row_stores(group_loop(&code), 1), 8, "{precision:?}");
            // Read at the start and stored only: the starting value stays.
            let code =
                avx2_vertex_kernel_in(&program("    add o0, r1, r2\n    mov r1, v0"), precision)
                    .expect("AVX2 as above");
            assert_eq!(row_stores(group_loop(&code), 1), 0, "{precision:?}");
        }
    }
}
