//! Reads captures and prints what the reader saw and how fast: a quick check of
//! the reader alone, without the rest of the pipeline.
//!
//! `cargo run --release -p tapstat-capture --example capcount -- FILE... [-]`

use std::time::Instant;

use tapstat_capture::{open_files, PacketSource};

fn main() {
    let paths: Vec<std::path::PathBuf> = std::env::args_os().skip(1).map(Into::into).collect();
    let mut src = match open_files(&paths) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("capcount: {e}");
            std::process::exit(2);
        }
    };
    let t = Instant::now();
    // Touch every captured byte, as a consumer would, so the mmap pages are read.
    let mut sum = 0u64;
    while let Some(chunk) = src.next_chunk(1024).unwrap_or_else(|e| {
        eprintln!("capcount: {e}");
        std::process::exit(1)
    }) {
        for f in &chunk.frames {
            sum = sum.wrapping_add(chunk.data(f).iter().map(|&b| u64::from(b)).sum::<u64>());
        }
    }
    let secs = t.elapsed().as_secs_f64();
    for w in src.take_warnings() {
        eprintln!("warning: {w}");
    }
    let s = src.stats();
    let p = src.progress();
    println!(
        "{} frames, {} wire bytes, {} input bytes in {:.3} s: {:.1} Mframes/s, {:.0} MB/s (checksum {sum})",
        s.frames,
        s.wire_bytes,
        p.bytes_read,
        secs,
        s.frames as f64 / secs / 1e6,
        p.bytes_read as f64 / secs / 1e6
    );
    println!("{s:?}");
}
