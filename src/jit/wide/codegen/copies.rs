//! Output registers a vertex kernel copies straight from an input register
//! (`mov o1, v1`: the pass-through colour or texture coordinate most vertex
//! shaders have). Every lane's output then equals its input bit for bit, so
//! a kernel may move the 16 bytes from the input record to the output record
//! instead of transposing the input into rows, storing the rows as the
//! output's and transposing them back out. With F24 the blocks read the
//! inputs' float24 conversions (`layout::CONVERTED`): the output is then the
//! converted input, which a kernel converts on the way (the conversion works
//! component by component, so on a record as on a row).

use crate::jit::wide::lanes::{LaneBlock, LaneOp, RowSet};
use crate::jit::wide::layout;
use crate::jit::wide::plan::KernelPlan;

/// One copied register: output `o{output}` = input `v{input}`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct OutputCopy {
    /// The output register.
    pub output: u8,
    /// The input register.
    pub input: u8,
}

/// The rows of register `n` of the bank at `base`.
fn register_rows(base: usize, n: usize) -> [u16; 4] {
    std::array::from_fn(|c| (base + 4 * n + c) as u16)
}

/// The input register whose component `c` the store of `row` in `block`
/// copies unchanged into component `c`, when the block stores `row` once,
/// from a row of the raw inputs (F32) or of their conversions (F24).
fn copied_input(block: &LaneBlock, row: u16, c: usize) -> Option<usize> {
    let mut stores = block.ops.iter().filter_map(|op| match *op {
        LaneOp::Store(r, v) if r == row => Some(v),
        _ => None,
    });
    let (v, None) = (stores.next()?, stores.next()) else {
        return None;
    };
    let LaneOp::Row(from) = block.ops[v as usize] else {
        return None;
    };
    let from = from as usize;
    let bank = if from >= layout::CONVERTED {
        layout::CONVERTED
    } else {
        layout::INPUT
    };
    let input = from.checked_sub(bank)? / 4;
    (input < 16 && from == bank + 4 * input + c).then_some(input)
}

/// The output registers every lane of the kernel `plan` over `blocks` ends
/// with as an exact copy of one input register: every step writing any of
/// the output's rows runs for every lane, and its block stores all four
/// rows, each from the same component of the same input register as it
/// started; no step reads the output. (With F24, a copy of the input's
/// float24 conversion.)
pub(crate) fn output_copies(plan: &KernelPlan, blocks: &[LaneBlock]) -> Vec<OutputCopy> {
    let mut copies = Vec::new();
    'outputs: for n in 0..16 {
        let rows = register_rows(layout::OUTPUT, n);
        let mut input = None;
        for &step in &plan.steps {
            let Some(k) = step.block() else { continue };
            let block = &blocks[k];
            if rows.iter().any(|&r| block.reads.contains(r)) {
                continue 'outputs;
            }
            if !rows.iter().any(|&r| block.writes.contains(r)) {
                continue;
            }
            if !step.for_every_lane() {
                continue 'outputs;
            }
            for (c, &row) in rows.iter().enumerate() {
                match copied_input(block, row, c) {
                    Some(m) if input.is_none_or(|i| i == m) => input = Some(m),
                    _ => continue 'outputs,
                }
            }
        }
        if let Some(m) = input {
            copies.push(OutputCopy {
                output: n as u8,
                input: m as u8,
            });
        }
    }
    copies
}

/// `blocks` without the stores of `copies`' output rows (a kernel moving
/// those outputs from the input records itself), and the inputs some
/// remaining operation still reads, raw or converted (the ones to transpose
/// into rows, and with F24 to convert).
// (The AArch64 kernel stores copies as any output, for now.)
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub(crate) fn without_copies(blocks: &[LaneBlock], copies: &[OutputCopy]) -> (Vec<LaneBlock>, u16) {
    let mut dropped = RowSet::default();
    for copy in copies {
        for row in register_rows(layout::OUTPUT, copy.output as usize) {
            dropped.insert(row);
        }
    }
    let mut inputs_read = 0u16;
    let out = blocks
        .iter()
        .map(|block| {
            let mut block = block.clone();
            // Stores come last and nothing refers to one: removing them
            // keeps every other operation's index.
            block
                .ops
                .retain(|op| !matches!(*op, LaneOp::Store(r, _) if dropped.contains(r)));
            block.writes = block.writes.difference(&dropped);
            let mut referenced = vec![false; block.ops.len()];
            for op in &block.ops {
                for o in op.operands() {
                    referenced[o as usize] = true;
                }
            }
            for v in block.exit_values() {
                referenced[v as usize] = true;
            }
            for (op, &used) in block.ops.iter().zip(&referenced) {
                if let (LaneOp::Row(row), true) = (*op, used) {
                    let row = row as usize;
                    for bank in [layout::INPUT, layout::CONVERTED] {
                        if (bank..bank + 64).contains(&row) {
                            inputs_read |= 1 << ((row - bank) / 4);
                        }
                    }
                }
            }
            block
        })
        .collect();
    (out, inputs_read)
}

#[cfg(all(test, any(target_arch = "x86_64", target_arch = "aarch64")))]
mod tests {
    use super::OutputCopy;
    use crate::jit::wide::{WideShader, Width};
    use crate::{Precision, Program, ShaderConfig};

    /// The copies the compiled kernel of `body` (inputs `v0`–`v7`, `k` a
    /// constant) has, as `(output, input)` pairs.
    fn copies_of(body: &str, precision: Precision) -> Vec<(u8, u8)> {
        let text = format!(".constf k(0.5, -0.5, 2.0, 0.25)\n.proc main\n{body}\n    end\n.end\n");
        let shbin = crate::asm::assemble_str("copies.pica", &text).expect("assembles");
        let program =
            Program::new(shbin.dvlp.code.clone(), shbin.dvlp.descriptors.clone()).expect("loads");
        let config = ShaderConfig {
            entry: shbin.dvles[0].main,
            precision,
            ..ShaderConfig::default()
        };
        let width = *Width::available().first().expect("a width");
        let wide = WideShader::compile(&program, &config, width).expect("compiles");
        assert!(wide.has_vertex_kernel(), "a kernel");
        wide.output_copies()
            .iter()
            .map(|&OutputCopy { output, input }| (output, input))
            .collect()
    }

    #[test]
    fn only_whole_unchanged_copies_for_every_lane_count() {
        let body = "
    mov o0, v0
    mov o1, v1.yxzw
    mov o2.xy, v2
    mov o2.zw, v2
    mul r0, k, v3
    mov o3, v3
    mov o6.xy, v6
    mov o7, v7
    mov o7.x, k
    mov o8, -v0
    cmp k.xx, gt, le, v0
    ifc cmp.x
        mov o4, v4
        mov o9, v5
    .else
        mov o4, v4
    .end
    mov o10.xy, v2
    mov o10.zw, v3";
        // o2 from two instructions; o1 swizzled, o6 in part, o7 overwritten,
        // o8 negated, o4 and o9 under a lane mask, o10 from two inputs.
        assert_eq!(copies_of(body, Precision::F32), [(0, 0), (2, 2), (3, 3)]);
        // F24: the same outputs, copies of the converted inputs.
        assert_eq!(copies_of(body, Precision::F24), [(0, 0), (2, 2), (3, 3)]);
        // Two steps, both every lane, both copying the same input.
        let body = "
    mov o0, v1
    cmp k.xx, gt, le, v0
    ifc cmp.x
        mov r0, k
    .end
    mov o0, v1";
        assert_eq!(copies_of(body, Precision::F32), [(0, 1)]);
    }
}
