// The build scripts of the crates whose tests read the capture corpus include this
// file. Where the corpus is there, it sets `--cfg tapstat_corpus`; the corpus tests
// carry `#[cfg_attr(not(tapstat_corpus), ignore = "...")]`, so without the corpus they
// show as `ignored` in the test output (with the reason) instead of passing in 0.00 s.
// With TAPSTAT_REQUIRE_CORPUS=1 (CI) a missing corpus stops the build.
//
// Rerunning: only when TAPSTAT_CORPUS or TAPSTAT_REQUIRE_CORPUS change, or when the
// corpus's MANIFEST.tsv changes while it exists. A path that does not exist is never
// named to cargo: cargo treats a missing `rerun-if-changed` path as changed on every
// build, so a clone without the corpus rebuilt the whole workspace on each cargo command.
// A corpus that appears later is picked up by setting TAPSTAT_CORPUS (or `cargo clean`).

fn main() {
    println!("cargo:rustc-check-cfg=cfg(tapstat_corpus)");
    println!("cargo:rerun-if-env-changed=TAPSTAT_CORPUS");
    println!("cargo:rerun-if-env-changed=TAPSTAT_REQUIRE_CORPUS");
    let dir = std::env::var_os("TAPSTAT_CORPUS").map(std::path::PathBuf::from).unwrap_or_else(|| {
        std::path::PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"))
            .join("../../../shared/pcaps/dev")
    });
    let manifest = dir.join("MANIFEST.tsv");
    if manifest.is_file() {
        println!("cargo:rerun-if-changed={}", manifest.display());
        println!("cargo:rustc-cfg=tapstat_corpus");
    } else if std::env::var("TAPSTAT_REQUIRE_CORPUS").as_deref() == Ok("1") {
        panic!("TAPSTAT_REQUIRE_CORPUS=1 but there is no corpus at {} (set TAPSTAT_CORPUS)", dir.display());
    }
    // Without the corpus, nothing is said here: cargo would repeat the warning on every
    // command (the README's first one included); each ignored test names the reason.
}
