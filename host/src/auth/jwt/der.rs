//! The little DER a public key needs: one TLV at a time, definite minimal
//! lengths only, positive minimal integers. Ours rather than a crate's so
//! that the bytes whose modulus size was checked are exactly the bytes
//! handed to ring.

use super::error::KeyError;

/// DER body of the rsaEncryption OID, 1.2.840.113549.1.1.1.
pub(super) const OID_RSA_ENCRYPTION: &[u8] =
    &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01];

pub(super) const DER_INTEGER: u8 = 0x02;
pub(super) const DER_BIT_STRING: u8 = 0x03;
pub(super) const DER_NULL: u8 = 0x05;
pub(super) const DER_OID: u8 = 0x06;
pub(super) const DER_SEQUENCE: u8 = 0x30;

/// Reads one TLV with the expected tag; returns (content, rest). DER only:
/// definite, minimal lengths.
pub(super) fn der_read(input: &[u8], tag: u8) -> Result<(&[u8], &[u8]), KeyError> {
    let (&t, rest) = input.split_first().ok_or(KeyError::Der("truncated"))?;
    if t != tag {
        return Err(KeyError::Der("unexpected tag"));
    }
    let (&first, rest) = rest.split_first().ok_or(KeyError::Der("truncated"))?;
    let (len, rest) = if first < 0x80 {
        (usize::from(first), rest)
    } else {
        let count = usize::from(first & 0x7f);
        if count == 0 {
            return Err(KeyError::Der("indefinite length"));
        }
        if count > 4 {
            return Err(KeyError::Der("length too long"));
        }
        let (len_bytes, rest) = rest
            .split_at_checked(count)
            .ok_or(KeyError::Der("truncated"))?;
        if len_bytes.first() == Some(&0) {
            return Err(KeyError::Der("non-minimal length"));
        }
        let len = len_bytes
            .iter()
            .fold(0usize, |acc, &b| (acc << 8) | usize::from(b));
        if len < 0x80 {
            return Err(KeyError::Der("non-minimal length"));
        }
        (len, rest)
    };
    rest.split_at_checked(len)
        .ok_or(KeyError::Der("length beyond the input"))
}

/// Reads one TLV that must span the whole input.
pub(super) fn der_whole(input: &[u8], tag: u8) -> Result<&[u8], KeyError> {
    let (content, rest) = der_read(input, tag)?;
    der_end(rest)?;
    Ok(content)
}

pub(super) fn der_end(rest: &[u8]) -> Result<(), KeyError> {
    if rest.is_empty() {
        Ok(())
    } else {
        Err(KeyError::Der("trailing data"))
    }
}

/// Content of a DER INTEGER that must be positive and minimally encoded;
/// returns its magnitude without the sign byte.
pub(super) fn positive_integer(content: &[u8]) -> Result<&[u8], KeyError> {
    match content {
        [] => Err(KeyError::Der("empty INTEGER")),
        [first, ..] if first & 0x80 != 0 => Err(KeyError::Der("negative INTEGER")),
        [0] => Err(KeyError::Der("zero INTEGER")),
        [0, second, ..] if second & 0x80 == 0 => Err(KeyError::Der("non-minimal INTEGER")),
        [0, magnitude @ ..] => Ok(magnitude),
        magnitude => Ok(magnitude),
    }
}

/// Bits in a big-endian magnitude whose first byte is non-zero.
pub(super) fn bit_length(magnitude: &[u8]) -> usize {
    match magnitude.split_first() {
        Some((&first, rest)) => rest.len() * 8 + (8 - first.leading_zeros() as usize),
        None => 0,
    }
}
