//! Packet-size and inter-arrival statistics, and the first packets of a flow: the
//! figures of NFStream's `statistical_analysis` and its "early" features (`splt_*`),
//! which traffic classifiers train on.
//!
//! Sums are kept as exact integers and turned into mean and standard deviation only
//! when the record is written: no division and no rounding on the packet path, and
//! none of the cancellation a float sum of squares suffers on long flows.

/// Count, sum, sum of squares, minimum and maximum of a series of integers.
#[derive(Clone, Copy, Debug)]
pub struct Moments {
    pub n: u64,
    pub sum: u64,
    pub sum_sq: u128,
    pub min: u64,
    pub max: u64,
}

impl Default for Moments {
    fn default() -> Self {
        Moments { n: 0, sum: 0, sum_sq: 0, min: u64::MAX, max: 0 }
    }
}

impl Moments {
    #[inline]
    pub fn add(&mut self, x: u64) {
        // Wrapping, not saturating: 2^64 packets or bytes do not happen, and the
        // packet path saves the branches.
        self.n = self.n.wrapping_add(1);
        self.sum = self.sum.wrapping_add(x);
        self.sum_sq = self.sum_sq.wrapping_add((x as u128) * (x as u128));
        self.min = self.min.min(x);
        self.max = self.max.max(x);
    }

    /// The moments of two series together (exact: sums add up).
    pub fn merge(&self, o: &Moments) -> Moments {
        Moments {
            n: self.n + o.n,
            sum: self.sum.wrapping_add(o.sum),
            sum_sq: self.sum_sq.wrapping_add(o.sum_sq),
            min: self.min.min(o.min),
            max: self.max.max(o.max),
        }
    }

    pub fn mean(&self) -> Option<f64> {
        (self.n > 0).then(|| to_f64(self.sum) / to_f64(self.n))
    }

    /// The sample standard deviation (n − 1 in the denominator, as NFStream's Welford
    /// update gives); 0 for a single value.
    pub fn std(&self) -> Option<f64> {
        match self.n {
            0 => None,
            1 => Some(0.0),
            n => {
                // n·Σx² − (Σx)² is exact in integers (and never negative), so the
                // variance is as precise as one float division can make it. In 64 bits
                // when it fits: the same integers, so the same floats, without the
                // library call a u128 to f64 conversion is.
                if let (Ok(sq), Ok(nn)) = (u64::try_from(self.sum_sq), u32::try_from(n)) {
                    if let (Some(a), Some(b)) = ((nn as u64).checked_mul(sq), self.sum.checked_mul(self.sum)) {
                        let num = a.saturating_sub(b);
                        return Some((to_f64(num) / to_f64(nn as u64 * (nn as u64 - 1))).sqrt());
                    }
                }
                let n = n as u128;
                let s = self.sum as u128;
                let num = n.saturating_mul(self.sum_sq).saturating_sub(s * s);
                Some((num as f64 / (n * (n - 1)) as f64).sqrt())
            }
        }
    }

    pub fn min(&self) -> Option<u64> {
        (self.n > 0).then_some(self.min)
    }

    pub fn max(&self) -> Option<u64> {
        (self.n > 0).then_some(self.max)
    }
}

/// Size and inter-arrival statistics of a flow: index 0 client to server, 1 server to
/// client, 2 both directions.
#[derive(Clone, Debug, Default)]
pub struct PktStats {
    /// Frame lengths on the wire (pcap `orig_len`), as NFStream's default accounting
    /// mode counts packet sizes; per direction only: both directions' are their merge
    /// ([`PktStats::size`]).
    pub size_dir: [Moments; 2],
    /// Gaps in µs between consecutive packets (of the direction, or of the flow).
    pub iat_us: [Moments; 3],
}

impl PktStats {
    /// Accounts a packet of `wire_len` bytes in direction `di`, `gap_dir_ns` after the
    /// direction's previous packet and `gap_ns` after the flow's (none for the first).
    #[inline]
    pub fn on_packet(&mut self, di: usize, wire_len: u32, gap_dir_ns: Option<u64>, gap_ns: Option<u64>) {
        self.size_dir[di].add(wire_len as u64);
        if let Some(g) = gap_dir_ns {
            self.iat_us[di].add(us(g));
        }
        if let Some(g) = gap_ns {
            self.iat_us[2].add(us(g));
        }
    }
}

