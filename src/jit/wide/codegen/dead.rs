//! State rows a vertex kernel's group loop need not store, and the work
//! that only feeds them: rows of `r0`–`r15`, `a0` and `cmp` some block
//! writes and no step reads. Their stores only matter for the state a batch
//! ends in (`StatePolicy::Carry`: the last vertex's), which is the last
//! group's: a kernel may drop them from its loop, with every operation only
//! they read, and run the last pass again with them after it, where the
//! state is wanted. Dropped, they cost neither a store per row and group,
//! nor the operations computing them (a temporary nobody reads, as in
//! `mov r0, r1; add r0, r1, r2` with no output), nor the registers that keep
//! their values alive to the block's end (the spills they cause).

// (The AArch64 kernel stores every row, for now.)
#![cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]

use crate::jit::wide::lanes::{LaneBlock, LaneOp, RowSet};
use crate::jit::wide::layout;
use crate::jit::wide::plan::{KernelPlan, Step, ops_block};

/// What the steps of `plan` do with the state rows.
#[derive(Default)]
struct RowUse {
    /// Rows some step reads (as a row of its block or of a step's own
    /// operations).
    read: RowSet,
    /// Rows some step stores.
    stored: RowSet,
    /// Rows some step reads after (or in a `loop` with) a step that stores
    /// them: a store's value may be read. (A step reads its rows before its
    /// own stores: stores come last in a block, and a block's reads of what
    /// it wrote itself are its values, not rows.)
    read_after_store: RowSet,
}

/// [`RowUse`] of the steps of `plan` over `blocks`.
fn row_use(plan: &KernelPlan, blocks: &[LaneBlock]) -> RowUse {
    let mut uses = RowUse::default();
    // In a loop a step may read what a later step stored, an iteration
    // before: every read there counts as after every store.
    let looped = plan.steps.iter().any(|s| matches!(s, Step::LoopStart(_)));
    let note = |block: &LaneBlock, uses: &mut RowUse| {
        // (Rows past the state, scratch the kernel's own steps use, are no
        // state rows.)
        let state = |row: u16| (row as usize) < layout::STATE_ROWS;
        let mut read = block.reads;
        let mut stored = RowSet::default();
        for op in &block.ops {
            match *op {
                LaneOp::Row(row) if state(row) => read.insert(row),
                LaneOp::Store(row, _) if state(row) => stored.insert(row),
                _ => {}
            }
        }
        let mut before = uses.stored;
        if looped {
            before.union_with(&stored);
        }
        uses.read_after_store
            .union_with(&read.intersection(&before));
        uses.read.union_with(&read);
        uses.stored.union_with(&stored);
    };
    for &step in &plan.steps {
        match step.block() {
            Some(k) => note(&blocks[k], &mut uses),
            None => {
                if let Some(block) = ops_block(step) {
                    note(&block, &mut uses);
                }
                if let Step::Fill { row, .. } = step {
                    // (A fill reads and writes its output row lane by lane.)
                    let mut rows = RowSet::default();
                    rows.insert(row);
                    let block = LaneBlock {
                        ops: vec![LaneOp::Row(row), LaneOp::Store(row, 0)],
                        exit_cond: None,
                        loop_values: None,
                        reads: rows,
                        writes: rows,
                        gathers: 0,
                    };
                    note(&block, &mut uses);
                }
            }
        }
    }
    uses
}

/// The state rows some step of `plan` (over `blocks`) stores: the rows a
/// vertex kernel's group changes. Every other row of the starting state
/// holds the same value in every lane of every group, so the kernel loads
/// it once per call, before its group loop. (`KernelPlan::store` has more:
/// under F24 the temporaries converted on entry, which a unit-state kernel
/// stores back but the vertex kernel's starting state holds converted.)
pub(crate) fn stored_rows(plan: &KernelPlan, blocks: &[LaneBlock]) -> RowSet {
    row_use(plan, blocks).stored
}

/// The rows of temporaries, `a0` and `cmp` that some block of `plan` stores
/// and no step reads after a store (`mad r1, r2, c0, r1` at the end reads
/// only the starting `r1`): in the loop the stores are left out and the
/// rows keep their starting values, which the steps that read them see;
/// nor do they need their starting value again, where a predicated step
/// writes them in some lanes only (`KernelPlan::read_first`). (`aL` is no
/// such row: the kernel's own loop steps read it.) `None` where the plan
/// tracks the writers of rows some paths leave alone (those rows' final
/// values come from any pass, not the last).
pub(crate) fn unread_rows(plan: &KernelPlan, blocks: &[LaneBlock]) -> Option<RowSet> {
    if plan.tracking.is_some() {
        return None;
    }
    let uses = row_use(plan, blocks);
    let small = [layout::A0X, layout::A0Y, layout::CMP, layout::CMP + 1];
    let mut unread = RowSet::default();
    for row in (layout::TEMP..layout::TEMP + 64).chain(small) {
        let row = row as u16;
        if uses.stored.contains(row) && !uses.read_after_store.contains(row) {
            unread.insert(row);
        }
    }
    (unread != RowSet::default()).then_some(unread)
}

