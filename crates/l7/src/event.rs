//! `Event`: the named things that went wrong or hit a limit while inspecting a flow.
//!
//! In the Suricata manner, malformed input and limits are not errors: each is a named
//! event, set once per flow in a small bit set (`Events`) that a record can print.

/// One named event. The discriminant is its bit in `Events`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Event {
    /// A TLS record header with a length above 2^14 + 2048 (RFC 8446 §5.2).
    TlsRecordTooLong = 0,
    /// A handshake message that does not parse as its type says.
    TlsHandshakeMalformed,
    /// The first record of a direction that looked like TLS was not a handshake.
    TlsNotHandshake,
    /// A DTLS ClientHello fragmented over several records; not reassembled.
    DtlsFragmented,
    /// A hello, or the server's flight up to its certificate, larger than the reassembly cap.
    TlsReassemblyLimit,
    /// The record tracker gave up (too many records, or bytes that are not a record).
    TlsRecordTrackingStopped,
    /// A QUIC long header that does not parse.
    QuicHeaderMalformed,
    /// AEAD authentication of a client Initial failed (not QUIC, or a key we do not know).
    QuicDecryptFailed,
    /// A frame type not allowed in an Initial packet, or a frame that does not parse.
    QuicFrameMalformed,
    /// CRYPTO data beyond the reassembly cap, or more holes than tracked.
    QuicCryptoLimit,
    /// The HTTP head did not end within the header limit.
    HttpHeaderTooLong,
    /// A request or status line, or a header, that does not parse.
    HttpMalformed,
    /// More HTTP transactions than the per-flow row limit; later ones are parsed and
    /// counted, not kept.
    HttpTooManyTransactions,
    /// A body whose end cannot be found (read until close, or an upgrade): parsing stops.
    HttpBodyUnbounded,
    /// A DNS message that does not parse.
    DnsMalformed,
    /// A name with a compression pointer loop or more than 255 bytes (RFC 1035 §4.1.4).
    DnsNameInvalid,
    /// More DNS transactions than the per-flow limit.
    DnsTooManyTransactions,
    /// A direction used up its inspection budget before its protocol was done.
    BudgetExhausted,
    /// A DNS response with more answers than a transaction keeps (`MAX_ANSWERS`): its
    /// `answers` list is cut; its `ancount` is still the header's.
    DnsTooManyAnswers,
    /// Bytes of an HTTP flow's direction were never seen (capture loss): the message in
    /// progress was dropped and parsing resumed at the next segment starting a head.
    HttpGap,
    /// An HTTP string field (method, URL, Host, User-Agent, Referer, Content-Type,
    /// Server) longer than the 512 bytes a record keeps: its column holds the first 512.
    HttpFieldTruncated,
}

impl Event {
    pub const ALL: [Event; 21] = [
        Event::TlsRecordTooLong,
        Event::TlsHandshakeMalformed,
        Event::TlsNotHandshake,
        Event::DtlsFragmented,
        Event::TlsReassemblyLimit,
        Event::TlsRecordTrackingStopped,
        Event::QuicHeaderMalformed,
        Event::QuicDecryptFailed,
        Event::QuicFrameMalformed,
        Event::QuicCryptoLimit,
        Event::HttpHeaderTooLong,
        Event::HttpMalformed,
        Event::HttpTooManyTransactions,
        Event::HttpBodyUnbounded,
        Event::DnsMalformed,
        Event::DnsNameInvalid,
        Event::DnsTooManyTransactions,
        Event::BudgetExhausted,
        Event::DnsTooManyAnswers,
        Event::HttpGap,
        Event::HttpFieldTruncated,
    ];

    /// Every event's name, in bit order: `NAMES[e as usize] == e.name()`.
    pub const NAMES: [&'static str; 21] = {
        let mut n = [""; 21];
        let mut i = 0;
        while i < n.len() {
            n[i] = Event::ALL[i].name();
            i += 1;
        }
        n
    };

