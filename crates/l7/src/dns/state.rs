//! Per-flow DNS state: TCP message framing (RFC 1035 §4.2.2: a two-byte length before
//! each message) and queries paired with their responses inside the flow.

use super::parser::{Answer, DnsError, Message, Question, MAX_ANSWERS};
use crate::event::{Event, Events};
use crate::{Dir, Transport};

/// A query and its response, as a record prints them. Pairing is by transaction id and
/// question inside one flow (one 5-tuple); `key()` lets a caller pair across flows.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DnsTransaction {
    pub id: u16,
    pub qname: String,
    pub qtype: u16,
    pub qclass: u16,
    pub query_ts_ns: Option<u64>,
    pub response_ts_ns: Option<u64>,
    /// Response code of the response, if one came.
    pub rcode: Option<u8>,
    /// The response's flags (RFC 1035 §4.1.1), 0 without a response.
    pub flags: u16,
    pub answer_count: u16,
    /// The first answers (A, AAAA, CNAME kept; others as `Other`).
    pub answers: Vec<Answer>,
    /// Which way the query went (a DNS server can be the flow's client on port 53 too).
    pub query_dir: Option<Dir>,
}

/// What identifies a transaction: id, type and name of the question.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct DnsKey {
    pub id: u16,
    pub qtype: u16,
    pub qname: String,
}

impl DnsTransaction {
    /// The names a record writes (the question's, the answers' owners and CNAMEs), each
    /// handed to `f`: `--anonymize` rewrites the addresses written in them (a reverse
    /// lookup's, a label that holds one). The answers' addresses are not text.
    pub fn texts_mut(&mut self, f: &mut crate::TextVisitor<'_>) {
        use super::parser::{Answer, AnswerData};
        let DnsTransaction {
            id: _,
            qname,
            qtype: _,
            qclass: _,
            query_ts_ns: _,
            response_ts_ns: _,
            rcode: _,
            flags: _,
            answer_count: _,
            answers,
            query_dir: _,
        } = self;
        f(qname);
        for Answer { name, rtype: _, ttl: _, data } in answers {
            f(name);
            match data {
                AnswerData::Cname(n) => f(n),
                AnswerData::A(_) | AnswerData::Aaaa(_) | AnswerData::Other => {}
            }
        }
    }

    pub fn key(&self) -> DnsKey {
        DnsKey { id: self.id, qtype: self.qtype, qname: self.qname.clone() }
    }
}

/// Queries waiting for a response, at most.
const MAX_PENDING: usize = 16;
/// Largest DNS-over-TCP message reassembled.
const MAX_TCP_MESSAGE: usize = 16 * 1024;

#[derive(Clone, Debug, Default)]
struct TcpFraming {
    buf: Vec<u8>,
    stopped: bool,
}

/// DNS over one UDP or TCP flow.
#[derive(Clone, Debug, Default)]
pub struct DnsState {
    pending: Vec<DnsTransaction>,
    ready: Vec<DnsTransaction>,
    tcp: [TcpFraming; 2],
    pub messages: u32,
    /// The transaction limit was reached.
    full: bool,
    pub(crate) events: Events,
    /// Its TCP streams put back in order from their first hole on (`reorder`).
    pub(crate) reorder: Option<Box<crate::reorder::Reorder>>,
}

