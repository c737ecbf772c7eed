//! The batch kernels ([`KernelPlan`]) on NEON: for each of `groups` whole
//! groups of 4 consecutive records, move the group into the register file,
//! run the plan's steps (blocks, branches whose sides run under lane masks,
//! uniform loops) and move the rows they wrote back (the x86-64 kernels'
//! contract), in two shapes ([`KernelShape`]). Values only uniforms
//! determine are computed once per call ([`hoist`]).
//!
//! A register moves with `ld4`/`st4` of single structures: one instruction
//! per lane moves that lane's `Vec4` to or from element `k` of four
//! registers (the transpose for free), post-incremented by the record size
//! (in `x6`) from one lane's record to the next. The records of the current
//! group are at `x3` (states, or input vertices) and `x5` (output vertices),
//! `x4` counts the groups left, `x7` holds the vertex layout's starting
//! state, `x8` its output mask and `w12` a loop's iterations left (block
//! code uses only `x0..=x2` and `x9..=x11`; a `Step::Fill` `x9..=x11` and
//! `x13`).
//!
//! A predicated step's stores select, per lane, between the new value and
//! the row as it is, by the branch's condition saved as whole-lane masks in
//! the `PREDICATE` row; a step no lane of the group takes is branched around.

use super::{Function, row};
use crate::jit::JitError;
use crate::jit::wide::codegen::hoist::remap;
use crate::jit::wide::codegen::{
    Driver, KernelShape, KernelSource, RegAlloc, StateRows, Target, hoist, start_field,
};
use crate::jit::wide::lanes::{LaneBlock, LaneOp, LaneRef};
use crate::jit::wide::layout;
use crate::jit::wide::plan::{KernelPlan, Step, ops_block};
use crate::state::UnitState;
use dynasmrt::{DynasmApi, DynasmLabelApi, dynasm};
use std::mem::{offset_of, size_of};

/// One vertex's registers in the emulator's layout (`crate::VertexRegisters`).
type VertexRegisters = [crate::Vec4; 16];

/// The records: `x3` (states or input vertices), `x5` (output vertices).
const RECORDS: u8 = 3;
const OUTPUTS: u8 = 5;

// Every displacement from a group's first record fits `add`'s and the
// scaled loads' 12 bits, and a group's stride fits `add`'s.
const _: () = assert!(4 * size_of::<UnitState>() < 4096);
const _: () = assert!(4 * size_of::<VertexRegisters>() < 4096);

impl KernelShape {
    /// Bytes of one lane's record.
    fn record(self) -> usize {
        match self {
            KernelShape::States => size_of::<UnitState>(),
            KernelShape::Vertices => size_of::<VertexRegisters>(),
        }
    }
}

