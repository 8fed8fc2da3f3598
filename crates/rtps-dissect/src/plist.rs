//! ParameterLists (inline QoS, SPDP/SEDP payloads) in both endiannesses.

use crate::bytes::Bytes;
use crate::error::{DissectError, Layer, Result};
use crate::types::{Guid, Locator};

pub(crate) const PID_SENTINEL: u16 = 0x0001;
pub const PID_PARTICIPANT_LEASE_DURATION: u16 = 0x0002;
pub(crate) const PID_TOPIC_NAME: u16 = 0x0005;
pub(crate) const PID_OWNERSHIP_STRENGTH: u16 = 0x0006;
pub(crate) const PID_TYPE_NAME: u16 = 0x0007;
pub const PID_DOMAIN_ID: u16 = 0x000f;
pub const PID_PROTOCOL_VERSION: u16 = 0x0015;
pub(crate) const PID_VENDOR_ID: u16 = 0x0016;
pub(crate) const PID_RELIABILITY: u16 = 0x001a;
pub(crate) const PID_LIVELINESS: u16 = 0x001b;
pub(crate) const PID_DURABILITY: u16 = 0x001d;
pub(crate) const PID_OWNERSHIP: u16 = 0x001f;
pub(crate) const PID_DEADLINE: u16 = 0x0023;
pub(crate) const PID_PARTITION: u16 = 0x0029;
pub(crate) const PID_UNICAST_LOCATOR: u16 = 0x002f;
pub(crate) const PID_MULTICAST_LOCATOR: u16 = 0x0030;
pub const PID_DEFAULT_UNICAST_LOCATOR: u16 = 0x0031;
pub(crate) const PID_METATRAFFIC_UNICAST_LOCATOR: u16 = 0x0032;
pub(crate) const PID_METATRAFFIC_MULTICAST_LOCATOR: u16 = 0x0033;
pub(crate) const PID_HISTORY: u16 = 0x0040;
pub(crate) const PID_DEFAULT_MULTICAST_LOCATOR: u16 = 0x0048;
pub const PID_PARTICIPANT_GUID: u16 = 0x0050;
pub(crate) const PID_BUILTIN_ENDPOINT_SET: u16 = 0x0058;
pub(crate) const PID_ENDPOINT_GUID: u16 = 0x005a;
pub const PID_ENTITY_NAME: u16 = 0x0062;
pub(crate) const PID_KEY_HASH: u16 = 0x0070;
pub const PID_STATUS_INFO: u16 = 0x0071;
pub(crate) const PID_DATA_REPRESENTATION: u16 = 0x0073;
pub(crate) const PID_DOMAIN_TAG: u16 = 0x4014;

/// Longest string we accept from a ParameterList (topic/type names, entity names).
const MAX_STRING: usize = 4096;
/// Most parameters one list may hold before we stop (a 64 KiB datagram holds < 16 Ki).
const MAX_PARAMETERS: usize = 16_384;

/// One parameter: id (must-understand bit cleared in [`Parameter::id`]) and value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Parameter<'a> {
    pub raw_id: u16,
    pub value: &'a [u8],
    pub little_endian: bool,
    /// Offset of the parameter header in the list.
    pub offset: usize,
}

impl<'a> Parameter<'a> {
    /// The PID with the must-understand bit (0x4000) cleared, except for PIDs that
    /// are defined with it set (PID_DOMAIN_TAG).
    pub fn id(&self) -> u16 {
        if self.raw_id == PID_DOMAIN_TAG {
            self.raw_id
        } else {
            self.raw_id & !0x4000
        }
    }

    pub(crate) fn is_vendor_specific(&self) -> bool {
        self.raw_id & 0x8000 != 0
    }

