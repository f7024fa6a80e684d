//! The port table: the fallback when no payload signature matched (IANA's service
//! registry for the well-known ports, and the de facto ones where a protocol has none).

use super::App;
use crate::Transport;

/// The application IANA (or common use) puts on this port.
pub fn by_port(transport: Transport, port: u16) -> Option<App> {
    match (transport, port) {
        (Transport::Tcp, 80 | 8080 | 8000 | 3128) => Some(App::Http),
        // Implicit-TLS ports (mail: RFC 8314 §3.3) are TLS, as a payload that shows it says.
        (Transport::Tcp, 443 | 8443 | 465 | 563 | 636 | 853 | 990 | 993 | 995 | 5223 | 5228) => Some(App::Tls),
        (Transport::Tcp, 5061) => Some(App::Sip),
        (Transport::Tcp, 22) => Some(App::Ssh),
        (Transport::Tcp, 25 | 587) => Some(App::Smtp),
        (Transport::Tcp, 110) => Some(App::Pop3),
        (Transport::Tcp, 143) => Some(App::Imap),
        (Transport::Tcp, 21) => Some(App::Ftp),
        (Transport::Tcp, 554) => Some(App::Rtsp),
        (Transport::Tcp | Transport::Udp, 53) => Some(App::Dns),
        (Transport::Tcp | Transport::Udp, 5060) => Some(App::Sip),
        (Transport::Udp, 5353 | 5355) => Some(App::Dns),
        (Transport::Udp, 443) => Some(App::Quic),
        (Transport::Udp, 123) => Some(App::Ntp),
        (Transport::Udp, 3478 | 3479 | 5349 | 19302..=19309) => Some(App::Stun),
        (Transport::Udp, 4433 | 853) => Some(App::Dtls),
        _ => None,
    }
}

/// The server port first, then the client port (a client on a well-known port is rare
/// but real: DNS servers talking to each other on 53, NTP peers on 123).
pub fn classify(transport: Transport, client_port: u16, server_port: u16) -> Option<App> {
    by_port(transport, server_port).or_else(|| by_port(transport, client_port))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table() {
        assert_eq!(classify(Transport::Tcp, 50000, 443), Some(App::Tls));
        assert_eq!(classify(Transport::Udp, 50000, 443), Some(App::Quic));
        assert_eq!(classify(Transport::Udp, 53, 40000), Some(App::Dns));
        assert_eq!(classify(Transport::Tcp, 50000, 50001), None);
    }
}
