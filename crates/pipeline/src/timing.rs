//! Per-packet processing time in the workers, sampled (DPDKStat, §5.2, Fig. 7–8): one
//! packet in K is timed with the monotonic clock (a vDSO call, ~20–40 ns, so 1 in 64
//! costs well under 1 ns per packet on average) into a log-linear histogram (4 steps per
//! power of two: ±10%) and an EWMA (α = 0.15, the paper's).

use serde::Serialize;

/// Histogram cells: 4 per power of two of nanoseconds, up to 2^48 ns.
const CELLS: usize = 48 * 4;

/// One worker's sampler.
#[derive(Clone, Debug)]
pub struct PacketTimer {
    every: u32,
    countdown: u32,
    hist: Vec<u64>,
    ewma: f64,
    samples: u64,
    max_ns: u64,
    sum_ns: u64,
}

fn cell(ns: u64) -> usize {
    if ns < 4 {
        return ns as usize;
    }
    let p = 63 - ns.leading_zeros() as usize; // ns in [2^p, 2^(p+1))
    let frac = ((ns >> (p - 2)) & 3) as usize;
    (p * 4 + frac).min(CELLS - 1)
}

/// The lower bound of a cell, in ns.
fn cell_ns(c: usize) -> u64 {
    if c < 8 {
        // Cells 0..4 hold 0..4 ns; 4..8 are never used (4 ns is in cell 8).
        return c.min(4) as u64;
    }
    let (p, frac) = (c / 4, (c % 4) as u64);
    (1u64 << p) + (frac << (p - 2))
}

impl PacketTimer {
    /// Times 1 packet in `every` (0: none).
    pub fn new(every: u32) -> Self {
        PacketTimer {
            every,
            countdown: every,
            hist: vec![0; if every > 0 { CELLS } else { 0 }],
            ewma: 0.0,
            samples: 0,
            max_ns: 0,
            sum_ns: 0,
        }
    }

    /// Is this packet to be timed?
    #[inline(always)]
    pub fn due(&mut self) -> bool {
        if self.every == 0 {
            return false;
        }
        self.countdown -= 1;
        if self.countdown == 0 {
            self.countdown = self.every;
            true
        } else {
            false
        }
    }

    /// Samples recorded.
    pub fn samples(&self) -> u64 {
        self.samples
    }

    /// The longest sample, ns.
    pub fn max_ns(&self) -> u64 {
        self.max_ns
    }

    #[inline]
    pub fn record(&mut self, ns: u64) {
        self.hist[cell(ns)] += 1;
        self.ewma = if self.samples == 0 { ns as f64 } else { 0.15 * ns as f64 + 0.85 * self.ewma };
        self.samples += 1;
        self.max_ns = self.max_ns.max(ns);
        self.sum_ns += ns;
    }
}

/// The samplers of all workers, summed, for `summary.json`.
#[derive(Clone, Debug, Default, Serialize)]
pub struct PacketTimeSummary {
    /// 1 packet in `sample_every` was timed (0: timing was off).
    pub sample_every: u32,
    pub samples: u64,
    pub mean_ns: f64,
    /// Quantiles (lower bound of the histogram cell: within 19% below the value).
    pub p50_ns: u64,
    pub p75_ns: u64,
    pub p95_ns: u64,
    pub p99_ns: u64,
    pub p999_ns: u64,
    pub max_ns: u64,
    /// Samples longer than 10× the median.
    pub outliers_10x: u64,
    /// The EWMA of each worker at the end of the run.
    pub ewma_ns: Vec<f64>,
    /// Non-empty cells: (lower bound ns, samples).
    pub histogram: Vec<(u64, u64)>,
}

impl PacketTimeSummary {
    pub fn of(timers: &[PacketTimer]) -> Self {
        let mut hist = vec![0u64; CELLS];
        let mut s = PacketTimeSummary::default();
        let mut sum = 0u64;
        for t in timers {
            s.sample_every = s.sample_every.max(t.every);
            for (a, b) in hist.iter_mut().zip(&t.hist) {
                *a += b;
            }
            s.samples += t.samples;
            s.max_ns = s.max_ns.max(t.max_ns);
            sum += t.sum_ns;
            s.ewma_ns.push((t.ewma * 10.0).round() / 10.0);
        }
        if s.samples == 0 {
            return s;
        }
        s.mean_ns = (sum as f64 / s.samples as f64 * 10.0).round() / 10.0;
        let q = |f: f64| {
            let want = ((s.samples as f64 * f).ceil() as u64).max(1);
            let mut acc = 0;
            for (c, &n) in hist.iter().enumerate() {
                acc += n;
                if acc >= want {
                    return cell_ns(c);
                }
            }
            s.max_ns
        };
        s.p50_ns = q(0.50);
        s.p75_ns = q(0.75);
        s.p95_ns = q(0.95);
        s.p99_ns = q(0.99);
        s.p999_ns = q(0.999);
        let limit = s.p50_ns.max(1) * 10;
        s.outliers_10x = hist.iter().enumerate().filter(|(c, _)| cell_ns(*c) >= limit).map(|(_, n)| n).sum();
        s.histogram = hist.iter().enumerate().filter(|(_, &n)| n > 0).map(|(c, &n)| (cell_ns(c), n)).collect();
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_are_monotone_and_tight() {
        for ns in [0u64, 1, 3, 4, 5, 7, 8, 100, 1000, 123_456, 1 << 40] {
            let c = cell(ns);
            assert!(cell_ns(c) <= ns, "{ns}");
            assert!(ns < 4 || (ns as f64) < cell_ns(c) as f64 * 1.26, "{ns}");
        }
        assert!((1..100_000u64).all(|n| cell(n) >= cell(n - 1)));
    }

    #[test]
    fn samples_one_in_k_and_summarizes() {
        let mut t = PacketTimer::new(4);
        let due: Vec<bool> = (0..8).map(|_| t.due()).collect();
        assert_eq!(due, [false, false, false, true, false, false, false, true]);
        for i in 0..1000 {
            t.record(if i % 100 == 0 { 100_000 } else { 100 });
        }
        let s = PacketTimeSummary::of(&[t]);
        assert_eq!(s.samples, 1000);
        assert_eq!(s.p50_ns, 96);
        assert_eq!(s.max_ns, 100_000);
        assert_eq!(s.outliers_10x, 10);
        assert!(!PacketTimer::new(0).due());
    }
}
