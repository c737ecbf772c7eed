//! The structured spellings of the nihstro assembler, accepted where they do
//! not clash with picasso: `if COND` … `else` … `endif`, `loop iN` …
//! `endloop`, `break COND`, `jmp LABEL if COND`, `call LABEL until LABEL
//! [if COND]`; conditions may name the flags `cc.x`/`cc.y`.

use super::*;

impl Assembler {
    /// Handles a nihstro form; `Ok(false)` when `word`/`rest` is not one
    /// (picasso's `loop iN, LAST`, `break` and `call PROC` keep their meaning).
    pub(super) fn nihstro_instruction(
        &mut self,
        st: &mut FileState,
        line: usize,
        word: Field<'_>,
        rest: Field<'_>,
    ) -> Res<bool> {
        let text = rest.text.trim();
        let single = !text.is_empty() && !text.contains(',');
        match word.text {
            "if" => {
                if !single {
                    return err(
                        rest,
                        expected("`if CONDITION` (cc.x, !cc.y, cc.x && cc.y, b0)", text),
                    );
                }
                let (guard, negated) = self.nihstro_guard(st, rest)?;
                if negated {
                    return err(
                        rest,
                        expected(
                            "a boolean register without `!` (`if` has no inverted form)",
                            text,
                        ),
                    );
                }
                let at = self.push(Instruction::If {
                    guard,
                    target: 0,
                    num: 0,
                });
                st.blocks.push((Block::If { at, else_at: None }, line));
            }
            "else" => {
                self.directive(
                    st,
                    line,
                    Field {
                        text: ".else",
                        column: word.column,
                    },
                    rest,
                )?;
            }
            "endif" | "endloop" => {
                let want_if = word.text == "endif";
                match st.blocks.last() {
                    Some((Block::If { .. }, _)) if want_if => {}
                    Some((Block::For { .. }, _)) if !want_if => {}
                    _ => {
                        let what = if want_if { "`if`" } else { "`loop`" };
                        return err(
                            word,
                            AsmErrorKind::Block(format!(
                                "`{}` without an open {what} block",
                                word.text
                            )),
                        );
                    }
                }
                self.directive(
                    st,
                    line,
                    Field {
                        text: ".end",
                        column: word.column,
                    },
                    rest,
                )?;
            }
            "loop" if single => {
                let int_id = self.int_reg(st, rest)?;
                let at = self.push(Instruction::Loop { int_id, end: 0 });
                st.blocks.push((Block::For { at }, line));
            }
            "break" if single => {
                let c = parse_condition(text).map_err(|k| (rest.column, k))?;
                self.push(Instruction::Break {
                    guard: Guard::Cond(c),
                });
            }
            "jmp" => {
                let (label, cond) = split_keyword(rest, " if ")
                    .ok_or((rest.column, expected("`jmp LABEL if CONDITION`", text)))?;
                if !is_identifier(label.text) {
                    return err(label, expected("a label", label.text));
                }
                let (guard, invert) = self.nihstro_guard(st, cond)?;
                let at = self.push(Instruction::Jmp {
                    guard,
                    target: 0,
                    invert,
                });
                st.relocs.push(Reloc {
                    at,
                    name: label.text.to_owned(),
                    kind: RelocKind::Jump,
                    line,
                    column: label.column,
                });
            }
            "call" if single && text.contains(" until ") => {
                let (span, cond) = match split_keyword(rest, " if ") {
                    Some((span, cond)) => (span, Some(cond)),
                    None => (rest, None),
                };
                let (target, until) = split_keyword(span, " until ").ok_or((
                    rest.column,
                    expected("`call LABEL until LABEL [if CONDITION]`", text),
                ))?;
                for f in [target, until] {
                    if !is_identifier(f.text) {
                        return err(f, expected("a label", f.text));
                    }
                }
                let guard = match cond {
                    None => Guard::Always,
                    Some(c) => match self.nihstro_guard(st, c)? {
                        (guard, false) => guard,
                        (_, true) => {
                            return err(
                                c,
                                expected(
                                    "a boolean register without `!` (`call` has no inverted form)",
                                    c.text,
                                ),
                            );
                        }
                    },
                };
                let at = self.push(Instruction::Call {
                    guard,
                    target: 0,
                    num: 0,
                });
                st.relocs.push(Reloc {
                    at,
                    name: target.text.to_owned(),
                    kind: RelocKind::IfLabels {
                        end: until.text.to_owned(),
                    },
                    line,
                    column: target.column,
                });
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// A condition on the flags, or `[!]bN`: the guard and whether it is negated
    /// (only a boolean register can be; conditions carry their own negation).
    fn nihstro_guard(&self, st: &FileState, f: Field<'_>) -> Res<(Guard, bool)> {
        let f = f.trim();
        if f.text.contains("cc.") || f.text.contains("cmp.") {
            let c = parse_condition(f.text).map_err(|k| (f.column, k))?;
            return Ok((Guard::Cond(c), false));
        }
        let (negated, b) = self.bool_reg(st, f)?;
        Ok((Guard::Bool(b), negated))
    }
}

/// Splits `f` at the first ` keyword ` into the trimmed parts before and after.
fn split_keyword<'a>(f: Field<'a>, keyword: &str) -> Option<(Field<'a>, Field<'a>)> {
    let at = f.text.find(keyword)?;
    Some((f.until(at).trim(), f.from(at + keyword.len()).trim()))
}
