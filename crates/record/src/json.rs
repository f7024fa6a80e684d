//! How a [`Value`] is written in JSON lines: the encoding that `tapstat-sink`'s JSON
//! format and the JSON writers of [`run!`](crate::run) share, so both give the same
//! bytes. Numbers, times and addresses are written as in TSV ([`crate::tsv`]); a
//! string is in double quotes ([`json_str`]); no value and an empty string are `null`;
//! a list without items is `[]`, never `null` (for lists, absent and empty are the
//! same).

use crate::tsv::{f64_value, ip_value, list_value, micros_value, push_u64};
use crate::{Type, Value};

/// A JSON string: `"` and `\` escaped, and every control character as JSON allows it,
/// escaped (`\b` `\f` `\n` `\r` `\t`, else `\u00XX`), the C1 controls (`\u0085`), DEL
/// (`\u007f`) and U+2028, U+2029 (`\u2028`) included, which JSON would take raw: a log
/// shown in a terminal carries no escape sequence to it, and no line splitter or
/// JavaScript parser splits a line at them. Otherwise serde_json's bytes. Strings
/// without any of these, nearly all, are copied as they are after one quick scan
/// ([`crate::tsv::may_need_escape`], the set TSV escapes too).
pub fn json_str(s: &str, out: &mut Vec<u8>) {
    out.push(b'"');
    if crate::tsv::may_need_escape(s.as_bytes()) {
        json_escaped(s.as_bytes(), out);
    } else {
        out.extend_from_slice(s.as_bytes());
    }
    out.push(b'"');
}

#[inline(never)]
fn json_escaped(b: &[u8], out: &mut Vec<u8>) {
    use crate::tsv::HEX;
    crate::tsv::escape_with(b, out, |ch, out| {
        // The code point: one byte, a C1 control (0xC2 0x80..0x9F), U+2028 or U+2029
        // (0xE2 0x80 0xA8 or 0xA9).
        let c = match *ch {
            [c] => u16::from(c),
            [_, c] => u16::from(c),
            [_, _, c, ..] => 0x2000 | u16::from(c & 0x3f),
            [] => return,
        };
        match c {
            0x22 => out.extend_from_slice(b"\\\""),
            0x5c => out.extend_from_slice(b"\\\\"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x0c => out.extend_from_slice(b"\\f"),
            0x0a => out.extend_from_slice(b"\\n"),
            0x0d => out.extend_from_slice(b"\\r"),
            0x09 => out.extend_from_slice(b"\\t"),
            _ => {
                let h = |k: u16| HEX[usize::from(c >> k & 15)];
                out.extend_from_slice(&[b'\\', b'u', h(12), h(8), h(4), h(0)]);
            }
        }
    });
}

pub fn value(v: Value<'_>, out: &mut Vec<u8>) {
    match v {
        Value::U64(n) => push_u64(out, n),
        Value::Micros(us) => micros_value(us, out),
        Value::F64(x) => {
            if !f64_value(x, out) {
                out.extend_from_slice(b"null");
            }
        }
        Value::Str("") | Value::Token("") => out.extend_from_slice(b"null"),
        Value::Str(s) => json_str(s, out),
        Value::Token(s) => {
            debug_assert!(!crate::tsv::may_need_escape(s.as_bytes()), "{s:?}");
            out.push(b'"');
            out.extend_from_slice(s.as_bytes());
            out.push(b'"');
        }
        Value::Inline(s) => json_str(s.as_str(), out),
        Value::Ip(ip) => {
            out.push(b'"');
            ip_value(ip, out);
            out.push(b'"');
        }
        Value::Bool(b) => out.extend_from_slice(if b { b"true" } else { b"false" }),
        Value::None => out.extend_from_slice(b"null"),
        Value::U32s(xs) => {
            out.push(b'[');
            list_value(xs, out, |x, out| push_u64(out, x as u64));
            out.push(b']');
        }
        Value::MicrosU32s(xs) => {
            out.push(b'[');
            list_value(xs, out, |x, out| micros_value(x as u64, out));
            out.push(b']');
        }
        Value::Strs(s) => {
            out.push(b'[');
            for (i, item) in crate::tsv::strs(s).enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                json_str(item, out);
            }
            out.push(b']');
        }
        Value::Names { bits, names } => {
            out.push(b'[');
            for (i, item) in crate::tsv::named(bits, names).enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                json_str(item, out);
            }
            out.push(b']');
        }
    }
}

/// The JSON value of a column of type `ty`: [`value`], with `[]` for a list without a
/// value.
#[inline(always)]
pub fn column_value(ty: Type, v: Value<'_>, out: &mut Vec<u8>) {
    match (ty, v) {
        (Type::Counts | Type::Durations | Type::Strs, Value::None) => out.extend_from_slice(b"[]"),
        (_, Value::U64(n)) => push_u64(out, n),
        (_, Value::Micros(us)) => micros_value(us, out),
        (_, Value::None) => out.extend_from_slice(b"null"),
        (_, v) => value_cold(v, out),
    }
}

#[inline(never)]
fn value_cold(v: Value<'_>, out: &mut Vec<u8>) {
    value(v, out)
}
