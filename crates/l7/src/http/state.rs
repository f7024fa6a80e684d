//! Per-flow HTTP/1.x state: one stream parser per direction that walks heads and skips
//! bodies, and the transactions, requests paired with responses in order (RFC 9112 §9.3.2:
//! pipelined responses come in the order of the requests).

use std::collections::VecDeque;

use super::parser::{
    chunk_size, head_end, starts_with_request_line, starts_with_status_line, BodyLength, Request, Response,
};
use crate::cursor::lossy_string;
use crate::event::{Event, Events};
use crate::{Dir, UrlPrivacy};

/// Longest head kept while it arrives in pieces; longer ones end the direction.
pub const MAX_HEAD: usize = 16 * 1024;
/// Longest string kept from a field: bounded memory per transaction.
const MAX_FIELD: usize = 512;
/// Requests waiting for their response, at most.
const MAX_PENDING: usize = 32;

fn field(v: &[u8]) -> String {
    lossy_string(&v[..v.len().min(MAX_FIELD)])
}

/// A URL up to its query (RFC 3986 §3.4) or fragment (§3.5): the part `UrlPrivacy::
/// PathOnly` keeps.
fn without_query(v: &[u8]) -> &[u8] {
    &v[..v.iter().position(|&c| c == b'?' || c == b'#').unwrap_or(v.len())]
}

/// The part of a URL `privacy` allows to keep.
fn private_part(v: &[u8], privacy: UrlPrivacy) -> Option<&[u8]> {
    match privacy {
        UrlPrivacy::Full => Some(v),
        UrlPrivacy::PathOnly => Some(without_query(v)),
        UrlPrivacy::None => None,
    }
}

/// A URL as `privacy` allows.
fn private_url(v: &[u8], privacy: UrlPrivacy) -> Option<String> {
    private_part(v, privacy).map(field)
}

/// Whether a field among `vs` is longer than a record keeps ([`field`] cuts it).
fn any_cut<const N: usize>(vs: [Option<&[u8]>; N]) -> bool {
    vs.iter().flatten().any(|v| v.len() > MAX_FIELD)
}

/// One request, as a record prints it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HttpRequest {
    pub ts_ns: u64,
    pub method: String,
    pub host: Option<String>,
    /// The request target as `UrlPrivacy` allows: all of it, the path without the query,
    /// or nothing.
    pub url: Option<String>,
    pub user_agent: Option<String>,
    /// The Referer as `UrlPrivacy` allows, as `url`: it is the URL of the page before,
    /// query included (RFC 9110 §10.1.3), and says as much as the target does.
    pub referer: Option<String>,
    pub minor_version: u8,
}

/// One response.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HttpResponse {
    pub ts_ns: u64,
    pub status: u16,
    pub content_type: Option<String>,
    pub content_length: Option<u64>,
    pub server: Option<String>,
    pub minor_version: u8,
}

/// A request and its response; either may be missing (a capture that starts after the
/// request, a flow that ends before the response).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HttpTransaction {
    pub request: Option<HttpRequest>,
    pub response: Option<HttpResponse>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Body {
    /// Expecting a head.
    #[default]
    Head,
    Skip(u64),
    ChunkSize,
    ChunkData(u64),
    /// The CRLF after a chunk's data.
    ChunkEnd,
    Trailers,
    /// After a gap in the stream: waiting for a segment that starts with a head.
    Resync,
    Stopped,
}

/// One direction's stream parser.
#[derive(Clone, Debug, Default)]
struct Stream {
    /// A head or chunk line that is still arriving.
    partial: Vec<u8>,
    body: Body,
    /// Bytes of heads and chunk lines looked at (bodies are skipped, not inspected).
    inspected: usize,
    /// Past the budget: heads are still delimited and parsed, to count the messages and
    /// find where their bodies end, but no transaction of this direction is kept.
    quiet: bool,
}

impl Stream {
    /// Walks `data`; `on_head` parses each whole head (told whether the direction is
    /// quiet) and says how its body ends, or `None` to stop (a malformed head).
    fn on_data(
        &mut self,
        mut data: &[u8],
        budget: usize,
        events: &mut Events,
        mut on_head: impl FnMut(&[u8], bool) -> Option<BodyLength>,
    ) {
        while !data.is_empty() {
            match self.body {
                Body::Stopped | Body::Resync => return,
                Body::Skip(n) | Body::ChunkData(n) => {
                    let k = n.min(data.len() as u64);
                    data = &data[k as usize..];
                    let left = n - k;
                    self.body = match (self.body, left) {
                        (Body::Skip(_), 0) => Body::Head,
                        (Body::Skip(_), _) => Body::Skip(left),
                        (_, 0) => Body::ChunkEnd,
                        (_, _) => Body::ChunkData(left),
                    };
                }
                Body::Head => {
                    if self.partial.is_empty() {
                        // RFC 9112 §2.2: empty lines before a request line are ignored.
                        let skip = data.iter().take_while(|&&c| c == b'\r' || c == b'\n').count();
                        data = &data[skip..];
                        if data.is_empty() {
                            return;
                        }
                    }
                    let Some((head_len, used)) = self.take_until(&mut data, head_end, MAX_HEAD, budget, events) else {
                        return;
                    };
                    let body = if self.partial.is_empty() {
                        on_head(&used[..head_len], self.quiet)
                    } else {
                        let r = on_head(&self.partial, self.quiet);
                        self.partial = Vec::new();
                        r
                    };
                    self.body = match body {
                        None => Body::Stopped,
                        Some(BodyLength::None) => Body::Head,
                        Some(BodyLength::Length(n)) => Body::Skip(n),
                        Some(BodyLength::Chunked) => Body::ChunkSize,
                        Some(BodyLength::UntilClose) => {
                            events.insert(Event::HttpBodyUnbounded);
                            Body::Stopped
                        }
                    };
                }
                Body::ChunkSize | Body::ChunkEnd | Body::Trailers => {
                    let line_end = |b: &[u8]| b.iter().position(|&c| c == b'\n').map(|i| i + 1);
                    let Some((len, used)) = self.take_until(&mut data, line_end, 1024, budget, events) else {
                        return;
                    };
                    let line: &[u8] = if self.partial.is_empty() { &used[..len] } else { &self.partial };
                    let blank = line.iter().all(|&c| c == b'\r' || c == b'\n');
                    let size = chunk_size(line);
                    self.partial.clear();
                    self.body = match self.body {
                        Body::ChunkEnd if blank => Body::ChunkSize,
                        Body::ChunkSize => match size {
                            Some(0) => Body::Trailers,
                            Some(n) => Body::ChunkData(n),
                            None => {
                                events.insert(Event::HttpMalformed);
                                Body::Stopped
                            }
                        },
                        Body::Trailers if blank => Body::Head,
                        Body::Trailers => Body::Trailers,
                        _ => {
                            events.insert(Event::HttpMalformed);
                            Body::Stopped
                        }
                    };
                }
            }
        }
    }

