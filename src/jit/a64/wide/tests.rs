//! Every lane operation of the NEON lowering against the IR's scalar
//! definitions (`ir::eval`), bit for bit, on values at the edges of every
//! rule (NaN payloads, signed zeros, infinities, subnormals, the float24
//! thresholds, the `i32` conversion limits); gathers inside and outside
//! `c0`–`c95`; the exit mask; and a host FPCR with flush-to-zero and default
//! NaN set, which the generated code must neither obey nor lose.

use super::*;
use crate::arith::f24;
use crate::ir::{BinOp, UnOp, eval};
use crate::isa::CmpOp;
use crate::jit::a64::emit::tests::{BINARY_OPS, COMPARISONS, UNARY_OPS};
use crate::jit::memory::ExecRegion;
use crate::jit::wide::lanes::{LaneRef, RowSet};
use crate::state::Uniforms;
use std::mem::offset_of;

/// A register file for 4 lanes, 16-byte aligned.
#[repr(C, align(16))]
#[derive(Clone, Copy)]
struct Row([u32; 4]);

fn file() -> Vec<Row> {
    vec![Row([0; 4]); layout::HEADER_BYTES / 16 + layout::ROWS]
}

fn row_mut(file: &mut [Row], row: usize) -> &mut [u32; 4] {
    &mut file[layout::HEADER_BYTES / 16 + row].0
}

type BlockFn = unsafe extern "C" fn(*mut u8, *const Uniforms, *const u8) -> u32;

struct Compiled {
    region: ExecRegion,
    entry: usize,
}

impl Compiled {
    fn new(block: LaneBlock) -> Compiled {
        let code = compile(&[block], 0, None).expect("the block lowers");
        Compiled {
            region: ExecRegion::new(&code.bytes).expect("executable memory"),
            entry: code.entries[0].expect("the block lowers"),
        }
    }

    fn call(&self, file: &mut [Row], uniforms: &Uniforms) -> u32 {
        assert!(file.len() >= layout::HEADER_BYTES / 16 + layout::ROWS);
        let pool = self.region.as_ptr();
        // SAFETY: `entry` is the start of a block function compiled with the
        // `BlockFn` signature into the live region.
        let f: BlockFn = unsafe { std::mem::transmute::<*const u8, BlockFn>(pool.add(self.entry)) };
        // SAFETY: the function touches the register file (every row of the
        // layout exists, as asserted), the uniforms and the pool only.
        unsafe { f(file.as_mut_ptr().cast(), uniforms, pool) }
    }
}

/// `Row(input rows...)`, the operation on them, a store to `o0.x`, and the
/// result as the exit condition.
fn one_op(op: impl Fn(&[LaneRef]) -> LaneOp, inputs: usize) -> Compiled {
    let mut ops: Vec<LaneOp> = (0..inputs)
        .map(|k| LaneOp::Row((layout::INPUT + k) as u16))
        .collect();
    let args: Vec<LaneRef> = (0..inputs as LaneRef).collect();
    ops.push(op(&args));
    let result = inputs as LaneRef;
    ops.push(LaneOp::Store(layout::OUTPUT as u16, result));
    let mut writes = RowSet::default();
    writes.insert(layout::OUTPUT as u16);
    Compiled::new(LaneBlock {
        ops,
        exit_cond: Some(result),
        loop_values: None,
        reads: RowSet::default(),
        writes,
        gathers: 0,
    })
}

fn edge_values() -> Vec<u32> {
    let mut v = vec![
        0,
        0x8000_0000,
        1.0f32.to_bits(),
        (-1.0f32).to_bits(),
        0.5f32.to_bits(),
        1.5f32.to_bits(),
        (-2.5f32).to_bits(),
        3.7f32.to_bits(),
        (-3.2f32).to_bits(),
        1e20f32.to_bits(),
        0x7F80_0000,
        0xFF80_0000,
        0x7FC0_0000,
        0xFFC0_0000,
        0x7F80_0001,
        0xFF81_2345,
        0x7FC1_2345,
        0x0000_0001,
        0x807F_FFFF,
        0x0080_0000,
        0x7F7F_FFFF,
        0x4F00_0000,
        0xCF00_0000,
        0x4F00_0001,
        0xCF00_0001,
        0x4EFF_FFFF,
        95,
        96,
        0xFFFF_FFFF,
        0x7FFF_FFFF,
        12345,
    ];
    for b in [f24::MIN_NORMAL_BITS, f24::OVERFLOW_BITS, 0x207F_FF00] {
        v.extend([b, b - 1, b + 1, b | 0x8000_0000, (b - 1) | 0x8000_0000]);
    }
    v
}

