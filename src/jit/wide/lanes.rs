//! An IR block split into lane operations: the structure-of-arrays form every
//! wide lowering works from.
//!
//! In the wide engine one host vector holds one PICA component of `W`
//! vertices (one vertex per lane). An IR value of 4 lanes (`f32x4`) becomes
//! four lane values, a scalar one; lane movement ([`Op::Swizzle`],
//! [`Op::Extract`], [`Op::Splat`], [`Op::Blend`]) becomes a choice among them
//! and emits nothing. Every other primitive becomes one [`LaneOp`] per
//! component, deduplicated (the symmetric lanes of a dot product, a
//! broadcast), so a target lowers each lane operation with one short
//! sequence. Register reads and writes name *rows* of the wide register file
//! ([`super::layout`]): reads after a write of the same block are the value
//! written, and only the last write of each row is kept, at the end of the
//! block (a block runs whole).

use super::layout;
use crate::ir::{AddrReg, BinOp, Block, Elem, Exit, Op, UnOp, Value};
use crate::isa::{CmpOp, DstReg};
use crate::state::Uniforms;
use std::collections::HashMap;
use std::mem::offset_of;

/// Index of a lane operation in its [`LaneBlock`].
pub type LaneRef = u32;

/// One operation on `W` lanes (every operand names an earlier operation).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LaneOp {
    /// The same 32 bits in every lane.
    Const(u32),
    /// A row of the wide register file, as it was when the block started.
    Row(u16),
    /// A float uniform component (byte offset in [`Uniforms`]), in every lane.
    Uniform(u16),
    /// A byte of the uniforms (byte offset), zero-extended in every lane; as a
    /// lane mask (all ones when not zero) when `mask`.
    UniformByte {
        /// Byte offset in [`Uniforms`].
        offset: u16,
        /// A boolean uniform: a lane mask.
        mask: bool,
    },
    /// Component `comp` of float uniform `c[slot]` per lane; a slot outside
    /// `0..96` reads 1.0 (`ir::eval::MISSING_CONSTANT`). `group` numbers the
    /// distinct slots of the block (their gathered rows).
    Gather {
        /// The `i32` slot.
        slot: LaneRef,
        /// Which component.
        comp: u8,
        /// Index of the slot among the block's gathers.
        group: u16,
    },
    /// A lane-wise unary primitive.
    Unary(UnOp, LaneRef),
    /// A lane-wise binary primitive.
    Binary(BinOp, LaneRef, LaneRef),
    /// Ordered float comparison → lane mask.
    FCmp(CmpOp, LaneRef, LaneRef),
    /// Signed integer comparison → lane mask.
    ICmp(CmpOp, LaneRef, LaneRef),
    /// `cond ? a : b` per lane, bits preserved.
    Select(LaneRef, LaneRef, LaneRef),
    /// Writes a row (defines no value).
    Store(u16, LaneRef),
}

impl LaneOp {
    /// The operations this one reads.
    pub fn operands(&self) -> impl Iterator<Item = LaneRef> {
        let list: [Option<LaneRef>; 3] = match *self {
            LaneOp::Const(_) | LaneOp::Row(_) | LaneOp::Uniform(_) | LaneOp::UniformByte { .. } => {
                [None; 3]
            }
            LaneOp::Gather { slot, .. } => [Some(slot), None, None],
            LaneOp::Unary(_, a) | LaneOp::Store(_, a) => [Some(a), None, None],
            LaneOp::Binary(_, a, b) | LaneOp::FCmp(_, a, b) | LaneOp::ICmp(_, a, b) => {
                [Some(a), Some(b), None]
            }
            LaneOp::Select(c, a, b) => [Some(c), Some(a), Some(b)],
        };
        list.into_iter().flatten()
    }
}

/// A set of rows of the wide register file's state ([`layout::STATE_ROWS`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct RowSet([u64; 5]);

const _: () = assert!(layout::STATE_ROWS <= 5 * 64);

impl RowSet {
    /// Every state row.
    pub fn all() -> RowSet {
        let mut out = RowSet::default();
        for row in 0..layout::STATE_ROWS as u16 {
            out.insert(row);
        }
        out
    }

