//! What both front ends share after the workers: merging their results.

#[allow(unused_imports)]
use crate::{dispatch::*, flow_groups::*, migrate::*, reader::*, record_out::*, schedule::*, worker::*, writer::*};

/// The run's link histograms: the sum of every worker's ([`Histo::merge`]), in any
/// order (a sum of counts).
///
/// [`Histo::merge`]: tapstat_analyze::histo::Histo::merge
#[derive(Default)]
pub(crate) struct HistoMerge(pub(crate) Option<tapstat_analyze::histo::Histo>);

impl HistoMerge {
    pub(crate) fn add(&mut self, h: Option<&tapstat_analyze::histo::Histo>) {
        if let Some(h) = h {
            match &mut self.0 {
                Some(m) => m.merge(h),
                None => self.0 = Some(h.clone()),
            }
        }
    }
}
