//! `StatePolicy::Carry` in the batch kernels: when the vertices of a batch
//! do not depend on one another although their paths differ.
//!
//! Under `Carry` each vertex starts from the state the previous one left.
//! The vertices of a group still run side by side, each from the batch's
//! starting state, when no path reads a row before writing it that some
//! path writes: what a vertex reads is then the starting state's value,
//! which no earlier vertex changed. What differs from running them one
//! after another is only what a vertex leaves in the rows *it* does not
//! write: the state after the batch holds, per row, the value of the last
//! vertex that wrote it (else the starting value). Rows every path writes
//! are the last vertex's; the others (the *partial* rows) need to know which
//! lanes wrote them, which the kernel records in lane-mask rows.
//!
//! The analysis walks the kernel's steps once per distinct lane: a lane's
//! masks (the saved conditions and live masks of `layout::MASKS` and
//! `layout::PREDICATE`) and the rows it wrote so far. Each flag decision
//! forks the lane (both outcomes); lanes in the same situation are one.
//! Every step runs once in that walk, a loop body as its first pass: a read
//! in a later pass finds at least the rows written before it in the first
//! pass with the same decisions, so the first pass decides.

use super::Step;
use crate::jit::wide::lanes::{LaneBlock, RowSet};
use crate::jit::wide::layout;
use std::collections::HashSet;

/// Distinct lanes the walk follows at most (more: no plan, the driver runs
/// the batch).
const MAX_LANES: usize = 4096;

/// What the read-before-write walk found.
#[derive(Clone, Debug, PartialEq, Eq)]
struct CarryPlan {
    /// The rows some path writes and another does not.
    partial: RowSet,
    /// The partial output rows, whose value a vertex that does not write
    /// them copies out is the last earlier writer's.
    partial_outputs: RowSet,
}

/// Lane-mask rows the walk models: `layout::MASKS + n` is bit `n`,
/// `layout::PREDICATE` the bit after them.
fn mask_bit(row: u16) -> Option<u32> {
    let row = row as usize;
    if row == layout::PREDICATE {
        Some(layout::MASK_ROWS as u32)
    } else if (layout::MASKS..layout::MASKS + layout::MASK_ROWS).contains(&row) {
        Some((row - layout::MASKS) as u32)
    } else {
        None
    }
}

/// One lane as the walk follows it.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
struct Lane {
    /// Bit per modelled mask row: whether the lane is in it.
    masks: u32,
    /// The rows its path wrote so far.
    written: RowSet,
}

impl Lane {
    fn has(&self, row: u16) -> Option<bool> {
        Some(self.masks >> mask_bit(row)? & 1 != 0)
    }

    fn set(&mut self, row: u16, on: bool) -> Option<()> {
        let bit = mask_bit(row)?;
        self.masks = self.masks & !(1 << bit) | u32::from(on) << bit;
        Some(())
    }
}

/// The plan for running `steps` (over blocks whose rows read as they start
/// and rows written are `facts`) under `StatePolicy::Carry`, or `None` where
/// some path reads a row before writing it that some path writes (a vertex
/// then depends on the ones before it), or the paths are too many to follow.
fn carry_plan(steps: &[Step], facts: &[(RowSet, RowSet)]) -> Option<CarryPlan> {
    let mut any_writes = RowSet::default();
    for k in steps.iter().filter_map(|s| s.block()) {
        any_writes.union_with(&facts[k].1);
    }
    let mut lanes = vec![Lane {
        masks: 0,
        written: RowSet::default(),
    }];
    let mut next: Vec<Lane> = Vec::new();
    let mut seen: HashSet<Lane> = HashSet::new();
    for &step in steps {
        next.clear();
        seen.clear();
        for &lane in &lanes {
            for out in step_lane(step, lane, facts, &any_writes)? {
                if seen.insert(out) {
                    next.push(out);
                }
            }
        }
        if next.len() > MAX_LANES {
            return None;
        }
        std::mem::swap(&mut lanes, &mut next);
    }
    let mut full = any_writes;
    for lane in &lanes {
        full = full.intersection(&lane.written);
    }
    let partial = any_writes.difference(&full);
    let mut outputs = RowSet::default();
    for row in layout::OUTPUT..layout::OUTPUT + 64 {
        outputs.insert(row as u16);
    }
    Some(CarryPlan {
        partial,
        partial_outputs: partial.intersection(&outputs),
    })
}

