//! The output directory as a hostile or careless world leaves it: planted
//! links, earlier runs' files, concurrent runs, a full disk.

use crate::common::*;

fn small_sample(dir: &std::path::Path) -> std::path::PathBuf {
    synth_sample(dir, 5, 20, 10)
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
    // A name like a log is an earlier run's output: refused without --force.
    let o = tapstat(&["-r", pcap.to_str().unwrap(), "-o", out.to_str().unwrap(), "-q"]);
    assert!(!o.status.success());
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "root:x:0:0\n");
    analyze(&pcap, &out, 1, &["--force"]);
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "root:x:0:0\n");
    let m = std::fs::symlink_metadata(out.join("log_tcp_complete")).unwrap();
    assert!(m.file_type().is_file());
    assert_eq!(read_log(&out, "log_tcp_complete").len(), 20);
    std::fs::remove_dir_all(&d).unwrap();
}

/// A rerun into a directory holding an earlier run's output is refused, and leaves
/// that output as it was; `--force` removes tapstat's own files first (the earlier
/// run's JSON lines logs do not survive beside the new TSV ones) and nothing else.
#[test]
fn a_rerun_needs_force_and_force_removes_only_tapstats_files() {
    let d = tempdir("rerun");
    let pcap = small_sample(&d);
    let out = d.join("out");
    analyze(&pcap, &out, 1, &["--format", "jsonl", "--periodic", "1"]);
    std::fs::write(out.join("notes.txt"), "mine\n").unwrap();
    let before = std::fs::read(out.join("log_tcp_complete.jsonl")).unwrap();
    let o = tapstat(&["-r", pcap.to_str().unwrap(), "-o", out.to_str().unwrap(), "-q"]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("holds the output of an earlier run") && err.contains("--force"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert_eq!(std::fs::read(out.join("log_tcp_complete.jsonl")).unwrap(), before);
    assert!(!out.join("log_tcp_complete").exists());
    analyze(&pcap, &out, 1, &["--force"]);
    let mut names: Vec<String> =
        std::fs::read_dir(&out).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    assert_eq!(
        names,
        [
            ".tapstat.lock",
            "histograms.tsv",
            "log_dns_complete",
            "log_http_complete",
            "log_other",
            "log_tcp_complete",
            "log_tcp_nocomplete",
            "log_udp_complete",
            "notes.txt",
            "summary.json"
        ]
    );
    assert_eq!(std::fs::read_to_string(out.join("notes.txt")).unwrap(), "mine\n");
    std::fs::remove_dir_all(&d).unwrap();
}

/// The names in directory `d`, sorted.
fn names_in(d: &std::path::Path) -> Vec<String> {
    let mut v: Vec<String> =
        std::fs::read_dir(d).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    v.sort();
    v
}

/// `--force` removes the exact names tapstat writes, nothing merely like them: a
/// file or directory that starts with `log_`, or a directory of an interval name's
/// length that starts with a digit, is the user's and survives; tapstat's own earlier
/// output (another format's logs, a `--rotate` run's interval directories) is replaced.
#[test]
fn force_leaves_names_only_like_tapstats_alone() {
    let d = tempdir("force-like");
    let pcap = small_sample(&d);
    let out = d.join("out");
    analyze(&pcap, &out, 1, &["--format", "jsonl", "--rotate", "1m"]);
    let intervals: Vec<String> = names_in(&out).into_iter().filter(|n| n.ends_with(".out")).collect();
    assert!(!intervals.is_empty(), "{:?}", names_in(&out));
    std::fs::write(out.join("log_book.txt"), "mine\n").unwrap();
    std::fs::create_dir(out.join("log_archive")).unwrap();
    std::fs::write(out.join("log_archive/2025.tsv"), "old\n").unwrap();
    std::fs::create_dir(out.join("1999_backup_data.out")).unwrap();
    std::fs::write(out.join("1999_backup_data.out/data"), "keep\n").unwrap();
    analyze(&pcap, &out, 1, &["--force"]);
    assert_eq!(std::fs::read_to_string(out.join("log_book.txt")).unwrap(), "mine\n");
    assert_eq!(std::fs::read_to_string(out.join("log_archive/2025.tsv")).unwrap(), "old\n");
    assert_eq!(std::fs::read_to_string(out.join("1999_backup_data.out/data")).unwrap(), "keep\n");
    // The earlier run's output is gone (its interval directories, its JSON lines
    // logs), the new run's is there.
    for i in &intervals {
        assert!(!out.join(i).exists(), "{i} survived --force");
    }
    assert!(!out.join("log_tcp_complete.jsonl").exists());
    assert_eq!(read_log(&out, "log_tcp_complete").len(), 20);
    std::fs::remove_dir_all(&d).unwrap();
}

/// An interval directory (a name of `--rotate`'s) holding something tapstat does not
/// write is not removed by `--force`: the run refuses, in one line naming the entry,
/// before removing anything; once the entry is moved away, `--force` replaces the
/// earlier run's output.
#[test]
fn force_refuses_an_interval_directory_holding_a_foreign_entry() {
    let d = tempdir("force-foreign");
    let pcap = small_sample(&d);
    let out = d.join("out");
    analyze(&pcap, &out, 1, &["--rotate", "1m"]);
    let interval = names_in(&out).into_iter().find(|n| n.ends_with(".out")).expect("an interval directory");
    std::fs::write(out.join(&interval).join("notes.txt"), "mine\n").unwrap();
    let before = names_in(&out);
    let o = tapstat(&["-r", pcap.to_str().unwrap(), "-o", out.to_str().unwrap(), "-q", "--force"]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains(&format!("{interval}/notes.txt")) && err.contains("--force"), "{err}");
    assert_eq!(std::fs::read_to_string(out.join(&interval).join("notes.txt")).unwrap(), "mine\n");
    assert_eq!(names_in(&out), before, "nothing is removed before the refusal");
    // A directory of an interval's name tapstat never wrote, with a file: the same.
    std::fs::rename(out.join(&interval).join("notes.txt"), d.join("notes.txt")).unwrap();
    std::fs::create_dir(out.join("2001_02_03_04_05.out")).unwrap();
    std::fs::write(out.join("2001_02_03_04_05.out/data"), "keep\n").unwrap();
    let o = tapstat(&["-r", pcap.to_str().unwrap(), "-o", out.to_str().unwrap(), "-q", "--force"]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("2001_02_03_04_05.out/data"));
    assert_eq!(std::fs::read_to_string(out.join("2001_02_03_04_05.out/data")).unwrap(), "keep\n");
    std::fs::remove_dir_all(out.join("2001_02_03_04_05.out")).unwrap();
    analyze(&pcap, &out, 1, &["--force"]);
    assert!(!out.join(&interval).exists());
    assert_eq!(read_log(&out, "log_tcp_complete").len(), 20);
    std::fs::remove_dir_all(&d).unwrap();
}

/// A second run on a directory another run is writing to fails at once.
#[test]
fn a_concurrent_run_on_the_same_directory_fails_at_once() {
    use std::os::fd::AsRawFd;
    let d = tempdir("concurrent");
    let pcap = small_sample(&d);
    let out = d.join("out");
    std::fs::create_dir_all(&out).unwrap();
    // The test holds the lock as a running tapstat would.
    let lock = std::fs::OpenOptions::new().create(true).append(true).open(out.join(".tapstat.lock")).unwrap();
    // SAFETY: flock on an open descriptor.
    assert_eq!(unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) }, 0);
    let o = tapstat(&["-r", pcap.to_str().unwrap(), "-o", out.to_str().unwrap(), "-q"]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("another tapstat run is writing to this directory"), "{err}");
    assert!(!out.join("log_tcp_complete").exists(), "nothing may be written");
    drop(lock);
    // Released: the run goes ahead. (A child that another test forks in this process
    // shares the descriptor until it execs; wait out that instant.)
    for _ in 0..100 {
        let o = tapstat(&["-r", pcap.to_str().unwrap(), "-o", out.to_str().unwrap(), "-q"]);
        if o.status.success() {
            break;
        }
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("another tapstat run"), "{err}");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert_eq!(read_log(&out, "log_tcp_complete").len(), 20);
    std::fs::remove_dir_all(&d).unwrap();
}

