//! Client fingerprints of a ClientHello: JA3 (Salesforce, 2017) and JA4 (FoxIO, 2023).
//!
//! JA3: `version,ciphers,extensions,groups,point_formats`, decimal values joined with `-`,
//! GREASE removed, in the order the client sent them; its MD5 is what tools print.
//! JA4 (the JA4+ technical spec, `JA4.md`): `a_b_c` where `a` is
//! protocol, version, SNI presence, cipher and extension counts and the ALPN's first and
//! last characters; `b` is the SHA-256 of the sorted cipher list and `c` of the sorted
//! extensions (without SNI and ALPN) followed by the signature algorithms in their order,
//! each truncated to 12 hex digits.
//!
//! Cost: two per-worker memos stand in front of the work, each answering exactly what
//! computing would (a hit compares the whole key). `HelloMemo` keys a hello by every
//! input its fingerprints read (GREASE dropped) and hands back the finished strings: a
//! network's hellos come from a few client and server stacks. Behind it, `Memo` keys
//! each digest by what is hashed (a JA3 string, JA4's sorted lists), so a hello that
//! misses the first (Chrome's shuffled extension order) still skips MD5 and SHA-256
//! where a sorted list was seen. Under callgrind SHA-256 runs in software; on a CPU
//! with SHA extensions it is cheaper than it looks there.

use md5::{Digest, Md5};
use sha2::Sha256;

use super::parser::{is_grease, ClientHello, KnownExtensions, ServerHello, EXT_ALPN, EXT_SERVER_NAME};

/// The transport JA4 puts first: `t` TLS over TCP, `q` QUIC, `d` DTLS.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ja4Transport {
    Tcp,
    Quic,
    Dtls,
}

/// The fingerprints of one ClientHello.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Fingerprints {
    pub ja3: String,
    /// Lowercase hex MD5 of `ja3`.
    pub ja3_md5: String,
    pub ja4: String,
}

/// JA3, its MD5 and JA4 of one ClientHello, whose extensions `known` has found
/// (`ClientHello::known_extensions`), with the digests from the worker's memo when the
/// same inputs were hashed lately (see `Memo`).
///
/// Cost: each string is built in one pass, with hex and decimal by hand (no
/// `core::fmt`); JA4's lists are sorted on the stack unless a hello offers more than
/// `INLINE` of them, and hashed as they are written out, without a string.
pub fn fingerprints(ch: &ClientHello<'_>, known: &KnownExtensions<'_>, transport: Ja4Transport) -> Fingerprints {
    fingerprints_with(ch, known, transport, true)
}

/// As `fingerprints`, every digest computed (the memo neither read nor filled).
pub fn compute(ch: &ClientHello<'_>, known: &KnownExtensions<'_>, transport: Ja4Transport) -> Fingerprints {
    fingerprints_with(ch, known, transport, false)
}

fn fingerprints_with(
    ch: &ClientHello<'_>,
    known: &KnownExtensions<'_>,
    transport: Ja4Transport,
    memo: bool,
) -> Fingerprints {
    if !memo {
        return fingerprints_computed(ch, known, transport, false);
    }
    HELLO_MEMO.with(|m| match m.try_borrow_mut() {
        Ok(mut m) => {
            m.get(|key| hello_key(key, ch, known, transport), || fingerprints_computed(ch, known, transport, true))
        }
        // Only a re-entrant call could find it borrowed; there is none, but stay correct.
        Err(_) => fingerprints_computed(ch, known, transport, true),
    })
}

/// The three strings built, with the digests from the worker's digest memo when `memo`.
fn fingerprints_computed(
    ch: &ClientHello<'_>,
    known: &KnownExtensions<'_>,
    transport: Ja4Transport,
    memo: bool,
) -> Fingerprints {
    let ja3 = ja3_with(ch, known);
    Fingerprints { ja3_md5: md5_hex(&ja3, memo), ja4: ja4_with(ch, known, transport, memo), ja3 }
}

/// Slots of each memo of whole hello fingerprints (direct-mapped), per worker.
const HELLO_MEMO_SLOTS: usize = 256;

thread_local! {
    static HELLO_MEMO: std::cell::RefCell<HelloMemo<Fingerprints>> =
        const { std::cell::RefCell::new(HelloMemo::new()) };
    static SERVER_HELLO_MEMO: std::cell::RefCell<HelloMemo<ServerFingerprints>> =
        const { std::cell::RefCell::new(HelloMemo::new()) };
}

/// The fingerprints of recent hellos, keyed by every input they are computed from
/// (`hello_key`, `server_hello_key`): a network's hellos come from a few client and
/// server stacks that send the same lists again and again (in mix-small 426
/// ClientHellos, 93 distinct keys), so most are answered with a few string copies
/// instead of building JA3 in decimal, JA4, and the digest memo's keys. A hit is checked
/// against the whole key, so it gives what computing would. Chrome's shuffled extension
/// order misses here and is answered by the digest memo (`Memo`) as before.
type HelloMemo<T> = KeyedMemo<T, HELLO_MEMO_SLOTS>;

/// A direct-mapped memo of `SLOTS` entries (a power of two), each a value under the
/// whole key it was computed from: `HelloMemo` and the digest memo (`Memo`).
struct KeyedMemo<T, const SLOTS: usize> {
    slots: Vec<Option<MemoSlot<T>>>,
    /// The key being built, reused.
    key: Vec<u8>,
}

struct MemoSlot<T> {
    hash: u64,
    key: Box<[u8]>,
    value: T,
}

impl<T: Clone, const SLOTS: usize> KeyedMemo<T, SLOTS> {
    const fn new() -> Self {
        KeyedMemo { slots: Vec::new(), key: Vec::new() }
    }

    fn get(&mut self, build_key: impl FnOnce(&mut Vec<u8>), compute: impl FnOnce() -> T) -> T {
        self.key.clear();
        build_key(&mut self.key);
        if self.key.len() > MEMO_MAX_KEY {
            return compute();
        }
        let hash = hash_bytes(&self.key);
        if self.slots.is_empty() {
            self.slots.resize_with(SLOTS, || None);
        }
        // The top bits: the multiply in `hash_bytes` mixes them best.
        let slot = &mut self.slots[(hash >> (64 - SLOTS.trailing_zeros())) as usize];
        if let Some(s) = slot {
            if s.hash == hash && *s.key == *self.key {
                return s.value.clone();
            }
        }
        let value = compute();
        *slot = Some(MemoSlot { hash, key: self.key.as_slice().into(), value: value.clone() });
        value
    }
}

