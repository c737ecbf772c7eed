//! What the batch path moves between vertex states and the wide register
//! file, decided once per compiled program.

use super::lanes::RowSet;
use crate::ir::{Exit, Ir};

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
}

impl Step {
    /// The IR block it runs.
    pub fn block(self) -> usize {
        match self {
            Step::Block(k) | Step::Branch(k) | Step::Predicated { block: k, .. } => k,
        }
    }
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
    /// What goes in.
    pub load: StatePlan,
    /// The rows that come out (every row the blocks write).
    pub store: RowSet,
    /// Instructions the longest path executes (the budget it needs): every
    /// step's block counted.
    pub instructions: u64,
    /// F24: the temporaries converted as the invocation starts (loaded,
    /// converted in place, and stored back unless every component is
    /// written), so the caller does no entry conversion.
    pub convert_temps: u16,
}

/// Most steps a kernel has (longer programs use the driver).
const MAX_STEPS: usize = 256;

/// The steps of a batch kernel for the program from `entry` (`block_at`:
/// the IR block of each instruction), when its flow has the shapes a kernel
/// runs: blocks falling through, `end`, and forward branches whose parts are
/// straight (`jmpc`/`jmpu` over a region, `ifc`/`ifu` with then and else
/// parts, `call`/`callc`/`callu` of a subroutine). Each part runs for every
/// lane under the branch's lane mask, so lanes may disagree. The stacks are
/// empty between parts, so the checks the blocks make find exactly the entry
/// of the part they end (the IF entry at the end of a then-part, the CALL
/// entry at the end of a subroutine) or nothing.
pub(crate) fn kernel_steps(ir: &Ir, block_at: &[u32], entry: u32) -> Option<Vec<Step>> {
    let mut steps = Vec::new();
    let mut pc = entry;
    loop {
        let k = block_starting_at(ir, block_at, pc)?;
        let block = &ir.blocks[k];
        let next = block.last + 1;
        match block.exit {
            Exit::End => {
                steps.push(Step::Block(k));
                return Some(steps);
            }
            Exit::Next => {
                steps.push(Step::Block(k));
                pc = next;
            }
            Exit::Jump { target, .. } if target == next => {
                steps.push(Step::Block(k));
                pc = next;
            }
            // The lanes that do not jump run the region up to the target.
            Exit::Jump { target, .. } if target > next => {
                steps.push(Step::Branch(k));
                part(ir, block_at, next, target, Some(false), &mut steps)?;
                pc = target;
            }
            // Taken: the then-part, whose end pops the IF entry and goes to
            // `end`; not taken: the else-part from `target` to `end`.
            Exit::If {
                target, next: end, ..
            } if target > next && end >= target => {
                steps.push(Step::Branch(k));
                part(ir, block_at, next, target, Some(true), &mut steps)?;
                part(ir, block_at, target, end, Some(false), &mut steps)?;
                pc = end;
            }
            // The subroutine's end pops the CALL entry and returns to `ret`.
            Exit::Call {
                taken,
                target,
                check,
                ret,
            } if check > target && ret == next => {
                match taken {
                    None => {
                        steps.push(Step::Block(k));
                        part(ir, block_at, target, check, None, &mut steps)?;
                    }
                    Some(_) => {
                        steps.push(Step::Branch(k));
                        part(ir, block_at, target, check, Some(true), &mut steps)?;
                    }
                }
                pc = ret;
            }
            _ => return None,
        }
        if steps.len() > MAX_STEPS {
            return None;
        }
    }
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
