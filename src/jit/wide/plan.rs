//! What the batch path moves between vertex states and the wide register
//! file, decided once per compiled program.

use super::lanes::{LaneBlock, LaneOp, RowSet};
use super::layout;
use crate::ir::{Exit, Ir};
use crate::machine::Stop;

mod carry;
mod nested;
pub(crate) use carry::{Tracking, carry_tracking};
use nested::nested_steps;

/// The registers a batch of independent states moves into the wide register
/// file: only what some path may read before writing it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct StatePlan {
    /// Inputs the program reads (bit `n`: `v{n}`).
    pub inputs: u16,
    /// Temporaries some block reads before writing (whole registers).
    pub temps: u16,
    /// Outputs some block reads before writing.
    pub outputs: u16,
    /// Whether some block reads `a0`, `aL` or `cmp` before writing it.
    pub small: bool,
}

/// One step of a batch kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// IR block `k`, every lane.
    Block(usize),
    /// IR block `k`, every lane, then its exit condition (a lane mask: the
    /// branch is taken) is saved for the predicated steps that follow.
    Branch(usize),
    /// IR block `k` for the lanes whose saved condition is `when`: every lane
    /// computes it, the other lanes' rows keep their values.
    Predicated {
        /// The IR block.
        block: usize,
        /// The condition value of the lanes it is for.
        when: bool,
    },
    /// IR block `k`, ending with `loop`: every lane, then the body (the steps
    /// up to the matching [`Step::LoopEnd`]) runs `i.x + 1` times (the same
    /// in every lane: a uniform).
    LoopStart(usize),
    /// The end of a loop body: `aL += i.z` in every lane, then back to the
    /// body's first step unless this was the last iteration.
    LoopEnd,
    /// IR block `k` for the lanes of the lane mask in row `mask` (a
    /// `layout::MASKS` row): every lane computes it, the other lanes' rows
    /// keep their values; skipped when the mask has no lane.
    Guarded {
        /// The IR block.
        block: usize,
        /// The row holding the lanes it is for.
        mask: u16,
    },
    /// IR block `k` for the lanes of `mask` (`None`: every lane, as
    /// [`Step::Block`]), then its exit condition (a lane mask, every lane
    /// computes it) saved in row `cond`.
    Decide {
        /// The IR block.
        block: usize,
        /// The row holding the lanes it is for.
        mask: Option<u16>,
        /// Where the condition goes.
        cond: u16,
    },
    /// Row `dst` = the lanes of `within` (`None`: every lane) whose mask in
    /// row `by` is `when` (all ones there, zero elsewhere).
    Mask {
        /// The row written.
        dst: u16,
        /// The lanes it may hold.
        within: Option<u16>,
        /// The mask (or saved condition) it tests.
        by: u16,
        /// The value of `by` of the lanes it holds.
        when: bool,
    },
    /// Row `dst` = row `value` in the lanes whose mask in row `by` is `when`
    /// (`None`: every lane); the other lanes keep `dst` (see
    /// [`carry::Tracking`]).
    Track {
        /// The row written.
        dst: u16,
        /// The row copied.
        value: u16,
        /// The mask (or saved condition) it tests.
        by: Option<u16>,
        /// The value of `by` of the lanes it copies in.
        when: bool,
    },
    /// Row `row` (`i32` lanes) + 1 in every lane.
    Count(u16),
    /// Under `StatePolicy::Carry` only (lane 0 of `layout::CARRYING` not
    /// zero): output row `row`, which some paths leave alone, in each lane
    /// that did not write it in this group (its sequence row `seq` differs
    /// from the group's count in row `counter`) = the value of the nearest
    /// lower lane that did, else the carried value (`layout::CARRIED`, of
    /// the first register file), which then becomes the last lane's: the
    /// value each vertex copies out is that of the last vertex up to it
    /// that wrote the row, as one vertex after another (see
    /// [`carry::Tracking`]).
    Fill {
        /// The output row.
        row: u16,
        /// Its sequence row.
        seq: u16,
        /// The group counter row.
        counter: u16,
    },
}

impl Step {
    /// The IR block it runs (none for a loop's end).
    pub fn block(self) -> Option<usize> {
        match self {
            Step::Block(k)
            | Step::Branch(k)
            | Step::LoopStart(k)
            | Step::Predicated { block: k, .. }
            | Step::Guarded { block: k, .. }
            | Step::Decide { block: k, .. } => Some(k),
            Step::LoopEnd
            | Step::Mask { .. }
            | Step::Track { .. }
            | Step::Count(_)
            | Step::Fill { .. } => None,
        }
    }

    /// Whether its block's stores reach every lane (else only the lanes of
    /// a mask or saved condition: the others keep their rows).
    pub fn for_every_lane(self) -> bool {
        match self {
            Step::Block(_) | Step::Branch(_) | Step::LoopStart(_) => true,
            Step::Decide { mask, .. } => mask.is_none(),
            Step::Predicated { .. } | Step::Guarded { .. } => false,
            Step::LoopEnd
            | Step::Mask { .. }
            | Step::Track { .. }
            | Step::Count(_)
            | Step::Fill { .. } => false,
        }
    }
}

