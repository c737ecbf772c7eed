//! Property tests: `Shbin::parse` never panics, and writer output of any
//! valid model parses back to it.

use super::*;
use proptest::prelude::*;

/// Values worth planting in a header or table word.
fn interesting_u32(len: usize) -> impl Strategy<Value = u32> {
    let len = len as u32;
    prop_oneof![
        Just(0u32),
        Just(1),
        Just(0xF),
        Just(0x7F),
        Just(0x80),
        Just(0x1000),
        Just(0x1001),
        Just(len.wrapping_sub(1)),
        Just(len),
        Just(len.wrapping_add(1)),
        Just(0x7FFF_FFFF),
        Just(0x8000_0000),
        Just(u32::MAX - 3),
        Just(u32::MAX),
        any::<u32>(),
    ]
}

#[derive(Debug, Clone)]
enum Mutation {
    Byte(usize, u8),
    Word(usize, u32),
    Truncate(usize),
    Extend(usize),
}

fn mutations(len: usize) -> impl Strategy<Value = Vec<Mutation>> {
    let m = prop_oneof![
        4 => (0..len, any::<u8>()).prop_map(|(i, v)| Mutation::Byte(i, v)),
        4 => (0..len / 4, interesting_u32(len)).prop_map(|(i, v)| Mutation::Word(i * 4, v)),
        1 => (0..len).prop_map(Mutation::Truncate),
        1 => (0..64usize).prop_map(Mutation::Extend),
    ];
    prop::collection::vec(m, 1..6)
}

fn apply(mut b: Vec<u8>, ms: &[Mutation]) -> Vec<u8> {
    for m in ms {
        match *m {
            Mutation::Byte(i, v) => {
                if let Some(x) = b.get_mut(i) {
                    *x = v;
                }
            }
            Mutation::Word(i, v) => {
                if i + 4 <= b.len() {
                    wr32(&mut b, i, v);
                }
            }
            Mutation::Truncate(n) => b.truncate(n),
            Mutation::Extend(n) => b.resize(b.len() + n, 0xA5),
        }
    }
    b
}

/// Parses, and if that succeeds checks the result writes and parses back.
fn parse_and_check(b: &[u8]) {
    if let Ok(s) = Shbin::parse(b) {
        assert!(s.dvlp.code.len() <= crate::isa::MAX_CODE_WORDS);
        assert!(s.dvlp.descriptors.len() <= crate::isa::MAX_DESCRIPTORS);
        for d in &s.dvles {
            assert!((d.main as usize) < s.dvlp.code.len());
            assert!(d.end as usize <= s.dvlp.code.len());
        }
        let again = Shbin::parse(&s.to_bytes()).expect("writer output must load");
        // NaN constants are the only thing that may compare unequal.
        let has_nan =
            s.dvles.iter().flat_map(|d| &d.constants).any(
                |c| matches!(c.value, ConstantValue::Float(v) if v.iter().any(|x| x.is_nan())),
            );
        if !has_nan {
            assert_eq!(again, s);
        }
    }
}

fn float24_value() -> impl Strategy<Value = f32> {
    // Any non-NaN float24 pattern, decoded.
    (0u32..=0xFF_FFFF)
        .prop_filter("not NaN", |b| (b >> 16) & 0x7F != 0x7F || b & 0xFFFF == 0)
        .prop_map(f24_to_f32)
}

fn constant() -> impl Strategy<Value = ConstantEntry> {
    let value = prop_oneof![
        any::<bool>().prop_map(ConstantValue::Bool),
        any::<[u8; 4]>().prop_map(ConstantValue::Int),
        prop::array::uniform4(float24_value()).prop_map(ConstantValue::Float),
    ];
    (any::<u16>(), value).prop_map(|(register, value)| ConstantEntry { register, value })
}

