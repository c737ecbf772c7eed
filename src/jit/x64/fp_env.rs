//! Entering the fixed floating-point environment (`docs/semantics.md` §9.6)
//! without reading MXCSR on every call.
//!
//! `stmxcsr` is slow on some CPUs (about 3 ns per instruction on the Zen 5
//! this project measures on, more than a whole small shader), while what the
//! generated code depends on is only what MXCSR does to results: rounding
//! control, flush-to-zero and denormals-are-zero. One vector addition whose
//! four lanes each come out differently under a non-default mode (two
//! above-halfway roundings of opposite signs, a subnormal sum) tells whether
//! those are the defaults. Only when they are not is MXCSR saved, set and
//! restored on exit. The exception masks are not probed: like Rust, the
//! generated code requires them masked (the default).

use super::Asm;
use dynasmrt::{DynamicLabel, DynasmApi, DynasmLabelApi, dynasm};

/// MXCSR: round to nearest, all exceptions masked, no FTZ/DAZ.
pub(crate) const DEFAULT_MXCSR: u32 = 0x1F80;

/// Above half an ulp of 1.0: round-to-nearest rounds 1 + this up.
const ABOVE_HALF_ULP: f32 = 1.0 / 16_777_216.0 + 1.0 / 1_073_741_824.0;

/// The probe's addends and the sums the default environment gives.
const PROBE_A: [u32; 4] = [0x3F80_0000, 0xBF80_0000, 1, 0];
const PROBE_B: [u32; 4] = [ABOVE_HALF_ULP.to_bits(), (-ABOVE_HALF_ULP).to_bits(), 1, 0];
/// 1 + 2^-23 (toward zero or −∞ gives 1), −(1 + 2^-23) (toward zero or +∞
/// gives −1), 2^-148 (FTZ or DAZ gives 0), 0.
const PROBE_SUM: [u32; 4] = [0x3F80_0001, 0xBF80_0001, 2, 0];

/// The constants [`enter`] reads, emitted by [`Constants::emit`].
#[derive(Clone, Copy)]
pub(crate) struct Constants {
    addend_a: DynamicLabel,
    addend_b: DynamicLabel,
    sum: DynamicLabel,
    default: DynamicLabel,
}

impl Constants {
    pub(crate) fn new(ops: &mut Asm) -> Constants {
        Constants {
            addend_a: ops.new_dynamic_label(),
            addend_b: ops.new_dynamic_label(),
            sum: ops.new_dynamic_label(),
            default: ops.new_dynamic_label(),
        }
    }

    /// Emits the constants (after the code).
    pub(crate) fn emit(self, ops: &mut Asm) {
        for (label, words) in [
            (self.addend_a, PROBE_A),
            (self.addend_b, PROBE_B),
            (self.sum, PROBE_SUM),
        ] {
            dynasm!(ops
                ; .arch x64
                ; .align 16
                ; =>label
                ; .u32 words[0], words[1], words[2], words[3]
            );
        }
        dynasm!(ops ; .arch x64 ; =>self.default ; .u32 DEFAULT_MXCSR);
    }
}

/// The probe's vector addition and comparison with the default sums; sets
/// ZF when the environment gives the default results. Clobbers `xmm0`.
fn probe_sum(ops: &mut Asm, constants: Constants, vex: bool) {
    let Constants {
        addend_a,
        addend_b,
        sum,
        ..
    } = constants;
    if vex {
        dynasm!(ops
            ; .arch x64
            ; vmovaps xmm0, [=>addend_a]
            ; vaddps xmm0, xmm0, [=>addend_b]
            ; vxorps xmm0, xmm0, [=>sum]
            ; vptest xmm0, xmm0
        );
    } else {
        dynasm!(ops
            ; .arch x64
            ; movaps xmm0, [=>addend_a]
            ; addps xmm0, [=>addend_b]
            ; xorps xmm0, [=>sum]
            ; ptest xmm0, xmm0
        );
    }
}

/// The single-vertex entry: falls through to the function's body
/// (`->body`) in the default environment, else jumps to
/// [`switch_and_call`]'s wrapper. Nothing is saved or restored on the
/// common path. Clobbers `xmm0`; `vex` as for [`enter`].
pub(crate) fn probe(ops: &mut Asm, constants: Constants, vex: bool) {
    probe_sum(ops, constants, vex);
    dynasm!(ops ; .arch x64 ; jnz ->fp_switch);
}

/// The wrapper [`probe`] jumps to in a non-default environment: saves MXCSR
/// on the stack, loads the default, calls the body (`->body`, which sees
/// the stack and argument registers as the caller left them) and restores
/// the saved MXCSR before returning the body's result.
pub(crate) fn switch_and_call(ops: &mut Asm, constants: Constants) {
    dynasm!(ops
        ; .arch x64
        ; ->fp_switch:
        // 8 bytes keep the call's stack 16-byte aligned, as the caller's was.
        ; sub rsp, 8
        ; stmxcsr [rsp]
        ; ldmxcsr [=>constants.default]
        ; call ->body
        ; ldmxcsr [rsp]
        ; add rsp, 8
        ; ret
    );
}

/// Emits the entry into the default environment: the dword at
/// `[base + saved]` becomes the MXCSR to restore on exit, which is
/// [`DEFAULT_MXCSR`] (nothing to restore) when the probe finds the default
/// rounding and no FTZ/DAZ. Clobbers `xmm0`; `vex` code uses VEX encodings
/// (no SSE/AVX transition in code that uses AVX).
pub(crate) fn enter(ops: &mut Asm, constants: Constants, vex: bool, base: u8, saved: i32) {
    probe_sum(ops, constants, vex);
    dynasm!(ops
        ; .arch x64
        ; jnz >switch
        ; mov DWORD [Rq(base) + saved], DEFAULT_MXCSR as i32
        ; jmp >entered
        ; switch:
        ; stmxcsr [Rq(base) + saved]
        ; ldmxcsr [=>constants.default]
        ; entered:
    );
}

/// Emits the exit: restores the MXCSR [`enter`] saved unless it is the
/// default.
pub(crate) fn leave(ops: &mut Asm, base: u8, saved: i32) {
    dynasm!(ops
        ; .arch x64
        ; cmp DWORD [Rq(base) + saved], DEFAULT_MXCSR as i32
        ; je >restored
        ; ldmxcsr [Rq(base) + saved]
        ; restored:
    );
}
