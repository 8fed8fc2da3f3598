//! Errors that say which layer failed, where, and by how much.

use thiserror::Error;

/// The protocol layer a parse error belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layer {
    Link,
    Vlan,
    Ipv4,
    Ipv6,
    Udp,
    Tcp,
    /// RTPS framing on a TCP stream (Fast DDS' RTCP header, a length prefix).
    TcpFraming,
    RtpsHeader,
    Submessage,
    ParameterList,
    Discovery,
}

impl Layer {
    pub fn name(self) -> &'static str {
        match self {
            Layer::Link => "link",
            Layer::Vlan => "802.1Q",
            Layer::Ipv4 => "IPv4",
            Layer::Ipv6 => "IPv6",
            Layer::Udp => "UDP",
            Layer::Tcp => "TCP",
            Layer::TcpFraming => "RTPS-over-TCP framing",
            Layer::RtpsHeader => "RTPS header",
            Layer::Submessage => "RTPS submessage",
            Layer::ParameterList => "ParameterList",
            Layer::Discovery => "discovery",
        }
    }
}

impl std::fmt::Display for Layer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Everything that can go wrong while dissecting hostile bytes.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum DissectError {
    /// Fewer bytes than the field at `offset` needs.
    #[error("{layer}: truncated at offset {offset}: need {needed} bytes, have {actual}")]
    Truncated {
        layer: Layer,
        offset: usize,
        needed: usize,
        actual: usize,
    },
    /// A length field points past the bytes that are there.
    #[error(
        "{layer}: length field at offset {offset} says {claimed} bytes, only {available} present"
    )]
    BadLength {
        layer: Layer,
        offset: usize,
        claimed: usize,
        available: usize,
    },
    /// A field holds a value the layer cannot accept.
    #[error("{layer}: invalid {what} at offset {offset}: {value}")]
    Invalid {
        layer: Layer,
        offset: usize,
        what: &'static str,
        value: u64,
    },
    /// The link type of the capture is not one we decode.
    #[error("link: unsupported link type {0}")]
    UnsupportedLinkType(u32),
}

impl DissectError {
    pub fn layer(&self) -> Layer {
        match self {
            DissectError::Truncated { layer, .. }
            | DissectError::BadLength { layer, .. }
            | DissectError::Invalid { layer, .. } => *layer,
            DissectError::UnsupportedLinkType(_) => Layer::Link,
        }
    }
}

pub type Result<T> = std::result::Result<T, DissectError>;