impl Function<'_> {
    /// Emits the kernel of `source` for `shape` (one group per pass).
    pub(super) fn kernel(
        &mut self,
        source: KernelSource<'_>,
        shape: KernelShape,
    ) -> Result<(), JitError> {
        let plan = source.plan;
        self.enter();
        let record = shape.record() as u32;
        let stride = 4 * record;
        let (group, done) = (self.a.new_dynamic_label(), self.a.new_dynamic_label());
        // Only unconditional branches span the blocks' code (any length).
        dynasm!(self.a
            ; .arch aarch64
            ; cbnz x4, >start
            ; b =>done
            ; start:
            ; movz x6, record
        );
        // Values computed from uniforms only, once per call instead of once
        // per group.
        let blocks = hoist(self, plan, source.blocks)?;
        if shape == KernelShape::Vertices {
            let (start, mask) = (layout::START_STATE as u32, layout::OUTPUT_MASK as u32);
            dynasm!(self.a
                ; .arch aarch64
                ; ldr x7, [x0, start]
                ; ldr w8, [x0, mask]
            );
            self.load_start_once(plan);
        }
        dynasm!(self.a ; .arch aarch64 ; =>group);
        match shape {
            KernelShape::States => self.load_states(plan),
            KernelShape::Vertices => self.load_vertices(plan),
        }
        self.convert_inputs(source.convert_inputs);
        for n in (0..16).filter(|n| plan.convert_temps >> n & 1 != 0) {
            for c in 0..4 {
                let off = row(layout::TEMP + 4 * n + c);
                dynasm!(self.a ; .arch aarch64 ; ldr q1, [x0, off]);
                self.neon().f24_load(1, 1);
                dynasm!(self.a ; .arch aarch64 ; str q1, [x0, off]);
            }
        }
        self.steps(plan, &blocks)?;
        match shape {
            KernelShape::States => {
                self.store_states(plan);
                dynasm!(self.a ; .arch aarch64 ; add x3, x3, stride);
            }
            KernelShape::Vertices => {
                self.store_vertices(plan);
                dynasm!(self.a ; .arch aarch64 ; add x3, x3, stride ; add x5, x5, stride);
            }
        }
        dynasm!(self.a
            ; .arch aarch64
            ; subs x4, x4, 1
            ; b.eq >last
            ; b =>group
            ; last:
            ; =>done
            ; movz w10, 0
        );
        self.leave();
        Ok(())
    }

    /// Emits `plan`'s steps for the group.
    fn steps(&mut self, plan: &KernelPlan, blocks: &[LaneBlock]) -> Result<(), JitError> {
        // The first step of the loop body being emitted.
        let mut body_start = None;
        for &step in &plan.steps {
            match step {
                Step::Block(k) => self.body(&blocks[k])?,
                Step::Branch(k) => {
                    let block = &blocks[k];
                    self.body(block)?;
                    let cond = block.exit_cond.ok_or_else(|| {
                        JitError::Lowering("a kernel branch without a condition".into())
                    })?;
                    // The condition's sign bits as whole-lane masks, for the
                    // predicated steps' selects.
                    let r = self.reg_of(cond, &[])?;
                    let off = row(layout::PREDICATE);
                    dynasm!(self.a
                        ; .arch aarch64
                        ; cmlt v0.s4, V(r).s4, 0
                        ; str q0, [x0, off]
                    );
                }
                Step::Predicated { block, when } => {
                    // Skipped when no lane of the group takes it (a uniform
                    // condition, or lanes that agree): its stores would keep
                    // every row.
                    let skip = self.skip_unless_some_lane(layout::PREDICATE as u16, when);
                    self.body(&predicated(&blocks[block], layout::PREDICATE as u16, when))?;
                    dynasm!(self.a ; .arch aarch64 ; =>skip);
                }
                Step::Guarded { block, mask } => {
                    let skip = self.skip_unless_some_lane(mask, true);
                    self.body(&predicated(&blocks[block], mask, true))?;
                    dynasm!(self.a ; .arch aarch64 ; =>skip);
                }
                Step::Decide { block, mask, cond } => {
                    let emitted = match mask {
                        Some(mask) => predicated(&blocks[block], mask, true),
                        None => blocks[block].clone(),
                    };
                    self.body(&emitted)?;
                    let c = emitted.exit_cond.ok_or_else(|| {
                        JitError::Lowering("a kernel branch without a condition".into())
                    })?;
                    // The condition's sign bits as whole-lane masks, for the
                    // masks' and guarded steps' selects.
                    let r = self.reg_of(c, &[])?;
                    let off = row(cond as usize);
                    dynasm!(self.a
                        ; .arch aarch64
                        ; cmlt v0.s4, V(r).s4, 0
                        ; str q0, [x0, off]
                    );
                }
                Step::Fill { row, seq, counter } => self.fill(row, seq, counter),
                Step::Mask { .. } | Step::Track { .. } | Step::Count(_) => {
                    let block = ops_block(step)
                        .ok_or_else(|| JitError::Lowering("a step without operations".into()))?;
                    self.body(&block)?;
                }
                Step::LoopStart(k) => {
                    if body_start.is_some() {
                        return Err(JitError::Lowering("a nested kernel loop".into()));
                    }
                    let block = &blocks[k];
                    self.body(block)?;
                    let (count, increment) = block.loop_values.ok_or_else(|| {
                        JitError::Lowering("a kernel loop without its values".into())
                    })?;
                    let r = self.reg_of(count, &[])?;
                    self.store_lane0(layout::LOOP_COUNT, r);
                    let r = self.reg_of(increment, &[count])?;
                    self.store_lane0(layout::LOOP_INCREMENT, r);
                    // w12 = iterations left after this one (a uniform).
                    let top = self.a.new_dynamic_label();
                    let count = layout::LOOP_COUNT as u32;
                    dynasm!(self.a ; .arch aarch64 ; ldr w12, [x0, count] ; =>top);
                    body_start = Some(top);
                }
                Step::LoopEnd => {
                    let top = body_start.take().ok_or_else(|| {
                        JitError::Lowering("a kernel loop end without its start".into())
                    })?;
                    // aL += i.z in every lane (also after the last iteration),
                    // then another iteration unless none is left.
                    let (al, increment) = (row(layout::AL), layout::LOOP_INCREMENT as u32);
                    dynasm!(self.a
                        ; .arch aarch64
                        ; ldr q0, [x0, al]
                        ; ldr w9, [x0, increment]
                        ; dup v4.s4, w9
                        ; add v0.s4, v0.s4, v4.s4
                        ; str q0, [x0, al]
                        ; cbz w12, >done
                        ; sub w12, w12, 1
                        ; b =>top
                        ; done:
                    );
                }
            }
        }
        if body_start.is_some() {
            return Err(JitError::Lowering("a kernel loop without its end".into()));
        }
        Ok(())
    }

    /// [`Step::Fill`] for the group, lane after lane with scalar code (the
    /// value moves from lane to lane): skipped unless the call carries.
    fn fill(&mut self, r: u16, seq: u16, counter: u16) {
        let carried = row(layout::CARRIED) + layout::carried_offset(r as usize) as u32;
        let (carrying, counter) = (row(layout::CARRYING), row(counter as usize));
        let (value, seq) = (row(r as usize), row(seq as usize));
        dynasm!(self.a
            ; .arch aarch64
            ; ldr w9, [x0, carrying]
            ; cbz w9, >skip
            ; ldr w10, [x0, counter]
            ; ldr w11, [x0, carried]
        );
        for lane in 0..4u32 {
            let (at, count) = (value + 4 * lane, seq + 4 * lane);
            dynasm!(self.a
                ; .arch aarch64
                ; ldr w9, [x0, at]
                ; ldr w13, [x0, count]
                ; cmp w13, w10
                ; csel w11, w9, w11, eq
                ; str w11, [x0, at]
            );
        }
        dynasm!(self.a
            ; .arch aarch64
            ; str w11, [x0, carried]
            ; skip:
        );
    }

    /// Branches to the returned label (to bind after the guarded code) when
    /// no lane of the group has `when` in the lane mask row `mask`.
    fn skip_unless_some_lane(&mut self, mask: u16, when: bool) -> dynasmrt::DynamicLabel {
        let (skip, off) = (self.a.new_dynamic_label(), row(mask as usize));
        dynasm!(self.a ; .arch aarch64 ; ldr q0, [x0, off]);
        if when {
            dynasm!(self.a ; .arch aarch64 ; umaxv s0, v0.s4);
        } else {
            dynasm!(self.a ; .arch aarch64 ; uminv s0, v0.s4 ; mvn v0.b8, v0.b8);
        }
        dynasm!(self.a
            ; .arch aarch64
            ; fmov w9, s0
            ; cbnz w9, >run
            ; b =>skip
            ; run:
        );
        skip
    }

    /// The rows of the vertex layout's starting state (every lane the same,
    /// at `x7`) that the kernel needs and no step writes: once per call,
    /// before the first group (no group changes them). Output registers the
    /// program writes only in part are among them (they come out whole).
    fn load_start_once(&mut self, plan: &KernelPlan) {
        let mut needed = plan.read_first;
        for n in 0..16 {
            if plan.store.register(layout::OUTPUT, n) != 0 {
                for c in 0..4 {
                    needed.insert((layout::OUTPUT + 4 * n + c) as u16);
                }
            }
        }
        for r in needed.difference(&plan.store).rows() {
            self.broadcast_start(r as usize);
        }
    }

    /// Row `r` = the 32 bits (a `bool` as a lane mask for a flag row) of the
    /// starting state (at `x7`), in every lane.
    fn broadcast_start(&mut self, r: usize) {
        let (field, flag) = start_field(r);
        let (field, to) = (field as u32, row(r));
        if flag {
            dynasm!(self.a ; .arch aarch64 ; ldrb w9, [x7, field] ; neg w9, w9);
        } else {
            dynasm!(self.a ; .arch aarch64 ; ldr w9, [x7, field]);
        }
        dynasm!(self.a
            ; .arch aarch64
            ; dup v0.s4, w9
            ; str q0, [x0, to]
        );
    }

    /// A group of vertices' input registers (at `x3`) → the input rows; the
    /// rows of the starting state that a lane may observe and some step
    /// writes.
    fn load_vertices(&mut self, plan: &KernelPlan) {
        for n in (0..16).filter(|n| plan.load.inputs >> n & 1 != 0) {
            self.load_lanes(RECORDS, 16 * n, layout::INPUT + 4 * n);
        }
        for r in plan.read_first.intersection(&plan.store).rows() {
            self.broadcast_start(r as usize);
        }
    }

    /// The group's output vertices (at `x5`), each output register of the
    /// output mask (`w8`): the lane's value where the program writes it,
    /// else the starting state's.
    fn store_vertices(&mut self, plan: &KernelPlan) {
        for n in 0..16u32 {
            let field = 16 * n;
            dynasm!(self.a ; .arch aarch64 ; tbz w8, n, >skip);
            if plan.store.register(layout::OUTPUT, n as usize) != 0 {
                self.store_lanes(layout::OUTPUT + 4 * n as usize, OUTPUTS, field as usize);
            } else {
                // Here, while the group's records are in the cache, rather
                // than in a pass over the batch afterwards.
                let from = offset_of!(UnitState, outputs) as u32 + field;
                dynasm!(self.a ; .arch aarch64 ; ldr q0, [x7, from]);
                for lane in 0..4u32 {
                    let to = lane * size_of::<VertexRegisters>() as u32 + field;
                    dynasm!(self.a ; .arch aarch64 ; str q0, [x5, to]);
                }
            }
            dynasm!(self.a ; .arch aarch64 ; skip:);
        }
    }

    /// Rows `first_row..first_row + 4` of every lane = the `Vec4` at `field`
    /// of each lane's record (at `x{base}`, `x6` bytes apart).
    fn load_lanes(&mut self, base: u8, field: usize, first_row: usize) {
        let field = field as u32;
        dynasm!(self.a ; .arch aarch64 ; add x9, XSP(base), field);
        for lane in 0..4u32 {
            dynasm!(self.a
                ; .arch aarch64
                ; ld4 {v0.s, v1.s, v2.s, v3.s}[lane], [x9], x6
            );
        }
        for c in 0..4u8 {
            let to = row(first_row + c as usize);
            dynasm!(self.a ; .arch aarch64 ; str Q(c), [x0, to]);
        }
    }

    /// The `Vec4` at `field` of each lane's record (at `x{base}`, `x6` bytes
    /// apart) = rows `first_row..first_row + 4` of the lane.
    fn store_lanes(&mut self, first_row: usize, base: u8, field: usize) {
        for c in 0..4u8 {
            let from = row(first_row + c as usize);
            dynasm!(self.a ; .arch aarch64 ; ldr Q(c), [x0, from]);
        }
        let field = field as u32;
        dynasm!(self.a ; .arch aarch64 ; add x9, XSP(base), field);
        for lane in 0..4u32 {
            dynasm!(self.a
                ; .arch aarch64
                ; st4 {v0.s, v1.s, v2.s, v3.s}[lane], [x9], x6
            );
        }
    }
}

