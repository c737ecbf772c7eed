//! Target-independent IR passes, shared by every code generator.
//!
//! [`optimize`] rewrites each block of an [`Ir`] with three passes:
//!
//! 1. **Forwarding** of register state within a block: a read of a temporary,
//!    an address register or a flag that the block wrote earlier is replaced by
//!    the value written (a masked store contributes a [`Op::Blend`] of the
//!    previous contents and the stored value), and the first read of each is
//!    reused by later reads.
//! 2. **Common-subexpression elimination** of pure nodes (constants, input and
//!    uniform reads, conversions, arithmetic): a node equal to an earlier one
//!    (same operation on the same operands) is replaced by it.
//! 3. **Dropping float24 and NaN steps that do nothing**, by facts tracked per
//!    value: a value produced by `f24_quantize` is on the float24 grid (a
//!    fixed point of `f24_quantize`, `f24_load`, `f24_flush` and
//!    `canonicalize`), a value produced by `f24_load` is a fixed point of
//!    `f24_load` and `canonicalize`; lane movements keep the facts, selects
//!    and PICA min/max keep the facts both operands share, and the F24
//!    negation `canonicalize(0 - q)` of a grid value is on the grid. In F24
//!    a read of a temporary has the facts of every value written to it in
//!    the program (and of the entry conversion), a fixed point over all
//!    blocks (`forward_with_temp_facts`).
//!
//! 4. **Combining register writes**: the writes of a block to one temporary
//!    or output become one masked write (of a blend of the values written) at
//!    the place of the last one.
//! 5. **Dropping canonicalisations whose NaN payload nobody observes** (every
//!    use ignores it, like a multiply or a later canonicalisation, or passes it
//!    on to such uses, like an add): an F32 dot product canonicalises once.
//! 6. **Merging a product's quantisation into it**: `f24_quantize` of a
//!    `pica_mul` nothing else uses becomes one [`BinOp::PicaMulF24`].
//!
//! followed by the removal of pure nodes nobody uses.
//!
//! After these passes a value may be used by a later instruction of its block
//! and a write may happen at a later instruction
//! ([`Ir::values_cross_spans`]): a block must be entered at its start and run
//! whole. The x86-64 code generator does exactly that (a block entered
//! mid-way, or one the budget cannot cover, runs on the interpreter).
//! [`eval::run_optimized`](super::eval::run_optimized) runs an optimised IR
//! with the unoptimised one for the other cases; the tests compare it with the
//! unoptimised IR bit for bit.

use super::{AddrReg, BinOp, Block, Elem, Exit, InstrSpan, Ir, Node, Op, UnOp, Value};
use crate::arith::{self, f24};
use crate::isa::{DstReg, WriteMask};

/// The CSE table of the block being rebuilt: open addressing over the
/// rebuilt nodes, whose own operations are the keys (a slot holds a key's
/// hash and its node's index + 1; 0: empty). A block makes a few dozen
/// lookups, for which a general hash map's copies of the keys and its
/// generic probing cost more than the rest of the rewrite around them.
#[derive(Default)]
struct OpTable {
    slots: Vec<(u32, u32)>,
    len: usize,
}

impl OpTable {
    /// Empties the table, sized for a block of `nodes` nodes (it grows if
    /// the rewrite adds more).
    fn reset(&mut self, nodes: usize) {
        let capacity = (2 * nodes).next_power_of_two().max(16);
        self.slots.clear();
        self.slots.resize(capacity, (0, 0));
        self.len = 0;
    }

    fn hash(op: &Op) -> u32 {
        use std::hash::{Hash, Hasher};
        let mut hasher = super::hash::WordHasher::default();
        op.hash(&mut hasher);
        // The multiply's high bits depend on every input bit.
        (hasher.finish() >> 32) as u32
    }

    /// The node of `nodes` whose operation is `op` (of hash `hash`), or the
    /// free slot where it goes.
    #[inline(always)]
    fn find(&self, nodes: &[Node], op: &Op, hash: u32) -> Result<Value, usize> {
        let mask = self.slots.len() - 1;
        let mut at = hash as usize & mask;
        loop {
            let (h, index) = self.slots[at];
            if index == 0 {
                return Err(at);
            }
            if h == hash && nodes[index as usize - 1].op == *op {
                return Ok(Value(index - 1));
            }
            at = (at + 1) & mask;
        }
    }

    /// Records value `v` in the free `slot` [`OpTable::find`] returned; at
    /// most half the slots are ever full, so every probe ends.
    fn insert_at(&mut self, slot: usize, hash: u32, v: Value) {
        self.slots[slot] = (hash, v.0 + 1);
        self.len += 1;
        if 2 * self.len > self.slots.len() {
            let old = std::mem::take(&mut self.slots);
            self.slots = vec![(0, 0); 2 * old.len()];
            let mask = self.slots.len() - 1;
            for (h, index) in old.into_iter().filter(|&(_, index)| index != 0) {
                let mut at = h as usize & mask;
                while self.slots[at].1 != 0 {
                    at = (at + 1) & mask;
                }
                self.slots[at] = (h, index);
            }
        }
    }
}

/// Facts about every lane of a value (a bit set).
type Facts = u8;
/// A fixed point of `f24_quantize` (so of `f24_load`, `f24_flush`, `canonicalize`).
const QUANTIZED: Facts = 1;
/// A fixed point of `f24_load` (so of `canonicalize`).
const LOADED: Facts = 2;
/// A fixed point of `canonicalize` (no NaN other than the canonical one).
const CANONICAL: Facts = 4;

/// Returns `ir` with every block optimised (the prologue is kept as is).
///
/// ```
/// use pica_jit::ir::{Ir, Op, opt};
/// use pica_jit::isa::{encode, BinaryOp, DstReg, Instruction, OperandDescriptor, Source, SrcReg, Swizzle, WriteMask};
/// use pica_jit::{Precision, Program, ShaderKind};
///
/// // r0 = v0 + v0; o0 = r0 + r0; o1 = r0 + r0: as built, each later add reads r0 once
/// // (for both its sources); optimised, both take the first add's result.
/// let add = |dst, src| Instruction::Binary {
///     op: BinaryOp::Add, inverted: false, dst,
///     src1: Source::direct(src), src2: Source::direct(src), desc: 0,
/// };
/// let id = (false, Swizzle::IDENTITY);
/// let desc = OperandDescriptor::new(WriteMask::ALL, [id, id, id]);
/// let code = [
///     add(DstReg::Temp(0), SrcReg::Input(0)),
///     add(DstReg::Output(0), SrcReg::Temp(0)),
///     add(DstReg::Output(1), SrcReg::Temp(0)),
///     Instruction::End,
/// ];
/// let program = Program::new(code.iter().map(|i| encode(i).unwrap()).collect(), vec![desc.0]).unwrap();
/// let ir = Ir::build(&program, 0, ShaderKind::Vertex, Precision::F24);
/// let optimised = opt::optimize(&ir);
/// assert!(optimised.values_cross_spans);
/// let reads = |ir: &Ir| ir.blocks[0].nodes.iter().filter(|n| matches!(n.op, Op::ReadTemp(_))).count();
/// assert_eq!((reads(&ir), reads(&optimised)), (2, 0));
/// assert_eq!(optimised.verify(), Ok(()));
/// ```
pub fn optimize(ir: &Ir) -> Ir {
    let blocks = {
        let mut scratch = Scratch::for_blocks(&ir.blocks);
        let (mut blocks, steps) = forward_with_temp_facts(ir, &mut scratch);
        // (In place: a block is a few words moved for each pass otherwise.)
        for (block, &steps) in blocks.iter_mut().zip(&steps) {
            // A pass runs only on a block that has what it rewrites
            // (most F24 blocks canonicalise nothing, most F32 ones
            // quantise nothing): each would otherwise walk every node
            // to find that out.
            if steps & CANONICALIZES != 0 {
                nan_payloads(block, &mut scratch);
            }
            // (`nan_payloads` changes operands: after it, look again, if
            // there is a quantisation whose operand it may have changed.)
            if steps & QUANTIZED_PRODUCTS != 0
                || steps & (CANONICALIZES | QUANTIZES) == CANONICALIZES | QUANTIZES
            {
                fuse_f24_products(block, &mut scratch);
            }
            dead_code(block, &mut scratch);
        }
        scratch.keep();
        blocks
    };
    let out = Ir {
        entry: ir.entry,
        kind: ir.kind,
        precision: ir.precision,
        // After the blocks, as `Ir::build` builds it (`Ir::recycle`).
        prologue: super::spare::copy_block(&ir.prologue),
        blocks,
        values_cross_spans: true,
        block_of: ir.block_of.clone(),
    };
    debug_assert_eq!(out.verify(), Ok(()));
    out
}

/// Working buffers of the passes, reused from block to block (a program of
/// many small blocks otherwise spends much of its compilation allocating).
#[derive(Default)]
struct Scratch {
    remap: Vec<Value>,
    /// Per node, how many nodes use its value (`fuse_f24_products`).
    uses: Vec<u32>,
    /// Per node, the facts of each lane (`estimated_writes`).
    lanes: Vec<[Facts; 4]>,
    flags: Vec<bool>,
    seen: OpTable,
    /// Per node of the block being rebuilt, its facts (`Rebuild`).
    facts: Vec<Facts>,
}

/// The room (elements per buffer) of the [`Scratch`] a thread keeps
/// between compilations, at most (as `spare::MAX_SPARE_ROOM` for nodes).
const MAX_KEPT_SCRATCH: usize = 1 << 16;

thread_local! {
    /// The optimiser's buffers, kept per thread from one compilation to the
    /// next (allocating and freeing them was about a twentieth of optimising
    /// a small program). Only capacity crosses: every pass clears what it uses.
    static KEPT_SCRATCH: std::cell::Cell<Option<Scratch>> = const { std::cell::Cell::new(None) };
}

impl Scratch {
    /// Buffers with room for the largest of `blocks` and what rewriting it
    /// adds ([`rebuilt_capacity`]): growing them block by block, each time
    /// copying what they held, was a noticeable part of optimising. Those
    /// the thread kept ([`Scratch::keep`]) if any, emptied.
    fn for_blocks(blocks: &[Block]) -> Scratch {
        let most = blocks.iter().map(|b| b.nodes.len()).max().unwrap_or(0);
        let room = rebuilt_capacity(most);
        let mut scratch = KEPT_SCRATCH
            .try_with(std::cell::Cell::take)
            .ok()
            .flatten()
            .unwrap_or_default();
        scratch.remap.clear();
        scratch.remap.reserve(room);
        scratch.uses.clear();
        scratch.uses.reserve(room);
        scratch.lanes.clear();
        scratch.lanes.reserve(room);
        scratch.flags.clear();
        scratch.flags.reserve(room);
        scratch.facts.clear();
        scratch.facts.reserve(room);
        scratch
    }

