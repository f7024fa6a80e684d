//! `tapstat report OUTDIR`: a self-contained HTML page (no script, nothing loaded)
//! with the histograms, the top lists, the RTT and retransmission distributions and
//! the run's health; rendered in a real headless browser (Debian's chromium) with no
//! console error and a screenshot that shows the plots. The browser tests are skipped,
//! with the reason printed, where chromium is missing, unless
//! TAPSTAT_REQUIRE_CHROMIUM=1.

use crate::common::*;
use std::path::Path;
use std::process::Command;

/// A run of the capture with the most intervals and names, and its report.
fn run_and_report(tag: &str, interval: &str) -> Option<(TestDir, String)> {
    let corpus = corpus()?;
    let d = tempdir(tag);
    analyze(&corpus.join("ndpi__1kxun.pcap"), &d, 1, &["--histo-interval", interval]);
    let o = tapstat(&["report", d.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let html = std::fs::read_to_string(d.join("report.html")).expect("report.html");
    Some((d, html))
}

/// Every `<figure>` of the page holds a plot or says it has nothing to show.
fn every_figure_is_drawn(html: &str) {
    for fig in html.split("<figure").skip(1) {
        let fig = &fig[..fig.find("</figure>").expect("a closed figure")];
        assert!(
            fig.contains("<svg") || fig.contains("nothing to show"),
            "an empty figure: {}",
            &fig[..fig.len().min(200)]
        );
    }
}

/// The figure with id `id`.
fn figure<'a>(html: &'a str, id: &str) -> &'a str {
    let at = html.find(&format!("<figure id=\"{id}\"")).unwrap_or_else(|| panic!("no figure {id}"));
    &html[at..at + html[at..].find("</figure>").expect("a closed figure")]
}

/// The bars of an `hbars` figure: (label, exact value).
fn bars(fig: &str) -> Vec<(String, u64)> {
    fig.split("data-value=\"")
        .skip(1)
        .map(|b| {
            let v = b[..b.find('"').unwrap()].parse().unwrap();
            let t = &b[b.find("<title>").unwrap() + 7..];
            (t[..t.find(": ").unwrap()].to_string(), v)
        })
        .collect()
}

/// The `data-NAME` attribute of the chart over time in `fig`.
fn attr(fig: &str, name: &str) -> f64 {
    let k = format!("data-{name}=\"");
    let at = fig.find(&k).unwrap_or_else(|| panic!("no {k}")) + k.len();
    fig[at..at + fig[at..].find('"').unwrap()].parse().unwrap()
}

