//! The fabric-simd wire protocol (see `PROTOCOL.md`): frames of
//! `u32 length (big-endian, counts type + payload) | u8 type | payload`.
//! Reading never panics on malformed input; it returns an error.

use std::io::{self, Read, Write};

/// Largest accepted frame body (type + payload).
pub const MAX_FRAME: usize = 1 << 20;

/// Client -> server: attach at a CA port. Payload: UTF-8 name.
pub const T_ATTACH: u8 = 0x01;
/// Server -> client: attached. Payload: JSON.
pub const T_ATTACHED: u8 = 0x02;
/// MAD. Client -> server: u16 DLID + 256 bytes. Server -> client: u64 time + u16 SLID
/// + 256 bytes.
pub const T_MAD: u8 = 0x03;
/// Client -> server: control request (JSON).
pub const T_CONTROL: u8 = 0x04;
/// Server -> client: control response (JSON).
pub const T_CONTROL_RESP: u8 = 0x05;
/// Server -> client: error (UTF-8 text); the server closes the connection after it.
pub const T_ERROR: u8 = 0x06;

/// Client -> server: attach as a non-SM client (IsSM stays clear). Payload: UTF-8 name;
/// answered with ATTACHED.
pub const T_ATTACH_CLIENT: u8 = 0x07;
/// GMP (non-SMP MAD, e.g. SA). Client -> server: u16 DLID + u16 P_Key + 256 bytes
/// [+ u8 SL]. Server -> client: u64 time + u16 SLID + u16 P_Key + 256 bytes.
pub const T_GMP: u8 = 0x08;

/// Length of a client -> server GMP payload without an SL (the packet rides SL 0).
pub const GMP_OUT_LEN: usize = 2 + 2 + 256;
/// Length of a client -> server GMP payload carrying an SL byte after the MAD.
pub const GMP_OUT_SL_LEN: usize = GMP_OUT_LEN + 1;
/// Length of a server -> client GMP payload.
pub const GMP_IN_LEN: usize = 8 + 2 + 2 + 256;

/// Client -> server GMP payload.
pub fn gmp_out(dlid: u16, pkey: u16, mad: &[u8; 256]) -> [u8; GMP_OUT_LEN] {
    let mut b = [0u8; GMP_OUT_LEN];
    b[..2].copy_from_slice(&dlid.to_be_bytes());
    b[2..4].copy_from_slice(&pkey.to_be_bytes());
    b[4..].copy_from_slice(mad);
    b
}

/// Parses a client -> server GMP payload: (DLID, P_Key, MAD).
pub fn parse_gmp_out(p: &[u8]) -> Option<(u16, u16, [u8; 256])> {
    if p.len() != GMP_OUT_LEN {
        return None;
    }
    let mut m = [0u8; 256];
    m.copy_from_slice(&p[4..]);
    Some((
        u16::from_be_bytes([p[0], p[1]]),
        u16::from_be_bytes([p[2], p[3]]),
        m,
    ))
}

/// Client -> server GMP payload on service level `sl` (a trailing SL byte).
pub fn gmp_out_sl(dlid: u16, pkey: u16, sl: u8, mad: &[u8; 256]) -> [u8; GMP_OUT_SL_LEN] {
    let mut b = [0u8; GMP_OUT_SL_LEN];
    b[..GMP_OUT_LEN].copy_from_slice(&gmp_out(dlid, pkey, mad));
    b[GMP_OUT_LEN] = sl;
    b
}

/// Parses a client -> server GMP payload of either length: (DLID, P_Key, SL, MAD); SL 0
/// when the payload has no SL byte.
pub fn parse_gmp_out_sl(p: &[u8]) -> Option<(u16, u16, u8, [u8; 256])> {
    let (body, sl) = match p.len() {
        GMP_OUT_LEN => (p, 0),
        GMP_OUT_SL_LEN => (&p[..GMP_OUT_LEN], p[GMP_OUT_LEN]),
        _ => return None,
    };
    let (dlid, pkey, mad) = parse_gmp_out(body)?;
    Some((dlid, pkey, sl, mad))
}

