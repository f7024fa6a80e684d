//! Shunting rules (DNAC's packet shunting): when a flow needs no further analysis.
//!
//! A live worker evaluates its [`Shunt`] on a flow after each analysed packet; the first
//! time it matches, the tracker marks the flow `shunted` and tells the engine
//! ([`crate::Tracker::take_shunt`]), which asks the worker's acquisition thread to only
//! count that flow's later packets (packets and wire bytes stay exact; SYN, FIN and RST
//! are still analysed, so the flow ends as it would).
//!
//! A rule is a conjunction of terms, `--shunt 'app=tls and bytes>1MB'`; several rules
//! (up to [`MAX_RULES`]) match when any does. Terms:
//! - `app=NAME`: the flow's `app` column is NAME (tls, quic, http, ...);
//! - `bytes>SIZE`: wire bytes of both directions beyond SIZE (`1MB` = 10^6, `1MiB` = 2^20;
//!   k, M, G, T with or without B, KiB..TiB);
//! - `pkts>N`: packets of both directions beyond N;
//! - `l7done`: the application layer has decided the flow's application from its payload
//!   and has nothing more to parse (its hellos, or its budget, are done).
//!
//! `Shunt` is `Copy` (a fixed array), like the rest of [`crate::TrackerConfig`].

use crate::flow::Flow;
use tapstat_l7::App;

/// Most `--shunt` rules of a run.
pub const MAX_RULES: usize = 4;

/// One rule: every condition that is set must hold.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Rule {
    pub app: Option<App>,
    /// Wire bytes of both directions must exceed this (0: no condition).
    pub bytes_over: u64,
    /// Packets of both directions must exceed this (0: no condition).
    pub pkts_over: u64,
    pub l7done: bool,
}

/// The rules of a run: a flow is shunted when any matches.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Shunt {
    rules: [Rule; MAX_RULES],
    n: u8,
}

impl Rule {
    /// Parses `TERM and TERM ...`.
    pub fn parse(s: &str) -> Result<Rule, String> {
        let mut r = Rule::default();
        let mut terms = 0;
        for t in s.split(" and ").map(str::trim) {
            if t.is_empty() {
                return Err(format!("--shunt {s:?}: an empty term (terms are joined by ' and ')"));
            }
            terms += 1;
            if t == "l7done" {
                r.l7done = true;
            } else if let Some(v) = t.strip_prefix("app=") {
                let a = App::from_name(v.trim()).ok_or_else(|| {
                    let names: Vec<_> = App::ALL.iter().map(|a| a.name()).collect();
                    format!("--shunt: unknown application {v:?} (one of {})", names.join(", "))
                })?;
                r.app = Some(a);
            } else if let Some(v) = t.strip_prefix("bytes>") {
                r.bytes_over = size(v.trim()).map_err(|e| format!("--shunt: bytes>{v}: {e}"))?;
            } else if let Some(v) = t.strip_prefix("pkts>") {
                r.pkts_over = v.trim().parse().map_err(|_| format!("--shunt: pkts>{v}: not a whole number"))?;
            } else {
                return Err(format!(
                    "--shunt: unknown term {t:?} (app=NAME, bytes>SIZE, pkts>N, l7done, joined by 'and')"
                ));
            }
        }
        if terms == 0 {
            return Err("--shunt: an empty rule".into());
        }
        Ok(r)
    }

    #[inline]
    fn matches(&self, f: &Flow) -> bool {
        if self.pkts_over > 0 && f.dir[0].pkts_all + f.dir[1].pkts_all <= self.pkts_over {
            return false;
        }
        if self.bytes_over > 0 && f.dir[0].bytes_wire + f.dir[1].bytes_wire <= self.bytes_over {
            return false;
        }
        if self.app.is_none() && !self.l7done {
            return true;
        }
        let Some(l7) = f.l7.as_ref() else { return false };
        (self.app.is_none() || l7.app() == self.app)
            && (!self.l7done || (l7.is_done() && l7.app_source() == tapstat_l7::AppSource::Payload))
    }
}

