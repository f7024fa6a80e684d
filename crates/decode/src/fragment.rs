//! Bounded table of IP datagrams whose first fragment was seen. (To be written.)
