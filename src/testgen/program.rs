//! Random programs: code words and operand descriptors.
//!
//! A program starts as a row of random instructions (every opcode, random
//! fields, flow-control targets biased to nearby addresses, sometimes raw
//! words), then a few *templates* are written over it at random positions:
//! counted loops, nested loops (same end, distinct ends, more than four),
//! IF/ELSE blocks and nests of up to ten IFs, calls (forward, backward, into
//! fall-through code), chains of calls whose returns pop together, BREAK from
//! a called subroutine, backward jumps, `mova` set-ups and emit sequences.
//! Templates overlap and are overwritten by later ones, which is where most
//! of the irregular shapes (jumps into and out of bodies, END inside calls, …)
//! come from.

use super::entropy::Entropy;
use crate::isa::{
    AddrIndex, BinaryOp, CmpOp, CondOp, Condition, DstReg, Guard, Instruction, MAD_DESCRIPTORS,
    OperandDescriptor, Source, SrcReg, Swizzle, UnaryOp, WriteMask, encode,
};

/// Longest program the generator writes (templates may extend a shorter one
/// up to this length).
pub const MAX_LEN: usize = 48;

/// `nop`.
pub(crate) const NOP: u32 = 0x21 << 26;

/// Descriptor 0 of most programs: mask xyzw, identity selectors, no negation.
pub(crate) const IDENTITY_DESCRIPTOR: u32 = 0x0F | (0x1B << 5) | (0x1B << 14) | (0x1B << 23);

const UNKNOWN_OPCODES: [u8; 10] = [0x10, 0x11, 0x14, 0x15, 0x16, 0x17, 0x1C, 0x1D, 0x1E, 0x1F];

fn enc(instr: Instruction) -> u32 {
    encode(&instr).unwrap_or_else(|err| panic!("testgen built an unencodable {instr:?}: {err}"))
}

struct Gen<'e, E: Entropy> {
    e: &'e mut E,
    /// Geometry unit: emit instructions are more frequent.
    geometry: bool,
    code: Vec<u32>,
    /// Descriptors supplied by the program.
    ndesc: usize,
}

/// Generates operand descriptors and code. Returns `(code, descriptors)`;
/// the code has 1..=[`MAX_LEN`] words. `geometry` makes emits more frequent.
pub(crate) fn generate(e: &mut impl Entropy, geometry: bool) -> (Vec<u32>, Vec<u32>) {
    // The table's size first, its contents last: short fuzzer inputs spend
    // their bytes on the code.
    let ndesc = match e.weighted(&[60, 25, 8, 7]) {
        0 => e.range(1, 8),
        1 => e.range(8, 40),
        2 => 0,
        _ => e.range(33, 128),
    } as usize;
    let len = match e.weighted(&[40, 40, 20]) {
        0 => e.range(1, 12),
        1 => e.range(8, 28),
        _ => e.range(20, MAX_LEN as i64),
    } as usize;
    let mut g = Gen {
        e,
        geometry,
        code: Vec::with_capacity(MAX_LEN),
        ndesc,
    };
    if g.e.chance(5) {
        // Nothing but raw words: whatever they decode to.
        for _ in 0..len {
            let w = g.e.bits();
            g.code.push(w);
        }
    } else {
        g.structured(len);
    }
    let code = g.code;
    (code, descriptors(e, ndesc))
}

impl<E: Entropy> Gen<'_, E> {
    fn structured(&mut self, len: usize) {
        let g = self;
        for pc in 0..len {
            let w = g.random_word(pc);
            g.code.push(w);
        }
        let templates = g.e.weighted(&[15, 35, 30, 20]) + g.e.below(2) as usize;
        for _ in 0..templates {
            let p = g.e.below(g.code.len() as u32) as usize;
            g.template(p);
        }
    }
}

