//! How a [`Value`] is written in TSV: the encoding that `tapstat-sink`'s TSV format
//! and the writers of [`run!`](crate::run) share, so both give the same bytes.
//!
//! Numbers are written by hand, through integers: a record has dozens of them, and
//! most are small counters (0, 1, 2 digits).

use crate::Value;
use std::io::Write;

/// Appends the decimal digits of `n`. Most values in a record are small (counters of
/// 0, 1, 2 digits; sizes, ports, ms of 3 or 4): those are written inline, in one
/// store of fixed size each.
#[inline(always)]
pub fn push_u64(out: &mut Vec<u8>, n: u64) {
    if n < 10 {
        out.push(b'0' + n as u8);
    } else if n < 100 {
        let d = n as usize * 2;
        out.extend_from_slice(&[DIGITS2[d], DIGITS2[d + 1]]);
    } else if n < 1000 {
        let d = n as usize % 100 * 2;
        out.extend_from_slice(&[b'0' + (n / 100) as u8, DIGITS2[d], DIGITS2[d + 1]]);
    } else if n < 10_000 {
        let (hi, lo) = (n as usize / 100 * 2, n as usize % 100 * 2);
        out.extend_from_slice(&[DIGITS2[hi], DIGITS2[hi + 1], DIGITS2[lo], DIGITS2[lo + 1]]);
    } else {
        push_u64_long(out, n);
    }
}

const DIGITS2: &[u8; 200] = b"0001020304050607080910111213141516171819\
2021222324252627282930313233343536373839\
4041424344454647484950515253545556575859\
6061626364656667686970717273747576777879\
8081828384858687888990919293949596979899";

/// `.000` to `.999`: the three decimals of a time in ms, four bytes at once.
static FRAC3: [[u8; 4]; 1000] = {
    let mut t = [[0u8; 4]; 1000];
    let mut i = 0;
    while i < 1000 {
        t[i] = [b'.', b'0' + (i / 100) as u8, b'0' + (i / 10 % 10) as u8, b'0' + (i % 10) as u8];
        i += 1;
    }
    t
};

/// Appends `.` and the three digits of `frac` (below 1000).
#[inline(always)]
fn push_frac3(out: &mut Vec<u8>, frac: u64) {
    out.extend_from_slice(&FRAC3[frac as usize % 1000]);
}

/// Five digits and more, four at a time from the end. The digits are written left
/// aligned in a buffer of fixed size, which is appended whole (a fixed-size copy, no
/// `memcpy` call) and the excess cut off.
#[inline(never)]
fn push_u64_long(out: &mut Vec<u8>, mut n: u64) {
    let len = n.ilog10() as usize + 1;
    let mut buf = [0u8; 20];
    let mut i = len;
    while n >= 10_000 {
        let r = (n % 10_000) as usize;
        n /= 10_000;
        let (hi, lo) = (r / 100 * 2, r % 100 * 2);
        buf[i - 4..i].copy_from_slice(&[DIGITS2[hi], DIGITS2[hi + 1], DIGITS2[lo], DIGITS2[lo + 1]]);
        i -= 4;
    }
    let mut n = n as usize;
    if n >= 100 {
        let lo = n % 100 * 2;
        n /= 100;
        buf[i - 2..i].copy_from_slice(&DIGITS2[lo..lo + 2]);
        i -= 2;
    }
    if n >= 10 {
        buf[i - 2..i].copy_from_slice(&DIGITS2[n * 2..n * 2 + 2]);
    } else {
        buf[i - 1] = b'0' + n as u8;
    }
    let start = out.len();
    out.extend_from_slice(&buf);
    out.truncate(start + len);
}

/// Writes `v` with three decimals (times are in ms: three decimals are µs, the
/// precision of the input), rounded half away from zero; false for NaN and infinities
/// (nothing written). By hand, through integers: `format!("{:.3}")` costs about ten
/// times more, and a record has dozens of these.
pub fn f64_value(v: f64, out: &mut Vec<u8>) -> bool {
    if !v.is_finite() {
        return false;
    }
    let a = v.abs() * 1000.0;
    // `a.round()` without the libm call: below 1e18 the integer part is exact in a
    // u64 and `a - trunc(a)` is exact in an f64 (Sterbenz), so comparing it with 0.5
    // rounds half away from zero as `round` does. round(a) >= 1e18 exactly when
    // a >= 1e18 (doubles there are integers).
    if a >= 1e18 {
        let _ = write!(out, "{v:.3}");
        return true;
    }
    // Through i64 (0 <= a < 1e18 < 2^63): one instruction each way, where u64 takes
    // a dozen on x86-64.
    let whole = a as i64;
    let t = (whole + (a - whole as f64 >= 0.5) as i64) as u64;
    if v < 0.0 && t != 0 {
        out.push(b'-');
    }
    push_u64(out, t / 1000);
    push_frac3(out, t % 1000);
    true
}