/// Writes into `key` everything JA3 and JA4 are computed from, as the fingerprint code
/// reads it: the transport, the legacy version, the cipher suites, the extension types,
/// the supported groups, the point formats, whether supported_versions is present and its
/// versions, the signature algorithms (every list without GREASE, in the client's order,
/// after its length) and the first ALPN protocol. Equal keys give equal fingerprints.
fn hello_key(key: &mut Vec<u8>, ch: &ClientHello<'_>, known: &KnownExtensions<'_>, transport: Ja4Transport) {
    key.push(transport as u8);
    key.extend_from_slice(&ch.legacy_version.to_le_bytes());
    push_list_key(key, ch.ciphers());
    push_list_key(key, ch.extensions().map(|(t, _)| t));
    push_list_key(key, known.supported_groups());
    let pf = known.ec_point_formats();
    key.extend_from_slice(&(pf.len() as u32).to_le_bytes());
    key.extend_from_slice(pf);
    key.push(u8::from(known.supported_versions.is_some()));
    push_list_key(key, known.supported_versions());
    push_list_key(key, known.signature_algorithms());
    match known.alpn().next() {
        Some(a) => {
            key.push(1);
            key.extend_from_slice(&(a.len() as u32).to_le_bytes());
            key.extend_from_slice(a);
        }
        None => key.push(0),
    }
}

/// The values of `it` that are not GREASE, little-endian, after their count.
fn push_list_key(key: &mut Vec<u8>, it: impl Iterator<Item = u16>) {
    let at = key.len();
    key.reserve(4 + 2 * it.size_hint().1.unwrap_or(0));
    key.extend_from_slice(&[0; 4]);
    let mut n = 0u32;
    for v in it.filter(|&v| !is_grease(v)) {
        key.extend_from_slice(&v.to_le_bytes());
        n += 1;
    }
    key[at..at + 4].copy_from_slice(&n.to_le_bytes());
}

/// The JA3 string.
pub fn ja3_string(ch: &ClientHello<'_>) -> String {
    ja3_with(ch, &ch.known_extensions())
}

/// The lowercase hex MD5 of a JA3 string.
pub fn ja3_md5(ja3: &str) -> String {
    md5_hex(ja3, false)
}

/// The JA4 fingerprint, e.g. `t13d1516h2_8daaf6152771_e5627efa2ab1`.
pub fn ja4(ch: &ClientHello<'_>, transport: Ja4Transport) -> String {
    ja4_with(ch, &ch.known_extensions(), transport, false)
}

fn md5_hex(ja3: &str, memo: bool) -> String {
    let digest = memoized(
        memo,
        |key| {
            key.push(MemoKind::Md5 as u8);
            key.extend_from_slice(ja3.as_bytes());
        },
        || Md5::digest(ja3.as_bytes()).into(),
    );
    let mut s = String::with_capacity(32);
    push_hex(&mut s, &digest);
    s
}

/// What a memo entry is the digest of; the key's first byte.
#[derive(Clone, Copy)]
#[repr(u8)]
enum MemoKind {
    /// MD5 of a JA3 string; the key holds the string.
    Md5,
    /// JA4's part b: the sorted ciphers, little-endian.
    Ja4Ciphers,
    /// JA4's part c: the count of sorted extensions, them, then the signature
    /// algorithms, all little-endian.
    Ja4Extensions,
    /// JA4S's part c: a ServerHello's extensions in its order, little-endian.
    Ja4sExtensions,
}

/// Slots of the memo (direct-mapped), per worker thread.
const MEMO_SLOTS: usize = 512;
/// Keys longer than this are not memoized (a hello with hundreds of ciphers).
const MEMO_MAX_KEY: usize = 1024;

thread_local! {
    static MEMO: std::cell::RefCell<Memo> = const { std::cell::RefCell::new(Memo::new()) };
}

/// The digests of recent fingerprint inputs: a ClientHello's JA3 string (its MD5) and
/// JA4's two lists (their SHA-256), keyed by exactly what is hashed (the string, the
/// lists without GREASE). Equal keys give equal digests and a hit is checked against the
/// whole key, not only its hash, so a hit returns what hashing would. A network's
/// hellos come from a few client stacks, so most hit and skip MD5 and SHA-256; Chrome's
/// shuffled extension order (a new JA3 per connection) still hits JA4's sorted lists.
/// One memo per thread keeps workers shared-nothing; `MEMO_SLOTS` entries of at most
/// `MEMO_MAX_KEY` bytes each.
type Memo = KeyedMemo<[u8; 16], MEMO_SLOTS>;

/// The digest `compute` gives, from the thread's memo under the key `build_key` writes
/// when `memo` is set.
fn memoized(memo: bool, build_key: impl FnOnce(&mut Vec<u8>), compute: impl FnOnce() -> [u8; 16]) -> [u8; 16] {
    if !memo {
        return compute();
    }
    MEMO.with(|m| match m.try_borrow_mut() {
        Ok(mut m) => m.get(build_key, compute),
        // Only a re-entrant call could find it borrowed; there is none, but stay correct.
        Err(_) => compute(),
    })
}

/// A fast non-cryptographic hash (FxHash's step over 8-byte words): the memo compares
/// whole keys, so the hash only spreads them over the slots.
pub(crate) fn hash_bytes(b: &[u8]) -> u64 {
    const K: u64 = 0x517c_c1b7_2722_0a95;
    let step = |h: u64, w: u64| (h.rotate_left(5) ^ w).wrapping_mul(K);
    let mut h = step(0, b.len() as u64);
    let mut chunks = b.chunks_exact(8);
    for c in &mut chunks {
        h = step(h, u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]));
    }
    let mut last = [0u8; 8];
    last[..chunks.remainder().len()].copy_from_slice(chunks.remainder());
    step(h, u64::from_le_bytes(last))
}