/// summary.json says which tapstat ran, how, on what, with which options; a random
/// hash seed is not among the options.
#[test]
fn summary_records_version_command_line_inputs_and_options() {
    let d = tempdir("provenance");
    let pcap = small_sample(&d);
    let out = d.join("out");
    analyze(&pcap, &out, 1, &["--udp-timeout", "33"]);
    let s = summary(&out);
    assert_eq!(s["tapstat_version"], env!("CARGO_PKG_VERSION"));
    let argv: Vec<&str> = s["command_line"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    assert!(argv.windows(2).any(|w| w == ["--udp-timeout", "33"]), "{argv:?}");
    assert_eq!(s["inputs"], serde_json::json!([pcap.to_str().unwrap()]));
    // Every flag by name, typed: what the user typed and the defaults.
    let opts = &s["options"];
    assert_eq!(opts["udp-timeout"], 33, "{opts}");
    assert_eq!(opts["hash-seed"], 7, "{opts}");
    assert_eq!(opts["tcp-timeout"], 300, "{opts}");
    let out2 = d.join("out2");
    let o = tapstat(&["-r", pcap.to_str().unwrap(), "-o", out2.to_str().unwrap(), "-q"]);
    assert!(o.status.success());
    let s2 = summary(&out2);
    let opts = &s2["options"];
    assert!(opts.is_object() && opts.get("hash-seed").is_none(), "{opts}");
    // The seed the user gave is theirs to publish; a random one is published nowhere.
    assert_eq!(s["hash_seed"], 7);
    assert!(s2["hash_seed"].is_null(), "{}", s2["hash_seed"]);
    std::fs::remove_dir_all(&d).unwrap();
}

/// A flow hash that is not keyed (crc32: its collisions hold under every seed) is
/// chosen with a warning, on stderr at start-up and in summary.json; the default is not.
#[test]
fn an_unkeyed_flow_hash_warns() {
    let d = tempdir("unkeyed");
    let pcap = small_sample(&d);
    for (hash, warned) in [("crc32", true), ("toeplitz", true), ("foldhash", false), ("ahash", false)] {
        let out = d.join(hash);
        let o = tapstat(&["-r", pcap.to_str().unwrap(), "-o", out.to_str().unwrap(), "-q", "--flow-hash", hash]);
        assert!(o.status.success());
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(err.matches("is not keyed").count(), warned as usize, "{hash}: {err}");
        let w = summary(&out)["warnings"].to_string();
        assert_eq!(w.contains("is not keyed"), warned, "{hash}: {w}");
    }
    std::fs::remove_dir_all(&d).unwrap();
}

/// A killed run leaves no summary.json: an earlier run's is removed (`--force`)
/// before the run starts, and a run writes its own only at the end.
#[test]
fn a_killed_run_leaves_no_stale_summary() {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let d = tempdir("killed");
    let pcap = small_sample(&d);
    let out = d.join("out");
    analyze(&pcap, &out, 1, &[]);
    assert!(out.join("summary.json").exists());
    let mut child = Command::new(bin())
        .args(["-r", "-", "-o", out.to_str().unwrap(), "-q", "--force"])
        .stdin(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let bytes = std::fs::read(&pcap).unwrap();
    // The header and some records; the pipe stays open, so the run goes on.
    stdin.write_all(&bytes[..bytes.len() / 2]).unwrap();
    let mut waited = 0;
    while out.join("summary.json").exists() && waited < 600 {
        std::thread::sleep(std::time::Duration::from_millis(50));
        waited += 1;
    }
    assert!(child.try_wait().unwrap().is_none(), "the run must still be going when it is killed");
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(!out.join("summary.json").exists(), "a killed run must leave no summary");
    std::fs::remove_dir_all(&d).unwrap();
}

/// A write error (here EFBIG from a file size limit, as ENOSPC from a full disk)
/// stops the run with an error, and summary.json says what was lost.
#[test]
fn a_write_error_fails_the_run_and_the_summary_says_what_was_lost() {
    use std::os::unix::process::CommandExt;
    let d = tempdir("efbig");
    let pcap = small_sample(&d);
    let out = d.join("out");
    let mut cmd = std::process::Command::new(bin());
    cmd.args(["-r", pcap.to_str().unwrap(), "-o", out.to_str().unwrap(), "-q", "-w", "1"]);
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            // Logs larger than 16 KiB fail to write; the headers and summary.json fit.
            let lim = libc::rlimit { rlim_cur: 16 << 10, rlim_max: 16 << 10 };
            libc::setrlimit(libc::RLIMIT_FSIZE, &lim);
            // Without this the kernel kills the writer with SIGXFSZ.
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            Ok(())
        });
    }
    let o = cmd.output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("were not written"), "{err}");
    let s = summary(&out);
    assert!(s["write_error"].as_str().unwrap().contains("log_tcp_complete"), "{s}");
    let lost = s["records_not_written"].as_u64().unwrap();
    let tcp = s["records"]["log_tcp_complete"].as_u64().unwrap();
    assert!(lost > 0 && lost <= s["records"].as_object().unwrap().values().map(|v| v.as_u64().unwrap()).sum());
    assert!(tcp > 0);
    std::fs::remove_dir_all(&d).unwrap();
}

