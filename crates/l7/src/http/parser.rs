//! HTTP/1.x message heads (RFC 9112 §2-§6): request line, status line, the header fields
//! a record needs and how the body ends. Pure bytes → structs; knows no flows.

/// Methods recognised at the start of a request (RFC 9110 §9 and WebDAV's common ones).
pub const METHODS: [&[u8]; 14] = [
    b"GET",
    b"POST",
    b"HEAD",
    b"PUT",
    b"DELETE",
    b"OPTIONS",
    b"CONNECT",
    b"TRACE",
    b"PATCH",
    b"PROPFIND",
    b"PROPPATCH",
    b"MKCOL",
    b"COPY",
    b"MOVE",
];

/// The end of the head: the offset just past the empty line. RFC 9112 §2.2 lets a
/// recipient accept a bare LF as a line terminator, so "\n\n" and "\n\r\n" count too.
pub fn head_end(b: &[u8]) -> Option<usize> {
    let mut i = 0;
    while let Some(p) = b.get(i..).and_then(|s| s.iter().position(|&c| c == b'\n')) {
        let nl = i + p;
        match b.get(nl + 1..nl + 3) {
            Some([b'\r', b'\n', ..]) => return Some(nl + 3),
            Some([b'\n', ..]) => return Some(nl + 2),
            None if b.get(nl + 1) == Some(&b'\n') => return Some(nl + 2),
            _ => {}
        }
        i = nl + 1;
    }
    None
}

/// Longest method taken. RFC 9110 §9.1 lets a method be any token and sets no limit;
/// registered methods have at most 17 letters (`VERSION-CONTROL`, `BASELINE-CONTROL`),
/// and a bound keeps a stream of letters from passing for one.
pub const MAX_METHOD: usize = 32;
/// Longest request line a resynchronisation or a probe looks through for its version.
const MAX_REQUEST_LINE: usize = 8 * 1024;

/// RFC 9110 §5.6.2: `tchar`, the characters of a token.
fn is_tchar(c: u8) -> bool {
    c.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&c)
}

/// A method (RFC 9110 §9.1): a token, at most `MAX_METHOD` long.
fn is_method(m: &[u8]) -> bool {
    !m.is_empty() && m.len() <= MAX_METHOD && m.iter().all(|&c| is_tchar(c))
}

/// Whether `b` starts with a whole request line (RFC 9112 §3): a method, SP, a target,
/// SP, `HTTP/1.` and a digit, then the line's end. Returns the answer and how many bytes
/// of `b` it read to give it (a byte that cannot start a method ends the look at once).
pub fn starts_with_request_line(b: &[u8]) -> (bool, usize) {
    let token = b.iter().take(MAX_METHOD + 1).take_while(|&&c| is_tchar(c)).count();
    if token == 0 || token > MAX_METHOD || b.get(token) != Some(&b' ') {
        return (false, (token + 1).min(b.len()));
    }
    let window = &b[..b.len().min(MAX_REQUEST_LINE)];
    let Some(nl) = window.iter().position(|&c| c == b'\n') else {
        return (false, window.len());
    };
    let line = trim(&b[..nl]);
    let ok = line.len() > token + 1 + 9
        && line[line.len() - 9] == b' '
        && version_minor(&line[line.len() - 8..]).is_some()
        && !trim(&line[token + 1..line.len() - 9]).is_empty();
    (ok, nl + 1)
}

/// Cheap check that a stream starts like a request: a known method and a space, or
/// else a whole request line with any method (`starts_with_request_line`: the version
/// at the line's end keeps text protocols out). `None` when too few bytes to say.
pub fn probe_request(b: &[u8]) -> Option<bool> {
    for m in METHODS {
        let n = m.len().min(b.len());
        if b[..n] == m[..n] {
            if b.len() <= m.len() {
                return None;
            }
            if b[m.len()] == b' ' {
                return Some(true);
            }
        }
    }
    Some(starts_with_request_line(b).0)
}

/// Whether `b` starts with a status line's version, `HTTP/1.` and a digit and a space
/// (RFC 9112 §4): where a response's head can be taken up after a gap.
pub fn starts_with_status_line(b: &[u8]) -> bool {
    b.len() >= 9 && version_minor(&b[..8]).is_some() && b[8] == b' '
}

/// Cheap check that a stream starts like a response: `HTTP/1.`.
pub fn probe_response(b: &[u8]) -> Option<bool> {
    let sig = b"HTTP/1.";
    let n = sig.len().min(b.len());
    if b[..n] != sig[..n] {
        return Some(false);
    }
    if b.len() < sig.len() {
        None
    } else {
        Some(true)
    }
}

/// How a message's body ends (RFC 9112 §6.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BodyLength {
    None,
    Length(u64),
    Chunked,
    /// Until the connection closes: nothing after it can be parsed.
    UntilClose,
}

/// The fields of a head a record needs; borrowed from the head's bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Fields<'a> {
    pub host: Option<&'a [u8]>,
    pub user_agent: Option<&'a [u8]>,
    pub referer: Option<&'a [u8]>,
    pub content_type: Option<&'a [u8]>,
    pub server: Option<&'a [u8]>,
    pub content_length: Option<u64>,
    pub chunked: bool,
    pub upgrade: bool,
}

