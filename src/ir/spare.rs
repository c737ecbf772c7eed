//! Spare node and span buffers, per thread: the code generator hands the IRs
//! of a compilation back ([`Ir::recycle`]) and the next compilation on the
//! thread builds and optimises its blocks into them instead of allocating.
//!
//! A program of many small blocks allocated (and freed) two buffers per
//! block for the IR as built and two more for the optimised one; an
//! allocation and its free cost about as much as building a few nodes, and
//! were a noticeable part of such a compilation. The buffers are only ever
//! cleared and refilled, so what is built is the same with or without them;
//! a thread keeps buffers of each kind with room for at most
//! [`MAX_SPARE_ROOM`] elements in all (about 1.5 MiB of nodes: a thread that
//! once compiled a huge program does not keep its memory; fp-tests' two
//! IRs, the corpus's largest, need under a tenth of it). Nothing but
//! capacity crosses from one compilation to the next.

use super::{Block, InstrSpan, Ir, Node};
use std::cell::RefCell;

/// The room (elements) of the buffers of each kind a thread keeps, at most.
const MAX_SPARE_ROOM: usize = 1 << 16;

/// Spare buffers of one kind (all empty), and their room in all.
struct Kept<T> {
    buffers: Vec<Vec<T>>,
    room: usize,
}

impl<T> Kept<T> {
    const fn new() -> Self {
        Kept {
            buffers: Vec::new(),
            room: 0,
        }
    }

    fn take(&mut self) -> Option<Vec<T>> {
        let buffer = self.buffers.pop()?;
        self.room -= buffer.capacity();
        Some(buffer)
    }

    /// Keeps `buffer` (empty) unless that would exceed [`MAX_SPARE_ROOM`].
    #[inline(always)]
    fn keep(&mut self, buffer: Vec<T>) {
        if self.room + buffer.capacity() <= MAX_SPARE_ROOM {
            self.room += buffer.capacity();
            self.buffers.push(buffer);
        }
    }
}

/// The spare buffers of one thread.
struct Spare {
    nodes: Kept<Node>,
    spans: Kept<InstrSpan>,
}

thread_local! {
    /// Per thread, so that compilations on different threads never share or
    /// wait for a buffer.
    static SPARE: RefCell<Spare> = const {
        RefCell::new(Spare {
            nodes: Kept::new(),
            spans: Kept::new(),
        })
    };
}

/// An empty node buffer and an empty span buffer with room for at least
/// `nodes` and `spans` elements, taken in one visit of the thread's buffers
/// (every block takes both, twice per compilation).
pub(super) fn block_buffers(nodes: usize, spans: usize) -> (Vec<Node>, Vec<InstrSpan>) {
    let (spare_nodes, spare_spans) = SPARE
        .try_with(|spare| {
            let mut spare = spare.borrow_mut();
            (spare.nodes.take(), spare.spans.take())
        })
        .unwrap_or((None, None));
    (room(spare_nodes, nodes), room(spare_spans, spans))
}

/// `spare` if it has room for `capacity` elements, else a new buffer: growing
/// a spare one would copy all of its old room (`realloc` does not know that
/// it is empty).
fn room<T>(spare: Option<Vec<T>>, capacity: usize) -> Vec<T> {
    match spare {
        Some(buffer) if buffer.capacity() >= capacity => buffer,
        _ => Vec::with_capacity(capacity),
    }
}

/// A copy of `block` in spare buffers (the optimiser's copy of the
/// prologue: taking a buffer for it as [`Ir::recycle`] keeps one keeps the
/// spare buffers balanced from one compilation to the next).
pub(super) fn copy_block(block: &Block) -> Block {
    let (mut copy_nodes, mut copy_instrs) = block_buffers(block.nodes.len(), block.instrs.len());
    copy_nodes.extend_from_slice(&block.nodes);
    copy_instrs.extend_from_slice(&block.instrs);
    Block {
        nodes: copy_nodes,
        instrs: copy_instrs,
        ..*block
    }
}

/// Keeps `block`'s buffers (emptied) for a later block of this thread.
pub(super) fn keep_block(block: Block) {
    // Where the thread is exiting (no spare buffers any more), the buffers
    // are simply freed.
    let _ = SPARE.try_with(|spare| spare.borrow_mut().keep_block(block));
}

impl Spare {
    /// Keeps `block`'s buffers, emptied.
    #[inline(always)]
    fn keep_block(&mut self, block: Block) {
        let Block {
            mut nodes,
            mut instrs,
            ..
        } = block;
        nodes.clear();
        instrs.clear();
        self.nodes.keep(nodes);
        self.spans.keep(instrs);
    }
}

