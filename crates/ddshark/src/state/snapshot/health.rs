//! The health view: the pipeline's, dissector's and state's counters, and whether
//! they reconcile.

use super::super::{State, StateCounters};
use crate::capture::KernelStats;
use rtps_dissect::DissectorStats;

/// One packet source as the pipeline saw it.
#[derive(Debug, Clone, Default)]
pub struct SourceHealth {
    pub(crate) name: String,
    /// Frames the capture thread read.
    pub frames: u64,
    /// Frames dropped because the queue to the state thread was full.
    pub(crate) queue_dropped: u64,
    /// libpcap kernel statistics (live captures).
    pub(crate) kernel: Option<KernelStats>,
    pub(crate) error: Option<String>,
    pub(crate) finished: bool,
}

#[derive(Debug, Clone, Default)]
pub struct PipelineCounters {
    pub sources: Vec<SourceHealth>,
    /// Frames handed to the dissector.
    pub frames_processed: u64,
    pub queue_dropped: u64,
    /// `-w`: the recording's files and counters.
    pub(crate) recording: Option<crate::recording::RecordingHealth>,
}

#[derive(Debug, Clone)]
pub struct Check {
    pub(crate) name: &'static str,
    pub(crate) ok: bool,
    pub(crate) detail: String,
}

#[derive(Debug, Clone)]
pub struct Health {
    pub dissector: DissectorStats,
    pub state: StateCounters,
    pub pipeline: PipelineCounters,
    pub(crate) participants: u64,
    pub(crate) writers: u64,
    pub(crate) readers: u64,
    pub(crate) writers_unattributed: u64,
    pub reconciles: bool,
    pub checks: Vec<Check>,
}

impl State {
    pub(super) fn health(
        &self,
        dissector: &DissectorStats,
        pipeline: &PipelineCounters,
        unattributed: u64,
    ) -> Health {
        let c = &self.counters;
        let mut checks = Vec::new();
        checks.push(Check {
            name: "frames",
            ok: dissector.reconciles(),
            detail: format!(
                "{} frames = {} RTPS + {} held IP fragments + {} dropped fragments + {} not IP + {} not UDP + {} not RTPS + {} ICMP-quoted RTPS + {} RTI pings + {} malformed",
                dissector.frames,
                dissector.rtps_frames,
                dissector.fragments_held,
                dissector.fragments_dropped,
                dissector.skipped_not_ip,
                dissector.skipped_not_udp,
                dissector.skipped_not_rtps,
                dissector.skipped_icmp_quoted_rtps,
                dissector.rti_pings,
                dissector.malformed
            ) + &if dissector.tcp.frames_held > 0 {
                format!(" + {} TCP segments held", dissector.tcp.frames_held)
            } else {
                String::new()
            },
        });
        checks.push(Check {
            name: "datagrams",
            ok: dissector.rtps_datagrams == c.datagrams,
            detail: format!(
                "dissector {} RTPS datagrams, state {}",
                dissector.rtps_datagrams, c.datagrams
            ),
        });
        checks.push(Check {
            name: "submessages",
            ok: dissector.submessages == c.submessages,
            detail: format!(
                "dissector {} decoded submessages (+{} undecodable), state {}",
                dissector.submessages, dissector.submessage_errors, c.submessages
            ),
        });
        checks.push(Check {
            name: "data_submessages",
            ok: c.reconciles(),
            detail: format!(
                "{} DATA/DATA_FRAG = {} new samples + {} more fragments + {} repeats + {} invalid SN",
                c.data_submessages, c.new_samples, c.more_fragments, c.repeat_submessages, c.invalid_sn
            ),
        });
        let total_samples = self.total_samples();
        checks.push(Check {
            name: "samples",
            ok: total_samples == c.new_samples,
            detail: format!(
                "{} samples over writers (incl. {} of evicted writers) = {} new samples",
                total_samples, c.samples_of_evicted_writers, c.new_samples
            ),
        });
        let in_flight_ok = pipeline.sources.iter().all(|s| s.finished)
            && pipeline
                .sources
                .iter()
                .map(|s| s.frames)
                .fold(0u64, u64::saturating_add)
                == pipeline
                    .frames_processed
                    .saturating_add(pipeline.queue_dropped);
        let finished = !pipeline.sources.is_empty() && pipeline.sources.iter().all(|s| s.finished);
        if finished {
            checks.push(Check {
                name: "pipeline",
                ok: in_flight_ok && pipeline.frames_processed == dissector.frames,
                detail: format!(
                    "{} frames captured = {} processed + {} dropped on a full queue; dissector saw {}",
                    pipeline
                        .sources
                        .iter()
                        .map(|s| s.frames)
                        .fold(0u64, u64::saturating_add),
                    pipeline.frames_processed,
                    pipeline.queue_dropped,
                    dissector.frames
                ),
            });
        }
        if let (true, Some(r)) = (finished, &pipeline.recording) {
            let captured = pipeline
                .sources
                .iter()
                .map(|s| s.frames)
                .fold(0u64, u64::saturating_add);
            checks.push(Check {
                name: "recording",
                ok: captured == r.frames_written.saturating_add(r.not_written()),
                detail: format!(
                    "{} frames captured = {} written to {} + {} dropped on a full queue + {} not written otherwise",
                    captured, r.frames_written, r.path, r.queue_dropped, r.not_written_other
                ),
            });
        }
        Health {
            dissector: *dissector,
            state: *c,
            pipeline: pipeline.clone(),
            participants: self.participants.len() as u64,
            writers: self.writers.len() as u64,
            readers: self.readers.len() as u64,
            writers_unattributed: unattributed,
            reconciles: checks.iter().all(|k| k.ok),
            checks,
        }
    }
}
