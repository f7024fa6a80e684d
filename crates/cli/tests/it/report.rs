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

#[test]
#[cfg_attr(not(tapstat_corpus), ignore = "needs the capture corpus (../shared/pcaps/dev or TAPSTAT_CORPUS)")]
fn the_report_is_self_contained_and_shows_every_part() {
    let Some((d, html)) = run_and_report("rep", "60") else { return };
    // Nothing to load: no script, no external resource (the icon is an empty data URL).
    assert!(!html.contains("<script"), "the page has a script");
    assert!(!html.contains("src="), "the page loads something");
    for (i, _) in html.match_indices("href=") {
        assert!(html[i..].starts_with("href=\"data:"), "a link: {}", &html[i..i + 60]);
    }
    assert!(!html.contains("url("), "CSS loads something");
    // Every part: 2 column charts and a heat map per family, 3 top lists, 3
    // distributions, 3 health charts; all drawn but those with nothing to show (this
    // run has no anomaly).
    assert_eq!(html.matches("<figure>").count(), 2 + 14 + 3 + 3 + 3);
    let svgs = html.matches("<svg").count();
    assert_eq!(svgs + html.matches("nothing to show").count(), 2 + 14 + 3 + 3 + 3);
    assert!(svgs >= 2 + 14 + 3 + 3 + 2, "{svgs} plots");
    for id in ["id=histograms", "id=traffic", "id=tcp", "id=health"] {
        assert!(html.contains(id), "{id}");
    }
    for f in ["ip_len", "ttl", "ip_proto", "tcp_port", "udp_duration_ms", "tcp_rtt_s_ms", "app"] {
        assert!(html.contains(&format!("<figcaption>{f} (")), "{f}");
    }
    // The top lists come from the logs: the application with the most bytes and the
    // busiest server name are there.
    let recs: Vec<_> = LOGS.iter().flat_map(|l| read_log(&d, l)).collect();
    let mut by_app = std::collections::BTreeMap::<String, u64>::new();
    for r in &recs {
        let b: u64 = ["c_bytes_all", "s_bytes_all"].iter().map(|c| r[*c].parse::<u64>().unwrap_or(0)).sum();
        *by_app.entry(r.get("app").cloned().unwrap_or_default()).or_default() += b;
    }
    let (top_app, _) = by_app.iter().max_by_key(|x| x.1).unwrap();
    assert!(html.contains(&format!(">{top_app}</text>")), "top application {top_app}");
    let sni = recs.iter().find_map(|r| r.get("c_tls_SNI").filter(|v| *v != "-")).expect("a TLS name");
    assert!(html.contains(sni.as_str()), "{sni}");
    // The health table says what summary.json says.
    let s = summary(&d);
    let frames = s["packets"].as_u64().unwrap();
    assert!(html.contains(&format!("<th>frames read</th><td>{}</td>", group(frames))), "frames");
    // Without histograms the page says so, and still has the rest.
    let (d2, html2) = run_and_report("rep-off", "off").unwrap();
    assert!(html2.contains("No histograms.tsv"));
    assert!(html2.contains("id=health"));
    let _ = std::fs::remove_dir_all(&d);
    let _ = std::fs::remove_dir_all(&d2);
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

/// Pixels of the plots' blues (bars and the darker half of the heat maps' ramp) in a
/// PNG screenshot; text is black or grey and the page white.
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
    let blue = px.chunks(step).filter(|p| p[2] as i32 - p[0] as i32 > 60 && p[2] > 100).count();
    (blue, px.len() / step)
}

#[test]
#[cfg_attr(not(tapstat_corpus), ignore = "needs the capture corpus (../shared/pcaps/dev or TAPSTAT_CORPUS)")]
fn the_report_renders_in_chromium_without_errors_and_shows_the_plots() {
    if !chromium_ready() {
        return;
    }
    let Some((d, html)) = run_and_report("rep-chromium", "60") else { return };
    let page = d.join("report.html");
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
    assert!(dom.contains("<rect"), "no bars in the DOM");
    // A screenshot: the plots' blues cover a good part of it...
    let shot = d.join("shot.png");
    let size = "--window-size=1200,2400";
    let (_, log) = chromium(&page, &profile, &[size, &format!("--screenshot={}", shot.display())]);
    assert!(console_errors(&log).is_empty(), "console: {:#?}", console_errors(&log));
    let (blue, total) = plot_pixels(&shot);
    assert!(total >= 1200 * 2400, "screenshot of {total} pixels");
    assert!(blue * 100 > total * 3, "plots cover {blue} of {total} pixels");
    // ...and they are the plots': the same page with its SVG hidden has none of them.
    let hidden = d.join("hidden.html");
    std::fs::write(&hidden, html.replacen("<style>", "<style>svg{visibility:hidden}", 1)).unwrap();
    let shot2 = d.join("shot2.png");
    chromium(&hidden, &profile, &[size, &format!("--screenshot={}", shot2.display())]);
    let (blue2, _) = plot_pixels(&shot2);
    assert!(blue2 * 1000 < total, "{blue2} blue pixels without the plots");
    let _ = std::fs::remove_dir_all(&d);
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