impl DnsState {
    pub fn on_data(&mut self, dir: Dir, proto: Transport, data: &[u8], ts_ns: u64, max_transactions: u32) {
        match proto {
            Transport::Udp => self.on_message(dir, data, ts_ns, max_transactions),
            Transport::Tcp => {
                let d = dir as usize;
                if self.tcp[d].stopped {
                    return;
                }
                let mut rest = data;
                loop {
                    // Zero-copy when whole messages sit in the segment.
                    let f = &mut self.tcp[d];
                    let (len, msg_at): (usize, &[u8]) = if f.buf.is_empty() {
                        match rest {
                            [a, b, m @ ..] if m.len() >= usize::from(u16::from_be_bytes([*a, *b])) => {
                                let n = usize::from(u16::from_be_bytes([*a, *b]));
                                (n, m)
                            }
                            [] => return,
                            _ => {
                                if rest.len() >= 2
                                    && usize::from(u16::from_be_bytes([rest[0], rest[1]])) > MAX_TCP_MESSAGE
                                {
                                    f.stopped = true;
                                    self.events.insert(Event::DnsMalformed);
                                    return;
                                }
                                f.buf.extend_from_slice(rest);
                                return;
                            }
                        }
                    } else {
                        f.buf.extend_from_slice(rest);
                        if f.buf.len() < 2 {
                            return;
                        }
                        let n = usize::from(u16::from_be_bytes([f.buf[0], f.buf[1]]));
                        if n > MAX_TCP_MESSAGE {
                            f.stopped = true;
                            f.buf = Vec::new();
                            self.events.insert(Event::DnsMalformed);
                            return;
                        }
                        if f.buf.len() < 2 + n {
                            return;
                        }
                        let buf = std::mem::take(&mut f.buf);
                        self.on_message(dir, &buf[2..2 + n], ts_ns, max_transactions);
                        // Bytes after the message start the next one.
                        let tail = &buf[2 + n..];
                        if tail.is_empty() {
                            return;
                        }
                        let tail = tail.to_vec();
                        return self.on_data(dir, proto, &tail, ts_ns, max_transactions);
                    };
                    let msg = &msg_at[..len];
                    rest = &msg_at[len..];
                    self.on_message(dir, msg, ts_ns, max_transactions);
                    if self.tcp[d].stopped {
                        return;
                    }
                }
            }
        }
    }

    fn on_message(&mut self, dir: Dir, msg: &[u8], ts_ns: u64, max_transactions: u32) {
        if self.messages >= max_transactions.saturating_mul(2) {
            self.events.insert(Event::DnsTooManyTransactions);
            self.full = true;
            self.tcp = Default::default();
            return;
        }
        self.messages += 1;
        let m = match Message::parse(msg) {
            Ok(m) => m,
            Err(DnsError::Malformed) => return self.events.insert(Event::DnsMalformed),
            Err(DnsError::BadName) => return self.events.insert(Event::DnsNameInvalid),
        };
        // The parser keeps the first `MAX_ANSWERS`: a record's `answers` is then a part of
        // the response's answer section (RFC 1035 §4.1.3), which the event says.
        if usize::from(m.header.ancount) > MAX_ANSWERS {
            self.events.insert(Event::DnsTooManyAnswers);
        }
        // mDNS announcements (RFC 6762 §8.3) have no question: name them by their first answer.
        let q = m.question.unwrap_or_else(|| match m.answers.first() {
            Some(a) => Question { name: a.name.clone(), qtype: a.rtype, qclass: 1 },
            None => Question::default(),
        });
        if !m.header.is_response() {
            if self.pending.len() >= MAX_PENDING {
                // The oldest query will get no answer in time: report it unanswered.
                let old = self.pending.remove(0);
                self.ready.push(old);
            }
            self.pending.push(DnsTransaction {
                id: m.header.id,
                qname: q.name,
                qtype: q.qtype,
                qclass: q.qclass,
                query_ts_ns: Some(ts_ns),
                query_dir: Some(dir),
                ..DnsTransaction::default()
            });
            return;
        }
        let at = self.pending.iter().position(|t| {
            t.id == m.header.id
                && t.qtype == q.qtype
                && t.qname.eq_ignore_ascii_case(&q.name)
                && t.query_dir != Some(dir)
        });
        let mut t = match at {
            Some(i) => self.pending.remove(i),
            None => DnsTransaction {
                id: m.header.id,
                qname: q.name,
                qtype: q.qtype,
                qclass: q.qclass,
                ..Default::default()
            },
        };
        t.response_ts_ns = Some(ts_ns);
        t.rcode = Some(m.header.rcode());
        t.flags = m.header.flags;
        t.answer_count = m.header.ancount;
        t.answers = m.answers;
        self.ready.push(t);
    }