/// A refusal before any input is read: one line on stderr holding every one of
/// `wanted`, exit status 1, and no log written in `out`.
fn refused_at_once(o: &std::process::Output, out: &std::path::Path, wanted: &[&str]) {
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    for w in wanted {
        assert!(err.contains(w), "{w:?} not in {err}");
    }
    assert!(!out.join("log_tcp_complete").exists(), "the input was analyzed: {:?}", names_in(out));
}

/// A directory planted at `.summary.json.tmp` (the name summary.json is written
/// through) fails the run before any input is read, in one line naming it, not after
/// all the work.
#[test]
fn a_directory_at_the_summarys_temporary_name_is_refused_at_once() {
    let d = tempdir("summary-tmp-dir");
    let pcap = small_sample(&d);
    let out = d.join("out");
    std::fs::create_dir_all(out.join(".summary.json.tmp")).unwrap();
    let o = tapstat(&["-r", pcap.to_str().unwrap(), "-o", out.to_str().unwrap(), "-q"]);
    refused_at_once(&o, &out, &[".summary.json.tmp", "is a directory"]);
    // A regular file there (a killed run's) is no obstacle.
    std::fs::remove_dir(out.join(".summary.json.tmp")).unwrap();
    std::fs::write(out.join(".summary.json.tmp"), "{").unwrap();
    analyze(&pcap, &out, 1, &[]);
    assert!(!out.join(".summary.json.tmp").exists());
    assert_eq!(summary(&out)["records"]["log_tcp_complete"], 20);
}

