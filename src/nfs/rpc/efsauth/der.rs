//! The few DER encodings the certificate needs, written by hand: a handful of tags, all
//! definite-length, which is less code than an ASN.1 crate's derive and exact by
//! construction (the fixtures check every byte).

/// A tag-length-value with `content` inside.
pub fn tlv(tag: u8, content: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    let n = content.len();
    if n < 0x80 {
        out.push(n as u8);
    } else {
        let bytes = n.to_be_bytes();
        let skip = bytes.iter().take_while(|&&b| b == 0).count();
        out.push(0x80 | (bytes.len() - skip) as u8);
        out.extend_from_slice(&bytes[skip..]);
    }
    out.extend_from_slice(content);
    out
}

/// A SEQUENCE of already encoded parts.
pub fn sequence(parts: &[&[u8]]) -> Vec<u8> {
    tlv(0x30, &parts.concat())
}

pub fn set(parts: &[&[u8]]) -> Vec<u8> {
    tlv(0x31, &parts.concat())
}

pub fn utf8_string(s: &str) -> Vec<u8> {
    tlv(0x0c, s.as_bytes())
}

pub fn octet_string(b: &[u8]) -> Vec<u8> {
    tlv(0x04, b)
}

/// A BIT STRING of whole bytes (no unused bits).
pub fn bit_string(b: &[u8]) -> Vec<u8> {
    tlv(0x03, &[&[0u8][..], b].concat())
}

/// UTCTime from its `YYMMDDHHMMSSZ` text.
pub fn utc_time(text: &str) -> Vec<u8> {
    tlv(0x17, text.as_bytes())
}

pub const NULL: [u8; 2] = [0x05, 0x00];

/// A non-negative INTEGER from a `u64`.
pub fn uint(n: u64) -> Vec<u8> {
    let bytes = n.to_be_bytes();
    let skip = bytes.iter().take_while(|&&b| b == 0).count().min(7);
    let mut content = bytes[skip..].to_vec();
    if content[0] & 0x80 != 0 {
        content.insert(0, 0);
    }
    tlv(0x02, &content)
}

/// An OBJECT IDENTIFIER from its dotted arcs.
pub fn oid(arcs: &[u64]) -> Vec<u8> {
    let mut content = Vec::new();
    let mut put = |mut v: u64| {
        let mut chunk = vec![(v & 0x7f) as u8];
        v >>= 7;
        while v > 0 {
            chunk.push(0x80 | (v & 0x7f) as u8);
            v >>= 7;
        }
        chunk.reverse();
        content.extend(chunk);
    };
    put(arcs[0] * 40 + arcs[1]);
    for &a in &arcs[2..] {
        put(a);
    }
    tlv(0x06, &content)
}

/// `[n] EXPLICIT` around an encoded value.
pub fn explicit(n: u8, inner: &[u8]) -> Vec<u8> {
    tlv(0xa0 | n, inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodings() {
        assert_eq!(tlv(4, &[0; 3]), [4, 3, 0, 0, 0]);
        assert_eq!(&tlv(4, &[0; 0x80])[..3], [4, 0x81, 0x80]);
        assert_eq!(&tlv(4, &[0; 0x1d9])[..4], [4, 0x82, 0x01, 0xd9]);
        assert_eq!(uint(0), [2, 1, 0]);
        assert_eq!(uint(0x80), [2, 2, 0, 0x80]);
        assert_eq!(uint(0x1234), [2, 2, 0x12, 0x34]);
        assert_eq!(
            oid(&[1, 3, 6, 1, 4, 1, 4843, 7, 1]),
            [6, 9, 0x2b, 6, 1, 4, 1, 0xa5, 0x6b, 7, 1]
        );
        assert_eq!(oid(&[2, 5, 29, 14]), [6, 3, 0x55, 0x1d, 0x0e]);
        assert_eq!(
            oid(&[1, 2, 840, 113549, 1, 1, 11]),
            [6, 9, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 1, 1, 0x0b]
        );
    }
}