/// The operations of a [`Step::Mask`]: `dst = by == when ? within : 0`
/// per lane, as a block every backend lowers (a select and a store).
pub(crate) fn mask_block(dst: u16, within: Option<u16>, by: u16, when: bool) -> LaneBlock {
    let within = match within {
        Some(row) => LaneOp::Row(row),
        None => LaneOp::Const(u32::MAX),
    };
    let select = if when {
        LaneOp::Select(0, 1, 2)
    } else {
        LaneOp::Select(0, 2, 1)
    };
    LaneBlock {
        ops: vec![
            LaneOp::Row(by),
            within,
            LaneOp::Const(0),
            select,
            LaneOp::Store(dst, 3),
        ],
        exit_cond: None,
        loop_values: None,
        reads: RowSet::default(),
        writes: RowSet::default(),
        gathers: 0,
    }
}

/// The operations of a step that runs no IR block but lane operations of
/// its own ([`Step::Mask`], [`Step::Track`], [`Step::Count`]), as a block
/// every backend lowers; `None` for the other steps.
pub(crate) fn ops_block(step: Step) -> Option<LaneBlock> {
    let ops = match step {
        Step::Mask {
            dst,
            within,
            by,
            when,
        } => return Some(mask_block(dst, within, by, when)),
        Step::Track {
            dst,
            value,
            by: None,
            ..
        } => vec![LaneOp::Row(value), LaneOp::Store(dst, 0)],
        Step::Track {
            dst,
            value,
            by: Some(by),
            when,
        } => vec![
            LaneOp::Row(by),
            LaneOp::Row(value),
            LaneOp::Row(dst),
            if when {
                LaneOp::Select(0, 1, 2)
            } else {
                LaneOp::Select(0, 2, 1)
            },
            LaneOp::Store(dst, 3),
        ],
        Step::Count(row) => vec![
            LaneOp::Row(row),
            LaneOp::Const(1),
            LaneOp::Binary(crate::ir::BinOp::IAdd, 0, 1),
            LaneOp::Store(row, 2),
        ],
        _ => return None,
    };
    Some(LaneBlock {
        ops,
        exit_cond: None,
        loop_values: None,
        reads: RowSet::default(),
        writes: RowSet::default(),
        gathers: 0,
    })
}

/// A batch kernel: one native function that loads a whole group of states
/// (`load`), runs `steps` (the program's paths from its entry point, with
/// forward branches, `if`/`else` and calls whose parts are straight run
/// under lane masks, until `end`) and stores the rows they wrote (`store`)
/// back. It replaces the driver's per-block calls and the transposition loops
/// for the commonest shaders.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct KernelPlan {
    /// The steps, in order.
    pub steps: Vec<Step>,
    /// What goes in: the registers (whole) that hold a row of `read_first`,
    /// and the inputs the program reads.
    pub load: StatePlan,
    /// The rows whose starting values some lane may observe: rows a path
    /// reads before writing them, and rows a predicated step writes (its
    /// other lanes keep them) before a step for every lane has.
    pub read_first: RowSet,
    /// The rows that come out (every row the blocks write).
    pub store: RowSet,
    /// Instructions the longest path executes (the budget it needs): every
    /// step's block counted.
    pub instructions: u64,
    /// F24: the temporaries converted as the invocation starts (loaded,
    /// converted in place, and stored back unless every component is
    /// written), so the caller does no entry conversion.
    pub convert_temps: u16,
    /// How every lane stops: `End`, or `EndOfCode` (past the last instruction).
    pub stop: Stop,
    /// Whether the vertex-layout kernel runs `StatePolicy::Carry` batches
    /// ([`carry_tracking`]).
    pub carries: bool,
    /// Where the vertex-layout kernel records which lanes wrote the rows
    /// some paths leave alone, for `StatePolicy::Carry` batches.
    pub tracking: Option<Tracking>,
}

impl KernelPlan {
    /// The plan of the vertex-layout kernel: every lane starts from one
    /// state the caller converted already, and with [`KernelPlan::tracking`]
    /// its steps record the writers of the tracked rows, whose values no
    /// path reads before writing them (so they need no starting value: a
    /// lane keeps what it last wrote there).
    pub(crate) fn for_vertices(&self) -> KernelPlan {
        let mut plan = KernelPlan {
            convert_temps: 0,
            ..self.clone()
        };
        if let Some(tracking) = &self.tracking {
            plan.steps.clone_from(&tracking.steps);
            plan.read_first = plan.read_first.difference(&tracking.rows());
        }
        plan
    }
}

/// Most steps a kernel has (longer programs use the driver).
const MAX_STEPS: usize = 256;

/// Iterations a `loop` runs at most (`i.x + 1`, `i.x` a byte).
pub(crate) const MAX_ITERATIONS: u64 = 256;