/// The lanes `lane` becomes after `step` (two where it decides), or `None`
/// where it reads a row some path writes before its own path wrote it.
fn step_lane(
    step: Step,
    mut lane: Lane,
    facts: &[(RowSet, RowSet)],
    any_writes: &RowSet,
) -> Option<Vec<Lane>> {
    let runs = match step {
        Step::Block(_) | Step::Branch(_) | Step::LoopStart(_) => true,
        Step::Predicated { when, .. } => lane.has(layout::PREDICATE as u16)? == when,
        Step::Guarded { mask, .. } => lane.has(mask)?,
        Step::Decide { mask, .. } => match mask {
            None => true,
            Some(row) => lane.has(row)?,
        },
        Step::LoopEnd => {
            // `aL += i.z`: a read of `aL`.
            let al = layout::AL as u16;
            if any_writes.contains(al) && !lane.written.contains(al) {
                return None;
            }
            return Some(vec![lane]);
        }
        Step::Mask {
            dst,
            within,
            by,
            when,
        } => {
            let inside = match within {
                None => true,
                Some(row) => lane.has(row)?,
            };
            let on = inside && lane.has(by)? == when;
            lane.set(dst, on)?;
            return Some(vec![lane]);
        }
        // Scratch rows only (not in the plans walked).
        Step::Track { .. } | Step::Count(_) | Step::Fill { .. } => return Some(vec![lane]),
    };
    if runs {
        let k = step.block()?;
        let (reads, writes) = &facts[k];
        if !reads.intersection(any_writes).is_subset(&lane.written) {
            return None;
        }
        lane.written.union_with(writes);
    }
    // A decision: both outcomes (for a lane it is not for, the condition is
    // whatever the code computed: both too).
    let cond = match step {
        Step::Branch(_) => Some(layout::PREDICATE as u16),
        Step::Decide { cond, .. } => Some(cond),
        _ => None,
    };
    match cond {
        None => Some(vec![lane]),
        Some(row) => {
            let (mut taken, mut not) = (lane, lane);
            taken.set(row, true)?;
            not.set(row, false)?;
            Some(vec![taken, not])
        }
    }
}

/// How the vertex-layout kernel records the last writer of the partial
/// rows: a counter row goes up by one per group (a [`Step::Count`] first),
/// and after each step that writes some partial rows, the *sequence row*
/// of each set of partial rows written by the same steps takes the counter
/// in the lanes the step ran for ([`Step::Track`]). Those rows need no
/// starting value (no path reads them before writing them), so a lane keeps
/// what it last wrote: after a call, the last writer of a row is the lane
/// (of the last group of a pass, the last register file) with the highest
/// count in its sequence row, the highest lane among equals; a count of 0
/// (set before the call) means no vertex of the call wrote it.
///
/// A partial *output* row is also copied out by every vertex: one that did
/// not write it copies the value of the last earlier vertex that did (else
/// the starting state's). After the group's steps a [`Step::Fill`] per such
/// row gives each lane whose sequence row is not this group's count that
/// value, from the nearest lower lane that wrote it or the value carried
/// from the groups before (`layout::CARRIED`); the last lane's then is the
/// state's after the group, as for the rows every path writes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Tracking {
    /// The plan's steps with the counting and tracking steps.
    pub steps: Vec<Step>,
    /// The counter row (a `layout::MASKS` row no step uses).
    pub counter: u16,
    /// Each partial row but the outputs and its sequence row
    /// (`layout::MASKS` rows no step uses).
    pub rows: Vec<(u16, u16)>,
    /// Each partial output row and its sequence row (filled by the kernel:
    /// [`Step::Fill`]).
    pub outputs: Vec<(u16, u16)>,
}

impl Tracking {
    /// The partial rows whose last writer Rust picks after a call (not the
    /// outputs, which the kernel fills).
    pub fn rows(&self) -> RowSet {
        let mut set = RowSet::default();
        for &(row, _) in &self.rows {
            set.insert(row);
        }
        set
    }

