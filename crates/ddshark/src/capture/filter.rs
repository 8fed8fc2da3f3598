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

/// A compiled BPF filter; frames it rejects never reach the dissector.
pub struct FrameFilter {
    program: BpfProgram,
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
        let dlt = i32::try_from(link.to_dlt()).unwrap_or(i32::MAX);
        let invalid = |message: String| FilterError::Invalid {
            source_name: source_name.to_string(),
            filter: filter.to_string(),
            message,
        };
        let dead = Capture::dead(Linktype(dlt)).map_err(|e| invalid(e.to_string()))?;
        let program = dead
            .compile(filter, true)
            .map_err(|e| invalid(e.to_string()))?;
        Ok(Self { program })
    }

    pub fn matches(&self, frame: &Frame<'_>) -> bool {
        self.program.filter(frame.data)
    }
}

/// A filter file as tcpdump's `-F` reads it: the expression, `#` comments dropped.
pub fn read_filter_file(path: &std::path::Path) -> Result<String, FilterError> {
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
