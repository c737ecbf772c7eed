//! Writer output, round trips and the small helpers of the model.

use super::*;

#[test]
fn sample_round_trips() {
    let s = sample();
    s.validate().unwrap();
    let b = s.to_bytes();
    let p = Shbin::parse(&b).unwrap();
    assert_eq!(p, s);
    // Writing what was parsed gives the same bytes again.
    assert_eq!(p.to_bytes(), b);
}

#[test]
fn empty_shbin_round_trips() {
    let s = Shbin::default();
    s.validate().unwrap();
    let b = s.to_bytes();
    assert_eq!(b.len(), 8 + 0x28);
    assert_eq!(&b[..8], b"DVLB\0\0\0\0");
    assert_eq!(&b[8..12], b"DVLP");
    assert_eq!(Shbin::parse(&b).unwrap(), s);
}

#[test]
fn old_style_fields_round_trip() {
    // Version 0 DVLEs, extra word 0xF everywhere, nonzero merge flag.
    let mut s = sample();
    s.dvlp.version = 7;
    s.dvlp.descriptor_extras = vec![0xF; 3];
    for d in &mut s.dvles {
        d.version = 0;
        d.merge_flag = 0xA5;
    }
    assert_eq!(Shbin::parse(&s.to_bytes()).unwrap(), s);
}

#[test]
fn writer_layout() {
    let s = sample();
    let b = s.to_bytes();
    assert_eq!(b.len() % 4, 0);
    assert_eq!(&b[0..4], b"DVLB");
    assert_eq!(rd32(&b, 4), 2);
    // DVLP right after the offset table; code at +0x28, descriptors after it.
    let p = 16;
    assert_eq!(dvlp_at(&b), p);
    assert_eq!(&b[p..p + 4], b"DVLP");
    assert_eq!(rd32(&b, p + 0x04), 0);
    assert_eq!(rd32(&b, p + 0x08), 0x28);
    assert_eq!(rd32(&b, p + 0x0C), 9);
    assert_eq!(rd32(&b, p + 0x10), 0x28 + 36);
    assert_eq!(rd32(&b, p + 0x14), 3);
    assert_eq!(rd32(&b, p + 0x18), 0x28 + 36 + 24);
    for field in [0x1C, 0x20, 0x24] {
        assert_eq!(rd32(&b, p + field), 0);
    }
    assert_eq!(rd32(&b, p + 0x28), 0x0800_0000);
    let desc = p + 0x28 + 36;
    let entries: Vec<_> = (0..6).map(|i| rd32(&b, desc + 4 * i)).collect();
    assert_eq!(entries, [0x36F, 0, 0x1B, 0xF, 0x8000_036F, 0]);

    // First DVLE right after the DVLP; tables in order after the header.
    let d = dvle_at(&b, 0);
    assert_eq!(d, desc + 24);
    assert_eq!(&b[d..d + 4], b"DVLE");
    assert_eq!(u16::from_le_bytes([b[d + 4], b[d + 5]]), 0x1002);
    assert_eq!((b[d + 6], b[d + 7]), (0, 0));
    assert_eq!((rd32(&b, d + 0x08), rd32(&b, d + 0x0C)), (0, 5));
    assert_eq!(rd32(&b, d + 0x10), 0x0003_0007);
    let tables: Vec<_> = (0..5)
        .map(|i| (rd32(&b, d + 0x18 + 8 * i), rd32(&b, d + 0x1C + 8 * i)))
        .collect();
    let symbols = b"main\0endmain\0projection\0inPos\0loopParams\0flags\0";
    assert_eq!(
        tables,
        [
            (0x40, 4),
            (0x40 + 80, 2),
            (0x40 + 80 + 32, 2),
            (0x40 + 80 + 32 + 16, 4),
            (0x40 + 80 + 32 + 16 + 32, symbols.len() as u32),
        ]
    );
    // Constants: float c95, int i1, bool b3 = 1, bool b4 = 0.
    let c = d + 0x40;
    let words: Vec<_> = (0..20).map(|i| rd32(&b, c + 4 * i)).collect();
    assert_eq!(
        words,
        [
            0x005F_0002,
            0,
            0x3F_0000,
            0xBF_0000,
            0x3E_0000,
            0x0001_0001,
            0xFF03_0201,
            0,
            0,
            0,
            0x0003_0000,
            1,
            0,
            0,
            0,
            0x0004_0000,
            0,
            0,
            0,
            0,
        ]
    );
    // Outputs: semantic, register, mask, zero padding.
    let o = d + 0x40 + 80 + 32;
    assert_eq!(&b[o..o + 8], &[0, 0, 0, 0, 0xF, 0, 0, 0]);
    // Uniforms point at their names.
    let u = o + 16;
    assert_eq!(rd32(&b, u), 13);
    assert_eq!(rd32(&b, u + 4), 0x0013_0010);
    let sym = u + 32;
    assert_eq!(&b[sym..sym + symbols.len()], symbols);

    // The second DVLE starts 4-aligned after the padded symbol table.
    let d1 = dvle_at(&b, 1);
    assert_eq!(d1, (sym + symbols.len() + 3) & !3);
    assert_eq!(
        &b[sym + symbols.len()..d1],
        &[0u8; 3][..d1 - sym - symbols.len()]
    );
    assert_eq!((b[d1 + 6], b[d1 + 7]), (1, 1));
    assert_eq!(&b[d1 + 0x14..d1 + 0x18], &[1, 0x40, 3, 0]);
    // Its float constant: smallest subnormal, -2, 1.5, +inf.
    let words: Vec<_> = (0..5).map(|i| rd32(&b, d1 + 0x40 + 4 * i)).collect();
    assert_eq!(
        words,
        [0x0050_0002, 0x00_0001, 0xC0_0000, 0x3F_8000, 0x7F_0000]
    );
}