/// Server -> client GMP payload.
pub fn gmp_in(time: u64, slid: u16, pkey: u16, mad: &[u8; 256]) -> [u8; GMP_IN_LEN] {
    let mut b = [0u8; GMP_IN_LEN];
    b[..8].copy_from_slice(&time.to_be_bytes());
    b[8..10].copy_from_slice(&slid.to_be_bytes());
    b[10..12].copy_from_slice(&pkey.to_be_bytes());
    b[12..].copy_from_slice(mad);
    b
}

/// Parses a server -> client GMP payload: (time, SLID, P_Key, MAD).
pub fn parse_gmp_in(p: &[u8]) -> Option<(u64, u16, u16, [u8; 256])> {
    if p.len() != GMP_IN_LEN {
        return None;
    }
    let mut t = [0u8; 8];
    t.copy_from_slice(&p[..8]);
    let mut m = [0u8; 256];
    m.copy_from_slice(&p[12..]);
    Some((
        u64::from_be_bytes(t),
        u16::from_be_bytes([p[8], p[9]]),
        u16::from_be_bytes([p[10], p[11]]),
        m,
    ))
}

/// Length of a client -> server MAD payload.
pub const MAD_OUT_LEN: usize = 2 + 256;
/// Length of a server -> client MAD payload.
pub const MAD_IN_LEN: usize = 8 + 2 + 256;

/// Writes one frame.
pub fn write_frame<W: Write>(w: &mut W, ty: u8, payload: &[u8]) -> io::Result<()> {
    let len = u32::try_from(payload.len() + 1)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "frame too large"))?;
    let mut head = [0u8; 5];
    head[..4].copy_from_slice(&len.to_be_bytes());
    head[4] = ty;
    w.write_all(&head)?;
    w.write_all(payload)
}

/// Builds one frame in memory.
pub fn frame(ty: u8, payload: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(payload.len() + 5);
    v.extend_from_slice(&((payload.len() + 1) as u32).to_be_bytes());
    v.push(ty);
    v.extend_from_slice(payload);
    v
}

/// Reads one frame: `Ok(None)` at a clean end of stream, an `InvalidData` error for a
/// zero or oversized length.
pub fn read_frame<R: Read>(r: &mut R) -> io::Result<Option<(u8, Vec<u8>)>> {
    let mut len = [0u8; 4];
    match r.read_exact(&mut len) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let len = u32::from_be_bytes(len) as usize;
    if len == 0 || len > MAX_FRAME {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("frame length {len} outside 1..={MAX_FRAME}"),
        ));
    }
    let mut body = vec![0u8; len];
    r.read_exact(&mut body)?;
    let ty = body[0];
    body.remove(0);
    Ok(Some((ty, body)))
}

/// Client -> server MAD payload.
pub fn mad_out(dlid: u16, mad: &[u8; 256]) -> [u8; MAD_OUT_LEN] {
    let mut b = [0u8; MAD_OUT_LEN];
    b[..2].copy_from_slice(&dlid.to_be_bytes());
    b[2..].copy_from_slice(mad);
    b
}

/// Parses a client -> server MAD payload.
pub fn parse_mad_out(p: &[u8]) -> Option<(u16, [u8; 256])> {
    if p.len() != MAD_OUT_LEN {
        return None;
    }
    let dlid = u16::from_be_bytes([p[0], p[1]]);
    let mut m = [0u8; 256];
    m.copy_from_slice(&p[2..]);
    Some((dlid, m))
}

/// Server -> client MAD payload.
pub fn mad_in(time: u64, slid: u16, mad: &[u8; 256]) -> [u8; MAD_IN_LEN] {
    let mut b = [0u8; MAD_IN_LEN];
    b[..8].copy_from_slice(&time.to_be_bytes());
    b[8..10].copy_from_slice(&slid.to_be_bytes());
    b[10..].copy_from_slice(mad);
    b
}

/// Parses a server -> client MAD payload.
pub fn parse_mad_in(p: &[u8]) -> Option<(u64, u16, [u8; 256])> {
    if p.len() != MAD_IN_LEN {
        return None;
    }
    let mut t = [0u8; 8];
    t.copy_from_slice(&p[..8]);
    let slid = u16::from_be_bytes([p[8], p[9]]);
    let mut m = [0u8; 256];
    m.copy_from_slice(&p[10..]);
    Some((u64::from_be_bytes(t), slid, m))
}