/// The steps of a batch kernel for the program from `entry` (`block_at`:
/// the IR block of each instruction), when its flow has the shapes a kernel
/// runs: blocks falling through, `end`, forward branches whose parts are
/// straight (`jmpc`/`jmpu` over a region, `ifc`/`ifu` with then- and
/// else-parts, `call`/`callc`/`callu` of a subroutine), and `loop`s (not
/// nested) whose bodies are made of those. Each part runs for every lane
/// under the branch's lane mask, so lanes may disagree; a loop runs the same
/// number of times in every lane (a uniform count). Only the entry a
/// construct pushed is on the stacks while its parts run, so the checks the
/// blocks make find exactly that entry at the end of the part (the IF entry at
/// the end of a then-part, the CALL entry at the end of a subroutine, the
/// LOOP entry at the end of the body) or nothing.
///
/// Where that walk refuses (parts with branches of their own, `end` in some
/// lanes only), [`nested_steps`] plans with lane masks instead.
///
/// Also returns how every lane stops: `End`, or `EndOfCode` where the
/// straight walk runs past the last instruction.
pub(crate) fn kernel_steps(ir: &Ir, block_at: &[u32], entry: u32) -> Option<(Vec<Step>, Stop)> {
    let (steps, stop) = straight_parts_steps(ir, block_at, entry)
        .or_else(|| nested_steps(ir, block_at, entry).ok())?;
    // A block appears once per step that runs it (a subroutine once per
    // call): bound the code a hostile program can make the kernel emit.
    let emitted: usize = steps
        .iter()
        .filter_map(|step| step.block())
        .map(|k| ir.blocks[k].instrs.len())
        .sum();
    (emitted <= MAX_KERNEL_INSTRUCTIONS).then_some((steps, stop))
}

/// Why the program from `entry` has no kernel (`None`: it has one).
#[cfg(test)]
pub(crate) fn kernel_refusal(ir: &Ir, block_at: &[u32], entry: u32) -> Option<&'static str> {
    if kernel_steps(ir, block_at, entry).is_some() {
        return None;
    }
    Some(match nested_steps(ir, block_at, entry) {
        Err(why) => why,
        Ok(_) => "more code than a kernel holds",
    })
}

/// The steps of the walk whose parts are straight (one saved condition).
fn straight_parts_steps(ir: &Ir, block_at: &[u32], entry: u32) -> Option<(Vec<Step>, Stop)> {
    let mut steps = Vec::new();
    let stop = match walk(ir, block_at, entry, None, &mut steps)? {
        Walked::Ended => Stop::End,
        Walked::FellOff => Stop::EndOfCode,
        Walked::Reached => return None,
    };
    Some((steps, stop))
}

/// Most PICA instructions a kernel's steps may hold, counting a block once
/// per step: the kernel's code stays within a few times the program's.
const MAX_KERNEL_INSTRUCTIONS: usize = 4096;

/// How a [`walk`] finished.
enum Walked {
    /// An `end` block.
    Ended,
    /// The last instruction, falling through past the end of the code.
    FellOff,
    /// The address it was to stop at.
    Reached,
}

/// Appends the steps from `pc` until an `end` block or, inside a loop body,
/// `stop_at` (the loop's check address: a plain block must end there, so that
/// every lane makes the loop's check).
fn walk(
    ir: &Ir,
    block_at: &[u32],
    mut pc: u32,
    stop_at: Option<u32>,
    steps: &mut Vec<Step>,
) -> Option<Walked> {
    loop {
        if Some(pc) == stop_at {
            return match steps.last() {
                Some(Step::Block(_)) => Some(Walked::Reached),
                _ => None,
            };
        }
        // Past the last instruction outside every construct: every lane
        // stops there (`Stop::EndOfCode`), as at an `end`.
        if stop_at.is_none() && pc as usize == block_at.len() && !steps.is_empty() {
            return Some(Walked::FellOff);
        }
        let k = block_starting_at(ir, block_at, pc)?;
        let block = &ir.blocks[k];
        let next = block.last + 1;
        let after = match block.exit {
            Exit::End => {
                steps.push(Step::Block(k));
                return Some(Walked::Ended);
            }
            Exit::Next => {
                steps.push(Step::Block(k));
                next
            }
            Exit::Jump { target, .. } if target == next => {
                steps.push(Step::Block(k));
                next
            }
            // The lanes that do not jump run the region up to the target.
            Exit::Jump { target, .. } if target > next => {
                steps.push(Step::Branch(k));
                part(ir, block_at, next, target, Some(false), steps)?;
                target
            }
            // Taken: the then-part, whose end pops the IF entry and goes to
            // `end`; not taken: the else-part from `target` to `end`.
            Exit::If {
                target, next: end, ..
            } if target > next && end >= target => {
                steps.push(Step::Branch(k));
                part(ir, block_at, next, target, Some(true), steps)?;
                part(ir, block_at, target, end, Some(false), steps)?;
                end
            }
            // The subroutine's end pops the CALL entry and returns to `ret`
            // (a CALL inside its own subroutine never gets here: the part
            // holding it has a CALL, which parts refuse).
            Exit::Call {
                taken,
                target,
                check,
                ret,
            } if check > target && ret == next => {
                match taken {
                    None => {
                        steps.push(Step::Block(k));
                        part(ir, block_at, target, check, None, steps)?;
                    }
                    Some(_) => {
                        steps.push(Step::Branch(k));
                        part(ir, block_at, target, check, Some(true), steps)?;
                    }
                }
                ret
            }
            Exit::Loop { start, check, .. }
                if stop_at.is_none() && start == next && check > start =>
            {
                steps.push(Step::LoopStart(k));
                match walk(ir, block_at, start, Some(check), steps)? {
                    Walked::Reached => steps.push(Step::LoopEnd),
                    Walked::Ended | Walked::FellOff => return None,
                }
                check
            }
            _ => return None,
        };
        if let Some(stop) = stop_at {
            // Inside a loop body every lane must make the loop's check at
            // `stop - 1`: only a block falling through may end there (lanes
            // a construct sends to `stop` would skip it), and no subroutine
            // may contain that instruction (the LOOP entry would win there).
            let plain = matches!(block.exit, Exit::Next)
                || matches!(block.exit, Exit::Jump { target, .. } if target == next);
            let contains_check = matches!(block.exit,
                Exit::Call { target, check, .. } if target < stop && stop <= check);
            if after > stop || (after == stop && !plain) || contains_check {
                return None;
            }
        }
        if steps.len() > MAX_STEPS {
            return None;
        }
        pc = after;
    }
}
/// The most instructions a lane executes in `steps` (`len(k)`: block `k`'s
/// instructions): every step's block, a loop body [`MAX_ITERATIONS`] times.
pub(crate) fn instructions_bound(steps: &[Step], len: impl Fn(usize) -> u64) -> u64 {
    let mut in_loop = false;
    let mut total = 0u64;
    for step in steps {
        match step {
            Step::LoopStart(k) => {
                total += len(*k);
                in_loop = true;
            }
            Step::LoopEnd => in_loop = false,
            _ => {
                if let Some(k) = step.block() {
                    total += len(k) * if in_loop { MAX_ITERATIONS } else { 1 };
                }
            }
        }
    }
    total
}