    /// Keeps the buffers for the thread's next compilation unless one has
    /// grown past [`MAX_KEPT_SCRATCH`] (a huge program's memory is not kept).
    fn keep(self) {
        let most = [
            self.remap.capacity(),
            self.uses.capacity(),
            self.lanes.capacity(),
            self.flags.capacity(),
            self.facts.capacity(),
            self.seen.slots.capacity(),
        ];
        if most.iter().all(|&c| c <= MAX_KEPT_SCRATCH) {
            let _ = KEPT_SCRATCH.try_with(|kept| kept.set(Some(self)));
        }
    }
}

/// Room for the rewrite of a block of `nodes` nodes: forwarding may add
/// nodes (the reads a partial write blends with, the blends of its lanes),
/// about one per few written registers in the corpus; a buffer that must
/// grow anyway copies what it holds once more.
fn rebuilt_capacity(nodes: usize) -> usize {
    nodes + nodes / 4 + 8
}

/// What a rewritten block holds that a later pass rewrites (a bit set): a
/// superset (a node counted may end up unused), so a pass skipped for a
/// block that lacks its bit would have changed nothing.
type Steps = u8;
/// A `canonicalize` ([`nan_payloads`]).
const CANONICALIZES: Steps = 1;
/// An `f24_quantize` of a `pica_mul` ([`fuse_f24_products`]).
const QUANTIZED_PRODUCTS: Steps = 2;
/// An `f24_quantize` (of anything): without one, [`fuse_f24_products`]
/// has nothing to rewrite even after [`nan_payloads`] (every F32 block).
const QUANTIZES: Steps = 4;

/// The [`Steps`] bit of `op`, a node pushed after the nodes of `nodes`.
#[inline(always)]
fn step_of(nodes: &[Node], op: &Op) -> Steps {
    match *op {
        Op::Unary(UnOp::Canonicalize, _) => CANONICALIZES,
        Op::Unary(UnOp::F24Quantize, p)
            if matches!(
                nodes.get(p.0 as usize).map(|n| n.op),
                Some(Op::Binary(BinOp::PicaMul, ..))
            ) =>
        {
            QUANTIZED_PRODUCTS | QUANTIZES
        }
        Op::Unary(UnOp::F24Quantize, _) => QUANTIZES,
        _ => 0,
    }
}

/// Rebuilds a block node by node, remapping operands.
struct Rebuild {
    nodes: Vec<Node>,
    instrs: Vec<InstrSpan>,
    facts: Vec<Facts>,
    /// The [`Steps`] of the nodes interned so far.
    steps: Steps,
}

impl Rebuild {
    /// Rebuilds `block` with `facts` (emptied) as its facts buffer.
    fn new(block: &Block, mut facts: Vec<Facts>) -> Rebuild {
        let room = rebuilt_capacity(block.nodes.len());
        facts.clear();
        facts.reserve(room);
        let (nodes, instrs) = super::spare::block_buffers(room, block.instrs.len());
        Rebuild {
            nodes,
            instrs,
            facts,
            steps: 0,
        }
    }

    fn begin(&mut self, pc: u32) {
        let at = self.nodes.len() as u32;
        self.instrs.push(InstrSpan {
            pc,
            first: at,
            end: at,
        });
    }

    /// Ends the span [`Rebuild::begin`] started at the last node pushed.
    fn end(&mut self) {
        let end = self.nodes.len() as u32;
        if let Some(span) = self.instrs.last_mut() {
            span.end = end;
        }
    }

    /// Appends `node` (to the span begun last: [`Rebuild::end`] closes it).
    fn push(&mut self, node: Node, facts: Facts) -> Value {
        let value = Value(self.nodes.len() as u32);
        self.nodes.push(node);
        self.facts.push(facts);
        value
    }

    fn facts(&self, v: Value) -> Facts {
        self.facts[v.0 as usize]
    }

    fn op(&self, v: Value) -> Op {
        self.nodes[v.0 as usize].op
    }

    /// The rebuilt block, and the facts buffer for the next one.
    fn finish(self, block: &Block, exit: Exit) -> (Block, Vec<Facts>) {
        debug_assert!(
            self.instrs
                .last()
                .is_none_or(|s| s.end as usize == self.nodes.len())
        );
        let rebuilt = Block {
            start: block.start,
            last: block.last,
            nodes: self.nodes,
            instrs: self.instrs,
            exit,
            stack_check: block.stack_check,
        };
        (rebuilt, self.facts)
    }
}

/// `op` with every operand passed through `map`.
fn map_operands(op: Op, mut map: impl FnMut(Value) -> Value) -> Op {
    match op {
        Op::Const { .. }
        | Op::ReadInput(_)
        | Op::ReadTemp(_)
        | Op::ReadConst(_)
        | Op::ReadAddr(_)
        | Op::ReadFlag(_)
        | Op::ReadBoolUniform(_)
        | Op::ReadIntUniform { .. } => op,
        Op::ReadConstAt(v) => Op::ReadConstAt(map(v)),
        Op::Store { dst, mask, value } => Op::Store {
            dst,
            mask,
            value: map(value),
        },
        Op::WriteAddr(reg, v) => Op::WriteAddr(reg, map(v)),
        Op::WriteFlag(flag, v) => Op::WriteFlag(flag, map(v)),
        Op::Swizzle(v, lanes) => Op::Swizzle(map(v), lanes),
        Op::Extract(v, lane) => Op::Extract(map(v), lane),
        Op::Splat(v) => Op::Splat(map(v)),
        Op::Blend { a, b, take_b } => Op::Blend {
            a: map(a),
            b: map(b),
            take_b,
        },
        Op::Select { cond, a, b } => Op::Select {
            cond: map(cond),
            a: map(a),
            b: map(b),
        },
        Op::Unary(u, v) => Op::Unary(u, map(v)),
        Op::Binary(o, a, b) => Op::Binary(o, map(a), map(b)),
        Op::FCmp(c, a, b) => Op::FCmp(c, map(a), map(b)),
        Op::ICmp(c, a, b) => Op::ICmp(c, map(a), map(b)),
    }
}

/// Replaces each operand `v` of `op` by `remap[v]`, in place: the same as
/// `map_operands(op, |v| remap[v])` without building a new operation (the
/// passes that renumber a block do it to every node they keep, and moving
/// the whole operation field by field cost more than the lookups).
#[inline(always)]
fn remap_operands(op: &mut Op, remap: &[Value]) {
    remap_operands_by(op, |v| remap[v.0 as usize]);
}

/// Replaces each operand `v` of `op` by `map(v)`, in place.
#[inline(always)]
fn remap_operands_by(op: &mut Op, map: impl Fn(Value) -> Value) {
    let visit = |v: &mut Value| *v = map(*v);
    visit_operands!(op, visit);
}

/// Calls the closure `$visit` on each operand of `$op` in order (the order
/// [`operand_array`] lists them), by reference: `&Value` for a `&Op`,
/// `&mut Value` for a `&mut Op`. One match for the passes that read the
/// operands and those that renumber them in place (a direct match each:
/// both run on every node the optimiser keeps).
macro_rules! visit_operands {
    ($op:expr, $visit:ident) => {{
        match $op {
            Op::Const { .. }
            | Op::ReadInput(_)
            | Op::ReadTemp(_)
            | Op::ReadConst(_)
            | Op::ReadAddr(_)
            | Op::ReadFlag(_)
            | Op::ReadBoolUniform(_)
            | Op::ReadIntUniform { .. } => {}
            Op::ReadConstAt(v)
            | Op::Store { value: v, .. }
            | Op::WriteAddr(_, v)
            | Op::WriteFlag(_, v)
            | Op::Swizzle(v, _)
            | Op::Extract(v, _)
            | Op::Splat(v)
            | Op::Unary(_, v) => $visit(v),
            Op::Blend { a, b, .. }
            | Op::Binary(_, a, b)
            | Op::FCmp(_, a, b)
            | Op::ICmp(_, a, b) => {
                $visit(a);
                $visit(b);
            }
            Op::Select { cond, a, b } => {
                $visit(cond);
                $visit(a);
                $visit(b);
            }
        }
    }};
}
use visit_operands;

/// The operands of `op`, in order (the order `map_operands` visits them).
pub fn operands(op: &Op) -> impl Iterator<Item = Value> + use<> {
    let (list, len) = operand_array(op);
    list.into_iter().take(len)
}

/// [`operands`] as an array and its length (entries past the length are
/// filler): a direct match, since every pass and both lowerings ask this of
/// every node.
#[inline]
pub fn operand_array(op: &Op) -> ([Value; 3], usize) {
    let none = Value(u32::MAX);
    match *op {
        Op::Const { .. }
        | Op::ReadInput(_)
        | Op::ReadTemp(_)
        | Op::ReadConst(_)
        | Op::ReadAddr(_)
        | Op::ReadFlag(_)
        | Op::ReadBoolUniform(_)
        | Op::ReadIntUniform { .. } => ([none; 3], 0),
        Op::ReadConstAt(v)
        | Op::Store { value: v, .. }
        | Op::WriteAddr(_, v)
        | Op::WriteFlag(_, v)
        | Op::Swizzle(v, _)
        | Op::Extract(v, _)
        | Op::Splat(v)
        | Op::Unary(_, v) => ([v, none, none], 1),
        Op::Blend { a, b, .. } | Op::Binary(_, a, b) | Op::FCmp(_, a, b) | Op::ICmp(_, a, b) => {
            ([a, b, none], 2)
        }
        Op::Select { cond, a, b } => ([cond, a, b], 3),
    }
}

/// The values an exit uses.
pub(crate) fn exit_operands(exit: &Exit) -> impl Iterator<Item = Value> {
    let list: [Option<Value>; 2] = match *exit {
        Exit::Jump { taken, .. } | Exit::If { taken, .. } => [Some(taken), None],
        Exit::Call { taken, .. } | Exit::Break { taken } => [taken, None],
        Exit::Loop {
            count, increment, ..
        } => [Some(count), Some(increment)],
        Exit::Next | Exit::End | Exit::Emit | Exit::SetEmit { .. } => [None, None],
    };
    list.into_iter().flatten()
}

fn map_exit(exit: Exit, map: impl Fn(Value) -> Value) -> Exit {
    match exit {
        Exit::Jump { taken, target } => Exit::Jump {
            taken: map(taken),
            target,
        },
        Exit::If {
            taken,
            target,
            next,
        } => Exit::If {
            taken: map(taken),
            target,
            next,
        },
        Exit::Call {
            taken,
            target,
            check,
            ret,
        } => Exit::Call {
            taken: taken.map(&map),
            target,
            check,
            ret,
        },
        Exit::Break { taken } => Exit::Break {
            taken: taken.map(&map),
        },
        Exit::Loop {
            count,
            increment,
            start,
            check,
        } => Exit::Loop {
            count: map(count),
            increment: map(increment),
            start,
            check,
        },
        other => other,
    }
}

/// Whether `op` has no effect and depends only on its operands and on state no
/// instruction writes (uniforms, inputs): equal nodes give equal values.
fn is_pure(op: &Op) -> bool {
    !matches!(
        op,
        Op::ReadTemp(_)
            | Op::ReadAddr(_)
            | Op::ReadFlag(_)
            | Op::Store { .. }
            | Op::WriteAddr(..)
            | Op::WriteFlag(..)
    )
}