    /// Adds `row`.
    pub fn insert(&mut self, row: u16) {
        self.0[row as usize / 64] |= 1 << (row % 64);
    }

    /// Whether `row` is in the set.
    pub fn contains(&self, row: u16) -> bool {
        // Scratch rows past the state (the batch kernel's hoisted values) are
        // never in a set.
        self.0
            .get(row as usize / 64)
            .is_some_and(|word| word >> (row % 64) & 1 != 0)
    }

    /// The components of register `reg` of the file starting at row `base`
    /// in the set (bit `c`: component `c`).
    pub fn register(&self, base: usize, reg: usize) -> u8 {
        let first = base + 4 * reg;
        debug_assert!(
            first.is_multiple_of(4),
            "a register's four rows share a word"
        );
        (self.0[first / 64] >> (first % 64)) as u8 & 0xF
    }

    /// Whether some row of `first..first + count` is in the set.
    pub fn any_in(&self, first: usize, count: usize) -> bool {
        let end = first + count;
        let mut row = first;
        while row < end {
            let word = row / 64;
            let upto = end.min((word + 1) * 64);
            let width = upto - row;
            let bits = self.0[word] >> (row % 64);
            let mask = if width == 64 {
                u64::MAX
            } else {
                (1 << width) - 1
            };
            if bits & mask != 0 {
                return true;
            }
            row = upto;
        }
        false
    }

    /// The rows in both sets.
    pub fn intersection(&self, other: &RowSet) -> RowSet {
        RowSet(std::array::from_fn(|i| self.0[i] & other.0[i]))
    }

    /// Adds every row of `other`.
    pub fn union_with(&mut self, other: &RowSet) {
        for (a, b) in self.0.iter_mut().zip(other.0) {
            *a |= b;
        }
    }

    /// The rows of `self` not in `other`.
    pub fn difference(&self, other: &RowSet) -> RowSet {
        RowSet(std::array::from_fn(|i| self.0[i] & !other.0[i]))
    }

    /// Whether no row is in the set.
    pub fn is_empty(&self) -> bool {
        self.0.iter().all(|&w| w == 0)
    }

    /// Whether every row of `self` is in `other`.
    pub fn is_subset(&self, other: &RowSet) -> bool {
        self.0.iter().zip(other.0).all(|(a, b)| a & !b == 0)
    }

    /// The rows as runs of consecutive rows `(first, count)`, in order.
    pub fn runs(&self) -> impl Iterator<Item = (u16, u16)> + '_ {
        let mut rows = self.rows().peekable();
        std::iter::from_fn(move || {
            let first = rows.next()?;
            let mut count = 1;
            while rows.next_if_eq(&(first + count)).is_some() {
                count += 1;
            }
            Some((first, count))
        })
    }

    /// The rows, in order.
    pub fn rows(&self) -> impl Iterator<Item = u16> + '_ {
        self.0.iter().enumerate().flat_map(|(w, &word)| {
            let mut rest = word;
            std::iter::from_fn(move || {
                (rest != 0).then(|| {
                    let bit = rest.trailing_zeros();
                    rest &= rest - 1;
                    (64 * w as u32 + bit) as u16
                })
            })
        })
    }
}

/// A block as lane operations.
#[derive(Clone, Debug, PartialEq)]
pub struct LaneBlock {
    /// The operations that run, in order (stores last).
    pub ops: Vec<LaneOp>,
    /// The exit's condition (a lane mask), when it has one.
    pub exit_cond: Option<LaneRef>,
    /// A `loop` exit's count and increment (uniform `i32`s).
    pub loop_values: Option<(LaneRef, LaneRef)>,
    /// Temporary, address-register and flag rows read as the block starts.
    pub reads: RowSet,
    /// Rows the block writes.
    pub writes: RowSet,
    /// Number of distinct gathered slots.
    pub gathers: u16,
}

