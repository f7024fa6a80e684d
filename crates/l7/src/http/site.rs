//! Tstat's HTTP content classes (`http_t`): what the flow's first request fetches, from
//! its method and target alone (Tstat looks at the request line, not the Host).
//!
//! The values are Tstat's log values (its `enum http_content` plus one; 0 is a flow
//! that is not HTTP). tapstat makes the classes whose request lines are signatures of
//! the service or protocol itself; the site-specific URL lists of 2010s sites (Facebook,
//! Wikipedia, Vimeo, Flickr, RapidShare and the other file lockers, Google Maps tiles,
//! advertisements, Twitter, Polish and Hungarian social networks) are not made, nor
//! the generic video downloads (6 and 18, which Tstat does not take from the path: it
//! writes 1 for a `GET /....mp4?...` of the corpus), and their flows are 1 (GET) or 2
//! (POST). docs/METRICS.md "Tstat's con_t, p2p_t and
//! http_t" lists them.

/// Tstat's `http_t` values that tapstat writes.
pub mod class {
    /// Any method but POST, no finer class.
    pub const GET: u8 = 1;
    /// POST, no finer class.
    pub const POST: u8 = 2;
    /// MSN Messenger tunnelled over HTTP (`POST /gateway/gateway.dll?...`).
    pub const MSN: u8 = 3;
    /// RTMPT, RTMP tunnelled over HTTP (`POST /open/1`, `/idle/`, `/send/`, `/close/`).
    pub const RTMPT: u8 = 4;
    /// A YouTube video download (`GET /videoplayback?...` from googlevideo).
    pub const YOUTUBE_VIDEO: u8 = 5;
    /// A Netflix Open Connect request (`GET /range/FIRST-LAST?o=TOKEN` or `GET /?o=TOKEN`).
    pub const NETFLIX: u8 = 15;
    /// YouTube's connectivity probe (`GET /generate_204`).
    pub const YOUTUBE_204: u8 = 22;
    /// A YouTube page of one video (`GET /watch?v=...`).
    pub const YOUTUBE_SITE_DIRECT: u8 = 24;
    /// A YouTube video embedded in another site (`GET /embed/...`).
    pub const YOUTUBE_SITE_EMBED: u8 = 25;
    /// Dropbox's LAN-sync notification poll (`GET /subscribe?host_int=...`).
    pub const DROPBOX: u8 = 27;
}

/// The class of a request with this method and target (as on the request line).
pub fn classify(method: &[u8], target: &[u8]) -> u8 {
    // An absolute-form target (a request to a proxy) is classified by its path.
    let target = path_of_absolute(target);
    let path = target.split(|&c| c == b'?').next().unwrap_or(target);
    if method == b"POST" {
        if target.starts_with(b"/gateway/gateway.dll?") {
            return class::MSN;
        }
        if path == b"/open/1" || [&b"/idle/"[..], b"/send/", b"/close/"].iter().any(|p| path.starts_with(p)) {
            return class::RTMPT;
        }
        return class::POST;
    }
    if is_netflix_range(target) {
        class::NETFLIX
    } else if target.starts_with(b"/videoplayback?") {
        class::YOUTUBE_VIDEO
    } else if path == b"/generate_204" {
        class::YOUTUBE_204
    } else if target.starts_with(b"/watch?v=") {
        class::YOUTUBE_SITE_DIRECT
    } else if path.starts_with(b"/embed/") && path.len() > 7 {
        class::YOUTUBE_SITE_EMBED
    } else if target.starts_with(b"/subscribe?host_int=") {
        class::DROPBOX
    } else {
        class::GET
    }
}

/// An Open Connect request: `/range/FIRST-LAST?o=TOKEN` (FIRST and LAST decimal byte
/// offsets) or `/?o=TOKEN` (the range in a Range header), TOKEN at least 16 characters of
/// base64url.
fn is_netflix_range(target: &[u8]) -> bool {
    let query = if let Some(q) = target.strip_prefix(b"/").filter(|q| q.starts_with(b"?")) {
        q
    } else {
        let Some(rest) = target.strip_prefix(b"/range/") else {
            return false;
        };
        let Some(q) = rest.iter().position(|&c| c == b'?') else {
            return false;
        };
        let (range, query) = rest.split_at(q);
        let mut parts = range.splitn(2, |&c| c == b'-');
        let digits = |p: Option<&[u8]>| p.is_some_and(|p| !p.is_empty() && p.iter().all(u8::is_ascii_digit));
        if !(digits(parts.next()) && digits(parts.next())) {
            return false;
        }
        query
    };
    let Some(token) = query.strip_prefix(b"?o=") else {
        return false;
    };
    let base64url = token.iter().take_while(|&&c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_').count();
    base64url >= 16
}

/// `http://host/path` → `/path` (the path of an absolute-form target; others as given).
fn path_of_absolute(target: &[u8]) -> &[u8] {
    let rest = if target.len() > 7 && target[..7].eq_ignore_ascii_case(b"http://") {
        &target[7..]
    } else {
        return target;
    };
    match rest.iter().position(|&c| c == b'/') {
        Some(i) => &rest[i..],
        None => b"/",
    }
}

#[cfg(test)]
mod tests {
    use super::{class::*, classify};

    #[test]
    fn request_lines_get_their_class() {
        let cases: &[(&str, &str, u8)] = &[
            ("GET", "/", GET),
            ("HEAD", "/index.html", GET),
            ("POST", "/api/v1/items", POST),
            ("POST", "/gateway/gateway.dll?Action=open&Server=NS&IP=messenger.hotmail.com", MSN),
            ("POST", "/open/1", RTMPT),
            ("POST", "/idle/1728509935/7", RTMPT),
            ("POST", "/send/1728509935/8", RTMPT),
            ("GET", "/range/0-65535?o=AQEfKq2oMrLRiWL-p-VeIZ6WKRq", NETFLIX),
            ("GET", "/range/1024-?o=A", GET),
            ("GET", "/range/0-65535", GET),
            ("GET", "/?o=AQEfKq2oMrLRiWL2puNQJJqTIRqhGLjSseu23V2HX6k", NETFLIX),
            ("GET", "/?o=short", GET),
            ("GET", "/range/0-65535?o=AQ", GET),
            ("GET", "/x?o=AQEfKq2oMrLRiWL2puNQJJqTIRqhGLjSseu23V2HX6k", GET),
            ("GET", "/videoplayback?id=o-AKx&itag=22&source=youtube", YOUTUBE_VIDEO),
            ("GET", "/generate_204", YOUTUBE_204),
            ("GET", "/generate_204?conn2", YOUTUBE_204),
            ("GET", "/watch?v=dQw4w9WgXcQ", YOUTUBE_SITE_DIRECT),
            ("GET", "/embed/dQw4w9WgXcQ?rel=0", YOUTUBE_SITE_EMBED),
            ("GET", "/embed/", GET),
            ("GET", "/subscribe?host_int=123456789&ns_map=1_2", DROPBOX),
            // Tstat's video-content classes (6, 18) are not made from the path: Tstat
            // writes 1 for this request of ndpi__1kxun.pcap.
            ("GET", "/vlive.qqvideo.tc.qq.com/u0020mkrnds.p1203.1.mp4?vkey=7AB1", GET),
            ("GET", "http://r3.googlevideo.com/videoplayback?id=1", YOUTUBE_VIDEO),
            ("GET", "http://example.com", GET),
            ("POST", "/watch?v=x", POST),
        ];
        for &(m, t, want) in cases {
            assert_eq!(classify(m.as_bytes(), t.as_bytes()), want, "{m} {t}");
        }
    }
}