    /// The rows set to 0 before a call: the counter and the sequence rows.
    pub fn cleared(&self) -> impl Iterator<Item = u16> + '_ {
        let mut seen = 0u32;
        let tracked = self.rows.iter().chain(&self.outputs);
        std::iter::once(self.counter).chain(tracked.filter_map(move |&(_, seq)| {
            let bit = 1u32 << (seq as usize - layout::MASKS);
            let new = seen & bit == 0;
            seen |= bit;
            new.then_some(seq)
        }))
    }
}

/// How the kernel of `steps` (over `blocks`) runs a `StatePolicy::Carry`
/// batch: `None` where it cannot (a vertex may read what an earlier one
/// wrote, or the tracking needs more mask rows than are free);
/// `Some(None)` where the last lane's rows are the state after a group
/// (every row some path writes is written on every path, or every decision
/// is the same in every lane); else how to track the partial rows.
pub(crate) fn carry_tracking(steps: &[Step], blocks: &[LaneBlock]) -> Option<Option<Tracking>> {
    let facts: Vec<(RowSet, RowSet)> = blocks.iter().map(|b| (b.reads, b.writes)).collect();
    let plan = carry_plan(steps, &facts)?;
    let diverges = steps.iter().any(|step| match step {
        Step::Branch(k) | Step::Decide { block: k, .. } => {
            let block = &blocks[*k];
            !block.exit_cond.is_some_and(|c| block.is_uniform(c))
        }
        _ => false,
    });
    if plan.partial.is_empty() || !diverges {
        return Some(None);
    }
    // Each partial row's writers (steps, by index).
    let writers = |row: u16| -> Vec<usize> {
        (0..steps.len())
            .filter(|&i| steps[i].block().is_some_and(|k| facts[k].1.contains(row)))
            .collect()
    };
    let mut sets: Vec<Vec<usize>> = Vec::new();
    let mut set_of = Vec::new();
    for row in plan.partial.rows() {
        let w = writers(row);
        let at = match sets.iter().position(|s| *s == w) {
            Some(at) => at,
            None => {
                sets.push(w);
                sets.len() - 1
            }
        };
        set_of.push((row, at));
    }
    let mut free = (0..layout::MASK_ROWS)
        .map(|n| (layout::MASKS + n) as u16)
        .filter(|&row| !steps.iter().any(|&s| mask_rows(s).contains(&Some(row))));
    let counter = free.next()?;
    let seq_rows: Vec<u16> = sets.iter().map(|_| free.next()).collect::<Option<_>>()?;
    let mut tracked = vec![Step::Count(counter)];
    for (i, &step) in steps.iter().enumerate() {
        tracked.push(step);
        let (by, when) = match step {
            Step::Guarded { mask, .. } => (Some(mask), true),
            Step::Decide { mask, .. } => (mask, true),
            Step::Predicated { when, .. } => (Some(layout::PREDICATE as u16), when),
            _ => (None, true),
        };
        for (set, &dst) in sets.iter().zip(&seq_rows) {
            if set.contains(&i) {
                tracked.push(Step::Track {
                    dst,
                    value: counter,
                    by,
                    when,
                });
            }
        }
    }
    let (mut rows, mut outputs) = (Vec::new(), Vec::new());
    for &(row, at) in &set_of {
        let to = if plan.partial_outputs.contains(row) {
            &mut outputs
        } else {
            &mut rows
        };
        to.push((row, seq_rows[at]));
    }
    // Once every step has run: the values the group's vertices copy out.
    for &(row, seq) in &outputs {
        tracked.push(Step::Fill { row, seq, counter });
    }
    Some(Some(Tracking {
        steps: tracked,
        counter,
        rows,
        outputs,
    }))
}

/// The mask rows a step names.
fn mask_rows(step: Step) -> [Option<u16>; 3] {
    match step {
        Step::Guarded { mask, .. } => [Some(mask), None, None],
        Step::Decide { mask, cond, .. } => [mask, Some(cond), None],
        Step::Mask {
            dst, within, by, ..
        } => [Some(dst), within, Some(by)],
        Step::Track { dst, value, by, .. } => [Some(dst), Some(value), by],
        Step::Count(row) => [Some(row), None, None],
        Step::Fill { seq, counter, .. } => [Some(seq), Some(counter), None],
        _ => [None; 3],
    }
}