/// `block` for the lanes whose saved condition or lane mask (row `mask`:
/// `PREDICATE` or a `MASKS` row, whole lane masks) is `when`: every lane
/// computes it, and each store keeps the row's value in the other lanes (a
/// select against the row as it is).
fn predicated(block: &LaneBlock, mask: u16, when: bool) -> LaneBlock {
    let condition: LaneRef = 0;
    let mut ops = vec![LaneOp::Row(mask)];
    // Where each of `block`'s operations went.
    let mut map = Vec::with_capacity(block.ops.len());
    for &op in &block.ops {
        let op = remap(op, &map);
        if let LaneOp::Store(r, new) = op {
            let old = ops.len() as LaneRef;
            ops.push(LaneOp::Row(r));
            let (taken, kept) = if when { (new, old) } else { (old, new) };
            ops.push(LaneOp::Select(condition, taken, kept));
            ops.push(LaneOp::Store(r, old + 1));
        } else {
            ops.push(op);
        }
        map.push(ops.len() as LaneRef - 1);
    }
    let m = |v: LaneRef| map[v as usize];
    LaneBlock {
        ops,
        exit_cond: block.exit_cond.map(m),
        loop_values: block.loop_values.map(|(a, b)| (m(a), m(b))),
        ..block.clone()
    }
}