/// Writes microseconds as milliseconds with three decimals.
#[inline(always)]
pub fn micros_value(us: u64, out: &mut Vec<u8>) {
    push_u64(out, us / 1000);
    push_frac3(out, us % 1000);
}

/// Writes an address: IPv4 by hand, IPv6 through its `Display` (which compresses
/// zeros as RFC 5952 says).
pub fn ip_value(ip: std::net::IpAddr, out: &mut Vec<u8>) {
    match ip {
        std::net::IpAddr::V4(a) => {
            let [x, y, z, w] = a.octets();
            let mut buf = [0u8; 15];
            let mut len = 0;
            for (i, o) in [x, y, z, w].into_iter().enumerate() {
                if i > 0 {
                    buf[len] = b'.';
                    len += 1;
                }
                if o >= 100 {
                    buf[len] = b'0' + o / 100;
                    len += 1;
                }
                if o >= 10 {
                    buf[len] = b'0' + o / 10 % 10;
                    len += 1;
                }
                buf[len] = b'0' + o % 10;
                len += 1;
            }
            out.extend_from_slice(&buf[..len]);
        }
        std::net::IpAddr::V6(a) => {
            let _ = write!(out, "{a}");
        }
    }
}

/// Comma-separated values (the brackets, for JSON, are the caller's).
#[inline]
pub fn list_value(xs: &[u32], out: &mut Vec<u8>, one: impl Fn(u32, &mut Vec<u8>)) {
    for (i, &x) in xs.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        one(x, out);
    }
}

/// A string with tabs, line ends, backslashes and double quotes escaped by a
/// backslash (`\t`, `\n`, `\r`, `\\`, `\"`; nothing when empty): strings may come off
/// the wire (server names, User-Agents...), and a record stays one line, a value one
/// column, whatever they hold. A value never starts with `"`, so readers that take
/// `"` as a quote (pandas' and DuckDB's defaults) read it as it is written.
pub fn str_value(s: &str, out: &mut Vec<u8>) {
    if !s.bytes().any(|b| matches!(b, b'\t' | b'\n' | b'\r' | b'\\' | b'"')) {
        out.extend_from_slice(s.as_bytes());
        return;
    }
    for b in s.bytes() {
        match b {
            b'\t' => out.extend_from_slice(b"\\t"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'"' => out.extend_from_slice(b"\\\""),
            _ => out.push(b),
        }
    }
}

/// A string as [`str_value`] wrote it, back (the reading README.md documents: a
/// backslash escapes the character after it, `\t`, `\n` and `\r` stand for tab, line
/// feed and carriage return).
pub fn unescape(t: &str) -> String {
    let mut out = String::new();
    let mut it = t.chars();
    while let Some(c) = it.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match it.next() {
            Some('t') => out.push('\t'),
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some(c) => out.push(c),
            None => {}
        }
    }
    out
}

/// Appends `v` as TSV: nothing for no value (nor for an empty string), which pandas
/// and DuckDB read as missing (NaN, NULL) without options; lists in brackets.
#[inline(always)]
pub fn value(v: Value<'_>, out: &mut Vec<u8>) {
    match v {
        Value::U64(n) => push_u64(out, n),
        Value::Micros(us) => micros_value(us, out),
        Value::F64(x) => {
            f64_value(x, out);
        }
        Value::Str(s) => str_value(s, out),
        Value::Inline(s) => str_value(s.as_str(), out),
        Value::Ip(ip) => ip_value(ip, out),
        Value::Bool(b) => out.push(if b { b'1' } else { b'0' }),
        Value::None => {}
        // In brackets, as in JSON: a list of one number would otherwise read as a
        // number, and a column of them as numbers until its first longer list (which
        // then fails to load in DuckDB).
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
            for (i, item) in strs(s).enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                str_value(item, out);
            }
            out.push(b']');
        }
        Value::Names { bits, names } => {
            out.push(b'[');
            for (i, item) in named(bits, names).enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                str_value(item, out);
            }
            out.push(b']');
        }
    }
}

/// The items of a [`Value::Strs`].
pub fn strs(s: &str) -> impl Iterator<Item = &str> {
    s.split('\0').filter(|_| !s.is_empty())
}