fn dvle(code_len: u32) -> impl Strategy<Value = Dvle> {
    (
        (
            any::<u16>(),
            any::<bool>(),
            any::<u8>(),
            0..code_len,
            0..=code_len,
        ),
        (any::<u16>(), any::<u16>(), any::<[u8; 4]>()),
        prop::collection::vec(constant(), 0..5),
        prop::collection::vec(any::<[u8; 16]>(), 0..3),
        prop::collection::vec(any::<(u16, u16, u16)>(), 0..4),
        prop::collection::vec(
            ("[a-zA-Z_][a-zA-Z0-9_]{0,12}", any::<u16>(), any::<u16>()),
            0..4,
        ),
        prop::collection::vec(any::<u8>(), 0..20),
    )
        .prop_map(
            move |(
                (version, geo, merge_flag, main, end),
                (input_mask, output_mask, gs_mode),
                constants,
                labels,
                outputs,
                uniforms,
                symbols,
            )| {
                let mut d = Dvle {
                    version,
                    kind: if geo {
                        ShaderKind::Geometry
                    } else {
                        ShaderKind::Vertex
                    },
                    merge_flag,
                    main,
                    end,
                    input_mask,
                    output_mask,
                    gs_mode,
                    constants,
                    labels: labels.into_iter().map(|raw| LabelEntry { raw }).collect(),
                    outputs: outputs
                        .into_iter()
                        .map(|(semantic, register, mask)| OutputEntry {
                            semantic,
                            register,
                            mask,
                        })
                        .collect(),
                    uniforms: vec![],
                    symbols,
                };
                for (name, first, last) in uniforms {
                    d.add_uniform(&name, first, last);
                }
                d
            },
        )
}

fn shbin() -> impl Strategy<Value = Shbin> {
    (1u32..40)
        .prop_flat_map(|code_len| {
            (
                any::<u32>(),
                prop::collection::vec(any::<u32>(), code_len as usize),
                prop::collection::vec(any::<(u32, u32)>(), 0..8),
                prop::collection::vec(dvle(code_len), 0..4),
            )
        })
        .prop_map(|(version, code, descs, dvles)| Shbin {
            dvlp: Dvlp {
                version,
                code,
                descriptors: descs.iter().map(|d| d.0).collect(),
                descriptor_extras: descs.iter().map(|d| d.1).collect(),
            },
            dvles,
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn random_bytes_never_panic(b in prop::collection::vec(any::<u8>(), 0..600)) {
        parse_and_check(&b);
    }

    #[test]
    fn random_bytes_behind_valid_magic_never_panic(
        count in 0u32..4,
        rest in prop::collection::vec(any::<u8>(), 0..600),
    ) {
        let mut b = b"DVLB".to_vec();
        b.extend_from_slice(&count.to_le_bytes());
        b.extend_from_slice(&rest);
        parse_and_check(&b);
    }

    #[test]
    fn mutated_writer_output_never_panics(ms in mutations(sample().to_bytes().len())) {
        parse_and_check(&apply(sample().to_bytes(), &ms));
    }

    #[test]
    fn valid_models_round_trip(s in shbin()) {
        prop_assert!(s.validate().is_ok());
        let b = s.to_bytes();
        prop_assert_eq!(b.len() % 4, 0);
        let p = Shbin::parse(&b).unwrap();
        prop_assert_eq!(&p, &s);
        prop_assert_eq!(p.to_bytes(), b);
    }

    #[test]
    fn mutated_random_models_never_panic(s in shbin(), seed in prop::collection::vec((any::<prop::sample::Index>(), any::<u32>()), 1..6)) {
        let mut b = s.to_bytes();
        for (i, v) in seed {
            let at = i.index(b.len() / 4) * 4;
            wr32(&mut b, at, v);
        }
        parse_and_check(&b);
    }
}

#[test]
fn mutated_corpus_files_never_panic() {
    let files = corpus_files();
    if files.is_empty() {
        super::corpus_absent("mutated_corpus_files_never_panic");
        return;
    }
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig::with_cases(64));
    for (name, bytes) in files {
        let len = bytes.len();
        runner
            .run(&mutations(len), |ms| {
                parse_and_check(&apply(bytes.clone(), &ms));
                Ok(())
            })
            .unwrap_or_else(|e| panic!("{name}: {e}"));
    }
}
