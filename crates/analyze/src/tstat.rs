//! The last three of Tstat's 44 core columns, from what the application layer found:
//! `con_t` (Tstat's connection type bit mask, protocol.h), `p2p_t` (its IPP2P type)
//! and `http_t` (its HTTP content class). docs/METRICS.md ("Tstat's con_t, p2p_t and
//! http_t") says where they differ from Tstat's and why.

use crate::flow::Flow;
use tapstat_l7::App;

/// Tstat's connection types (protocol.h), the bits `con_t` can have here.
pub mod con {
    pub const HTTP: u32 = 1;
    pub const RTSP: u32 = 2;
    pub const RTP: u32 = 4;
    pub const RTCP: u32 = 16;
    pub const SMTP: u32 = 1024;
    pub const POP3: u32 = 2048;
    pub const IMAP: u32 = 4096;
    pub const TLS: u32 = 8192;
    pub const SSH: u32 = 32768;
    /// BitTorrent's Message Stream Encryption, by Tstat's size heuristic.
    pub const MSE: u32 = 131072;
}

/// The sizes of a first data segment that Tstat's MSE heuristic takes for a
/// Diffie-Hellman public key (96 bytes) followed by 0 to 512 bytes of padding.
const MSE_LEN: std::ops::RangeInclusive<u16> = 96..=608;

/// The application the payload showed (not the port table's guess).
#[inline]
fn payload_app(f: &Flow) -> Option<App> {
    f.l7.as_ref()?.payload_app()
}

/// `con_t`: the protocol the payload showed, as Tstat's bit; or MSE when none was
/// recognised and the client's first data segment has the size of an MSE handshake and
/// does not start with text (a key is random bytes; Gnutella's `GNUTELLA CONNECT`, of
/// the same size, is not MSE for Tstat either), and the server answered with data.
/// (These conditions are those that reproduce Tstat's verdicts on the dev captures:
/// Ethereum's RLPx handshakes, WhatsApp's and KakaoTalk's are MSE for Tstat, and an
/// RLPx hello left unanswered is not.)
pub fn con_t(f: &Flow) -> u32 {
    if f.l7.is_none() {
        return 0;
    }
    match payload_app(f) {
        Some(App::Http) => con::HTTP,
        Some(App::Rtsp) => con::RTSP,
        Some(App::Rtp) => con::RTP,
        Some(App::Rtcp) => con::RTCP,
        Some(App::Smtp) => con::SMTP,
        Some(App::Pop3) => con::POP3,
        Some(App::Imap) => con::IMAP,
        Some(App::Tls) => con::TLS,
        Some(App::Ssh) => con::SSH,
        Some(_) => 0,
        None if MSE_LEN.contains(&f.dir[0].first_payload_len)
            && !f.dir[0].first_payload_text
            && f.dir[1].first_payload_len > 0 =>
        {
            con::MSE
        }
        None => 0,
    }
}

/// IPP2P's code for a BitTorrent handshake as Tstat writes it: `search_bittorrent`
/// returns `IPP2P_BIT * 100` for `\x13BitTorrent protocol`, and Tstat's ipp2p.h numbers
/// its protocols in sequence (`IPP2P_BIT` is 9; the netfilter module's bit mask, 512,
/// is not Tstat's).
pub const P2P_BITTORRENT: u32 = 900;

/// `p2p_t`: [`P2P_BITTORRENT`] when the payload showed BitTorrent, else 0.
pub fn p2p_t(f: &Flow) -> u32 {
    if payload_app(f) == Some(App::Bittorrent) {
        P2P_BITTORRENT
    } else {
        0
    }
}

/// `http_t`: Tstat's content class of the flow's first HTTP request
/// (`tapstat_l7::http::site`: 1 GET, 2 POST, 15 Netflix, ...); 1 for HTTP whose request
/// was not parsed; 0 for a flow that is not HTTP.
pub fn http_t(f: &Flow) -> u32 {
    if payload_app(f) != Some(App::Http) {
        return 0;
    }
    match f.l7.as_ref().and_then(|x| x.http()) {
        Some(h) if h.first_class > 0 => u32::from(h.first_class),
        _ => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tapstat_decode::{Decoded, L4};

    fn tcp_flow(l7: bool) -> Flow {
        let d = Decoded { l4: L4::Tcp, sport: 40000, dport: 30303, ..Decoded::default() };
        Flow::new(&d, true, 1, None, l7)
    }

    #[test]
    fn mse_is_an_answered_binary_hello_of_its_size() {
        let mut f = tcp_flow(true);
        f.dir[0].first_payload_len = 307;
        f.dir[1].first_payload_len = 57;
        assert_eq!((con_t(&f), p2p_t(&f), http_t(&f)), (con::MSE, 0, 0));
        f.dir[0].first_payload_text = true; // GNUTELLA CONNECT/0.6
        assert_eq!(con_t(&f), 0);
        f.dir[0].first_payload_text = false;
        f.dir[1].first_payload_len = 0; // unanswered
        assert_eq!(con_t(&f), 0);
        f.dir[1].first_payload_len = 200;
        f.dir[0].first_payload_len = 95; // too short for a key
        assert_eq!(con_t(&f), 0);
        f.dir[0].first_payload_len = 609; // longer than a key and 512 bytes of padding
        assert_eq!(con_t(&f), 0);
        // Without the application layer nothing is said.
        let mut g = tcp_flow(false);
        g.dir[0].first_payload_len = 307;
        g.dir[1].first_payload_len = 57;
        assert_eq!(con_t(&g), 0);
    }

    #[test]
    fn a_flows_class_and_its_packets_classes() {
        use crate::nets::Class;
        let mut f = tcp_flow(false);
        assert_eq!(f.class(), Class::Local, "every address is internal without networks");
        f.isint = [true, false];
        assert_eq!((f.class(), f.class_of_dir(0), f.class_of_dir(1)), (Class::Out, Class::Out, Class::In));
        f.isint = [false, true];
        assert_eq!((f.class(), f.class_of_dir(1)), (Class::In, Class::Out));
        f.isint = [false, false];
        assert_eq!(f.class_of_dir(1), Class::Ext);
    }
}
