//! On-disk encoding: keys of the entries tree, names and values of the meta tree, and the
//! checksum every stored value carries ([`seal`], [`unseal`]).

use protobuf::Message;

use crate::error::{Error, Result};

/// Name of the tree holding log entries, keyed by [`index_key`].
pub const ENTRIES_TREE: &[u8] = b"raft_entries";
/// Name of the tree holding everything else.
pub const META_TREE: &[u8] = b"raft_meta";

/// Meta key: the `HardState` (protobuf).
pub const KEY_HARD_STATE: &str = "hard_state";
/// Meta key: the `ConfState` (protobuf).
pub const KEY_CONF_STATE: &str = "conf_state";
/// Meta key: the latest `Snapshot` (protobuf: metadata and data).
pub const KEY_SNAPSHOT: &str = "snapshot";
/// Meta key: index and term of the last discarded entry (16 bytes, two big-endian u64).
pub const KEY_TRUNCATED: &str = "truncated";
/// Meta key: applied index (8 bytes big-endian) followed by the applied state bytes.
pub const KEY_APPLIED: &str = "applied";
/// Meta key of the recovering flag (present: the replica recovers a lost log).
pub const KEY_RECOVERING: &str = "recovering";
/// Meta key: the on-disk format version (u32 big-endian); see [`FORMAT_VERSION`].
pub const KEY_FORMAT: &str = "format";
/// Meta key: the write generation (u64 big-endian), raised by the first write after each
/// flush; the durable mark records the generation each flush made durable.
pub const KEY_GENERATION: &str = "generation";

/// The on-disk format this build writes and reads. Version 1: every value is sealed with a
/// CRC32 ([`seal`]), the meta tree holds [`KEY_FORMAT`] and [`KEY_GENERATION`]. Stores
/// without [`KEY_FORMAT`] were written before checksums (format 0) and are refused.
pub const FORMAT_VERSION: u32 = 1;

/// Bytes of the checksum in front of every stored value.
pub const CHECKSUM_LEN: usize = 4;

/// CRC32 (IEEE, crc32fast) of `key` followed by `payload`: a value copied under another
/// key fails as surely as a flipped bit.
pub fn checksum(key: &[u8], payload: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(key);
    h.update(payload);
    h.finalize()
}

/// The stored form of `payload` under `key`: its [`checksum`] (4 bytes big-endian), then
/// the payload.
pub fn seal(key: &[u8], payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(CHECKSUM_LEN + payload.len());
    out.extend_from_slice(&checksum(key, payload).to_be_bytes());
    out.extend_from_slice(payload);
    out
}

/// The payload of a value read from `key`, after checking its checksum.
///
/// Errors: [`Error::ShortRecord`] when the value cannot even hold a checksum,
/// [`Error::Checksum`] when the checksum does not match; both name `what` and `place`.
pub fn unseal<'a>(
    what: &'static str,
    place: impl FnOnce() -> String,
    key: &[u8],
    value: &'a [u8],
) -> Result<&'a [u8]> {
    if value.len() < CHECKSUM_LEN {
        return Err(Error::ShortRecord {
            what,
            key: place(),
            len: value.len(),
        });
    }
    let (sum, payload) = value.split_at(CHECKSUM_LEN);
    let mut stored = [0u8; CHECKSUM_LEN];
    stored.copy_from_slice(sum);
    let stored = u32::from_be_bytes(stored);
    let computed = checksum(key, payload);
    if stored != computed {
        return Err(Error::Checksum {
            what,
            key: place(),
            stored,
            computed,
        });
    }
    Ok(payload)
}

/// Readable place of the entry at `index`, for errors.
pub fn entry_place(index: u64) -> String {
    format!("{}/{index}", String::from_utf8_lossy(ENTRIES_TREE))
}

/// Readable place of a meta key, for errors.
pub fn meta_place(key: &str) -> String {
    format!("{}/{key}", String::from_utf8_lossy(META_TREE))
}

/// Decodes a big-endian u64 stored under meta key `key`.
pub fn decode_u64(key: &'static str, bytes: &[u8]) -> Result<u64> {
    let arr: [u8; 8] = bytes.try_into().map_err(|_| Error::CorruptedMeta {
        key,
        reason: format!("expected 8 bytes, found {}", bytes.len()),
    })?;
    Ok(u64::from_be_bytes(arr))
}

/// Decodes a big-endian u32 stored under meta key `key`.
pub fn decode_u32(key: &'static str, bytes: &[u8]) -> Result<u32> {
    let arr: [u8; 4] = bytes.try_into().map_err(|_| Error::CorruptedMeta {
        key,
        reason: format!("expected 4 bytes, found {}", bytes.len()),
    })?;
    Ok(u32::from_be_bytes(arr))
}

/// Key of the entry at `index`: 8 bytes big-endian, so sled's byte order is index order.
pub fn index_key(index: u64) -> [u8; 8] {
    index.to_be_bytes()
}

/// Decodes an entries-tree key.
pub fn key_index(key: &[u8]) -> Result<u64> {
    let bytes: [u8; 8] = key
        .try_into()
        .map_err(|_| Error::CorruptedKey(key.to_vec()))?;
    Ok(u64::from_be_bytes(bytes))
}