/// The items of a [`Value::Names`]: the names of the bits set, in bit order (a bit
/// without a name is left out).
pub fn named(bits: u64, names: &'static [&'static str]) -> impl Iterator<Item = &'static str> {
    names.iter().enumerate().filter(move |&(k, _)| k < 64 && bits & (1 << k) != 0).map(|(_, n)| *n)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The encoding before the libm-free rounding, kept to hold the new one to it.
    fn f64_by_round(v: f64) -> Option<String> {
        if !v.is_finite() {
            return None;
        }
        let thousandths = (v.abs() * 1000.0).round();
        if thousandths >= 1e18 {
            return Some(format!("{v:.3}"));
        }
        let t = thousandths as u64;
        let sign = if v < 0.0 && t != 0 { "-" } else { "" };
        Some(format!("{sign}{}.{:03}", t / 1000, t % 1000))
    }

    fn f64_now(v: f64) -> Option<String> {
        let mut out = Vec::new();
        f64_value(v, &mut out).then(|| String::from_utf8(out).unwrap())
    }

    #[test]
    fn rounding_without_libm_is_rounding() {
        let mut xs = vec![
            0.0,
            -0.0,
            0.0005,
            0.0004999999999999999,
            f64::from_bits(0.0005f64.to_bits() - 1),
            1.0005,
            2.5e-3,
            -2.5e-3,
            999.9995,
            1e15 - 0.0005,
            f64::from_bits(4503599627370.5f64.to_bits() - 1),
            4503599627370496.0,
            9.007199254740993e15,
            1e15,
            999999999999999.9,
            1e18 / 1000.0,
            1e18 / 1000.0 - 1.0,
            f64::MIN_POSITIVE,
            f64::MAX,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
        ];
        // A walk through many magnitudes and the halves between thousandths.
        let mut x = 1e-6f64;
        while x < 1e17 {
            for d in [-1e-9, 0.0, 1e-9] {
                xs.push(x + d);
                xs.push((x * 1000.0).floor() / 1000.0 + 0.0005);
            }
            x *= 1.37;
        }
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..100_000 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            xs.push(f64::from_bits(seed));
            xs.push((seed >> 11) as f64 / 1e3 / (1u64 << (seed % 40)) as f64);
        }
        for v in xs {
            assert_eq!(f64_now(v), f64_by_round(v), "{v:e}");
        }
    }

    #[test]
    fn integers_are_written_exactly() {
        let mut out = Vec::new();
        let mut n = 1u64;
        let mut all = vec![0, 9, 10, 99, 100, 101, 999, 1000, u64::MAX, u64::MAX - 1];
        while let Some(m) = n.checked_mul(3) {
            all.extend([n, n - 1, n + 1]);
            n = m;
        }
        for p in 0..20 {
            let t = 10u64.pow(p);
            all.extend([t, t - 1, t + 1]);
        }
        for n in all {
            out.clear();
            push_u64(&mut out, n);
            assert_eq!(out, n.to_string().as_bytes());
        }
    }

    fn tsv(v: Value<'_>) -> String {
        let mut out = Vec::new();
        value(v, &mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn strings_are_escaped_and_absent_values_empty() {
        // A crafted User-Agent: a leading quote would open a quoted field in pandas and
        // DuckDB; a tab, a line end would split the record.
        assert_eq!(tsv(Value::Str("\"x\" a\tb\nc\rd\\e")), r#"\"x\" a\tb\nc\rd\\e"#);
        assert_eq!(tsv(Value::Str("plain text")), "plain text");
        for v in [Value::None, Value::Str(""), Value::F64(f64::NAN)] {
            assert_eq!(tsv(v), "", "{v:?}");
        }
        assert_eq!(tsv(Value::U32s(&[60])), "[60]", "never a number");
        assert_eq!(tsv(Value::U32s(&[])), "[]");
        assert_eq!(tsv(Value::Strs("")), "[]");
        assert_eq!(tsv(Value::Strs("a.example\u{0}192.0.2.1\u{0}t\"ab")), r#"[a.example,192.0.2.1,t\"ab]"#);
        const NAMES: &[&str] = &["zero", "one", "two"];
        assert_eq!(tsv(Value::Names { bits: 0b101, names: NAMES }), "[zero,two]");
        assert_eq!(tsv(Value::Names { bits: 0, names: NAMES }), "[]");
        assert_eq!(tsv(Value::Names { bits: 1 << 40 | 2, names: NAMES }), "[one]");
        // Whatever a string holds, its value is one field of one line, and it never
        // starts with a quote.
        for s in ["\"", "\t\"", "\\\"\n", "a\u{0}\"\"\t", "\r\n\\"] {
            let t = tsv(Value::Str(s));
            assert!(!t.contains(['\t', '\n', '\r']) && !t.starts_with('"'), "{s:?} -> {t:?}");
            assert_eq!(unescape(&t), s);
        }
    }
}
