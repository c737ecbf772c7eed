//! Token-level syntax: splitting lines into fields, names, numbers,
//! swizzles and conditions. Nothing here knows about symbols.

use super::error::AsmErrorKind;
use crate::isa::{CondOp, Condition};

/// A piece of a line with its 1-based byte column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Field<'a> {
    pub text: &'a str,
    pub column: usize,
}

impl<'a> Field<'a> {
    /// The field with surrounding whitespace removed (column adjusted).
    pub fn trim(self) -> Field<'a> {
        let start = self.text.len() - self.text.trim_start().len();
        Field {
            text: self.text.trim(),
            column: self.column + start,
        }
    }

    /// The sub-field starting at byte `at`.
    pub fn from(self, at: usize) -> Field<'a> {
        Field {
            text: self.text.get(at..).unwrap_or(""),
            column: self.column + at,
        }
    }

    /// The sub-field of bytes `..at`.
    pub fn until(self, at: usize) -> Field<'a> {
        Field {
            text: self.text.get(..at).unwrap_or(self.text),
            column: self.column,
        }
    }
}

/// Splits at top-level commas (not inside `()` or `[]`); empty input gives no fields.
pub(crate) fn split_commas(f: Field<'_>) -> Vec<Field<'_>> {
    let f = f.trim();
    if f.text.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, c) in f.text.char_indices() {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' => depth -= 1,
            ',' if depth <= 0 => {
                out.push(f.from(start).until(i - start).trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(f.from(start).trim());
    out
}

/// Splits at the first run of whitespace: (first word, rest).
pub(crate) fn split_word(f: Field<'_>) -> (Field<'_>, Field<'_>) {
    let f = f.trim();
    match f.text.find(char::is_whitespace) {
        Some(i) => (f.until(i), f.from(i).trim()),
        None => (f, f.from(f.text.len())),
    }
}

/// Whether `s` is an identifier (`[A-Za-z_][A-Za-z0-9_]*`).
pub(crate) fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

pub(crate) fn expected(what: &str, found: &str) -> AsmErrorKind {
    AsmErrorKind::Expected {
        expected: what.to_owned(),
        found: found.to_owned(),
    }
}

/// Parses a lane list (`xyzw`, `rgba` or `stpq` letters, 1 to 4 of them).
pub(crate) fn parse_lanes(s: &str) -> Option<Vec<u8>> {
    if s.is_empty() || s.len() > 4 {
        return None;
    }
    s.chars()
        .map(|c| match c {
            'x' | 'r' | 's' => Some(0),
            'y' | 'g' | 't' => Some(1),
            'z' | 'b' | 'p' => Some(2),
            'w' | 'a' | 'q' => Some(3),
            _ => None,
        })
        .collect()
}

/// A decimal or `0x` hexadecimal unsigned integer.
pub(crate) fn parse_uint(s: &str) -> Option<u32> {
    let s = s.trim();
    if let Some(hex) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        u32::from_str_radix(hex, 16).ok()
    } else if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
        s.parse().ok()
    } else {
        None
    }
}

/// What C's `atoi` reads, which is how picasso reads array sizes: leading
/// whitespace, an optional sign, then decimal digits up to the first other
/// character (`32*2` reads as 32, `0x10` as 0, `x` as 0). Returns the value
/// and whether anything but whitespace followed the digits.
pub(crate) fn atoi_prefix(s: &str) -> (i64, bool) {
    let t = s.trim_start();
    let (negative, digits) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let end = digits
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(digits.len());
    let value = digits[..end].bytes().fold(0i64, |v, d| {
        v.saturating_mul(10).saturating_add(i64::from(d - b'0'))
    });
    let rest = !digits[end..].trim().is_empty() || (end == 0 && !t.is_empty());
    (if negative { -value } else { value }, rest)
}

/// A signed integer.
pub(crate) fn parse_int(s: &str) -> Option<i64> {
    let s = s.trim();
    match s.strip_prefix('-') {
        Some(rest) => parse_uint(rest).map(|v| -i64::from(v)),
        None => parse_uint(s.strip_prefix('+').unwrap_or(s)).map(i64::from),
    }
}

/// The value of the longest prefix of `s` that reads as a decimal float, the
/// way C's `atof` reads it (picasso reads `1.0/128.0` as `1.0`); `None` when
/// not even a digit starts it.
pub(crate) fn parse_float_prefix(s: &str) -> Option<f32> {
    let b = s.trim().as_bytes();
    let mut i = 0;
    if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
        i += 1;
    }
    let digits_start = i;
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
    }
    let mut ndigits = i - digits_start;
    if i < b.len() && b[i] == b'.' {
        i += 1;
        let frac = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        ndigits += i - frac;
    }
    if ndigits == 0 {
        return None;
    }
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        let mut j = i + 1;
        if j < b.len() && (b[j] == b'+' || b[j] == b'-') {
            j += 1;
        }
        let exp_digits = j;
        while j < b.len() && b[j].is_ascii_digit() {
            j += 1;
        }
        if j > exp_digits {
            i = j;
        }
    }
    let text = std::str::from_utf8(&b[..i]).ok()?;
    text.trim_end_matches('.')
        .parse::<f64>()
        .ok()
        .map(|v| v as f32)
}

