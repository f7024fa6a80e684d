//! DNS messages (RFC 1035 §4): header, the first question, answers (A, AAAA, CNAME and
//! the TTL of each). Pure bytes → structs; knows no flows.

use std::net::{Ipv4Addr, Ipv6Addr};

use std::fmt::Write;

use crate::cursor::Cursor;

pub const HEADER_LEN: usize = 12;
/// RFC 1035 §2.3.4: a name is at most 255 bytes on the wire.
const MAX_NAME: usize = 255;
/// Answers kept per message; the count is still reported.
pub const MAX_ANSWERS: usize = 16;

pub const TYPE_A: u16 = 1;
pub const TYPE_CNAME: u16 = 5;
pub const TYPE_AAAA: u16 = 28;

/// The 12-byte header (RFC 1035 §4.1.1).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Header {
    pub id: u16,
    pub flags: u16,
    pub qdcount: u16,
    pub ancount: u16,
    pub nscount: u16,
    pub arcount: u16,
}

impl Header {
    pub fn parse(b: &[u8]) -> Option<Self> {
        let mut c = Cursor::new(b);
        Some(Header {
            id: c.u16()?,
            flags: c.u16()?,
            qdcount: c.u16()?,
            ancount: c.u16()?,
            nscount: c.u16()?,
            arcount: c.u16()?,
        })
    }

    pub fn is_response(&self) -> bool {
        self.flags & 0x8000 != 0
    }

    pub fn opcode(&self) -> u8 {
        ((self.flags >> 11) & 0xf) as u8
    }

    pub fn rcode(&self) -> u8 {
        (self.flags & 0xf) as u8
    }

    /// Cheap plausibility for classification: a standard-ish opcode, the Z bit clear, a
    /// few questions, and counts that a message of this size can hold.
    pub fn is_plausible(&self, len: usize) -> bool {
        let records = usize::from(self.qdcount) + usize::from(self.ancount) + usize::from(self.nscount);
        self.opcode() <= 5
            && self.opcode() != 3
            && self.flags & 0x0040 == 0
            && (1..=4).contains(&self.qdcount)
            && records * 5 <= len
            && (self.is_response() || self.ancount <= 1)
    }
}

/// Reads a possibly compressed name at `pos` (RFC 1035 §4.1.4) into `out`, dotted,
/// non-printable bytes escaped as `\DDD`. Returns the offset after the name where it
/// first appears. Loop-safe: every pointer must point before the label that holds it,
/// so the walk strictly moves backwards and ends.
pub fn parse_name(msg: &[u8], pos: usize, out: &mut String) -> Option<usize> {
    walk_name(msg, pos, |label| push_label(out, label))
}

/// As `parse_name`, without building the name: the same offset, or `None` on the same
/// names.
pub fn skip_name(msg: &[u8], pos: usize) -> Option<usize> {
    walk_name(msg, pos, |_| {})
}

/// The walk of `parse_name`, handing each label to `on_label` in order.
fn walk_name(msg: &[u8], pos: usize, mut on_label: impl FnMut(&[u8])) -> Option<usize> {
    let mut at = pos;
    let mut end = None;
    let mut wire_len = 0usize;
    let mut floor = pos;
    loop {
        let len = *msg.get(at)?;
        match len >> 6 {
            0 => {
                if len == 0 {
                    return Some(end.unwrap_or(at + 1));
                }
                let label = msg.get(at + 1..at + 1 + usize::from(len))?;
                wire_len += usize::from(len) + 1;
                if wire_len > MAX_NAME {
                    return None;
                }
                on_label(label);
                at += 1 + usize::from(len);
            }
            3 => {
                let lo = *msg.get(at + 1)?;
                let target = usize::from(len & 0x3f) << 8 | usize::from(lo);
                if end.is_none() {
                    end = Some(at + 2);
                }
                if target >= floor {
                    return None;
                }
                floor = target;
                at = target;
            }
            // 0b01 and 0b10 are the retired extended label types (RFC 6891 §5).
            _ => return None,
        }
    }
}

