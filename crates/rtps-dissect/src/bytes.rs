//! Checked, endian-aware reads at absolute offsets of a byte slice.
//!
//! Every accessor returns a [`DissectError::Truncated`] instead of panicking,
//! so parsers can be written as straight-line code with `?`.

use crate::error::{DissectError, Layer, Result};

/// A byte slice tagged with the layer it belongs to and its endianness.
#[derive(Debug, Clone, Copy)]
pub struct Bytes<'a> {
    data: &'a [u8],
    layer: Layer,
    little_endian: bool,
}

impl<'a> Bytes<'a> {
    pub fn new(data: &'a [u8], layer: Layer, little_endian: bool) -> Self {
        Self {
            data,
            layer,
            little_endian,
        }
    }

    /// The same layer and endianness over other bytes (a fixed-length prefix, whose
    /// reads the compiler can then check once).
    #[inline(always)]
    pub fn with<'b>(&self, data: &'b [u8]) -> Bytes<'b> {
        Bytes {
            data,
            layer: self.layer,
            little_endian: self.little_endian,
        }
    }

    pub fn big(data: &'a [u8], layer: Layer) -> Self {
        Self::new(data, layer, false)
    }

    pub fn data(&self) -> &'a [u8] {
        self.data
    }

    pub fn little_endian(&self) -> bool {
        self.little_endian
    }

    fn truncated(&self, offset: usize, needed: usize) -> DissectError {
        DissectError::Truncated {
            layer: self.layer,
            offset,
            needed,
            actual: self.data.len().saturating_sub(offset),
        }
    }

    /// `len` bytes starting at `offset`.
    pub fn slice(&self, offset: usize, len: usize) -> Result<&'a [u8]> {
        offset
            .checked_add(len)
            .and_then(|end| self.data.get(offset..end))
            .ok_or_else(|| self.truncated(offset, len))
    }

    /// Everything from `offset` to the end.
    pub fn rest(&self, offset: usize) -> Result<&'a [u8]> {
        self.data
            .get(offset..)
            .ok_or_else(|| self.truncated(offset, 0))
    }

    pub fn array<const N: usize>(&self, offset: usize) -> Result<[u8; N]> {
        let s = self.slice(offset, N)?;
        let mut out = [0u8; N];
        out.copy_from_slice(s);
        Ok(out)
    }

    pub fn u8(&self, offset: usize) -> Result<u8> {
        self.data
            .get(offset)
            .copied()
            .ok_or_else(|| self.truncated(offset, 1))
    }

    pub fn u16(&self, offset: usize) -> Result<u16> {
        let a = self.array::<2>(offset)?;
        Ok(if self.little_endian {
            u16::from_le_bytes(a)
        } else {
            u16::from_be_bytes(a)
        })
    }

    pub fn u32(&self, offset: usize) -> Result<u32> {
        let a = self.array::<4>(offset)?;
        Ok(if self.little_endian {
            u32::from_le_bytes(a)
        } else {
            u32::from_be_bytes(a)
        })
    }

    pub fn i32(&self, offset: usize) -> Result<i32> {
        let a = self.array::<4>(offset)?;
        Ok(if self.little_endian {
            i32::from_le_bytes(a)
        } else {
            i32::from_be_bytes(a)
        })
    }

    pub fn u64(&self, offset: usize) -> Result<u64> {
        let a = self.array::<8>(offset)?;
        Ok(if self.little_endian {
            u64::from_le_bytes(a)
        } else {
            u64::from_be_bytes(a)
        })
    }

    /// Network byte order regardless of the slice's endianness (IP, UDP, locators' addresses).
    pub fn be_u16(&self, offset: usize) -> Result<u16> {
        Ok(u16::from_be_bytes(self.array::<2>(offset)?))
    }

    pub fn be_u32(&self, offset: usize) -> Result<u32> {
        Ok(u32::from_be_bytes(self.array::<4>(offset)?))
    }
}