/// Runs `compiled` on every tuple of `values` (4 lanes per call) and checks
/// `o0.x` against `expected`, and the exit mask against its sign bits.
fn check(name: &str, compiled: &Compiled, arity: usize, expected: impl Fn(&[u32]) -> u32) {
    let values = edge_values();
    let n = values.len();
    let tuples: Vec<Vec<u32>> = (0..n.pow(arity as u32))
        .map(|mut k| {
            (0..arity)
                .map(|_| {
                    let x = values[k % n];
                    k /= n;
                    x
                })
                .collect()
        })
        .collect();
    let uniforms = Uniforms::default();
    let mut f = file();
    for chunk in tuples.chunks(4) {
        for (lane, t) in chunk.iter().enumerate() {
            for (i, &x) in t.iter().enumerate() {
                row_mut(&mut f, layout::INPUT + i)[lane] = x;
            }
        }
        let mask = compiled.call(&mut f, &uniforms);
        for (lane, t) in chunk.iter().enumerate() {
            let got = row_mut(&mut f, layout::OUTPUT)[lane];
            let want = expected(t);
            assert_eq!(
                got, want,
                "{name}{t:08x?}: got {got:#010x}, expected {want:#010x}"
            );
            assert_eq!(mask >> lane & 1, got >> 31, "{name}{t:08x?}: exit mask");
        }
    }
}

#[test]
fn unary_operations_match_the_ir() {
    let shifts = [
        UnOp::Shl(0),
        UnOp::Shl(23),
        UnOp::Shl(31),
        UnOp::Sar(0),
        UnOp::Sar(1),
        UnOp::Sar(31),
        UnOp::Shr(0),
        UnOp::Shr(23),
        UnOp::Shr(31),
    ];
    for u in UNARY_OPS.into_iter().chain(shifts) {
        let c = one_op(|a| LaneOp::Unary(u, a[0]), 1);
        check(&format!("{u:?}"), &c, 1, |t| eval::unary(u, [t[0]; 4])[0]);
    }
}

#[test]
fn binary_operations_match_the_ir() {
    for b in BINARY_OPS {
        let c = one_op(|a| LaneOp::Binary(b, a[0], a[1]), 2);
        check(&format!("{b:?}"), &c, 2, |t| {
            eval::binary(b, [t[0]; 4], [t[1]; 4])[0]
        });
    }
}

#[test]
fn comparisons_and_selects_match_the_ir() {
    let truth = |b: bool| if b { u32::MAX } else { 0 };
    for op in COMPARISONS {
        let c = one_op(|a| LaneOp::FCmp(op, a[0], a[1]), 2);
        check(&format!("fcmp {op:?}"), &c, 2, |t| {
            truth(crate::arith::compare(
                op,
                f32::from_bits(t[0]),
                f32::from_bits(t[1]),
            ))
        });
        let c = one_op(|a| LaneOp::ICmp(op, a[0], a[1]), 2);
        check(&format!("icmp {op:?}"), &c, 2, |t| {
            truth(eval::int_compare(op, t[0] as i32, t[1] as i32))
        });
    }
    // A select on a compare's mask keeps the chosen operand's bits.
    let ops = vec![
        LaneOp::Row(layout::INPUT as u16),
        LaneOp::Row(layout::INPUT as u16 + 1),
        LaneOp::FCmp(CmpOp::Lt, 0, 1),
        LaneOp::Select(2, 0, 1),
        LaneOp::Store(layout::OUTPUT as u16, 3),
    ];
    let mut writes = RowSet::default();
    writes.insert(layout::OUTPUT as u16);
    let c = Compiled::new(LaneBlock {
        ops,
        exit_cond: Some(3),
        loop_values: None,
        reads: RowSet::default(),
        writes,
        gathers: 0,
    });
    check("select", &c, 2, |t| {
        if f32::from_bits(t[0]) < f32::from_bits(t[1]) {
            t[0]
        } else {
            t[1]
        }
    });
}