/// The IR block that starts at `pc`.
fn block_starting_at(ir: &Ir, block_at: &[u32], pc: u32) -> Option<usize> {
    let k = *block_at.get(pc as usize)? as usize;
    (ir.blocks.get(k)?.start == pc).then_some(k)
}

/// Appends the blocks of `from..to` (each falling through to the next, the
/// last ending at `to - 1`), run under the saved condition `when` (`None`:
/// every lane).
fn part(
    ir: &Ir,
    block_at: &[u32],
    from: u32,
    to: u32,
    when: Option<bool>,
    steps: &mut Vec<Step>,
) -> Option<()> {
    let mut pc = from;
    while pc < to {
        let k = block_starting_at(ir, block_at, pc)?;
        let block = &ir.blocks[k];
        if block.exit != Exit::Next || block.last >= to {
            return None;
        }
        steps.push(match when {
            None => Step::Block(k),
            Some(when) => Step::Predicated { block: k, when },
        });
        if steps.len() > MAX_STEPS {
            return None;
        }
        pc = block.last + 1;
    }
    Some(())
}

/// The rows the blocks of `steps` write (`facts[k]`: block `k`'s rows read
/// as it starts and rows written).
pub(crate) fn rows_written(steps: &[Step], facts: &[(RowSet, RowSet)]) -> RowSet {
    let mut store = RowSet::default();
    for k in steps.iter().filter_map(|s| s.block()) {
        store.union_with(&facts[k].1);
    }
    store
}