/// The facts every lane of constant `bits` satisfies.
fn constant_facts(elem: Elem, lanes: u8, bits: [u32; 4]) -> Facts {
    if elem != Elem::F32 {
        return 0;
    }
    let lanes = &bits[..usize::from(lanes).min(4)];
    let mut facts = QUANTIZED | LOADED | CANONICAL;
    for (i, &b) in lanes.iter().enumerate() {
        // (A lane equal to the one before has its facts: broadcasts are common.)
        if i == 0 || b != lanes[i - 1] {
            facts &= lane_facts(b);
        }
    }
    facts
}

/// The facts of an `f32` lane of bits `b`.
#[inline]
fn lane_facts(b: u32) -> Facts {
    let x = f32::from_bits(b);
    let same = |y: f32| y.to_bits() == b;
    let mut facts = QUANTIZED | LOADED | CANONICAL;
    if !same(f24::quantize_result(x)) {
        facts &= !QUANTIZED;
    }
    if !same(f24::load(x)) {
        facts &= !LOADED;
    }
    if !same(arith::canonicalize(x)) {
        facts &= !CANONICAL;
    }
    facts
}

/// Closes a fact set under the implications between the facts.
fn closed(facts: Facts) -> Facts {
    let mut f = facts;
    if f & QUANTIZED != 0 {
        f |= LOADED;
    }
    if f & LOADED != 0 {
        f |= CANONICAL;
    }
    f
}

const ADDR_REGS: [AddrReg; 3] = [AddrReg::A0X, AddrReg::A0Y, AddrReg::AL];

fn addr_index(reg: AddrReg) -> usize {
    match reg {
        AddrReg::A0X => 0,
        AddrReg::A0Y => 1,
        AddrReg::AL => 2,
    }
}

/// Forwarding, CSE and the removal of steps that do nothing (one walk), with
/// `temp_facts[n]` the facts every read of `r<n>` by an instruction
/// satisfies, and `kept_facts[n]` those of its earlier contents that a
/// partial write keeps (which may be the caller's bits, never read). Returns
/// the block, per temporary the facts every value an instruction of the
/// block writes to it satisfies (all facts where none does), and the
/// [`Steps`] of the block.
fn forward(
    block: &Block,
    temp_facts: &[Facts; 16],
    kept_facts: &[Facts; 16],
    scratch: &mut Scratch,
) -> (Block, [Facts; 16], Steps) {
    forward_with_last_writes(block, &last_writes(block), temp_facts, kept_facts, scratch)
}

/// Per register ([`reg_key`]), the index of the block's last node that
/// writes lanes of it (`u32::MAX`: none).
type LastWrites = [u32; 32];

/// The key of a written register: temporaries 0–15, outputs 16–31.
#[inline(always)]
fn reg_key(dst: DstReg) -> usize {
    match dst {
        DstReg::Temp(n) => n as usize & 15,
        DstReg::Output(n) => 16 + (n as usize & 15),
    }
}

/// The [`LastWrites`] of `block`, in a walk of its own (the F24 rounds take
/// them from [`temp_access`]'s walk instead).
fn last_writes(block: &Block) -> LastWrites {
    let mut last_write = [u32::MAX; 32];
    for (k, node) in block.nodes.iter().enumerate() {
        if let Op::Store { dst, mask, .. } = node.op
            && mask.0 & 0xF != 0
        {
            last_write[reg_key(dst)] = k as u32;
        }
    }
    last_write
}

/// [`forward`], with the block's [`LastWrites`] found already.
fn forward_with_last_writes(
    block: &Block,
    last_write: &LastWrites,
    temp_facts: &[Facts; 16],
    kept_facts: &[Facts; 16],
    scratch: &mut Scratch,
) -> (Block, [Facts; 16], Steps) {
    let mut stored = [QUANTIZED | LOADED | CANONICAL; 16];
    let mut out = Rebuild::new(block, std::mem::take(&mut scratch.facts));
    // (A local vector: behind the reference, its length went to memory at
    // every push.)
    let mut remap = std::mem::take(&mut scratch.remap);
    remap.clear();
    remap.reserve(block.nodes.len());
    let seen = &mut scratch.seen;
    seen.reset(block.nodes.len());
    let mut temps: [Option<Value>; 16] = [None; 16];
    let mut addrs: [Option<Value>; 3] = [None; 3];
    let mut flags: [Option<Value>; 2] = [None; 2];
    debug_assert_eq!(ADDR_REGS.map(addr_index), [0, 1, 2]);
    // Register writes are combined into one per register, at its last write:
    // the value written so far and the lanes it covers.
    let mut pending: [Option<(Value, u8)>; 32] = [None; 32];
    for span in &block.instrs {
        out.begin(span.pc);
        let span_nodes = &block.nodes[span.first as usize..span.end as usize];
        for (index, &node) in (span.first..).zip(span_nodes) {
            let op = map_operands(node.op, |v| remap[v.0 as usize]);
            // Reading some lanes of a blend reads only the blends that give
            // those lanes: a register written in part and then read where it
            // was written does not depend on its earlier contents (no read of
            // them, and no wait for the previous invocation's store).
            // (`strip` takes a `WriteMask`: lane x is bit 3.)
            let lane_mask = |lane: u8| 8 >> (lane & 3);
            let op = match op {
                Op::Swizzle(v, lanes) => {
                    let (v, lanes) = through_swizzles(&mut out, seen, v, lanes);
                    let need = lanes.iter().fold(0, |m, &l| m | lane_mask(l));
                    Op::Swizzle(strip(&mut out, seen, v, need), lanes)
                }
                Op::Extract(v, lane) => {
                    let (v, [lane, ..]) = through_swizzles(&mut out, seen, v, [lane; 4]);
                    Op::Extract(strip(&mut out, seen, v, lane_mask(lane)), lane)
                }
                op => op,
            };
            let value = match op {
                Op::ReadTemp(n) => *temps[n as usize & 15].get_or_insert_with(|| {
                    out.push(Node { op, ty: node.ty }, temp_facts[n as usize & 15])
                }),
                Op::ReadAddr(reg) => *addrs[addr_index(reg)]
                    .get_or_insert_with(|| out.push(Node { op, ty: node.ty }, 0)),
                Op::ReadFlag(f) => *flags[f as usize & 1]
                    .get_or_insert_with(|| out.push(Node { op, ty: node.ty }, 0)),
                Op::Store { dst, mask, value } => {
                    if let DstReg::Temp(n) = dst
                        && mask.0 & 0xF != 0
                    {
                        stored[n as usize & 15] &= out.facts(value);
                    }
                    let partial = mask.0 & 0xF != 0xF && mask.0 & 0xF != 0;
                    if let (DstReg::Temp(n), true) = (dst, partial) {
                        // The earlier contents, read before the write if
                        // unknown (the read goes away if nobody uses the
                        // blend below).
                        let slot = &mut temps[n as usize & 15];
                        if slot.is_none() {
                            let read = Node {
                                op: Op::ReadTemp(n),
                                ty: node_ty(&out, value),
                            };
                            *slot = Some(out.push(read, kept_facts[n as usize & 15]));
                        }
                    }
                    let m = mask.0 & 0xF;
                    let key = reg_key(dst);
                    // (A temporary's pending write is its whole contents,
                    // set below: the blend of an output's written lanes
                    // would be the very blend of its contents, made twice.)
                    if m != 0 && matches!(dst, DstReg::Output(_)) {
                        pending[key] = Some(match pending[key] {
                            Some((before, covered)) if m != 0xF => {
                                (blend(&mut out, seen, before, value, m), covered | m)
                            }
                            _ => (value, m),
                        });
                    }
                    if let DstReg::Temp(n) = dst {
                        let slot = &mut temps[n as usize & 15];
                        *slot = if mask.0 & 0xF == 0xF {
                            Some(value)
                        } else if mask.0 & 0xF == 0 {
                            *slot
                        } else {
                            slot.map(|before| blend(&mut out, seen, before, value, m))
                        };
                    }
                    if let (DstReg::Temp(n), true) = (dst, m != 0)
                        && let Some(contents) = temps[n as usize & 15]
                    {
                        // The whole register is known: write all of it.
                        pending[key] = Some((contents, 0xF));
                    }
                    match pending[key] {
                        Some((value, covered)) if last_write[key] == index => {
                            let combined = Op::Store {
                                dst,
                                mask: WriteMask(covered),
                                value,
                            };
                            out.push(
                                Node {
                                    op: combined,
                                    ty: None,
                                },
                                0,
                            )
                        }
                        // Written later in the block.
                        _ => Value(u32::MAX),
                    }
                }
                Op::WriteAddr(reg, v) => {
                    addrs[addr_index(reg)] = Some(v);
                    out.push(Node { op, ty: None }, 0)
                }
                Op::WriteFlag(f, v) => {
                    flags[f as usize & 1] = Some(v);
                    out.push(Node { op, ty: None }, 0)
                }
                Op::Blend { a, b, take_b } => blend(&mut out, seen, a, b, take_b.0),
                // A constant's facts are worked out only for its first node
                // (recipes make the same constants again and again).
                Op::Const { ty, bits } => intern_with(&mut out, seen, op, node.ty, || {
                    constant_facts(ty.elem, ty.lanes, bits)
                }),
                _ => match simplify(&out, op) {
                    Simplified::To(v) => v,
                    Simplified::Keep(facts) => {
                        debug_assert!(is_pure(&op));
                        intern(&mut out, seen, op, node.ty, facts)
                    }
                },
            };
            remap.push(value);
        }
        out.end();
    }
    let exit = map_exit(block.exit, |v| remap[v.0 as usize]);
    scratch.remap = remap;
    let steps = out.steps;
    let (rebuilt, facts) = out.finish(block, exit);
    scratch.facts = facts;
    (rebuilt, stored, steps)
}

