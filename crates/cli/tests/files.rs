//! The output directory as a hostile or careless world leaves it (issue 13): planted
//! links, earlier runs' files, concurrent runs, a full disk.

mod common;
use common::*;
use tapstat_lab::synth::{synthesize, SynthConfig};

fn small_sample(dir: &std::path::Path) -> std::path::PathBuf {
    let cfg = SynthConfig { seed: 5, tcp_flows: 20, udp_dns_flows: 10, bulk_flows: 0, ..Default::default() };
    let (bytes, _) = synthesize(&cfg);
    let p = dir.join("small.pcap");
    std::fs::write(&p, bytes).unwrap();
    p
}

/// A link named like a log, pointing to a file outside: the run writes its log in
/// place of the link and never truncates or writes the target.
#[test]
fn a_planted_link_is_replaced_and_its_target_untouched() {
    let d = tempdir("planted-link");
    let pcap = small_sample(&d);
    let out = d.join("out");
    std::fs::create_dir_all(&out).unwrap();
    let target = d.join("shadow");
    std::fs::write(&target, "root:x:0:0\n").unwrap();
    std::os::unix::fs::symlink(&target, out.join("log_tcp_complete")).unwrap();
    analyze(&pcap, &out, 1, &[]);
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "root:x:0:0\n");
    let m = std::fs::symlink_metadata(out.join("log_tcp_complete")).unwrap();
    assert!(m.file_type().is_file());
    assert_eq!(read_log(&out, "log_tcp_complete").len(), 20);
    std::fs::remove_dir_all(&d).unwrap();
}