/// Encodes a raft protobuf message.
pub fn encode<M: Message>(what: &'static str, m: &M) -> Result<Vec<u8>> {
    m.write_to_bytes()
        .map_err(|source| Error::Encode { what, source })
}

/// Decodes a raft protobuf message read from `key`.
pub fn decode<M: Message>(
    what: &'static str,
    key: impl FnOnce() -> String,
    bytes: &[u8],
) -> Result<M> {
    M::parse_from_bytes(bytes).map_err(|source| Error::Decode {
        what,
        key: key(),
        source,
    })
}

/// Encodes a (index, term) pair.
pub fn encode_index_term(index: u64, term: u64) -> [u8; 16] {
    let mut out = [0u8; 16];
    out[..8].copy_from_slice(&index.to_be_bytes());
    out[8..].copy_from_slice(&term.to_be_bytes());
    out
}

/// Decodes a (index, term) pair stored under meta key `key`.
pub fn decode_index_term(key: &'static str, bytes: &[u8]) -> Result<(u64, u64)> {
    let arr: [u8; 16] = bytes.try_into().map_err(|_| Error::CorruptedMeta {
        key,
        reason: format!("expected 16 bytes, found {}", bytes.len()),
    })?;
    let (i, t) = arr.split_at(8);
    let index = u64::from_be_bytes(i.try_into().map_err(|_| corrupted_len(key))?);
    let term = u64::from_be_bytes(t.try_into().map_err(|_| corrupted_len(key))?);
    Ok((index, term))
}

fn corrupted_len(key: &'static str) -> Error {
    Error::CorruptedMeta {
        key,
        reason: "bad length".to_string(),
    }
}

/// Encodes the applied state value: index then data.
pub fn encode_applied(index: u64, data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(8 + data.len());
    out.extend_from_slice(&index.to_be_bytes());
    out.extend_from_slice(data);
    out
}

/// Decodes the applied state value.
pub fn decode_applied(bytes: &[u8]) -> Result<(u64, Vec<u8>)> {
    if bytes.len() < 8 {
        return Err(Error::CorruptedMeta {
            key: KEY_APPLIED,
            reason: format!("expected at least 8 bytes, found {}", bytes.len()),
        });
    }
    let (i, data) = bytes.split_at(8);
    let index = u64::from_be_bytes(i.try_into().map_err(|_| corrupted_len(KEY_APPLIED))?);
    Ok((index, data.to_vec()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_keys_sort_like_indexes() {
        let mut keys: Vec<[u8; 8]> = [300u64, 1, 256, 255, u64::MAX, 0]
            .iter()
            .map(|&i| index_key(i))
            .collect();
        keys.sort();
        let back: Vec<u64> = keys.iter().map(|k| key_index(k).unwrap()).collect();
        assert_eq!(back, vec![0, 1, 255, 256, 300, u64::MAX]);
    }

    #[test]
    fn bad_keys_and_values_are_errors() {
        assert!(matches!(key_index(&[1, 2, 3]), Err(Error::CorruptedKey(_))));
        assert!(decode_index_term(KEY_TRUNCATED, &[0; 15]).is_err());
        assert!(decode_applied(&[0; 7]).is_err());
        assert_eq!(
            decode_applied(&encode_applied(7, b"xy")).unwrap(),
            (7, b"xy".to_vec())
        );
        assert_eq!(
            decode_index_term(KEY_TRUNCATED, &encode_index_term(5, 9)).unwrap(),
            (5, 9)
        );
        let garbage = [0xffu8; 5];
        let r: Result<raft::eraftpb::Entry> = decode("entry", || "x".into(), &garbage);
        assert!(matches!(r, Err(Error::Decode { .. })));
        assert_eq!(decode_u64(KEY_GENERATION, &7u64.to_be_bytes()).unwrap(), 7);
        assert!(decode_u64(KEY_GENERATION, &[0; 7]).is_err());
        assert_eq!(decode_u32(KEY_FORMAT, &1u32.to_be_bytes()).unwrap(), 1);
        assert!(decode_u32(KEY_FORMAT, &[0; 5]).is_err());
    }

    #[test]
    fn sealed_values_round_trip_and_every_bit_flip_is_caught() {
        let key = index_key(42);
        let sealed = seal(&key, b"payload");
        assert_eq!(
            unseal("entry", || "e/42".into(), &key, &sealed).unwrap(),
            b"payload"
        );
        for bit in 0..sealed.len() * 8 {
            let mut bad = sealed.clone();
            bad[bit / 8] ^= 1 << (bit % 8);
            let err = unseal("entry", || "e/42".into(), &key, &bad).unwrap_err();
            assert!(
                err.to_string().starts_with("STORAGE-E021"),
                "bit {bit}: {err}"
            );
        }
        // The same bytes under another key are refused: values cannot be moved around.
        let other = index_key(43);
        assert!(matches!(
            unseal("entry", || "e/43".into(), &other, &sealed),
            Err(Error::Checksum { .. })
        ));
        assert!(matches!(
            unseal("entry", || "e/42".into(), &key, &sealed[..3]),
            Err(Error::ShortRecord { len: 3, .. })
        ));
        // An empty payload still carries its checksum.
        assert_eq!(seal(b"k", b"").len(), CHECKSUM_LEN);
    }
}