/// [`forward`] on every block, with the facts each temporary holds at every
/// read of every invocation (F24; none in F32).
///
/// A temporary holds, at any point of an invocation, either its value after
/// the entry conversion (`f24_load`, for the temporaries the program may
/// read before writing them: the prologue's stores) or a value some
/// instruction wrote in this invocation. So an assignment of facts to the
/// temporaries holds at every read if every entry-converted temporary's
/// facts are those of a loaded value, and every value any instruction writes
/// (each instruction's own write, not only a block's combined one: an
/// invocation can stop, and the interpreter resume, in mid-block) satisfies
/// its temporary's facts when the reads satisfy theirs (induction over the
/// instructions executed). A temporary that is not entry-converted is
/// written whole before any instruction reads it (`Program::
/// temps_converted_on_entry` counts reads of any component), but a partial
/// write keeps the caller's bits in the other components: the earlier
/// contents a partial write blends with have no facts then. Starting from
/// every fact, the assignment is narrowed to what the writes satisfy until
/// it is such a fixed point; after a few rounds without one, no fact is
/// assumed.
///
/// The narrowing runs first on facts alone ([`estimated_writes`], lane by
/// lane, never fewer facts than `forward` derives), whose greatest fixed
/// point lies at or above `forward`'s: the rounds of `forward` start there,
/// and the first one usually confirms it. Only that check decides what is
/// assumed, so the estimate changes how long compiling takes, never what
/// is sound.
fn forward_with_temp_facts(ir: &Ir, scratch: &mut Scratch) -> (Vec<Block>, Vec<Steps>) {
    let none = [0; 16];
    let mut converted = 0u16;
    for node in &ir.prologue.nodes {
        if let Op::Store {
            dst: DstReg::Temp(n),
            ..
        } = node.op
        {
            converted |= 1 << (n & 15);
        }
    }
    // Every block rewritten once with the same facts.
    let each_once = |facts: &[Facts; 16], scratch: &mut Scratch| {
        let mut blocks = Vec::with_capacity(ir.blocks.len());
        let mut steps = Vec::with_capacity(ir.blocks.len());
        for block in &ir.blocks {
            let (block, _, block_steps) = forward(block, facts, &none, scratch);
            blocks.push(block);
            steps.push(block_steps);
        }
        (blocks, steps)
    };
    if ir.precision != crate::arith::Precision::F24 {
        return each_once(&none, scratch);
    }
    let top: [Facts; 16] = std::array::from_fn(|n| {
        if converted >> n & 1 != 0 {
            LOADED | CANONICAL
        } else {
            QUANTIZED | LOADED | CANONICAL
        }
    });
    // The rounds of `forward` start from the fixed point of a cheap
    // estimate of what they derive (lane by lane, so it keeps at least the
    // facts they keep): usually the first round confirms it.
    // A block's rewrite depends only on the facts of the temporaries it
    // reads (or, entry-converted ones, writes in part) before writing them
    // whole ([`TempAccess::read`]): a round reuses
    // the previous round's rewrite of every block whose such temporaries
    // kept their facts.
    let accesses: Vec<TempAccess> = ir
        .blocks
        .iter()
        .map(|block| temp_access(block, converted))
        .collect();
    if accesses.iter().all(|a| a.read == 0) {
        // No block asks for a temporary's facts: every assignment gives the
        // same rewrite, so the first round would be the last.
        return each_once(&top, scratch);
    }
    let mut assumed = estimated_temp_facts(ir, &accesses, converted, top, scratch);
    // Per block, its rewrite, what it writes and its steps, from the
    // facts `done_with` (none before the first round).
    let mut blocks: Vec<Block> = Vec::with_capacity(ir.blocks.len());
    let mut written: Vec<[Facts; 16]> = Vec::with_capacity(ir.blocks.len());
    let mut steps: Vec<Steps> = Vec::with_capacity(ir.blocks.len());
    let mut done_with: [Facts; 16] = [0; 16];
    let mut all_blocks = |facts: &[Facts; 16]| -> [Facts; 16] {
        let kept = std::array::from_fn(|n| if converted >> n & 1 != 0 { facts[n] } else { 0 });
        let changed = (0..16).fold(0u16, |m, n| m | u16::from(facts[n] != done_with[n]) << n);
        let mut stored = [QUANTIZED | LOADED | CANONICAL; 16];
        for (k, (block, access)) in ir.blocks.iter().zip(&accesses).enumerate() {
            if k == blocks.len() {
                let (rewritten, w, s) =
                    forward_with_last_writes(block, &access.last_write, facts, &kept, scratch);
                blocks.push(rewritten);
                written.push(w);
                steps.push(s);
            } else if access.read & changed != 0 {
                let (rewritten, w, s) =
                    forward_with_last_writes(block, &access.last_write, facts, &kept, scratch);
                super::spare::keep_block(std::mem::replace(&mut blocks[k], rewritten));
                (written[k], steps[k]) = (w, s);
            }
            for (s, w) in stored.iter_mut().zip(written[k]) {
                *s &= w;
            }
        }
        done_with = *facts;
        stored
    };
    let mut fixed = false;
    for _ in 0..4 {
        let stored = all_blocks(&assumed);
        let narrowed = std::array::from_fn(|n| assumed[n] & stored[n]);
        if narrowed == assumed {
            fixed = true;
            break;
        }
        assumed = narrowed;
    }
    if !fixed {
        all_blocks(&none);
    }
    // Every block was rewritten in the first round.
    (blocks, steps)
}

/// The facts of each temporary at every read, as the greatest assignment
/// below `top` that [`estimated_writes`] of every block satisfies. An
/// estimate: [`forward_with_temp_facts`] checks it (and narrows it further
/// if [`forward`] derives less).
fn estimated_temp_facts(
    ir: &Ir,
    accesses: &[TempAccess],
    converted: u16,
    top: [Facts; 16],
    scratch: &mut Scratch,
) -> [Facts; 16] {
    // The sweeps below compare and narrow all sixteen temporaries' facts
    // for every block: as one word (a nibble per temporary) that is one
    // operation instead of sixteen.
    let mut assumed = TempFacts::pack(&top);
    let converted = TempFacts::nibbles(converted);
    // Per block, what it writes, estimated from the facts it was last
    // estimated with (again where a temporary it reads has lost facts
    // since); each block narrows the facts at once for the blocks after it.
    let mut written: Vec<Option<(TempFacts, TempFacts)>> = vec![None; ir.blocks.len()];
    // The blocks that read no temporary first: what they write depends on
    // no assumption, so they narrow the facts once for all before any block
    // that reads is estimated (in address order, a loop's body read what a
    // later block writes, and was estimated again, whole, in the next
    // sweep). The greatest fixed point is the same in any order.
    for ((block, access), slot) in ir.blocks.iter().zip(accesses).zip(&mut written) {
        if access.read == 0 {
            let kept = TempFacts(assumed.0 & converted);
            let nodes = &block.nodes[..access.through_last_temp_write];
            let w = estimated_writes(nodes, assumed, kept, &mut scratch.lanes);
            *slot = Some((assumed, w));
            assumed.0 &= w.0;
        }
    }
    // Each sweep that changes something drops at least one fact of one
    // temporary.
    for _ in 0..=16 * 3 + 1 {
        let mut changed = false;
        for ((block, access), slot) in ir.blocks.iter().zip(accesses).zip(&mut written) {
            let w = match *slot {
                Some((with, w)) if (with.0 ^ assumed.0) & TempFacts::nibbles(access.read) == 0 => w,
                _ => {
                    let kept = TempFacts(assumed.0 & converted);
                    let nodes = &block.nodes[..access.through_last_temp_write];
                    let w = estimated_writes(nodes, assumed, kept, &mut scratch.lanes);
                    *slot = Some((assumed, w));
                    w
                }
            };
            changed |= assumed.0 & w.0 != assumed.0;
            assumed.0 &= w.0;
        }
        if !changed {
            break;
        }
    }
    assumed.unpack()
}

/// The facts of the sixteen temporaries in one word: those of `r<n>` in
/// bits `4n..4n + 3`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct TempFacts(u64);

impl TempFacts {
    fn pack(facts: &[Facts; 16]) -> TempFacts {
        TempFacts(
            facts
                .iter()
                .enumerate()
                .fold(0, |word, (n, &f)| word | u64::from(f & 0xF) << (4 * n)),
        )
    }

    fn unpack(self) -> [Facts; 16] {
        std::array::from_fn(|n| self.get(n))
    }

    /// The facts of `r<n>`.
    fn get(self, n: usize) -> Facts {
        (self.0 >> (4 * n) & 0xF) as Facts
    }

    /// Keeps of `r<n>`'s facts only those in `facts`.
    fn narrow(&mut self, n: usize, facts: Facts) {
        self.0 &= !(0xF << (4 * n)) | u64::from(facts & 0xF) << (4 * n);
    }

    /// The nibbles of the temporaries whose bit is set in `temps`, all ones.
    fn nibbles(temps: u16) -> u64 {
        // Bit n moves to bit 4n, then fills its nibble.
        let mut x = u64::from(temps);
        x = (x | x << 24) & 0x0000_00FF_0000_00FF;
        x = (x | x << 12) & 0x000F_000F_000F_000F;
        x = (x | x << 6) & 0x0303_0303_0303_0303;
        x = (x | x << 3) & 0x1111_1111_1111_1111;
        x * 0xF
    }
}

/// Per temporary, the facts every value the nodes of a block (`nodes`, its
/// first ones) write to it satisfies (all facts where none does), derived
/// lane by lane from `temp_facts` and
/// `kept_facts` (as in [`forward`]) without rewriting the block. Keeps at
/// least the facts [`forward`] derives: where forwarding drops a step, the
/// lane's facts are the operand's, which include the step's.
fn estimated_writes(
    nodes: &[Node],
    temp_facts: TempFacts,
    kept_facts: TempFacts,
    lanes: &mut Vec<[Facts; 4]>,
) -> TempFacts {
    const ALL: Facts = QUANTIZED | LOADED | CANONICAL;
    let mut stored = TempFacts::pack(&[ALL; 16]);
    let mut temps: [Option<[Facts; 4]>; 16] = [None; 16];
    lanes.clear();
    for node in nodes {
        let of = |v: Value| lanes[v.0 as usize];
        let facts: [Facts; 4] = match node.op {
            Op::Const { ty, .. } if ty.elem != Elem::F32 => [0; 4],
            // (A scalar, or a broadcast, is one lane's facts four times.)
            Op::Const { ty, bits } if ty.lanes == 1 || bits.iter().all(|&b| b == bits[0]) => {
                [lane_facts(bits[0]); 4]
            }
            Op::Const { bits, .. } => bits.map(lane_facts),
            Op::ReadTemp(n) => {
                *temps[n as usize & 15].get_or_insert([temp_facts.get(n as usize & 15); 4])
            }
            Op::Store { dst, mask, value } => {
                let m = mask.0 & 0xF;
                if let (DstReg::Temp(n), true) = (dst, m != 0) {
                    let n = n as usize & 15;
                    let v = of(value);
                    stored.narrow(n, v.iter().fold(ALL, |all, &x| all & x));
                    let before = temps[n].unwrap_or([kept_facts.get(n); 4]);
                    temps[n] = Some(std::array::from_fn(|i| {
                        if m & (8 >> i) != 0 { v[i] } else { before[i] }
                    }));
                }
                [0; 4]
            }
            Op::Swizzle(v, sel) => sel.map(|l| of(v)[l as usize & 3]),
            Op::Extract(v, l) => [of(v)[l as usize & 3]; 4],
            Op::Splat(v) => [of(v)[0]; 4],
            Op::Blend { a, b, take_b } => std::array::from_fn(|i| {
                if take_b.0 & (8 >> i) != 0 {
                    of(b)[i]
                } else {
                    of(a)[i]
                }
            }),
            Op::Select { a, b, .. } | Op::Binary(BinOp::PicaMax | BinOp::PicaMin, a, b) => {
                std::array::from_fn(|i| of(a)[i] & of(b)[i])
            }
            Op::Unary(UnOp::F24Load, v) => {
                of(v).map(|x| if x & LOADED != 0 { x } else { closed(LOADED) })
            }
            Op::Unary(UnOp::F24Flush, v) => {
                of(v).map(|x| if x & QUANTIZED != 0 { x } else { x & CANONICAL })
            }
            Op::Unary(UnOp::F24Quantize, _) | Op::Binary(BinOp::PicaMulF24, _, _) => {
                [closed(QUANTIZED); 4]
            }
            Op::Unary(UnOp::Canonicalize, v) => {
                // The F24 negation `canonicalize(0 - q)` of a grid value.
                let negation = match nodes[v.0 as usize].op {
                    Op::Binary(BinOp::FSub, zero, q) => {
                        matches!(nodes[zero.0 as usize].op, Op::Const { ty, bits }
                            if ty.elem == Elem::F32 && bits[..ty.lanes as usize].iter().all(|&b| b == 0))
                            && of(q).iter().all(|&x| x & QUANTIZED != 0)
                    }
                    _ => false,
                };
                let made = closed(if negation { QUANTIZED } else { CANONICAL });
                of(v).map(|x| if x & CANONICAL != 0 { x } else { made })
            }
            Op::Binary(BinOp::PicaMul, _, _) => [CANONICAL; 4],
            _ => [0; 4],
        };
        lanes.push(facts);
    }
    stored
}