impl Shunt {
    /// The rules of `--shunt` flags, in order.
    pub fn new(rules: &[Rule]) -> Result<Shunt, String> {
        if rules.len() > MAX_RULES {
            return Err(format!("--shunt: at most {MAX_RULES} rules"));
        }
        let mut s = Shunt { n: rules.len() as u8, ..Shunt::default() };
        s.rules[..rules.len()].copy_from_slice(rules);
        Ok(s)
    }

    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// Whether flow `f` needs no further analysis.
    #[inline]
    pub fn matches(&self, f: &Flow) -> bool {
        self.rules[..self.n as usize].iter().any(|r| r.matches(f))
    }
}

/// `1MB`, `512k`, `2MiB`, `1000`: bytes.
fn size(s: &str) -> Result<u64, String> {
    let split = s.find(|c: char| !c.is_ascii_digit() && c != '.').unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let x: f64 = num.parse().map_err(|_| "not a size (e.g. 1MB, 512KiB, 1000)".to_string())?;
    let mult: f64 = match unit.trim() {
        "" | "B" => 1.0,
        "k" | "K" | "kB" | "KB" => 1e3,
        "M" | "MB" => 1e6,
        "G" | "GB" => 1e9,
        "T" | "TB" => 1e12,
        "KiB" => 1024.0,
        "MiB" => 1024.0 * 1024.0,
        "GiB" => 1024.0 * 1024.0 * 1024.0,
        "TiB" => 1024.0 * 1024.0 * 1024.0 * 1024.0,
        u => return Err(format!("unknown unit {u:?} (B, kB, MB, GB, TB, KiB, MiB, GiB, TiB)")),
    };
    let v = x * mult;
    if !v.is_finite() || v >= u64::MAX as f64 {
        return Err("out of range".into());
    }
    Ok(v as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_parse() {
        let r = Rule::parse("app=tls and bytes>1MB").unwrap();
        assert_eq!(r, Rule { app: Some(App::Tls), bytes_over: 1_000_000, ..Rule::default() });
        let r = Rule::parse("pkts>100 and l7done").unwrap();
        assert_eq!(r, Rule { pkts_over: 100, l7done: true, ..Rule::default() });
        assert_eq!(Rule::parse("bytes>2MiB").unwrap().bytes_over, 2 << 20);
        assert_eq!(Rule::parse("bytes>512k").unwrap().bytes_over, 512_000);
        for bad in ["", "app=nope", "bytes>1XB", "pkts>-1", "app=tls and", "size>3", "bytes>1e30"] {
            assert!(Rule::parse(bad).is_err(), "{bad:?} accepted");
        }
        for a in App::ALL {
            assert_eq!(App::from_name(a.name()), Some(a));
        }
        assert!(Shunt::new(&[Rule::default(); MAX_RULES + 1]).is_err());
    }

    fn flow(pkts: [u64; 2], bytes: [u64; 2]) -> Flow {
        use tapstat_decode::{Decoded, TcpFields, L4};
        let d = Decoded {
            l4: L4::Tcp,
            ip_version: 4,
            proto: 6,
            src: 0x0a00_0001,
            dst: 0x0a00_0002,
            sport: 40000,
            dport: 443,
            tcp: TcpFields { seq: 1, ack: 0, flags: 0x02, window: 1000, hdr_len: 20 },
            ..Default::default()
        };
        let mut f = Flow::new(&d, true, 1, None, true);
        for i in 0..2 {
            f.dir[i].pkts_all = pkts[i];
            f.dir[i].bytes_wire = bytes[i];
        }
        f
    }

    #[test]
    fn a_flow_matches_when_every_term_of_a_rule_holds() {
        let f = flow([60, 50], [10_000, 990_001]);
        let sh = |s: &str| Shunt::new(&[Rule::parse(s).unwrap()]).unwrap();
        assert!(sh("pkts>109").matches(&f));
        assert!(!sh("pkts>110").matches(&f));
        assert!(sh("bytes>1MB").matches(&f));
        assert!(!sh("bytes>1MB and pkts>200").matches(&f));
        // No payload seen: the port says https, but `l7done` wants the payload's word.
        assert!(!sh("l7done").matches(&f));
        assert!(!sh("app=quic").matches(&f));
        assert!(sh("app=tls").matches(&f), "the port table names 443 tls");
        let any = Shunt::new(&[Rule::parse("pkts>1000").unwrap(), Rule::parse("bytes>1MB").unwrap()]).unwrap();
        assert!(any.matches(&f));
        assert!(!Shunt::default().matches(&f));
    }
}