/// The rows whose starting values a lane running `steps` may observe: read
/// before a step for every lane wrote them, or written by a predicated step
/// and not by every lane by the end (the lanes it is not for keep them, and
/// every row written comes out). Every step runs at least once, in order (a
/// loop body `i.x + 1` times), so the first pass decides. The then- and
/// else-parts of one saved condition together reach every lane: a row both
/// write is written for every lane after them (the value the first part's
/// other lanes keep is never seen).
pub(crate) fn rows_read_first(steps: &[Step], facts: &[(RowSet, RowSet)]) -> RowSet {
    let mut written = RowSet::default();
    let mut read_first = RowSet::default();
    // Rows some step writes for some lanes only.
    let mut masked = RowSet::default();
    // Rows the parts for a saved condition of `false` / `true` wrote since
    // the branch that saved it.
    let mut sides = [RowSet::default(), RowSet::default()];
    for step in steps {
        let Some(k) = step.block() else {
            // A loop's end adds `i.z` to `aL`.
            if *step == Step::LoopEnd && !written.contains(layout::AL as u16) {
                read_first.insert(layout::AL as u16);
            }
            sides = Default::default();
            continue;
        };
        let (reads, writes) = &facts[k];
        match *step {
            Step::Predicated { when, .. } => {
                read_first.union_with(&reads.difference(&written));
                sides[usize::from(when)].union_with(writes);
                masked.union_with(writes);
                let both = sides[0].intersection(&sides[1]);
                written.union_with(&both);
            }
            _ => {
                read_first.union_with(&reads.difference(&written));
                if step.for_every_lane() {
                    written.union_with(writes);
                } else {
                    masked.union_with(writes);
                }
                if !matches!(step, Step::Block(_)) {
                    // A new saved condition (or a loop, or masks of their
                    // own): the sides start again.
                    sides = Default::default();
                }
            }
        }
    }
    read_first.union_with(&masked.difference(&written));
    read_first
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ShaderKind;
    use crate::program::Program;

    /// The optimised IR of `program` from `entry` and the IR block of each
    /// instruction.
    fn ir_of(program: &Program, entry: u32) -> (Ir, Vec<u32>) {
        let analysis = crate::analysis::analyse(program, entry, ShaderKind::Vertex);
        let built = Ir::from_analysis(
            program,
            &analysis,
            ShaderKind::Vertex,
            crate::Precision::F32,
        );
        let ir = crate::ir::opt::optimize(&built);
        let mut block_at = vec![0u32; program.len()];
        for (k, b) in ir.blocks.iter().enumerate() {
            for pc in b.start..=b.last {
                block_at[pc as usize] = k as u32;
            }
        }
        (ir, block_at)
    }

    /// Every vertex shader of the `.shbin` files in `dir` (relative to the
    /// crate) and why it has no kernel (`None`: it has one).
    fn refusals_in(dir: &str) -> Vec<(String, Option<&'static str>)> {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .map(|d| d.flatten().map(|e| e.path()).collect())
            .unwrap_or_default();
        files.retain(|f| f.extension().is_some_and(|e| e == "shbin"));
        files.sort();
        let mut out = Vec::new();
        for file in files {
            let Ok(bytes) = std::fs::read(&file) else {
                continue;
            };
            let Ok(shbin) = crate::shbin::Shbin::parse(&bytes) else {
                continue;
            };
            let Ok(program) = Program::new(shbin.dvlp.code.clone(), shbin.dvlp.descriptors.clone())
            else {
                continue;
            };
            for dvle in &shbin.dvles {
                if dvle.kind != ShaderKind::Vertex || dvle.main as usize >= program.len() {
                    continue;
                }
                let (ir, block_at) = ir_of(&program, dvle.main);
                let name = file.file_name().map(|n| n.to_string_lossy().into_owned());
                out.push((
                    format!("{}#{}", name.unwrap_or_default(), dvle.main),
                    kernel_refusal(&ir, &block_at, dvle.main),
                ));
            }
        }
        out
    }

    /// The listing of the real shaders without a kernel plan, and why: none
    /// in `../shared/corpus` (the branchy `shaderfast2` included, with its
    /// `end` inside a branch), and in the picasso corpus only programs
    /// whose flow no plan runs (loops left by `breakc`, nested loops,
    /// backward jumps).
    #[test]
    fn every_corpus_shader_has_a_kernel_plan() {
        let corpus = refusals_in("../shared/corpus");
        if corpus.is_empty() && std::env::var_os("PICA_REQUIRE_CORPUS").is_some_and(|v| v == "1") {
            panic!("PICA_REQUIRE_CORPUS=1 but ../shared/corpus holds no .shbin file");
        }
        let asm = refusals_in("../shared/asm-corpus/expected");
        for (name, why) in corpus.iter().chain(&asm) {
            if let Some(why) = why {
                eprintln!("no kernel plan: {name}: {why}");
            }
        }
        eprintln!(
            "kernel plans: {} of {} corpus and {} of {} picasso-corpus vertex shaders",
            corpus.iter().filter(|(_, why)| why.is_none()).count(),
            corpus.len(),
            asm.iter().filter(|(_, why)| why.is_none()).count(),
            asm.len()
        );
        let missing: Vec<_> = corpus.iter().filter(|(_, why)| why.is_some()).collect();
        assert!(
            missing.is_empty(),
            "corpus shaders without a plan: {missing:?}"
        );
        assert!(
            corpus.iter().any(|(name, _)| name.contains("shaderfast2")) || corpus.is_empty(),
            "the branchy corpus shader is listed"
        );
        let asm_missing: Vec<_> = asm.iter().filter(|(_, why)| why.is_some()).collect();
        assert!(
            asm_missing.is_empty(),
            "picasso-corpus shaders without a plan: {asm_missing:?}"
        );
    }

    /// The kernel steps of an assembled `main` and procedures `procs` (`None`:
    /// no kernel).
    fn steps_of(body: &str, procs: &str) -> Option<Vec<Step>> {
        plan_of(body, procs).map(|(steps, _)| steps)
    }

    /// Per block: the rows it reads as it starts and the rows it writes.
    type Facts = Vec<(RowSet, RowSet)>;

    /// [`steps_of`] with each block's [`Facts`].
    fn plan_of(body: &str, procs: &str) -> Option<(Vec<Step>, Facts)> {
        let text = format!(".proc main\n{body}\n.end\n{procs}");
        let shbin = crate::asm::assemble_str("t.pica", &text).expect("assembles");
        let program =
            Program::new(shbin.dvlp.code.clone(), shbin.dvlp.descriptors.clone()).expect("loads");
        let entry = shbin.dvles[0].main;
        let analysis = crate::analysis::analyse(&program, entry, ShaderKind::Vertex);
        let built = Ir::from_analysis(
            &program,
            &analysis,
            ShaderKind::Vertex,
            crate::Precision::F32,
        );
        let ir = crate::ir::opt::optimize(&built);
        let mut block_at = vec![0u32; program.len()];
        for (k, b) in ir.blocks.iter().enumerate() {
            for pc in b.start..=b.last {
                block_at[pc as usize] = k as u32;
            }
        }
        let facts = ir
            .blocks
            .iter()
            .map(|b| {
                let lanes = crate::jit::wide::lanes::split(b, false);
                (lanes.reads, lanes.writes)
            })
            .collect();
        kernel_steps(&ir, &block_at, entry).map(|(steps, _)| (steps, facts))
    }

    /// The kernel steps of an assembled `main` and how they run under
    /// `StatePolicy::Carry` ([`carry_tracking`]).
    fn carry_of(body: &str) -> (Vec<Step>, Option<Option<Tracking>>) {
        let text = format!(".proc main\n{body}\n.end\n");
        let shbin = crate::asm::assemble_str("t.pica", &text).expect("assembles");
        let program =
            Program::new(shbin.dvlp.code.clone(), shbin.dvlp.descriptors.clone()).expect("loads");
        let (ir, block_at) = ir_of(&program, shbin.dvles[0].main);
        let blocks: Vec<LaneBlock> = ir
            .blocks
            .iter()
            .map(|b| crate::jit::wide::lanes::split(b, false))
            .collect();
        let (steps, _) = kernel_steps(&ir, &block_at, shbin.dvles[0].main).expect("a kernel");
        let carry = carry_tracking(&steps, &blocks);
        (steps, carry)
    }

    #[test]
    fn carry_runs_in_the_kernel_where_no_path_reads_what_another_writes() {
        let cmp = " cmp v0, lt, ge, v1\n";
        // r1 on one path only: tracked, its sequence row set after the
        // then-part (the lanes that ran it) and a counter first.
        let (_, carry) = carry_of(&format!(
            "{cmp} ifc cmp.x\n  mov r1.xy, c0\n .end\n mov o0, c1\n end"
        ));
        let tracking = carry.expect("carries").expect("tracks r1.xy");
        assert_eq!(
            tracking.rows().rows().collect::<Vec<_>>(),
            temp_rows(1, "xy")
        );
        assert_eq!(kinds(&tracking.steps), "C?TWB");
        let (seq, counter) = (tracking.rows[0].1, tracking.counter);
        assert_eq!(tracking.rows[1].1, seq, "written by the same steps");
        assert_ne!(seq, counter);
        assert_eq!(
            tracking.steps[3],
            Step::Track {
                dst: seq,
                value: counter,
                by: Some(layout::PREDICATE as u16),
                when: true
            }
        );
        assert_eq!(tracking.cleared().collect::<Vec<_>>(), [counter, seq]);
        // Read on the path that did not write it: the vertex depends on
        // the one before.
        let (_, carry) = carry_of(&format!(
            "{cmp} ifc cmp.x\n  mov r1, c0\n .end\n mov o0, r1\n end"
        ));
        assert_eq!(carry, None);
        // Written on both paths, then read: nothing to track.
        let (_, carry) = carry_of(&format!(
            "{cmp} ifc cmp.x\n  mov r1, c0\n .else\n  mov r1, c2\n .end\n mov o0, r1\n end"
        ));
        assert_eq!(carry, Some(None));
        // An output some paths leave alone: a vertex that does not write it
        // copies out an earlier vertex's value, which the kernel fills in
        // after every step (its rows share one sequence row).
        let (_, carry) = carry_of(&format!(
            "{cmp} ifc cmp.x\n  mov o1, c0\n .end\n mov o0, c1\n end"
        ));
        let tracking = carry.expect("carries").expect("tracks o1");
        assert!(tracking.rows.is_empty(), "Rust picks no last writer");
        let o1: Vec<u16> = (0..4).map(|c| (layout::OUTPUT + 4 + c) as u16).collect();
        let seq = tracking.outputs[0].1;
        assert_eq!(
            tracking.outputs,
            o1.iter().map(|&row| (row, seq)).collect::<Vec<_>>()
        );
        assert_eq!(kinds(&tracking.steps), "C?TWBOOOO");
        assert_eq!(
            tracking.steps[5],
            Step::Fill {
                row: o1[0],
                seq,
                counter: tracking.counter
            }
        );
        assert_eq!(
            tracking.cleared().collect::<Vec<_>>(),
            [tracking.counter, seq]
        );
        // A uniform branch: every lane writes the same rows.
        let (_, carry) = carry_of(" ifu b0\n  mov r1, c0\n .end\n mov o0, c1\n end");
        assert_eq!(carry, Some(None));
        // Read before written in the straight program itself.
        let (_, carry) = carry_of(" add r0, r0, c0\n mov o0, r0\n end");
        assert_eq!(carry, None);
        // `end` in some lanes: the rows after it are the others' only.
        let (_, carry) = carry_of(&format!(
            "{cmp} ifc cmp.x\n  mov o0, c0\n  end\n .end\n mova a0.x, v0.x\n mov o0, c1\n end"
        ));
        let tracking = carry.expect("carries").expect("tracks a0.x");
        assert_eq!(
            tracking.rows().rows().collect::<Vec<_>>(),
            [layout::A0X as u16]
        );
        // Under the lanes still running: a guarded step, tracked by its mask.
        let at = tracking
            .steps
            .iter()
            .position(|s| matches!(s, Step::Track { .. }))
            .expect("a tracking step");
        let Step::Guarded { mask, .. } = tracking.steps[at - 1] else {
            panic!("{:?}", tracking.steps)
        };
        assert_eq!(
            tracking.steps[at],
            Step::Track {
                dst: tracking.rows[0].1,
                value: tracking.counter,
                by: Some(mask),
                when: true
            }
        );
    }

    /// The state rows of `r{n}` components `comps` (`"xyzw"` letters).
    fn temp_rows(n: usize, comps: &str) -> Vec<u16> {
        comps
            .chars()
            .map(|c| (layout::TEMP + 4 * n + "xyzw".find(c).expect("a component")) as u16)
            .collect()
    }

    fn read_first_of(body: &str) -> Vec<u16> {
        let (steps, facts) = plan_of(body, "").expect("a kernel");
        rows_read_first(&steps, &facts).rows().collect()
    }

    #[test]
    fn the_starting_values_a_path_observes_are_exact_per_row() {
        // r1.x is written first, r1.yzw read first; r0 is only written.
        let rows = read_first_of(" mov r1.x, c0\n add r0, r1, c1\n mov o0, r0\n end");
        assert_eq!(rows, temp_rows(1, "yzw"));
        // A predicated write keeps the other lanes' starting values, which
        // come out unless a write for every lane replaces them first.
        let body = " ifu b0\n  mov r2.xy, c0\n .end\n mov o0, r2\n end";
        assert_eq!(read_first_of(body), temp_rows(2, "xyzw"));
        let body = " ifu b0\n  mov r2.xy, c0\n .end\n mov r2, c1\n mov o0, r2\n end";
        assert_eq!(read_first_of(body), temp_rows(2, ""));
        // Then- and else-parts: a row both write reaches every lane (r1.y,
        // r6), unless the second reads it first (r6.x); a row one part
        // writes keeps the other lanes' starting value (r1.xzw).
        let body = " ifu b0\n  mov r1.xy, c0\n  mov r6, c0\n .else\n  mov r1.yz, c1\n  \
                    add r6, r6.x, c1\n .end\n mov o0, r1\n mov o1, r6\n end";
        let mut expected = temp_rows(1, "xzw");
        expected.extend(temp_rows(6, "x"));
        assert_eq!(read_first_of(body), expected);
        // A loop body reading what it writes later in the same pass.
        let rows = read_first_of(" for i0\n  add r0, r0, c0\n .end\n mov o0, r0\n end");
        assert_eq!(rows, temp_rows(0, "xyzw"));
        let (steps, facts) =
            plan_of(" for i0\n  add r0, r0, c0\n .end\n mov o0, r0\n end", "").expect("a kernel");
        assert!(
            rows_written(&steps, &facts).contains(layout::AL as u16),
            "the loop sets aL before the body runs"
        );
    }

    /// One letter per step: Block, `?` branch, True/False part, Loop, End,
    /// Guarded, Decide, Mask.
    fn kinds(steps: &[Step]) -> String {
        steps
            .iter()
            .map(|s| match s {
                Step::Block(_) => 'B',
                Step::Branch(_) => '?',
                Step::Predicated { when: true, .. } => 'T',
                Step::Predicated { when: false, .. } => 'F',
                Step::LoopStart(_) => 'L',
                Step::LoopEnd => 'E',
                Step::Guarded { .. } => 'G',
                Step::Decide { .. } => 'D',
                Step::Mask { .. } => 'M',
                Step::Track { .. } => 'W',
                Step::Count(_) => 'C',
                Step::Fill { .. } => 'O',
            })
            .collect()
    }

    #[test]
    fn straight_code_is_one_block() {
        let steps = steps_of(" mov r0, c0\n add o0, r0, c1\n end", "").expect("a kernel");
        assert_eq!(kinds(&steps), "B");
    }

    #[test]
    fn forward_branches_run_their_parts_under_masks() {
        let if_else = " ifu b0\n  mov o0, c0\n .else\n  mov o0, c1\n .end\n mov o1, c2\n end";
        let steps = steps_of(if_else, "").expect("a kernel");
        assert_eq!(kinds(&steps), "?TFB");
        let skip = " cmp c0, lt, lt, r1\n jmpc cmp.x, skip\n mov o0, c2\nskip:\n mov o1, c3\n end";
        let steps = steps_of(skip, "").expect("a kernel");
        assert_eq!(kinds(&steps), "?FB");
        let call = " callc cmp.x, sub\n mov o1, r5\n end";
        let steps = steps_of(call, ".proc sub\n mov r5, c6\n.end\n").expect("a kernel");
        assert_eq!(kinds(&steps), "?TB");
    }

    #[test]
    fn loops_run_natively_and_calls_inline() {
        let body = " call sub\n for i0\n  add r0, r0, c0\n .end\n mov o0, r0\n end";
        let steps = steps_of(body, ".proc sub\n mov r0, c1\n.end\n").expect("a kernel");
        assert_eq!(kinds(&steps), "BBLBEB");
    }

    #[test]
    fn backward_jumps_break_and_nested_loops_have_no_kernel() {
        assert_eq!(
            steps_of("top:\n add r0, r0, c0\n jmpu b0, top\n end", ""),
            None
        );
        let breaking = " for i0\n  add r0, r0, c0\n  breakc cmp.x\n .end\n end";
        assert_eq!(steps_of(breaking, ""), None);
        let nested = " for i0\n  for i1\n   add r0, r0, c0\n  .end\n .end\n end";
        assert_eq!(steps_of(nested, ""), None);
        // A branch ending at the loop's last instruction: the lanes that jump
        // would skip the loop's check.
        let late = " for i0\n  jmpc cmp.x, last\n  add r0, r0, c0\nlast:\n  .end\n end";
        assert!(steps_of(late, "").is_none_or(|s| !kinds(&s).contains('F')));
    }

    #[test]
    fn end_in_some_lanes_runs_the_rest_under_the_lanes_still_running() {
        // shaderfast2's shape: the lanes that jump run a second `end`.
        let body =
            " cmp c0, lt, lt, r1\n jmpc cmp.x, other\n mov o0, c1\n end\nother:\n mov o0, c2\n end";
        let steps = steps_of(body, "").expect("a kernel");
        // Decide, the staying lanes' mask, their block, the others' mask
        // (every lane but the ended ones), their block.
        assert_eq!(kinds(&steps), "DMGMG");
        let [
            _,
            Step::Mask {
                dst: staying,
                within: None,
                by: cond,
                when: false,
            },
            _,
            retire,
            last,
        ] = steps[..]
        else {
            panic!("{steps:?}")
        };
        assert_eq!(
            retire,
            Step::Mask {
                dst: retire_dst(retire),
                within: None,
                by: staying,
                when: false
            }
        );
        assert_ne!(cond, staying);
        assert!(matches!(last, Step::Guarded { mask, .. } if mask == retire_dst(retire)));
        // `end` in a then-part, an `if` nested in the else-part.
        let body = " ifc cmp.x\n  mov o0, c0\n  end\n .else\n  ifc cmp.y\n   mov o1, c1\n  .end\n  mov o2, c2\n .end\n mov o3, c3\n end";
        let steps = steps_of(body, "").expect("a kernel");
        assert_eq!(kinds(&steps), "DMMGMDMGGG");
        // A loop body cannot end lanes (its count and `aL` are every lane's).
        let body = " for i0\n  ifc cmp.x\n   end\n  .end\n  add r0, r0, c0\n .end\n end";
        assert_eq!(steps_of(body, ""), None);
        // A branch as a part's last instruction races its flow-stack check.
        let body = " ifc cmp.x\n  mov r0, c0\n  jmpc cmp.y, out\n  mov r0, c1\n .end\nout:\n mov o0, r0\n end";
        assert_eq!(steps_of(body, ""), None);
    }

    fn retire_dst(step: Step) -> u16 {
        match step {
            Step::Mask { dst, .. } => dst,
            _ => panic!("a mask step: {step:?}"),
        }
    }

    #[test]
    fn a_call_whose_check_is_its_return_address_has_no_plan() {
        // `callu b3, l_0001, 5` at 0005 pushes {check 6, ret 6}: the
        // CALL-stack check after it pops that entry at once (PC 6), so the
        // subroutine never runs; the kernel's walk would run it.
        let code = vec![
            0x9000_1004u32, // call l_0004, 4
            0x8400_0000,    // nop
            0x8400_0000,    // nop
            0x8800_0000,    // end
            0x8400_0000,    // nop
            0x98c0_0405,    // callu b3, l_0001, 5
            0x8400_0000,    // nop
            0x1f23_5000,    // litp r9.none, c21.xxxx
        ];
        let program = Program::new(code, vec![]).expect("loads");
        let (ir, block_at) = ir_of(&program, 0);
        assert_eq!(kernel_steps(&ir, &block_at, 0), None);
    }

    #[test]
    fn a_subroutine_called_too_often_makes_too_much_code() {
        // 64 calls of a 70-instruction subroutine: over the kernel's bound.
        let sub: String = (0..70).map(|_| " add r1, r1, c0\n").collect();
        let procs = format!(".proc sub\n{sub}.end\n");
        let calls: String = (0..64).map(|_| " call sub\n").collect();
        assert_eq!(steps_of(&format!("{calls} mov o0, r1\n end"), &procs), None);
        let calls: String = (0..4).map(|_| " call sub\n").collect();
        assert!(steps_of(&format!("{calls} mov o0, r1\n end"), &procs).is_some());
    }
}