#[test]
fn writer_appends_missing_uniform_names_once() {
    let mut s = sample();
    let d = &mut s.dvles[1];
    d.uniforms.push(UniformEntry {
        name: "scale".into(),
        first: 0x10,
        last: 0x10,
    });
    d.uniforms.push(UniformEntry {
        name: "scale".into(),
        first: 0x11,
        last: 0x11,
    });
    let p = Shbin::parse(&s.to_bytes()).unwrap();
    assert_eq!(p.dvles[1].uniforms, s.dvles[1].uniforms);
    assert_eq!(p.dvles[1].symbols, b"scale\0");
    // Once the names are in the table the round trip is exact.
    assert_eq!(Shbin::parse(&p.to_bytes()).unwrap(), p);
}

#[test]
fn writer_separates_appended_names_from_unterminated_tail() {
    let mut d = Dvle {
        end: 1,
        symbols: b"tail".to_vec(),
        ..Dvle::default()
    };
    d.add_uniform("u", 0x10, 0x10);
    assert_eq!(d.symbols, b"tail\0u\0");
    assert_eq!(d.symbol(5), Some("u"));
    assert_eq!(d.symbol(0), Some("tail"));
}

#[test]
fn writer_reuses_name_suffixes() {
    let mut d = Dvle {
        end: 1,
        symbols: b"endmain\0".to_vec(),
        ..Dvle::default()
    };
    d.add_uniform("main", 0x10, 0x10);
    d.add_uniform("", 0x11, 0x11);
    assert_eq!(d.symbols, b"endmain\0");
    let s = Shbin {
        dvlp: Dvlp {
            code: vec![0],
            ..Dvlp::default()
        },
        dvles: vec![d],
    };
    let b = s.to_bytes();
    let d = dvle_at(&b, 0);
    let u = d + rd32(&b, d + 0x30) as usize;
    assert_eq!(rd32(&b, u), 3); // "main" found inside "endmain"
    assert_eq!(rd32(&b, u + 8), 7); // "" is the final NUL
    assert_eq!(Shbin::parse(&b).unwrap(), s);
}

#[test]
fn names_with_nul_are_cut_by_the_writer_and_rejected_by_validate() {
    let mut s = sample();
    s.dvles[1].uniforms.push(UniformEntry {
        name: "a\0b".into(),
        first: 0x10,
        last: 0x10,
    });
    assert_eq!(
        s.validate(),
        Err(ShbinError::NameContainsNul {
            dvle: 1,
            index: 0,
            name: "a\0b".into()
        })
    );
    let p = Shbin::parse(&s.to_bytes()).unwrap();
    assert_eq!(p.dvles[1].uniforms[0].name, "a");
}

#[test]
fn validate_reports_what_the_parser_would_reject() {
    let mut s = sample();
    s.dvlp.code = vec![0; 4097];
    assert_eq!(
        s.validate(),
        Err(ShbinError::TooMuchCode {
            offset: 16,
            words: 4097,
            max: 4096
        })
    );
    assert!(matches!(
        Shbin::parse(&s.to_bytes()),
        Err(ShbinError::TooMuchCode { words: 4097, .. })
    ));

    let mut s = sample();
    s.dvlp.descriptors = vec![0; 129];
    s.dvlp.descriptor_extras = vec![0; 129];
    assert!(matches!(
        s.validate(),
        Err(ShbinError::TooManyDescriptors { count: 129, .. })
    ));

    let mut s = sample();
    s.dvlp.descriptor_extras.pop();
    assert_eq!(
        s.validate(),
        Err(ShbinError::DescriptorExtrasMismatch {
            descriptors: 3,
            extras: 2
        })
    );
    // The writer fills the missing extra with 0.
    let p = Shbin::parse(&s.to_bytes()).unwrap();
    assert_eq!(p.dvlp.descriptor_extras, [0, 0xF, 0]);

    let mut s = sample();
    s.dvles[1].main = 9;
    assert_eq!(
        s.validate(),
        Err(ShbinError::EntryOutOfRange {
            dvle: 1,
            field: EntryField::Main,
            value: 9,
            code_words: 9
        })
    );
    let mut s = sample();
    s.dvles[0].end = 10;
    assert!(matches!(
        s.validate(),
        Err(ShbinError::EntryOutOfRange {
            dvle: 0,
            field: EntryField::End,
            ..
        })
    ));
}

