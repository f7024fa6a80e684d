//! Classification: which application a flow carries (`App`) and how we know
//! (`AppSource`): payload signatures of the first packets of each direction first
//! (`signatures`), the server port as a fallback (`ports`).
//!
//! The set covers what Tstat's TCP `con_t` and UDP `c_type` classify and still matters
//! (HTTP, TLS, SSH, RTP/RTCP, BitTorrent with DHT and uTP, SMTP/POP3/IMAP, STUN/TURN,
//! DTLS, QUIC, DNS, SIP, RTSP, FTP) and the services and VPNs a network carries today
//! (`services`: DHCP/DHCPv6, NTP, mDNS/LLMNR, DNSCrypt, NetBIOS, SSDP, syslog, SNMP,
//! IPsec/IKE, WireGuard, OpenVPN, Redis, MySQL, PostgreSQL, SMB, RDP, MQTT, TFTP), each named
//! from its payload. `ndpi` maps nDPI's names onto these for the comparisons
//! (docs/METRICS.md, "Application layer against nDPI").

pub mod ndpi;
pub mod ports;
pub mod services;
pub mod signatures;

/// An application protocol.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum App {
    Tls,
    Dtls,
    Quic,
    Http,
    Dns,
    Ssh,
    Smtp,
    Pop3,
    Imap,
    Ftp,
    Bittorrent,
    Rtp,
    Rtcp,
    Stun,
    Sip,
    Rtsp,
    Ntp,
    Dhcp,
    Dhcpv6,
    Mdns,
    Llmnr,
    Dnscrypt,
    Netbios,
    Ssdp,
    Syslog,
    Snmp,
    Ipsec,
    Wireguard,
    Openvpn,
    Redis,
    Mysql,
    Postgresql,
    Smb,
    Rdp,
    Mqtt,
    Tftp,
}

impl App {
    /// Every application, in declaration order.
    pub const ALL: [App; 36] = [
        App::Tls,
        App::Dtls,
        App::Quic,
        App::Http,
        App::Dns,
        App::Ssh,
        App::Smtp,
        App::Pop3,
        App::Imap,
        App::Ftp,
        App::Bittorrent,
        App::Rtp,
        App::Rtcp,
        App::Stun,
        App::Sip,
        App::Rtsp,
        App::Ntp,
        App::Dhcp,
        App::Dhcpv6,
        App::Mdns,
        App::Llmnr,
        App::Dnscrypt,
        App::Netbios,
        App::Ssdp,
        App::Syslog,
        App::Snmp,
        App::Ipsec,
        App::Wireguard,
        App::Openvpn,
        App::Redis,
        App::Mysql,
        App::Postgresql,
        App::Smb,
        App::Rdp,
        App::Mqtt,
        App::Tftp,
    ];

    /// The application a record names `name` ([`App::name`]).
    pub fn from_name(name: &str) -> Option<App> {
        App::ALL.into_iter().find(|a| a.name() == name)
    }

    /// The lowercase name a record prints.
    pub fn name(self) -> &'static str {
        match self {
            App::Tls => "tls",
            App::Dtls => "dtls",
            App::Quic => "quic",
            App::Http => "http",
            App::Dns => "dns",
            App::Ssh => "ssh",
            App::Smtp => "smtp",
            App::Pop3 => "pop3",
            App::Imap => "imap",
            App::Ftp => "ftp",
            App::Bittorrent => "bittorrent",
            App::Rtp => "rtp",
            App::Rtcp => "rtcp",
            App::Stun => "stun",
            App::Sip => "sip",
            App::Rtsp => "rtsp",
            App::Ntp => "ntp",
            App::Dhcp => "dhcp",
            App::Dhcpv6 => "dhcpv6",
            App::Mdns => "mdns",
            App::Llmnr => "llmnr",
            App::Dnscrypt => "dnscrypt",
            App::Netbios => "netbios",
            App::Ssdp => "ssdp",
            App::Syslog => "syslog",
            App::Snmp => "snmp",
            App::Ipsec => "ipsec",
            App::Wireguard => "wireguard",
            App::Openvpn => "openvpn",
            App::Redis => "redis",
            App::Mysql => "mysql",
            App::Postgresql => "postgresql",
            App::Smb => "smb",
            App::Rdp => "rdp",
            App::Mqtt => "mqtt",
            App::Tftp => "tftp",
        }
    }
}

/// How `app` was decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[repr(u8)]
pub enum AppSource {
    /// A payload signature matched.
    Payload,
    /// No signature matched; the port table did.
    Port,
    /// Neither.
    #[default]
    None,
}

impl AppSource {
    pub fn name(self) -> &'static str {
        match self {
            AppSource::Payload => "payload",
            AppSource::Port => "port",
            AppSource::None => "none",
        }
    }
}