    fn bytes(&self) -> Bytes<'a> {
        Bytes::new(self.value, Layer::ParameterList, self.little_endian)
    }

    pub fn u32(&self) -> Result<u32> {
        self.bytes().u32(0)
    }

    pub fn i32(&self) -> Result<i32> {
        self.bytes().i32(0)
    }

    /// A CDR string: length (including the NUL) then bytes.
    pub fn string(&self) -> Result<String> {
        read_string(&self.bytes(), 0).map(|(s, _)| s)
    }

    pub fn guid(&self) -> Result<Guid> {
        Ok(Guid::from_bytes(self.bytes().array::<16>(0)?))
    }

    pub fn locator(&self) -> Result<Locator> {
        let b = self.bytes();
        Ok(Locator {
            kind: b.i32(0)?,
            port: b.u32(4)?,
            address: b.array::<16>(8)?,
        })
    }

    /// RTPS Duration_t as nanoseconds; `None` for DURATION_INFINITE.
    pub fn duration_ns(&self, offset: usize) -> Result<Option<i64>> {
        let b = self.bytes();
        let seconds = b.i32(offset)?;
        let fraction = b.u32(offset.saturating_add(4))?;
        if seconds == 0x7fff_ffff {
            return Ok(None);
        }
        let frac_ns = (u64::from(fraction).saturating_mul(1_000_000_000)) >> 32;
        Ok(Some(
            i64::from(seconds)
                .saturating_mul(1_000_000_000)
                .saturating_add(i64::try_from(frac_ns).unwrap_or(0)),
        ))
    }

    /// A sequence of CDR strings (PID_PARTITION).
    pub fn string_seq(&self) -> Result<Vec<String>> {
        let b = self.bytes();
        let count = usize::try_from(b.u32(0)?).unwrap_or(usize::MAX);
        // each string needs at least 4 bytes: the count cannot claim more than that
        let max = self.value.len().saturating_sub(4) / 4;
        let mut out = Vec::with_capacity(count.min(max));
        let mut pos = 4usize;
        for _ in 0..count.min(max) {
            let (s, next) = read_string(&b, pos)?;
            out.push(s);
            pos = next.saturating_add(3) & !3;
        }
        Ok(out)
    }

    /// PID_STATUS_INFO flags (always big-endian on the wire): the last byte.
    pub fn status_info(&self) -> Result<u32> {
        Bytes::big(self.value, Layer::ParameterList).be_u32(0)
    }
}

/// Read a CDR string at `offset`; returns it and the offset after it.
pub(crate) fn read_string(b: &Bytes<'_>, offset: usize) -> Result<(String, usize)> {
    let len = usize::try_from(b.u32(offset)?).unwrap_or(usize::MAX);
    if len > MAX_STRING {
        return Err(DissectError::Invalid {
            layer: Layer::ParameterList,
            offset,
            what: "string length",
            value: len as u64,
        });
    }
    let start = offset.saturating_add(4);
    let raw = b.slice(start, len)?;
    let text = raw.split(|&c| c == 0).next().unwrap_or_default();
    Ok((
        String::from_utf8_lossy(text).into_owned(),
        start.saturating_add(len),
    ))
}

/// A borrowed ParameterList; iterate it to get [`Parameter`]s up to the sentinel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParameterList<'a> {
    data: &'a [u8],
    little_endian: bool,
}

impl<'a> ParameterList<'a> {
    pub fn new(data: &'a [u8], little_endian: bool) -> Self {
        Self {
            data,
            little_endian,
        }
    }

    pub fn data(&self) -> &'a [u8] {
        self.data
    }

    pub fn iter(&self) -> ParameterIter<'a> {
        ParameterIter {
            list: *self,
            offset: 0,
            count: 0,
            done: false,
        }
    }

    /// Bytes up to and including the sentinel; an error if there is none.
    pub fn byte_len(&self) -> Result<usize> {
        let mut it = self.iter();
        for p in it.by_ref() {
            p?;
        }
        if it.saw_sentinel() {
            Ok(it.offset)
        } else {
            Err(DissectError::Truncated {
                layer: Layer::ParameterList,
                offset: it.offset,
                needed: 4,
                actual: self.data.len().saturating_sub(it.offset),
            })
        }
    }

    /// First parameter with this id.
    pub fn find(&self, pid: u16) -> Option<Parameter<'a>> {
        self.iter().filter_map(|p| p.ok()).find(|p| p.id() == pid)
    }
}

