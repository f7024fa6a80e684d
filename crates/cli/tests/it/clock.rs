//! Capture clocks that step back: flows after the step are not taken for idle.

use crate::common::*;

#[test]
#[cfg_attr(not(tapstat_corpus), ignore = "needs the capture corpus (../shared/pcaps/dev or TAPSTAT_CORPUS)")]
fn a_clock_step_back_does_not_split_flows() {
    let Some(corpus) = corpus() else { return };
    // ndpi__tftp.pcap: frame 1 is 71 minutes ahead of the rest; the transfer that
    // follows (98 packets in 181 ms) is one flow.
    let out = tempdir("clock-tftp");
    analyze(&corpus.join("ndpi__tftp.pcap"), &out, 2, &[]);
    let udp = read_log(&out, "log_udp_complete");
    assert_eq!(udp.len(), 9, "UDP records of ndpi__tftp.pcap");
    let transfer: Vec<_> = udp.iter().filter(|r| r["c_port"] == "3445" || r["s_port"] == "3445").collect();
    assert_eq!(transfer.len(), 1, "{transfer:#?}");
    let pkts: u64 = ["c_pkts_all", "s_pkts_all"].iter().map(|c| transfer[0][*c].parse::<u64>().unwrap()).sum();
    assert_eq!(pkts, 98);
    // ndpi__ipsec_isakmp_esp.pcap: the clock steps back by up to 19 hours.
    let out = tempdir("clock-ipsec");
    analyze(&corpus.join("ndpi__ipsec_isakmp_esp.pcap"), &out, 1, &[]);
    assert_eq!(read_log(&out, "log_udp_complete").len(), 91, "UDP records of ndpi__ipsec_isakmp_esp.pcap");
}