impl PktStats {
    /// Size moments of direction `i` (0, 1) or of both (2).
    pub fn size(&self, i: usize) -> Moments {
        match i {
            0 | 1 => self.size_dir[i],
            _ => self.size_dir[0].merge(&self.size_dir[1]),
        }
    }
}

/// `x as f64`, through i64 where it fits: the same value (both round to nearest), in
/// one instruction instead of a dozen on x86-64.
#[inline(always)]
fn to_f64(x: u64) -> f64 {
    if x <= i64::MAX as u64 {
        x as i64 as f64
    } else {
        x as f64
    }
}

fn us(ns: u64) -> u64 {
    ns.saturating_add(500) / 1000
}

/// First packets kept inline, in the flow's state itself; `--first-n` beyond this
/// (the default is 10) keeps them on the heap.
pub const FIRST_INLINE: usize = 10;

/// The first packets of a flow: direction, size and gap to the flow's previous packet.
/// Up to [`FIRST_INLINE`] packets live inline (no allocation, and the cache lines of
/// the flow's state); a larger `--first-n` uses vectors that keep their capacity when
/// the state is recycled, so after warm-up the packet path does not allocate.
#[derive(Clone, Debug, Default)]
pub struct FirstPackets {
    len: u8,
    /// `c` (client to server) or `s` per packet.
    dirs: [u8; FIRST_INLINE],
    /// Frame lengths on the wire.
    sizes: [u32; FIRST_INLINE],
    /// µs since the flow's previous packet (0 for the first).
    gaps_us: [u32; FIRST_INLINE],
    /// Where the packets are with a limit above [`FIRST_INLINE`].
    heap: Option<Box<FirstHeap>>,
}

#[derive(Clone, Debug, Default)]
struct FirstHeap {
    dirs: String,
    sizes: Vec<u32>,
    gaps_us: Vec<u32>,
}

impl FirstPackets {
    /// Lists for up to `limit` packets (`--first-n`), allocated now when they do not
    /// fit inline.
    pub fn with_limit(limit: usize) -> FirstPackets {
        let heap = (limit > FIRST_INLINE).then(|| {
            Box::new(FirstHeap {
                dirs: String::with_capacity(limit),
                sizes: Vec::with_capacity(limit),
                gaps_us: Vec::with_capacity(limit),
            })
        });
        FirstPackets { heap, ..Default::default() }
    }

    /// Accounts a packet if fewer than `limit` were; `limit` is the one given to
    /// [`FirstPackets::with_limit`].
    #[inline]
    pub fn on_packet(&mut self, limit: usize, di: usize, wire_len: u32, gap_ns: u64) {
        let gap = us(gap_ns).min(u32::MAX as u64) as u32;
        match self.heap.as_deref_mut() {
            None => {
                let i = self.len as usize;
                if i < limit.min(FIRST_INLINE) {
                    self.dirs[i] = if di == 0 { b'c' } else { b's' };
                    self.sizes[i] = wire_len;
                    self.gaps_us[i] = gap;
                    self.len += 1;
                }
            }
            Some(h) => {
                if h.sizes.len() < limit {
                    h.dirs.push(if di == 0 { 'c' } else { 's' });
                    h.sizes.push(wire_len);
                    h.gaps_us.push(gap);
                }
            }
        }
    }

    /// `c` (client to server) or `s` per packet.
    pub fn dirs(&self) -> &str {
        match self.heap.as_deref() {
            // Only `c` and `s` are ever stored: always valid UTF-8.
            None => std::str::from_utf8(&self.dirs[..self.len as usize]).unwrap_or(""),
            Some(h) => &h.dirs,
        }
    }

    /// Frame lengths on the wire.
    pub fn sizes(&self) -> &[u32] {
        match self.heap.as_deref() {
            None => &self.sizes[..self.len as usize],
            Some(h) => &h.sizes,
        }
    }