/// Parses a condition the way picasso does: one term (`cmp.x`, `!cmp.y`) or
/// two terms joined by an operator. The operator is the first `&` or `|` in
/// the text, written once or twice (`&`, `&&`, `|`, `||`); `&` is AND, `|` is
/// OR. Each term is any number of `!` (each one flips the test) followed by
/// `cmp.x` or `cmp.y` in any letter case (nihstro's `cc.x`/`cc.y` too); the two
/// terms must test different flags, in either order.
///
/// Unreferenced flags keep reference value 1, as picasso encodes them.
pub(crate) fn parse_condition(s: &str) -> Result<Condition, AsmErrorKind> {
    let bad = || {
        expected(
            "a condition like `cmp.x`, `!cmp.y`, `cmp.x && cmp.y` or `cmp.x | !cmp.y`",
            s,
        )
    };
    // (is the x flag, reference value).
    let term = |t: &str| -> Option<(bool, bool)> {
        let t = t.trim();
        let bangs = t.len() - t.trim_start_matches('!').len();
        let name = t[bangs..].trim().to_ascii_lowercase();
        let value = bangs.is_multiple_of(2);
        match name.as_str() {
            "cmp.x" | "cc.x" => Some((true, value)),
            "cmp.y" | "cc.y" => Some((false, value)),
            _ => None,
        }
    };
    let Some(at) = s.find(['&', '|']) else {
        let (is_x, value) = term(s).ok_or_else(bad)?;
        return Ok(if is_x {
            Condition {
                op: CondOp::X,
                ref_x: value,
                ref_y: true,
            }
        } else {
            Condition {
                op: CondOp::Y,
                ref_x: true,
                ref_y: value,
            }
        });
    };
    let operator = s.as_bytes()[at];
    let op = if operator == b'&' {
        CondOp::And
    } else {
        CondOp::Or
    };
    let right = &s[at + 1..];
    let right = right.strip_prefix(operator as char).unwrap_or(right);
    let a = term(&s[..at]).ok_or_else(bad)?;
    let b = term(right).ok_or_else(bad)?;
    let (x, y) = match (a.0, b.0) {
        (true, false) => (a.1, b.1),
        (false, true) => (b.1, a.1),
        _ => {
            return Err(expected(
                "two conditions on different flags (`cmp.x` and `cmp.y`)",
                s,
            ));
        }
    };
    Ok(Condition {
        op,
        ref_x: x,
        ref_y: y,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_read_like_atof() {
        assert_eq!(parse_float_prefix("1.0/128.0"), Some(1.0));
        assert_eq!(parse_float_prefix(" -0.5 "), Some(-0.5));
        assert_eq!(parse_float_prefix("1e3"), Some(1000.0));
        assert_eq!(parse_float_prefix("2."), Some(2.0));
        assert_eq!(parse_float_prefix(".25"), Some(0.25));
        assert_eq!(parse_float_prefix("abc"), None);
    }

    #[test]
    fn sizes_read_like_atoi() {
        assert_eq!(atoi_prefix("4"), (4, false));
        assert_eq!(atoi_prefix(" 12 "), (12, false));
        assert_eq!(atoi_prefix("32*2"), (32, true));
        assert_eq!(atoi_prefix("4 + 4"), (4, true));
        assert_eq!(atoi_prefix("0x10"), (0, true));
        assert_eq!(atoi_prefix("-3"), (-3, false));
        assert_eq!(atoi_prefix("n"), (0, true));
        assert_eq!(atoi_prefix(""), (0, false));
    }

    #[test]
    fn conditions() {
        let c = parse_condition("cmp.x && !cmp.y").unwrap();
        assert_eq!((c.op, c.ref_x, c.ref_y), (CondOp::And, true, false));
        let c = parse_condition("!cmp.x").unwrap();
        assert_eq!((c.op, c.ref_x, c.ref_y), (CondOp::X, false, true));
        assert!(parse_condition("cmp.z").is_err());
    }

    /// picasso's condition grammar: `&`/`|` once or twice, any number of `!`,
    /// any letter case, the flags in either order, never one flag twice.
    #[test]
    fn conditions_take_picassos_operator_forms() {
        let parse = |s: &str| parse_condition(s).map(|c| (c.op, c.ref_x, c.ref_y));
        assert_eq!(parse("cmp.x & cmp.y"), Ok((CondOp::And, true, true)));
        assert_eq!(parse("cmp.y&!cmp.x"), Ok((CondOp::And, false, true)));
        assert_eq!(parse("!cmp.x | cmp.y"), Ok((CondOp::Or, false, true)));
        assert_eq!(parse("cmp.x || !cmp.y"), Ok((CondOp::Or, true, false)));
        assert_eq!(parse("!!cmp.y"), Ok((CondOp::Y, true, true)));
        assert_eq!(parse("!!!CMP.X"), Ok((CondOp::X, false, true)));
        assert_eq!(parse("Cmp.Y && CMP.x"), Ok((CondOp::And, true, true)));
        assert!(parse("cmp.x & cmp.x").is_err());
        assert!(parse("cmp.x &| cmp.y").is_err());
        assert!(parse("cmp.x && cmp.y && cmp.x").is_err());
        assert!(parse("& cmp.y").is_err());
    }

    #[test]
    fn commas_respect_brackets() {
        let f = Field {
            text: "a, b(1, 2), c[a0.x + 1]",
            column: 1,
        };
        let parts: Vec<_> = split_commas(f).iter().map(|f| (f.text, f.column)).collect();
        assert_eq!(parts, vec![("a", 1), ("b(1, 2)", 4), ("c[a0.x + 1]", 13)]);
    }
}
