//! Big-endian field access on fixed-size buffers.
//!
//! Every helper takes the buffer as a fixed-size array and a constant offset chosen by the
//! caller; all offsets used in this crate are compile-time constants inside the array, so
//! these accesses cannot go out of bounds.

#[inline(always)]
pub(crate) fn get_u16<const N: usize>(b: &[u8; N], o: usize) -> u16 {
    u16::from_be_bytes([b[o], b[o + 1]])
}

#[inline(always)]
pub(crate) fn get_u24<const N: usize>(b: &[u8; N], o: usize) -> u32 {
    u32::from_be_bytes([0, b[o], b[o + 1], b[o + 2]])
}

#[inline(always)]
pub(crate) fn get_u32<const N: usize>(b: &[u8; N], o: usize) -> u32 {
    u32::from_be_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]])
}

#[inline(always)]
pub(crate) fn get_u64<const N: usize>(b: &[u8; N], o: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[o..o + 8]);
    u64::from_be_bytes(a)
}

#[inline(always)]
pub(crate) fn get_arr<const N: usize, const M: usize>(b: &[u8; N], o: usize) -> [u8; M] {
    let mut a = [0u8; M];
    a.copy_from_slice(&b[o..o + M]);
    a
}

#[inline(always)]
pub(crate) fn put_u16<const N: usize>(b: &mut [u8; N], o: usize, v: u16) {
    b[o..o + 2].copy_from_slice(&v.to_be_bytes());
}

/// Writes the low 24 bits of `v`.
#[inline(always)]
pub(crate) fn put_u24<const N: usize>(b: &mut [u8; N], o: usize, v: u32) {
    b[o..o + 3].copy_from_slice(&v.to_be_bytes()[1..]);
}

#[inline(always)]
pub(crate) fn put_u32<const N: usize>(b: &mut [u8; N], o: usize, v: u32) {
    b[o..o + 4].copy_from_slice(&v.to_be_bytes());
}

#[inline(always)]
pub(crate) fn put_u64<const N: usize>(b: &mut [u8; N], o: usize, v: u64) {
    b[o..o + 8].copy_from_slice(&v.to_be_bytes());
}

#[inline(always)]
pub(crate) fn put_arr<const N: usize>(b: &mut [u8; N], o: usize, v: &[u8]) {
    b[o..o + v.len()].copy_from_slice(v);
}

/// Borrows the first `M` bytes of `s` as an array, or reports the shortfall.
#[inline]
pub(crate) fn prefix<'a, const M: usize>(
    s: &'a [u8],
    what: &'static str,
) -> Result<&'a [u8; M], crate::MadError> {
    s.get(..M)
        .and_then(|p| p.try_into().ok())
        .ok_or(crate::MadError::Truncated {
            what,
            needed: M,
            got: s.len(),
        })
}