#[test]
fn constants_and_uniforms_reach_every_lane() {
    let mut uniforms = Uniforms::default();
    uniforms.f[7] = [1.25, -0.0, f32::NAN, 3.0];
    uniforms.b[3] = true;
    uniforms.i[2] = [200, 7, 255, 0];
    let f = offset_of!(Uniforms, f) + 16 * 7 + 8;
    let b = offset_of!(Uniforms, b) + 3;
    let i = offset_of!(Uniforms, i) + 8 + 2;
    let cases: [(LaneOp, u32); 6] = [
        (LaneOp::Const(0), 0),
        (LaneOp::Const(u32::MAX), u32::MAX),
        (LaneOp::Const(0x7FC1_2345), 0x7FC1_2345),
        (LaneOp::Uniform(f as u16), f32::NAN.to_bits()),
        (
            LaneOp::UniformByte {
                offset: b as u16,
                mask: true,
            },
            u32::MAX,
        ),
        (
            LaneOp::UniformByte {
                offset: i as u16,
                mask: false,
            },
            255,
        ),
    ];
    for (op, want) in cases {
        let c = one_op(|_| op, 0);
        let mut file = file();
        c.call(&mut file, &uniforms);
        assert_eq!(*row_mut(&mut file, layout::OUTPUT), [want; 4], "{op:?}");
    }
}

#[test]
fn gathers_read_c0_to_c95_and_one_outside() {
    let mut uniforms = Uniforms::default();
    for (n, v) in uniforms.f.iter_mut().enumerate() {
        *v = std::array::from_fn(|c| (10 * n + c) as f32);
    }
    let mut ops = vec![LaneOp::Row(layout::A0X as u16)];
    let mut writes = RowSet::default();
    for comp in 0..4u8 {
        ops.push(LaneOp::Gather {
            slot: 0,
            comp,
            group: 0,
        });
    }
    for comp in 0..4u16 {
        ops.push(LaneOp::Store(layout::OUTPUT as u16 + comp, 1 + comp as u32));
        writes.insert(layout::OUTPUT as u16 + comp);
    }
    let c = Compiled::new(LaneBlock {
        ops,
        exit_cond: None,
        loop_values: None,
        reads: RowSet::default(),
        writes,
        gathers: 1,
    });
    for slots in [
        [0, 1, 95, 96],
        [-1, i32::MIN, 50, i32::MAX],
        [94, 2, 1000, 17],
    ] {
        let mut file = file();
        *row_mut(&mut file, layout::A0X) = slots.map(|s| s as u32);
        assert_eq!(c.call(&mut file, &uniforms), 0);
        for (lane, &slot) in slots.iter().enumerate() {
            let want = match usize::try_from(slot) {
                Ok(n) if n < 96 => uniforms.f[n],
                _ => eval::MISSING_CONSTANT,
            };
            let got: [f32; 4] = std::array::from_fn(|comp| {
                f32::from_bits(row_mut(&mut file, layout::OUTPUT + comp)[lane])
            });
            assert_eq!(got, want, "slot {slot}");
        }
    }
}

fn fpcr() -> u64 {
    let v: u64;
    // SAFETY: reading FPCR has no side effect.
    unsafe { std::arch::asm!("mrs {}, fpcr", out(reg) v) };
    v
}

fn set_fpcr(v: u64) {
    // SAFETY: FPCR only changes how this thread's floating-point operations
    // round and flush; the test restores it before any other code relies on it.
    unsafe { std::arch::asm!("msr fpcr, {}", in(reg) v) };
}

/// With the host's FPCR set to flush subnormals (FZ) and to return the
/// default NaN (DN), the block still keeps subnormals and NaN payloads, and
/// the host's FPCR is back afterwards.
#[test]
fn the_host_fpcr_is_neither_obeyed_nor_lost() {
    const FZ: u64 = 1 << 24;
    const DN: u64 = 1 << 25;
    let c = one_op(|a| LaneOp::Binary(BinOp::FMul, a[0], a[1]), 2);
    let uniforms = Uniforms::default();
    let mut file = file();
    *row_mut(&mut file, layout::INPUT) = [0x0000_0003, 0x7FC1_2345, 0x0080_0000, 1];
    *row_mut(&mut file, layout::INPUT + 1) = [0x3F80_0000, 0x3F80_0000, 0x3F00_0000, 0x4000_0000];
    let host = fpcr();
    set_fpcr(host | FZ | DN);
    c.call(&mut file, &uniforms);
    let after = fpcr();
    set_fpcr(host);
    assert_eq!(after, host | FZ | DN);
    assert_eq!(
        *row_mut(&mut file, layout::OUTPUT),
        [0x0000_0003, 0x7FC1_2345, 0x0040_0000, 2]
    );
}
