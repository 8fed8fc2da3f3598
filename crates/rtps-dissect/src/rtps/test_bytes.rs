//! Pseudo-random submessage bodies for the tests of the decoders and the walk's checks.

/// Bodies of mostly zeros and small values, so that numBits, octetsToInlineQos and SN
/// halves take their interesting values (a fixed seed: every run sees the same bodies).
pub(super) struct SmallBytes(u64);

impl SmallBytes {
    pub(super) fn new() -> Self {
        Self(0x9e37_79b9_7f4a_7c15)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// `len` bytes, a third of them any value, the rest 0, 1 or 2.
    pub(super) fn body(&mut self, len: usize) -> Vec<u8> {
        (0..len)
            .map(|_| match self.next() {
                r if r % 3 == 0 => (r >> 8) as u8,
                r => ((r >> 8) % 3) as u8,
            })
            .collect()
    }
}
