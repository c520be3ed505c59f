//! A small non-cryptographic hasher for the automaton's interning tables (stack sets, stack
//! nodes, normalizations, per-state masks). Their keys are integers produced by the grammar
//! itself, not attacker-chosen strings, and SipHash dominated state creation in profiles of the
//! first mask walks; a multiply-and-rotate word hash is several times cheaper.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// Hashes by folding each word in with a rotate, xor and multiply by an odd constant.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct WordHasher(u64);

const K: u64 = 0x517c_c1b7_2722_0a95;

impl WordHasher {
    #[inline]
    fn add(&mut self, w: u64) {
        self.0 = (self.0.rotate_left(5) ^ w).wrapping_mul(K);
    }
}

impl Hasher for WordHasher {
    #[inline]
    fn finish(&self) -> u64 {
        // Spread the high bits (which the multiply fills best) into the low bits the table uses.
        self.0 ^ (self.0 >> 29)
    }
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.add(u64::from_le_bytes(c.try_into().unwrap_or([0; 8])));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut last = [0u8; 8];
            last[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(last) ^ ((rest.len() as u64) << 59));
        }
    }
    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.add(i as u64);
    }
    #[inline]
    fn write_u32(&mut self, i: u32) {
        self.add(i as u64);
    }
    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }
    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }
}

/// A `HashMap` with [`WordHasher`].
pub(crate) type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<WordHasher>>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distinct_keys_stay_distinct() {
        let mut m: FastMap<Box<[u32]>, usize> = FastMap::default();
        let keys: Vec<Box<[u32]>> =
            (0..3000u32).map(|i| (0..(i % 5)).map(|k| i * 31 + k).collect::<Vec<_>>().into_boxed_slice()).collect();
        for (v, k) in keys.iter().enumerate() {
            m.insert(k.clone(), v);
        }
        let distinct: std::collections::HashSet<&Box<[u32]>> = keys.iter().collect();
        assert_eq!(m.len(), distinct.len());
        for k in &keys {
            assert_eq!(keys[m[k]], *k);
        }
    }
}
