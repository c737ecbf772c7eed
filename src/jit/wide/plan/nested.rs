//! Kernel plans under lane masks: branches inside the parts of branches,
//! and `end` reached by some lanes of a group while the others go on.
//!
//! Each region of the program (the whole program, a jump's skipped part, an
//! `if`'s then- and else-part, a subroutine, a loop's body) runs for the
//! lanes of its *live mask*: `None` for every lane of the group, else a
//! `layout::MASKS` row. A flag decision saves its condition in a row; each
//! part's live mask is its region's mask and'ed with the condition (or its
//! negation). A lane that reaches `end` is done: the steps that follow
//! leave its rows alone, because the live masks of every enclosing region
//! lose its lanes at once (`Step::Mask` in place), and every block after
//! that runs guarded by them.
//!
//! The flow stacks stay exact per lane because the regions nest: the only
//! checks that can fire are those of the constructs enclosing a block, and
//! an enclosing construct's check address may only be reached as the last
//! instruction of its own part, which every lane of the part still running
//! executes (the part ends with a block falling through to it).

use super::{MAX_STEPS, Step, block_starting_at};
use crate::ir::{Exit, Ir};
use crate::jit::wide::layout;
use crate::machine::Stop;

/// Why a program has no plan (for the listing in the tests).
pub(crate) type Refusal = &'static str;

/// Constructs nested inside one another at most: within the IF (8) and
/// CALL (4) stacks' depths, so no entry a construct pushed is lost.
const MAX_DEPTH: usize = 4;

/// The steps for the program from `entry`, every path ending at `end`, or
/// every path running past the last instruction outside every construct
/// (then every lane stops with `Stop::EndOfCode`; not both).
pub(crate) fn nested_steps(
    ir: &Ir,
    block_at: &[u32],
    entry: u32,
) -> Result<(Vec<Step>, Stop), Refusal> {
    let mut planner = Planner {
        ir,
        block_at,
        steps: Vec::new(),
        lives: vec![None],
        checks: Vec::new(),
        rows_in_use: 0,
        in_loop: false,
        ended: false,
        fell_off: false,
    };
    match planner.region(entry, Region::Program)? {
        Flow::Ended if planner.fell_off && planner.ended => {
            Err("lanes stop both at `end` and past the last instruction")
        }
        Flow::Ended if planner.fell_off => Ok((planner.steps, Stop::EndOfCode)),
        Flow::Ended => Ok((planner.steps, Stop::End)),
        Flow::Reached => Err("a path leaves the program without `end`"),
    }
}

/// Where a region stops.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Region {
    /// The whole program: at `end` on every path.
    Program,
    /// A jump's skipped part: lanes may arrive at the address by any path.
    Skipped(u32),
    /// A part whose last instruction (the address − 1) makes a flow-stack
    /// check: every lane of the part still running executes it.
    Checked(u32),
}

impl Region {
    fn stop(self) -> Option<u32> {
        match self {
            Region::Program => None,
            Region::Skipped(to) | Region::Checked(to) => Some(to),
        }
    }
}

/// How a region finished.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Flow {
    /// Every lane of its live mask reached `end`.
    Ended,
    /// The lanes still running are at its stop address.
    Reached,
}

struct Planner<'a> {
    ir: &'a Ir,
    block_at: &'a [u32],
    steps: Vec<Step>,
    /// The live masks of the regions being walked, outermost first (the
    /// last is the current one's).
    lives: Vec<Option<u16>>,
    /// The check addresses of the enclosing checked regions, outermost
    /// first.
    checks: Vec<u32>,
    /// Bit `n`: mask row `layout::MASKS + n` holds a value still needed.
    rows_in_use: u32,
    /// Whether a loop body is being walked (no lane may end there: the loop
    /// runs the same iterations in every lane, and its `aL` update reaches
    /// every lane).
    in_loop: bool,
    /// Some lane may stop at an `end`.
    ended: bool,
    /// The lanes still running at the top run past the last instruction.
    fell_off: bool,
}

