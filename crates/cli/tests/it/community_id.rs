//! `community_id` against Corelight's reference implementation (the `communityid`
//! package from pip, run by community_id_check.py) on every TCP and UDP record of dev
//! captures with IPv4, IPv6, tunnels and many flows. Skipped, with the reason printed,
//! where python3 or the package is missing, unless TAPSTAT_REQUIRE_PYTHON=1.

use crate::common::{analyze, corpus, python_has, read_log, ready, tempdir};
use std::process::Command;

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/community_id_check.py");

fn communityid_ready() -> bool {
    ready(
        python_has("communityid"),
        "TAPSTAT_REQUIRE_PYTHON",
        "python3 with communityid is missing (pip install communityid)",
    )
}

#[test]
#[cfg_attr(not(tapstat_corpus), ignore = "needs the capture corpus (../shared/pcaps/dev or TAPSTAT_CORPUS)")]
fn community_ids_match_the_reference_implementation() {
    let Some(corpus) = corpus() else { return };
    if !communityid_ready() {
        return;
    }
    let caps = ["ndpi__1kxun.pcap", "ndpi__http_ipv6.pcap", "ndpi__6in4tunnel.pcap", "ndpi__synscan.pcap"];
    let mut outs = Vec::new();
    for (i, c) in caps.iter().enumerate() {
        let out = tempdir(&format!("community-id-{i}"));
        analyze(&corpus.join(c), &out, 2, &["--community-id"]);
        outs.push(out);
    }
    let o = Command::new("python3").arg(SCRIPT).args(&outs).output().expect("python3 runs");
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{text}{}", String::from_utf8_lossy(&o.stderr));
    let n: usize = text.lines().find_map(|l| l.strip_prefix("checked ")).and_then(|n| n.parse().ok()).unwrap_or(0);
    // 1kxun alone has about 200 TCP and UDP flows, synscan about 2,000.
    assert!(n > 2000, "too few records checked: {n}");
    for out in outs {
        let _ = std::fs::remove_dir_all(out);
    }
}

/// Without `--community-id` (the default) the column is there and empty.
#[test]
#[cfg_attr(not(tapstat_corpus), ignore = "needs the capture corpus (../shared/pcaps/dev or TAPSTAT_CORPUS)")]
fn community_id_is_empty_unless_asked_for() {
    let Some(corpus) = corpus() else { return };
    let out = tempdir("community-id-off");
    analyze(&corpus.join("ndpi__1kxun.pcap"), &out, 1, &[]);
    let rows: Vec<_> = ["log_tcp_complete", "log_udp_complete"].iter().flat_map(|l| read_log(&out, l)).collect();
    assert!(rows.len() > 100, "{} records", rows.len());
    assert!(rows.iter().all(|r| r["community_id"] == "-"), "community_id written without --community-id");
    let _ = std::fs::remove_dir_all(out);
}