    /// µs since the flow's previous packet (0 for the first).
    pub fn gaps_us(&self) -> &[u32] {
        match self.heap.as_deref() {
            None => &self.gaps_us[..self.len as usize],
            Some(h) => &h.gaps_us,
        }
    }

    pub fn clear(&mut self) {
        self.len = 0;
        if let Some(h) = self.heap.as_deref_mut() {
            h.dirs.clear();
            h.sizes.clear();
            h.gaps_us.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn moments_of_a_known_series() {
        let mut m = Moments::default();
        assert_eq!((m.mean(), m.std(), m.min(), m.max()), (None, None, None, None));
        for x in [2, 4, 4, 4, 5, 5, 7, 9] {
            m.add(x);
        }
        assert_eq!(m.mean(), Some(5.0));
        // Sample variance: Σ(x − 5)² = 32 over 7.
        assert!((m.std().unwrap() - (32.0f64 / 7.0).sqrt()).abs() < 1e-12);
        assert_eq!((m.min(), m.max()), (Some(2), Some(9)));
    }

    /// The 128-bit computation alone, to hold the 64-bit path to it.
    fn std_wide(m: &Moments) -> Option<f64> {
        match m.n {
            0 => None,
            1 => Some(0.0),
            n => {
                let n = n as u128;
                let s = m.sum as u128;
                let num = n.saturating_mul(m.sum_sq).saturating_sub(s * s);
                Some((num as f64 / (n * (n - 1)) as f64).sqrt())
            }
        }
    }

    proptest! {
        /// The 64-bit path gives the very bits of the 128-bit one.
        #[test]
        fn std_in_64_bits_is_std_in_128(xs in proptest::collection::vec(0u64..u64::MAX, 0..50), shift in 0u32..64) {
            let mut m = Moments::default();
            xs.iter().for_each(|&x| m.add(x >> shift));
            prop_assert_eq!(m.std().map(f64::to_bits), std_wide(&m).map(f64::to_bits));
        }


        /// The integer form agrees with a two-pass float computation.
        #[test]
        fn std_agrees_with_two_pass(xs in proptest::collection::vec(0u64..10_000_000, 2..200)) {
            let mut m = Moments::default();
            xs.iter().for_each(|&x| m.add(x));
            let n = xs.len() as f64;
            let mean = xs.iter().sum::<u64>() as f64 / n;
            let var = xs.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / (n - 1.0);
            let std = m.std().unwrap();
            prop_assert!((std - var.sqrt()).abs() <= 1e-6 * var.sqrt().max(1.0), "{} vs {}", std, var.sqrt());
        }
    }

    #[test]
    fn first_packets_stop_at_the_limit() {
        for limit in [0, 3, FIRST_INLINE, FIRST_INLINE + 1, 25] {
            let mut p = FirstPackets::with_limit(limit);
            for round in 0..2 {
                p.clear();
                for i in 0..40 {
                    p.on_packet(limit, i % 2, 60 + i as u32, 1_500 * i as u64);
                }
                let n = limit.min(40);
                let want_dirs: String = (0..n).map(|i| if i % 2 == 0 { 'c' } else { 's' }).collect();
                let want_sizes: Vec<u32> = (0..n as u32).map(|i| 60 + i).collect();
                let want_gaps: Vec<u32> = (0..n as u64).map(|i| us(1_500 * i) as u32).collect();
                assert_eq!(p.dirs(), want_dirs, "limit {limit} round {round}");
                assert_eq!(p.sizes(), want_sizes);
                assert_eq!(p.gaps_us(), want_gaps);
            }
        }
        let mut p = FirstPackets::with_limit(3);
        for i in 0..5 {
            p.on_packet(3, i % 2, 60 + i as u32, 1_500 * i as u64);
        }
        assert_eq!(p.dirs(), "csc");
        assert_eq!(p.sizes(), [60, 61, 62]);
        assert_eq!(p.gaps_us(), [0, 2, 3]);
    }
}