    /// Takes bytes up to the end `find` reports, from `partial` + `data`. Returns the
    /// length of the unit and the slice of `data` it was found in (when `partial` was
    /// empty) and advances `data` past what the unit used; `None` when more is needed.
    /// The budget bounds the bytes looked at while the direction keeps transactions;
    /// past it the direction turns quiet and goes on (`quiet`).
    fn take_until<'d>(
        &mut self,
        data: &mut &'d [u8],
        find: impl Fn(&[u8]) -> Option<usize>,
        max: usize,
        budget: usize,
        events: &mut Events,
    ) -> Option<(usize, &'d [u8])> {
        let d: &'d [u8] = data;
        let budget = if self.quiet { usize::MAX } else { budget };
        // The budget bounds the bytes looked at (`L7Config::budget`), heads that arrive
        // whole included: the search goes no further than what is left of it.
        let left = budget.saturating_sub(self.inspected);
        if self.partial.is_empty() {
            if let Some(n) = find(&d[..d.len().min(left)]) {
                self.inspected = self.inspected.saturating_add(n);
                *data = &d[n..];
                return Some((n, d));
            }
        } else {
            // Search again from a little before the old end, where a delimiter may
            // straddle the segments.
            let old = self.partial.len();
            let from = old.saturating_sub(3);
            let room = max.min(left).saturating_sub(old);
            self.partial.extend_from_slice(&d[..d.len().min(room)]);
            // A delimiter is found only where it ends in the new bytes: the old ones
            // were searched before (`from` backs up by the longest delimiter less one).
            if let Some(n) = find(&self.partial[from..]).map(|n| n + from).filter(|&n| n > old) {
                let used = n - old;
                self.partial.truncate(n);
                self.inspected = self.inspected.saturating_add(used);
                *data = &d[used..];
                return Some((n, d));
            }
            self.partial.truncate(old);
        }
        if self.partial.len() + d.len() >= max {
            events.insert(Event::HttpHeaderTooLong);
            self.stop();
            return None;
        }
        if self.inspected.saturating_add(self.partial.len() + d.len()) > budget {
            // Past the budget: no more transactions of this direction are kept, but its
            // messages are still counted; look again without the bound.
            events.insert(Event::BudgetExhausted);
            self.quiet = true;
            return self.take_until(data, find, max, budget, events);
        }
        self.partial.extend_from_slice(d);
        *data = &[];
        None
    }

    fn stop(&mut self) {
        self.body = Body::Stopped;
        self.partial = Vec::new();
    }
}

/// A request waiting for its response.
#[derive(Clone, Debug)]
struct Pending {
    ts_ns: u64,
    /// The method's first bytes (HEAD and CONNECT change the response's body).
    method: [u8; 8],
    /// What the row prints; `None` when the request will not make a row (the row cap
    /// or the budget was reached when it came).
    request: Option<HttpRequest>,
}

impl Pending {
    fn method(&self) -> &[u8] {
        &self.method[..self.method.iter().position(|&c| c == 0).unwrap_or(8)]
    }
}

/// A final response not yet paired: it waits while the client's stream holds segments
/// beyond a hole (`reorder`), which may carry the request it answers.
#[derive(Clone, Debug)]
struct Answer {
    ts_ns: u64,
    /// What the row prints; `None` when the server's direction is quiet.
    response: Option<HttpResponse>,
    /// The first final response after a gap in the server's stream (`on_gap`).
    after_gap: bool,
}

/// HTTP/1.x over one TCP connection.
#[derive(Clone, Debug, Default)]
pub struct HttpState {
    streams: [Stream; 2],
    pending: VecDeque<Pending>,
    /// Final responses waiting for the client's stream (see [`Answer`]).
    answers: VecDeque<Answer>,
    ready: Vec<HttpTransaction>,
    /// Request heads seen, every one (Tstat's and tshark's count).
    pub requests: u32,
    /// Response heads seen, every one, interim (1xx) ones included.
    pub responses: u32,
    /// Transactions written as rows (at most `HttpLimits::max_transactions`).
    pub rows: u32,
    /// Transactions not written: past the row cap, or past a direction's budget.
    pub unlogged: u32,
    /// The Host of the first request (Tstat's `http_hostname`).
    pub first_host: Option<String>,
    /// The status of the first final response (Tstat's `http_res`).
    pub first_status: Option<u16>,
    /// Tstat's content class of the first request (`http_t`, [`super::site`]); 0 before it.
    pub first_class: u8,
    pub(crate) events: Events,
    /// A CONNECT request had a 2xx response: see `tunnel_established`.
    tunnel: bool,
    /// `HttpLimits::max_transactions`, as last given.
    max_rows: u32,
    /// The server's stream lost bytes and took up again at a status line; the next
    /// final response is the first after the gap.
    server_gap: bool,
    /// The client's stream has lost bytes.
    client_gap: bool,
    /// Its TCP streams put back in order from their first hole on (`reorder`).
    pub(crate) reorder: Option<Box<crate::reorder::Reorder>>,
}