fn push_u16s(key: &mut Vec<u8>, v: &[u16]) {
    for x in v {
        key.extend_from_slice(&x.to_le_bytes());
    }
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Lowercase hex of `b`, appended.
fn push_hex(s: &mut String, b: &[u8]) {
    for &x in b {
        s.push(char::from(HEX[usize::from(x >> 4)]));
        s.push(char::from(HEX[usize::from(x & 0x0f)]));
    }
}

/// "00" to "99", two bytes each.
const DIGIT_PAIRS: &[u8; 200] = b"0001020304050607080910111213141516171819\
2021222324252627282930313233343536373839\
4041424344454647484950515253545556575859\
6061626364656667686970717273747576777879\
8081828384858687888990919293949596979899";

/// `v` in decimal, appended: two digits at a time from `DIGIT_PAIRS`, each length
/// written with one fixed-size append (a variable-length copy would call `memcpy`).
fn push_decimal(s: &mut Vec<u8>, v: u16) {
    let pair = |n: u16| {
        let i = usize::from(n) * 2;
        [DIGIT_PAIRS[i], DIGIT_PAIRS[i + 1]]
    };
    let digit = |n: u16| b'0' + n as u8;
    match v {
        0..=9 => s.push(digit(v)),
        10..=99 => s.extend_from_slice(&pair(v)),
        100..=999 => {
            let [b, c] = pair(v % 100);
            s.extend_from_slice(&[digit(v / 100), b, c]);
        }
        1000..=9999 => {
            let ([a, b], [c, d]) = (pair(v / 100), pair(v % 100));
            s.extend_from_slice(&[a, b, c, d]);
        }
        _ => {
            let r = v % 10000;
            let ([b, c], [d, e]) = (pair(r / 100), pair(r % 100));
            s.extend_from_slice(&[digit(v / 10000), b, c, d, e]);
        }
    }
}

fn join_decimal(s: &mut Vec<u8>, it: impl Iterator<Item = u16>) {
    for (i, v) in it.enumerate() {
        if i > 0 {
            s.push(b'-');
        }
        push_decimal(s, v);
    }
}

fn ja3_with(ch: &ClientHello<'_>, known: &KnownExtensions<'_>) -> String {
    let mut s = Vec::with_capacity(256);
    push_decimal(&mut s, ch.legacy_version);
    s.push(b',');
    join_decimal(&mut s, ch.ciphers().filter(|&c| !is_grease(c)));
    s.push(b',');
    join_decimal(&mut s, ch.extensions().map(|(t, _)| t).filter(|&t| !is_grease(t)));
    s.push(b',');
    join_decimal(&mut s, known.supported_groups().filter(|&g| !is_grease(g)));
    s.push(b',');
    join_decimal(&mut s, known.ec_point_formats().iter().map(|&f| u16::from(f)));
    // Digits, '-' and ',' only: always UTF-8.
    String::from_utf8(s).unwrap_or_default()
}

/// JA4's version code: the highest non-GREASE entry of supported_versions, else the
/// legacy version.
fn ja4_version(legacy_version: u16, known: &KnownExtensions<'_>) -> &'static str {
    // Rank versions so DTLS (whose numbers go down as versions go up) compares right.
    fn rank(v: u16) -> (u8, &'static str) {
        match v {
            0x0304 => (7, "13"),
            0x0303 => (6, "12"),
            0x0302 => (5, "11"),
            0x0301 => (4, "10"),
            0x0300 => (3, "s3"),
            0x0002 => (2, "s2"),
            0xfefc => (7, "d3"),
            0xfefd => (6, "d2"),
            0xfeff => (5, "d1"),
            _ => (0, "00"),
        }
    }
    let best = known.supported_versions().filter(|&v| !is_grease(v)).map(rank).max_by_key(|r| r.0);
    match best {
        Some(r) if known.supported_versions.is_some() => r.1,
        _ => rank(legacy_version).1,
    }
}

/// The version code JA4 and JA4S print for one version number.
fn version_code(v: u16) -> &'static str {
    match v {
        0x0304 => "13",
        0x0303 => "12",
        0x0302 => "11",
        0x0301 => "10",
        0x0300 => "s3",
        0x0002 => "s2",
        0xfefc => "d3",
        0xfefd => "d2",
        0xfeff => "d1",
        _ => "00",
    }
}

/// JA4's two ALPN characters: the first and last of the value, or of its hex form when
/// either is not alphanumeric; `00` without ALPN.
fn push_alpn_chars(s: &mut String, alpn: Option<&[u8]>) {
    match alpn {
        Some(a) if !a.is_empty() => {
            let (f, l) = (a[0], a[a.len() - 1]);
            if f.is_ascii_alphanumeric() && l.is_ascii_alphanumeric() {
                s.push(char::from(f));
                s.push(char::from(l));
            } else {
                // JA4.md: a non-alphanumeric first or last byte prints the first and last
                // characters of the value's hex form.
                s.push(char::from(HEX[usize::from(f >> 4)]));
                s.push(char::from(HEX[usize::from(l & 0x0f)]));
            }
        }
        _ => s.push_str("00"),
    }
}

/// The fingerprints of one ServerHello.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ServerFingerprints {
    /// JA3S (Salesforce): `version,cipher,extensions`, decimal, extensions joined with
    /// `-` in the server's order.
    pub ja3s: String,
    /// Lowercase hex MD5 of `ja3s`.
    pub ja3s_md5: String,
    /// JA4S (FoxIO, JA4S.md): `a_b_c`, `a` the transport, the selected version, the
    /// extension count and the chosen ALPN's first and last characters, `b` the cipher in
    /// 4 hex digits, `c` the SHA-256 (12 hex digits) of the extensions in hex, in order.
    pub ja4s: String,
}

/// JA3S, its MD5 and JA4S of one ServerHello; digests from the worker's memo as for
/// `fingerprints`.
pub fn server_fingerprints(sh: &ServerHello<'_>, transport: Ja4Transport) -> ServerFingerprints {
    SERVER_HELLO_MEMO.with(|m| match m.try_borrow_mut() {
        Ok(mut m) => {
            m.get(|key| server_hello_key(key, sh, transport), || server_fingerprints_with(sh, transport, true))
        }
        Err(_) => server_fingerprints_with(sh, transport, true),
    })
}

