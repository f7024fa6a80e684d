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
    /// A hello larger than the reassembly cap.
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
    /// More transactions than the per-flow limit; later ones are not parsed.
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
}

impl Event {
    pub const ALL: [Event; 18] = [
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
    ];

    /// The snake_case name a record prints.
    pub fn name(self) -> &'static str {
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
    }
}