impl Ir {
    /// Drops the IR, keeping its blocks' buffers for the next IR this thread
    /// builds or optimises (the code generator's IRs live for one
    /// compilation). The same as dropping it but for the allocations saved.
    ///
    /// Buffers are taken last kept first, so they are kept in the reverse of
    /// the order a compilation takes them: the prologue (built and copied
    /// after the blocks), then the blocks last to first. Compiling the same
    /// program again (or one of similar shape) then gets for each block the
    /// buffer its counterpart had, which has the room it asks for (kept in
    /// block order, block 0 asked for the last block's buffer, often too
    /// small: freed and allocated again).
    pub(crate) fn recycle(self) {
        let Ir {
            prologue, blocks, ..
        } = self;
        // One visit of the thread's buffers for all the blocks (a visit per
        // block was a fixed cost of every block of every compilation).
        let _ = SPARE.try_with(move |spare| {
            let mut spare = spare.borrow_mut();
            spare.keep_block(prologue);
            for block in blocks.into_iter().rev() {
                spare.keep_block(block);
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arith::Precision;
    use crate::program::ShaderKind;

    /// The spare node buffers of this thread: (count, total capacity).
    fn spare_nodes() -> (usize, usize) {
        SPARE.with_borrow(|s| {
            let room = s.nodes.buffers.iter().map(Vec::capacity).sum();
            assert_eq!(room, s.nodes.room);
            (s.nodes.buffers.len(), room)
        })
    }

    fn forget_spare_nodes() {
        SPARE.with_borrow_mut(|s| s.nodes = Kept::new());
    }

    #[test]
    fn recycled_buffers_are_reused_and_what_is_built_is_the_same() {
        // The default shader: a loop, a subroutine and an `ifu` (several
        // blocks).
        let shbin = crate::shbin::Shbin::parse(crate::DEFAULT_SHADER).unwrap();
        let program =
            crate::program::Program::new(shbin.dvlp.code.clone(), shbin.dvlp.descriptors.clone())
                .unwrap();
        let entry = shbin.dvles[0].main;
        let build = || crate::ir::Ir::build(&program, entry, ShaderKind::Vertex, Precision::F24);
        // Tests share threads: start from no spare buffers.
        forget_spare_nodes();
        let first = build();
        let blocks = first.blocks.len();
        let copy = first.clone();
        first.recycle();
        // One node buffer per block and the prologue's.
        assert_eq!(spare_nodes().0, blocks + 1);
        let again = build();
        assert_eq!(again, copy);
        // Every buffer was taken again (the prologue's and each block's).
        assert_eq!(spare_nodes().0, 0);
        let optimised = crate::ir::opt::optimize(&again);
        again.recycle();
        let kept = spare_nodes();
        assert_eq!(kept.0, blocks + 1);
        optimised.recycle();
        assert_eq!(spare_nodes().0, 2 * (blocks + 1));
        // The optimiser takes them too: the same IR as from fresh buffers.
        forget_spare_nodes();
        let fresh = crate::ir::opt::optimize(&copy);
        assert_eq!(crate::ir::opt::optimize(&copy), fresh);
    }

    #[test]
    fn a_compilation_again_gets_each_block_its_own_buffers_back() {
        let shbin = crate::shbin::Shbin::parse(crate::DEFAULT_SHADER).unwrap();
        let program =
            crate::program::Program::new(shbin.dvlp.code.clone(), shbin.dvlp.descriptors.clone())
                .unwrap();
        let entry = shbin.dvles[0].main;
        // As the code generator does: build, optimise, recycle the
        // optimised IR then the built one.
        let compile = || {
            let built = crate::ir::Ir::build(&program, entry, ShaderKind::Vertex, Precision::F24);
            let optimised = crate::ir::opt::optimize(&built);
            let buffers = |ir: &Ir| -> Vec<*const Node> {
                std::iter::once(&ir.prologue)
                    .chain(&ir.blocks)
                    .map(|b| b.nodes.as_ptr())
                    .collect()
            };
            let seen = (buffers(&built), buffers(&optimised));
            optimised.recycle();
            built.recycle();
            seen
        };
        forget_spare_nodes();
        let first = compile();
        assert!(first.0.len() > 2, "several blocks");
        let kept = spare_nodes().0;
        // The same buffer for the same block (and prologue) of either IR,
        // and as many kept as before: none freed, none allocated.
        assert_eq!(compile(), first);
        assert_eq!(spare_nodes().0, kept);
        assert_eq!(compile(), first);
    }

    #[test]
    fn no_more_room_than_the_bound_is_kept() {
        forget_spare_nodes();
        let block = |room: usize| Block {
            start: 0,
            last: 0,
            nodes: Vec::with_capacity(room),
            instrs: Vec::new(),
            exit: crate::ir::Exit::End,
            stack_check: false,
        };
        keep_block(block(MAX_SPARE_ROOM + 1));
        assert_eq!(spare_nodes(), (0, 0));
        keep_block(block(MAX_SPARE_ROOM / 2));
        keep_block(block(MAX_SPARE_ROOM / 2));
        // Full: a third buffer is freed.
        keep_block(block(1));
        assert_eq!(spare_nodes(), (2, MAX_SPARE_ROOM));
        // Taking one makes room again.
        assert!(block_buffers(1, 0).0.capacity() >= MAX_SPARE_ROOM / 2);
        keep_block(block(1));
        assert_eq!(spare_nodes().0, 2);
    }
}