#[cfg(test)]
impl LaneBlock {
    /// A block of `ops` with exit condition `exit_cond` and no row sets,
    /// loop values or gathers (the passes' unit tests build such blocks).
    pub(crate) fn of_ops(ops: Vec<LaneOp>, exit_cond: Option<LaneRef>) -> LaneBlock {
        LaneBlock {
            ops,
            exit_cond,
            loop_values: None,
            reads: RowSet::default(),
            writes: RowSet::default(),
            gathers: 0,
        }
    }
}

impl LaneBlock {
    /// The values the block's exit reads: its condition and a `loop`'s
    /// count and increment.
    pub fn exit_values(&self) -> impl Iterator<Item = LaneRef> {
        let loop_values = self.loop_values.into_iter().flat_map(|(a, b)| [a, b]);
        self.exit_cond.into_iter().chain(loop_values)
    }

    /// Per operation: whether its value is the same in every lane (computed
    /// from uniforms and constants only; stores and gathers never are).
    pub fn uniform_ops(&self) -> Vec<bool> {
        let mut uniform = Vec::with_capacity(self.ops.len());
        for op in &self.ops {
            let same = match op {
                LaneOp::Const(_) | LaneOp::Uniform(_) | LaneOp::UniformByte { .. } => true,
                LaneOp::Unary(..)
                | LaneOp::Binary(..)
                | LaneOp::FCmp(..)
                | LaneOp::ICmp(..)
                | LaneOp::Select(..) => op.operands().all(|o| uniform[o as usize]),
                LaneOp::Row(_) | LaneOp::Gather { .. } | LaneOp::Store(..) => false,
            };
            uniform.push(same);
        }
        uniform
    }

    /// Whether value `v` is the same in every lane: computed from uniforms
    /// and constants only.
    pub fn is_uniform(&self, v: LaneRef) -> bool {
        match self.ops.get(v as usize) {
            Some(LaneOp::Const(_) | LaneOp::Uniform(_) | LaneOp::UniformByte { .. }) => true,
            Some(op @ (LaneOp::Unary(..) | LaneOp::Binary(..) | LaneOp::FCmp(..)))
            | Some(op @ (LaneOp::ICmp(..) | LaneOp::Select(..))) => {
                op.operands().all(|o| self.is_uniform(o))
            }
            _ => false,
        }
    }
}

/// Row of component `comp` of register `n` of the file starting at row `base`.
fn reg_row(base: usize, n: u8, comp: usize) -> u16 {
    (base + 4 * (n as usize & 15) + comp) as u16
}

fn addr_row(reg: AddrReg) -> u16 {
    (match reg {
        AddrReg::A0X => layout::A0X,
        AddrReg::A0Y => layout::A0Y,
        AddrReg::AL => layout::AL,
    }) as u16
}

struct Splitter {
    ops: Vec<LaneOp>,
    cse: HashMap<LaneOp, LaneRef>,
    /// The value each row holds now, if the block wrote it.
    written: HashMap<u16, LaneRef>,
    /// Rows read before any write of this block.
    reads: RowSet,
    slots: HashMap<LaneRef, u16>,
    f24: bool,
}

impl Splitter {
    fn add(&mut self, op: LaneOp) -> LaneRef {
        if let Some(&r) = self.cse.get(&op) {
            return r;
        }
        let r = self.ops.len() as LaneRef;
        self.ops.push(op);
        self.cse.insert(op, r);
        r
    }

    fn row(&mut self, row: u16) -> LaneRef {
        if let Some(&v) = self.written.get(&row) {
            return v;
        }
        if row as usize >= layout::TEMP {
            self.reads.insert(row);
        }
        self.add(LaneOp::Row(row))
    }

    fn gather(&mut self, slot: LaneRef, comp: u8) -> LaneRef {
        let next = self.slots.len() as u16;
        let group = *self.slots.entry(slot).or_insert(next);
        self.add(LaneOp::Gather { slot, comp, group })
    }
}

