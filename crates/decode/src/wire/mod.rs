//! Zero-copy header views. (To be written.)