/// Limits of one flow's HTTP parsing.
#[derive(Clone, Copy, Debug)]
pub struct HttpLimits {
    pub privacy: UrlPrivacy,
    /// Rows (transactions) written per flow; the messages past it are still counted.
    pub max_transactions: u32,
    /// Bytes of heads and chunk lines inspected per direction while transactions are
    /// kept; past it, heads are still parsed and counted (`Stream::quiet`).
    pub budget: usize,
}

impl HttpTransaction {
    /// The strings a record writes (the request's method, Host, target, User-Agent and
    /// Referer, the response's Content-Type and Server), each handed to `f`:
    /// `--anonymize` rewrites the addresses written in them.
    pub fn texts_mut(&mut self, f: &mut crate::TextVisitor<'_>) {
        let HttpTransaction { request, response } = self;
        if let Some(HttpRequest { ts_ns: _, method, host, url, user_agent, referer, minor_version: _ }) = request {
            f(method);
            for s in [host, url, user_agent, referer] {
                crate::visit(s, f);
            }
        }
        if let Some(HttpResponse { ts_ns: _, status: _, content_type, content_length: _, server, minor_version: _ }) =
            response
        {
            crate::visit(content_type, f);
            crate::visit(server, f);
        }
    }
}

impl HttpState {
    /// The flow's own strings a record writes (`http_hostname`); those of its
    /// transactions are `HttpTransaction::texts_mut`, called as each is written.
    pub(crate) fn texts_mut(&mut self, f: &mut crate::TextVisitor<'_>) {
        let HttpState {
            streams: _,
            pending: _,
            answers: _,
            ready: _,
            requests: _,
            responses: _,
            rows: _,
            unlogged: _,
            max_rows: _,
            first_host,
            first_status: _,
            first_class: _,
            events: _,
            tunnel: _,
            server_gap: _,
            client_gap: _,
            reorder: _,
        } = self;
        crate::visit(first_host, f);
    }

    pub fn on_data(&mut self, dir: Dir, data: &[u8], ts_ns: u64, limits: &HttpLimits) {
        if self.streams[dir as usize].body == Body::Resync && !self.resync(dir, data, limits.budget) {
            return;
        }
        self.max_rows = limits.max_transactions;
        let mut events = self.events;
        // The direction's parser is taken out while its heads change the rest.
        let mut stream = std::mem::take(&mut self.streams[dir as usize]);
        match dir {
            Dir::ClientToServer => stream
                .on_data(data, limits.budget, &mut events, |head, quiet| self.on_request(head, quiet, ts_ns, limits)),
            Dir::ServerToClient => {
                stream.on_data(data, limits.budget, &mut events, |head, quiet| self.on_response(head, quiet, ts_ns))
            }
        }
        self.streams[dir as usize] = stream;
        for e in events.iter() {
            self.events.insert(e);
        }
        self.settle();
    }

    /// A request head: counted, and queued for its response.
    fn on_request(&mut self, head: &[u8], quiet: bool, ts_ns: u64, limits: &HttpLimits) -> Option<BodyLength> {
        let Some(r) = Request::parse(head) else {
            self.events.insert(Event::HttpMalformed);
            return None;
        };
        self.requests = self.requests.saturating_add(1);
        if self.requests == 1 {
            self.first_class = super::site::classify(r.method, r.target);
        }
        if self.first_host.is_none() {
            self.first_host = r.fields.host.map(field);
            if any_cut([r.fields.host]) {
                self.events.insert(Event::HttpFieldTruncated);
            }
        }
        if self.pending.len() >= MAX_PENDING {
            // No client waits for this many answers (pipelining is a few deep, if at
            // all): the oldest lost its response, or the server's side is not in the
            // capture. It goes out unanswered, so that the count goes on.
            let p = self.pending.pop_front().expect("the queue is full");
            self.complete(Some(p), None);
        }
        // Only a request that can still make a row is kept whole.
        let room = (self.rows as usize + self.pending.len()) < limits.max_transactions as usize;
        let request = (!quiet && room).then(|| HttpRequest {
            ts_ns,
            method: field(r.method),
            host: r.fields.host.map(field),
            url: private_url(r.target, limits.privacy),
            user_agent: r.fields.user_agent.map(field),
            referer: r.fields.referer.and_then(|v| private_url(v, limits.privacy)),
            minor_version: r.minor,
        });
        let p = limits.privacy;
        let referer = r.fields.referer.and_then(|v| private_part(v, p));
        if request.is_some()
            && any_cut([Some(r.method), private_part(r.target, p), r.fields.host, r.fields.user_agent, referer])
        {
            self.events.insert(Event::HttpFieldTruncated);
        }
        let mut method = [0u8; 8];
        let n = r.method.len().min(8);
        method[..n].copy_from_slice(&r.method[..n]);
        self.pending.push_back(Pending { ts_ns, method, request });
        Some(r.body())
    }