/// Whether the float24 input flush of a lane computed by `op` is that lane:
/// a float24 quantisation or product (`f24::quantize_result` gives +0, a
/// normal at least 2^-62 in magnitude, an infinity or the canonical NaN,
/// all of which `flush_input` keeps bit for bit) or a flush (idempotent).
fn flush_keeps(op: LaneOp) -> bool {
    matches!(
        op,
        LaneOp::Unary(UnOp::F24Quantize | UnOp::F24Flush, _)
            | LaneOp::Binary(BinOp::PicaMulF24, _, _)
    )
}

/// Splits `block` (optimised IR, every span lowered) into lane operations.
/// `f24` says whether inputs are read through their converted rows.
pub fn split(block: &Block, f24: bool) -> LaneBlock {
    let mut s = Splitter {
        ops: Vec::new(),
        cse: HashMap::new(),
        written: HashMap::new(),
        reads: RowSet::default(),
        slots: HashMap::new(),
        f24,
    };
    // Lane values of every IR value (scalars repeated in all four).
    let mut lanes: Vec<[LaneRef; 4]> = Vec::with_capacity(block.nodes.len());
    let floats = offset_of!(Uniforms, f);
    for node in &block.nodes {
        let get = |v: Value| lanes[v.0 as usize];
        let width = node.ty.map_or(1, |t| t.lanes as usize);
        let per_lane = |s: &mut Splitter, f: &mut dyn FnMut(&mut Splitter, usize) -> LaneOp| {
            let mut out = [0; 4];
            for (c, slot) in out.iter_mut().enumerate().take(width) {
                let op = f(s, c);
                *slot = s.add(op);
            }
            if width == 1 {
                out = [out[0]; 4];
            }
            out
        };
        let value: [LaneRef; 4] = match node.op {
            Op::Const { ty, bits } => per_lane(&mut s, &mut |_, c| {
                let b = bits[c];
                LaneOp::Const(if ty.elem == Elem::Bool && b != 0 {
                    u32::MAX
                } else {
                    b
                })
            }),
            Op::ReadInput(n) => {
                std::array::from_fn(|c| s.add(LaneOp::Row(reg_row(layout::INPUT, n, c))))
            }
            Op::Unary(UnOp::F24Load, v)
                if s.f24 && matches!(block.nodes[v.0 as usize].op, Op::ReadInput(_)) =>
            {
                let Op::ReadInput(n) = block.nodes[v.0 as usize].op else {
                    unreachable!()
                };
                std::array::from_fn(|c| s.add(LaneOp::Row(reg_row(layout::CONVERTED, n, c))))
            }
            // Uniforms reach the wide engine converted once per draw.
            Op::Unary(UnOp::F24Load, v)
                if matches!(
                    block.nodes[v.0 as usize].op,
                    Op::ReadConst(_) | Op::ReadConstAt(_)
                ) =>
            {
                get(v)
            }
            Op::ReadTemp(n) => std::array::from_fn(|c| s.row(reg_row(layout::TEMP, n, c))),
            Op::ReadConst(n) => std::array::from_fn(|c| {
                let off = floats + 16 * (n as usize).min(95) + 4 * c;
                s.add(LaneOp::Uniform(off as u16))
            }),
            Op::ReadConstAt(slot) => {
                let slot = get(slot)[0];
                std::array::from_fn(|c| s.gather(slot, c as u8))
            }
            Op::ReadAddr(reg) => [s.row(addr_row(reg)); 4],
            Op::ReadFlag(f) => [s.row((layout::CMP + (f as usize & 1)) as u16); 4],
            Op::ReadBoolUniform(n) => {
                let offset = (offset_of!(Uniforms, b) + (n as usize & 15)) as u16;
                [s.add(LaneOp::UniformByte { offset, mask: true }); 4]
            }
            Op::ReadIntUniform { id, field } => {
                let offset =
                    (offset_of!(Uniforms, i) + 4 * (id as usize & 3) + (field as usize & 3)) as u16;
                [s.add(LaneOp::UniformByte {
                    offset,
                    mask: false,
                }); 4]
            }
            Op::Store { dst, mask, value } => {
                let v = get(value);
                let base = match dst {
                    DstReg::Temp(_) => layout::TEMP,
                    DstReg::Output(_) => layout::OUTPUT,
                };
                let n = match dst {
                    DstReg::Temp(n) | DstReg::Output(n) => n,
                };
                for (c, &lane) in v.iter().enumerate() {
                    if mask.writes(c) {
                        s.written.insert(reg_row(base, n, c), lane);
                    }
                }
                [0; 4]
            }
            Op::WriteAddr(reg, v) => {
                s.written.insert(addr_row(reg), get(v)[0]);
                [0; 4]
            }
            Op::WriteFlag(f, v) => {
                s.written
                    .insert((layout::CMP + (f as usize & 1)) as u16, get(v)[0]);
                [0; 4]
            }
            Op::Swizzle(v, sel) => {
                let v = get(v);
                sel.map(|l| v[l as usize & 3])
            }
            Op::Extract(v, l) => [get(v)[l as usize & 3]; 4],
            Op::Splat(v) => [get(v)[0]; 4],
            Op::Blend { a, b, take_b } => {
                let (a, b) = (get(a), get(b));
                std::array::from_fn(|c| if take_b.writes(c) { b[c] } else { a[c] })
            }
            Op::Select { cond, a, b } => {
                let (cond, a, b) = (get(cond), get(a), get(b));
                per_lane(&mut s, &mut |_, c| LaneOp::Select(cond[c], a[c], b[c]))
            }
            // The input flush of a float24 quantised lane is that lane
            // (§9.36): the IR's `opt` drops such a flush only where every
            // lane of its operand is quantised, and a blend of a product
            // into a read temporary is not.
            Op::Unary(UnOp::F24Flush, v) => {
                let v = get(v);
                let mut out = [0; 4];
                for (c, slot) in out.iter_mut().enumerate().take(width) {
                    *slot = if flush_keeps(s.ops[v[c] as usize]) {
                        v[c]
                    } else {
                        s.add(LaneOp::Unary(UnOp::F24Flush, v[c]))
                    };
                }
                if width == 1 {
                    out = [out[0]; 4];
                }
                out
            }
            Op::Unary(u, v) => {
                let v = get(v);
                per_lane(&mut s, &mut |_, c| LaneOp::Unary(u, v[c]))
            }
            Op::Binary(o, a, b) => {
                let (a, b) = (get(a), get(b));
                per_lane(&mut s, &mut |_, c| LaneOp::Binary(o, a[c], b[c]))
            }
            Op::FCmp(o, a, b) => {
                let (a, b) = (get(a), get(b));
                per_lane(&mut s, &mut |_, c| LaneOp::FCmp(o, a[c], b[c]))
            }
            Op::ICmp(o, a, b) => {
                let (a, b) = (get(a), get(b));
                per_lane(&mut s, &mut |_, c| LaneOp::ICmp(o, a[c], b[c]))
            }
        };
        lanes.push(value);
    }
    let lane0 = |v: Value| lanes[v.0 as usize][0];
    let (exit_cond, loop_values) = match block.exit {
        Exit::Jump { taken, .. } | Exit::If { taken, .. } => (Some(lane0(taken)), None),
        Exit::Call { taken, .. } | Exit::Break { taken } => (taken.map(lane0), None),
        Exit::Loop {
            count, increment, ..
        } => (None, Some((lane0(count), lane0(increment)))),
        Exit::Next | Exit::End | Exit::Emit | Exit::SetEmit { .. } => (None, None),
    };
    let mut writes = RowSet::default();
    let mut stores: Vec<(u16, LaneRef)> = s.written.into_iter().collect();
    stores.sort_unstable();
    for &(row, v) in &stores {
        // A row stored with the value it had as the block started (the IR
        // writes a partly written temporary whole) stays as it is: no store,
        // and no read of it for that.
        if matches!(s.ops[v as usize], LaneOp::Row(r) if r == row) {
            continue;
        }
        writes.insert(row);
        s.ops.push(LaneOp::Store(row, v));
    }
    // Dead operations: nothing stored or tested reads them.
    let mut needed = vec![false; s.ops.len()];
    for r in exit_cond
        .into_iter()
        .chain(loop_values.into_iter().flat_map(|(a, b)| [a, b]))
    {
        needed[r as usize] = true;
    }
    for k in (0..s.ops.len()).rev() {
        if matches!(s.ops[k], LaneOp::Store(..)) {
            needed[k] = true;
        }
        if needed[k] {
            for o in s.ops[k].operands() {
                needed[o as usize] = true;
            }
        }
    }
    let mut renumber = vec![u32::MAX; s.ops.len()];
    let mut ops = Vec::new();
    let mut reads = RowSet::default();
    for (k, op) in s.ops.iter().enumerate() {
        if !needed[k] {
            continue;
        }
        let map = |r: LaneRef| renumber[r as usize];
        let op = match *op {
            LaneOp::Gather { slot, comp, group } => LaneOp::Gather {
                slot: map(slot),
                comp,
                group,
            },
            LaneOp::Unary(u, a) => LaneOp::Unary(u, map(a)),
            LaneOp::Binary(o, a, b) => LaneOp::Binary(o, map(a), map(b)),
            LaneOp::FCmp(o, a, b) => LaneOp::FCmp(o, map(a), map(b)),
            LaneOp::ICmp(o, a, b) => LaneOp::ICmp(o, map(a), map(b)),
            LaneOp::Select(c, a, b) => LaneOp::Select(map(c), map(a), map(b)),
            LaneOp::Store(row, a) => LaneOp::Store(row, map(a)),
            LaneOp::Row(row) => {
                if s.reads.contains(row) {
                    reads.insert(row);
                }
                LaneOp::Row(row)
            }
            other => other,
        };
        renumber[k] = ops.len() as LaneRef;
        ops.push(op);
    }
    let map = |r: LaneRef| renumber[r as usize];
    LaneBlock {
        ops,
        exit_cond: exit_cond.map(map),
        loop_values: loop_values.map(|(a, b)| (map(a), map(b))),
        reads,
        writes,
        gathers: s.slots.len() as u16,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::Ir;
    use crate::isa::{
        BinaryOp, DstReg, Instruction, OperandDescriptor, Source, SrcReg, Swizzle, WriteMask,
        encode,
    };
    use crate::program::{Program, ShaderKind};

    #[test]
    fn row_sets_iterate_rows_and_runs() {
        let mut set = RowSet::default();
        for row in [3, 4, 5, 63, 64, 65, 200, 260] {
            set.insert(row);
        }
        assert_eq!(
            set.rows().collect::<Vec<_>>(),
            [3, 4, 5, 63, 64, 65, 200, 260]
        );
        assert_eq!(
            set.runs().collect::<Vec<_>>(),
            [(3, 3), (63, 3), (200, 1), (260, 1)]
        );
        let mut other = RowSet::default();
        other.insert(4);
        assert!(other.is_subset(&set));
        other.insert(6);
        assert!(!other.is_subset(&set));
        assert_eq!(RowSet::all().rows().count(), layout::STATE_ROWS);
        // Registers: rows 64, 65 are components 0, 1 of the register at 64.
        assert_eq!(set.register(64, 0), 0b0011);
        assert_eq!(set.register(60, 0), 0b1000);
        assert_eq!(set.register(256, 0), 0);
        assert_eq!(set.register(256, 1), 0b0001);
        assert_eq!(set.register(0, 1), 0b0011);
        for (first, count, any) in [
            (0, 3, false),
            (0, 4, true),
            (6, 57, false),
            (6, 58, true),
            (66, 134, false),
            (66, 135, true),
            (201, 59, false),
            (201, 60, true),
            (128, 64, false),
        ] {
            assert_eq!(set.any_in(first, count), any, "rows {first}..+{count}");
        }
    }

    fn block_of(instrs: &[Instruction], precision: crate::Precision) -> LaneBlock {
        let id = (false, Swizzle::IDENTITY);
        let desc = OperandDescriptor::new(WriteMask::ALL, [id, id, id]);
        let mut words: Vec<u32> = instrs.iter().map(|i| encode(i).unwrap()).collect();
        words.push(encode(&Instruction::End).unwrap());
        let program = Program::new(words, vec![desc.0]).unwrap();
        let ir = Ir::build(&program, 0, ShaderKind::Vertex, precision);
        split(
            &crate::ir::opt::optimize(&ir).blocks[0],
            precision == crate::Precision::F24,
        )
    }

    /// `add o0, v0, r1` in F32: per component a read of each operand, an add
    /// and a canonicalisation, then four stores; `r1` is read as the block
    /// starts, `o0` written.
    #[test]
    fn an_add_is_four_lane_adds() {
        let add = Instruction::Binary {
            op: BinaryOp::Add,
            inverted: false,
            dst: DstReg::Output(0),
            src1: Source::direct(SrcReg::Input(0)),
            src2: Source::direct(SrcReg::Temp(1)),
            desc: 0,
        };
        let b = block_of(&[add], crate::Precision::F32);
        let count = |f: &dyn Fn(&LaneOp) -> bool| b.ops.iter().filter(|op| f(op)).count();
        assert_eq!(
            count(&|op| matches!(op, LaneOp::Binary(BinOp::FAdd, ..))),
            4
        );
        assert_eq!(
            count(&|op| matches!(op, LaneOp::Unary(UnOp::Canonicalize, _))),
            4
        );
        assert_eq!(count(&|op| matches!(op, LaneOp::Row(_))), 8);
        assert_eq!(count(&|op| matches!(op, LaneOp::Store(..))), 4);
        let temp1 = (layout::TEMP + 4) as u16;
        assert_eq!(
            b.reads.rows().collect::<Vec<_>>(),
            [temp1, temp1 + 1, temp1 + 2, temp1 + 3]
        );
        let out0 = layout::OUTPUT as u16;
        assert_eq!(
            b.writes.rows().collect::<Vec<_>>(),
            [out0, out0 + 1, out0 + 2, out0 + 3]
        );
        assert_eq!(b.exit_cond, None);
    }

    /// `mov r2.xy, v0`: the IR writes `r2` whole (its `zw` as they were);
    /// the lanes store `r2.x` and `r2.y` only and read no register state.
    #[test]
    fn a_partly_written_temporary_stores_only_its_written_rows() {
        let id = (false, Swizzle::IDENTITY);
        let xy = OperandDescriptor::new(WriteMask(0b1100), [id, id, id]);
        let mov = Instruction::Unary {
            op: crate::isa::UnaryOp::Mov,
            dst: DstReg::Temp(2),
            src: Source::direct(SrcReg::Input(0)),
            desc: 0,
        };
        let words = vec![encode(&mov).unwrap(), encode(&Instruction::End).unwrap()];
        let program = Program::new(words, vec![xy.0]).unwrap();
        let ir = Ir::build(&program, 0, ShaderKind::Vertex, crate::Precision::F32);
        let b = split(&crate::ir::opt::optimize(&ir).blocks[0], false);
        let r2 = (layout::TEMP + 8) as u16;
        assert_eq!(b.writes.rows().collect::<Vec<_>>(), [r2, r2 + 1]);
        assert!(b.reads.is_empty(), "reads {:?}", b.reads);
        let stores: Vec<u16> = b
            .ops
            .iter()
            .filter_map(|op| match op {
                LaneOp::Store(row, _) => Some(*row),
                _ => None,
            })
            .collect();
        assert_eq!(stores, [r2, r2 + 1]);
    }

    /// A register written and read again in one block is read from the
    /// written value: `mov r0, v0; mov o0, r0` reads no register state.
    #[test]
    fn reads_after_writes_are_forwarded() {
        let mov = |dst, src| Instruction::Unary {
            op: crate::isa::UnaryOp::Mov,
            dst,
            src: Source::direct(src),
            desc: 0,
        };
        let b = block_of(
            &[
                mov(DstReg::Temp(0), SrcReg::Input(0)),
                mov(DstReg::Output(0), SrcReg::Temp(0)),
            ],
            crate::Precision::F32,
        );
        assert_eq!(b.reads, RowSet::default());
        assert_eq!(b.writes.rows().count(), 8);
    }
}