/// Appends one label to a dotted name.
fn push_label(out: &mut String, label: &[u8]) {
    if !out.is_empty() {
        out.push('.');
    }
    // The common label, printable ASCII without `.` or `\`, is copied whole.
    if label.iter().all(|&c| matches!(c, 0x21..=0x7e) && c != b'.' && c != b'\\') {
        if let Ok(text) = std::str::from_utf8(label) {
            out.push_str(text);
            return;
        }
    }
    // RFC 6762 §16 and RFC 4795 (mDNS, LLMNR) carry UTF-8 names: keep a label that is
    // valid UTF-8 as text, escape anything else byte by byte.
    let utf8 = std::str::from_utf8(label).ok().filter(|s| !s.chars().any(char::is_control));
    for (i, &c) in label.iter().enumerate() {
        match c {
            b'.' | b'\\' => {
                out.push('\\');
                out.push(char::from(c));
            }
            0x21..=0x7e => out.push(char::from(c)),
            0x80.. if utf8.is_some() => {
                if let Some(ch) = utf8.and_then(|s| s.get(i..)).and_then(|s| s.chars().next()) {
                    out.push(ch);
                }
            }
            _ => {
                let _ = write!(out, "\\{c:03}");
            }
        }
    }
}

/// Room reserved for a name: most fit, so the string grows at most once.
const NAME_CAPACITY: usize = 48;

/// A pointer to the first question's name (RFC 1035 §4.1.4), how most answers name
/// their owner.
const POINTER_TO_QUESTION: [u8; 2] = [0xc0, HEADER_LEN as u8];

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Question {
    pub name: String,
    pub qtype: u16,
    pub qclass: u16,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AnswerData {
    A(Ipv4Addr),
    Aaaa(Ipv6Addr),
    Cname(String),
    /// Another type; the crate keeps only its type and TTL.
    Other,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Answer {
    pub name: String,
    pub rtype: u16,
    pub ttl: u32,
    pub data: AnswerData,
}

/// A parsed message: the header, the first question, the first `MAX_ANSWERS` answers.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Message {
    pub header: Header,
    pub question: Option<Question>,
    pub answers: Vec<Answer>,
}

/// Why a message did not parse.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DnsError {
    /// Truncated or inconsistent.
    Malformed,
    /// A name with a pointer loop, a forward pointer or over 255 bytes.
    BadName,
}

impl Message {
    pub fn parse(msg: &[u8]) -> Result<Self, DnsError> {
        let header = Header::parse(msg).ok_or(DnsError::Malformed)?;
        let mut pos = HEADER_LEN;
        let mut question = None;
        for i in 0..header.qdcount {
            let mut name = String::new();
            pos = if i == 0 {
                name.reserve(NAME_CAPACITY);
                parse_name(msg, pos, &mut name)
            } else {
                skip_name(msg, pos)
            }
            .ok_or(DnsError::BadName)?;
            let mut c = Cursor::new(msg.get(pos..).ok_or(DnsError::Malformed)?);
            let qtype = c.u16().ok_or(DnsError::Malformed)?;
            let qclass = c.u16().ok_or(DnsError::Malformed)?;
            pos += 4;
            if i == 0 {
                question = Some(Question { name, qtype, qclass });
            }
        }
        let mut answers = Vec::new();
        for _ in 0..header.ancount.min(MAX_ANSWERS as u16) {
            let name = match &question {
                // The pointer leads to the name the first question spelled (it parsed,
                // from the same offset): the same string, without the walk.
                Some(q) if msg.get(pos..pos + 2) == Some(&POINTER_TO_QUESTION[..]) => {
                    pos += 2;
                    q.name.clone()
                }
                _ => {
                    let mut name = String::with_capacity(NAME_CAPACITY);
                    pos = parse_name(msg, pos, &mut name).ok_or(DnsError::BadName)?;
                    name
                }
            };
            let mut c = Cursor::new(msg.get(pos..).ok_or(DnsError::Malformed)?);
            let rtype = c.u16().ok_or(DnsError::Malformed)?;
            let _class = c.u16().ok_or(DnsError::Malformed)?;
            let ttl = c.u32().ok_or(DnsError::Malformed)?;
            let rdata = c.vec16().ok_or(DnsError::Malformed)?;
            let rdata_at = pos + 10;
            pos = rdata_at + rdata.len();
            let data = match (rtype, rdata.len()) {
                (TYPE_A, 4) => AnswerData::A(Ipv4Addr::new(rdata[0], rdata[1], rdata[2], rdata[3])),
                (TYPE_AAAA, 16) => {
                    let mut a = [0u8; 16];
                    a.copy_from_slice(rdata);
                    AnswerData::Aaaa(Ipv6Addr::from(a))
                }
                (TYPE_CNAME, _) => {
                    let mut n = String::with_capacity(NAME_CAPACITY);
                    parse_name(msg, rdata_at, &mut n).ok_or(DnsError::BadName)?;
                    AnswerData::Cname(n)
                }
                _ => AnswerData::Other,
            };
            answers.push(Answer { name, rtype, ttl, data });
        }
        Ok(Message { header, question, answers })
    }

