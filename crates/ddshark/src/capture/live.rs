//! Live capture through libpcap: BPF filter, snaplen, kernel buffer, immediate
//! mode, promiscuous mode, nanosecond timestamps and the timestamp source.

use pcap::{Active, Capture, Device, Precision, TimestampType};
use rtps_dissect::{Frame, LinkType};
use thiserror::Error;

use super::{CaptureError, KernelStats, PacketSource};

/// UDP, TCP (RTPS over TCP: Fast DDS' TCP transport) and every IPv4/IPv6 fragment
/// (fragments after the first have no UDP header).
pub(crate) const DEFAULT_FILTER: &str =
    "udp or tcp or (ip[6:2] & 0x3fff != 0) or (ip6 and ip6[6] == 44)";

/// The default filter, also inside one 802.1Q tag, where the link type has VLANs
/// (`vlan` shifts the offsets of what follows it, so it comes last).
pub(crate) const DEFAULT_FILTER_VLAN: &str =
    "udp or tcp or (ip[6:2] & 0x3fff != 0) or (ip6 and ip6[6] == 44) \
     or (vlan and (udp or tcp or (ip[6:2] & 0x3fff != 0) or (ip6 and ip6[6] == 44)))";

#[derive(Debug, Error)]
pub enum LiveError {
    #[error(
        "{iface}: no permission to capture ({message}).\n\
         Capturing needs the CAP_NET_RAW capability (and CAP_NET_ADMIN for some options). Either run as root, or grant it once:\n  \
         sudo setcap cap_net_raw,cap_net_admin=eip \"$(command -v ddshark)\""
    )]
    Permission { iface: String, message: String },
    #[error("{iface}: no such interface. Interfaces that can be captured:\n{available}")]
    UnknownInterface { iface: String, available: String },
    #[error("{iface}: invalid capture filter \"{filter}\": {message}")]
    Filter {
        iface: String,
        filter: String,
        message: String,
    },
    #[error("{iface}: cannot start capture: {message}")]
    Open { iface: String, message: String },
    #[error("{0}")]
    UnsupportedLink(String),
    #[error("unknown timestamp type \"{0}\" (use host, host_lowprec, host_hiprec, adapter, adapter_unsynced)")]
    TstampType(String),
}

/// The timestamp source, as `tcpdump -j` names it.
pub(crate) fn parse_tstamp_type(s: &str) -> Result<TimestampType, LiveError> {
    Ok(match s.replace('-', "_").as_str() {
        "host" => TimestampType::Host,
        "host_lowprec" => TimestampType::HostLowPrec,
        "host_hiprec" => TimestampType::HostHighPrec,
        "adapter" => TimestampType::Adapter,
        "adapter_unsynced" => TimestampType::AdapterUnsynced,
        _ => return Err(LiveError::TstampType(s.to_string())),
    })
}

#[derive(Debug, Clone)]
pub(crate) struct LiveOptions {
    pub(crate) snaplen: i32,
    /// Kernel buffer in bytes.
    pub(crate) buffer_size: i32,
    pub(crate) immediate: bool,
    pub(crate) promisc: bool,
    pub(crate) tstamp_type: Option<String>,
    /// BPF expression; empty = capture everything.
    pub(crate) filter: String,
    /// Read timeout; the capture thread uses it to flush and report while idle.
    pub(crate) timeout_ms: i32,
}

impl Default for LiveOptions {
    fn default() -> Self {
        Self {
            snaplen: 262_144,
            buffer_size: 64 << 20,
            immediate: false,
            promisc: true,
            tstamp_type: None,
            filter: DEFAULT_FILTER.to_string(),
            timeout_ms: 100,
        }
    }
}

pub(crate) struct LiveSource {
    capture: Capture<Active>,
    name: String,
    link: LinkType,
    /// The BPF filter in force (the default's VLAN form where the link type has VLANs).
    filter: String,
    frames: u64,
    /// Timestamps are nanoseconds (else microseconds, scaled).
    nano: bool,
    /// Current wait after an empty read: doubles while the interface is quiet, halves
    /// with each packet.
    idle_sleep_us: u64,
}

/// Bounds of the wait after an empty non-blocking read. 10 ms of traffic fits the
/// kernel buffer many times over, even at line rate.
const MIN_IDLE_SLEEP_US: u64 = 200;
const MAX_IDLE_SLEEP_US: u64 = 10_000;

fn is_permission(msg: &str) -> bool {
    let m = msg.to_ascii_lowercase();
    m.contains("permission") || m.contains("not permitted") || m.contains("eperm")
}