    /// The snake_case name a record prints.
    pub const fn name(self) -> &'static str {
        match self {
            Event::TlsRecordTooLong => "tls_record_too_long",
            Event::TlsHandshakeMalformed => "tls_handshake_malformed",
            Event::TlsNotHandshake => "tls_not_handshake",
            Event::DtlsFragmented => "dtls_fragmented",
            Event::TlsReassemblyLimit => "tls_reassembly_limit",
            Event::TlsRecordTrackingStopped => "tls_record_tracking_stopped",
            Event::QuicHeaderMalformed => "quic_header_malformed",
            Event::QuicDecryptFailed => "quic_decrypt_failed",
            Event::QuicFrameMalformed => "quic_frame_malformed",
            Event::QuicCryptoLimit => "quic_crypto_limit",
            Event::HttpHeaderTooLong => "http_header_too_long",
            Event::HttpMalformed => "http_malformed",
            Event::HttpTooManyTransactions => "http_too_many_transactions",
            Event::HttpBodyUnbounded => "http_body_unbounded",
            Event::DnsMalformed => "dns_malformed",
            Event::DnsNameInvalid => "dns_name_invalid",
            Event::DnsTooManyTransactions => "dns_too_many_transactions",
            Event::BudgetExhausted => "budget_exhausted",
            Event::DnsTooManyAnswers => "dns_too_many_answers",
            Event::HttpGap => "http_gap",
            Event::HttpFieldTruncated => "http_field_truncated",
        }
    }

    /// One sentence: what happened, for the documentation of the records that print it.
    pub fn meaning(self) -> &'static str {
        match self {
            Event::TlsRecordTooLong => "a TLS record header with a length above 2^14 + 2048 (RFC 8446 §5.2)",
            Event::TlsHandshakeMalformed => "a TLS handshake message that does not parse as its type says",
            Event::TlsNotHandshake => "the first TLS record of a direction was not a handshake",
            Event::DtlsFragmented => "a DTLS ClientHello fragmented over several records (not reassembled)",
            Event::TlsReassemblyLimit => "a TLS hello larger than the reassembly cap",
            Event::TlsRecordTrackingStopped => {
                "TLS record tracking gave up (too many records, or bytes that are not a record)"
            }
            Event::QuicHeaderMalformed => "a QUIC long header that does not parse",
            Event::QuicDecryptFailed => "AEAD authentication of a QUIC client Initial failed",
            Event::QuicFrameMalformed => "a frame not allowed in a QUIC Initial, or one that does not parse",
            Event::QuicCryptoLimit => "QUIC CRYPTO data beyond the reassembly cap, or more holes than tracked",
            Event::HttpHeaderTooLong => "an HTTP head did not end within the header limit (16 KiB)",
            Event::HttpMalformed => "an HTTP request or status line, or a chunk line, that does not parse",
            Event::HttpTooManyTransactions => {
                "more HTTP transactions than the per-flow row limit (64): later ones are not written to log_http_complete, but their messages are counted in http_req_cnt and http_res_cnt"
            }
            Event::HttpBodyUnbounded => {
                "an HTTP body whose end cannot be found (read until close, an upgrade, a tunnel): parsing stopped"
            }
            Event::DnsMalformed => "a DNS message that does not parse",
            Event::DnsNameInvalid => "a DNS name with a compression loop or over 255 bytes (RFC 1035 §4.1.4)",
            Event::DnsTooManyTransactions => "more DNS transactions than the per-flow limit (1024): later ones are not logged",
            Event::BudgetExhausted => {
                "a direction used up its inspection budget before its protocol was done (HTTP: later transactions are not written, their messages still counted)"
            }
            Event::DnsTooManyAnswers => {
                "a DNS response with more than 16 answers: `answers` keeps the first 16, `ancount` counts them all"
            }
            Event::HttpGap => {
                "bytes of a direction of an HTTP flow were never captured: the message in progress was dropped and parsing resumed at the next segment that starts with a request or status line"
            }
            Event::HttpFieldTruncated => {
                "an HTTP string field (method, URL, Host, User-Agent, Referer, Content-Type, Server) was longer than 512 bytes: its column holds the first 512"
            }
        }
    }
}

/// A set of `Event`s, 4 bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Events(u32);

impl Events {
    pub fn insert(&mut self, e: Event) {
        self.0 |= 1 << (e as u8);
    }

    pub fn contains(self, e: Event) -> bool {
        self.0 & (1 << (e as u8)) != 0
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The set as bits: bit `e as usize` for each `e` in it (`Event::NAMES` names them).
    pub fn bits(self) -> u32 {
        self.0
    }

    pub fn iter(self) -> impl Iterator<Item = Event> {
        Event::ALL.into_iter().filter(move |&e| self.contains(e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_lists_every_event_in_bit_order() {
        for (i, e) in Event::ALL.iter().enumerate() {
            assert_eq!(*e as usize, i);
        }
        let mut s = Events::default();
        s.insert(Event::DnsMalformed);
        s.insert(Event::TlsRecordTooLong);
        assert_eq!(s.iter().map(Event::name).collect::<Vec<_>>(), ["tls_record_too_long", "dns_malformed"]);
        for e in Event::ALL {
            assert_eq!(Event::NAMES[e as usize], e.name());
        }
        // `Events` is a u32.
        assert!(Event::ALL.len() <= 32);
    }
}
