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

/// A URL as `privacy` allows.
fn private_url(v: &[u8], privacy: UrlPrivacy) -> Option<String> {
    match privacy {
        UrlPrivacy::Full => Some(field(v)),
        UrlPrivacy::PathOnly => Some(field(without_query(v))),
        UrlPrivacy::None => None,
    }
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
}

impl Stream {
    /// Walks `data`; `on_head` parses each whole head and says how its body ends, or
    /// `None` to stop (a malformed head).
    fn on_data(
        &mut self,
        mut data: &[u8],
        budget: usize,
        events: &mut Events,
        mut on_head: impl FnMut(&[u8]) -> Option<BodyLength>,
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
                        on_head(&used[..head_len])
                    } else {
                        let r = on_head(&self.partial);
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
    fn take_until<'d>(
        &mut self,
        data: &mut &'d [u8],
        find: impl Fn(&[u8]) -> Option<usize>,
        max: usize,
        budget: usize,
        events: &mut Events,
    ) -> Option<(usize, &'d [u8])> {
        let d: &'d [u8] = data;
        // The budget bounds the bytes looked at (`L7Config::budget`), heads that arrive
        // whole included: the search goes no further than what is left of it.
        let left = budget.saturating_sub(self.inspected);
        if self.partial.is_empty() {
            if let Some(n) = find(&d[..d.len().min(left)]) {
                self.inspected += n;
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
                self.inspected += used;
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
        if self.inspected + self.partial.len() + d.len() > budget {
            events.insert(Event::BudgetExhausted);
            self.stop();
            return None;
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

/// HTTP/1.x over one TCP connection.
#[derive(Clone, Debug, Default)]
pub struct HttpState {
    streams: [Stream; 2],
    pending: VecDeque<HttpRequest>,
    /// The method of each pending request (HEAD and CONNECT change the response body).
    pending_methods: VecDeque<[u8; 8]>,
    ready: Vec<HttpTransaction>,
    pub requests: u32,
    pub responses: u32,
    /// The Host of the first request (Tstat's `http_hostname`).
    pub first_host: Option<String>,
    /// The status of the first response (Tstat's `http_res`).
    pub first_status: Option<u16>,
    /// Tstat's content class of the first request (`http_t`, [`super::site`]); 0 before it.
    pub first_class: u8,
    pub(crate) events: Events,
    /// A CONNECT request had a 2xx response: see `tunnel_established`.
    tunnel: bool,
    /// Its TCP streams put back in order from their first hole on (`reorder`).
    pub(crate) reorder: Option<Box<crate::reorder::Reorder>>,
}

/// Limits of one flow's HTTP parsing.
#[derive(Clone, Copy, Debug)]
pub struct HttpLimits {
    pub privacy: UrlPrivacy,
    pub max_transactions: u32,
    /// Bytes of heads and chunk lines inspected per direction.
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
            pending_methods: _,
            ready: _,
            requests: _,
            responses: _,
            first_host,
            first_status: _,
            first_class: _,
            events: _,
            tunnel: _,
            reorder: _,
        } = self;
        crate::visit(first_host, f);
    }

    pub fn on_data(&mut self, dir: Dir, data: &[u8], ts_ns: u64, limits: &HttpLimits) {
        if self.streams[dir as usize].body == Body::Resync && !self.resync(dir, data, limits.budget) {
            return;
        }
        let mut events = self.events;
        // Events of the heads, kept apart from the stream's while both are borrowed.
        let mut hev = Events::default();
        let stream = &mut self.streams[dir as usize];
        match dir {
            Dir::ClientToServer => {
                let (pending, methods, requests, first_host, first_class) = (
                    &mut self.pending,
                    &mut self.pending_methods,
                    &mut self.requests,
                    &mut self.first_host,
                    &mut self.first_class,
                );
                stream.on_data(data, limits.budget, &mut events, |head| {
                    let Some(r) = Request::parse(head) else {
                        hev.insert(Event::HttpMalformed);
                        return None;
                    };
                    if *requests >= limits.max_transactions || pending.len() >= MAX_PENDING {
                        hev.insert(Event::HttpTooManyTransactions);
                        return None;
                    }
                    *requests += 1;
                    if *requests == 1 {
                        *first_class = super::site::classify(r.method, r.target);
                    }
                    let host = r.fields.host.map(field);
                    if first_host.is_none() {
                        first_host.clone_from(&host);
                    }
                    let url = private_url(r.target, limits.privacy);
                    let mut m = [0u8; 8];
                    let n = r.method.len().min(8);
                    m[..n].copy_from_slice(&r.method[..n]);
                    methods.push_back(m);
                    pending.push_back(HttpRequest {
                        ts_ns,
                        method: field(r.method),
                        host,
                        url,
                        user_agent: r.fields.user_agent.map(field),
                        referer: r.fields.referer.and_then(|v| private_url(v, limits.privacy)),
                        minor_version: r.minor,
                    });
                    Some(r.body())
                });
            }
            Dir::ServerToClient => {
                let (pending, methods, ready, responses, first_status, tunnel) = (
                    &mut self.pending,
                    &mut self.pending_methods,
                    &mut self.ready,
                    &mut self.responses,
                    &mut self.first_status,
                    &mut self.tunnel,
                );
                stream.on_data(data, limits.budget, &mut events, |head| {
                    let Some(r) = Response::parse(head) else {
                        hev.insert(Event::HttpMalformed);
                        return None;
                    };
                    let method = methods.front().copied();
                    let method = method.as_ref().map(|m| &m[..m.iter().position(|&c| c == 0).unwrap_or(8)]);
                    let body = r.body(method);
                    // RFC 9110 §15.2: 1xx are interim; the final response follows.
                    if r.status < 200 && r.status != 101 {
                        return Some(body);
                    }
                    if *responses >= limits.max_transactions {
                        hev.insert(Event::HttpTooManyTransactions);
                        return None;
                    }
                    *responses += 1;
                    first_status.get_or_insert(r.status);
                    // RFC 9110 §9.3.6: a 2xx to CONNECT makes the connection a tunnel
                    // right after this head.
                    *tunnel |= method == Some(b"CONNECT") && (200..300).contains(&r.status);
                    methods.pop_front();
                    ready.push(HttpTransaction {
                        request: pending.pop_front(),
                        response: Some(HttpResponse {
                            ts_ns,
                            status: r.status,
                            content_type: r.fields.content_type.map(field),
                            content_length: r.fields.content_length,
                            server: r.fields.server.map(field),
                            minor_version: r.minor,
                        }),
                    });
                    if r.status == 101 {
                        // Switching protocols (RFC 9110 §15.2.2): what follows is not HTTP/1.
                        hev.insert(Event::HttpBodyUnbounded);
                        return None;
                    }
                    Some(body)
                });
            }
        }
        for e in hev.iter() {
            events.insert(e);
        }
        self.events = events;
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
        self.events.insert(Event::HttpGap);
    }

    /// Whether `data`, the first payload after a gap or one after it, starts with a
    /// request line (from the client) or a status line (from the server); if so, the
    /// direction parses from there. The bytes the check reads count against the budget:
    /// a long body after a gap is checked at each segment, a few bytes each.
    fn resync(&mut self, dir: Dir, data: &[u8], budget: usize) -> bool {
        let (found, looked) = match dir {
            Dir::ClientToServer => starts_with_request_line(data),
            Dir::ServerToClient => (starts_with_status_line(data), data.len().min(9)),
        };
        let s = &mut self.streams[dir as usize];
        s.inspected += looked;
        if s.inspected > budget {
            self.events.insert(Event::BudgetExhausted);
            s.stop();
            return false;
        }
        if !found {
            return false;
        }
        s.body = Body::Head;
        if dir == Dir::ServerToClient && self.pending.len() > 1 {
            // Responses come in the order of the requests (RFC 9112 §9.3.2), but how many
            // the gap took is unknown. Clients today do not pipeline (one request waits
            // for its response before the next is sent), so the response after the gap
            // answers the latest request, and those before it lost theirs in the gap:
            // they go out unanswered rather than take a later request's response.
            let lost = self.pending.len() - 1;
            self.pending_methods.drain(..lost.min(self.pending_methods.len()));
            self.ready.extend(self.pending.drain(..lost).map(|r| HttpTransaction { request: Some(r), response: None }));
        }
        true
    }

    /// Moves out the finished transactions; with `flush`, requests still waiting for a
    /// response too (call it when the flow ends).
    pub fn drain(&mut self, flush: bool) -> Vec<HttpTransaction> {
        if flush {
            self.pending_methods.clear();
            let pending = std::mem::take(&mut self.pending);
            self.ready.extend(pending.into_iter().map(|r| HttpTransaction { request: Some(r), response: None }));
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
            + self.pending.capacity() * std::mem::size_of::<HttpRequest>()
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

    /// What a direction waiting for a head after a gap reads counts against its budget.
    #[test]
    fn resync_checks_are_bounded_by_the_budget() {
        let mut st = HttpState::default();
        let limits = HttpLimits { budget: 100, ..LIMITS };
        st.on_data(Dir::ServerToClient, b"HTTP/1.1 200 OK\r\nContent-Length: 99999\r\n\r\n", 0, &limits);
        st.on_gap(Dir::ServerToClient);
        for _ in 0..100 {
            st.on_data(Dir::ServerToClient, b"body bytes body bytes", 1, &limits);
        }
        assert!(st.dir_done(Dir::ServerToClient));
        assert!(st.events.contains(Event::BudgetExhausted));
        // A stopped direction stays stopped after a gap.
        st.on_gap(Dir::ServerToClient);
        assert!(st.dir_done(Dir::ServerToClient));
    }

    #[test]
    fn limits() {
        let mut st = HttpState::default();
        st.on_data(Dir::ClientToServer, REQ, 0, &HttpLimits { max_transactions: 2, ..LIMITS });
        assert_eq!(st.requests, 2);
        assert!(st.events.contains(Event::HttpTooManyTransactions));
        assert!(st.dir_done(Dir::ClientToServer));

        let mut st = HttpState::default();
        st.on_data(Dir::ClientToServer, b"GET / HTTP/1.1\r\nHost: x\r\n", 0, &HttpLimits { budget: 10, ..LIMITS });
        assert!(st.events.contains(Event::BudgetExhausted));
    }

    #[test]
    fn response_until_close_stops() {
        let st = run(b"GET / HTTP/1.0\r\n\r\n", b"HTTP/1.0 200 OK\r\n\r\nbody bytes", 4);
        assert_eq!(st.responses, 1);
        assert!(st.is_done() || st.dir_done(Dir::ServerToClient));
    }
}
