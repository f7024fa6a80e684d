// The build scripts of the crates whose tests read the capture corpus include this
// file. Where the corpus is there, it sets `--cfg tapstat_corpus`; the corpus tests
// carry `#[cfg_attr(not(tapstat_corpus), ignore = "...")]`, so without the corpus they
// show as `ignored` in the test output (with the reason) instead of passing in 0.00 s.
// With TAPSTAT_REQUIRE_CORPUS=1 (CI) a missing corpus stops the build.

fn main() {
    println!("cargo:rustc-check-cfg=cfg(tapstat_corpus)");
    println!("cargo:rerun-if-env-changed=TAPSTAT_CORPUS");
    println!("cargo:rerun-if-env-changed=TAPSTAT_REQUIRE_CORPUS");
    let dir = std::env::var_os("TAPSTAT_CORPUS").map(std::path::PathBuf::from).unwrap_or_else(|| {
        std::path::PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"))
            .join("../../../shared/pcaps/dev")
    });
    let manifest = dir.join("MANIFEST.tsv");
    // Rebuild when the corpus appears or goes (a path that does not exist is checked
    // on every build).
    println!("cargo:rerun-if-changed={}", manifest.display());
    if manifest.is_file() {
        println!("cargo:rustc-cfg=tapstat_corpus");
    } else if std::env::var("TAPSTAT_REQUIRE_CORPUS").as_deref() == Ok("1") {
        panic!("TAPSTAT_REQUIRE_CORPUS=1 but there is no corpus at {} (set TAPSTAT_CORPUS)", dir.display());
    } else {
        println!("cargo:warning=no capture corpus at {}: its tests are ignored (set TAPSTAT_CORPUS)", dir.display());
    }
}