    /// A response head: counted; a final one is paired (`settle`).
    fn on_response(&mut self, head: &[u8], quiet: bool, ts_ns: u64) -> Option<BodyLength> {
        let Some(r) = Response::parse(head) else {
            self.events.insert(Event::HttpMalformed);
            return None;
        };
        self.responses = self.responses.saturating_add(1);
        let after_gap = self.server_gap;
        // The request it answers, as far as known now (see `settle`).
        let answered = self.answered(ts_ns, after_gap);
        let method = answered.map(|i| self.pending[i].method());
        let body = r.body(method);
        // RFC 9110 §15.2: 1xx are interim; the final response follows.
        if r.status < 200 && r.status != 101 {
            return Some(body);
        }
        let connect = method == Some(b"CONNECT");
        self.server_gap = false;
        self.first_status.get_or_insert(r.status);
        // RFC 9110 §9.3.6: a 2xx to CONNECT makes the connection a tunnel right after
        // this head.
        self.tunnel |= connect && (200..300).contains(&r.status);
        let response = (!quiet).then(|| HttpResponse {
            ts_ns,
            status: r.status,
            content_type: r.fields.content_type.map(field),
            content_length: r.fields.content_length,
            server: r.fields.server.map(field),
            minor_version: r.minor,
        });
        if response.is_some() && any_cut([r.fields.content_type, r.fields.server]) {
            self.events.insert(Event::HttpFieldTruncated);
        }
        if self.answers.len() >= MAX_PENDING {
            let a = self.answers.pop_front().expect("the queue is full");
            self.complete(None, Some(a.response));
        }
        self.answers.push_back(Answer { ts_ns, response, after_gap });
        self.settle();
        if r.status == 101 {
            // Switching protocols (RFC 9110 §15.2.2): what follows is not HTTP/1.
            self.events.insert(Event::HttpBodyUnbounded);
            return None;
        }
        Some(body)
    }

    /// Which pending request a final response at `ts_ns` answers, if known now: none
    /// while earlier responses wait. A response answers a request sent before it (at
    /// the same time at the latest); the first after a gap in the server's stream
    /// answers the latest of those (see `settle`), any other the oldest.
    fn answered(&self, ts_ns: u64, after_gap: bool) -> Option<usize> {
        if !self.answers.is_empty() {
            return None;
        }
        let before = self.pending.iter().take_while(|p| p.ts_ns <= ts_ns).count();
        match before {
            0 => None,
            n if after_gap => Some(n - 1),
            _ => Some(0),
        }
    }

    /// Whether the client's stream holds segments beyond a hole: requests may be among
    /// them (not known while the holder itself is feeding the parser).
    fn client_holds(&self) -> bool {
        self.reorder.as_ref().and_then(|r| r.dirs[Dir::ClientToServer as usize].as_ref()).is_some_and(|s| s.holds())
    }

    /// Pairs the waiting final responses with the requests, in order (RFC 9112 §9.3.2:
    /// responses come in the order of the requests, pipelined or not):
    ///
    /// - A response answers the oldest pending request, if that was sent before it
    ///   (capture time, at most the response's own). A request sent after the response
    ///   cannot be what it answers: its own request was lost (a hole in the client's
    ///   stream), and it goes out without a request.
    /// - The first response after a gap in the server's stream answers the latest
    ///   request sent before it; those before that one lost their responses in the gap
    ///   and go out unanswered. How many responses a gap took is not in the stream;
    ///   clients today do not pipeline (each request waits for the response before),
    ///   so the requests sent before the response that follows the gap are those whose
    ///   responses were lost, and that one. Requests sent after it wait for the
    ///   responses after it (a server's segments held beyond a hole come out later
    ///   than the client's requests sent meanwhile: times, not the order of arrival,
    ///   tell them apart).
    /// - While the client's stream holds segments beyond a hole, a response that has
    ///   no request sent before it waits: the request may be in them. After a gap in
    ///   the client's stream, it waits until a request sent after it comes (or the
    ///   flow ends): the held segments are handed over one at a time.
    fn settle(&mut self) {
        while let Some(a) = self.answers.front() {
            let before = self.pending.iter().take_while(|p| p.ts_ns <= a.ts_ns).count();
            // No request before it yet: it may be in the client's segments held beyond a
            // hole, or, after a gap in the client's stream, in those handed over next.
            // A request sent after the response says none earlier will come.
            if before == 0 && (self.client_holds() || self.client_gap && self.pending.is_empty()) {
                return;
            }
            let a = self.answers.pop_front().expect("a front");
            if a.after_gap {
                for _ in 1..before {
                    let p = self.pending.pop_front().expect("counted");
                    self.complete(Some(p), None);
                }
            }
            let p = if before > 0 { self.pending.pop_front() } else { None };
            self.complete(p, Some(a.response));
        }
    }

    /// A finished transaction: a request, its response, or both (`Some(None)`: a
    /// response not kept, its direction being quiet). A row while the cap allows and
    /// every side of it was kept, else counted in `unlogged`.
    fn complete(&mut self, request: Option<Pending>, response: Option<Option<HttpResponse>>) {
        let kept = request.as_ref().is_none_or(|p| p.request.is_some())
            && response.as_ref().is_none_or(|r| r.is_some())
            && (request.is_some() || response.is_some());
        if kept && self.rows < self.max_rows {
            self.rows += 1;
            self.ready.push(HttpTransaction { request: request.and_then(|p| p.request), response: response.flatten() });
        } else {
            self.unlogged = self.unlogged.saturating_add(1);
            if self.rows >= self.max_rows {
                self.events.insert(Event::HttpTooManyTransactions);
            }
        }
    }

    /// Bytes of `dir` were lost before the next payload (the engine saw a hole in the TCP
    /// sequence space). Where the direction was in the middle of a head, a body or a chunk
    /// line, the count of bytes left is now wrong; rather than parse what follows as if
    /// it continued (and give up at the first line that does not parse), the direction
    /// waits for a segment that starts with a head (`resync`). A stopped direction stays
    /// stopped.
    pub fn on_gap(&mut self, dir: Dir) {
        let s = &mut self.streams[dir as usize];
        if s.body == Body::Stopped {
            return;
        }
        s.partial = Vec::new();
        s.body = Body::Resync;
        self.client_gap |= dir == Dir::ClientToServer;
        self.events.insert(Event::HttpGap);
    }

