//! Capture filters on inputs the kernel does not filter (files): the BPF expression
//! compiled by libpcap for the input's link type, as tcpdump does for `-r`.

use pcap::{BpfProgram, Capture, Linktype};
use rtps_dissect::{Frame, LinkType};
use thiserror::Error;

#[derive(Debug, Error)]
pub enum FilterError {
    #[error("{source_name}: invalid capture filter \"{filter}\": {message}")]
    Invalid {
        source_name: String,
        filter: String,
        message: String,
    },
    #[error("{source_name}: cannot filter: its link type is not known before its first frame")]
    UnknownLink { source_name: String },
    #[error("{path}: cannot read the filter file: {message}")]
    File { path: String, message: String },
}

/// A compiled BPF filter; frames it rejects never reach the dissector. A pcapng's
/// interfaces may have different link types: the filter is compiled for each link
/// type its frames come with (a frame of a link type it cannot be compiled for does
/// not match).
pub struct FrameFilter {
    filter: String,
    programs: Vec<(LinkType, Option<BpfProgram>)>,
}

/// At most this many link types get a program of their own (a file has a handful).
const MAX_LINK_TYPES: usize = 16;

fn compile_for(filter: &str, link: LinkType) -> Result<BpfProgram, String> {
    let dlt = i32::try_from(link.to_dlt()).unwrap_or(i32::MAX);
    let dead = Capture::dead(Linktype(dlt)).map_err(|e| e.to_string())?;
    dead.compile(filter, true).map_err(|e| e.to_string())
}

impl FrameFilter {
    /// Compiles `filter` for frames of `link` (`source_name` names the input in errors).
    pub fn compile(
        filter: &str,
        link: Option<LinkType>,
        source_name: &str,
    ) -> Result<Self, FilterError> {
        let link = link.ok_or_else(|| FilterError::UnknownLink {
            source_name: source_name.to_string(),
        })?;
        let program = compile_for(filter, link).map_err(|message| FilterError::Invalid {
            source_name: source_name.to_string(),
            filter: filter.to_string(),
            message,
        })?;
        Ok(Self {
            filter: filter.to_string(),
            programs: vec![(link, Some(program))],
        })
    }

    pub fn matches(&mut self, frame: &Frame<'_>) -> bool {
        let at = match self.programs.iter().position(|(l, _)| *l == frame.link) {
            Some(at) => at,
            None if self.programs.len() < MAX_LINK_TYPES => {
                let program = compile_for(&self.filter, frame.link).ok();
                self.programs.push((frame.link, program));
                self.programs.len().saturating_sub(1)
            }
            None => return false,
        };
        self.programs
            .get(at)
            .and_then(|(_, p)| p.as_ref())
            .is_some_and(|p| p.filter(frame.data))
    }
}

/// A filter file as tcpdump's `-F` reads it: the expression, `#` comments dropped.
pub(crate) fn read_filter_file(path: &std::path::Path) -> Result<String, FilterError> {
    let text = std::fs::read_to_string(path).map_err(|e| FilterError::File {
        path: path.display().to_string(),
        message: e.to_string(),
    })?;
    Ok(text
        .lines()
        .map(|l| l.split_once('#').map_or(l, |(code, _)| code).trim())
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invalid_filters_name_themselves() {
        let e = FrameFilter::compile("this is not bpf", Some(LinkType::Ethernet), "x.pcap")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("x.pcap") && e.contains("this is not bpf"), "{e}");
        assert!(FrameFilter::compile("udp port 7400", Some(LinkType::LinuxSll), "x").is_ok());
        assert!(FrameFilter::compile("udp", None, "x").is_err());
    }
}