fn trim(mut v: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = v {
        v = rest;
    }
    while let [rest @ .., b' ' | b'\t' | b'\r'] = v {
        v = rest;
    }
    v
}

/// Parses the header lines after the start line. A line without a colon is skipped
/// rather than failing the message: monitoring wants the fields it can get.
fn parse_fields(lines: &[u8]) -> Fields<'_> {
    let mut f = Fields::default();
    for line in lines.split(|&c| c == b'\n') {
        let Some(colon) = line.iter().position(|&c| c == b':') else { continue };
        let name = &line[..colon];
        let value = trim(&line[colon + 1..]);
        if name.eq_ignore_ascii_case(b"host") {
            f.host.get_or_insert(value);
        } else if name.eq_ignore_ascii_case(b"user-agent") {
            f.user_agent.get_or_insert(value);
        } else if name.eq_ignore_ascii_case(b"referer") {
            f.referer.get_or_insert(value);
        } else if name.eq_ignore_ascii_case(b"content-type") {
            f.content_type.get_or_insert(value);
        } else if name.eq_ignore_ascii_case(b"server") {
            f.server.get_or_insert(value);
        } else if name.eq_ignore_ascii_case(b"content-length") {
            f.content_length = std::str::from_utf8(value).ok().and_then(|s| s.parse().ok());
        } else if name.eq_ignore_ascii_case(b"transfer-encoding") {
            // RFC 9112 §6.1: chunked is the last coding when present.
            f.chunked = value.len() >= 7 && value[value.len() - 7..].eq_ignore_ascii_case(b"chunked");
        } else if name.eq_ignore_ascii_case(b"upgrade") {
            f.upgrade = true;
        }
    }
    f
}

/// A request head.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request<'a> {
    pub method: &'a [u8],
    pub target: &'a [u8],
    /// The minor version of HTTP/1.x.
    pub minor: u8,
    pub fields: Fields<'a>,
}

impl<'a> Request<'a> {
    /// Parses a whole head (as `head_end` delimits it).
    pub fn parse(head: &'a [u8]) -> Option<Self> {
        let (line, rest) = split_line(head);
        // Method up to the first space, version after the last: a target with raw spaces
        // (invalid per RFC 9112 §3.2, common in attack traffic) stays whole, as tshark
        // shows it.
        let sp1 = line.iter().position(|&c| c == b' ')?;
        let sp2 = line.iter().rposition(|&c| c == b' ')?;
        if sp2 <= sp1 {
            return None;
        }
        let method = &line[..sp1];
        let target = trim(&line[sp1 + 1..sp2]);
        let version = &line[sp2 + 1..];
        if method.is_empty() || target.is_empty() {
            return None;
        }
        // RFC 9110 §9.1: any token is a method (WebDAV's, caches' PURGE and BAN, ...).
        if !is_method(method) {
            return None;
        }
        let minor = version_minor(version)?;
        Some(Request { method, target, minor, fields: parse_fields(rest) })
    }

    /// How the request body ends (RFC 9112 §6.3 rules 4-6: no length means no body).
    pub fn body(&self) -> BodyLength {
        if self.fields.chunked {
            BodyLength::Chunked
        } else {
            match self.fields.content_length {
                Some(0) | None => BodyLength::None,
                Some(n) => BodyLength::Length(n),
            }
        }
    }
}

/// A response head.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Response<'a> {
    pub minor: u8,
    pub status: u16,
    pub fields: Fields<'a>,
}

impl<'a> Response<'a> {
    pub fn parse(head: &'a [u8]) -> Option<Self> {
        let (line, rest) = split_line(head);
        let minor = version_minor(line.get(..8)?)?;
        let status = line.get(9..12)?;
        if line.get(8) != Some(&b' ') || !status.iter().all(u8::is_ascii_digit) {
            return None;
        }
        let status = status.iter().fold(0u16, |a, &d| a * 10 + u16::from(d - b'0'));
        Some(Response { minor, status, fields: parse_fields(rest) })
    }

    /// How the response body ends (RFC 9112 §6.3): none for HEAD, 1xx, 204 and 304.
    pub fn body(&self, request_method: Option<&[u8]>) -> BodyLength {
        if request_method == Some(b"HEAD") || self.status < 200 || self.status == 204 || self.status == 304 {
            BodyLength::None
        } else if request_method == Some(b"CONNECT") && self.status < 300 {
            BodyLength::UntilClose
        } else if self.fields.chunked {
            BodyLength::Chunked
        } else {
            match self.fields.content_length {
                Some(0) => BodyLength::None,
                Some(n) => BodyLength::Length(n),
                None => BodyLength::UntilClose,
            }
        }
    }
}

fn split_line(b: &[u8]) -> (&[u8], &[u8]) {
    match b.iter().position(|&c| c == b'\n') {
        Some(i) => (trim(&b[..i]), &b[i + 1..]),
        None => (trim(b), &[]),
    }
}