/// What a block does with the temporaries, found in one walk over its
/// nodes ([`temp_access`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct TempAccess {
    /// The temporaries (a bit each) whose earlier contents the block reads,
    /// or keeps lanes of in a partial write, before it writes them whole:
    /// those whose facts [`forward`] asks for. A partial write asks only for
    /// the kept facts, which are none (whatever is assumed) unless the
    /// temporary is one of the entry-converted ones: it asks for no facts of
    /// another (a block that writes `r0.xyz` and then `r0.w` depends on no
    /// assumption about `r0`).
    read: u16,
    /// The nodes up to its last write of a temporary (0: it writes none):
    /// the nodes after it change nothing [`estimated_writes`] finds, which
    /// walks only these (a third of fp-tests' nodes are after them, most
    /// of them output writes).
    through_last_temp_write: usize,
    /// The block's [`LastWrites`] (found in the same walk, for [`forward`]).
    last_write: LastWrites,
}

/// The [`TempAccess`] of `block`, where `converted` are the entry-converted
/// temporaries (a bit each).
fn temp_access(block: &Block, converted: u16) -> TempAccess {
    let (mut known, mut read, mut through) = (0u16, 0u16, 0);
    let mut last_write = [u32::MAX; 32];
    for (k, node) in block.nodes.iter().enumerate() {
        let (n, whole) = match node.op {
            Op::ReadTemp(n) => (n, false),
            Op::Store { dst, mask, .. } if mask.0 & 0xF != 0 => {
                last_write[reg_key(dst)] = k as u32;
                let DstReg::Temp(n) = dst else {
                    continue;
                };
                through = k + 1;
                (n, mask.0 & 0xF == 0xF)
            }
            _ => continue,
        };
        let bit = 1u16 << (n & 15);
        let asks = matches!(node.op, Op::ReadTemp(_)) || converted & bit != 0;
        if known & bit == 0 && !whole && asks {
            read |= bit;
        }
        known |= bit;
    }
    TempAccess {
        read,
        through_last_temp_write: through,
        last_write,
    }
}

/// A pure node, shared with an equal earlier one.
#[inline(always)]
fn intern(
    out: &mut Rebuild,
    seen: &mut OpTable,
    op: Op,
    ty: Option<super::Ty>,
    facts: Facts,
) -> Value {
    intern_with(out, seen, op, ty, || facts)
}

/// [`intern`], with the facts of a new node from `facts` (not called when
/// an equal node exists).
#[inline(always)]
fn intern_with(
    out: &mut Rebuild,
    seen: &mut OpTable,
    op: Op,
    ty: Option<super::Ty>,
    facts: impl FnOnce() -> Facts,
) -> Value {
    let hash = OpTable::hash(&op);
    match seen.find(&out.nodes, &op, hash) {
        Ok(v) => v,
        Err(slot) => {
            let facts = facts();
            // (Every `canonicalize` and `f24_quantize` is interned.)
            out.steps |= step_of(&out.nodes, &op);
            let v = out.push(Node { op, ty }, closed(facts));
            seen.insert_at(slot, hash, v);
            v
        }
    }
}

/// `a` with the lanes in `take_b` (a [`WriteMask`]) replaced by `b`'s:
/// * lanes of an inner blend that the result does not use are dropped (so a
///   register written lane by lane is one blend chain of the values written,
///   without its earlier contents);
/// * a blend of canonicalised values is the canonicalisation of a blend
///   (canonicalisation is lane-wise), so the lanes written by several
///   instructions are canonicalised once (the inner canonicalisations go
///   away when nothing else uses them).
fn blend(out: &mut Rebuild, seen: &mut OpTable, a: Value, b: Value, take_b: u8) -> Value {
    let m = take_b & 0xF;
    if m == 0 {
        return a;
    }
    if m == 0xF {
        return b;
    }
    let a = strip(out, seen, a, !m & 0xF);
    let canonical_source = |v: Value| match out.op(v) {
        Op::Unary(UnOp::Canonicalize, x) => Some((x, true)),
        _ if out.facts(v) & CANONICAL != 0 => Some((v, false)),
        _ => None,
    };
    let ty = node_ty(out, a);
    if let (Some((xa, na)), Some((xb, nb))) = (canonical_source(a), canonical_source(b))
        && (na || nb)
    {
        let inner = blend(out, seen, xa, xb, m);
        if out.facts(inner) & CANONICAL != 0 {
            return inner;
        }
        return intern(
            out,
            seen,
            Op::Unary(UnOp::Canonicalize, inner),
            ty,
            CANONICAL,
        );
    }
    let op = Op::Blend {
        a,
        b,
        take_b: WriteMask(m),
    };
    let facts = out.facts(a) & out.facts(b);
    intern(out, seen, op, ty, facts)
}

/// A value equal to `v` on the lanes `need` (a [`WriteMask`]), without the
/// blends that contribute no needed lane.
#[inline(always)]
fn strip(out: &mut Rebuild, seen: &mut OpTable, v: Value, need: u8) -> Value {
    // Asked of every swizzle and extract: most read no blend.
    match out.op(v) {
        Op::Blend { .. } => strip_blend(out, seen, v, need),
        _ => v,
    }
}

/// The lanes `lanes` of `v` read from the value `v` moves lanes of: a swizzle
/// of a swizzle is one swizzle, and an extract of a swizzle one extract (the
/// inner swizzle goes away when nothing else uses it, and the two
/// comparisons of a `cmp` whose operands are broadcasts become one by CSE).
/// Blends that give no needed lane are stripped first, so a swizzle under
/// them is found too.
#[inline(always)]
fn through_swizzles(
    out: &mut Rebuild,
    seen: &mut OpTable,
    v: Value,
    lanes: [u8; 4],
) -> (Value, [u8; 4]) {
    let need = lanes.iter().fold(0, |m, &l| m | 8 >> (l & 3));
    let v = strip(out, seen, v, need);
    match out.op(v) {
        Op::Swizzle(inner, outer) => (inner, lanes.map(|l| outer[l as usize & 3])),
        _ => (v, lanes),
    }
}

/// [`strip`] of a blend.
fn strip_blend(out: &mut Rebuild, seen: &mut OpTable, v: Value, need: u8) -> Value {
    let Op::Blend { a, b, take_b } = out.op(v) else {
        return v;
    };
    let m = take_b.0 & 0xF;
    let (need_a, need_b) = (need & !m & 0xF, need & m);
    if need_a == 0 {
        strip(out, seen, b, need_b)
    } else if need_b == 0 {
        strip(out, seen, a, need_a)
    } else {
        let stripped = strip(out, seen, a, need_a);
        if stripped == a {
            v
        } else {
            blend(out, seen, stripped, b, m)
        }
    }
}

fn node_ty(out: &Rebuild, v: Value) -> Option<super::Ty> {
    out.nodes[v.0 as usize].ty
}

enum Simplified {
    /// The node computes this existing value.
    To(Value),
    /// The node stays; the facts its value satisfies.
    Keep(Facts),
}

/// Drops a float24 or NaN step whose operand is already a fixed point of it,
/// and otherwise derives the facts of the node's value.
fn simplify(out: &Rebuild, op: Op) -> Simplified {
    use Simplified::{Keep, To};
    let f = |v: Value| out.facts(v);
    match op {
        Op::Const { ty, bits } => Keep(constant_facts(ty.elem, ty.lanes, bits)),
        Op::Unary(UnOp::F24Load, v) if f(v) & LOADED != 0 => To(v),
        Op::Unary(UnOp::F24Load, _) => Keep(LOADED),
        Op::Unary(UnOp::F24Flush, v) if f(v) & QUANTIZED != 0 => To(v),
        // Flushing keeps every bit of a value it does not replace by +0.
        Op::Unary(UnOp::F24Flush, v) => Keep(f(v) & CANONICAL),
        Op::Unary(UnOp::F24Quantize, v) if f(v) & QUANTIZED != 0 => To(v),
        Op::Unary(UnOp::F24Quantize, _) => Keep(QUANTIZED),
        Op::Unary(UnOp::Canonicalize, v) if f(v) & CANONICAL != 0 => To(v),
        Op::Unary(UnOp::Canonicalize, v) => {
            // The F24 negation: `0 - q` of a grid value is exact (the grid is
            // symmetric, `0 - +0 = +0`), and canonicalisation fixes a NaN.
            match out.op(v) {
                Op::Binary(BinOp::FSub, zero, q)
                    if f(q) & QUANTIZED != 0 && is_positive_zero(out, zero) =>
                {
                    Keep(QUANTIZED)
                }
                _ => Keep(CANONICAL),
            }
        }
        // `mul_rule` gives the canonical NaN for a NaN operand, +0 for inf * 0,
        // and the product of two other values is never NaN.
        Op::Binary(BinOp::PicaMul, _, _) => Keep(CANONICAL),
        Op::Binary(BinOp::PicaMulF24, _, _) => Keep(QUANTIZED),
        // Lane movement that moves nothing: an identity swizzle (of a
        // swizzle that another one undoes), any lanes of a broadcast.
        Op::Swizzle(v, [0, 1, 2, 3]) => To(v),
        Op::Swizzle(v, _) if matches!(out.op(v), Op::Splat(_)) => To(v),
        Op::Extract(v, _) => match out.op(v) {
            Op::Splat(s) => To(s),
            _ => Keep(f(v)),
        },
        Op::Swizzle(v, _) | Op::Splat(v) => Keep(f(v)),
        Op::Blend { a, b, .. }
        | Op::Select { a, b, .. }
        | Op::Binary(BinOp::PicaMax | BinOp::PicaMin, a, b) => Keep(f(a) & f(b)),
        _ => Keep(0),
    }
}

fn is_positive_zero(out: &Rebuild, v: Value) -> bool {
    match out.op(v) {
        Op::Const { ty, bits } => {
            ty.elem == Elem::F32 && bits[..ty.lanes as usize].iter().all(|&b| b == 0)
        }
        _ => false,
    }
}

