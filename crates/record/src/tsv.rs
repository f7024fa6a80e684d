//! How a [`Value`] is written in TSV: the encoding that `tapstat-sink`'s TSV format
//! and the writers of [`run!`](crate::run) share, so both give the same bytes.
//!
//! Strings ([`str_value`]) may come off the wire, and must leave a record one line and
//! a value one field, and send a terminal that shows the log nothing it acts on:
//! - tab, line feed, carriage return, backslash and double quote are escaped by a
//!   backslash: `\t` `\n` `\r` `\\` `\"`;
//! - every other control character is written byte by byte as `\xNN`, two lowercase
//!   hex digits, as Zeek writes them: the C0 controls and DEL (`\x1b` for ESC, `\x00`
//!   for NUL), the C1 controls U+0080 to U+009F (`\xc2\x85` for NEL) and the line and
//!   paragraph separators U+2028 and U+2029 (`\xe2\x80\xa8`), at which Python's
//!   `splitlines()` splits a line as it does at VT, FF, FS, GS and RS;
//! - anything else, other UTF-8 included, as it is. [`unescape`] reads them back.
//!
//! Lists of texts ([`Value::Strs`], [`Value::Names`]) are `[` items `,` `]`, in the
//! list syntax DuckDB's `CAST(x AS VARCHAR[])` reads. Each item is escaped as a string,
//! then written as it is, unless it holds one of `,` `[` `]` `{` `}` `(` `)` `'` `"` or
//! a backslash (a separator, a bracket DuckDB would take for a nested list, struct or
//! map, a quote, an escape), starts or ends with a space (trimmed), or is `null` in any
//! case (read as NULL): then it is in single quotes, each backslash and `'` in it
//! preceded by a backslash (`[a.example,'a,b','it\'s','\\x1b']`). Names and addresses
//! need no quotes, so ordinary traffic's lists are written as they always were. DuckDB
//! gives each item as a VARCHAR column gives a string, its string escapes still in it;
//! [`list_items`] reads a list back to the strings.
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
        push_u64_long::<false>(out, n);
    }
}