#[test]
#[cfg_attr(not(tapstat_corpus), ignore = "needs the capture corpus (../shared/pcaps/dev or TAPSTAT_CORPUS)")]
fn the_report_is_self_contained_and_shows_every_part() {
    let Some((d, html)) = run_and_report("rep", "60") else { return };
    // Nothing to load: no script, no external resource (the icon is an empty data URL).
    assert!(!html.contains("<script"), "the page has a script");
    assert!(!html.contains("src="), "the page loads something");
    for (i, _) in html.match_indices("href=") {
        assert!(
            html[i..].starts_with("href=\"data:") || html[i..].starts_with("href=\"#"),
            "a link: {}",
            &html[i..i + 60]
        );
    }
    assert!(!html.contains("url("), "CSS loads something");
    every_figure_is_drawn(&html);
    // The sections, in the order an operator reads them, and every chart.
    let order: Vec<usize> = ["id=time", "id=traffic", "id=tcp", "id=histograms", "id=health"]
        .iter()
        .map(|id| html.find(id).unwrap_or_else(|| panic!("{id}")))
        .collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "sections out of order: {order:?}");
    for id in [
        "throughput-app",
        "packets-app",
        "throughput-dir",
        "packets-dir",
        "top-apps",
        "top-talkers",
        "top-names",
        "protocols",
        "ip-versions",
        "rtt-c",
        "rtt-s",
        "retx",
        "records-by-log",
        "end-reasons",
        "anomalies",
    ] {
        figure(&html, id);
    }
    for f in ["ip_len", "ttl", "ip_proto", "tcp_port", "udp_duration_ms", "tcp_rtt_s_ms", "app"] {
        assert!(html.contains(&format!("<figcaption>{f} (")), "{f}");
    }
    // The top lists come from the logs, by bytes on the wire: every application shown
    // has the sum of its records' c_bytes_wire + s_bytes_wire, exactly.
    let recs: Vec<_> = LOGS.iter().flat_map(|l| read_log(&d, l)).collect();
    let mut by_app = std::collections::BTreeMap::<String, u64>::new();
    for r in &recs {
        let b: u64 = ["c_bytes_wire", "s_bytes_wire"].iter().map(|c| r[*c].parse::<u64>().unwrap_or(0)).sum();
        // No application (log_other has no column): "unknown" on the page.
        let app = r.get("app").filter(|a| *a != "-").cloned().unwrap_or_else(|| "unknown".into());
        *by_app.entry(app).or_default() += b;
    }
    let shown = bars(figure(&html, "top-apps"));
    assert_eq!(shown.len(), by_app.len().min(15));
    for (app, wire) in &shown {
        assert_eq!(Some(wire), by_app.get(app), "{app}");
    }
    let (top_app, _) = by_app.iter().max_by_key(|x| x.1).unwrap();
    assert_eq!(&shown[0].0, top_app);
    let sni = recs.iter().find_map(|r| r.get("c_tls_SNI").filter(|v| *v != "-")).expect("a TLS name");
    assert!(html.contains(sni.as_str()), "{sni}");
    // The health table says what summary.json says.
    let s = summary(&d);
    let frames = s["packets"].as_u64().unwrap();
    assert!(html.contains(&format!("<th>frames read</th><td>{}</td>", group(frames))), "frames");
    // Without histograms the page says so, and still has the rest.
    let (d2, html2) = run_and_report("rep-off", "off").unwrap();
    assert!(html2.contains("No histograms.tsv"));
    assert!(html2.contains("id=health") && html2.contains("id=\"throughput-app\""));
    let _ = std::fs::remove_dir_all(&d);
    let _ = std::fs::remove_dir_all(&d2);
}

