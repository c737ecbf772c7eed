//! The JIT runs in the default floating-point environment (round to nearest, no
//! flush-to-zero, no denormals-are-zero) whatever the caller set, and gives the
//! caller's environment back afterwards.

mod common;

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::common::Case;
    use pica_jit::{EngineKind, Precision};
    use std::arch::asm;

    fn read_mxcsr() -> u32 {
        let mut csr = 0u32;
        // SAFETY: stmxcsr only stores the control register to the given address.
        unsafe { asm!("stmxcsr [{}]", in(reg) &mut csr, options(nostack)) };
        csr
    }

    fn write_mxcsr(csr: u32) {
        // SAFETY: ldmxcsr with all exceptions masked only changes rounding and
        // subnormal handling of later SSE operations; the caller restores it.
        unsafe { asm!("ldmxcsr [{}]", in(reg) &csr, options(nostack)) };
    }

    #[test]
    fn jit_ignores_the_callers_ftz_daz_and_restores_them() {
        // 2^-70 * 2^-70 = 2^-140: a subnormal result in F32 (FTZ would give 0),
        // and a subnormal input 2^-130 added to 0 (DAZ would give 0).
        let src = "mul o0, v0, v1\n add o1, v2, v3\n end";
        let case = Case::new(src)
            .precision(Precision::F32)
            .input(0, [2f32.powi(-70); 4])
            .input(1, [2f32.powi(-70); 4])
            .input(2, [f32::from_bits(1 << 19); 4])
            .input(3, [0.0; 4]);
        let expected = case.run();
        // 2^-140 and 2^-130 as f32 subnormals: 2^9 and 2^19 times 2^-149.
        assert_eq!(expected.out_bits(0)[0], 1 << 9);
        assert_eq!(expected.out_bits(1)[0], 1 << 19);
        if !EngineKind::available().contains(&EngineKind::Jit) {
            return;
        }

        const FTZ_DAZ: u32 = 0x1F80 | 0x8000 | 0x0040;
        let saved = read_mxcsr();
        write_mxcsr(FTZ_DAZ);
        let jit = case.run_on(EngineKind::Jit);
        let during = read_mxcsr();
        write_mxcsr(saved);

        assert_eq!(during, FTZ_DAZ, "the caller's MXCSR is restored");
        assert_eq!(jit.out_bits(0), expected.out_bits(0));
        assert_eq!(jit.out_bits(1), expected.out_bits(1));
    }
}