/// [`push_u64`] and a tab, in the same store: the column writers of [`run!`](crate::run)
/// end every value with one.
#[inline(always)]
pub fn push_u64_tab(out: &mut Vec<u8>, n: u64) {
    if n < 10 {
        out.extend_from_slice(&[b'0' + n as u8, b'\t']);
    } else if n < 100 {
        let d = n as usize * 2;
        out.extend_from_slice(&[DIGITS2[d], DIGITS2[d + 1], b'\t']);
    } else if n < 1000 {
        let d = n as usize % 100 * 2;
        out.extend_from_slice(&[b'0' + (n / 100) as u8, DIGITS2[d], DIGITS2[d + 1], b'\t']);
    } else if n < 10_000 {
        let (hi, lo) = (n as usize / 100 * 2, n as usize % 100 * 2);
        out.extend_from_slice(&[DIGITS2[hi], DIGITS2[hi + 1], DIGITS2[lo], DIGITS2[lo + 1], b'\t']);
    } else {
        push_u64_long::<true>(out, n);
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

/// `.000\t` to `.999\t`: [`FRAC3`] and the tab after the value.
static FRAC3_TAB: [[u8; 5]; 1000] = {
    let mut t = [[b'\t'; 5]; 1000];
    let mut i = 0;
    while i < 1000 {
        let f = FRAC3[i];
        t[i] = [f[0], f[1], f[2], f[3], b'\t'];
        i += 1;
    }
    t
};

/// Appends `.`, the three digits of `frac` (below 1000) and a tab.
#[inline(always)]
fn push_frac3_tab(out: &mut Vec<u8>, frac: u64) {
    out.extend_from_slice(&FRAC3_TAB[frac as usize % 1000]);
}

/// Appends `.` and the three digits of `frac` (below 1000).
#[inline(always)]
fn push_frac3(out: &mut Vec<u8>, frac: u64) {
    out.extend_from_slice(&FRAC3[frac as usize % 1000]);
}

/// Five digits and more, eight at a time ([`digits8`]): the leading zeros of the first
/// block shifted out, the other blocks whole. The digits are written left aligned in a
/// buffer of fixed size, which is appended whole (a fixed-size copy, no `memcpy` call)
/// and the excess cut off; with `TAB`, a tab after them.
#[inline(never)]
fn push_u64_long<const TAB: bool>(out: &mut Vec<u8>, n: u64) {
    const E8: u64 = 100_000_000;
    let mut buf = [0u8; 32];
    // The first block without its leading zeros (it is not 0), then whole blocks.
    let first = |x: u64, buf: &mut [u8; 32]| {
        let d = digits8(x as u32);
        let zeros = d.trailing_zeros() / 8;
        buf[..8].copy_from_slice(&((d | ASCII8) >> (8 * zeros)).to_le_bytes());
        8 - zeros as usize
    };
    let whole = |x: u64, at: usize, buf: &mut [u8; 32]| {
        buf[at..at + 8].copy_from_slice(&(digits8(x as u32) | ASCII8).to_le_bytes());
    };
    let len = if n < E8 {
        first(n, &mut buf)
    } else if n < E8 * E8 {
        let k = first(n / E8, &mut buf);
        whole(n % E8, k, &mut buf);
        k + 8
    } else {
        let k = first(n / (E8 * E8), &mut buf);
        whole(n / E8 % E8, k, &mut buf);
        whole(n % E8, k + 8, &mut buf);
        k + 16
    };
    buf[len] = b'\t';
    let start = out.len();
    out.extend_from_slice(&buf[..25]);
    out.truncate(start + len + TAB as usize);
}

/// `'0'` in each byte: digits to ASCII.
const ASCII8: u64 = 0x3030_3030_3030_3030;

/// The eight decimal digits of `x` (below 10⁸), one a byte, the most significant in the
/// lowest byte (first in memory): divisions by 10⁴, 100 and 10 done on all lanes of a
/// word at once, by multiplications ("SIMD within a register"). Each quotient is exact
/// for the lane's range: `v * 10486 >> 20` is `v / 100` below 10⁴, `v * 103 >> 10` is
/// `v / 10` below 100, and no lane's product reaches the next lane's bits that are kept.
#[inline(always)]
fn digits8(x: u32) -> u64 {
    let x = u64::from(x);
    // 32-bit lanes: the upper four digits first, then the lower four.
    let a = (x / 10_000) | ((x % 10_000) << 32);
    let hundreds = ((a * 10_486) >> 20) & 0x0000_007f_0000_007f;
    // 16-bit lanes: hundreds and rest of each half, in order.
    let b = hundreds | ((a - 100 * hundreds) << 16);
    let tens = ((b * 103) >> 10) & 0x000f_000f_000f_000f;
    // Bytes: tens and ones of each 16-bit lane, in order.
    tens | ((b - 10 * tens) << 8)
}

/// Writes `v` with three decimals (times are in ms: three decimals are µs, the
/// precision of the input), rounded half away from zero; false for NaN and infinities
/// (nothing written). By hand, through integers: `format!("{:.3}")` costs about ten
/// times more, and a record has dozens of these. (Not `ryu`: it writes the shortest
/// text that reads back to the same double, not three fixed decimals.)
#[inline]
pub fn f64_value(v: f64, out: &mut Vec<u8>) -> bool {
    f64_fixed3::<false>(v, out)
}

/// [`f64_value`], then a tab (also for NaN and infinities, which write nothing).
#[inline]
pub fn f64_value_tab(v: f64, out: &mut Vec<u8>) {
    if !f64_fixed3::<true>(v, out) {
        out.push(b'\t');
    }
}

#[inline(always)]
fn f64_fixed3<const TAB: bool>(v: f64, out: &mut Vec<u8>) -> bool {
    if !v.is_finite() {
        return false;
    }
    let a = v.abs() * 1000.0;
    // `a.round()` without the libm call: below 1e18 the integer part is exact in a
    // u64 and `a - trunc(a)` is exact in an f64 (Sterbenz), so comparing it with 0.5
    // rounds half away from zero as `round` does. round(a) >= 1e18 exactly when
    // a >= 1e18 (doubles there are integers).
    if a >= 1e18 {
        f64_huge(v, out);
        if TAB {
            out.push(b'\t');
        }
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
    if TAB {
        push_frac3_tab(out, t % 1000);
    } else {
        push_frac3(out, t % 1000);
    }
    true
}

/// Values of 1e15 and more (never a time or a size): through `fmt`, off the row path.
#[cold]
#[inline(never)]
fn f64_huge(v: f64, out: &mut Vec<u8>) {
    let _ = write!(out, "{v:.3}");
}

/// Writes microseconds as milliseconds with three decimals.
#[inline(always)]
pub fn micros_value(us: u64, out: &mut Vec<u8>) {
    push_u64(out, us / 1000);
    push_frac3(out, us % 1000);
}

/// [`micros_value`] and a tab.
#[inline(always)]
pub fn micros_value_tab(us: u64, out: &mut Vec<u8>) {
    push_u64(out, us / 1000);
    push_frac3_tab(out, us % 1000);
}

/// Writes an address as `Display` does (IPv6 compressed as RFC 5952 says), by hand:
/// `fmt` costs a dozen calls and over a thousand instructions an IPv6 address.
#[inline]
pub fn ip_value(ip: std::net::IpAddr, out: &mut Vec<u8>) {
    match ip {
        std::net::IpAddr::V4(a) => ipv4_value(a.octets(), out),
        std::net::IpAddr::V6(a) => ipv6_value(a, out),
    }
}

/// The text of each octet value: its digits, dots after them, and the count of digits
/// in the last byte.
static OCTET: [[u8; 4]; 256] = {
    let mut t = [[0u8; 4]; 256];
    let mut i = 0;
    while i < 256 {
        let o = i as u8;
        t[i] = if o >= 100 {
            [b'0' + o / 100, b'0' + o / 10 % 10, b'0' + o % 10, 3]
        } else if o >= 10 {
            [b'0' + o / 10, b'0' + o % 10, b'.', 2]
        } else {
            [b'0' + o, b'.', b'.', 1]
        };
        i += 1;
    }
    t
};

/// Dotted decimal, each octet without leading zeros ([`OCTET`]), in one store of fixed
/// size.
#[inline]
fn ipv4_value(octets: [u8; 4], out: &mut Vec<u8>) {
    let mut buf = [b'.'; 20];
    let mut len = 0;
    for o in octets {
        let t = OCTET[usize::from(o)];
        buf[len..len + 3].copy_from_slice(&t[..3]);
        len += usize::from(t[3]) + 1;
    }
    let start = out.len();
    out.extend_from_slice(&buf[..16]);
    // The last octet's dot is not the address's.
    out.truncate(start + len - 1);
}

/// IPv6 text as `Ipv6Addr`'s `Display` writes it (RFC 5952 §4): groups in lowercase
/// hex without leading zeros, the longest run of two or more zero groups (the first
/// of equal ones) as `::`, and `::ffff:` and dotted decimal for an IPv4-mapped address.
#[inline(never)]
fn ipv6_value(a: std::net::Ipv6Addr, out: &mut Vec<u8>) {
    let seg = a.segments();
    if let [0, 0, 0, 0, 0, 0xffff, ..] = seg {
        out.extend_from_slice(b"::ffff:");
        let [.., w, x, y, z] = a.octets();
        return ipv4_value([w, x, y, z], out);
    }
    // The longest run of zero groups (the first when two are as long).
    let (mut best_start, mut best_len, mut cur_start, mut cur_len) = (0, 0, 0, 0);
    for (i, &g) in seg.iter().enumerate() {
        if g == 0 {
            if cur_len == 0 {
                cur_start = i;
            }
            cur_len += 1;
            if cur_len > best_len {
                (best_start, best_len) = (cur_start, cur_len);
            }
        } else {
            cur_len = 0;
        }
    }
    if best_len < 2 {
        best_start = 8;
        best_len = 0;
    }
    // At most 8 groups of 4 digits and 7 colons (39 bytes), or fewer with `::`.
    let mut buf = [0u8; 40];
    let mut len = 0;
    let mut i = 0;
    while i < 8 {
        if i == best_start {
            buf[len] = b':';
            buf[len + 1] = b':';
            len += 2;
            i += best_len;
            continue;
        }
        if i > 0 && i != best_start + best_len {
            buf[len] = b':';
            len += 1;
        }
        let g = seg[i];
        // Hex digits without leading zeros: 1 to 4 of them.
        let n = (16 - g.leading_zeros().min(15) as usize).div_ceil(4);
        let mut k = n;
        while k > 0 {
            k -= 1;
            buf[len + n - 1 - k] = HEX[usize::from(g >> (4 * k) & 15)];
        }
        len += n;
        i += 1;
    }
    let start = out.len();
    out.extend_from_slice(&buf);
    out.truncate(start + len);
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

/// Whether `b` is, or may begin, what [`str_value`] escapes: a C0 control, DEL, a
/// backslash, a double quote, or the first byte of a C1 control (0xC2) or of U+2028
/// and U+2029 (0xE2; other characters of those lead bytes are written as they are).
#[inline(always)]
fn may_escape(b: u8) -> bool {
    (b < 0x20) | (b == 0x7f) | (b == b'\\') | (b == b'"') | (b == 0xc2) | (b == 0xe2)
}

/// Whether `s` holds a byte of `may_escape`. Strings without one, nearly all of
/// them, are copied as they are, so this is the whole cost of a string on the hot path:
/// eight bytes at a time, each test a few word operations instead of a branch per byte
/// (the last word overlaps the one before; under eight bytes, two overlapping halves).
/// A first pass tests only the ASCII bytes to escape and flags every byte from 0x7F
/// up; only text with such bytes (DEL or UTF-8 beyond ASCII) is looked at again for
/// DEL, 0xC2 and 0xE2.
#[inline]
pub fn may_need_escape(s: &[u8]) -> bool {
    let n = s.len();
    let (esc, high) = if n >= 8 {
        let (words, rest) = s.as_chunks::<8>();
        let (mut esc, mut high) = (0, 0);
        for w in words {
            let (e, h) = word_ascii_escape(u64::from_le_bytes(*w));
            (esc, high) = (esc | e, high | h);
        }
        if !rest.is_empty() {
            let last = s.last_chunk::<8>().copied().unwrap_or_default();
            let (e, h) = word_ascii_escape(u64::from_le_bytes(last));
            (esc, high) = (esc | e, high | h);
        }
        (esc, high)
    } else if n >= 4 {
        let half = |i: usize| u32::from_le_bytes(s[i..i + 4].try_into().unwrap_or([0; 4]));
        // The upper half repeats the lower (not zeros, which are controls).
        let lo = u64::from(half(0));
        let hi = u64::from(half(n - 4));
        word_ascii_escape(lo | hi << 32)
    } else {
        return s.iter().any(|&b| may_escape(b));
    };
    esc != 0 || (high != 0 && may_need_escape_exact(s))
}

/// The exact test of every word for text with bytes from 0x7F up.
#[inline(never)]
fn may_need_escape_exact(s: &[u8]) -> bool {
    let n = s.len();
    if n < 8 {
        return s.iter().any(|&b| may_escape(b));
    }
    let (words, _) = s.as_chunks::<8>();
    let last = s.last_chunk::<8>().copied().unwrap_or_default();
    words.iter().any(|w| word_may_escape(u64::from_le_bytes(*w))) || word_may_escape(u64::from_le_bytes(last))
}

/// For the eight bytes of `x`: a word not zero when one is a C0 control, a backslash or
/// a double quote, exactly (as [`word_may_escape`] tests), and a word not zero when one
/// is 0x7F or above (the high bit of each such byte: the low seven bits plus one carry
/// into it only from 0x7F, and never into the next byte).
#[inline(always)]
fn word_ascii_escape(x: u64) -> (u64, u64) {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    let zero = |v: u64| v.wrapping_sub(LO) & !v & HI;
    let below_space = x.wrapping_sub(LO * 0x20) & !x & HI;
    let eq = |b: u8| zero(x ^ (LO * u64::from(b)));
    let high = (((x & !HI) + LO) | x) & HI;
    (below_space | eq(b'\\') | eq(b'"'), high)
}

/// [`may_escape`] for any of the eight bytes of `x`, exactly: the tests for a byte below
/// n (here 0x20) and for a zero byte (after an XOR with the byte looked for) of "Bit
/// Twiddling Hacks", which may misplace a byte found but never find one that is not
/// there nor miss one that is.
#[inline(always)]
fn word_may_escape(x: u64) -> bool {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    let zero = |v: u64| v.wrapping_sub(LO) & !v & HI;
    let below_space = x.wrapping_sub(LO * 0x20) & !x & HI;
    let eq = |b: u8| zero(x ^ (LO * u64::from(b)));
    (below_space | eq(0x7f) | eq(b'\\') | eq(b'"') | eq(0xc2) | eq(0xe2)) != 0
}

/// How many bytes at the start of `b` make one character to escape: 1 for a C0
/// control, DEL, a backslash or a double quote, 2 for a C1 control (U+0080 to U+009F),
/// 3 for U+2028 and U+2029, 0 for anything else.
#[inline]
pub fn escape_len(b: &[u8]) -> usize {
    match b {
        [c, ..] if *c < 0x20 || matches!(c, 0x7f | b'\\' | b'"') => 1,
        [0xc2, 0x80..=0x9f, ..] => 2,
        [0xe2, 0x80, 0xa8 | 0xa9, ..] => 3,
        _ => 0,
    }
}

/// A string made safe for a TSV field: tab, line feed, carriage return, backslash and
/// double quote escaped by a backslash (`\t`, `\n`, `\r`, `\\`, `\"`), and every other
/// control character byte by byte as `\xNN` (two lowercase hex digits, as Zeek writes
/// them): the C0 controls, DEL, the C1 controls U+0080 to U+009F (`\xc2\x85` for NEL)
/// and the line and paragraph separators U+2028 and U+2029 (`\xe2\x80\xa8`). Nothing
/// when empty.
///
/// Strings may come off the wire (server names, User-Agents...): whatever they hold, a
/// record stays one line for any line splitter (Python's `splitlines()` splits at VT,
/// FF, FS, GS, RS, NEL and U+2028 too), a value one column, and a log shown in a
/// terminal (`tail -f`) carries no escape sequence to it. A value never starts with
/// `"`, so readers that take `"` as a quote (pandas' and DuckDB's defaults) read it as
/// it is written.
#[inline]
pub fn str_value(s: &str, out: &mut Vec<u8>) {
    bytes_value(s.as_bytes(), out)
}

/// [`str_value`] of a string's bytes (an item of a list, split off without looking
/// for character boundaries again: NUL is one byte in UTF-8).
#[inline(always)]
fn bytes_value(s: &[u8], out: &mut Vec<u8>) {
    if !may_need_escape(s) {
        out.extend_from_slice(s);
        return;
    }
    str_escaped(s, out);
}

/// A [`Value::Token`]: copied as it is (it holds nothing [`str_value`] escapes).
#[inline(always)]
pub fn token_value(s: &str, out: &mut Vec<u8>) {
    debug_assert!(!may_need_escape(s.as_bytes()), "a token needs no escape: {s:?}");
    out.extend_from_slice(s.as_bytes());
}

/// [`str_value`] for a string with something to escape, or bytes of the lead bytes
/// 0xC2 and 0xE2 that are not: runs without escapes copied whole.
#[inline(never)]
fn str_escaped(b: &[u8], out: &mut Vec<u8>) {
    escape_with(b, out, |ch, out| match ch[0] {
        b'\t' => out.extend_from_slice(b"\\t"),
        b'\n' => out.extend_from_slice(b"\\n"),
        b'\r' => out.extend_from_slice(b"\\r"),
        b'\\' => out.extend_from_slice(b"\\\\"),
        b'"' => out.extend_from_slice(b"\\\""),
        _ => {
            for &c in ch {
                out.extend_from_slice(&[b'\\', b'x', HEX[usize::from(c >> 4)], HEX[usize::from(c & 15)]]);
            }
        }
    });
}

/// Lowercase hexadecimal digits.
pub const HEX: &[u8; 16] = b"0123456789abcdef";

/// Appends `b` with each character to escape ([`escape_len`]: its 1 to 3 bytes) written
/// by `escape`, and the runs between them copied whole: the loop the TSV and the JSON
/// writers share, each with its own escapes.
#[inline]
pub fn escape_with(b: &[u8], out: &mut Vec<u8>, mut escape: impl FnMut(&[u8], &mut Vec<u8>)) {
    let (mut i, mut run) = (0, 0);
    while i < b.len() {
        let n = escape_len(&b[i..]);
        if n == 0 {
            i += 1;
            continue;
        }
        out.extend_from_slice(&b[run..i]);
        escape(&b[i..i + n], out);
        i += n;
        run = i;
    }
    out.extend_from_slice(&b[run..]);
}

/// A string as [`str_value`] wrote it, back: a backslash escapes the character after
/// it, `\t`, `\n` and `\r` stand for tab, line feed and carriage return, `\x` and two
/// hex digits for that byte (bytes that do not make UTF-8 read as U+FFFD).
pub fn unescape(t: &str) -> String {
    if !t.contains('\\') {
        return t.to_string();
    }
    let hex = |c: Option<&u8>| match c {
        Some(c @ b'0'..=b'9') => Some(c - b'0'),
        Some(c @ (b'a'..=b'f' | b'A'..=b'F')) => Some((c | 0x20) - b'a' + 10),
        _ => None,
    };
    let b = t.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'\\' {
            out.push(b[i]);
            i += 1;
            continue;
        }
        match b.get(i + 1) {
            Some(b't') => out.push(b'\t'),
            Some(b'n') => out.push(b'\n'),
            Some(b'r') => out.push(b'\r'),
            Some(b'x') if hex(b.get(i + 2)).is_some() && hex(b.get(i + 3)).is_some() => {
                out.push(hex(b.get(i + 2)).unwrap_or(0) << 4 | hex(b.get(i + 3)).unwrap_or(0));
                i += 2;
            }
            // Any other character as it is (the bytes after the first of a longer
            // one are never a backslash: the next turns copy them).
            Some(&c) => out.push(c),
            None => {}
        }
        i += 2;
    }
    match String::from_utf8(out) {
        Ok(s) => s,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    }
}

/// Whether an item of a list, as [`str_value`] wrote it, goes in quotes: when it holds
/// a list's separator, bracket or quote (`,` `[` `]` `{` `}` `(` `)` `'` `"`) or a
/// backslash (an escape), starts or ends with a space (which a list reader trims), or
/// is `null` in any case (which DuckDB reads as NULL).
#[inline]
fn needs_quotes(e: &[u8]) -> bool {
    e.iter().fold(false, |any, &b| any | QUOTED[usize::from(b)])
        || e.first() == Some(&b' ')
        || e.last() == Some(&b' ')
        || e.eq_ignore_ascii_case(b"null")
}

/// The bytes that put an item of a list in quotes ([`needs_quotes`]), by value: one
/// load a byte rather than ten comparisons.
static QUOTED: [bool; 256] = {
    let mut t = [false; 256];
    let special = b",[]{}()'\"\\";
    let mut i = 0;
    while i < special.len() {
        t[special[i] as usize] = true;
        i += 1;
    }
    t
};

/// Appends one item of a list of texts: [`str_value`], in single quotes (backslashes
/// and quotes escaped by a backslash) where [`needs_quotes`] says so.
#[inline]
fn list_item(s: &[u8], out: &mut Vec<u8>) {
    let start = out.len();
    bytes_value(s, out);
    if needs_quotes(&out[start..]) {
        let e = out.split_off(start);
        out.push(b'\'');
        for b in e {
            if b == b'\\' || b == b'\'' {
                out.push(b'\\');
            }
            out.push(b);
        }
        out.push(b'\'');
    }
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
        Value::Token(s) => token_value(s, out),
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
            let items = s.as_bytes().split(|&b| b == 0).filter(|_| !s.is_empty());
            for (i, item) in items.enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                list_item(item, out);
            }
            out.push(b']');
        }
        Value::Names { bits, names } => {
            out.push(b'[');
            for (i, item) in named(bits, names).enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                list_item(item.as_bytes(), out);
            }
            out.push(b']');
        }
    }
}

