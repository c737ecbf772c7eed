//! The constant pool at the end of every compiled shader (16-byte aligned
//! vectors addressed RIP-relative as `[->name]`).

use super::Asm;
use crate::arith::{
    EX2_COEFFS, EX2_INPUT_MAX, EX2_INPUT_MIN, LG2_COEFFS, LG2_SQRT2, LITP_CLAMP, f24,
};
use dynasmrt::{DynasmApi, DynasmLabelApi, dynasm};

macro_rules! splat {
    ($ops:expr, $name:tt, $bits:expr) => {{
        let b: u32 = $bits;
        dynasm!($ops ; .arch x64 ; ->$name: ; .u32 b, b, b, b);
    }};
}

macro_rules! splat8 {
    ($ops:expr, $name:tt, $bits:expr) => {{
        let b: u32 = $bits;
        dynasm!($ops ; .arch x64 ; ->$name: ; .u32 b, b, b, b, b, b, b, b);
    }};
}

/// Emits every constant the emitters reference.
pub fn emit(ops: &mut Asm) {
    dynasm!(ops ; .arch x64 ; .align 16);
    splat!(ops, sign_mask, 0x8000_0000);
    splat!(ops, abs_mask, 0x7FFF_FFFF);
    splat!(ops, ones, 1.0f32.to_bits());
    splat!(ops, zero, 0);
    splat!(ops, half, 0.5f32.to_bits());
    splat!(ops, inf, 0x7F80_0000);
    splat!(ops, neg_inf, 0xFF80_0000);
    splat!(ops, canon_nan, 0x7FC0_0000);
    // float24
    splat!(ops, f24_mant_mask, 0xFFFF_FF80);
    splat!(ops, f24_min_normal, 0x2080_0000);
    splat!(ops, f24_min_normal_m1, 0x207F_FFFF);
    splat!(ops, f24_overflow_m1, 0x5F7F_FFFF);
    splat!(ops, f24_sub_scale, f24::SUBNORMAL_SCALE.to_bits()); // 2^78
    splat!(ops, f24_sub_quantum, f24::SUBNORMAL_QUANTUM.to_bits()); // 2^-78
    // mova
    splat!(ops, two31, 0x4F00_0000);
    splat!(ops, int_max, 0x7FFF_FFFF);
    // litp
    splat!(ops, litp_max, LITP_CLAMP.to_bits());
    dynasm!(ops ; .arch x64 ; ->litp_min: ; .u32 0, (-LITP_CLAMP).to_bits(), 0, 0);
    // ex2
    splat!(ops, ex2_min, EX2_INPUT_MIN.to_bits());
    splat!(ops, ex2_max, EX2_INPUT_MAX.to_bits());
    splat!(ops, ex2_c0, EX2_COEFFS[0].to_bits());
    splat!(ops, ex2_c1, EX2_COEFFS[1].to_bits());
    splat!(ops, ex2_c2, EX2_COEFFS[2].to_bits());
    splat!(ops, ex2_c3, EX2_COEFFS[3].to_bits());
    splat!(ops, ex2_c4, EX2_COEFFS[4].to_bits());
    splat!(ops, ex2_c5, EX2_COEFFS[5].to_bits());
    splat!(ops, ex2_c6, EX2_COEFFS[6].to_bits());
    splat!(ops, i127, 127);
    // lg2
    splat!(ops, i150, 150);
    splat!(ops, i255, 255);
    splat!(ops, f32_min_normal, 0x0080_0000);
    splat!(ops, two23, 0x4B00_0000);
    splat!(ops, mant23, 0x007F_FFFF);
    splat!(ops, one_bits, 0x3F80_0000);
    splat!(ops, sqrt2, LG2_SQRT2.to_bits());
    splat!(ops, lg2_c0, LG2_COEFFS[0].to_bits());
    splat!(ops, lg2_c1, LG2_COEFFS[1].to_bits());
    splat!(ops, lg2_c2, LG2_COEFFS[2].to_bits());
    splat!(ops, lg2_c3, LG2_COEFFS[3].to_bits());
    // 256-bit copies for the AVX2 entry conversion.
    dynasm!(ops ; .arch x64 ; .align 32);
    splat8!(ops, abs_mask8, 0x7FFF_FFFF);
    splat8!(ops, sign_mask8, 0x8000_0000);
    splat8!(ops, inf8, 0x7F80_0000);
    splat8!(ops, canon_nan8, 0x7FC0_0000);
    splat8!(ops, f24_mant_mask8, 0xFFFF_FF80);
    splat8!(ops, f24_min_normal_m1_8, 0x207F_FFFF);
    splat8!(ops, f24_overflow_m1_8, 0x5F7F_FFFF);
    splat8!(ops, f24_sub_scale8, f24::SUBNORMAL_SCALE.to_bits());
    splat8!(ops, f24_sub_quantum8, f24::SUBNORMAL_QUANTUM.to_bits());
    // MXCSR: round to nearest, all exceptions masked, no FTZ/DAZ.
    dynasm!(ops ; .arch x64 ; ->mxcsr_default: ; .u32 0x1F80);
}