pub struct ParameterIter<'a> {
    list: ParameterList<'a>,
    offset: usize,
    count: usize,
    done: bool,
}

impl ParameterIter<'_> {
    fn saw_sentinel(&self) -> bool {
        self.done && self.count != usize::MAX
    }
}

impl<'a> Iterator for ParameterIter<'a> {
    type Item = Result<Parameter<'a>>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let b = Bytes::new(
            self.list.data,
            Layer::ParameterList,
            self.list.little_endian,
        );
        let header = b.u16(self.offset).and_then(|pid| {
            b.u16(self.offset.saturating_add(2))
                .map(|len| (pid, usize::from(len)))
        });
        let (pid, len) = match header {
            Ok(h) => h,
            Err(e) => {
                self.done = true;
                self.count = usize::MAX;
                return Some(Err(e));
            }
        };
        if pid == PID_SENTINEL {
            self.done = true;
            self.offset = self.offset.saturating_add(4);
            return None;
        }
        self.count = self.count.saturating_add(1);
        if self.count > MAX_PARAMETERS {
            self.done = true;
            self.count = usize::MAX;
            return Some(Err(DissectError::Invalid {
                layer: Layer::ParameterList,
                offset: self.offset,
                what: "parameter count",
                value: MAX_PARAMETERS as u64,
            }));
        }
        let start = self.offset.saturating_add(4);
        match b.slice(start, len) {
            Ok(value) => {
                let param = Parameter {
                    raw_id: pid,
                    value,
                    little_endian: self.list.little_endian,
                    offset: self.offset,
                };
                self.offset = start.saturating_add(len);
                Some(Ok(param))
            }
            Err(_) => {
                self.done = true;
                self.count = usize::MAX;
                Some(Err(DissectError::BadLength {
                    layer: Layer::ParameterList,
                    offset: self.offset.saturating_add(2),
                    claimed: len,
                    available: self.list.data.len().saturating_sub(start),
                }))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_endiannesses() {
        // PID_TOPIC_NAME "ab", then sentinel
        let le = hex::decode("05000800030000006162000001000000").unwrap();
        let be = hex::decode("00050008000000036162000000010000").unwrap();
        for (data, little) in [(le, true), (be, false)] {
            let pl = ParameterList::new(&data, little);
            let p = pl.find(PID_TOPIC_NAME).unwrap();
            assert_eq!(p.string().unwrap(), "ab");
            assert_eq!(pl.byte_len().unwrap(), 16);
        }
    }

    #[test]
    fn missing_sentinel_and_bad_length() {
        let data = hex::decode("0500ff00").unwrap();
        let pl = ParameterList::new(&data, true);
        assert!(pl.iter().next().unwrap().is_err());
        assert!(pl.byte_len().is_err());
    }

    #[test]
    fn partition_sequence() {
        // 2 strings: "a", "bc"
        let data = hex::decode("02000000020000006100000003000000626300").unwrap();
        let p = Parameter {
            raw_id: PID_PARTITION,
            value: &data,
            little_endian: true,
            offset: 0,
        };
        assert_eq!(
            p.string_seq().unwrap(),
            vec!["a".to_string(), "bc".to_string()]
        );
    }

    #[test]
    fn huge_string_rejected() {
        let data = hex::decode("ffffff7f").unwrap();
        let p = Parameter {
            raw_id: PID_TOPIC_NAME,
            value: &data,
            little_endian: true,
            offset: 0,
        };
        assert!(p.string().is_err());
    }
}