/// `blocks` without their stores of `rows`, and without the operations
/// that only those stores read: each becomes a constant nothing reads,
/// which the lowering skips ([`drop_dead`]). (Stores come last and nothing
/// refers to one: removing them keeps every other operation's index.)
pub(crate) fn without_stores(blocks: &[LaneBlock], rows: &RowSet) -> Vec<LaneBlock> {
    blocks
        .iter()
        .map(|block| {
            let mut block = block.clone();
            let before = block.ops.len();
            block
                .ops
                .retain(|op| !matches!(*op, LaneOp::Store(r, _) if rows.contains(r)));
            if block.ops.len() != before {
                drop_dead(&mut block);
            }
            block.writes = block.writes.difference(rows);
            block
        })
        .collect()
}

/// Replaces each operation of `block` that no store, gather or exit value
/// depends on by a constant nothing reads (which the lowering skips): a
/// chain whose only reader was a store dropped ([`without_stores`]), or
/// whose end hoisting made a row (`hoist`), would otherwise still run in
/// every group, since each link is read by the next.
pub(crate) fn drop_dead(block: &mut LaneBlock) {
    let mut live = vec![false; block.ops.len()];
    for v in block.exit_values() {
        live[v as usize] = true;
    }
    for k in (0..block.ops.len()).rev() {
        let op = block.ops[k];
        // Stores write rows; a gather fills its group's rows for the others.
        live[k] |= matches!(op, LaneOp::Store(..) | LaneOp::Gather { .. });
        if live[k] {
            for o in op.operands() {
                live[o as usize] = true;
            }
        }
    }
    for (op, live) in block.ops.iter_mut().zip(live) {
        if !live {
            *op = LaneOp::Const(0);
        }
    }
}

