//! The comparison-predicate table of `FCmp` (ordered float compares) and
//! `ICmp` (signed integer compares), and `Select`. Results are lane masks
//! (0 or all ones).

use super::Neon;
use crate::isa::CmpOp;
use dynasmrt::{DynasmApi, dynasm};

/// The NEON compares every predicate is built from.
#[derive(Clone, Copy)]
enum Relation {
    Equal,
    Greater,
    GreaterOrEqual,
}

/// The predicate table, for floats and integers alike: `c` is `relation`
/// of the operands (swapped when `swap`), negated when `negate`; `None`:
/// always true. With ordered float compares (false on NaN) this gives
/// `Ne` = `not (a == b)`, true when unordered, and every other predicate
/// false on NaN, as `arith::compare`.
fn predicate(c: CmpOp) -> Option<(Relation, bool, bool)> {
    use Relation::*;
    Some(match c {
        CmpOp::Eq => (Equal, false, false),
        CmpOp::Ne => (Equal, false, true),
        CmpOp::Lt => (Greater, true, false),
        CmpOp::Le => (GreaterOrEqual, true, false),
        CmpOp::Gt => (Greater, false, false),
        CmpOp::Ge => (GreaterOrEqual, false, false),
        CmpOp::True6 | CmpOp::True7 => return None,
    })
}

impl Neon<'_> {
    /// `v{d}` = `a c b` on floats (`FCmp`, `arith::compare`).
    pub fn fcmp(&mut self, c: CmpOp, d: u8, a: u8, b: u8) {
        self.compare(c, true, d, a, b);
    }

    /// `v{d}` = `a c b` on `i32` lanes (`ICmp`, `ir::eval::int_compare`).
    pub fn icmp(&mut self, c: CmpOp, d: u8, a: u8, b: u8) {
        self.compare(c, false, d, a, b);
    }

    fn compare(&mut self, c: CmpOp, float: bool, d: u8, a: u8, b: u8) {
        let Some((relation, swap, negate)) = predicate(c) else {
            return self.constant(d, u32::MAX);
        };
        let (x, y) = if swap { (b, a) } else { (a, b) };
        match (relation, float) {
            (Relation::Equal, true) => {
                dynasm!(self.a ; .arch aarch64 ; fcmeq V(d).s4, V(x).s4, V(y).s4)
            }
            (Relation::Greater, true) => {
                dynasm!(self.a ; .arch aarch64 ; fcmgt V(d).s4, V(x).s4, V(y).s4)
            }
            (Relation::GreaterOrEqual, true) => {
                dynasm!(self.a ; .arch aarch64 ; fcmge V(d).s4, V(x).s4, V(y).s4)
            }
            (Relation::Equal, false) => {
                dynasm!(self.a ; .arch aarch64 ; cmeq V(d).s4, V(x).s4, V(y).s4)
            }
            (Relation::Greater, false) => {
                dynasm!(self.a ; .arch aarch64 ; cmgt V(d).s4, V(x).s4, V(y).s4)
            }
            (Relation::GreaterOrEqual, false) => {
                dynasm!(self.a ; .arch aarch64 ; cmge V(d).s4, V(x).s4, V(y).s4)
            }
        }
        if negate {
            dynasm!(self.a ; .arch aarch64 ; mvn V(d).b16, V(d).b16);
        }
    }

    /// `v{d}` = `cond ? a : b` on whole-lane masks; `d` differs from the
    /// operands.
    pub fn select(&mut self, d: u8, cond: u8, a: u8, b: u8) {
        dynasm!(self.a
            ; .arch aarch64
            ; mov V(d).b16, V(cond).b16
            ; bsl V(d).b16, V(a).b16, V(b).b16
        );
    }
}
