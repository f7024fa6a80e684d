//! pcap and pcapng files, memory-mapped; `-` is stdin. (To be written.)
use super::*;

pub struct FileSource {}

pub fn open_files(_paths: &[PathBuf]) -> Result<FileSource, CaptureError> {
    todo!()
}