    /// Moves out the finished transactions; with `flush`, unanswered queries too.
    pub fn drain(&mut self, flush: bool) -> Vec<DnsTransaction> {
        if flush {
            self.ready.append(&mut self.pending);
        }
        std::mem::take(&mut self.ready)
    }

    /// True once the transaction limit is reached (or TCP framing gave up both ways).
    pub fn is_done(&self) -> bool {
        self.full || self.tcp.iter().all(|f| f.stopped)
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        self.tcp.iter().map(|f| f.buf.capacity()).sum::<usize>()
            + (self.pending.capacity() + self.ready.capacity()) * std::mem::size_of::<DnsTransaction>()
    }
}

#[cfg(test)]
mod tests {
    use super::super::parser::tests::response;
    use super::*;

    fn query() -> Vec<u8> {
        let mut m = vec![0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0];
        m.extend_from_slice(b"\x03www\x07example\x03com\x00\x00\x01\x00\x01");
        m
    }

    #[test]
    fn udp_pairs_query_and_response() {
        let mut st = DnsState::default();
        st.on_data(Dir::ClientToServer, Transport::Udp, &query(), 10, 64);
        assert!(st.drain(false).is_empty());
        st.on_data(Dir::ServerToClient, Transport::Udp, &response(), 25, 64);
        let t = st.drain(false);
        assert_eq!(t.len(), 1);
        assert_eq!((t[0].query_ts_ns, t[0].response_ts_ns, t[0].rcode), (Some(10), Some(25), Some(0)));
        assert_eq!(t[0].qname, "www.example.com");
        assert_eq!(t[0].answers.len(), 2);
    }

    /// A response with more answers than a transaction keeps says so with an event
    /// (before, the list was cut silently); one with as many as it keeps does not.
    #[test]
    fn more_answers_than_kept_is_an_event() {
        let many = |n: u16| {
            let mut m = vec![0x12, 0x34, 0x81, 0x80, 0, 1];
            m.extend_from_slice(&n.to_be_bytes());
            m.extend_from_slice(&[0, 0, 0, 0]);
            m.extend_from_slice(b"\x03www\x07example\x03com\x00\x00\x01\x00\x01");
            for i in 0..n {
                m.extend_from_slice(&[0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 192, 0, 2, i as u8]);
            }
            m
        };
        let mut st = DnsState::default();
        st.on_data(Dir::ClientToServer, Transport::Udp, &query(), 1, 64);
        st.on_data(Dir::ServerToClient, Transport::Udp, &many(MAX_ANSWERS as u16), 2, 64);
        assert!(!st.events.contains(Event::DnsTooManyAnswers));
        st.on_data(Dir::ClientToServer, Transport::Udp, &query(), 3, 64);
        st.on_data(Dir::ServerToClient, Transport::Udp, &many(MAX_ANSWERS as u16 + 4), 4, 64);
        assert!(st.events.contains(Event::DnsTooManyAnswers));
        let t = st.drain(true);
        assert_eq!((t[1].answer_count, t[1].answers.len()), (MAX_ANSWERS as u16 + 4, MAX_ANSWERS));
    }

    #[test]
    fn tcp_framing_split_anywhere() {
        let mut stream = Vec::new();
        for m in [query(), query()] {
            stream.extend_from_slice(&(m.len() as u16).to_be_bytes());
            stream.extend_from_slice(&m);
        }
        for seg in 1..stream.len() {
            let mut st = DnsState::default();
            for c in stream.chunks(seg) {
                st.on_data(Dir::ClientToServer, Transport::Tcp, c, 0, 64);
            }
            assert_eq!(st.messages, 2, "segments of {seg}");
            assert_eq!(st.drain(true).len(), 2);
        }
    }
}