/// Names of the interfaces libpcap can open, one per line.
pub(crate) fn interface_list() -> String {
    match Device::list() {
        Ok(devs) => devs
            .iter()
            .map(|d| match &d.desc {
                Some(desc) => format!("  {} ({desc})", d.name),
                None => format!("  {}", d.name),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        Err(e) => format!("  (cannot list interfaces: {e})"),
    }
}

impl LiveSource {
    pub(crate) fn open(iface: &str, opts: &LiveOptions) -> Result<Self, LiveError> {
        let known = Device::list()
            .map(|l| l.iter().any(|d| d.name == iface))
            .unwrap_or(true);
        if !known && iface != "any" {
            return Err(LiveError::UnknownInterface {
                iface: iface.to_string(),
                available: interface_list(),
            });
        }
        let tstamp = opts
            .tstamp_type
            .as_deref()
            .map(parse_tstamp_type)
            .transpose()?;
        let open = |nano: bool| {
            let mut c = Capture::from_device(iface)?
                .snaplen(opts.snaplen)
                .buffer_size(opts.buffer_size)
                .immediate_mode(opts.immediate)
                .promisc(opts.promisc)
                .timeout(opts.timeout_ms.max(1));
            if nano {
                c = c.precision(Precision::Nano);
            }
            if let Some(t) = tstamp {
                c = c.tstamp_type(t);
            }
            c.open()
        };
        let err = |e: pcap::Error| {
            let message = e.to_string();
            if is_permission(&message) {
                LiveError::Permission {
                    iface: iface.to_string(),
                    message,
                }
            } else if message.contains("No such device") || message.contains("doesn't exist") {
                LiveError::UnknownInterface {
                    iface: iface.to_string(),
                    available: interface_list(),
                }
            } else {
                LiveError::Open {
                    iface: iface.to_string(),
                    message,
                }
            }
        };
        // Nanosecond timestamps where the system has them, else microseconds.
        let (mut capture, nano) = match open(true) {
            Ok(c) => (c, true),
            Err(e) if e.to_string().to_ascii_lowercase().contains("precision") => {
                (open(false).map_err(err)?, false)
            }
            Err(e) => return Err(err(e)),
        };
        let vlan_ok =
            opts.filter == DEFAULT_FILTER && capture.filter(DEFAULT_FILTER_VLAN, true).is_ok();
        let filter = if vlan_ok {
            DEFAULT_FILTER_VLAN.to_string()
        } else {
            opts.filter.clone()
        };
        if !opts.filter.trim().is_empty() && !vlan_ok {
            capture
                .filter(&opts.filter, true)
                .map_err(|e| LiveError::Filter {
                    iface: iface.to_string(),
                    filter: opts.filter.clone(),
                    message: e.to_string(),
                })?;
        }
        // Non-blocking reads: a blocking read may never return on a quiet interface
        // (TPACKET_V3 ignores the timeout until a packet arrives), and the capture
        // thread must still flush, report kernel statistics and see a stop request.
        let capture = capture.setnonblock().map_err(|e| LiveError::Open {
            iface: iface.to_string(),
            message: e.to_string(),
        })?;
        let dlt = u32::try_from(capture.get_datalink().0).unwrap_or(u32::MAX);
        let link = match super::supported_link(iface, dlt) {
            Ok(l) => l,
            Err(e) => return Err(LiveError::UnsupportedLink(e.to_string())),
        };
        Ok(Self {
            capture,
            name: iface.to_string(),
            link,
            filter,
            frames: 0,
            nano,
            idle_sleep_us: 0,
        })
    }

    pub(crate) fn link_type(&self) -> LinkType {
        self.link
    }

    pub(crate) fn filter(&self) -> &str {
        &self.filter
    }
}

impl PacketSource for LiveSource {
    fn next_frame(&mut self) -> Result<Option<Frame<'_>>, CaptureError> {
        match self.capture.next_packet() {
            Ok(packet) => {
                self.frames = self.frames.saturating_add(1);
                self.idle_sleep_us /= 2;
                let ts = packet.header.ts;
                let frac = if self.nano {
                    ts.tv_usec
                } else {
                    ts.tv_usec.saturating_mul(1000)
                };
                Ok(Some(Frame {
                    number: self.frames,
                    ts_ns: timeval_ns(ts.tv_sec, frac),
                    link: self.link,
                    data: packet.data,
                    orig_len: packet.header.len,
                }))
            }
            Err(pcap::Error::TimeoutExpired) => {
                // Nothing queued: wait (the kernel buffer keeps what arrives), longer the
                // longer the interface stays quiet, so an idle capture costs no CPU.
                self.idle_sleep_us = self
                    .idle_sleep_us
                    .saturating_mul(2)
                    .clamp(MIN_IDLE_SLEEP_US, MAX_IDLE_SLEEP_US);
                std::thread::sleep(std::time::Duration::from_micros(self.idle_sleep_us));
                Err(CaptureError::Timeout(self.name.clone()))
            }
            Err(pcap::Error::NoMorePackets) => Ok(None),
            Err(e) => Err(CaptureError::Read {
                path: self.name.clone(),
                after_frame: self.frames,
                message: e.to_string(),
            }),
        }
    }

    fn name(&self) -> &str {
        &self.name
    }

    fn link_type(&self) -> Option<LinkType> {
        Some(self.link)
    }

    fn kernel_stats(&mut self) -> Option<KernelStats> {
        self.capture.stats().ok().map(|s| KernelStats {
            received: u64::from(s.received),
            dropped: u64::from(s.dropped),
            if_dropped: u64::from(s.if_dropped),
        })
    }
}

/// libpcap timeval (seconds, nanoseconds with Precision::Nano) → ns since the epoch.
pub(crate) fn timeval_ns(sec: i64, nsec: i64) -> u64 {
    let sec = u64::try_from(sec).unwrap_or(0);
    let nsec = u64::try_from(nsec).unwrap_or(0);
    sec.saturating_mul(1_000_000_000).saturating_add(nsec)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_filter_compiles_for_every_link_type() {
        for lt in [
            pcap::Linktype::ETHERNET,
            pcap::Linktype::LINUX_SLL,
            pcap::Linktype(113),
        ] {
            let dead = Capture::dead(lt);
            assert!(dead.is_ok());
            if let Ok(dead) = dead {
                let r = dead.compile(DEFAULT_FILTER, true);
                assert!(r.is_ok(), "{lt:?}: {:?}", r.err());
            }
        }
    }

    #[test]
    fn tstamp_types() {
        assert!(parse_tstamp_type("adapter").is_ok());
        assert!(parse_tstamp_type("host-hiprec").is_ok());
        assert!(parse_tstamp_type("gps").is_err());
    }
}
