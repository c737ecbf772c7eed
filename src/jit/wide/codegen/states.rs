//! A batch kernel's moves between a group of `UnitState`s (one per lane) and
//! the register file: which registers and small rows a plan loads and stores,
//! in the same order on every ISA; each ISA's kernel moves one register or
//! one row ([`StateRows`]).

use super::{files, small_rows};
use crate::jit::wide::plan::KernelPlan;

/// One ISA's moves between the group's states and the register file, and
/// the plan's loads and stores over them.
pub(crate) trait StateRows {
    /// Rows `first_row..first_row + 4` of every lane = the `Vec4` at `field`
    /// of each state.
    fn load_register(&mut self, field: usize, first_row: usize);

    /// The `Vec4` at `field` of each state = rows `first_row..first_row + 4`
    /// of its lane.
    fn store_register(&mut self, first_row: usize, field: usize);

    /// Row `row` of every lane = the 32 bits at `field` of each state (a
    /// `bool` byte as a lane mask when `flag`).
    fn load_scalars(&mut self, row: usize, field: usize, flag: bool);

    /// The 32 bits (a `bool` when `flag`) at `field` of each state = row
    /// `row` of its lane.
    fn store_scalars(&mut self, row: usize, field: usize, flag: bool);

    /// The group's states → the rows `plan` loads.
    fn load_states(&mut self, plan: &KernelPlan) {
        let load = plan.load;
        let masks = [load.inputs, load.temps, load.outputs];
        for ((field, base), mask) in files().into_iter().zip(masks) {
            for n in (0..16).filter(|n| mask >> n & 1 != 0) {
                self.load_register(field + 16 * n, base + 4 * n);
            }
        }
        if load.small {
            for (row, field, flag) in small_rows() {
                self.load_scalars(row, field, flag);
            }
        }
    }

    /// The rows `plan` stores → the group's states.
    fn store_states(&mut self, plan: &KernelPlan) {
        for (field, base) in files().into_iter().skip(1) {
            for n in 0..16 {
                let comps = plan.store.register(base, n);
                if comps == 0xF {
                    self.store_register(base + 4 * n, field + 16 * n);
                    continue;
                }
                for c in (0..4).filter(|c| comps >> c & 1 != 0) {
                    self.store_scalars(base + 4 * n + c, field + 16 * n + 4 * c, false);
                }
            }
        }
        for (row, field, flag) in small_rows() {
            if plan.store.contains(row as u16) {
                self.store_scalars(row, field, flag);
            }
        }
    }
}