fn version_minor(v: &[u8]) -> Option<u8> {
    match v {
        [b'H', b'T', b'T', b'P', b'/', b'1', b'.', d] if d.is_ascii_digit() => Some(d - b'0'),
        _ => None,
    }
}

/// A chunk-size line (RFC 9112 §7.1): hex digits, then optional extensions.
pub fn chunk_size(line: &[u8]) -> Option<u64> {
    let digits = line.iter().take_while(|c| c.is_ascii_hexdigit()).count();
    if digits == 0 || digits > 15 {
        return None;
    }
    line[..digits].iter().try_fold(0u64, |a, &c| Some(a * 16 + u64::from((c as char).to_digit(16)?)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_head() {
        let h =
            b"GET /a/b?x=1 HTTP/1.1\r\nHost: www.example.com\r\nUser-Agent:  curl/8.0 \r\nContent-Length: 5\r\n\r\n";
        assert_eq!(head_end(h), Some(h.len()));
        let r = Request::parse(h).unwrap();
        assert_eq!(r.method, b"GET");
        assert_eq!(r.target, b"/a/b?x=1");
        assert_eq!(r.minor, 1);
        assert_eq!(r.fields.host, Some(&b"www.example.com"[..]));
        assert_eq!(r.fields.user_agent, Some(&b"curl/8.0"[..]));
        assert_eq!(r.body(), BodyLength::Length(5));
    }

    #[test]
    fn target_with_spaces() {
        let r = Request::parse(b"GET /a;cat /etc/passwd|?x HTTP/1.1\r\nHost: h\r\n\r\n").unwrap();
        assert_eq!(r.target, b"/a;cat /etc/passwd|?x");
        assert!(Request::parse(b"GET HTTP/1.1\r\n\r\n").is_none());
    }

    #[test]
    fn response_head() {
        let h = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nTransfer-Encoding: gzip, chunked\r\n\r\n";
        let r = Response::parse(h).unwrap();
        assert_eq!(r.status, 200);
        assert_eq!(r.fields.content_type, Some(&b"text/html"[..]));
        assert_eq!(r.body(Some(b"GET")), BodyLength::Chunked);
        assert_eq!(r.body(Some(b"HEAD")), BodyLength::None);
        assert!(Response::parse(b"HTTP/1.1 2x0 OK\r\n\r\n").is_none());
    }

    #[test]
    fn probes() {
        assert_eq!(probe_request(b"GE"), None);
        assert_eq!(probe_request(b"GET /"), Some(true));
        assert_eq!(probe_request(b"GETX"), Some(false));
        assert_eq!(probe_request(b"\x16\x03\x01"), Some(false));
        assert_eq!(probe_response(b"HTTP/1.0 200"), Some(true));
        assert_eq!(probe_response(b"HTT"), None);
    }

    /// RFC 9110 §9.1: a method is any token, not only the common ones; a request with
    /// another method parses, and a whole request line classifies a stream, while a line
    /// without the HTTP version at its end, or a method that is not a token, does not.
    #[test]
    fn any_token_is_a_method() {
        for m in ["PURGE", "MKCOL", "PROPFIND", "BAN", "VERSION-CONTROL", "purge", "X.MS~Get!"] {
            let head = format!("{m} /x HTTP/1.1\r\nHost: h\r\n\r\n");
            let r = Request::parse(head.as_bytes()).unwrap_or_else(|| panic!("{m}"));
            assert_eq!(r.method, m.as_bytes());
            assert_eq!(probe_request(head.as_bytes()), Some(true), "{m}");
            assert!(starts_with_request_line(head.as_bytes()).0, "{m}");
        }
        let long = format!("{} / HTTP/1.1\r\n\r\n", "A".repeat(MAX_METHOD + 1));
        assert!(Request::parse(long.as_bytes()).is_none());
        assert_eq!(probe_request(long.as_bytes()), Some(false));
        for not in [
            &b"GE(T / HTTP/1.1\r\n\r\n"[..],
            b"PURGE /x\r\n",
            b"PURGE /x HTTP/2\r\n",
            b"PURGE  HTTP/1.1\r\n",
            b"HELLO world, this is not HTTP\r\n",
            b"PURGE /x HTTP/1.1",
            b"\x00\x01",
        ] {
            assert_eq!(probe_request(not), Some(false), "{:?}", String::from_utf8_lossy(not));
        }
        assert_eq!(starts_with_request_line(b"\x16\x03\x01"), (false, 1));
        assert!(starts_with_status_line(b"HTTP/1.1 200 OK\r\n"));
        assert!(!starts_with_status_line(b"HTTP/1.1"));
        assert!(!starts_with_status_line(b"<html>HTTP/1.1 "));
    }

    #[test]
    fn head_ends_with_bare_lf() {
        assert_eq!(head_end(b"GET / HTTP/1.0\n\nbody"), Some(16));
        assert_eq!(head_end(b"GET / HTTP/1.0\r\nA: b\r\n"), None);
    }

    #[test]
    fn chunk_sizes() {
        assert_eq!(chunk_size(b"1a;ext=1"), Some(26));
        assert_eq!(chunk_size(b"zz"), None);
    }
}
