//! With the `dpdk` feature: compiles csrc/shim.c with the flags of
//! `pkg-config --cflags --libs libdpdk` and links the DPDK libraries it names.
//! Without it: nothing (the default build needs no DPDK).

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    #[cfg(feature = "dpdk")]
    shim::build();
}

#[cfg(feature = "dpdk")]
mod shim {
    use std::process::Command;

    fn pkg_config(arg: &str) -> Vec<String> {
        let out = Command::new("pkg-config").args([arg, "libdpdk"]).output();
        match out {
            Ok(o) if o.status.success() => {
                String::from_utf8_lossy(&o.stdout).split_whitespace().map(str::to_string).collect()
            }
            Ok(o) => panic!(
                "`pkg-config {arg} libdpdk` failed: {}: the `dpdk` feature needs DPDK 22.11's development files \
                 (apt-get install libdpdk-dev)",
                String::from_utf8_lossy(&o.stderr).trim()
            ),
            Err(e) => panic!("cannot run pkg-config ({e}): the `dpdk` feature needs pkg-config and libdpdk-dev"),
        }
    }

    pub fn build() {
        println!("cargo:rerun-if-changed=csrc/shim.c");
        println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");
        let mut b = cc::Build::new();
        b.file("csrc/shim.c").warnings(true).extra_warnings(true);
        for f in pkg_config("--cflags") {
            b.flag(&f);
        }
        b.compile("tapstat_dpdk_shim");
        for f in pkg_config("--libs") {
            if let Some(lib) = f.strip_prefix("-l") {
                println!("cargo:rustc-link-lib=dylib={lib}");
            } else if let Some(dir) = f.strip_prefix("-L") {
                println!("cargo:rustc-link-search=native={dir}");
            }
            // -Wl,--as-needed: rustc links that way already.
        }
    }
}
