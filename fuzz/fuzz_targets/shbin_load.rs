//! SHBIN loader robustness: any byte string parses or fails cleanly; whatever
//! parses can be described, written back and re-parsed to an equal value.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pica_jit::shbin::{ConstantValue, Shbin};

/// `to_bytes` writes every float constant NaN as the float24 NaN `0x7FC000`
/// (keeping the sign), so NaN payloads are not expected to survive.
fn normalise_nans(shbin: &mut Shbin) {
    for dvle in &mut shbin.dvles {
        for constant in &mut dvle.constants {
            if let ConstantValue::Float(v) = &mut constant.value {
                for x in v.iter_mut() {
                    if x.is_nan() {
                        *x = f32::from_bits((x.to_bits() & 0x8000_0000) | 0x7FC0_0000);
                    }
                }
            }
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(mut shbin) = Shbin::parse(data) else {
        return;
    };
    let _ = pica_jit::describe_shbin("fuzz", &shbin);
    shbin
        .validate()
        .unwrap_or_else(|e| panic!("a parsed file does not validate: {e}"));
    let bytes = shbin.to_bytes();
    let mut again =
        Shbin::parse(&bytes).unwrap_or_else(|e| panic!("the written file does not parse: {e}"));
    assert_eq!(again.to_bytes(), bytes, "writing is not idempotent");
    normalise_nans(&mut shbin);
    normalise_nans(&mut again);
    // Compare bit patterns: f32 NaN != NaN.
    assert_eq!(
        format!("{shbin:?}").replace("NaN", "nan"),
        format!("{again:?}").replace("NaN", "nan"),
        "the written file re-parses to something else"
    );
});