    /// What `parse` would answer, without building it: `Ok(true)` when it parses with
    /// a question, `Ok(false)` when it parses without, the same error otherwise. For the
    /// classification probes, which only ask whether a datagram is DNS.
    pub fn validate(msg: &[u8]) -> Result<bool, DnsError> {
        let header = Header::parse(msg).ok_or(DnsError::Malformed)?;
        let mut pos = HEADER_LEN;
        for _ in 0..header.qdcount {
            pos = skip_name(msg, pos).ok_or(DnsError::BadName)?;
            let mut c = Cursor::new(msg.get(pos..).ok_or(DnsError::Malformed)?);
            c.u16().ok_or(DnsError::Malformed)?;
            c.u16().ok_or(DnsError::Malformed)?;
            pos += 4;
        }
        for _ in 0..header.ancount.min(MAX_ANSWERS as u16) {
            pos = skip_name(msg, pos).ok_or(DnsError::BadName)?;
            let mut c = Cursor::new(msg.get(pos..).ok_or(DnsError::Malformed)?);
            let rtype = c.u16().ok_or(DnsError::Malformed)?;
            c.u16().ok_or(DnsError::Malformed)?;
            c.u32().ok_or(DnsError::Malformed)?;
            let rdata = c.vec16().ok_or(DnsError::Malformed)?;
            let rdata_at = pos + 10;
            pos = rdata_at + rdata.len();
            if rtype == TYPE_CNAME {
                skip_name(msg, rdata_at).ok_or(DnsError::BadName)?;
            }
        }
        Ok(header.qdcount > 0)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A response for www.example.com: CNAME to example.com, then its A record, with
    /// compression pointers (the shape of RFC 1035 §4.1.4's example).
    pub(crate) fn response() -> Vec<u8> {
        let mut m = vec![0x12, 0x34, 0x81, 0x80, 0, 1, 0, 2, 0, 0, 0, 0];
        m.extend_from_slice(b"\x03www\x07example\x03com\x00");
        m.extend_from_slice(&[0, 1, 0, 1]);
        // CNAME: name = pointer to 12, rdata = pointer to "example.com" at 16.
        m.extend_from_slice(&[0xc0, 12, 0, 5, 0, 1, 0, 0, 0x0e, 0x10, 0, 2, 0xc0, 16]);
        // A: name = pointer to 16.
        m.extend_from_slice(&[0xc0, 16, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 93, 184, 216, 34]);
        m
    }

    #[test]
    fn response_with_pointers() {
        let m = Message::parse(&response()).unwrap();
        assert_eq!(m.header.id, 0x1234);
        assert!(m.header.is_response());
        assert_eq!(m.header.rcode(), 0);
        assert_eq!(m.question.as_ref().unwrap().name, "www.example.com");
        assert_eq!(m.answers[0].data, AnswerData::Cname("example.com".into()));
        assert_eq!(m.answers[0].ttl, 3600);
        assert_eq!(m.answers[1].data, AnswerData::A(Ipv4Addr::new(93, 184, 216, 34)));
        assert_eq!(m.answers[1].name, "example.com");
        assert!(m.header.is_plausible(response().len()));
    }

    #[test]
    fn pointer_loops_and_forward_pointers_fail() {
        let mut m = vec![0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0];
        m.extend_from_slice(&[0xc0, 12, 0, 1, 0, 1]);
        assert_eq!(Message::parse(&m), Err(DnsError::BadName));
        let mut m = vec![0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0];
        m.extend_from_slice(&[1, b'a', 0xc0, 12, 0, 1, 0, 1]);
        assert_eq!(Message::parse(&m), Err(DnsError::BadName));
        let mut m = vec![0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0];
        m.extend_from_slice(&[0xc0, 20, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(Message::parse(&m), Err(DnsError::BadName));
    }

    /// Messages with names that are compressed, escaped, UTF-8, looping or cut short.
    fn messages() -> impl proptest::strategy::Strategy<Value = Vec<u8>> {
        use proptest::prelude::*;
        let label = prop_oneof![
            Just(b"\x03www".to_vec()),
            Just(b"\x07example".to_vec()),
            Just(b"\x03a.b".to_vec()),
            Just(b"\x04\xc3\xa9t\xc3".to_vec()),
            Just(b"\x02\xc3\xa9".to_vec()),
            Just(vec![0xc0, 12]),
            Just(vec![0xc0, 13]),
            Just(vec![0xc0, 30]),
            Just(vec![0]),
            Just(vec![0]),
            proptest::collection::vec(any::<u8>(), 0..8),
        ];
        let record =
            (proptest::collection::vec(label.clone(), 0..4), any::<bool>(), proptest::collection::vec(label, 0..3))
                .prop_map(|(name, cname, target)| {
                    let mut r: Vec<u8> = name.concat();
                    r.push(0);
                    r.extend_from_slice(&[0, if cname { 5 } else { 1 }, 0, 1, 0, 0, 0, 9]);
                    let mut data: Vec<u8> = target.concat();
                    data.push(0);
                    if !cname {
                        data = vec![1, 2, 3, 4];
                    }
                    r.extend_from_slice(&(data.len() as u16).to_be_bytes());
                    r.extend_from_slice(&data);
                    r
                });
        (0u8..3, 0u8..5, proptest::collection::vec(record, 0..5), 0usize..200, any::<bool>()).prop_map(
            |(qd, an, records, cut, do_cut)| {
                let mut m = vec![0x12, 0x34, 0x81, 0x80, 0, qd, 0, an, 0, 0, 0, 0];
                m.extend_from_slice(b"\x03www\x07example\x03com\x00\x00\x01\x00\x01");
                for r in records {
                    m.extend_from_slice(&r);
                }
                if do_cut {
                    m.truncate(cut);
                }
                m
            },
        )
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 3000, ..Default::default() })]

        /// `validate` agrees with `parse`, and `parse` with a walk that spells every
        /// answer's name from the wire (no shortcut for pointers to the question).
        #[test]
        fn validate_and_shortcuts_agree_with_parse(m in messages()) {
            let parsed = Message::parse(&m);
            proptest::prop_assert_eq!(Message::validate(&m), parsed.as_ref().map(|p| p.question.is_some()).map_err(|e| *e));
            if let Ok(p) = parsed {
                // Re-walk the answers' owner names the long way.
                let mut pos = HEADER_LEN;
                for _ in 0..p.header.qdcount {
                    pos = skip_name(&m, pos).unwrap() + 4;
                }
                for a in &p.answers {
                    let mut name = String::new();
                    pos = parse_name(&m, pos, &mut name).unwrap();
                    proptest::prop_assert_eq!(&a.name, &name);
                    let len = u16::from_be_bytes([m[pos + 8], m[pos + 9]]) as usize;
                    pos += 10 + len;
                }
            }
        }

        /// The fast copy of plain labels spells names as the byte-by-byte escaping does.
        #[test]
        fn labels_spell_as_escaped(labels in proptest::collection::vec(proptest::collection::vec(proptest::prelude::any::<u8>(), 1..12), 1..4)) {
            let mut wire = Vec::new();
            for l in &labels {
                wire.push(l.len() as u8);
                wire.extend_from_slice(l);
            }
            wire.push(0);
            let mut fast = String::new();
            parse_name(&wire, 0, &mut fast).unwrap();
            let mut slow = String::new();
            for l in &labels {
                if !slow.is_empty() {
                    slow.push('.');
                }
                let utf8 = std::str::from_utf8(l).ok().filter(|s| !s.chars().any(char::is_control));
                for (i, &c) in l.iter().enumerate() {
                    match c {
                        b'.' | b'\\' => { slow.push('\\'); slow.push(char::from(c)); }
                        0x21..=0x7e => slow.push(char::from(c)),
                        0x80.. if utf8.is_some() => {
                            if let Some(ch) = utf8.and_then(|s| s.get(i..)).and_then(|s| s.chars().next()) { slow.push(ch); }
                        }
                        _ => { let _ = write!(slow, "\\{c:03}"); }
                    }
                }
            }
            proptest::prop_assert_eq!(fast, slow);
        }
    }

    #[test]
    fn names_are_escaped_and_bounded() {
        let mut out = String::new();
        assert_eq!(parse_name(b"\x03a.b\x01\x00\x00", 0, &mut out), Some(7));
        assert_eq!(out, "a\\.b.\\000");
        // Labels of 63 bytes of value 63, five of them: 320 bytes.
        let long = vec![63u8; 320];
        assert_eq!(parse_name(&long, 0, &mut String::new()), None);
    }
}