impl Planner<'_> {
    fn live(&self) -> Option<u16> {
        *self.lives.last().expect("a region is being walked")
    }

    fn push(&mut self, step: Step) -> Result<(), Refusal> {
        self.steps.push(step);
        if self.steps.len() > MAX_STEPS {
            return Err("more steps than a kernel holds");
        }
        Ok(())
    }

    fn alloc(&mut self) -> Result<u16, Refusal> {
        let free = (!self.rows_in_use).trailing_zeros() as usize;
        if free >= layout::MASK_ROWS {
            return Err("more lane masks at once than the kernel has rows");
        }
        self.rows_in_use |= 1 << free;
        Ok((layout::MASKS + free) as u16)
    }

    fn free(&mut self, row: u16) {
        self.rows_in_use &= !(1 << (row as usize - layout::MASKS));
    }

    /// Block `k` for the live lanes.
    fn run(&mut self, k: usize) -> Result<(), Refusal> {
        let step = match self.live() {
            None => Step::Block(k),
            Some(mask) => Step::Guarded { block: k, mask },
        };
        self.push(step)
    }

    /// Block `k` for the live lanes, its exit condition saved: returns the
    /// row holding it.
    fn decide(&mut self, k: usize) -> Result<u16, Refusal> {
        let cond = self.alloc()?;
        let mask = self.live();
        self.push(Step::Decide {
            block: k,
            mask,
            cond,
        })?;
        Ok(cond)
    }

    /// A new row: the live lanes whose condition (in row `cond`) is `when`.
    fn lanes_where(&mut self, cond: u16, when: bool) -> Result<u16, Refusal> {
        let dst = self.alloc()?;
        let within = self.live();
        self.push(Step::Mask {
            dst,
            within,
            by: cond,
            when,
        })?;
        Ok(dst)
    }

    /// The lanes of the current live mask reached `end`: every enclosing
    /// region with another mask loses them (regions sharing the current
    /// mask end with it).
    fn retire(&mut self) -> Result<(), Refusal> {
        if self.in_loop {
            return Err("`end` inside a loop body");
        }
        let ended = self.live();
        let Some(ended_row) = ended else {
            // Every lane of the group: the regions enclosing it share `None`.
            return Ok(());
        };
        let mut everyone: Option<u16> = None;
        let mut updated: Vec<u16> = Vec::new();
        for i in 0..self.lives.len() - 1 {
            match self.lives[i] {
                live if live == ended => {}
                None => {
                    let row = match everyone {
                        Some(row) => row,
                        None => {
                            let row = self.alloc()?;
                            self.push(Step::Mask {
                                dst: row,
                                within: None,
                                by: ended_row,
                                when: false,
                            })?;
                            everyone = Some(row);
                            row
                        }
                    };
                    self.lives[i] = Some(row);
                }
                Some(row) => {
                    if !updated.contains(&row) {
                        updated.push(row);
                        self.push(Step::Mask {
                            dst: row,
                            within: Some(row),
                            by: ended_row,
                            when: false,
                        })?;
                    }
                }
            }
        }
        Ok(())
    }

    /// Refuses a block whose instructions would make a flow-stack check of
    /// an enclosing construct other than at the end of the innermost
    /// checked part (`region`), by a block falling through to it.
    fn checks_only_at_part_ends(
        &self,
        start: u32,
        last: u32,
        falls_through: bool,
        region: Region,
    ) -> Result<(), Refusal> {
        for (i, &check) in self.checks.iter().enumerate() {
            if start < check && check <= last + 1 {
                let innermost = i + 1 == self.checks.len() && region == Region::Checked(check);
                if !(innermost && check == last + 1 && falls_through) {
                    return Err("a flow-stack check inside a part");
                }
            }
        }
        Ok(())
    }

    /// Walks the region from `pc`, for the current live mask.
    fn region(&mut self, mut pc: u32, region: Region) -> Result<Flow, Refusal> {
        if self.lives.len() > MAX_DEPTH + 1 {
            return Err("constructs nested too deeply");
        }
        loop {
            if Some(pc) == region.stop() {
                return Ok(Flow::Reached);
            }
            if pc as usize >= self.block_at.len() {
                // Outside every construct, the lanes still running stop
                // there; no step follows that could change their rows.
                if region == Region::Program && self.lives.len() == 1 && !self.steps.is_empty() {
                    self.fell_off = true;
                    return Ok(Flow::Ended);
                }
                return Err("a path runs past the last instruction without `end`");
            }
            let k =
                block_starting_at(self.ir, self.block_at, pc).ok_or("a block entered mid-way")?;
            let block = &self.ir.blocks[k];
            let next = block.last + 1;
            let plain = matches!(block.exit, Exit::Next)
                || matches!(block.exit, Exit::Jump { target, .. } if target == next);
            // A lane ending there makes no check.
            let ends = block.exit == Exit::End;
            self.checks_only_at_part_ends(block.start, block.last, plain || ends, region)?;
            let after = match block.exit {
                Exit::End => {
                    self.ended = true;
                    self.run(k)?;
                    self.retire()?;
                    return Ok(Flow::Ended);
                }
                _ if plain => {
                    self.run(k)?;
                    next
                }
                // The lanes that do not jump run the part up to the target.
                Exit::Jump { target, .. } if target > next => {
                    let cond = self.decide(k)?;
                    let staying = self.lanes_where(cond, false)?;
                    self.free(cond);
                    self.nested(staying, next, Region::Skipped(target))?;
                    target
                }
                // Taken: the then-part, whose last instruction pops the IF
                // entry and goes to `end`; not taken: the else-part from
                // `target` to `end`.
                Exit::If {
                    target, next: end, ..
                } if target > next && end >= target => {
                    let cond = self.decide(k)?;
                    let then_lanes = self.lanes_where(cond, true)?;
                    let else_lanes = if end > target {
                        Some(self.lanes_where(cond, false)?)
                    } else {
                        None
                    };
                    self.free(cond);
                    self.checks.push(target);
                    self.nested(then_lanes, next, Region::Checked(target))?;
                    self.checks.pop();
                    if let Some(else_lanes) = else_lanes {
                        self.checks.push(end);
                        self.nested(else_lanes, target, Region::Checked(end))?;
                        self.checks.pop();
                    }
                    end
                }
                // The subroutine's last instruction pops the CALL entry and
                // returns to `ret`.
                Exit::Call {
                    taken,
                    target,
                    check,
                    ret,
                } if check > target && ret == next && check != ret => {
                    self.checks.push(check);
                    let flow = match taken {
                        None => {
                            self.run(k)?;
                            // The same lanes as the caller: if they all end
                            // there, so does the caller's region.
                            let live = self.live();
                            self.lives.push(live);
                            let flow = self.region(target, Region::Checked(check));
                            self.lives.pop();
                            flow?
                        }
                        Some(_) => {
                            let cond = self.decide(k)?;
                            let lanes = self.lanes_where(cond, true)?;
                            self.free(cond);
                            self.nested(lanes, target, Region::Checked(check))?;
                            Flow::Reached
                        }
                    };
                    self.checks.pop();
                    if flow == Flow::Ended {
                        return Ok(Flow::Ended);
                    }
                    ret
                }
                // Every lane of the group runs the loop, the same number of
                // times (a uniform count).
                Exit::Loop { start, check, .. }
                    if start == next
                        && check > start
                        && !self.in_loop
                        && self.lives.iter().all(Option::is_none) =>
                {
                    self.push(Step::LoopStart(k))?;
                    self.checks.push(check);
                    self.in_loop = true;
                    let flow = self.region(start, Region::Checked(check));
                    self.in_loop = false;
                    self.checks.pop();
                    if flow? != Flow::Reached {
                        return Err("a loop body that ends");
                    }
                    self.push(Step::LoopEnd)?;
                    check
                }
                _ => return Err("a flow shape kernels do not run"),
            };
            if let Some(stop) = region.stop() {
                let checked = matches!(region, Region::Checked(_));
                if after > stop || (checked && after == stop && !plain) {
                    return Err("a construct reaching past its part's end");
                }
            }
            pc = after;
        }
    }

    /// Walks the part from `pc` to `region`'s stop for the lanes of mask row
    /// `lanes`, then frees the row.
    fn nested(&mut self, lanes: u16, pc: u32, region: Region) -> Result<Flow, Refusal> {
        self.lives.push(Some(lanes));
        let flow = self.region(pc, region);
        self.lives.pop();
        self.free(lanes);
        flow
    }
}