/// [`value`] and a tab: what the writers of [`run!`](crate::run) append for each
/// column. Numbers, times and flags are written with their tab in one store.
#[inline(always)]
pub fn value_tab(v: Value<'_>, out: &mut Vec<u8>) {
    match v {
        Value::U64(n) => push_u64_tab(out, n),
        Value::Micros(us) => micros_value_tab(us, out),
        Value::F64(x) => f64_value_tab(x, out),
        Value::Bool(b) => out.extend_from_slice(if b { b"1\t" } else { b"0\t" }),
        Value::None => out.push(b'\t'),
        Value::Str(s) => {
            str_value(s, out);
            out.push(b'\t');
        }
        Value::Token(s) => {
            token_value(s, out);
            out.push(b'\t');
        }
        v => {
            value_cold(v, out);
            out.push(b'\t');
        }
    }
}

/// [`value`] for texts, addresses and lists, out of the writers' straight line.
#[inline(never)]
fn value_cold(v: Value<'_>, out: &mut Vec<u8>) {
    value(v, out)
}

/// The items of a list of texts as [`value`] writes it (`[a.example,'a,b']`), each
/// back to the string it was: `None` for a field that is not such a list. An item in
/// single quotes has `\\` for a backslash and `\'` for a quote; then, quoted or not,
/// it is unescaped as a string ([`unescape`]).
pub fn list_items(field: &str) -> Option<Vec<String>> {
    let inner = field.strip_prefix('[')?.strip_suffix(']')?;
    let mut items = Vec::new();
    if inner.is_empty() {
        return Some(items);
    }
    let mut it = inner.chars().peekable();
    loop {
        let mut item = String::new();
        if it.peek() == Some(&'\'') {
            it.next();
            loop {
                match it.next()? {
                    '\'' => break,
                    '\\' => item.push(it.next()?),
                    c => item.push(c),
                }
            }
        } else {
            while let Some(&c) = it.peek() {
                if c == ',' {
                    break;
                }
                item.push(c);
                it.next();
            }
        }
        items.push(unescape(&item));
        match it.next() {
            None => return Some(items),
            Some(',') => {}
            Some(_) => return None,
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

    /// Addresses as `Display` writes them (RFC 5952), the writer's model: every zero
    /// run placement, ties, mapped and compatible IPv4, and many random ones.
    #[test]
    fn addresses_are_written_as_display_does() {
        let mut addrs: Vec<std::net::IpAddr> = Vec::new();
        // Every pattern of zero and non-zero groups, with values of 1 to 4 hex digits.
        for mask in 0u32..256 {
            for v in [1u16, 0xa, 0x10, 0xab, 0x100, 0xfff, 0x1000, 0xffff] {
                let seg: Vec<u16> = (0..8).map(|i| if mask & (1 << i) != 0 { v.wrapping_add(i) } else { 0 }).collect();
                let a = std::net::Ipv6Addr::new(seg[0], seg[1], seg[2], seg[3], seg[4], seg[5], seg[6], seg[7]);
                addrs.push(a.into());
            }
        }
        for s in [
            "::",
            "::1",
            "::ffff:1.2.3.4",
            "::ffff:0.0.0.0",
            "::1.2.3.4",
            "64:ff9b::192.0.2.1",
            "fe80::1:0:0:1",
            "2001:db8:0:0:1:0:0:1",
        ] {
            addrs.push(s.parse().unwrap());
        }
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..20_000 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let hi = seed;
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            // Zero some groups at random so that runs of zeros are common.
            let z = seed.rotate_left(17) & 0x0000_ffff_0000_ffff & hi.rotate_right(9);
            let x = (u128::from(hi) << 64 | u128::from(seed)) & !(u128::from(z) * 0xffff);
            addrs.push(std::net::Ipv6Addr::from(x).into());
            addrs.push(std::net::Ipv4Addr::from(seed as u32).into());
        }
        let mut out = Vec::new();
        for a in addrs {
            out.clear();
            ip_value(a, &mut out);
            assert_eq!(String::from_utf8(out.clone()).unwrap(), a.to_string());
        }
    }

    #[test]
    fn values_with_their_tab_are_the_values_and_a_tab() {
        let mut xs = vec![Value::None, Value::Bool(true), Value::Bool(false), Value::F64(f64::NAN), Value::F64(-0.0)];
        for p in 0..20 {
            let t = 10u64.pow(p);
            xs.extend([Value::U64(t), Value::U64(t - 1), Value::Micros(t), Value::Micros(t - 1)]);
            xs.extend([Value::F64(t as f64 / 7.0), Value::F64(-(t as f64) / 3.0), Value::F64(t as f64 * 1e3)]);
        }
        xs.extend([Value::U64(u64::MAX), Value::Micros(u64::MAX), Value::F64(f64::MAX), Value::F64(1e18)]);
        xs.extend([Value::Str("a\tb"), Value::Ip("::1".parse().unwrap()), Value::Strs("a,b\0c")]);
        for v in xs {
            let (mut a, mut b) = (Vec::new(), Vec::new());
            value(v, &mut a);
            a.push(b'\t');
            value_tab(v, &mut b);
            assert_eq!(String::from_utf8(a).unwrap(), String::from_utf8(b).unwrap(), "{v:?}");
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
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..200_000 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            // Every length, from one digit to twenty.
            all.push(seed >> (seed % 64));
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
        assert_eq!(tsv(Value::Strs("a.example\u{0}192.0.2.1\u{0}t\"ab")), r#"[a.example,192.0.2.1,'t\\"ab']"#);
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

    /// A string and what `str_value` writes for it.
    fn escaped(s: &str) -> String {
        let mut out = Vec::new();
        str_value(s, &mut out);
        String::from_utf8(out).unwrap()
    }

    /// Characters a terminal, `splitlines()` or a JSON-in-JavaScript reader acts on.
    fn acted_on(c: char) -> bool {
        c.is_control() || matches!(c, '\u{2028}' | '\u{2029}')
    }

    #[test]
    fn controls_are_escaped_as_zeek_does() {
        // An ANSI colour (ESC), NUL, BEL, VT, FF, FS GS RS, DEL, NEL, the line and
        // paragraph separators: each byte as \xNN.
        for (s, want) in [
            ("\u{1b}[31mred", r"\x1b[31mred"),
            ("a\0b\u{7}c", r"a\x00b\x07c"),
            ("\u{b}\u{c}\u{1c}\u{1d}\u{1e}\u{1f}", r"\x0b\x0c\x1c\x1d\x1e\x1f"),
            ("del\u{7f}", r"del\x7f"),
            ("nel\u{85}c1\u{80}\u{9f}", r"nel\xc2\x85c1\xc2\x80\xc2\x9f"),
            ("ls\u{2028}ps\u{2029}", r"ls\xe2\x80\xa8ps\xe2\x80\xa9"),
            ("tab\tlf\ncr\r", r"tab\tlf\ncr\r"),
        ] {
            assert_eq!(escaped(s), want, "{s:?}");
            assert_eq!(unescape(want), s);
        }
        // Text around them, and other characters of the same lead bytes, as they are.
        for s in ["é€…©\u{a0}\u{a0}x\u{2027}\u{202a}\u{2030}\u{c2}", "host.example", "日本語.jp", ""] {
            assert_eq!(escaped(s), s);
        }
        // Every character of the first planes, alone and amid text: no control left,
        // and read back whole.
        for c in (0..0x3000u32).chain([0xfeff, 0x10ffff]).filter_map(char::from_u32) {
            for s in [c.to_string(), format!("ab{c}cd{c}\u{85}é{c}")] {
                let t = escaped(&s);
                assert!(!t.chars().any(acted_on), "{s:?} -> {t:?}");
                assert_eq!(unescape(&t), s, "{t:?}");
            }
        }
    }

    #[test]
    fn unescape_reads_hex_bytes_and_keeps_what_is_not_an_escape() {
        assert_eq!(unescape(r"\x41\x62"), "Ab");
        assert_eq!(unescape(r"\xe2\x80\xa8|\xC2\x85"), "\u{2028}|\u{85}");
        // Not two hex digits: the character after the backslash, as any other.
        assert_eq!(unescape(r"\xg1\x4"), "xg1x4");
        // Bytes that are not UTF-8 read as U+FFFD, never a panic.
        assert_eq!(unescape(r"\xff\xe2\x80"), "\u{fffd}\u{fffd}");
        assert_eq!(unescape("trailing\\"), "trailing");
    }

    #[test]
    fn list_items_are_quoted_where_a_list_reader_needs_it() {
        // Names and addresses as they always were.
        let plain = "a.example\u{0}192.0.2.1\u{0}2001:db8::1\u{0}é.example\u{0}xn--bcher-kva.example\u{0}_sip._udp";
        assert_eq!(
            tsv(Value::Strs(plain)),
            "[a.example,192.0.2.1,2001:db8::1,é.example,xn--bcher-kva.example,_sip._udp]"
        );
        // An item that would split, close, nest or quote the list, be trimmed or read as
        // NULL, or holds an escape, in single quotes, its backslashes and quotes escaped.
        let hostile = "a,b\0[x]\0it's\0 sp\0sp \0null\0NuLL\0t\"ab\0b\\s\0\u{1b}[0m\0{x}\0(y)\0";
        assert_eq!(
            tsv(Value::Strs(hostile)),
            r#"['a,b','[x]','it\'s',' sp','sp ','null','NuLL','t\\"ab','b\\\\s','\\x1b[0m','{x}','(y)',]"#
        );
        for s in [plain, hostile, "\0", "a\0\0b", "'\0\\\0\"\0 \0,"] {
            let t = tsv(Value::Strs(s));
            assert!(!t.contains(['\t', '\n', '\r']) && !t.chars().any(acted_on), "{t:?}");
            assert_eq!(list_items(&t), Some(strs(s).map(String::from).collect()), "{t:?}");
        }
        assert_eq!(list_items("[]"), Some(vec![]));
        assert_eq!(list_items(""), None);
        assert_eq!(list_items("['open]"), None);
        assert_eq!(list_items("['a'b]"), None);
    }

    #[test]
    fn the_word_scan_finds_exactly_the_bytes_to_escape() {
        for b in 0..=255u8 {
            for fill in [b'a', 0x80, 0xc3, 0xff, 0x21] {
                for len in 1..26 {
                    for at in 0..len {
                        let mut s = vec![fill; len];
                        s[at] = b;
                        assert_eq!(may_need_escape(&s), may_escape(b) || may_escape(fill), "{b:#x} at {at} of {len}");
                    }
                }
            }
        }
        assert!(!may_need_escape(b""));
    }
}