#[test]
fn float_constants_are_encoded_with_truncation_and_canonical_nan() {
    let mut s = sample();
    s.dvles[1].constants[0].value = ConstantValue::Float([0.1, f32::NAN, -f32::NAN, 1e30]);
    let b = s.to_bytes();
    let d = dvle_at(&b, 1);
    let words: Vec<_> = (1..5).map(|i| rd32(&b, d + 0x40 + 4 * i)).collect();
    assert_eq!(words, [0x3B_9999, 0x7F_C000, 0xFF_C000, 0x7F_0000]);
    let p = Shbin::parse(&b).unwrap();
    let ConstantValue::Float(v) = p.dvles[1].constants[0].value else {
        panic!("not a float constant");
    };
    assert_eq!(v[0], f24_to_f32(0x3B_9999));
    assert!(v[0] < 0.1);
    assert!(v[1].is_nan() && v[1].is_sign_positive());
    assert!(v[2].is_nan() && v[2].is_sign_negative());
    assert_eq!(v[3], f32::INFINITY);
}

#[test]
fn uniform_register_numbering() {
    use UniformRegister::*;
    let cases = [
        (0x00, Some(Input(0))),
        (0x0F, Some(Input(15))),
        (0x10, Some(Float(0))),
        (0x6F, Some(Float(95))),
        (0x70, Some(Int(0))),
        (0x73, Some(Int(3))),
        (0x74, None),
        (0x77, None),
        (0x78, Some(Bool(0))),
        (0x87, Some(Bool(15))),
        (0x88, None),
        (0xFFFF, None),
    ];
    for (raw, reg) in cases {
        assert_eq!(UniformRegister::from_raw(raw), reg, "{raw:#x}");
    }
    for raw in 0..=0xFFFFu16 {
        if let Some(r) = UniformRegister::from_raw(raw) {
            assert_eq!(r.raw(), raw);
        }
    }
    let u = UniformEntry {
        name: "m".into(),
        first: 0x14,
        last: 0x17,
    };
    assert_eq!(u.first_register(), Some(Float(4)));
    assert_eq!(u.last_register(), Some(Float(7)));
}

#[test]
fn semantic_names() {
    let names: Vec<_> = (0..10).map(Dvle::semantic_name).collect();
    assert_eq!(
        names,
        [
            "position",
            "normalquat",
            "color",
            "texcoord0",
            "texcoord0w",
            "texcoord1",
            "texcoord2",
            "unused",
            "view",
            "unknown"
        ]
    );
    let o = OutputEntry {
        semantic: 5,
        register: 2,
        mask: 3,
    };
    assert_eq!(o.semantic_name(), "texcoord1");
}

#[test]
fn label_accessors_and_names() {
    let s = sample();
    let d = &s.dvles[0];
    let l = &d.labels[1];
    assert_eq!(
        (l.id(), l.location(), l.unknown(), l.symbol_offset()),
        (1, 5, 0, 5)
    );
    assert_eq!(d.label_name(l), Some("endmain"));
    assert_eq!(d.label_name(&d.labels[0]), Some("main"));
    assert_eq!(d.symbol(13), Some("projection"));
    assert_eq!(d.symbol(u32::MAX), None);
    assert_eq!(d.symbol(d.symbols.len() as u32), None);
}

#[test]
fn shader_kind_raw_values() {
    assert_eq!(ShaderKind::from_raw(0), Some(ShaderKind::Vertex));
    assert_eq!(ShaderKind::from_raw(1), Some(ShaderKind::Geometry));
    assert_eq!(ShaderKind::from_raw(2), None);
    assert_eq!(ShaderKind::Geometry.raw(), 1);
}

#[test]
fn corpus_files_round_trip_if_present() {
    let files = corpus_files();
    if files.is_empty() {
        super::corpus_absent("corpus_files_round_trip_if_present");
        return;
    }
    let mut identical = 0;
    for (name, bytes) in files {
        let s = Shbin::parse(&bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
        s.validate().unwrap_or_else(|e| panic!("{name}: {e}"));
        let written = s.to_bytes();
        assert_eq!(written.len() % 4, 0, "{name}");
        assert_eq!(Shbin::parse(&written).unwrap(), s, "{name}");
        // Files from current picasso (DVLE version 0x1002) use exactly the
        // writer's layout, so they are reproduced byte for byte, up to
        // trailing zero padding (one file carries an extra zero byte).
        if s.dvles.iter().all(|d| d.version == 0x1002) {
            let n = written.len().min(bytes.len());
            assert_eq!(written[..n], bytes[..n], "{name}");
            assert!(
                written[n..].iter().chain(&bytes[n..]).all(|&b| b == 0),
                "{name}"
            );
            identical += 1;
        }
    }
    assert!(
        identical >= 10,
        "only {identical} corpus files are byte-identical"
    );
}