/// The README's sample (`tapstat synth`, 3 minutes of traffic under the 5-minute
/// histogram interval): the charts over time have a step from the run's length (a
/// second: 100 columns at least), say what a column is, and draw bit/s and frames/s per
/// application and direction with their legends; the histograms, one interval, are
/// distributions, not one-column heat maps.
#[test]
fn a_short_run_gets_charts_over_time_of_at_least_100_columns() {
    let d = tempdir("rep-sample");
    let pcap = d.join("sample.pcap");
    let o = tapstat(&["synth", "-o", pcap.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = d.join("out");
    analyze(&pcap, &out, 1, &[]);
    let o = tapstat(&["report", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    every_figure_is_drawn(&html);
    let s = summary(&out);
    let span_ms = (s["last_packet_s"].as_f64().unwrap() - s["first_packet_s"].as_f64().unwrap()) * 1e3;
    for (id, unit) in
        [("throughput-app", "bit/s"), ("packets-app", "pkt/s"), ("throughput-dir", "bit/s"), ("packets-dir", "pkt/s")]
    {
        let fig = figure(&html, id);
        let (n, step) = (attr(fig, "columns"), attr(fig, "step-ms"));
        assert!((100.0..=300.0).contains(&n), "{id}: {n} columns");
        assert!(n * step > span_ms && (n - 1.0) * step <= span_ms + step, "{id}: {n} × {step} ms for {span_ms} ms");
        assert!(
            fig.contains(&format!("data-unit=\"{unit}\"")) && fig.contains(&format!("{unit}</text>")),
            "{id}: unit"
        );
        assert!(fig.contains("class=legend") && fig.contains("class=sw"), "{id}: no legend");
        assert!(fig.contains("<path d=\"M"), "{id}: nothing drawn");
    }
    assert!(html.contains("One column = 1 s"), "the column is not said");
    // Per application: the applications of the logs; per direction without -N: client
    // and server.
    assert!(figure(&html, "throughput-app").contains("tls <b>"));
    let dir = figure(&html, "throughput-dir");
    assert!(dir.contains("client → server") && dir.contains("server → client"));
    // The legend's totals are bytes on the wire, as summary.json counts them (every
    // frame of the sample is in a flow).
    let wire: u64 = LOGS
        .iter()
        .flat_map(|l| read_log(&out, l))
        .map(|r| ["c_bytes_wire", "s_bytes_wire"].iter().map(|c| r[*c].parse::<u64>().unwrap_or(0)).sum::<u64>())
        .sum();
    assert_eq!(wire, s["bytes"].as_u64().unwrap());
    let protos: u64 = bars(figure(&html, "protocols")).iter().map(|b| b.1).sum();
    assert_eq!(protos, wire);
    // One histogram interval: no heat map, each family's distribution.
    assert!(html.contains("Too few intervals for a heat map"));
    assert!(!html.contains("log scale; white: none"), "a heat map of one column");
    // -N: in and out.
    let out_n = d.join("out-n");
    analyze(&pcap, &out_n, 1, &["--internal", "10.0.0.0/8"]);
    assert!(tapstat(&["report", out_n.to_str().unwrap()]).status.success());
    let html = std::fs::read_to_string(out_n.join("report.html")).unwrap();
    let dir = figure(&html, "throughput-dir");
    assert!(dir.contains("out (from internal)") && dir.contains("internal networks"), "{dir}");
    let _ = std::fs::remove_dir_all(&d);
}

/// A pcap of Ethernet frames: (time in µs, frame).
fn pcap(frames: &[(u64, Vec<u8>)]) -> Vec<u8> {
    // The classic header: magic, version 2.4, zone, sigfigs, snaplen, Ethernet.
    let mut v = 0xa1b2_c3d4u32.to_le_bytes().to_vec();
    v.extend_from_slice(&2u16.to_le_bytes());
    v.extend_from_slice(&4u16.to_le_bytes());
    for x in [0u32, 0, 65535, 1] {
        v.extend_from_slice(&x.to_le_bytes());
    }
    for (t, f) in frames {
        for x in [(t / 1_000_000) as u32, (t % 1_000_000) as u32, f.len() as u32, f.len() as u32] {
            v.extend_from_slice(&x.to_le_bytes());
        }
        v.extend_from_slice(f);
    }
    v
}

/// An Ethernet frame of `ethertype` carrying `payload`.
fn ether(ethertype: u16, payload: &[u8]) -> Vec<u8> {
    let mut f = vec![0x02, 0, 0, 0, 0, 1, 0x02, 0, 0, 0, 0, 2];
    f.extend_from_slice(&ethertype.to_be_bytes());
    f.extend_from_slice(payload);
    f
}

/// An IPv6 UDP datagram from `src` to `dst` with `len` bytes of payload.
fn udp6(src: &str, dst: &str, sport: u16, dport: u16, len: usize) -> Vec<u8> {
    let (s, d): (std::net::Ipv6Addr, std::net::Ipv6Addr) = (src.parse().unwrap(), dst.parse().unwrap());
    let mut p = vec![0x60, 0, 0, 0];
    p.extend_from_slice(&((8 + len) as u16).to_be_bytes());
    p.extend_from_slice(&[17, 64]);
    p.extend_from_slice(&s.octets());
    p.extend_from_slice(&d.octets());
    p.extend_from_slice(&sport.to_be_bytes());
    p.extend_from_slice(&dport.to_be_bytes());
    p.extend_from_slice(&((8 + len) as u16).to_be_bytes());
    p.extend_from_slice(&[0, 0]);
    p.extend(std::iter::repeat_n(0x5a, len));
    ether(0x86dd, &p)
}

/// Two IPv6 talkers that differ in their last digit only have two labels (the page
/// once cut labels to 30 characters: both read "2001:db8:aaaa:bbbb:cccc:dddd:e");
/// ARP and EAPOL frames are non-IP frames, shown as such, not as decoding anomalies.
#[test]
fn ipv6_labels_stay_distinct_and_non_ip_frames_are_no_anomaly() {
    let d = tempdir("rep-v6");
    let (a, b, c) = (
        "2001:db8:aaaa:bbbb:cccc:dddd:eeee:1",
        "2001:db8:aaaa:bbbb:cccc:dddd:eeee:2",
        "2001:db8:aaaa:bbbb:cccc:dddd:eeee:3",
    );
    let t0 = 1_700_000_000_000_000u64;
    let mut frames = Vec::new();
    for i in 0..20u64 {
        frames.push((t0 + i * 100_000, udp6(a, c, 40000, 5001, 300)));
        frames.push((t0 + i * 100_000 + 50_000, udp6(b, c, 40001, 5001, 100)));
    }
    frames.push((t0 + 10, ether(0x0806, &[0; 28])));
    frames.push((t0 + 20, ether(0x888e, &[1, 0, 0, 0])));
    let p = d.join("v6.pcap");
    std::fs::write(&p, pcap(&frames)).unwrap();
    let out = d.join("out");
    analyze(&p, &out, 1, &[]);
    let s = summary(&out);
    assert_eq!(s["non_ip_frames"], 2, "{s}");
    let o = tapstat(&["report", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    let talkers: Vec<String> = bars(figure(&html, "top-talkers")).into_iter().map(|b| b.0).collect();
    assert_eq!(talkers.len(), 3, "{talkers:?}");
    for ip in [a, b, c] {
        assert!(talkers.iter().any(|t| t == ip), "{ip} not among {talkers:?}");
        assert!(html.contains(&format!(">{ip}</text>")), "{ip}: its label is not whole");
    }
    assert_eq!(bars(figure(&html, "ip-versions")).iter().map(|b| b.0.as_str()).collect::<Vec<_>>(), ["IPv6"]);
    // Non-IP: in the key figures and the protocol split, not among the anomalies (nor
    // red in the health table).
    assert!(html.contains("<th>non-IP frames (ARP, LLDP, EAPOL, STP...: in no flow)</th><td>2</td>"), "non-IP row");
    assert!(html.contains("<tr><th>decoding anomalies</th><td>0</td>"), "anomalies row");
    assert!(!figure(&html, "anomalies").contains("ethertype_not_ip"));
    assert!(figure(&html, "anomalies").contains("nothing to show"));
    assert!(bars(figure(&html, "protocols"))
        .iter()
        .any(|b| b.0.starts_with("non-IP frames") && b.1 == 14 + 28 + 14 + 4));
    let _ = std::fs::remove_dir_all(&d);
}

/// 1234567 as the report writes it.
fn group(n: u64) -> String {
    let s = n.to_string();
    s.chars().enumerate().fold(String::new(), |mut o, (i, c)| {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            o.push(',');
        }
        o.push(c);
        o
    })
}

#[test]
fn a_directory_without_a_finished_run_is_a_clear_error() {
    let d = tempdir("rep-empty");
    let o = tapstat(&["report", d.to_str().unwrap()]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("no summary.json"), "{err}");
    std::fs::write(d.join("summary.json"), "{not json").unwrap();
    let o = tapstat(&["report", d.to_str().unwrap()]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("not valid JSON"));
    std::fs::write(d.join("summary.json"), "{}").unwrap();
    std::fs::write(d.join("histograms.tsv"), "time\thistogram\tdirection\tbin\tcount\n1\tx\n").unwrap();
    let o = tapstat(&["report", d.to_str().unwrap()]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("line 2"), "{}", String::from_utf8_lossy(&o.stderr));
    let _ = std::fs::remove_dir_all(&d);
}

/// Counts a hand-made histograms.tsv or log carries are added saturating: two counts of
/// 2^64-1 in one cell once panicked a build with overflow checks (as the tests' is)
/// and wrapped in a release build.
#[test]
fn huge_counts_saturate_instead_of_overflowing() {
    let d = tempdir("rep-huge");
    let pcap = synth_sample(&d, 5, 20, 10);
    let out = d.join("out");
    analyze(&pcap, &out, 1, &[]);
    let mut h = std::fs::read_to_string(out.join("histograms.tsv")).unwrap();
    let row = h.lines().nth(1).expect("a histogram row").to_string();
    let f: Vec<&str> = row.split('\t').collect();
    for _ in 0..2 {
        h += &format!("{}\t{}\t{}\t{}\t{}\n", f[0], f[1], f[2], f[3], u64::MAX);
    }
    std::fs::write(out.join("histograms.tsv"), h).unwrap();
    let o = tapstat(&["report", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let _ = std::fs::remove_dir_all(&d);
}

/// Runs headless chromium on `page` with `args`; returns (stdout, stderr).
fn chromium(page: &Path, profile: &Path, args: &[&str]) -> (Vec<u8>, String) {
    let o = Command::new("timeout")
        .args(["120", "chromium", "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars"])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(["--enable-logging=stderr", "--v=0"])
        .args(args)
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("chromium runs");
    assert!(o.status.success(), "chromium failed: {}", String::from_utf8_lossy(&o.stderr));
    (o.stdout, String::from_utf8_lossy(&o.stderr).into_owned())
}

/// The lines of chromium's log that report a console message or a failed load.
fn console_errors(log: &str) -> Vec<&str> {
    log.lines().filter(|l| l.contains(":CONSOLE") || l.contains("net::ERR") || l.contains("Failed to load")).collect()
}

/// Pixels of the plots' colours (bars, areas, lines, the heat maps' darker half) in a
/// PNG screenshot: text is black or grey and the page white.
fn plot_pixels(png_path: &Path) -> (usize, usize) {
    let dec = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(png_path).expect("screenshot")));
    let mut reader = dec.read_info().expect("a PNG");
    let mut buf = vec![0; reader.output_buffer_size().expect("size")];
    let info = reader.next_frame(&mut buf).expect("a frame");
    let step = match info.color_type {
        png::ColorType::Rgba => 4,
        png::ColorType::Rgb => 3,
        t => panic!("unexpected colour type {t:?}"),
    };
    let px = &buf[..info.buffer_size()];
    let coloured = px
        .chunks(step)
        .filter(|p| {
            let (max, min) = (p[..3].iter().max().unwrap(), p[..3].iter().min().unwrap());
            max - min > 60
        })
        .count();
    (coloured, px.len() / step)
}

/// The report of the README's sample in headless chromium: no console message, the
/// DOM keeps every plot, and a screenshot (kept in the test's directory, printed) shows
/// them: coloured pixels cover a good part of it and vanish with the SVG and legends
/// hidden.
#[test]
fn the_report_renders_in_chromium_without_errors_and_shows_the_plots() {
    if !chromium_ready() {
        return;
    }
    let d = tempdir("rep-chromium");
    let pcap = d.join("sample.pcap");
    assert!(tapstat(&["synth", "-o", pcap.to_str().unwrap()]).status.success());
    let out = d.join("out");
    analyze(&pcap, &out, 1, &[]);
    assert!(tapstat(&["report", out.to_str().unwrap()]).status.success());
    let page = out.join("report.html");
    let html = std::fs::read_to_string(&page).unwrap();
    let profile = d.join("profile");
    // The detector sees an error when there is one.
    let bad = d.join("bad.html");
    std::fs::write(&bad, "<html><body><script>console.error('x'); nope();</script></body></html>").unwrap();
    let (_, log) = chromium(&bad, &profile, &["--dump-dom"]);
    assert!(!console_errors(&log).is_empty(), "the console check sees nothing: {log}");
    // The report: no console message, and the DOM chromium built has every plot.
    let (dom, log) = chromium(&page, &profile, &["--dump-dom"]);
    assert!(console_errors(&log).is_empty(), "console: {:#?}", console_errors(&log));
    let dom = String::from_utf8_lossy(&dom);
    assert_eq!(dom.matches("<svg").count(), html.matches("<svg").count(), "the DOM lost plots");
    assert!(dom.contains("<path") && dom.contains("<rect"), "no plots in the DOM");
    // A screenshot: the plots' colours cover a good part of it...
    let shot = out.join("report.png");
    let size = "--window-size=1400,3000";
    let (_, log) = chromium(&page, &profile, &[size, &format!("--screenshot={}", shot.display())]);
    assert!(console_errors(&log).is_empty(), "console: {:#?}", console_errors(&log));
    let (coloured, total) = plot_pixels(&shot);
    assert!(total >= 1400 * 3000, "screenshot of {total} pixels");
    assert!(coloured * 100 > total * 3, "plots cover {coloured} of {total} pixels");
    // ...and they are the plots': the same page with its SVG and legends hidden has
    // none of them.
    let hidden = d.join("hidden.html");
    std::fs::write(&hidden, html.replacen("<style>", "<style>svg,.legend{visibility:hidden}", 1)).unwrap();
    let shot2 = d.join("hidden.png");
    chromium(&hidden, &profile, &[size, &format!("--screenshot={}", shot2.display())]);
    let (coloured2, _) = plot_pixels(&shot2);
    assert!(coloured2 * 1000 < total, "{coloured2} coloured pixels without the plots");
    // The page and its screenshot stay in the tests' directory under target/, to be
    // looked at.
    let keep = Path::new(env!("CARGO_TARGET_TMPDIR"));
    for (from, to) in [(&shot, "report-sample.png"), (&page, "report-sample.html")] {
        std::fs::copy(from, keep.join(to)).expect("a copy under target/");
    }
    println!("report screenshot: {}", keep.join("report-sample.png").display());
}

/// Logs written with `--compress zstd|gzip` (TSV or JSON lines) give the report of the
/// uncompressed logs: only the names of the files read differ.
#[test]
#[cfg_attr(not(tapstat_corpus), ignore = "needs the capture corpus (../shared/pcaps/dev or TAPSTAT_CORPUS)")]
fn compressed_logs_give_the_same_report() {
    let Some(corpus) = corpus() else { return };
    let cap = corpus.join("ndpi__1kxun.pcap");
    let report = |tag: &str, extra: &[&str]| {
        let d = tempdir(tag);
        analyze(&cap, &d, 1, &[&["--histo-interval", "60"], extra].concat());
        let o = tapstat(&["report", d.to_str().unwrap()]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let html = std::fs::read_to_string(d.join("report.html")).expect("report.html");
        let _ = std::fs::remove_dir_all(&d);
        // The list of files read, and the directory's name, are the only differences.
        let at = html.find("flow record(s) in ").expect("the records' note") + "flow record(s) in ".len();
        let end = at + html[at..].find('<').unwrap();
        (
            html[..at].replace(d.to_str().unwrap(), "DIR") + &html[end..].replace(d.to_str().unwrap(), "DIR"),
            html[at..end].to_string(),
        )
    };
    let (plain, files) = report("rep-plain", &[]);
    assert!(files.contains("log_tcp_complete"), "{files}");
    for (tag, extra, ext) in [
        ("rep-zst", &["--compress", "zstd"][..], "log_tcp_complete.zst"),
        ("rep-gz", &["--compress", "gzip", "--format", "jsonl"][..], "log_tcp_complete.jsonl.gz"),
    ] {
        let (html, files) = report(tag, extra);
        assert!(files.contains(ext), "{tag}: read {files}");
        assert!(html == plain, "{tag}: the report differs from the uncompressed logs'");
    }
}

/// `report -o PATH` opens the path the user names as it is: an existing regular file
/// is overwritten in place (its inode and mode kept, as `cp` does), a new one is
/// created; a path that exists and is not a regular file (here a FIFO, and a
/// symbolic link to a file) is refused in one line and left as it was, never unlinked
/// and replaced (as root, `-o /dev/null` replaced the device with a file).
#[test]
fn report_o_overwrites_a_regular_file_and_refuses_anything_else() {
    use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
    let d = tempdir("rep-o");
    let cfg = tapstat_lab::synth::SynthConfig {
        seed: 5,
        tcp_flows: 5,
        udp_dns_flows: 5,
        bulk_flows: 0,
        ..Default::default()
    };
    let pcap = d.join("small.pcap");
    std::fs::write(&pcap, tapstat_lab::synth::synthesize(&cfg).0).unwrap();
    let out = d.join("out");
    analyze(&pcap, &out, 1, &[]);
    let report = |to: &Path| tapstat(&["report", out.to_str().unwrap(), "-o", to.to_str().unwrap()]);

    let fifo = d.join("fifo");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path; the result is checked.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    let o = report(&fifo);
    assert!(!o.status.success());
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        format!("tapstat: error: report: {} is not a regular file\n", fifo.display())
    );
    assert!(std::fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo(), "the FIFO was replaced");

    let target = d.join("precious.html");
    std::fs::write(&target, "precious\n").unwrap();
    let link = d.join("link.html");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let o = report(&link);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("is not a regular file") && err.lines().count() == 1, "{err}");
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink(), "the link was replaced");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "precious\n");

    let page = d.join("page.html");
    std::fs::write(&page, "x".repeat(1 << 20)).unwrap();
    std::fs::set_permissions(&page, std::fs::Permissions::from_mode(0o600)).unwrap();
    let ino = std::fs::metadata(&page).unwrap().ino();
    let o = report(&page);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let m = std::fs::metadata(&page).unwrap();
    assert_eq!((m.ino(), m.mode() & 0o777), (ino, 0o600), "overwritten in place");
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("<html") && !html.contains("xxxx"), "the old content is gone");

    let fresh = d.join("fresh.html");
    assert!(report(&fresh).status.success());
    assert!(std::fs::read_to_string(&fresh).unwrap().contains("<html"));
}