/// `.tapstat.lock` that is not a regular file (a FIFO, a directory, a symbolic link)
/// is one clear line naming it and what it is, before any input is read.
#[test]
fn a_lock_that_is_not_a_regular_file_is_one_clear_line() {
    let d = tempdir("lock-kinds");
    let pcap = small_sample(&d);
    for (kind, what) in [("fifo", "is a FIFO"), ("dir", "is a directory"), ("link", "is a symbolic link")] {
        let out = d.join(kind);
        std::fs::create_dir_all(&out).unwrap();
        let lock = out.join(".tapstat.lock");
        match kind {
            "fifo" => {
                let c = std::ffi::CString::new(lock.to_str().unwrap()).unwrap();
                // SAFETY: a valid C string.
                assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
            }
            "dir" => std::fs::create_dir(&lock).unwrap(),
            _ => std::os::unix::fs::symlink(d.join("elsewhere"), &lock).unwrap(),
        }
        let o = tapstat_within(&["-r", pcap.to_str().unwrap(), "-o", out.to_str().unwrap(), "-q"], 60);
        refused_at_once(&o, &out, &[".tapstat.lock", what]);
    }
}

/// `-o` naming an existing file that is not a directory says so, not "File exists".
#[test]
fn an_output_that_is_a_file_is_one_clear_line() {
    let d = tempdir("out-is-file");
    let pcap = small_sample(&d);
    let out = d.join("out");
    std::fs::write(&out, "mine\n").unwrap();
    let o = tapstat(&["-r", pcap.to_str().unwrap(), "-o", out.to_str().unwrap(), "-q"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert_eq!(err.trim_end(), format!("tapstat: error: -o {}: exists and is not a directory", out.display()));
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "mine\n");
}

/// An option that needs another (clap's `requires`) names the missing one.
#[test]
fn an_option_that_needs_another_names_it() {
    for (args, missing) in [
        (&["--ipfix-domain", "5"][..], "--ipfix <HOST:PORT>"),
        (&["--anonymize-only", "internal"][..], "--anonymize <KEYFILE>"),
        (&["synth", "--flood-pps", "5"][..], "--flood <N>"),
        (&["schema", "--database", "x"][..], "--clickhouse"),
    ] {
        let o = tapstat(args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(missing), "{args:?}: {missing} not named in {err}");
    }
}

/// `-o` that is a symbolic link owned by another user (neither root nor the one
/// running tapstat), planted in a shared directory, is refused, not followed.
#[test]
fn an_output_link_owned_by_another_user_is_refused() {
    if !is_root() {
        eprintln!("skipped: giving a link to another user needs root");
        return;
    }
    let d = tempdir("out-link-owner");
    let pcap = small_sample(&d);
    let target = d.join("target");
    std::fs::create_dir(&target).unwrap();
    let out = d.join("out");
    std::os::unix::fs::symlink(&target, &out).unwrap();
    std::os::unix::fs::lchown(&out, Some(65534), Some(65534)).unwrap();
    let o = tapstat(&["-r", pcap.to_str().unwrap(), "-o", out.to_str().unwrap(), "-q"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("symbolic link") && err.contains("uid 65534"), "{err}");
    assert!(names_in(&target).is_empty(), "written through the link: {:?}", names_in(&target));
    // The same link, root's: followed, as a link given on the command line is.
    std::os::unix::fs::lchown(&out, Some(0), Some(0)).unwrap();
    analyze(&pcap, &out, 1, &[]);
    assert_eq!(read_log(&target, "log_tcp_complete").len(), 20);
}

/// A full disk (a 64 KiB tmpfs): the first line on stderr is the root cause, the write
/// that failed (its file and ENOSPC), with the number of records lost; what follows
/// (a file that cannot be written either) comes after. The logs hold whole records
/// only (the failed block is cut back off), those written and those lost add up to the
/// records summary.json counts, and no empty file is left behind.
#[test]
fn a_full_disk_reports_the_first_write_error_and_the_loss_first() {
    if !is_root() {
        eprintln!("skipped: mounting a small tmpfs needs root");
        return;
    }
    let d = tempdir("full-disk");
    let pcap = synth_sample(&d, 9, 1500, 300);
    let Some(_fs) = Tmpfs::mount(&d.join("mnt"), "64k") else { return };
    let out = d.join("mnt/out");
    let o = tapstat(&["-r", pcap.to_str().unwrap(), "-o", out.to_str().unwrap(), "-q", "-w", "1", "--hash-seed", "7"]);
    let (err, lost) = full_disk_failure(&o);
    // The failed block is cut back off the log: the space it took holds the
    // summary, which counts the records formatted (those written and those lost).
    let s = summary(&out);
    assert!(s["write_error"].as_str().unwrap().contains("No space left on device"), "{s}");
    assert_eq!(s["records_not_written"], lost);
    let total: u64 = s["records"].as_object().unwrap().values().map(|v| v.as_u64().unwrap()).sum();
    let written: u64 = LOGS.iter().chain(&L7_LOGS).map(|l| read_log(&out, l).len() as u64).sum();
    assert_eq!(written + lost, total, "written {written} + lost {lost}: {err}");
    for e in std::fs::read_dir(&out).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let len = e.metadata().unwrap().len();
        assert!(len > 0 || name == ".tapstat.lock", "{name} left empty: {err}");
        let text = std::fs::read(e.path()).unwrap();
        assert!(text.is_empty() || text.ends_with(b"\n"), "{name} ends in a cut record");
    }
    assert!(!out.join(".summary.json.tmp").exists(), "{err}");
    // A disk too full for the logs' headers: the run cannot start, and leaves no log
    // behind (they were left empty or with a header).
    drop(_fs);
    let Some(_fs) = Tmpfs::mount(&d.join("mnt"), "8k") else { return };
    let o = tapstat(&["-r", pcap.to_str().unwrap(), "-o", out.to_str().unwrap(), "-q", "-w", "1"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.lines().count() == 1 && err.contains("No space left on device"), "{err}");
    assert_eq!(names_in(&out), [".tapstat.lock"], "{err}");
}