#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use crate::jit::wide::Width;
    use crate::{
        EngineKind, Precision, Program, Shader, ShaderConfig, StatePolicy, Uniforms, UnitState,
    };
    use std::sync::Arc;

    /// `r1`, `r2`, `r4` written and never read (`r2` under a uniform
    /// `ifu`: a predicated step), `r0` read by a later step.
    const BODY: &str = "
    mul r0, k, v0
    mul r1, v1, v0
    add o0, r0, v1
    ifu flag
        mul r2, k.yyyy, v1
    .end
    mov r4, v1.wzyx
    mul o1, r0, k.zzzz";

    /// [`BODY`] with a per-lane `ifc`: `r2` is then a row some paths leave
    /// alone, tracked under `Carry` (no temporary is left to the last pass).
    const TRACKED: &str = "
    mul r0, k, v0
    mul r1, v1, v0
    add o0, r0, v1
    cmp k.xx, lt, lt, v0
    ifc cmp.x
        mul r2, k.yyyy, v1
    .end
    mov r4, v1.wzyx
    mul o1, r0, k.zzzz";

    fn program(body: &str) -> (Arc<Program>, u32) {
        let text = format!(
            ".constf k(0.5, -0.5, 2.0, 0.25)\n.bool flag\n.proc main\n{body}\n    end\n.end\n"
        );
        let shbin = crate::asm::assemble_str("dead.pica", &text).expect("assembles");
        let program =
            Program::new(shbin.dvlp.code.clone(), shbin.dvlp.descriptors.clone()).expect("loads");
        (Arc::new(program), shbin.dvles[0].main)
    }

    /// The vertex kernel's loop leaves the unread temporaries' rows alone
    /// under `Reset` (here: a sentinel stays) and stores them under `Carry`
    /// (the last pass runs again), while the rows of `r0`, which a later
    /// step reads, are stored either way.
    #[test]
    fn the_kernel_loop_leaves_unread_temporaries_to_a_carrying_last_pass() {
        use crate::jit::wide::{LaneState, WideShader, layout};
        let (program, entry) = program(BODY);
        let config = ShaderConfig {
            entry,
            ..ShaderConfig::default()
        };
        let uniforms = Uniforms::default();
        let start = UnitState::default();
        const SENTINEL: u32 = 0xDEAD_BEEF;
        for width in Width::available() {
            let lanes = width.lanes();
            let wide = WideShader::compile(&program, &config, width).expect("compiles");
            let inputs: Vec<crate::VertexRegisters> = (0..lanes)
                .map(|k| std::array::from_fn(|r| [k as f32 + 1.0, r as f32, 0.5, -1.0]))
                .collect();
            let mut outputs = vec![[[0.0f32; 4]; 16]; lanes];
            let mut file = LaneState::with_copies(lanes, 2);
            // r0: rows TEMP..TEMP + 4; r1: the next four.
            let row_of = |reg: usize, c: usize| layout::TEMP + 4 * reg + c;
            for carrying in [0, u32::MAX] {
                file.copy_row_mut(0, layout::CARRYING)[0] = carrying;
                for reg in [0, 1] {
                    for c in 0..4 {
                        file.copy_row_mut(0, row_of(reg, c)).fill(SENTINEL);
                    }
                }
                let ran = wide.run_vertex_kernel(
                    &mut file,
                    &uniforms,
                    &start,
                    &inputs,
                    &mut outputs,
                    0xffff,
                    u64::MAX,
                    0,
                );
                assert_eq!(ran, Some(1), "{width:?}");
                for c in 0..4 {
                    let r0 = file.copy_row(0, row_of(0, c));
                    assert!(r0.iter().all(|&x| x != SENTINEL), "{width:?}: r0 stored");
                    let r1 = file.copy_row(0, row_of(1, c));
                    if carrying == 0 {
                        assert!(r1.iter().all(|&x| x == SENTINEL), "{width:?}: r1 left");
                    } else {
                        // r1 = v1 * v0: component c of the last lane.
                        let last = &inputs[lanes - 1];
                        let want = (last[1][c] * last[0][c]).to_bits();
                        assert_eq!(r1[lanes - 1], want, "{width:?}: r1 of the last lane");
                    }
                }
            }
        }
    }

    /// Batches whose length is no multiple of two groups (a padded tail, the
    /// single and the pair kernel), under both policies: every output and,
    /// under `Carry`, the final state (the unread temporaries the kernel's
    /// loop does not store included) equal the interpreter's, and the
    /// kernel shaded every vertex.
    #[test]
    fn carried_state_keeps_the_temporaries_the_loop_does_not_store() {
        for (body, flag, precision) in [
            (BODY, true, Precision::F32),
            (BODY, false, Precision::F32),
            (BODY, true, Precision::F24),
            (TRACKED, false, Precision::F32),
            (TRACKED, false, Precision::F24),
        ] {
            let (program, entry) = program(body);
            let mut uniforms = Uniforms::default();
            uniforms.b[0] = flag;
            let config = ShaderConfig {
                entry,
                precision,
                ..ShaderConfig::default()
            };
            let interp =
                Shader::new(program.clone(), config, EngineKind::Interpreter).expect("builds");
            for width in Width::available() {
                let wide = Shader::new(program.clone(), config, EngineKind::Jit)
                    .expect("builds")
                    .with_batch_width(Some(width))
                    .expect("width available");
                for len in [3 * width.lanes() + 1, 4 * width.lanes()] {
                    let inputs: Vec<crate::VertexRegisters> = (0..len)
                        .map(|k| {
                            std::array::from_fn(|r| {
                                std::array::from_fn(|c| ((k * 64 + r * 4 + c) as f32 * 0.37).sin())
                            })
                        })
                        .collect();
                    for policy in [StatePolicy::Reset, StatePolicy::Carry] {
                        let mut start = UnitState::default();
                        start.temps[2] = [7.0, 8.0, 9.0, 10.0];
                        let run = |shader: &Shader| {
                            let mut state = start.clone();
                            let mut outputs = vec![[[-1.0f32; 4]; 16]; len];
                            let summary = shader
                                .run_vertices(
                                    &uniforms,
                                    &inputs,
                                    0xffff,
                                    &mut outputs,
                                    0xffff,
                                    policy,
                                    &mut state,
                                    &mut (),
                                )
                                .expect("runs");
                            (state, outputs, summary)
                        };
                        let (want_state, want_out, _) = run(&interp);
                        let (got_state, got_out, summary) = run(&wide);
                        let what = format!("{precision:?} {flag} {width:?} {len} {policy:?}");
                        assert_eq!(summary.wide_vertices, len, "{what}: the kernel shaded all");
                        assert_eq!(summary.single_vertex_vertices, 0, "{what}");
                        let bits = |o: &[crate::VertexRegisters]| -> Vec<u32> {
                            o.iter().flatten().flatten().map(|x| x.to_bits()).collect()
                        };
                        assert_eq!(bits(&got_out), bits(&want_out), "{what}: outputs");
                        let temps = |s: &UnitState| -> Vec<u32> {
                            s.temps.iter().flatten().map(|x| x.to_bits()).collect()
                        };
                        assert_eq!(temps(&got_state), temps(&want_state), "{what}: temps");
                        assert_eq!(got_state, want_state, "{what}: state");
                    }
                }
            }
        }
    }
}
