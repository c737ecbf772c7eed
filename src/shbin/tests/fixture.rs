//! The parser against a hand-assembled file (built without the writer), in
//! the layout older picasso used: DVLE header between the DVLP header and the
//! code, version 0, descriptor extras of 0xF, a label table and no padding
//! at the end.

use super::*;

fn w32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}

fn w16(out: &mut Vec<u8>, v: u16) {
    out.extend_from_slice(&v.to_le_bytes());
}

/// DVLB(0x00) | DVLP header(0x0C) | DVLE header(0x34) | code(0x74, 3 words)
/// | descriptors(0x80, 2) | constants | labels | outputs | uniforms | symbols.
fn old_layout() -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(b"DVLB");
    w32(&mut b, 1);
    w32(&mut b, 0x34);
    // DVLP at 0x0C; code at +0x68 (0x74), descriptors at +0x74 (0x80).
    b.extend_from_slice(b"DVLP");
    w32(&mut b, 0);
    w32(&mut b, 0x68);
    w32(&mut b, 3);
    w32(&mut b, 0x74);
    w32(&mut b, 2);
    w32(&mut b, 0x84); // filename table offset: ignored
    w32(&mut b, 0);
    w32(&mut b, 0);
    w32(&mut b, 0);
    assert_eq!(b.len(), 0x34);
    // DVLE at 0x34; its tables start at 0x90 = DVLE+0x5C.
    b.extend_from_slice(b"DVLE");
    w16(&mut b, 0); // version 0
    b.push(0); // vertex
    b.push(0);
    w32(&mut b, 0); // main
    w32(&mut b, 3); // end
    w16(&mut b, 0);
    w16(&mut b, 0);
    b.extend_from_slice(&[0; 4]);
    let consts = 0x5C;
    let labels = consts + 3 * 20;
    let outputs = labels + 2 * 16;
    let uniforms = outputs + 8;
    let symbols = uniforms + 2 * 8;
    for (off, count) in [
        (consts, 3),
        (labels, 2),
        (outputs, 1),
        (uniforms, 2),
        (symbols, 23),
    ] {
        w32(&mut b, off);
        w32(&mut b, count);
    }
    assert_eq!(b.len(), 0x74);
    // Code.
    for w in [0x4C00_0000u32, 0x2200_0000, 0x8800_0000] {
        w32(&mut b, w);
    }
    // Descriptors with extra word 0xF.
    for d in [0x0000_036Fu32, 0x0000_1B6C] {
        w32(&mut b, d);
        w32(&mut b, 0xF);
    }
    assert_eq!(b.len(), 0x34 + consts as usize);
    // Constants: float c20 = (0, 0, 0, 1), int i2 = (16, 0, 1, 0) with junk
    // in the unused data bytes, bool b5 = 2 (nonzero: true).
    w16(&mut b, 2);
    w16(&mut b, 20);
    for f in [0u32, 0, 0, 0x3F_0000] {
        w32(&mut b, f);
    }
    w16(&mut b, 1);
    w16(&mut b, 2);
    b.extend_from_slice(&[16, 0, 1, 0]);
    b.extend_from_slice(&[0xAA; 12]);
    w16(&mut b, 0);
    w16(&mut b, 5);
    w32(&mut b, 2);
    b.extend_from_slice(&[0; 12]);
    // Labels: (id, location, 0, name offset).
    for (id, loc, name) in [(0u32, 0u32, 0x0Eu32), (1, 3, 0x13)] {
        w32(&mut b, id);
        w32(&mut b, loc);
        w32(&mut b, 0);
        w32(&mut b, name);
    }
    // Output: color in o1, mask 0 (as version-0 files have it).
    for h in [2u16, 1, 0, 0] {
        w16(&mut b, h);
    }
    // Uniforms: "projection" c0-c3, "mv" b0.
    w32(&mut b, 0);
    w16(&mut b, 0x10);
    w16(&mut b, 0x13);
    w32(&mut b, 0x0B);
    w16(&mut b, 0x78);
    w16(&mut b, 0x78);
    // Symbols: 23 bytes; the file ends right after them (unpadded).
    b.extend_from_slice(b"projection\0mv\0main\0end\0");
    b
}

#[test]
fn fixture_is_self_consistent() {
    let b = old_layout();
    assert_eq!(b.len(), 0x34 + 0x5C + 60 + 32 + 8 + 16 + 23);
    assert_ne!(b.len() % 4, 0);
    assert_eq!(required_len(&b), b.len());
}

#[test]
fn parses_old_layout_fixture() {
    let b = old_layout();
    let s = Shbin::parse(&b).unwrap();
    assert_eq!(s.dvlp.version, 0);
    assert_eq!(s.dvlp.code, [0x4C00_0000, 0x2200_0000, 0x8800_0000]);
    assert_eq!(s.dvlp.descriptors, [0x036F, 0x1B6C]);
    assert_eq!(s.dvlp.descriptor_extras, [0xF, 0xF]);
    assert_eq!(s.dvles.len(), 1);
    let d = &s.dvles[0];
    assert_eq!(d.version, 0);
    assert_eq!(d.kind, ShaderKind::Vertex);
    assert_eq!((d.main, d.end), (0, 3));
    assert_eq!(
        d.constants,
        [
            ConstantEntry {
                register: 20,
                value: ConstantValue::Float([0.0, 0.0, 0.0, 1.0]),
            },
            ConstantEntry {
                register: 2,
                value: ConstantValue::Int([16, 0, 1, 0]),
            },
            ConstantEntry {
                register: 5,
                value: ConstantValue::Bool(true),
            },
        ]
    );
    assert_eq!(d.labels.len(), 2);
    assert_eq!(d.labels[1].id(), 1);
    assert_eq!(d.labels[1].location(), 3);
    assert_eq!(d.labels[1].unknown(), 0);
    assert_eq!(d.label_name(&d.labels[0]), Some("main"));
    assert_eq!(d.label_name(&d.labels[1]), Some("end"));
    assert_eq!(
        d.outputs,
        [OutputEntry {
            semantic: 2,
            register: 1,
            mask: 0,
        }]
    );
    assert_eq!(d.outputs[0].semantic_name(), "color");
    assert_eq!(d.uniforms.len(), 2);
    assert_eq!(d.uniforms[0].name, "projection");
    assert_eq!(
        d.uniforms[0].first_register(),
        Some(UniformRegister::Float(0))
    );
    assert_eq!(
        d.uniforms[0].last_register(),
        Some(UniformRegister::Float(3))
    );
    assert_eq!(d.uniforms[1].name, "mv");
    assert_eq!(
        d.uniforms[1].first_register(),
        Some(UniformRegister::Bool(0))
    );
    assert_eq!(d.symbols, b"projection\0mv\0main\0end\0");
}

#[test]
fn old_layout_fixture_round_trips_through_writer() {
    let s = Shbin::parse(&old_layout()).unwrap();
    let written = s.to_bytes();
    assert_eq!(written.len() % 4, 0);
    assert_eq!(Shbin::parse(&written).unwrap(), s);
    // The writer uses the current layout: code right after the DVLP header.
    assert_eq!(rd32(&written, dvlp_at(&written) + 0x08), 0x28);
    assert!(dvle_at(&written, 0) > dvlp_at(&written));
}