/// Writes into `key` everything JA3S and JA4S are computed from: the transport, the
/// legacy version, the cipher suite, the extension types in order (after their count),
/// the selected version and the chosen ALPN protocol.
fn server_hello_key(key: &mut Vec<u8>, sh: &ServerHello<'_>, transport: Ja4Transport) {
    key.push(transport as u8);
    key.extend_from_slice(&sh.legacy_version.to_le_bytes());
    key.extend_from_slice(&sh.cipher_suite.to_le_bytes());
    key.extend_from_slice(&sh.selected_version().to_le_bytes());
    let at = key.len();
    key.extend_from_slice(&[0; 4]);
    let mut n = 0u32;
    for (t, _) in sh.extensions() {
        key.extend_from_slice(&t.to_le_bytes());
        n += 1;
    }
    key[at..at + 4].copy_from_slice(&n.to_le_bytes());
    match sh.alpn() {
        Some(a) => {
            key.push(1);
            key.extend_from_slice(&(a.len() as u32).to_le_bytes());
            key.extend_from_slice(a);
        }
        None => key.push(0),
    }
}

/// As `server_fingerprints`, every digest computed.
pub fn compute_server(sh: &ServerHello<'_>, transport: Ja4Transport) -> ServerFingerprints {
    server_fingerprints_with(sh, transport, false)
}

/// JA4's and JA4S's hash of a list of 16-bit values: the first 12 hex digits of the
/// SHA-256 of their comma-separated 4-digit hex, or twelve zeros for an empty list;
/// memoized under `kind` (see [`memoized`]).
fn push_list_hash(s: &mut String, list: &[u16], kind: MemoKind, memo: bool) {
    if list.is_empty() {
        s.push_str("000000000000");
        return;
    }
    let digest = memoized(
        memo,
        |key| {
            key.push(kind as u8);
            push_u16s(key, list);
        },
        || {
            let mut h = TextHasher::new();
            h.hex4_list(list);
            h.finish_truncated()
        },
    );
    push_hex(s, &digest[..6]);
}

fn server_fingerprints_with(sh: &ServerHello<'_>, transport: Ja4Transport, memo: bool) -> ServerFingerprints {
    // Servers send no GREASE (RFC 8701 §3 only lets them echo none); JA3S and JA4S keep
    // every extension as sent.
    let mut exts = SmallU16::new();
    for (t, _) in sh.extensions() {
        exts.push(t);
    }
    let exts = exts.as_slice();
    let mut j = Vec::with_capacity(64);
    push_decimal(&mut j, sh.legacy_version);
    j.push(b',');
    push_decimal(&mut j, sh.cipher_suite);
    j.push(b',');
    join_decimal(&mut j, exts.iter().copied());
    // Digits, '-' and ',' only: always UTF-8.
    let ja3s = String::from_utf8(j).unwrap_or_default();
    let mut s = String::with_capacity(25);
    s.push(match transport {
        Ja4Transport::Tcp => 't',
        Ja4Transport::Quic => 'q',
        Ja4Transport::Dtls => 'd',
    });
    s.push_str(version_code(sh.selected_version()));
    let n = exts.len().min(99);
    s.push(char::from(b'0' + (n / 10) as u8));
    s.push(char::from(b'0' + (n % 10) as u8));
    push_alpn_chars(&mut s, sh.alpn());
    s.push('_');
    push_hex(&mut s, &sh.cipher_suite.to_be_bytes());
    s.push('_');
    push_list_hash(&mut s, exts, MemoKind::Ja4sExtensions, memo);
    ServerFingerprints { ja3s_md5: md5_hex(&ja3s, memo), ja3s, ja4s: s }
}

/// Lists up to this long stay on the stack.
const INLINE: usize = 128;

/// A list of u16 on the stack, spilling to the heap past `INLINE` entries.
struct SmallU16 {
    inline: [u16; INLINE],
    len: usize,
    heap: Vec<u16>,
}

impl SmallU16 {
    fn new() -> Self {
        SmallU16 { inline: [0; INLINE], len: 0, heap: Vec::new() }
    }

    fn push(&mut self, v: u16) {
        if self.len < INLINE {
            self.inline[self.len] = v;
        } else {
            if self.heap.is_empty() {
                self.heap.extend_from_slice(&self.inline);
            }
            self.heap.push(v);
        }
        self.len += 1;
    }

    fn as_slice(&self) -> &[u16] {
        if self.len <= INLINE {
            &self.inline[..self.len]
        } else {
            &self.heap
        }
    }

    fn as_mut_slice(&mut self) -> &mut [u16] {
        if self.len <= INLINE {
            &mut self.inline[..self.len]
        } else {
            &mut self.heap
        }
    }
}

/// SHA-256 of text written piecewise, through a buffer so the hash sees few calls.
struct TextHasher {
    hash: Sha256,
    buf: [u8; 256],
    len: usize,
}

impl TextHasher {
    fn new() -> Self {
        TextHasher { hash: Sha256::new(), buf: [0; 256], len: 0 }
    }

    fn push(&mut self, b: &[u8]) {
        if self.len + b.len() > self.buf.len() {
            self.hash.update(&self.buf[..self.len]);
            self.len = 0;
        }
        self.buf[self.len..self.len + b.len()].copy_from_slice(b);
        self.len += b.len();
    }

    /// `v` as 4 lowercase hex digits, after `sep` unless it is the list's first.
    fn hex4(&mut self, sep: Option<u8>, v: u16) {
        let h = |n: u16| HEX[usize::from(n & 0x0f)];
        let digits = [h(v >> 12), h(v >> 8), h(v >> 4), h(v)];
        match sep {
            Some(c) => self.push(&[c, digits[0], digits[1], digits[2], digits[3]]),
            None => self.push(&digits),
        }
    }

    /// A `,`-joined hex4 list.
    fn hex4_list(&mut self, v: &[u16]) {
        for (i, &x) in v.iter().enumerate() {
            self.hex4(if i == 0 { None } else { Some(b',') }, x);
        }
    }

    /// The first 6 bytes of the hash (JA4 prints 12 hex digits), zero-padded to 16.
    fn finish_truncated(mut self) -> [u8; 16] {
        self.hash.update(&self.buf[..self.len]);
        let digest = self.hash.finalize();
        let mut out = [0u8; 16];
        out[..6].copy_from_slice(&digest[..6]);
        out
    }
}