    /// Whether `data`, the first payload after a gap or one after it, starts with a
    /// request line (from the client) or a status line (from the server); if so, the
    /// direction parses from there. The bytes the check reads count against the budget
    /// (past it the direction turns quiet): a long body after a gap is checked at each
    /// segment, a few bytes each.
    fn resync(&mut self, dir: Dir, data: &[u8], budget: usize) -> bool {
        let (found, looked) = match dir {
            Dir::ClientToServer => starts_with_request_line(data),
            Dir::ServerToClient => (starts_with_status_line(data), data.len().min(9)),
        };
        let s = &mut self.streams[dir as usize];
        s.inspected = s.inspected.saturating_add(looked);
        if !s.quiet && s.inspected > budget {
            s.quiet = true;
            self.events.insert(Event::BudgetExhausted);
        }
        if !found {
            return false;
        }
        s.body = Body::Head;
        // Which requests lost their responses is settled at the next final response.
        self.server_gap |= dir == Dir::ServerToClient;
        true
    }

    /// Moves out the finished transactions; with `flush` (call it when the flow ends),
    /// the responses still waiting (without a request) and the requests still waiting
    /// for a response too.
    pub fn drain(&mut self, flush: bool) -> Vec<HttpTransaction> {
        if flush {
            while let Some(a) = self.answers.pop_front() {
                let before = self.pending.iter().take_while(|p| p.ts_ns <= a.ts_ns).count();
                let p = if before > 0 { self.pending.pop_front() } else { None };
                self.complete(p, Some(a.response));
            }
            while let Some(p) = self.pending.pop_front() {
                self.complete(Some(p), None);
            }
        }
        std::mem::take(&mut self.ready)
    }

    /// True once a CONNECT request had a 2xx response (RFC 9110 §9.3.6): what follows
    /// that response's head, and the client's bytes after its request, are the tunnel's,
    /// not HTTP's (the response's body is unbounded, so this direction has stopped).
    pub fn tunnel_established(&self) -> bool {
        self.tunnel
    }

    pub fn dir_done(&self, dir: Dir) -> bool {
        self.streams[dir as usize].body == Body::Stopped
    }