impl StateRows for Function<'_> {
    fn load_register(&mut self, field: usize, first_row: usize) {
        self.load_lanes(RECORDS, field, first_row);
    }

    fn store_register(&mut self, first_row: usize, field: usize) {
        self.store_lanes(first_row, RECORDS, field);
    }

    fn load_scalars(&mut self, r: usize, field: usize, flag: bool) {
        for lane in 0..4 {
            let from = (lane * size_of::<UnitState>() + field) as u32;
            let to = row(r) + 4 * lane as u32;
            if flag {
                dynasm!(self.a ; .arch aarch64 ; ldrb w9, [x3, from] ; neg w9, w9);
            } else {
                dynasm!(self.a ; .arch aarch64 ; ldr w9, [x3, from]);
            }
            dynasm!(self.a ; .arch aarch64 ; str w9, [x0, to]);
        }
    }

    fn store_scalars(&mut self, r: usize, field: usize, flag: bool) {
        for lane in 0..4 {
            let from = row(r) + 4 * lane as u32;
            let to = (lane * size_of::<UnitState>() + field) as u32;
            dynasm!(self.a ; .arch aarch64 ; ldr w9, [x0, from]);
            if flag {
                dynasm!(self.a ; .arch aarch64 ; and w9, w9, 1 ; strb w9, [x3, to]);
            } else {
                dynasm!(self.a ; .arch aarch64 ; str w9, [x3, to]);
            }
        }
    }
}
