//! Sorting values without their ids: what the wide fast paths (`top_p_wide`, `mirostat_v2`)
//! use when the full path's result depends on the sorted candidates only through the
//! sequence of their values (equal logits give equal `p` bits, so every order sorted by
//! logit gives the same sums, cut and draw). A value becomes a `u32` key whose ascending
//! order is the full path's descending logit order, and the keys are radix-sorted.

/// An order key that sorts descending by logit, with `-0.0` and `+0.0` equal (as llama.cpp's
/// comparison has them).
#[inline]
pub(crate) fn desc_key(v: f32) -> u32 {
    let b = if v == 0.0 { 0 } else { v.to_bits() };
    let asc = if b >> 31 == 1 { !b } else { b | 0x8000_0000 };
    !asc
}

/// The logit of a [`desc_key`] (`+0.0` for both zeros).
#[inline]
pub(crate) fn key_value(k: u32) -> f32 {
    let asc = !k;
    f32::from_bits(if asc >> 31 == 1 { asc & 0x7fff_ffff } else { !asc })
}

/// Sorts `v` ascending (LSD radix, 11 bits a pass, the three histograms taken in one read;
/// passes whose digit is the same for every key are skipped).
pub(crate) fn radix_sort(v: &mut Vec<u32>, tmp: &mut Vec<u32>, cnt: &mut Vec<u32>) {
    // u32 counts (a slice never holds 2^32 keys here: at most a vocabulary) keep the three
    // histograms in 24 KB, inside L1.
    debug_assert!(v.len() < u32::MAX as usize);
    const BITS: u32 = 11;
    const R: usize = 1 << BITS;
    const MASK: u32 = R as u32 - 1;
    tmp.clear();
    tmp.resize(v.len(), 0);
    cnt.clear();
    cnt.resize(3 * R, 0);
    for &k in v.iter() {
        cnt[(k & MASK) as usize] += 1;
        cnt[R + ((k >> BITS) & MASK) as usize] += 1;
        cnt[2 * R + (k >> (2 * BITS)) as usize] += 1;
    }
    for pass in 0..3 {
        let shift = BITS * pass as u32;
        let c = &mut cnt[pass * R..(pass + 1) * R];
        if c.contains(&(v.len() as u32)) {
            continue;
        }
        let mut off = 0;
        for n in c.iter_mut() {
            let k = *n;
            *n = off;
            off += k;
        }
        for &k in v.iter() {
            let d = ((k >> shift) & MASK) as usize;
            tmp[c[d] as usize] = k;
            c[d] += 1;
        }
        std::mem::swap(v, tmp);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn desc_key_orders_descending_with_signed_zeros_equal() {
        let vals = [f32::INFINITY, 3.5, 1.0, 0.0, -0.0, -1e-30, -2.0, f32::NEG_INFINITY];
        for w in vals.windows(2) {
            assert!(desc_key(w[0]) <= desc_key(w[1]), "{w:?}");
            assert_eq!(desc_key(w[0]) == desc_key(w[1]), w[0] == w[1], "{w:?}");
        }
    }

    #[test]
    fn key_value_inverts_desc_key() {
        for v in [f32::INFINITY, 3.5, 1.0, 1e-40, 0.0, -1e-30, -2.0, f32::NEG_INFINITY, f32::MAX, -f32::MAX] {
            assert_eq!(key_value(desc_key(v)).to_bits(), v.to_bits(), "{v}");
        }
        assert_eq!(key_value(desc_key(-0.0)).to_bits(), 0);
    }

    #[test]
    fn radix_sort_sorts() {
        let mut x = 12345u32;
        let mut v: Vec<u32> = (0..5000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                x % 3 * 0x0400_0000 + x % 9000
            })
            .collect();
        let mut want = v.clone();
        want.sort_unstable();
        radix_sort(&mut v, &mut Vec::new(), &mut Vec::new());
        assert_eq!(v, want);
    }
}