fn ja4_with(ch: &ClientHello<'_>, known: &KnownExtensions<'_>, transport: Ja4Transport, memo: bool) -> String {
    let mut ciphers = SmallU16::new();
    for c in ch.ciphers().filter(|&c| !is_grease(c)) {
        ciphers.push(c);
    }
    // Every non-GREASE extension is counted; SNI and ALPN are left out of the hash.
    let mut exts = SmallU16::new();
    let (mut ext_count, mut sni) = (0usize, false);
    for (t, _) in ch.extensions().filter(|&(t, _)| !is_grease(t)) {
        ext_count += 1;
        sni |= t == EXT_SERVER_NAME;
        if t != EXT_SERVER_NAME && t != EXT_ALPN {
            exts.push(t);
        }
    }
    let mut s = String::with_capacity(36);
    s.push(match transport {
        Ja4Transport::Tcp => 't',
        Ja4Transport::Quic => 'q',
        Ja4Transport::Dtls => 'd',
    });
    s.push_str(ja4_version(ch.legacy_version, known));
    s.push(if sni { 'd' } else { 'i' });
    for n in [ciphers.len.min(99), ext_count.min(99)] {
        s.push(char::from(b'0' + (n / 10) as u8));
        s.push(char::from(b'0' + (n % 10) as u8));
    }
    push_alpn_chars(&mut s, known.alpn().next());
    s.push('_');
    let ciphers = ciphers.as_mut_slice();
    ciphers.sort_unstable();
    push_list_hash(&mut s, ciphers, MemoKind::Ja4Ciphers, memo);
    s.push('_');
    let exts = exts.as_mut_slice();
    if exts.is_empty() {
        s.push_str("000000000000");
    } else {
        exts.sort_unstable();
        let mut sigs = SmallU16::new();
        for sig in known.signature_algorithms().filter(|&g| !is_grease(g)) {
            sigs.push(sig);
        }
        let sigs = sigs.as_slice();
        let digest = memoized(
            memo,
            |key| {
                key.push(MemoKind::Ja4Extensions as u8);
                key.extend_from_slice(&(exts.len() as u32).to_le_bytes());
                push_u16s(key, exts);
                push_u16s(key, sigs);
            },
            || {
                let mut h = TextHasher::new();
                h.hex4_list(exts);
                // The signature algorithms in the client's order, after a `_` if any.
                for (i, &sig) in sigs.iter().enumerate() {
                    h.hex4(Some(if i == 0 { b'_' } else { b',' }), sig);
                }
                h.finish_truncated()
            },
        );
        push_hex(&mut s, &digest[..6]);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::super::parser::tests::{alpn_ext, client_hello, sni_ext};
    use super::*;

    /// The ClientHello behind the JA4 spec's own example
    /// `t13d1516h2_8daaf6152771_e5627efa2ab1` (JA4.md, with its JA4_r list of ciphers,
    /// extensions and signature algorithms), with GREASE added to check it is dropped.
    fn ja4_spec_hello() -> Vec<u8> {
        let ciphers = [
            0x0a0a, 0x1301, 0x1302, 0x1303, 0xc02b, 0xc02f, 0xc02c, 0xc030, 0xcca9, 0xcca8, 0xc013, 0xc014, 0x009c,
            0x009d, 0x002f, 0x0035,
        ];
        let sigs: [u16; 8] = [0x0403, 0x0804, 0x0401, 0x0503, 0x0805, 0x0501, 0x0806, 0x0601];
        let mut sig = ((sigs.len() * 2) as u16).to_be_bytes().to_vec();
        for s in sigs {
            sig.extend_from_slice(&s.to_be_bytes());
        }
        let exts = vec![
            (0x2a2a, vec![]),
            sni_ext("example.com"),
            (0x0017, vec![]),
            (0xff01, vec![0]),
            (0x000a, vec![0, 4, 0x1a, 0x1a, 0, 0x1d]),
            (0x000b, vec![1, 0]),
            (0x0023, vec![]),
            alpn_ext(&["h2", "http/1.1"]),
            (0x0005, vec![1, 0, 0, 0, 0]),
            (0x000d, sig),
            (0x0012, vec![]),
            (0x0033, vec![0, 0]),
            (0x002d, vec![1, 1]),
            (0x002b, vec![4, 0x3a, 0x3a, 3, 4]),
            (0x001b, vec![2, 0, 2]),
            (0x4469, vec![0, 3, 2, b'h', b'2']),
            (0x0015, vec![0; 4]),
        ];
        client_hello(0x0303, &ciphers, &exts, false)
    }

    #[test]
    fn ja4_of_the_spec_example() {
        let msg = ja4_spec_hello();
        let ch = ClientHello::parse(&msg[4..], false).unwrap();
        assert_eq!(ja4(&ch, Ja4Transport::Tcp), "t13d1516h2_8daaf6152771_e5627efa2ab1");
        assert_eq!(&ja4(&ch, Ja4Transport::Quic)[..1], "q");
    }

    /// A ServerHello from its parts (the body, without the handshake header).
    fn server_hello(version: u16, cipher: u16, exts: &[(u16, Vec<u8>)]) -> Vec<u8> {
        let mut b = version.to_be_bytes().to_vec();
        b.extend_from_slice(&[0x22; 32]);
        b.push(0);
        b.extend_from_slice(&cipher.to_be_bytes());
        b.push(0);
        let block = ext_block(exts);
        b.extend_from_slice(&(block.len() as u16).to_be_bytes());
        b.extend_from_slice(&block);
        b
    }

    /// JA4S.md's example `t130200_1301_a56c5b993250`: a TLS 1.3 ServerHello choosing
    /// TLS_AES_128_GCM_SHA256 with supported_versions and key_share, no ALPN (the hash
    /// is SHA-256 of `002b,0033`, checked with Python's hashlib). JA3S by hand from
    /// Salesforce's definition (`771,4865,43-51`; MD5 checked with hashlib).
    #[test]
    fn ja4s_and_ja3s_of_the_spec_example() {
        let b = server_hello(0x0303, 0x1301, &[(0x002b, vec![3, 4]), (0x0033, vec![0, 0x1d, 0, 0])]);
        let sh = ServerHello::parse(&b, false).unwrap();
        let fp = compute_server(&sh, Ja4Transport::Tcp);
        assert_eq!(fp.ja4s, "t130200_1301_a56c5b993250");
        assert_eq!(fp.ja3s, "771,4865,43-51");
        assert_eq!(fp.ja3s_md5, ja3_md5("771,4865,43-51"));
        assert_eq!(fp.ja3s_md5, "f4febc55ea12b31ae17cfb7e614afda8");
        assert_eq!(server_fingerprints(&sh, Ja4Transport::Tcp), fp, "the memo gives what hashing does");
        assert_eq!(server_fingerprints(&sh, Ja4Transport::Tcp), fp, "and on a hit");
    }

    /// ServerHellos that differ in one input each get their own fingerprints from the
    /// hello memo, asked in turn (misses, then hits).
    #[test]
    fn server_memo_keeps_hellos_apart() {
        let alpn = |p: &[u8]| {
            let mut d = vec![0, p.len() as u8 + 1, p.len() as u8];
            d.extend_from_slice(p);
            (0x0010, d)
        };
        let hellos = [
            server_hello(0x0303, 0x1301, &[(0x002b, vec![3, 4])]),
            server_hello(0x0303, 0x1301, &[(0x002b, vec![3, 3])]),
            server_hello(0x0303, 0x1302, &[(0x002b, vec![3, 4])]),
            server_hello(0x0301, 0x1301, &[(0x002b, vec![3, 4])]),
            server_hello(0x0303, 0xc02f, &[alpn(b"h2")]),
            server_hello(0x0303, 0xc02f, &[alpn(b"h3")]),
            server_hello(0x0303, 0xc02f, &[(0x0017, vec![]), alpn(b"h2")]),
            server_hello(0x0303, 0xc02f, &[alpn(b"h2"), (0x0017, vec![])]),
        ];
        let mut seen = std::collections::HashSet::new();
        for round in 0..2 {
            for (i, b) in hellos.iter().enumerate() {
                let sh = ServerHello::parse(b, false).unwrap();
                for t in [Ja4Transport::Tcp, Ja4Transport::Quic] {
                    let want = compute_server(&sh, t);
                    assert_eq!(server_fingerprints(&sh, t), want, "hello {i} round {round}");
                    seen.insert((want.ja3s_md5, want.ja4s));
                }
            }
        }
        assert_eq!(seen.len(), hellos.len() * 2, "every hello and transport fingerprints apart");
    }

    /// TLS 1.2 with ALPN `h2` and renegotiation_info; no extensions at all; DTLS.
    #[test]
    fn ja4s_alpn_version_and_empty_extensions() {
        let b = server_hello(0x0303, 0xc02f, &[(0xff01, vec![0]), alpn_ext(&["h2"])]);
        let sh = ServerHello::parse(&b, false).unwrap();
        let fp = compute_server(&sh, Ja4Transport::Tcp);
        // The hash: SHA-256 of `ff01,0010` (hashlib), in the server's order.
        assert_eq!(fp.ja4s, "t1202h2_c02f_87b1562aab70");
        assert_eq!(fp.ja3s, "771,49199,65281-16");
        let mut b = 0x0301u16.to_be_bytes().to_vec();
        b.extend_from_slice(&[0; 32]);
        b.extend_from_slice(&[0, 0x00, 0x2f, 0]);
        let sh = ServerHello::parse(&b, false).unwrap();
        let fp = compute_server(&sh, Ja4Transport::Tcp);
        assert_eq!(fp.ja4s, "t100000_002f_000000000000");
        assert_eq!(fp.ja3s, "769,47,");
        let b = server_hello(0xfefd, 0xc02b, &[(0xff01, vec![0])]);
        let fp = compute_server(&ServerHello::parse(&b, true).unwrap(), Ja4Transport::Dtls);
        assert_eq!(&fp.ja4s[..13], "dd20100_c02b_");
    }

    #[test]
    fn ja3_string_and_md5() {
        let msg = ja4_spec_hello();
        let ch = ClientHello::parse(&msg[4..], false).unwrap();
        let s = ja3_string(&ch);
        assert_eq!(
            s,
            "771,4865-4866-4867-49195-49199-49196-49200-52393-52392-49171-49172-156-157-47-53,\
             0-23-65281-10-11-35-16-5-13-18-51-45-43-27-17513-21,29,0"
        );
        // Checked with Python's hashlib.md5.
        assert_eq!(ja3_md5(&s), "ddccd825dd16894c51af372253871ddf");
        assert_eq!(ja3_md5(""), "d41d8cd98f00b204e9800998ecf8427e");
    }

    /// Hellos that differ in one input each get their own fingerprints from the memo,
    /// asked in turn many times (hits, and the same slot's evictions if two collide).
    #[test]
    fn memo_keeps_hellos_apart() {
        let sigs = |v: &[u16]| (0x000d, u16_list(false, v));
        let hellos = [
            client_hello(0x0303, &[0x1301, 0x1302], &[sni_ext("a.example"), alpn_ext(&["h2"])], false),
            client_hello(0x0301, &[0x1301, 0x1302], &[sni_ext("a.example"), alpn_ext(&["h2"])], false),
            client_hello(0x0303, &[0x1302, 0x1301], &[sni_ext("a.example"), alpn_ext(&["h2"])], false),
            client_hello(0x0303, &[0x1301, 0x1302], &[alpn_ext(&["h2"]), sni_ext("a.example")], false),
            client_hello(0x0303, &[0x1301, 0x1302], &[sni_ext("a.example"), alpn_ext(&["h3"])], false),
            client_hello(0x0303, &[0x1301, 0x1302], &[sni_ext("a.example"), alpn_ext(&["h2"]), sigs(&[0x0403])], false),
            client_hello(0x0303, &[0x1301, 0x1302], &[sni_ext("a.example"), alpn_ext(&["h2"]), sigs(&[0x0804])], false),
            client_hello(0x0303, &[0x1301, 0x1302], &[sni_ext("a.example"), (43, u16_list(true, &[0x0304]))], false),
            client_hello(0x0303, &[0x1301, 0x1302], &[sni_ext("a.example"), (43, vec![])], false),
            client_hello(0x0303, &[0x1301, 0x1302], &[sni_ext("a.example"), (10, u16_list(false, &[29]))], false),
            client_hello(0x0303, &[0x1301, 0x1302], &[sni_ext("a.example"), (11, vec![1, 0])], false),
            client_hello(0x0303, &[0x1301, 0x1302], &[sni_ext("a.example"), (11, vec![1, 1])], false),
        ];
        let mut seen = std::collections::HashSet::new();
        for round in 0..3 {
            for (i, m) in hellos.iter().enumerate() {
                let ch = ClientHello::parse(&m[4..], false).unwrap();
                for t in [Ja4Transport::Tcp, Ja4Transport::Quic] {
                    let want = compute(&ch, &ch.known_extensions(), t);
                    assert_eq!(fingerprints(&ch, &ch.known_extensions(), t), want, "hello {i} round {round}");
                    if round == 0 {
                        seen.insert((want.ja3_md5, want.ja4));
                    }
                }
            }
        }
        assert_eq!(seen.len(), hellos.len() * 2, "every hello and transport fingerprints apart");
        assert!(MEMO.with(|m| m.borrow().slots.iter().flatten().count()) >= 3);
    }

    #[test]
    fn decimal_of_every_u16() {
        let mut s = Vec::new();
        for v in 0..=u16::MAX {
            s.clear();
            push_decimal(&mut s, v);
            assert_eq!(s, v.to_string().into_bytes());
        }
    }

    /// Hellos that differ only in their GREASE values (Chrome draws them per connection)
    /// share one entry of the hello memo, and hit it with what computing gives.
    #[test]
    fn hello_memo_key_drops_grease() {
        let hello = |g: u16| {
            let exts = [(g, vec![]), sni_ext("g.example"), (43, u16_list(true, &[g, 0x0304])), alpn_ext(&["h2"])];
            client_hello(0x0303, &[g, 0x1301, 0x1302], &exts, false)
        };
        let (a, b) = (hello(0x0a0a), hello(0xdada));
        let (ca, cb) = (ClientHello::parse(&a[4..], false).unwrap(), ClientHello::parse(&b[4..], false).unwrap());
        let key = |ch: &ClientHello<'_>| {
            let mut k = Vec::new();
            hello_key(&mut k, ch, &ch.known_extensions(), Ja4Transport::Tcp);
            k
        };
        assert_eq!(key(&ca), key(&cb));
        let want = compute(&cb, &cb.known_extensions(), Ja4Transport::Tcp);
        assert_eq!(fingerprints(&ca, &ca.known_extensions(), Ja4Transport::Tcp), want);
        assert_eq!(fingerprints(&cb, &cb.known_extensions(), Ja4Transport::Tcp), want);
        assert!(HELLO_MEMO.with(|m| m.borrow().slots.iter().flatten().count()) >= 1);
    }

    #[test]
    fn ja4_without_extensions_or_alpn() {
        let msg = client_hello(0x0301, &[0x002f], &[], false);
        let ch = ClientHello::parse(&msg[4..], false).unwrap();
        let j = ja4(&ch, Ja4Transport::Tcp);
        assert!(j.starts_with("t10i010000_"), "{j}");
        assert!(j.ends_with("_000000000000"), "{j}");
    }

    #[test]
    fn ja4_alpn_not_alphanumeric_prints_hex() {
        let msg = client_hello(0x0303, &[0x1301], &[(0x10, vec![0, 3, 2, 0xab, 0xcd])], false);
        let ch = ClientHello::parse(&msg[4..], false).unwrap();
        assert_eq!(&ja4(&ch, Ja4Transport::Tcp)[8..10], "ad");
    }

    /// The implementation before the hand-written hex and single-pass walk (the
    /// first, slower version), kept to check the new one gives the same strings.
    mod reference {
        use std::fmt::Write;

        use md5::{Digest, Md5};
        use sha2::Sha256;

        use super::super::super::parser::{is_grease, ClientHello, EXT_ALPN, EXT_SERVER_NAME, EXT_SUPPORTED_VERSIONS};
        use super::super::Ja4Transport;

        pub fn ja3_string(ch: &ClientHello<'_>) -> String {
            let mut s = String::with_capacity(256);
            let _ = write!(s, "{},", ch.legacy_version);
            join_decimal(&mut s, ch.ciphers().filter(|&c| !is_grease(c)));
            s.push(',');
            join_decimal(&mut s, ch.extensions().map(|(t, _)| t).filter(|&t| !is_grease(t)));
            s.push(',');
            join_decimal(&mut s, ch.supported_groups().filter(|&g| !is_grease(g)));
            s.push(',');
            join_decimal(&mut s, ch.ec_point_formats().iter().map(|&f| u16::from(f)));
            s
        }

        pub fn ja3_md5(ja3: &str) -> String {
            hex(&Md5::digest(ja3.as_bytes()))
        }

        fn join_decimal(s: &mut String, it: impl Iterator<Item = u16>) {
            for (i, v) in it.enumerate() {
                if i > 0 {
                    s.push('-');
                }
                let _ = write!(s, "{v}");
            }
        }

        fn hex(b: &[u8]) -> String {
            let mut s = String::with_capacity(b.len() * 2);
            for x in b {
                let _ = write!(s, "{x:02x}");
            }
            s
        }

        fn ja4_version(ch: &ClientHello<'_>) -> &'static str {
            fn rank(v: u16) -> (u8, &'static str) {
                match v {
                    0x0304 => (7, "13"),
                    0x0303 => (6, "12"),
                    0x0302 => (5, "11"),
                    0x0301 => (4, "10"),
                    0x0300 => (3, "s3"),
                    0x0002 => (2, "s2"),
                    0xfefc => (7, "d3"),
                    0xfefd => (6, "d2"),
                    0xfeff => (5, "d1"),
                    _ => (0, "00"),
                }
            }
            let best = ch.supported_versions().filter(|&v| !is_grease(v)).map(rank).max_by_key(|r| r.0);
            let has_ext = ch.extensions().any(|(t, _)| t == EXT_SUPPORTED_VERSIONS);
            match best {
                Some(r) if has_ext => r.1,
                _ => rank(ch.legacy_version).1,
            }
        }

        pub fn ja4(ch: &ClientHello<'_>, transport: Ja4Transport) -> String {
            let mut ciphers: Vec<u16> = ch.ciphers().filter(|&c| !is_grease(c)).collect();
            let mut exts: Vec<u16> = ch.extensions().map(|(t, _)| t).filter(|&t| !is_grease(t)).collect();
            let sigs: Vec<u16> = ch.signature_algorithms().filter(|&s| !is_grease(s)).collect();
            let mut s = String::with_capacity(40);
            s.push(match transport {
                Ja4Transport::Tcp => 't',
                Ja4Transport::Quic => 'q',
                Ja4Transport::Dtls => 'd',
            });
            s.push_str(ja4_version(ch));
            s.push(if exts.contains(&EXT_SERVER_NAME) { 'd' } else { 'i' });
            let _ = write!(s, "{:02}{:02}", ciphers.len().min(99), exts.len().min(99));
            match ch.alpn().next() {
                Some(a) if !a.is_empty() => {
                    let (f, l) = (a[0], a[a.len() - 1]);
                    if f.is_ascii_alphanumeric() && l.is_ascii_alphanumeric() {
                        s.push(char::from(f));
                        s.push(char::from(l));
                    } else {
                        let h = hex(a);
                        s.push_str(&h[..1]);
                        s.push_str(&h[h.len() - 1..]);
                    }
                }
                _ => s.push_str("00"),
            }
            s.push('_');
            ciphers.sort_unstable();
            s.push_str(&truncated_sha256(&hex4_list(&ciphers), ciphers.is_empty()));
            s.push('_');
            exts.retain(|&t| t != EXT_SERVER_NAME && t != EXT_ALPN);
            exts.sort_unstable();
            let mut c = hex4_list(&exts);
            if !sigs.is_empty() {
                c.push('_');
                c.push_str(&hex4_list(&sigs));
            }
            s.push_str(&truncated_sha256(&c, exts.is_empty()));
            s
        }

        fn hex4_list(v: &[u16]) -> String {
            let mut s = String::with_capacity(v.len() * 5);
            for (i, x) in v.iter().enumerate() {
                if i > 0 {
                    s.push(',');
                }
                let _ = write!(s, "{x:04x}");
            }
            s
        }

        fn truncated_sha256(s: &str, empty: bool) -> String {
            if empty {
                return "000000000000".to_string();
            }
            let mut h = hex(&Sha256::digest(s.as_bytes()));
            h.truncate(12);
            h
        }
    }

    /// An extension block from parts, GREASE and duplicates allowed.
    fn ext_block(exts: &[(u16, Vec<u8>)]) -> Vec<u8> {
        let mut b = Vec::new();
        for (t, d) in exts {
            b.extend_from_slice(&t.to_be_bytes());
            b.extend_from_slice(&(d.len() as u16).to_be_bytes());
            b.extend_from_slice(d);
        }
        b
    }

    fn u16_list(prefix8: bool, v: &[u16]) -> Vec<u8> {
        let mut d = if prefix8 { vec![(v.len() * 2) as u8] } else { ((v.len() * 2) as u16).to_be_bytes().to_vec() };
        for x in v {
            d.extend_from_slice(&x.to_be_bytes());
        }
        d
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 3000, ..Default::default() })]

        /// The fingerprints equal the reference implementation's on hellos with any
        /// ciphers, extensions (GREASE, repeats, odd lengths, long lists), versions,
        /// groups, signature algorithms and ALPN values.
        #[test]
        fn same_as_reference(
            version in proptest::prop_oneof![proptest::prelude::Just(0x0303u16), proptest::prelude::any::<u16>()],
            ciphers in proptest::collection::vec(proptest::prop_oneof![
                proptest::prelude::Just(0x0a0au16), proptest::prelude::Just(0x1301), proptest::prelude::any::<u16>()], 0..300),
            types in proptest::collection::vec(proptest::prop_oneof![
                proptest::prelude::Just(0u16), proptest::prelude::Just(10), proptest::prelude::Just(11),
                proptest::prelude::Just(13), proptest::prelude::Just(16), proptest::prelude::Just(43),
                proptest::prelude::Just(0x1a1a), 0u16..70, proptest::prelude::any::<u16>()], 0..160),
            lists in proptest::collection::vec(proptest::collection::vec(proptest::prop_oneof![
                proptest::prelude::Just(0x0304u16), proptest::prelude::Just(0xfefc), proptest::prelude::Just(0x0303),
                proptest::prelude::Just(0x2a2a), proptest::prelude::any::<u16>()], 0..12), 1..4),
            alpn in proptest::collection::vec(proptest::collection::vec(proptest::prelude::any::<u8>(), 0..6), 0..3),
            junk in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..5),
            transport in proptest::prop_oneof![
                proptest::prelude::Just(Ja4Transport::Tcp), proptest::prelude::Just(Ja4Transport::Quic),
                proptest::prelude::Just(Ja4Transport::Dtls)],
        ) {
            let exts: Vec<(u16, Vec<u8>)> = types.iter().enumerate().map(|(i, &t)| {
                let list = &lists[i % lists.len()];
                let data = match t {
                    43 => u16_list(true, list),
                    10 | 13 => u16_list(false, list),
                    11 => { let mut d = vec![list.len() as u8]; d.extend(list.iter().map(|&x| x as u8)); d }
                    16 => {
                        let mut l = Vec::new();
                        for a in &alpn { l.push(a.len() as u8); l.extend_from_slice(a); }
                        let mut d = (l.len() as u16).to_be_bytes().to_vec();
                        d.extend_from_slice(&l);
                        d
                    }
                    0 => { let (_, d) = sni_ext("x.example"); d }
                    _ => junk.clone(),
                };
                (t, data)
            }).collect();
            let msg = client_hello(version, &ciphers, &exts, false);
            // Also a hello whose last extension claims more bytes than the block holds:
            // the walk stops there.
            let mut with_bad = exts.clone();
            with_bad.push((10, u16_list(false, &[0x001d, 0x0017])));
            let mut msg_cut = client_hello(version, &ciphers, &with_bad, false);
            let at = msg_cut.len() - 6 - 2;
            msg_cut[at..at + 2].copy_from_slice(&9u16.to_be_bytes());
            proptest::prop_assert_eq!(ext_block(&with_bad).len() + 2 * ciphers.len() + 41, msg_cut.len() - 4);
            for m in [&msg[4..], &msg_cut[4..]] {
                let Some(ch) = ClientHello::parse(m, false) else { continue };
                let fp = compute(&ch, &ch.known_extensions(), transport);
                proptest::prop_assert_eq!(&fp.ja3, &reference::ja3_string(&ch));
                proptest::prop_assert_eq!(&fp.ja3_md5, &reference::ja3_md5(&fp.ja3));
                proptest::prop_assert_eq!(&fp.ja4, &reference::ja4(&ch, transport));
                // Through the memo, missing then hitting (or evicted by another hello).
                for _ in 0..2 {
                    proptest::prop_assert_eq!(&fingerprints(&ch, &ch.known_extensions(), transport), &fp);
                }
                proptest::prop_assert_eq!(ch.known_extensions().server_name(), ch.server_name());
                proptest::prop_assert!(ch.known_extensions().alpn().eq(ch.alpn()));
                proptest::prop_assert!(ch.known_extensions().supported_versions().eq(ch.supported_versions()));
            }
        }
    }
}
