//! How a [`Value`] is written in JSON lines: the encoding that `tapstat-sink`'s JSON
//! format and the JSON writers of [`run!`](crate::run) share, so both give the same
//! bytes. Numbers, times and addresses are written as in TSV ([`crate::tsv`]); a
//! string is in double quotes ([`json_str`]); no value and an empty string are `null`;
//! a list without items is `[]`, never `null` (for lists, absent and empty are the
//! same).

use crate::tsv::{f64_value, ip_value, list_value, micros_value, push_u64};
use crate::{Type, Value};
use std::sync::atomic::{AtomicU8, Ordering};

/// How JSON lines write absolute times ([`Type::Time`]): `--time-format`. TSV always
/// writes epoch milliseconds (Tstat's unit); JSON lines are often loaded into stores
/// that want seconds or ISO 8601 (Elasticsearch, OpenSearch, Suricata's EVE).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(u8)]
pub enum TimeFormat {
    /// Milliseconds since the epoch with 3 decimals (µs): `1582454770123.456`.
    #[default]
    EpochMs = 0,
    /// Seconds since the epoch with 6 decimals: `1582454770.123456`.
    EpochS = 1,
    /// ISO 8601 / RFC 3339 in UTC, to the microsecond: `"2020-02-23T10:46:10.123456Z"`.
    Iso8601 = 2,
}

/// The process's [`TimeFormat`]: one per process, as a run has one output format, set
/// before the first record is written.
static TIME_FORMAT: AtomicU8 = AtomicU8::new(TimeFormat::EpochMs as u8);

/// Sets how every JSON record of the process writes its times from now on.
pub fn set_time_format(f: TimeFormat) {
    TIME_FORMAT.store(f as u8, Ordering::Relaxed);
}

/// How JSON records write their times now.
#[inline]
pub fn time_format() -> TimeFormat {
    match TIME_FORMAT.load(Ordering::Relaxed) {
        1 => TimeFormat::EpochS,
        2 => TimeFormat::Iso8601,
        _ => TimeFormat::EpochMs,
    }
}

/// An absolute time of `us` microseconds since the epoch, as `f` says.
pub fn time_value(us: u64, f: TimeFormat, out: &mut Vec<u8>) {
    match f {
        TimeFormat::EpochMs => micros_value(us, out),
        TimeFormat::EpochS => {
            push_u64(out, us / 1_000_000);
            let frac = us % 1_000_000;
            out.push(b'.');
            push_digits(out, frac, 6);
        }
        TimeFormat::Iso8601 => {
            let secs = us / 1_000_000;
            let (y, m, d) = civil_from_days(secs / 86_400);
            let t = secs % 86_400;
            out.push(b'"');
            push_digits(out, y, 4);
            out.push(b'-');
            push_digits(out, m, 2);
            out.push(b'-');
            push_digits(out, d, 2);
            out.push(b'T');
            push_digits(out, t / 3600, 2);
            out.push(b':');
            push_digits(out, t / 60 % 60, 2);
            out.push(b':');
            push_digits(out, t % 60, 2);
            out.push(b'.');
            push_digits(out, us % 1_000_000, 6);
            out.extend_from_slice(b"Z\"");
        }
    }
}

/// `n` in exactly `width` digits, leading zeros included (`n` < 10^width).
fn push_digits(out: &mut Vec<u8>, n: u64, width: u32) {
    let mut k = 10u64.pow(width - 1);
    while k > 0 {
        out.push(b'0' + (n / k % 10) as u8);
        k /= 10;
    }
}

/// The proleptic Gregorian date (year, month 1..=12, day 1..=31) of `days` since
/// 1970-01-01: Howard Hinnant's `civil_from_days`, for days on or after the epoch.
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + u64::from(m <= 2), m, d)
}

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
        (Type::Time, Value::Micros(us)) => time_value(us, time_format(), out),
        (_, Value::Micros(us)) => micros_value(us, out),
        (_, Value::None) => out.extend_from_slice(b"null"),
        (_, v) => value_cold(v, out),
    }
}

#[inline(never)]
fn value_cold(v: Value<'_>, out: &mut Vec<u8>) {
    value(v, out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(us: u64, f: TimeFormat) -> String {
        let mut v = Vec::new();
        time_value(us, f, &mut v);
        String::from_utf8(v).unwrap()
    }

    /// The three formats of one instant, and dates that test the calendar: the epoch,
    /// a leap day, the day after one in a century year that is not leap (2100), the
    /// end of 2038's 32-bit seconds; checked against `date -u -d @SECONDS`.
    #[test]
    fn times_in_each_format() {
        let us = 1_582_454_770_123_456; // date -u -d @1582454770: 2020-02-23 10:46:10
        assert_eq!(text(us, TimeFormat::EpochMs), "1582454770123.456");
        assert_eq!(text(us, TimeFormat::EpochS), "1582454770.123456");
        assert_eq!(text(us, TimeFormat::Iso8601), "\"2020-02-23T10:46:10.123456Z\"");
        assert_eq!(text(7, TimeFormat::EpochS), "0.000007");
        for (secs, want) in [
            (0, "1970-01-01T00:00:00"),
            (951_782_400, "2000-02-29T00:00:00"),
            (1_709_164_799, "2024-02-28T23:59:59"),
            (1_709_164_800, "2024-02-29T00:00:00"),
            (2_147_483_647, "2038-01-19T03:14:07"),
            (4_107_542_400, "2100-03-01T00:00:00"),
            (253_402_300_799, "9999-12-31T23:59:59"),
        ] {
            assert_eq!(text(secs * 1_000_000, TimeFormat::Iso8601), format!("\"{want}.000000Z\""), "{secs}");
        }
    }
}