/// How a node treats the NaN payload of an operand.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Payload {
    /// The result does not depend on it (it never reaches an observer).
    Ignored,
    /// A NaN lane stays a NaN lane (payload possibly different), other lanes
    /// are unaffected: the payload matters only if it matters for the result.
    Passed,
    /// Observable (a store, a bit cast).
    Observed,
}

fn payload_use(op: &Op) -> Payload {
    match op {
        // Canonicalisation, the multiply rule, quantisation and loading give
        // the canonical NaN for any NaN; comparisons and `to_i32` see only
        // "NaN"; a kept `canonicalize` ignores it, a dropped one passes it on
        // to uses that ignore it.
        Op::Unary(UnOp::Canonicalize | UnOp::F24Quantize | UnOp::F24Load | UnOp::ToI32, _)
        | Op::Binary(BinOp::PicaMul | BinOp::PicaMulF24, _, _)
        | Op::FCmp(..) => Payload::Ignored,
        // NaN in gives NaN out (IEEE arithmetic), or the operand's bits
        // (lane movement, selects, PICA min/max, which pick one operand).
        Op::Unary(UnOp::F24Flush | UnOp::Floor | UnOp::Sqrt | UnOp::FlipSign, _)
        | Op::Binary(
            BinOp::FAdd | BinOp::FSub | BinOp::FMul | BinOp::FDiv | BinOp::PicaMax | BinOp::PicaMin,
            _,
            _,
        )
        | Op::Swizzle(..)
        | Op::Extract(..)
        | Op::Splat(_)
        | Op::Blend { .. } => Payload::Passed,
        // A select passes its chosen operands on (its condition is a bool).
        Op::Select { .. } => Payload::Passed,
        _ => Payload::Observed,
    }
}

/// Drops each `canonicalize` whose result's NaN payload nobody observes: every
/// use ignores it, or passes it on to uses that ignore it (a dot product's
/// partial sums in F32 are canonicalised once, at the end).
#[inline(never)]
fn nan_payloads(block: &mut Block, scratch: &mut Scratch) {
    // (Most F24 blocks canonicalise nothing, their float24 steps give
    // canonical NaNs: `optimize` runs this only where `forward` made a
    // `canonicalize`.)
    let n = block.nodes.len();
    // observed[k]: the NaN payload of node k's value may reach an observer.
    // Users come after their operands, so a reverse walk sees every user of
    // a node before the node.
    let observed = &mut scratch.flags;
    observed.clear();
    observed.resize(n, false);
    for v in exit_operands(&block.exit) {
        observed[v.0 as usize] = true;
    }
    // The first `canonicalize` dropped: when the walk reaches a node, all
    // its users were seen, so whether it is observed is settled.
    let mut first_dropped = None;
    for u in (0..n).rev() {
        let op = &block.nodes[u].op;
        let passes = match payload_use(op) {
            Payload::Ignored => false,
            Payload::Passed => observed[u],
            Payload::Observed => true,
        };
        if passes {
            for_each_operand(op, |v| observed[v.0 as usize] = true);
        }
        if matches!(op, Op::Unary(UnOp::Canonicalize, _)) && !observed[u] {
            first_dropped = Some(u);
        }
    }
    let Some(first_dropped) = first_dropped else {
        return;
    };
    // The nodes before it keep their operands.
    let remap = &mut scratch.remap;
    remap.clear();
    remap.extend((0..n as u32).map(Value));
    for k in first_dropped..n {
        remap_operands(&mut block.nodes[k].op, remap);
        if let Op::Unary(UnOp::Canonicalize, v) = block.nodes[k].op
            && !observed[k]
        {
            remap[k] = v;
        }
    }
    block.exit = map_exit(block.exit, |v| remap[v.0 as usize]);
}

/// Makes each `f24_quantize` of a `pica_mul` that nothing else uses one
/// [`BinOp::PicaMulF24`] (the multiply is then unused and goes away).
#[inline(never)]
fn fuse_f24_products(block: &mut Block, scratch: &mut Scratch) {
    // Uses are counted only where a product is quantised (never in F32).
    let quantized_product = |node: &Node| match node.op {
        Op::Unary(UnOp::F24Quantize, p) => {
            matches!(block.nodes[p.0 as usize].op, Op::Binary(BinOp::PicaMul, ..))
        }
        _ => false,
    };
    let Some(first) = block.nodes.iter().position(quantized_product) else {
        return;
    };
    let uses = &mut scratch.uses;
    uses.clear();
    uses.resize(block.nodes.len(), 0);
    for v in exit_operands(&block.exit) {
        uses[v.0 as usize] += 1;
    }
    for node in &block.nodes {
        for v in operands(&node.op) {
            uses[v.0 as usize] += 1;
        }
    }
    for k in first..block.nodes.len() {
        if let Op::Unary(UnOp::F24Quantize, p) = block.nodes[k].op
            && uses[p.0 as usize] == 1
            && let Op::Binary(BinOp::PicaMul, a, b) = block.nodes[p.0 as usize].op
        {
            block.nodes[k].op = Op::Binary(BinOp::PicaMulF24, a, b);
        }
    }
}

/// Removes pure nodes whose value nobody uses (writes and exit values are
/// used), in place: a kept node only moves towards the block's start.
// (Not inlined into `optimize`: on its own registers the walks keep
// their bounds and buffers in registers.)
#[inline(never)]
fn dead_code(block: &mut Block, scratch: &mut Scratch) {
    let n = block.nodes.len();
    let live = &mut scratch.flags;
    live.clear();
    live.resize(n, false);
    let live = &mut live[..n];
    for v in exit_operands(&block.exit) {
        live[v.0 as usize] = true;
    }
    // Users come after their operands: walking back, a node's liveness is
    // settled when the walk reaches it (and the first dead node is found
    // in the same walk).
    let nodes = &block.nodes[..n];
    let mut first_dead = n;
    for k in (0..n).rev() {
        let node = &nodes[k];
        if node.ty.is_none() || live[k] {
            live[k] = true;
            for_each_operand(&node.op, |v| live[v.0 as usize] = true);
        } else {
            first_dead = k;
        }
    }
    if first_dead == n {
        return;
    }
    // The nodes before the first dead one stay where they are, unchanged,
    // and keep their numbers: `remap` holds the new numbers of the nodes
    // from `first_dead` on only.
    let remap = &mut scratch.remap;
    remap.clear();
    remap.resize(n - first_dead, Value(u32::MAX));
    let remap = &mut remap[..n - first_dead];
    let from = first_dead as u32;
    let mut kept = first_dead;
    for span in &mut block.instrs {
        if span.end as usize <= first_dead {
            continue;
        }
        let first = span.first.min(kept as u32);
        for index in span.first.max(from)..span.end {
            if live[index as usize] {
                block
                    .nodes
                    .copy_within(index as usize..index as usize + 1, kept);
                remap_operands_by(&mut block.nodes[kept].op, |v| {
                    if v.0 < from {
                        v
                    } else {
                        remap[(v.0 - from) as usize]
                    }
                });
                remap[(index - from) as usize] = Value(kept as u32);
                kept += 1;
            }
        }
        span.first = first;
        span.end = kept as u32;
    }
    block.nodes.truncate(kept);
    block.exit = map_exit(block.exit, |v| {
        if v.0 < from {
            v
        } else {
            remap[(v.0 - from) as usize]
        }
    });
}

