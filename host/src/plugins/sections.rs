//! The section layout of a WebAssembly module's bytes (core spec 5.5.2:
//! an 8-byte preamble, then sections, each an id byte, the size of its
//! contents in unsigned LEB128, and the contents): walking the sections,
//! reading a custom section, appending one. Nothing here validates a
//! module; wasmtime does that when it compiles one.
//!
//! The host reads the `producers` section with it (`language.rs`); the
//! tests, the benchmarks and the xtask append custom sections with it, to
//! make a module that behaves the same under another hash.

use std::ops::Range;

/// `\0asm` and version 1.
pub const PREAMBLE: [u8; 8] = *b"\0asm\x01\0\0\0";
/// The id of custom sections.
const CUSTOM: u8 = 0;
/// The id of the data section (the module's data segments).
pub const DATA: u8 = 11;

/// The sections of `bytes`, in order: each one's id and where its
/// contents are. Ends at the end of the module or at the first malformed
/// header (a size that does not end, or goes past the module's end), and
/// at once when the preamble is not [`PREAMBLE`].
pub fn sections(bytes: &[u8]) -> Sections<'_> {
    let at = if bytes.starts_with(&PREAMBLE) {
        PREAMBLE.len()
    } else {
        bytes.len()
    };
    Sections { bytes, at }
}

/// The iterator of [`sections`].
#[derive(Debug, Clone)]
pub struct Sections<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Iterator for Sections<'_> {
    type Item = (u8, Range<usize>);

    fn next(&mut self) -> Option<Self::Item> {
        let id = *self.bytes.get(self.at)?;
        let mut at = self.at + 1;
        let header = read_u32(self.bytes, &mut at)
            .and_then(|size| at.checked_add(size as usize))
            .filter(|&end| end <= self.bytes.len());
        match header {
            Some(end) => {
                self.at = end;
                Some((id, at..end))
            }
            None => {
                self.at = self.bytes.len();
                None
            }
        }
    }
}

/// The contents of the first custom section called `name`, after its
/// name; None when there is none (or the module's headers are malformed
/// before it).
pub fn custom_section<'a>(bytes: &'a [u8], name: &str) -> Option<&'a [u8]> {
    sections(bytes)
        .filter(|(id, _)| *id == CUSTOM)
        .find_map(|(_, range)| {
            let section = &bytes[range];
            let mut at = 0;
            let length = read_u32(section, &mut at)? as usize;
            let end = at.checked_add(length)?;
            (section.get(at..end)? == name.as_bytes()).then(|| &section[end..])
        })
}

/// `bytes` with a custom section `name` holding `payload` appended. The
/// module behaves as before, but its hash differs: the host sees another
/// version of the plugin.
pub fn with_custom_section(bytes: &[u8], name: &str, payload: &[u8]) -> Vec<u8> {
    let mut contents = Vec::with_capacity(5 + name.len() + payload.len());
    write_usize(name.len(), &mut contents);
    contents.extend_from_slice(name.as_bytes());
    contents.extend_from_slice(payload);
    let mut out = Vec::with_capacity(bytes.len() + 6 + contents.len());
    out.extend_from_slice(bytes);
    out.push(CUSTOM);
    write_usize(contents.len(), &mut out);
    out.extend(contents);
    out
}

/// Reads an unsigned LEB128 `u32` at `*at`, moving past it; None when it
/// does not end within five bytes or the bytes.
fn read_u32(bytes: &[u8], at: &mut usize) -> Option<u32> {
    let mut value: u32 = 0;
    for shift in (0..35).step_by(7) {
        let byte = *bytes.get(*at)?;
        *at += 1;
        value |= u32::from(byte & 0x7f).checked_shl(shift)?;
        if byte & 0x80 == 0 {
            return Some(value);
        }
    }
    None
}

/// Appends `value` in unsigned LEB128.
fn write_usize(mut value: usize, out: &mut Vec<u8>) {
    loop {
        let byte = (value & 0x7f) as u8;
        value >>= 7;
        if value == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leb128_is_seven_bits_a_byte_both_ways() {
        let mut out = Vec::new();
        write_usize(300, &mut out);
        assert_eq!(out, [0xac, 0x02]);
        let mut at = 0;
        assert_eq!(read_u32(&out, &mut at), Some(300));
        assert_eq!(at, 2);
        // A sixth byte is too many for a u32.
        assert_eq!(read_u32(&[0xff; 6], &mut 0), None);
    }

    #[test]
    fn an_appended_section_is_found_by_its_name() {
        let module = with_custom_section(&PREAMBLE, "first", b"one");
        let module = with_custom_section(&module, "second", &[7; 200]);
        assert_eq!(custom_section(&module, "first"), Some(&b"one"[..]));
        assert_eq!(custom_section(&module, "second"), Some(&[7; 200][..]));
        assert_eq!(custom_section(&module, "third"), None);
        let ids: Vec<u8> = sections(&module).map(|(id, _)| id).collect();
        assert_eq!(ids, [CUSTOM, CUSTOM]);
    }

    #[test]
    fn malformed_headers_end_the_walk() {
        // A section claiming more bytes than there are.
        let mut module = with_custom_section(&PREAMBLE, "producers", b"Rust");
        module[9] = 0x7f;
        assert_eq!(sections(&module).count(), 0);
        // A size that never ends.
        assert_eq!(
            sections(b"\x00asm\x01\x00\x00\x00\x00\xff\xff\xff\xff\xff\xff").count(),
            0
        );
        // No preamble.
        assert_eq!(sections(b"\x00asm").count(), 0);
        assert_eq!(
            sections(b"\x01\x02\x03\x04\x05\x06\x07\x08\x00\x00").count(),
            0
        );
    }
}
