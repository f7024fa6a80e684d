//! `tapstat man DIR`: the manual pages, made from the flags' definitions by clap_mangen,
//! so that every flag, its range and its default are documented where they are defined.
//! docs/man holds the pages of this version; a test checks they are current.

use anyhow::{Context, Result};
use clap::CommandFactory;
use std::path::Path;

/// The pages: (file name, roff text), `tapstat.1` first, then one per subcommand.
pub fn pages() -> Result<Vec<(String, Vec<u8>)>> {
    let cmd = crate::args::Cli::command();
    let mut v = Vec::new();
    let mut page = |name: String, c: clap::Command| -> Result<()> {
        let mut out = Vec::new();
        clap_mangen::Man::new(c).render(&mut out).with_context(|| format!("rendering {name}"))?;
        v.push((name, out));
        Ok(())
    };
    page("tapstat.1".into(), cmd.clone())?;
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set() && s.get_name() != "help") {
        let name = format!("tapstat-{}", sub.get_name());
        page(format!("{name}.1"), sub.clone().name(name).version(env!("CARGO_PKG_VERSION")))?;
    }
    Ok(v)
}

/// Writes the pages into `dir` (created if missing); answers how many.
pub fn write(dir: &Path) -> Result<usize> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let pages = pages()?;
    for (name, text) in &pages {
        let p = dir.join(name);
        std::fs::write(&p, text).with_context(|| format!("writing {}", p.display()))?;
    }
    Ok(pages.len())
}

#[cfg(test)]
mod tests {
    /// docs/man is what `tapstat man docs/man` writes now: a flag changed without its
    /// page fails here (regenerate with `cargo run -- man docs/man`).
    #[test]
    fn the_committed_manual_pages_are_current() {
        let dir = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/man"));
        let pages = super::pages().expect("the pages render");
        assert!(pages.len() >= 5, "tapstat.1 and a page per command");
        for (name, text) in &pages {
            let committed = std::fs::read(dir.join(name)).unwrap_or_default();
            assert!(committed == *text, "docs/man/{name} is not current: regenerate with `cargo run -- man docs/man`");
        }
        let files = std::fs::read_dir(dir).expect("docs/man exists").count();
        assert_eq!(files, pages.len(), "docs/man has a page no command makes");
    }

    /// Every visible flag of the main command is on the main page, with its range where
    /// its help gives one.
    #[test]
    fn the_main_page_documents_every_visible_flag() {
        let pages = super::pages().unwrap();
        let main = String::from_utf8(pages[0].1.clone()).unwrap();
        let cmd = <crate::args::Cli as clap::CommandFactory>::command();
        for a in cmd.get_arguments().filter(|a| !a.is_hide_set()) {
            if let Some(l) = a.get_long() {
                assert!(main.contains(&format!("\\-\\-{}", l.replace('-', "\\-"))), "--{l} is not on tapstat.1");
            }
        }
        assert!(main.contains("[1..=2^64\\-1; files only]"), "ranges are kept");
    }
}