/// Calls `f` on each operand of `op`, in order (as [`operand_array`],
/// without building the array).
#[inline(always)]
fn for_each_operand(op: &Op, mut f: impl FnMut(Value)) {
    let mut visit = |v: &Value| f(*v);
    visit_operands!(op, visit);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A spread of bit patterns: every exponent with edge mantissas, both signs,
    /// plus pseudo-random words.
    fn patterns() -> Vec<u32> {
        let mut out = Vec::new();
        for exp in 0..256u32 {
            for mant in [0, 1, 0x7F, 0x80, 0x81, 0x40_0000, 0x7F_FF80, 0x7F_FFFF] {
                for sign in [0, 0x8000_0000] {
                    out.push(sign | exp << 23 | mant);
                }
            }
        }
        let mut x = 0x1234_5678u32;
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            out.push(x);
        }
        out
    }

    #[test]
    fn cse_table_finds_every_node_it_recorded_after_growing() {
        // Sized for one node, then given a few hundred distinct operations
        // (so it grows several times), each recorded once and asked for
        // again; hashes collide in the low bits often enough at 16 slots.
        let mut table = OpTable::default();
        table.reset(1);
        let mut nodes: Vec<Node> = Vec::new();
        let op = |k: u32| Op::Const {
            ty: super::super::Ty::F32X4,
            bits: [k, 0, k >> 3, 7],
        };
        for k in 0..300u32 {
            let (op, hash) = (op(k), OpTable::hash(&op(k)));
            let slot = table.find(&nodes, &op, hash).expect_err("not recorded yet");
            nodes.push(Node {
                op,
                ty: Some(super::super::Ty::F32X4),
            });
            table.insert_at(slot, hash, Value(k));
            assert!(2 * table.len <= table.slots.len());
        }
        for k in 0..300u32 {
            assert_eq!(
                table.find(&nodes, &op(k), OpTable::hash(&op(k))),
                Ok(Value(k))
            );
        }
        assert!(
            table
                .find(&nodes, &op(300), OpTable::hash(&op(300)))
                .is_err()
        );
        // A reset forgets everything.
        table.reset(4);
        assert!(table.find(&nodes, &op(0), OpTable::hash(&op(0))).is_err());
    }

    /// `dead_code` drops an unused pure node and the nodes only it used
    /// (found in one walk back), moves the kept nodes after the first dead
    /// one down, renumbering their operands (those before it keep their
    /// numbers) and the exit's, and shrinks the instruction spans.
    #[test]
    fn dead_code_drops_unused_chains_and_renumbers_what_follows() {
        use crate::ir::Ty;
        let node = |op: Op, ty: Option<Ty>| Node { op, ty };
        let store = |n: u8, v: u32| {
            node(
                Op::Store {
                    dst: DstReg::Output(n),
                    mask: WriteMask::ALL,
                    value: Value(v),
                },
                None,
            )
        };
        let v = Value;
        let f = Some(Ty::F32X4);
        let span = |pc: u32, first: u32, end: u32| InstrSpan { pc, first, end };
        let mut block = Block {
            start: 0,
            last: 2,
            nodes: vec![
                node(Op::ReadInput(0), f),
                // Used only by the dead flush below: dead too.
                node(Op::ReadInput(1), f),
                node(Op::Unary(UnOp::F24Flush, v(1)), f),
                node(Op::Binary(BinOp::FAdd, v(0), v(0)), f),
                store(0, 3),
                // Used by the exit only.
                node(Op::ReadBoolUniform(2), Some(Ty::BOOL)),
                node(Op::Binary(BinOp::FMul, v(3), v(0)), f),
                store(1, 6),
            ],
            instrs: vec![span(0, 0, 3), span(1, 3, 5), span(2, 5, 8)],
            exit: Exit::If {
                taken: v(5),
                target: 7,
                next: 3,
            },
            stack_check: false,
        };
        dead_code(&mut block, &mut Scratch::default());
        assert_eq!(
            block.nodes,
            vec![
                node(Op::ReadInput(0), f),
                node(Op::Binary(BinOp::FAdd, v(0), v(0)), f),
                store(0, 1),
                node(Op::ReadBoolUniform(2), Some(Ty::BOOL)),
                node(Op::Binary(BinOp::FMul, v(1), v(0)), f),
                store(1, 4),
            ]
        );
        assert_eq!(
            block.instrs,
            vec![span(0, 0, 1), span(1, 1, 3), span(2, 3, 6)]
        );
        assert_eq!(
            block.exit,
            Exit::If {
                taken: v(3),
                target: 7,
                next: 3,
            }
        );
        // Nothing dead: nothing moves.
        let before = block.clone();
        dead_code(&mut block, &mut Scratch::default());
        assert_eq!(block, before);
    }

    #[test]
    fn operands_lists_what_map_operands_visits_in_its_order() {
        let (a, b, c) = (Value(7), Value(3), Value(5));
        let ty = super::super::Ty {
            elem: Elem::F32,
            lanes: 4,
        };
        let every_kind = [
            Op::Const { ty, bits: [1; 4] },
            Op::ReadInput(1),
            Op::ReadTemp(2),
            Op::ReadConst(3),
            Op::ReadConstAt(a),
            Op::ReadAddr(AddrReg::AL),
            Op::ReadFlag(1),
            Op::ReadBoolUniform(4),
            Op::ReadIntUniform { id: 1, field: 2 },
            Op::Store {
                dst: DstReg::Temp(3),
                mask: WriteMask(0b1010),
                value: a,
            },
            Op::WriteAddr(AddrReg::A0Y, a),
            Op::WriteFlag(0, a),
            Op::Swizzle(a, [3, 2, 1, 0]),
            Op::Extract(a, 2),
            Op::Splat(a),
            Op::Blend {
                a,
                b,
                take_b: WriteMask(0b0110),
            },
            Op::Select { cond: c, a, b },
            Op::Unary(UnOp::Floor, a),
            Op::Binary(BinOp::FSub, b, a),
            Op::FCmp(crate::isa::CmpOp::Lt, a, c),
            Op::ICmp(crate::isa::CmpOp::Eq, c, b),
        ];
        for op in every_kind {
            let mut visited = Vec::new();
            let _ = map_operands(op, |v| {
                visited.push(v);
                v
            });
            assert_eq!(operands(&op).collect::<Vec<_>>(), visited, "{op:?}");
            let mut each = Vec::new();
            for_each_operand(&op, |v| each.push(v));
            assert_eq!(each, visited, "{op:?}");
            // Renumbering in place renumbers the same operands the same way
            // (each value to a different one, so a missed or swapped
            // operand shows).
            let remap: Vec<Value> = (0..8).map(|k| Value(100 + k)).collect();
            let mut in_place = op;
            remap_operands(&mut in_place, &remap);
            assert_eq!(
                in_place,
                map_operands(op, |v| remap[v.0 as usize]),
                "{op:?}"
            );
        }
        assert_eq!(
            operands(&Op::Select { cond: c, a, b }).collect::<Vec<_>>(),
            [c, a, b]
        );
        let mut select = Op::Select { cond: c, a, b };
        remap_operands(
            &mut select,
            &(0..8).map(|k| Value(9 - k)).collect::<Vec<_>>(),
        );
        assert_eq!(
            select,
            Op::Select {
                cond: Value(4),
                a: Value(2),
                b: Value(6)
            }
        );
    }

    #[test]
    fn temp_facts_pack_one_nibble_per_temporary() {
        let facts: [Facts; 16] = std::array::from_fn(|n| (n as u8 * 5) & 7);
        let packed = TempFacts::pack(&facts);
        assert_eq!(packed.unpack(), facts);
        assert_eq!(packed.0 >> 4 & 0xF, 5);
        assert_eq!(packed.get(3), 7);
        let mut narrowed = packed;
        narrowed.narrow(3, LOADED | QUANTIZED);
        let mut expected = facts;
        expected[3] &= LOADED | QUANTIZED;
        assert_eq!(narrowed.unpack(), expected);
        for temps in [0u16, 1, 0x8000, 0xA5C3, 0xFFFF] {
            let expected = (0..16)
                .filter(|n| temps >> n & 1 != 0)
                .fold(0u64, |m, n| m | 0xF << (4 * n));
            assert_eq!(TempFacts::nibbles(temps), expected, "{temps:#x}");
        }
    }

    #[test]
    fn fact_implications_hold() {
        for b in patterns() {
            let x = f32::from_bits(b);
            let same = |y: f32, z: f32| y.to_bits() == z.to_bits();
            let q = f24::quantize_result(x);
            assert!(same(f24::quantize_result(q), q), "{b:#x}");
            assert!(same(f24::load(q), q), "{b:#x}");
            assert!(same(f24::flush_input(q), q), "{b:#x}");
            assert!(same(arith::canonicalize(q), q), "{b:#x}");
            let l = f24::load(x);
            assert!(same(f24::load(l), l), "{b:#x}");
            assert!(same(arith::canonicalize(l), l), "{b:#x}");
            // The F24 negation of a grid value stays on the grid.
            let n = arith::canonicalize(0.0 - q);
            assert!(same(f24::quantize_result(n), n), "{b:#x}");
            // Flushing a canonical value keeps it canonical.
            let c = arith::canonicalize(x);
            assert!(same(
                arith::canonicalize(f24::flush_input(c)),
                f24::flush_input(c)
            ));
        }
    }

    #[test]
    fn constant_facts_match_the_functions() {
        let q = constant_facts(Elem::F32, 4, [0, 0x3F80_0000, 0x7FC0_0000, 0xFF80_0000]);
        assert_eq!(q, QUANTIZED | LOADED | CANONICAL);
        // -0 is neither on the grid nor loaded (both give +0), but canonical.
        assert_eq!(
            constant_facts(Elem::F32, 1, [0x8000_0000, 0, 0, 0]),
            CANONICAL
        );
        // A non-canonical NaN has no fact.
        assert_eq!(constant_facts(Elem::F32, 1, [0x7FC0_0001, 0, 0, 0]), 0);
        assert_eq!(constant_facts(Elem::I32, 1, [0, 0, 0, 0]), 0);
    }
    /// The F24 IRs of every vertex shader of the corpora beside the
    /// repository (none without them).
    fn corpus_f24_irs() -> Vec<(String, Ir)> {
        corpus_irs(crate::Precision::F24)
    }

    /// The IRs in `precision` of every vertex shader of the corpora beside
    /// the repository (none without them).
    fn corpus_irs(precision: crate::Precision) -> Vec<(String, Ir)> {
        let mut out = Vec::new();
        for dir in ["../shared/corpus", "../shared/asm-corpus/expected"] {
            let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
            let Ok(entries) = std::fs::read_dir(dir) else {
                continue;
            };
            let mut files: Vec<_> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
            files.retain(|f| f.extension().is_some_and(|x| x == "shbin"));
            files.sort();
            for file in files {
                let bytes = std::fs::read(&file).unwrap();
                let Ok(shbin) = crate::shbin::Shbin::parse(&bytes) else {
                    continue;
                };
                let Ok(program) =
                    crate::Program::new(shbin.dvlp.code.clone(), shbin.dvlp.descriptors.clone())
                else {
                    continue;
                };
                for dvle in &shbin.dvles {
                    if dvle.kind == crate::ShaderKind::Vertex
                        && (dvle.main as usize) < program.len()
                    {
                        let ir =
                            Ir::build(&program, dvle.main, crate::ShaderKind::Vertex, precision);
                        out.push((format!("{}#{}", file.display(), dvle.main), ir));
                    }
                }
            }
        }
        if out.is_empty() {
            if std::env::var_os("PICA_REQUIRE_CORPUS").is_some_and(|v| v == "1") {
                panic!("PICA_REQUIRE_CORPUS=1 but ../shared/corpus holds no .shbin file");
            }
            eprintln!("SKIPPED: no ../shared/corpus");
        }
        out
    }

    fn converted_temps(ir: &Ir) -> u16 {
        ir.prologue.nodes.iter().fold(0, |m, node| match node.op {
            Op::Store {
                dst: DstReg::Temp(n),
                ..
            } => m | 1 << (n & 15),
            _ => m,
        })
    }

    fn top_facts(converted: u16) -> [Facts; 16] {
        std::array::from_fn(|n| {
            if converted >> n & 1 != 0 {
                LOADED | CANONICAL
            } else {
                QUANTIZED | LOADED | CANONICAL
            }
        })
    }

    /// The temporaries whose facts a block's rewrite asks for: a first
    /// access that reads, or a first partial write of an entry-converted
    /// temporary (whose kept lanes have the assumed facts); not a first
    /// partial write of another (its kept lanes have none, whatever is
    /// assumed), nor anything after a whole write.
    #[test]
    fn temp_access_lists_the_temporaries_whose_facts_matter_and_the_last_write() {
        use crate::ir::Ty;
        let node = |op: Op| Node {
            ty: match op {
                Op::Store { .. } => None,
                _ => Some(Ty::F32X4),
            },
            op,
        };
        let store = |n: u8, mask: u8, v: u32| {
            node(Op::Store {
                dst: DstReg::Temp(n),
                mask: WriteMask(mask),
                value: Value(v),
            })
        };
        let block = Block {
            start: 0,
            last: 0,
            nodes: vec![
                node(Op::ReadInput(0)),
                // r0.xyz then r0.w: a partial write first.
                store(0, 0b1110, 0),
                store(0, 0b0001, 0),
                // r1 written whole, then read.
                store(1, 0b1111, 0),
                node(Op::ReadTemp(1)),
                // r2 read first.
                node(Op::ReadTemp(2)),
                store(2, 0b1000, 5),
                // An output written, a temporary written with no lane.
                Node {
                    op: Op::Store {
                        dst: DstReg::Output(0),
                        mask: WriteMask::ALL,
                        value: Value(0),
                    },
                    ty: None,
                },
                store(3, 0, 0),
            ],
            instrs: vec![InstrSpan {
                pc: 0,
                first: 0,
                end: 9,
            }],
            exit: Exit::End,
            stack_check: false,
        };
        let read = |converted| temp_access(&block, converted).read;
        assert_eq!(read(0), 0b100);
        assert_eq!(read(0b111), 0b101);
        assert_eq!(read(0b010), 0b100);
        // Through the write of r2 (node 6), not the output's or the empty one.
        assert_eq!(temp_access(&block, 0).through_last_temp_write, 7);
        // The last write with lanes of each register: r0 at node 2, r1 at 3,
        // r2 at 6, o0 (key 16) at 7; r3's write without lanes is none.
        let mut expected = [u32::MAX; 32];
        (expected[0], expected[1], expected[2], expected[16]) = (2, 3, 6, 7);
        assert_eq!(temp_access(&block, 0b1111).last_write, expected);
        assert_eq!(last_writes(&block), expected);
    }

    #[test]
    fn temp_access_finds_the_last_writes_forward_finds_alone() {
        for precision in [crate::Precision::F24, crate::Precision::F32] {
            for (name, ir) in corpus_irs(precision) {
                let converted = converted_temps(&ir);
                for (k, block) in ir.blocks.iter().enumerate() {
                    assert_eq!(
                        temp_access(block, converted).last_write,
                        last_writes(block),
                        "{name} block {k}"
                    );
                }
            }
        }
    }

    /// `estimated_writes` keeps every fact `forward` derives, whatever the
    /// facts assumed (else the estimate could start the rounds below the
    /// greatest fixed point and lose facts).
    #[test]
    fn estimated_writes_keep_every_fact_forward_derives() {
        let mut scratch = Scratch::default();
        for (name, ir) in corpus_f24_irs() {
            let converted = converted_temps(&ir);
            let top = top_facts(converted);
            let accesses: Vec<TempAccess> = ir
                .blocks
                .iter()
                .map(|block| temp_access(block, converted))
                .collect();
            let estimate = estimated_temp_facts(&ir, &accesses, converted, top, &mut scratch);
            let mut odd = top;
            for (n, f) in odd.iter_mut().enumerate() {
                *f &= [
                    0,
                    CANONICAL,
                    LOADED | CANONICAL,
                    QUANTIZED | LOADED | CANONICAL,
                ][n % 4];
            }
            for assumed in [top, estimate, odd, [0; 16]] {
                let kept = std::array::from_fn(|n| {
                    if converted >> n & 1 != 0 {
                        assumed[n]
                    } else {
                        0
                    }
                });
                for (block, access) in ir.blocks.iter().zip(&accesses) {
                    let (_, derived, _) = forward(block, &assumed, &kept, &mut scratch);
                    let (assumed, kept) = (TempFacts::pack(&assumed), TempFacts::pack(&kept));
                    let estimated =
                        estimated_writes(&block.nodes, assumed, kept, &mut scratch.lanes);
                    // The nodes after the last write of a temporary change
                    // nothing.
                    let through = &block.nodes[..access.through_last_temp_write];
                    assert_eq!(
                        estimated_writes(through, assumed, kept, &mut scratch.lanes),
                        estimated,
                        "{name} block {}",
                        block.start
                    );
                    let estimated = estimated.unpack();
                    for n in 0..16 {
                        assert_eq!(
                            estimated[n] & derived[n],
                            derived[n],
                            "{name} block {}: r{n} estimated {:#b}, forward {:#b}",
                            block.start,
                            estimated[n],
                            derived[n]
                        );
                    }
                }
            }
        }
    }

    /// `estimated_temp_facts` (read-free blocks first, a block estimated
    /// again only when a temporary it reads lost facts) finds the greatest
    /// fixed point of the estimate: the same as estimating every block again
    /// in address order until nothing changes.
    #[test]
    fn estimated_temp_facts_are_the_greatest_fixed_point_of_the_estimate() {
        let mut scratch = Scratch::default();
        let mut narrowed = 0;
        for (name, ir) in corpus_f24_irs() {
            let converted = converted_temps(&ir);
            let top = top_facts(converted);
            let accesses: Vec<TempAccess> = ir
                .blocks
                .iter()
                .map(|block| temp_access(block, converted))
                .collect();
            let mut assumed = TempFacts::pack(&top);
            loop {
                let before = assumed;
                for block in &ir.blocks {
                    let kept = TempFacts(assumed.0 & TempFacts::nibbles(converted));
                    assumed.0 &=
                        estimated_writes(&block.nodes, assumed, kept, &mut scratch.lanes).0;
                }
                if assumed == before {
                    break;
                }
            }
            let estimate = estimated_temp_facts(&ir, &accesses, converted, top, &mut scratch);
            assert_eq!(estimate, assumed.unpack(), "{name}");
            narrowed += usize::from(estimate != top);
        }
        // Not vacuous: the estimate drops facts in many shaders.
        assert!(narrowed > 0 || corpus_f24_irs().is_empty());
        // A chain against address order: block 0 copies r1 to r2, block 1
        // r0 to r1, block 2 (reading no temporary) writes r0 an input
        // without a load step. r0 loses every fact, then r1, then (only if
        // block 0 is estimated again) r2.
        use crate::ir::Ty;
        let copy = |pc: u32, from: Op, to: u8| {
            let nodes = vec![
                Node {
                    op: from,
                    ty: Some(Ty::F32X4),
                },
                Node {
                    op: Op::Store {
                        dst: DstReg::Temp(to),
                        mask: WriteMask::ALL,
                        value: Value(0),
                    },
                    ty: None,
                },
            ];
            Block {
                start: pc,
                last: pc,
                nodes,
                instrs: vec![InstrSpan {
                    pc,
                    first: 0,
                    end: 2,
                }],
                exit: if pc == 2 { Exit::End } else { Exit::Next },
                stack_check: false,
            }
        };
        let ir = Ir {
            entry: 0,
            kind: crate::ShaderKind::Vertex,
            precision: crate::Precision::F24,
            prologue: Block {
                start: 0,
                last: 0,
                nodes: Vec::new(),
                instrs: vec![InstrSpan {
                    pc: 0,
                    first: 0,
                    end: 0,
                }],
                exit: Exit::Next,
                stack_check: false,
            },
            blocks: vec![
                copy(0, Op::ReadTemp(1), 2),
                copy(1, Op::ReadTemp(0), 1),
                copy(2, Op::ReadInput(0), 0),
            ],
            values_cross_spans: false,
            block_of: vec![0, 1, 2],
        };
        let accesses: Vec<TempAccess> = ir.blocks.iter().map(|b| temp_access(b, 0)).collect();
        assert_eq!(
            accesses.iter().map(|a| a.read).collect::<Vec<_>>(),
            [0b10, 0b1, 0]
        );
        let estimate = estimated_temp_facts(&ir, &accesses, 0, top_facts(0), &mut scratch);
        assert_eq!(estimate[..4], [0, 0, 0, QUANTIZED | LOADED | CANONICAL]);
    }

    /// The rewrite uses the greatest assignment of temporary facts that
    /// every block's writes satisfy: the same as narrowing from every fact
    /// with `forward` alone until nothing changes.
    #[test]
    fn temp_facts_are_the_greatest_fixed_point_of_forward() {
        let mut scratch = Scratch::default();
        let mut with_facts = 0;
        for (name, ir) in corpus_f24_irs() {
            let converted = converted_temps(&ir);
            let mut assumed = top_facts(converted);
            let reference = loop {
                let kept = std::array::from_fn(|n| {
                    if converted >> n & 1 != 0 {
                        assumed[n]
                    } else {
                        0
                    }
                });
                let mut narrowed = assumed;
                let mut blocks = Vec::new();
                for block in &ir.blocks {
                    let (rewritten, written, _) = forward(block, &assumed, &kept, &mut scratch);
                    blocks.push(rewritten);
                    for (a, w) in narrowed.iter_mut().zip(written) {
                        *a &= w;
                    }
                }
                if narrowed == assumed {
                    break blocks;
                }
                assumed = narrowed;
            };
            with_facts += usize::from(assumed.iter().any(|&f| f != 0));
            assert!(
                forward_with_temp_facts(&ir, &mut scratch).0 == reference,
                "{name}: facts {assumed:?}"
            );
        }
        // Not a vacuous comparison: most shaders keep facts of temporaries.
        assert!(with_facts > 0 || corpus_f24_irs().is_empty());
    }

    /// `optimize` skips `nan_payloads` and `fuse_f24_products` on a block
    /// whose [`Steps`] lack their bit: the bits must cover every
    /// `canonicalize` and every `f24_quantize` of a `pica_mul` of the
    /// rewritten block, in both precisions, whatever the facts assumed.
    #[test]
    fn forward_steps_cover_every_node_the_later_passes_rewrite() {
        let mut scratch = Scratch::default();
        let mut seen: Steps = 0;
        for precision in [crate::Precision::F24, crate::Precision::F32] {
            for (name, ir) in corpus_irs(precision) {
                let converted = converted_temps(&ir);
                for assumed in [top_facts(converted), [0; 16]] {
                    for block in &ir.blocks {
                        let (rewritten, _, steps) =
                            forward(block, &assumed, &[0; 16], &mut scratch);
                        let mut present: Steps = 0;
                        for node in &rewritten.nodes {
                            present |= match node.op {
                                Op::Unary(UnOp::Canonicalize, _) => CANONICALIZES,
                                Op::Unary(UnOp::F24Quantize, p) => {
                                    match rewritten.nodes[p.0 as usize].op {
                                        Op::Binary(BinOp::PicaMul, ..) => {
                                            QUANTIZED_PRODUCTS | QUANTIZES
                                        }
                                        _ => QUANTIZES,
                                    }
                                }
                                _ => 0,
                            };
                        }
                        assert_eq!(
                            steps & present,
                            present,
                            "{name} block {}: steps {steps:#b}, present {present:#b}",
                            block.start
                        );
                        seen |= present;
                    }
                }
            }
        }
        // Not vacuous: the corpus canonicalises (F32 products, F24 negations)
        // and quantises.
        assert!(
            seen & (CANONICALIZES | QUANTIZES) == CANONICALIZES | QUANTIZES
                || corpus_f24_irs().is_empty(),
            "{seen:#b}"
        );
        // The recipes quantise their products themselves (`pica_mul_f24`):
        // a quantised `pica_mul` by hand, and a `pica_mul` left alone.
        use crate::ir::Ty;
        let node = |op: Op, ty: Option<Ty>| Node { op, ty };
        let nodes = vec![
            node(Op::ReadInput(0), Some(Ty::F32X4)),
            node(
                Op::Binary(BinOp::PicaMul, Value(0), Value(0)),
                Some(Ty::F32X4),
            ),
            node(Op::Unary(UnOp::F24Quantize, Value(1)), Some(Ty::F32X4)),
            node(
                Op::Store {
                    dst: DstReg::Output(0),
                    mask: WriteMask::ALL,
                    value: Value(2),
                },
                None,
            ),
        ];
        let block = |nodes: Vec<Node>| Block {
            start: 0,
            last: 0,
            instrs: vec![InstrSpan {
                pc: 0,
                first: 0,
                end: nodes.len() as u32,
            }],
            nodes,
            exit: Exit::End,
            stack_check: false,
        };
        let quantized = block(nodes.clone());
        let (_, _, steps) = forward(&quantized, &[0; 16], &[0; 16], &mut scratch);
        assert_eq!(steps, QUANTIZED_PRODUCTS | QUANTIZES);
        let mut plain = nodes;
        plain.remove(2);
        plain[2].op = Op::Store {
            dst: DstReg::Output(0),
            mask: WriteMask::ALL,
            value: Value(1),
        };
        let (_, _, steps) = forward(&block(plain), &[0; 16], &[0; 16], &mut scratch);
        assert_eq!(steps, 0);
    }
}