    pub fn is_done(&self) -> bool {
        self.dir_done(Dir::ClientToServer) && self.dir_done(Dir::ServerToClient)
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        self.streams.iter().map(|s| s.partial.capacity()).sum::<usize>()
            + self.pending.capacity() * std::mem::size_of::<Pending>()
            + self.answers.capacity() * std::mem::size_of::<Answer>()
            + self.ready.capacity() * std::mem::size_of::<HttpTransaction>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: HttpLimits = HttpLimits { privacy: UrlPrivacy::Full, max_transactions: 64, budget: 1 << 20 };

    fn run(req: &[u8], resp: &[u8], seg: usize) -> HttpState {
        let mut st = HttpState::default();
        for c in req.chunks(seg) {
            st.on_data(Dir::ClientToServer, c, 1, &LIMITS);
        }
        for c in resp.chunks(seg) {
            st.on_data(Dir::ServerToClient, c, 2, &LIMITS);
        }
        st
    }

    const REQ: &[u8] = b"GET /one?q=1 HTTP/1.1\r\nHost: a.example\r\nUser-Agent: t/1\r\n\r\n\
        HEAD /two HTTP/1.1\r\nHost: a.example\r\n\r\n\
        POST /three HTTP/1.1\r\nHost: b.example\r\nContent-Length: 4\r\n\r\nabcd\
        GET /four HTTP/1.1\r\nHost: c.example\r\n\r\n";
    const RESP: &[u8] = b"HTTP/1.1 100 Continue\r\n\r\n\
        HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello\
        HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n\
        HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n3;x\r\nabc\r\n0\r\nT: 1\r\n\r\n\
        HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n";

    #[test]
    fn pipelined_pairs_in_order_split_anywhere() {
        let whole = run(REQ, RESP, usize::MAX).drain(true);
        assert_eq!(whole.len(), 4);
        let urls: Vec<_> = whole.iter().map(|t| t.request.as_ref().unwrap().url.clone().unwrap()).collect();
        assert_eq!(urls, ["/one?q=1", "/two", "/three", "/four"]);
        let status: Vec<_> = whole.iter().map(|t| t.response.as_ref().unwrap().status).collect();
        assert_eq!(status, [200, 200, 201, 404]);
        assert_eq!(whole[0].request.as_ref().unwrap().user_agent.as_deref(), Some("t/1"));
        assert_eq!(whole[0].response.as_ref().unwrap().content_type.as_deref(), Some("text/plain"));
        for seg in [1, 2, 3, 7, 50] {
            let mut st = run(REQ, RESP, seg);
            assert_eq!(st.drain(true), whole, "segments of {seg}");
            assert!(st.events.is_empty(), "{:?}", st.events);
        }
    }

    proptest::proptest! {
        /// The same transactions whatever the segment boundaries.
        #[test]
        fn split_anywhere_equals_whole(
            req_cuts in proptest::collection::vec(0usize..REQ.len(), 0..12),
            resp_cuts in proptest::collection::vec(0usize..RESP.len(), 0..12),
        ) {
            let whole = run(REQ, RESP, usize::MAX).drain(true);
            let mut st = HttpState::default();
            for (data, dir, cuts) in [(REQ, Dir::ClientToServer, req_cuts), (RESP, Dir::ServerToClient, resp_cuts)] {
                let mut cuts = cuts;
                cuts.push(0);
                cuts.push(data.len());
                cuts.sort_unstable();
                for w in cuts.windows(2) {
                    st.on_data(dir, &data[w[0]..w[1]], if dir == Dir::ClientToServer { 1 } else { 2 }, &LIMITS);
                }
            }
            proptest::prop_assert_eq!(st.drain(true), whole);
        }
    }

    #[test]
    fn privacy_modes() {
        for (p, want) in
            [(UrlPrivacy::Full, Some("/one?q=1")), (UrlPrivacy::PathOnly, Some("/one")), (UrlPrivacy::None, None)]
        {
            let mut st = HttpState::default();
            st.on_data(Dir::ClientToServer, REQ, 0, &HttpLimits { privacy: p, ..LIMITS });
            assert_eq!(st.drain(true)[0].request.as_ref().unwrap().url.as_deref(), want);
        }
    }

    /// A field longer than a record keeps is cut at 512 bytes and says so
    /// (`http_field_truncated`); one of exactly 512 bytes is whole, and a long query
    /// that `--http-url path` leaves out cuts nothing.
    #[test]
    fn long_fields_are_cut_and_marked() {
        let req = |target: &str| format!("GET {target} HTTP/1.1\r\nHost: h\r\n\r\n").into_bytes();
        let long = format!("/{}", "a".repeat(713));
        let exact = format!("/{}", "b".repeat(511));
        let query = format!("/p?{}", "q".repeat(700));
        for (target, p, url_len, cut) in [
            (&long, UrlPrivacy::Full, 512, true),
            (&exact, UrlPrivacy::Full, 512, false),
            (&query, UrlPrivacy::Full, 512, true),
            (&query, UrlPrivacy::PathOnly, 2, false),
        ] {
            let mut st = HttpState::default();
            st.on_data(Dir::ClientToServer, &req(target), 0, &HttpLimits { privacy: p, ..LIMITS });
            st.on_data(Dir::ServerToClient, b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", 1, &LIMITS);
            let t = st.drain(true);
            assert_eq!(t[0].request.as_ref().unwrap().url.as_ref().unwrap().len(), url_len, "{p:?} {}", target.len());
            assert_eq!(st.events.contains(Event::HttpFieldTruncated), cut, "{p:?} {}", target.len());
        }
        // A response header too.
        let mut st = HttpState::default();
        st.on_data(Dir::ClientToServer, b"GET / HTTP/1.1\r\n\r\n", 0, &LIMITS);
        let resp = format!("HTTP/1.1 200 OK\r\nServer: {}\r\nContent-Length: 0\r\n\r\n", "s".repeat(600));
        st.on_data(Dir::ServerToClient, resp.as_bytes(), 1, &LIMITS);
        assert_eq!(st.drain(true)[0].response.as_ref().unwrap().server.as_ref().unwrap().len(), 512);
        assert!(st.events.contains(Event::HttpFieldTruncated));
    }

    /// `--http-url path|none` covers the Referer too: it is a URL, and its query says as
    /// much as the target's (it is often the same site's page with its parameters).
    #[test]
    fn referer_follows_url_privacy() {
        let req = b"GET /p?session=1 HTTP/1.1\r\nHost: h\r\nReferer: http://h.example/a/b?token=secret#top\r\n\r\n";
        for (p, want) in [
            (UrlPrivacy::Full, Some("http://h.example/a/b?token=secret#top")),
            (UrlPrivacy::PathOnly, Some("http://h.example/a/b")),
            (UrlPrivacy::None, None),
        ] {
            let mut st = HttpState::default();
            st.on_data(Dir::ClientToServer, req, 0, &HttpLimits { privacy: p, ..LIMITS });
            let t = st.drain(true);
            assert_eq!(t[0].request.as_ref().unwrap().referer.as_deref(), want, "{p:?}");
        }
    }

    /// A request with a method outside the common set (RFC 9110 §9.1: any token) is a
    /// transaction like any other.
    #[test]
    fn uncommon_methods_are_transactions() {
        let req = b"PROPFIND /d HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nabc\
            MKCOL /d/e HTTP/1.1\r\nHost: h\r\n\r\n\
            PURGE /cached HTTP/1.1\r\nHost: h\r\n\r\n\
            purge /lower HTTP/1.1\r\nHost: h\r\n\r\n";
        let resp = b"HTTP/1.1 207 Multi-Status\r\nContent-Length: 2\r\n\r\nok\
            HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n\
            HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n\
            HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n";
        let mut st = run(req, resp, 9);
        assert!(st.events.is_empty(), "{:?}", st.events);
        let t = st.drain(true);
        let got: Vec<_> = t
            .iter()
            .map(|t| (t.request.as_ref().unwrap().method.as_str(), t.response.as_ref().unwrap().status))
            .collect();
        assert_eq!(got, [("PROPFIND", 207), ("MKCOL", 201), ("PURGE", 200), ("purge", 404)]);
    }

    /// After a gap in the server's stream (capture loss inside a response body), the
    /// parser takes up the next response where a segment starts with its status line,
    /// instead of reading the following bytes as the rest of the lost body and giving
    /// up at them; the request whose response was lost whole goes out unanswered, the
    /// next request gets the next response. Also in the client's stream.
    #[test]
    fn a_gap_resynchronises_at_the_next_head() {
        let mut st = HttpState::default();
        let c = Dir::ClientToServer;
        let s = Dir::ServerToClient;
        st.on_data(c, b"GET /1 HTTP/1.1\r\nHost: h\r\n\r\n", 1, &LIMITS);
        st.on_data(s, b"HTTP/1.1 200 OK\r\nContent-Length: 5000\r\n\r\nfirst", 2, &LIMITS);
        // The rest of body 1 and the whole of response 2 are lost.
        st.on_data(c, b"GET /2 HTTP/1.1\r\nHost: h\r\n\r\n", 3, &LIMITS);
        st.on_data(c, b"GET /3 HTTP/1.1\r\nHost: h\r\n\r\n", 5, &LIMITS);
        st.on_gap(s);
        st.on_data(s, b"tail of a body that is not a head\r\n\r\n", 6, &LIMITS);
        st.on_data(s, b"HTTP/1.1 404 Not Found\r\nContent-Length: 3\r\n\r\nno!", 7, &LIMITS);
        // A gap in the client's stream, in the middle of a request head.
        st.on_data(c, b"GET /4 HTTP/1.1\r\nHo", 8, &LIMITS);
        st.on_gap(c);
        st.on_data(c, b"st: h\r\n\r\n", 9, &LIMITS);
        st.on_data(c, b"MKCOL /5 HTTP/1.1\r\nHost: h\r\n\r\n", 10, &LIMITS);
        st.on_data(s, b"HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n", 11, &LIMITS);
        assert!(st.events.contains(Event::HttpGap));
        assert!(!st.events.contains(Event::HttpMalformed), "{:?}", st.events);
        let got: Vec<_> = st
            .drain(true)
            .iter()
            .map(|t| (t.request.as_ref().and_then(|q| q.url.clone()), t.response.as_ref().map(|r| r.status)))
            .collect();
        let want = [
            (Some("/1".to_string()), Some(200)),
            (Some("/2".to_string()), None),
            (Some("/3".to_string()), Some(404)),
            (Some("/5".to_string()), Some(201)),
        ];
        assert_eq!(got, want);
        assert!(!st.is_done());
    }

    /// What a direction waiting for a head after a gap reads counts against its budget;
    /// past it the direction is quiet (no rows) but still finds and counts heads.
    #[test]
    fn resync_checks_are_bounded_by_the_budget() {
        let mut st = HttpState::default();
        let limits = HttpLimits { budget: 100, ..LIMITS };
        st.on_data(Dir::ClientToServer, b"GET /a HTTP/1.1\r\nHost: h\r\n\r\n", 0, &limits);
        st.on_data(Dir::ServerToClient, b"HTTP/1.1 200 OK\r\nContent-Length: 99999\r\n\r\n", 0, &limits);
        st.on_data(Dir::ClientToServer, b"GET /b HTTP/1.1\r\nHost: h\r\n\r\n", 1, &limits);
        st.on_gap(Dir::ServerToClient);
        for _ in 0..100 {
            st.on_data(Dir::ServerToClient, b"body bytes body bytes", 1, &limits);
        }
        assert!(st.events.contains(Event::BudgetExhausted));
        assert!(!st.dir_done(Dir::ServerToClient));
        st.on_data(Dir::ServerToClient, b"HTTP/1.1 204 No Content\r\n\r\n", 2, &limits);
        assert_eq!((st.requests, st.responses), (2, 2));
        // /b's response came while the server's direction was quiet: not a row.
        let t = st.drain(true);
        assert_eq!(t.len(), 1);
        assert_eq!((st.rows, st.unlogged), (1, 1));
        // A stopped direction stays stopped after a gap.
        st.on_data(Dir::ServerToClient, b"HTTP/1.1 200 OK\r\n\r\nuntil close", 3, &limits);
        assert!(st.dir_done(Dir::ServerToClient));
        st.on_gap(Dir::ServerToClient);
        assert!(st.dir_done(Dir::ServerToClient));
    }

    /// The row cap bounds the rows, not the counts: the messages past it are counted,
    /// the transactions not written are counted in `unlogged` and flagged.
    #[test]
    fn limits() {
        let mut st = HttpState::default();
        let two = HttpLimits { max_transactions: 2, ..LIMITS };
        st.on_data(Dir::ClientToServer, REQ, 0, &two);
        st.on_data(Dir::ServerToClient, RESP, 1, &two);
        assert_eq!((st.requests, st.responses), (4, 5));
        assert!(st.events.contains(Event::HttpTooManyTransactions));
        assert!(!st.dir_done(Dir::ClientToServer));
        let t = st.drain(true);
        let urls: Vec<_> = t.iter().map(|t| t.request.as_ref().unwrap().url.clone().unwrap()).collect();
        assert_eq!(urls, ["/one?q=1", "/two"]);
        assert_eq!((st.rows, st.unlogged), (2, 2));

        let mut st = HttpState::default();
        st.on_data(Dir::ClientToServer, b"GET / HTTP/1.1\r\nHost: x\r\n", 0, &HttpLimits { budget: 10, ..LIMITS });
        assert!(st.events.contains(Event::BudgetExhausted));
    }

    /// The client's and the server's messages, as a test writes them.
    fn get(i: usize) -> Vec<u8> {
        format!("GET /{i} HTTP/1.1\r\nHost: h.example\r\n\r\n").into_bytes()
    }

    fn ok(i: usize) -> Vec<u8> {
        let body = format!("body {i}");
        format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{body}", body.len()).into_bytes()
    }

    /// (url, status) of each row.
    fn rows(t: &[HttpTransaction]) -> Vec<(Option<String>, Option<u16>)> {
        t.iter()
            .map(|t| (t.request.as_ref().and_then(|q| q.url.clone()), t.response.as_ref().map(|r| r.status)))
            .collect()
    }

    /// A keep-alive connection of 100 requests whose 41st response was lost, the
    /// server's next 16 segments held beyond the hole (as `reorder` holds them) and
    /// handed over after 16 more requests: one request is unanswered, every other one
    /// paired with its own response, every message counted. Before, the response after
    /// the gap went to the latest request received (the 57th), and 16 requests and 16
    /// responses went out alone.
    #[test]
    fn one_lost_response_leaves_one_request_unanswered() {
        let mut st = HttpState::default();
        let big = HttpLimits { max_transactions: 1000, ..LIMITS };
        let (c, s) = (Dir::ClientToServer, Dir::ServerToClient);
        let t = |i: usize, k: u64| (i as u64) * 10 + k;
        let mut i = 0;
        while i < 100 {
            st.on_data(c, &get(i), t(i, 0), &big);
            if i == 40 {
                // Lost; the server's next 16 responses are held, requests go on.
                for j in 41..57 {
                    st.on_data(c, &get(j), t(j, 0), &big);
                }
                st.on_gap(s);
                for j in 41..57 {
                    st.on_data(s, &ok(j), t(j, 5), &big);
                }
                i = 57;
                continue;
            }
            st.on_data(s, &ok(i), t(i, 5), &big);
            i += 1;
        }
        assert_eq!((st.requests, st.responses), (100, 99));
        let got = st.drain(true);
        assert_eq!(got.len(), 100);
        let alone: Vec<_> = rows(&got).into_iter().filter(|(u, s)| u.is_none() || s.is_none()).collect();
        assert_eq!(alone, [(Some("/40".to_string()), None)]);
        for (q, r) in got.iter().filter_map(|t| Some((t.request.as_ref()?, t.response.as_ref()?))) {
            assert!(q.ts_ns < r.ts_ns && r.ts_ns - q.ts_ns == 5, "{q:?} {r:?}");
        }
    }

    /// A request lost in the client's stream, its segments after the hole held (the
    /// responses come first): the response to the lost request goes out alone, the
    /// others are paired with their own requests.
    #[test]
    fn one_lost_request_leaves_one_response_alone() {
        let mut st = HttpState::default();
        let (c, s) = (Dir::ClientToServer, Dir::ServerToClient);
        st.on_data(c, &get(0), 0, &LIMITS);
        st.on_data(s, &ok(0), 5, &LIMITS);
        let mut got = rows(&st.drain(false));
        // Request 1 is lost, 2 and 3 are held beyond the hole; the responses come.
        let mut order = crate::reorder::Reorder::default();
        let mut held = crate::reorder::Stream::new(0);
        held.push(100, 1, Some(b"x"), 20, &mut |_| {});
        order.dirs[0] = Some(held);
        st.reorder = Some(Box::new(order));
        for (i, ts) in [(1, 15), (2, 25), (3, 35)] {
            st.on_data(s, &ok(i), ts, &LIMITS);
        }
        assert!(st.drain(false).is_empty(), "the responses wait for the held requests");
        st.reorder = None;
        st.on_gap(c);
        st.on_data(c, &get(2), 20, &LIMITS);
        st.on_data(c, &get(3), 30, &LIMITS);
        got.extend(rows(&st.drain(true)));
        let want = [
            (Some("/0".to_string()), Some(200)),
            (None, Some(200)),
            (Some("/2".to_string()), Some(200)),
            (Some("/3".to_string()), Some(200)),
        ];
        assert_eq!(got, want);
        assert_eq!((st.requests, st.responses), (3, 4));
    }

    /// RFC 9110 §9.3.2: the response to HEAD has no body, whatever its Content-Length
    /// says; RFC 9110 §15.3.5 and §15.4.5: neither has a 204 or a 304. The next
    /// response on the connection is found right after the head.
    #[test]
    fn head_204_and_304_have_no_body() {
        let req = b"HEAD /big HTTP/1.1\r\nHost: h\r\n\r\n\
            GET /empty HTTP/1.1\r\nHost: h\r\n\r\n\
            GET /cached HTTP/1.1\r\nHost: h\r\nIf-None-Match: \"x\"\r\n\r\n\
            GET /last HTTP/1.1\r\nHost: h\r\n\r\n";
        let resp = b"HTTP/1.1 200 OK\r\nContent-Length: 12345\r\n\r\n\
            HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n\
            HTTP/1.1 304 Not Modified\r\nContent-Length: 999\r\n\r\n\
            HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
        for seg in [1, 5, usize::MAX] {
            let mut st = run(req, resp, seg);
            assert!(st.events.is_empty(), "{:?}", st.events);
            let got = rows(&st.drain(true));
            let want = [("/big", 200), ("/empty", 204), ("/cached", 304), ("/last", 200)]
                .map(|(u, s)| (Some(u.to_string()), Some(s)));
            assert_eq!(got, want, "segments of {seg}");
            assert_eq!((st.requests, st.responses), (4, 4));
        }
    }

    /// RFC 9110 §15.2: a 100 Continue is interim: counted as a response (as tshark and
    /// Tstat count it), but the request's row gets the final response.
    #[test]
    fn interim_responses_are_counted_not_paired() {
        let req = b"POST /up HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\nabcd\
            GET /next HTTP/1.1\r\nHost: h\r\n\r\n";
        let resp = b"HTTP/1.1 100 Continue\r\n\r\n\
            HTTP/1.1 102 Processing\r\n\r\n\
            HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n\
            HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx";
        let mut st = run(req, resp, 3);
        let got = rows(&st.drain(true));
        assert_eq!(got, [(Some("/up".to_string()), Some(201)), (Some("/next".to_string()), Some(200))]);
        assert_eq!((st.requests, st.responses), (2, 4));
        assert_eq!(st.first_status, Some(201));
    }

    /// Requests with no response in the capture (the server's side not captured) are
    /// counted past the queue's bound; the oldest go out unanswered.
    #[test]
    fn requests_without_responses_are_all_counted() {
        let mut st = HttpState::default();
        for i in 0..1000 {
            st.on_data(Dir::ClientToServer, &get(i), i as u64, &LIMITS);
        }
        assert_eq!((st.requests, st.responses), (1000, 0));
        let t = st.drain(true);
        assert_eq!(t.len(), 64);
        assert!(t.iter().all(|t| t.response.is_none()));
        assert_eq!((st.rows, st.unlogged), (64, 936));
        assert!(st.events.contains(Event::HttpTooManyTransactions));
    }

    #[test]
    fn response_until_close_stops() {
        let st = run(b"GET / HTTP/1.0\r\n\r\n", b"HTTP/1.0 200 OK\r\n\r\nbody bytes", 4);
        assert_eq!(st.responses, 1);
        assert!(st.is_done() || st.dir_done(Dir::ServerToClient));
    }
}
