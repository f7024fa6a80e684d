//! nDPI's protocol names and tapstat's `App`: the one table the comparisons with
//! ndpiReader use (crates/cli/tests/l7.rs, crates/l7/tests/corpus.rs, docs/METRICS.md
//! "Application layer against nDPI").
//!
//! ndpiReader names a flow `MASTER.APP` (`TLS.Google`, `DNS.Apple`) or just `APP`; the
//! master is the protocol on the wire, the app the service nDPI recognised in it (by
//! name or by address). Either may be one of ours: `CiscoVPN.HTTP` is HTTP inside
//! nDPI's CiscoVPN, `NetBIOS.SMBv1` an SMB message in a NetBIOS datagram.

use super::App;

/// nDPI's name of a protocol → ours. nDPI's implicit-TLS names (`IMAPS`, `POPS`,
/// `SMTPS`: TLS on a mail port) are TLS here, as the payload says; the port table
/// agrees (crates/l7/src/classify/ports.rs).
pub const NDPI_NAMES: &[(&str, App)] = &[
    ("TLS", App::Tls),
    ("IMAPS", App::Tls),
    ("POPS", App::Tls),
    ("SMTPS", App::Tls),
    ("DTLS", App::Dtls),
    ("QUIC", App::Quic),
    ("HTTP", App::Http),
    ("HTTP_Proxy", App::Http),
    ("HTTP_Connect", App::Http),
    ("DNS", App::Dns),
    ("MDNS", App::Mdns),
    ("LLMNR", App::Llmnr),
    ("DNScrypt", App::Dnscrypt),
    ("SSH", App::Ssh),
    ("SMTP", App::Smtp),
    ("POP3", App::Pop3),
    ("IMAP", App::Imap),
    ("FTP_CONTROL", App::Ftp),
    ("BitTorrent", App::Bittorrent),
    ("RTP", App::Rtp),
    ("RTCP", App::Rtcp),
    ("STUN", App::Stun),
    ("SIP", App::Sip),
    ("RTSP", App::Rtsp),
    ("NTP", App::Ntp),
    ("DHCP", App::Dhcp),
    ("DHCPV6", App::Dhcpv6),
    ("NetBIOS", App::Netbios),
    ("SSDP", App::Ssdp),
    ("Syslog", App::Syslog),
    ("SNMP", App::Snmp),
    ("IPsec", App::Ipsec),
    ("WireGuard", App::Wireguard),
    ("OpenVPN", App::Openvpn),
    ("Redis", App::Redis),
    ("MySQL", App::Mysql),
    ("PostgreSQL", App::Postgresql),
    ("SMBv1", App::Smb),
    ("SMBv23", App::Smb),
    ("RDP", App::Rdp),
    ("MQTT", App::Mqtt),
    ("TFTP", App::Tftp),
];

/// Ours for one nDPI protocol name (no dot).
pub fn app_of(name: &str) -> Option<App> {
    NDPI_NAMES.iter().find(|(n, _)| *n == name).map(|(_, a)| *a)
}

/// Ours for an ndpiReader verdict `MASTER.APP` or `APP`: the master's if it is one of
/// ours, else the app's (`CiscoVPN.HTTP` is HTTP; `NetBIOS.SMBv1`, an SMB message in a
/// NetBIOS datagram, is NetBIOS).
pub fn app_of_verdict(verdict: &str) -> Option<App> {
    match verdict.split_once('.') {
        Some((master, app)) => app_of(master).or_else(|| app_of(app)),
        None => app_of(verdict),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts() {
        assert_eq!(app_of_verdict("TLS.Google"), Some(App::Tls));
        assert_eq!(app_of_verdict("CiscoVPN.HTTP"), Some(App::Http));
        assert_eq!(app_of_verdict("NetBIOS.SMBv1"), Some(App::Netbios));
        assert_eq!(app_of_verdict("SMBv23"), Some(App::Smb));
        assert_eq!(app_of_verdict("Unknown"), None);
        // Every app nDPI can name has one entry per nDPI name, no name twice.
        for (i, (n, _)) in NDPI_NAMES.iter().enumerate() {
            assert!(NDPI_NAMES[i + 1..].iter().all(|(m, _)| m != n), "{n} twice");
        }
    }
}