fn descriptors(e: &mut impl Entropy, n: usize) -> Vec<u32> {
    let identity_first = !e.chance(25);
    (0..n)
        .map(|i| {
            if i == 0 && identity_first {
                return IDENTITY_DESCRIPTOR;
            }
            match e.weighted(&[70, 15, 15]) {
                0 => {
                    let mask = if e.chance(45) { 0xF } else { e.below(16) as u8 };
                    let mut source = || {
                        let neg = e.chance(25);
                        let swz = match e.weighted(&[50, 15, 35]) {
                            0 => Swizzle::IDENTITY,
                            1 => Swizzle(e.pick(&[0x00, 0x55, 0xAA, 0xFF])),
                            _ => Swizzle(e.below(256) as u8),
                        };
                        (neg, swz)
                    };
                    let sources = [source(), source(), source()];
                    OperandDescriptor::new(WriteMask(mask), sources).0
                }
                1 => IDENTITY_DESCRIPTOR ^ e.below(16) ^ if e.flip() { 1 << 4 } else { 0 },
                _ => e.bits(),
            }
        })
        .collect()
}

impl<E: Entropy> Gen<'_, E> {
    fn len(&self) -> usize {
        self.code.len()
    }

    /// Writes `word` at `at` if the program is (or can grow to be) that long.
    fn put(&mut self, at: usize, word: u32) {
        if at >= MAX_LEN {
            return;
        }
        while self.code.len() <= at {
            let pc = self.code.len();
            let w = self.data_word(pc);
            self.code.push(w);
        }
        self.code[at] = word;
    }

    fn put_instr(&mut self, at: usize, instr: Instruction) {
        self.put(at, enc(instr));
    }

    fn put_data(&mut self, at: usize) {
        let w = self.data_word(at);
        self.put(at, w);
    }

    // ---- operands -------------------------------------------------------

    fn index(&mut self) -> AddrIndex {
        match self.e.weighted(&[55, 15, 15, 15]) {
            0 => AddrIndex::None,
            1 => AddrIndex::A0X,
            2 => AddrIndex::A0Y,
            _ => AddrIndex::AL,
        }
    }

    fn reg_number(&mut self) -> u8 {
        if self.e.chance(80) {
            self.e.below(4) as u8
        } else {
            self.e.below(16) as u8
        }
    }

    fn short_reg(&mut self) -> SrcReg {
        let n = self.reg_number();
        if self.e.flip() {
            SrcReg::Temp(n)
        } else {
            SrcReg::Input(n)
        }
    }

    fn const_reg(&mut self) -> SrcReg {
        SrcReg::Const(match self.e.weighted(&[45, 20, 35]) {
            0 => self.e.below(8) as u8,
            1 => 88 + self.e.below(8) as u8,
            _ => self.e.below(96) as u8,
        })
    }

    /// A 7-bit source field (any register) with its relative index.
    fn long_src(&mut self) -> Source {
        let reg = match self.e.weighted(&[35, 30, 35]) {
            0 => SrcReg::Temp(self.reg_number()),
            1 => SrcReg::Input(self.reg_number()),
            _ => self.const_reg(),
        };
        Source {
            reg,
            index: self.index(),
        }
    }

    /// A 5-bit source field (no index).
    fn short_src(&mut self) -> Source {
        Source::direct(self.short_reg())
    }

    fn dst(&mut self) -> DstReg {
        let n = self.reg_number();
        if self.e.chance(55) {
            DstReg::Temp(n)
        } else {
            DstReg::Output(n)
        }
    }

    fn desc(&mut self, limit: usize) -> u8 {
        if self.ndesc > 0 && !self.e.chance(12) {
            self.e.below(self.ndesc.min(limit) as u32) as u8
        } else {
            // Possibly beyond the table: reads as descriptor word 0.
            self.e.below(limit as u32) as u8
        }
    }

    // ---- instructions ---------------------------------------------------

    fn data(&mut self) -> Instruction {
        match self.e.weighted(&[40, 30, 12, 18]) {
            0 => {
                let op = self.e.pick(&BinaryOp::ALL);
                let inverted = op.has_inverted_form() && self.e.flip();
                let (src1, src2) = if inverted {
                    (self.short_src(), self.long_src())
                } else {
                    (self.long_src(), self.short_src())
                };
                Instruction::Binary {
                    op,
                    inverted,
                    dst: self.dst(),
                    src1,
                    src2,
                    desc: self.desc(128),
                }
            }
            1 => {
                let op = UnaryOp::ALL[self.e.weighted(&[1, 1, 1, 1, 1, 1, 3, 2])];
                Instruction::Unary {
                    op,
                    dst: self.dst(),
                    src: self.long_src(),
                    desc: self.desc(128),
                }
            }
            2 => Instruction::Cmp {
                src1: self.long_src(),
                src2: self.short_src(),
                x: self.e.pick(&CmpOp::ALL),
                y: self.e.pick(&CmpOp::ALL),
                desc: self.desc(128),
            },
            _ => {
                let inverted = self.e.flip();
                let (src1, src2, src3) = if inverted {
                    (self.short_src(), self.short_src(), self.long_src())
                } else {
                    (self.short_src(), self.long_src(), self.short_src())
                };
                Instruction::Mad {
                    inverted,
                    dst: self.dst(),
                    src1,
                    src2,
                    src3,
                    desc: self.desc(MAD_DESCRIPTORS),
                }
            }
        }
    }

    fn data_word(&mut self, _pc: usize) -> u32 {
        let i = self.data();
        enc(i)
    }

    fn condition(&mut self) -> Condition {
        Condition {
            op: self.e.pick(&CondOp::ALL),
            ref_x: self.e.flip(),
            ref_y: self.e.flip(),
        }
    }

    fn bool_id(&mut self) -> u8 {
        if self.e.chance(70) {
            self.e.below(4) as u8
        } else {
            self.e.below(16) as u8
        }
    }

    /// A condition or boolean-uniform guard.
    fn test_guard(&mut self) -> Guard {
        if self.e.flip() {
            Guard::Cond(self.condition())
        } else {
            Guard::Bool(self.bool_id())
        }
    }

    fn call_guard(&mut self) -> Guard {
        match self.e.weighted(&[40, 30, 30]) {
            0 => Guard::Always,
            1 => Guard::Cond(self.condition()),
            _ => Guard::Bool(self.bool_id()),
        }
    }

    fn break_guard(&mut self) -> Guard {
        if self.e.flip() {
            Guard::Cond(self.condition())
        } else {
            Guard::Always
        }
    }

    /// A flow-control target: usually near `pc`, sometimes anywhere in (or just
    /// past) the program, rarely anywhere in the 12-bit space.
    fn target(&mut self, pc: usize) -> u16 {
        let len = self.len().max(pc + 1) as i64;
        let t = match self.e.weighted(&[70, 22, 8]) {
            0 => pc as i64 + self.e.range(-6, 10),
            1 => self.e.range(0, len + 1),
            _ => self.e.below(4096) as i64,
        };
        t.clamp(0, 4095) as u16
    }

    fn small_num(&mut self) -> u8 {
        if self.e.chance(90) {
            self.e.below(7) as u8
        } else {
            self.e.below(256) as u8
        }
    }

    fn flow(&mut self, pc: usize) -> Instruction {
        match self.e.weighted(&[22, 22, 20, 18, 12]) {
            0 => Instruction::Call {
                guard: self.call_guard(),
                target: self.target(pc),
                num: self.small_num(),
            },
            1 => {
                let target = if self.e.chance(65) {
                    (pc + 1 + self.e.below(6) as usize).min(4095) as u16
                } else {
                    self.target(pc)
                };
                Instruction::If {
                    guard: self.test_guard(),
                    target,
                    num: self.small_num(),
                }
            }
            2 => {
                let end = if self.e.chance(70) {
                    (pc + self.e.below(9) as usize).min(4095) as u16
                } else {
                    self.target(pc)
                };
                Instruction::Loop {
                    int_id: self.e.below(4) as u8,
                    end,
                }
            }
            3 => Instruction::Jmp {
                guard: self.test_guard(),
                target: self.target(pc),
                invert: self.e.flip(),
            },
            _ => Instruction::Break {
                guard: self.break_guard(),
            },
        }
    }

    fn misc(&mut self) -> u32 {
        let emits = if self.geometry { 40 } else { 15 };
        match self.e.weighted(&[25, 25, emits, emits, 8, 12]) {
            0 => NOP,
            1 => enc(Instruction::End),
            2 => enc(Instruction::Emit),
            3 => enc(self.setemit()),
            4 => enc(Instruction::Unknown {
                opcode: self.e.pick(&UNKNOWN_OPCODES),
            }),
            _ => self.e.bits(),
        }
    }

    fn setemit(&mut self) -> Instruction {
        Instruction::SetEmit {
            vertex_id: self.e.below(4) as u8,
            primitive: self.e.flip(),
            winding: self.e.flip(),
        }
    }

    fn random_word(&mut self, pc: usize) -> u32 {
        match self.e.weighted(&[60, 24, 16]) {
            0 => self.data_word(pc),
            1 => {
                let i = self.flow(pc);
                enc(i)
            }
            _ => self.misc(),
        }
    }

    // ---- templates ------------------------------------------------------

    fn template(&mut self, p: usize) {
        let emits = if self.geometry { 14 } else { 3 };
        match self
            .e
            .weighted(&[14, 10, 12, 7, 12, 7, 6, 8, 8, 6, emits, 5])
        {
            0 => self.counted_loop(p),
            1 => self.nested_loops(p),
            2 => self.if_else(p),
            3 => self.nested_ifs(p),
            4 => self.call_sub(p),
            5 => self.call_chain(p),
            6 => self.nested_calls(p),
            7 => self.backward_jump(p),
            8 => self.mova_setup(p),
            9 => self.break_from_call(p),
            10 => self.emit_sequence(p),
            _ => self.put_instr(p, Instruction::End),
        }
    }

    /// `loop iN, p+1+b` with a body of b+1 instructions, maybe a (conditional)
    /// break and an IF inside.
    fn counted_loop(&mut self, p: usize) {
        let b = self.e.below(7) as usize;
        let end = p + 1 + b;
        let int_id = self.e.below(4) as u8;
        self.put_instr(
            p,
            Instruction::Loop {
                int_id,
                end: end as u16,
            },
        );
        for at in p + 1..=end {
            self.put_data(at);
        }
        if self.e.chance(35) {
            let at = p + 1 + self.e.below(b as u32 + 1) as usize;
            let guard = self.break_guard();
            self.put_instr(at, Instruction::Break { guard });
        }
        if b >= 2 && self.e.chance(30) {
            let at = p + 1 + self.e.below(b as u32 - 1) as usize;
            let target = (at + 1 + self.e.below((end - at) as u32 + 1) as usize) as u16;
            let guard = self.test_guard();
            let num = self.e.below(3) as u8;
            self.put_instr(at, Instruction::If { guard, target, num });
        }
    }

    /// 2..=6 loops starting back to back: all ending on the same instruction, or
    /// properly nested (more than four overflow the LOOP stack).
    fn nested_loops(&mut self, p: usize) {
        let m = self.e.range(2, 6) as usize;
        let same_end = self.e.flip();
        let base = p + m + self.e.below(3) as usize;
        for k in 0..m {
            let end = if same_end { base } else { base + (m - 1 - k) };
            let int_id = self.e.below(4) as u8;
            self.put_instr(
                p + k,
                Instruction::Loop {
                    int_id,
                    end: end as u16,
                },
            );
        }
        let last = if same_end { base } else { base + m - 1 };
        for at in p + m..=last {
            self.put_data(at);
        }
    }

    /// `ifu`/`ifc` with then/else parts of 0..=4 instructions; sometimes the
    /// target lies behind the IF.
    fn if_else(&mut self, p: usize) {
        let a = self.e.below(5) as usize;
        let b = self.e.below(5) as usize;
        let target = if self.e.chance(12) {
            p.saturating_sub(self.e.below(6) as usize)
        } else {
            p + 1 + a
        };
        let guard = self.test_guard();
        self.put_instr(
            p,
            Instruction::If {
                guard,
                target: target as u16,
                num: b as u8,
            },
        );
        for at in p + 1..p + 1 + a + b {
            self.put_data(at);
        }
        if self.e.chance(25) {
            self.put_instr(p + 1 + a + b, Instruction::End);
        }
    }

    /// 2..=10 nested IFs (more than eight overflow the IF stack), laid out so
    /// each else part closes after the inner ones.
    fn nested_ifs(&mut self, p: usize) {
        let m = self.e.range(2, 10) as usize;
        // After the m IFs: one then-instruction, then for level m..1:
        // [filler unless innermost], else_k: data.
        let else_of = |k: usize| p + m + 1 + 2 * (m - k); // k in 1..=m
        for k in 1..=m {
            let guard = self.test_guard();
            let num = self.e.below(3) as u8;
            self.put_instr(
                p + k - 1,
                Instruction::If {
                    guard,
                    target: else_of(k) as u16,
                    num,
                },
            );
        }
        for at in p + m..=else_of(1) {
            self.put_data(at);
        }
    }

    /// A call to a subroutine: after an END (the usual layout), into the code
    /// right after the call (reached by fall-through as well), or backwards.
    /// The body may END or BREAK.
    fn call_sub(&mut self, p: usize) {
        let guard = self.call_guard();
        let num = self.e.below(6) as u8;
        let target = match self.e.weighted(&[50, 25, 25]) {
            0 => {
                let gap = 1 + self.e.below(3) as usize;
                self.put_instr(p + gap, Instruction::End);
                p + gap + 1
            }
            1 => p + 1 + self.e.below(2) as usize,
            _ => p.saturating_sub(self.e.below(8) as usize + 1),
        };
        self.put_instr(
            p,
            Instruction::Call {
                guard,
                target: target as u16,
                num,
            },
        );
        if target > p {
            for at in target..target + num as usize {
                self.put_data(at);
            }
        }
        if self.e.chance(25) {
            let at = target + self.e.below(num as u32 + 1) as usize;
            let word = if self.e.flip() {
                enc(Instruction::End)
            } else {
                let guard = self.break_guard();
                enc(Instruction::Break { guard })
            };
            self.put(at, word);
        }
    }

    /// Calls whose return addresses are each the caller's exit, so one
    /// instruction pops 2..=5 entries (the fourth pop keeps its PC; five
    /// overflow the CALL stack).
    fn call_chain(&mut self, p: usize) {
        let n = self.e.range(2, 5) as usize;
        // main: call L1, 2 ; data ; end
        // L1:   data ; call L2, 2 ; data ; end
        // Lk:   data ; call Lk+1, 2 ; end      (1 < k < n)
        // Ln:   data ; nop ; end
        let mut base = vec![p + 3];
        base.push(p + 3 + 4);
        for _ in 2..n {
            let b = *base.last().unwrap() + 3;
            base.push(b);
        }
        let guard = self.call_guard();
        self.put_instr(
            p,
            Instruction::Call {
                guard,
                target: base[0] as u16,
                num: 2,
            },
        );
        self.put_data(p + 1);
        self.put_instr(p + 2, Instruction::End);
        for k in 0..n {
            let b = base[k];
            self.put_data(b);
            if k + 1 < n {
                self.put_instr(
                    b + 1,
                    Instruction::Call {
                        guard: Guard::Always,
                        target: base[k + 1] as u16,
                        num: 2,
                    },
                );
            } else {
                self.put(b + 1, NOP);
            }
            if k == 0 && n > 1 {
                self.put_data(b + 2);
                self.put_instr(b + 3, Instruction::End);
            } else {
                self.put_instr(b + 2, Instruction::End);
            }
        }
    }

    /// 3..=6 levels of calls, each from inside the previous subroutine (more
    /// than four overflow the CALL stack and lose the outermost return).
    fn nested_calls(&mut self, p: usize) {
        let levels = self.e.range(3, 6) as usize;
        // main: call l1, 2 ; data ; end
        // lk:   call lk+1, 2 ; data ; data ; end
        // last: data ; nop ; end
        self.put_instr(
            p,
            Instruction::Call {
                guard: Guard::Always,
                target: (p + 3) as u16,
                num: 2,
            },
        );
        self.put_data(p + 1);
        self.put_instr(p + 2, Instruction::End);
        for k in 1..=levels {
            let b = p + 3 + 4 * (k - 1);
            if k < levels {
                let guard = self.call_guard();
                self.put_instr(
                    b,
                    Instruction::Call {
                        guard,
                        target: (b + 4) as u16,
                        num: 2,
                    },
                );
                self.put_data(b + 1);
                self.put_data(b + 2);
                self.put_instr(b + 3, Instruction::End);
            } else {
                self.put_data(b);
                self.put(b + 1, NOP);
                self.put_instr(b + 2, Instruction::End);
            }
        }
    }

    /// A `cmp`, some data, then a conditional jump back: a data-dependent loop
    /// (often infinite, stopped by the budget).
    fn backward_jump(&mut self, p: usize) {
        let k = self.e.below(5) as usize;
        let cmp = Instruction::Cmp {
            src1: self.long_src(),
            src2: self.short_src(),
            x: self.e.pick(&CmpOp::ALL),
            y: self.e.pick(&CmpOp::ALL),
            desc: self.desc(128),
        };
        self.put_instr(p + 1 + k, cmp);
        for at in p + 1..p + 1 + k {
            self.put_data(at);
        }
        let guard = self.test_guard();
        let invert = self.e.flip();
        self.put_instr(
            p + 2 + k,
            Instruction::Jmp {
                guard,
                target: p as u16,
                invert,
            },
        );
    }

    /// `mova` of generated values into a0 (descriptor 0 is usually xyzw).
    fn mova_setup(&mut self, p: usize) {
        let src = Source {
            reg: if self.e.flip() {
                self.const_reg()
            } else {
                SrcReg::Input(self.reg_number())
            },
            index: self.index(),
        };
        let desc = if self.e.chance(70) { 0 } else { self.desc(128) };
        self.put_instr(
            p,
            Instruction::Unary {
                op: UnaryOp::Mova,
                dst: DstReg::Temp(0),
                src,
                desc,
            },
        );
    }

    /// A loop whose body calls a subroutine that breaks.
    fn break_from_call(&mut self, p: usize) {
        let int_id = self.e.below(4) as u8;
        let guard = self.call_guard();
        let brk = self.break_guard();
        // p: loop i, p+2 ; p+1: call sub, 2 ; p+2: data ; p+3: data ; p+4: end
        // sub (p+5): break ; data ; end
        self.put_instr(
            p,
            Instruction::Loop {
                int_id,
                end: (p + 2) as u16,
            },
        );
        self.put_instr(
            p + 1,
            Instruction::Call {
                guard,
                target: (p + 5) as u16,
                num: 2,
            },
        );
        self.put_data(p + 2);
        self.put_data(p + 3);
        self.put_instr(p + 4, Instruction::End);
        self.put_instr(p + 5, Instruction::Break { guard: brk });
        self.put_data(p + 6);
        self.put_instr(p + 7, Instruction::End);
    }

    /// setemit / data / emit, a few times.
    fn emit_sequence(&mut self, p: usize) {
        let n = self.e.range(1, 4) as usize;
        for k in 0..n {
            let i = self.setemit();
            self.put_instr(p + 3 * k, i);
            self.put_data(p + 3 * k + 1);
            self.put_instr(p + 3 * k + 2, Instruction::Emit);
        }
    }
}
