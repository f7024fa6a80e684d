//! tcpdump-style filter expressions compiled to classic BPF by libpcap.
//!
//! libpcap is loaded at run time (`dlopen` of libpcap.so.0.8, the soname Debian and
//! most distributions ship), so the build needs no libpcap headers and a run without
//! `-f` needs no libpcap at all. Only `pcap_open_dead`, `pcap_compile`,
//! `pcap_geterr`, `pcap_freecode` and `pcap_close` are used: the expression is
//! compiled for the interface's link type and the program is attached to the
//! sockets with `SO_ATTACH_FILTER`, where the kernel runs it before the ring.

use super::LiveError;
use crate::LinkType;
use std::ffi::{c_char, c_int, c_uint, c_void, CStr, CString};

/// A classic BPF program, ready for `SO_ATTACH_FILTER`.
#[derive(Clone, Debug)]
pub struct BpfProgram {
    pub insns: Vec<libc::sock_filter>,
}

impl BpfProgram {
    /// `ret #0`: accepts nothing.
    pub fn drop_all() -> BpfProgram {
        BpfProgram { insns: vec![libc::sock_filter { code: 0x06, jt: 0, jf: 0, k: 0 }] }
    }
}

/// libpcap's `struct bpf_program`; its `struct bpf_insn` has the layout of
/// `sock_filter` (u16 code, u8 jt, u8 jf, u32 k).
#[repr(C)]
struct PcapProgram {
    bf_len: c_uint,
    bf_insns: *mut libc::sock_filter,
}

type OpenDead = unsafe extern "C" fn(c_int, c_int) -> *mut c_void;
type Compile = unsafe extern "C" fn(*mut c_void, *mut PcapProgram, *const c_char, c_int, u32) -> c_int;
type GetErr = unsafe extern "C" fn(*mut c_void) -> *mut c_char;
type FreeCode = unsafe extern "C" fn(*mut PcapProgram);
type Close = unsafe extern "C" fn(*mut c_void);

const SONAMES: [&CStr; 3] = [c"libpcap.so.0.8", c"libpcap.so.1", c"libpcap.so"];
const PCAP_NETMASK_UNKNOWN: u32 = 0xffff_ffff;

/// The `DLT_*` value `pcap_open_dead` wants for a `LINKTYPE_*` value. They are the
/// same number except for the few whose DLT differs between systems, for which
/// pcap files use numbers of their own (libpcap's pcap-common.c, `linktype_to_dlt`):
/// raw IP is LINKTYPE 101 in files and DLT 12 on Linux (without this, `-f` on a raw
/// IP capture or a TUN interface fails with "unknown data link type 101").
fn dlt_of(link: LinkType) -> c_int {
    match link.0 {
        100 => 11, // LINKTYPE_ATM_RFC1483 → DLT_ATM_RFC1483
        101 => 12, // LINKTYPE_RAW → DLT_RAW
        n => n as c_int,
    }
}

/// Compiles `expr` for frames of `link` with libpcap's optimizer.
pub fn compile_filter(expr: &str, link: LinkType) -> Result<BpfProgram, LiveError> {
    let fail = |reason: String| LiveError::Filter { expr: expr.to_string(), reason };
    let cexpr = CString::new(expr).map_err(|_| fail("contains a NUL byte".into()))?;
    // SAFETY: dlopen with valid C strings; the handle is checked. The library stays
    // loaded for the life of the process (never dlclosed), so the symbols stay valid.
    let lib = SONAMES
        .iter()
        .map(|n| unsafe { libc::dlopen(n.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) })
        .find(|h| !h.is_null());
    let Some(lib) = lib else {
        return Err(fail(
            "filters need libpcap (libpcap.so.0.8), which is not installed: apt-get install libpcap0.8".into(),
        ));
    };
    let sym = |name: &CStr| {
        // SAFETY: `lib` is a live handle and `name` a valid C string.
        let p = unsafe { libc::dlsym(lib, name.as_ptr()) };
        if p.is_null() {
            Err(fail(format!("libpcap has no {}", name.to_string_lossy())))
        } else {
            Ok(p)
        }
    };
    // SAFETY: each symbol is the libpcap function of that name, whose C signature is
    // the one the type declares (pcap/pcap.h).
    let (open_dead, compile, geterr, freecode, close) = unsafe {
        (
            std::mem::transmute::<*mut c_void, OpenDead>(sym(c"pcap_open_dead")?),
            std::mem::transmute::<*mut c_void, Compile>(sym(c"pcap_compile")?),
            std::mem::transmute::<*mut c_void, GetErr>(sym(c"pcap_geterr")?),
            std::mem::transmute::<*mut c_void, FreeCode>(sym(c"pcap_freecode")?),
            std::mem::transmute::<*mut c_void, Close>(sym(c"pcap_close")?),
        )
    };
    // SAFETY: the libpcap calls are made as documented: a dead handle is opened,
    // used for one compile, and closed; the program is copied out before
    // pcap_freecode releases it; the error string is copied before pcap_close.
    unsafe {
        let p = open_dead(dlt_of(link), 262_144);
        if p.is_null() {
            return Err(fail("pcap_open_dead failed".into()));
        }
        let mut prog = PcapProgram { bf_len: 0, bf_insns: std::ptr::null_mut() };
        let rc = compile(p, &mut prog, cexpr.as_ptr(), 1, PCAP_NETMASK_UNKNOWN);
        let result = if rc != 0 {
            Err(fail(CStr::from_ptr(geterr(p)).to_string_lossy().into_owned()))
        } else if prog.bf_len == 0 || prog.bf_len > u16::MAX as c_uint || prog.bf_insns.is_null() {
            freecode(&mut prog);
            Err(fail(format!("compiled to {} instructions", prog.bf_len)))
        } else {
            let insns = std::slice::from_raw_parts(prog.bf_insns, prog.bf_len as usize).to_vec();
            freecode(&mut prog);
            Ok(BpfProgram { insns })
        };
        close(p);
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn libpcap_present() -> bool {
        // SAFETY: dlopen with a valid C string; the handle is only tested.
        SONAMES.iter().any(|n| !unsafe { libc::dlopen(n.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) }.is_null())
    }

    #[test]
    fn compiles_a_port_filter_and_rejects_nonsense() {
        if !libpcap_present() {
            eprintln!("skipped: libpcap.so.0.8 is not installed");
            return;
        }
        let p = compile_filter("tcp port 443", LinkType::ETHERNET).expect("compiles");
        assert!(p.insns.len() > 4);
        // The last instructions are the accept and reject returns.
        assert!(p.insns.iter().any(|i| i.code == 0x06 && i.k == 0));
        let e = compile_filter("tcp port banana", LinkType::ETHERNET).unwrap_err();
        assert!(e.to_string().contains("banana"), "{e}");
    }
}
