//! The wide register file: one row of `W` lanes per PICA register component,
//! in memory for the duration of one call, plus a small header.
//!
//! Row `r` lives at byte [`row_offset`]`(r, W)`; lane `l` of a row at `+ 4 l`.
//! Generated code reads and writes rows with aligned vector loads and stores
//! (the buffer is 64-byte aligned and a row is `4 W` bytes, `W` a power of two
//! from 4 to 16).

/// Inputs `v0`–`v15`, as given (component `c` of `vN` is row `INPUT + 4 N + c`).
pub const INPUT: usize = 0;
/// F24: the inputs the program reads, converted once per call (`f24::load`).
pub const CONVERTED: usize = 64;
/// Temporaries `r0`–`r15`.
pub const TEMP: usize = 128;
/// Outputs `o0`–`o15`.
pub const OUTPUT: usize = 192;
/// `a0.x` (`i32` lanes).
pub const A0X: usize = 256;
/// `a0.y`.
pub const A0Y: usize = 257;
/// `aL`.
pub const AL: usize = 258;
/// `cmp.x`, `cmp.y` (lane masks: all ones or zero).
pub const CMP: usize = 259;
/// Rows that make up a vertex's state (the rest is scratch).
pub const STATE_ROWS: usize = 261;
/// Scratch: the slots of the gather being done.
pub const INDEX: usize = 261;
/// Scratch: four rows per distinct gathered slot of a block.
pub const GATHER: usize = 262;
/// Distinct gathered slots a block may have.
pub const MAX_GATHERS: usize = 32;
/// Spill slots of the register allocator.
pub const SPILL: usize = GATHER + 4 * MAX_GATHERS;
/// Number of spill slots.
pub const SPILL_SLOTS: usize = 192;
/// Scratch: the batch kernel's saved branch condition (a lane mask) while
/// it runs a region under it.
pub const PREDICATE: usize = SPILL + SPILL_SLOTS;
/// Scratch: the batch kernel's lane masks (saved conditions and the lanes
/// still running a region) where its flow nests or ends in some lanes only.
pub const MASKS: usize = PREDICATE + 1;
/// Number of lane-mask rows.
pub const MASK_ROWS: usize = 16;
/// Scratch: the batch kernel's hoisted values (computed from uniforms only,
/// once per call).
pub const HOIST: usize = MASKS + MASK_ROWS;
/// Number of hoisted-value rows.
pub const HOIST_ROWS: usize = 256;
/// Scratch: under `StatePolicy::Carry`, the vertex kernel's value of each
/// output row some paths leave alone as the last vertex so far left it
/// (`plan::Step::Fill`): scalar `j` (4 bytes each, from this row's start,
/// in the first register file of a pass) for row `OUTPUT + j`.
pub const CARRIED: usize = HOIST + HOIST_ROWS;
/// Rows of carried values (64 scalars at 4 lanes, more at wider widths).
pub const CARRIED_ROWS: usize = 16;
/// Scratch: lane 0 not zero while the vertex kernel runs a
/// `StatePolicy::Carry` batch (its `plan::Step::Fill`s run, and its last
/// pass again with the stores its loop leaves out, `codegen::dead`; not
/// under `Reset`).
pub const CARRYING: usize = CARRIED + CARRIED_ROWS;
/// Rows in all.
pub const ROWS: usize = CARRYING + 1;

/// Byte offset, from row [`CARRIED`]'s start, of the carried value of output
/// row `row`.
pub const fn carried_offset(row: usize) -> i32 {
    (4 * (row - OUTPUT)) as i32
}

/// Header bytes before row 0.
pub const HEADER_BYTES: usize = 64;
/// Header: the host's floating-point control word, saved while generated code runs.
pub const SAVED_FP: i32 = 0;
/// Header: a `loop` exit's count (lane 0).
pub const LOOP_COUNT: i32 = 8;
/// Header: a `loop` exit's increment (lane 0).
pub const LOOP_INCREMENT: i32 = 12;
/// Header: the vertex batch kernel's output mask (bit `n`: store `o{n}`).
pub const OUTPUT_MASK: i32 = 16;
/// Header: the vertex batch kernel's starting state (a `*const UnitState`).
pub const START_STATE: i32 = 24;
/// Header: the x86-64 vertex kernel's operand bounds of the group in this
/// file (0: every float24 input its fused conversion loaded, and every
/// hoisted product operand of the call, is zero or of magnitude within
/// the bounds of `jit::x64::wide`'s bounded products; else not 0).
pub const OPERANDS_UNBOUNDED: i32 = 32;
/// Header (first file of a call only): the hoisted half of
/// [`OPERANDS_UNBOUNDED`], computed once per call.
pub const HOISTED_UNBOUNDED: i32 = 36;

/// Bytes one register file of `lanes` lanes takes in a buffer of several
/// (the vertex batch kernel shades two groups at once, each in its own file:
/// the next file starts this many bytes on, 64-byte aligned).
pub const fn file_bytes(lanes: usize) -> usize {
    (HEADER_BYTES + ROWS * 4 * lanes).next_multiple_of(64)
}

/// Byte offset of row `row` with `lanes` lanes per row.
pub const fn row_offset(row: usize, lanes: usize) -> i32 {
    (HEADER_BYTES + row * 4 * lanes) as i32
}
