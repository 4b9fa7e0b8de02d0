//! On-disk encoding: keys of the entries tree, names and values of the meta tree.

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
    }
}
