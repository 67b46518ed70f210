//! Deterministic randomness for the workloads. The machine's generator is not visible to
//! programs, so each workload owns one of these, seeded from `--seed` or from its command
//! line: a splitmix64 generator, a Zipf sampler (rejection-inversion, constant memory for any
//! number of pages) and a keyed permutation of `0..n` (a Feistel network with cycle walking,
//! constant memory) for visiting every page once in a random order.

/// The splitmix64 output function: a bijective 64-bit mixer.
pub fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The inverse of [`mix64`]: `unmix64(mix64(z)) == z` for every `z`.
pub fn unmix64(mut z: u64) -> u64 {
    z ^= (z >> 31) ^ (z >> 62);
    z = z.wrapping_mul(0x3196_42b2_d24d_8ec3);
    z ^= (z >> 27) ^ (z >> 54);
    z = z.wrapping_mul(0x96de_1b17_3f11_9089);
    z ^ (z >> 30) ^ (z >> 60)
}

/// FNV-1a over `bytes`, continuing from `h` (0 starts a new hash).
pub fn fnv1a(h: u64, bytes: &[u8]) -> u64 {
    let mut h = if h == 0 { 0xcbf2_9ce4_8422_2325 } else { h };
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// splitmix64: a small, fast generator with a 64-bit state.
#[derive(Clone, Debug)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64 { state: seed }
    }

    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        mix64(self.state)
    }

    /// Uniform in `0..n` (`n` > 0), by a 128-bit multiply (bias below 2^-64 · n).
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }

    /// Uniform in `[0, 1)` with 53 random bits.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

/// (e^x − 1) / x, continuous at 0.
fn expm1_over_x(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.exp_m1() / x
    } else {
        1.0 + x * (0.5 + x / 6.0)
    }
}

/// ln(1 + x) / x, continuous at 0.
fn ln1p_over_x(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.ln_1p() / x
    } else {
        1.0 - x * (0.5 - x / 3.0)
    }
}

/// Zipf-distributed ranks over `0..n`: rank k (0-based) has probability proportional to
/// 1 / (k + 1)^theta. Sampled by rejection-inversion (Hörmann and Derflinger, 1996): invert
/// the integral H of the hat function h(x) = x^-theta, round to the nearest integer and
/// accept if the uniform point falls in the part of that integer's cell that h(k) covers.
/// Each try costs a few logarithms; most tries are accepted (the cell of rank 0 is exact).
#[derive(Clone, Debug)]
pub struct Zipf {
    n: u64,
    theta: f64,
    /// H(1.5) − h(1): the lower end of the sampled integral range.
    lo: f64,
    /// H(n + 0.5): its upper end.
    hi: f64,
}

impl Zipf {
    /// `n` ≥ 1 items, exponent `theta` ≥ 0 (0 is uniform; 0.99 is YCSB's default).
    pub fn new(n: u64, theta: f64) -> Zipf {
        let n = n.max(1);
        let mut z = Zipf {
            n,
            theta: theta.max(0.0),
            lo: 0.0,
            hi: 0.0,
        };
        z.lo = z.big_h(1.5) - 1.0;
        z.hi = z.big_h(n as f64 + 0.5);
        z
    }

    /// h(x) = x^-theta.
    fn h(&self, x: f64) -> f64 {
        (-self.theta * x.ln()).exp()
    }

    /// H(x) = ∫₁ˣ h = (x^(1−θ) − 1) / (1 − θ), or ln x for θ = 1.
    fn big_h(&self, x: f64) -> f64 {
        let lx = x.ln();
        expm1_over_x((1.0 - self.theta) * lx) * lx
    }

    /// The inverse of H.
    fn big_h_inv(&self, y: f64) -> f64 {
        let t = (y * (1.0 - self.theta)).max(-1.0);
        (ln1p_over_x(t) * y).exp()
    }

    /// A rank in `0..n`; 0 is the most popular.
    pub fn sample(&self, rng: &mut SplitMix64) -> u64 {
        let mut k = 1u64;
        // Most tries are accepted; 64 rejections in a row do not happen in practice.
        for _ in 0..64 {
            let u = self.lo + rng.unit() * (self.hi - self.lo);
            let x = self.big_h_inv(u);
            k = ((x + 0.5) as u64).clamp(1, self.n);
            let kf = k as f64;
            if u >= self.big_h(kf + 0.5) - self.h(kf) {
                break;
            }
        }
        k - 1
    }
}

/// A pseudo-random permutation of `0..n`, keyed by a seed: a 4-round Feistel network on the
/// smallest even number of bits covering `n`, with cycle walking back into range. Constant
/// memory whatever `n`.
#[derive(Clone, Debug)]
pub struct Permutation {
    n: u64,
    half_bits: u32,
    keys: [u64; 4],
}

impl Permutation {
    pub fn new(n: u64, seed: u64) -> Permutation {
        let bits = 64 - n.saturating_sub(1).leading_zeros();
        let half_bits = bits.div_ceil(2).max(1);
        let mut rng = SplitMix64::new(seed);
        Permutation {
            n,
            half_bits,
            keys: [
                rng.next_u64(),
                rng.next_u64(),
                rng.next_u64(),
                rng.next_u64(),
            ],
        }
    }

    fn feistel(&self, x: u64) -> u64 {
        let mask = (1u64 << self.half_bits) - 1;
        let (mut l, mut r) = (x >> self.half_bits, x & mask);
        for k in self.keys {
            let f = mix64(r ^ k) & mask;
            (l, r) = (r, l ^ f);
        }
        (l << self.half_bits) | r
    }

    /// The image of `i` (< n).
    pub fn apply(&self, i: u64) -> u64 {
        if self.n <= 1 {
            return 0;
        }
        // Walking the Feistel permutation's cycle from `i` must come back into range
        // before it comes back to `i` itself, so the walk is bounded by the domain size.
        let domain = 1u64 << (2 * self.half_bits);
        let mut x = i;
        for _ in 0..domain {
            x = self.feistel(x);
            if x < self.n {
                return x;
            }
        }
        unreachable!("a Feistel cycle always re-enters the range")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unmix64_inverts_mix64() {
        let mut g = SplitMix64::new(3);
        for z in [0, 1, 2, 12345, u64::MAX, 1 << 63]
            .into_iter()
            .chain((0..1000).map(|_| g.next_u64()))
        {
            assert_eq!(unmix64(mix64(z)), z);
            assert_eq!(mix64(unmix64(z)), z);
        }
    }

    #[test]
    fn splitmix_is_deterministic_and_bounded() {
        let mut a = SplitMix64::new(7);
        let mut b = SplitMix64::new(7);
        for _ in 0..100 {
            assert_eq!(a.next_u64(), b.next_u64());
            assert!(a.below(10) < 10);
            b.below(10);
            let u = a.unit();
            b.unit();
            assert!((0.0..1.0).contains(&u));
        }
        assert_ne!(SplitMix64::new(1).next_u64(), SplitMix64::new(2).next_u64());
    }

    fn zipf_pmf(n: u64, theta: f64) -> Vec<f64> {
        let w: Vec<f64> = (1..=n).map(|k| (k as f64).powf(-theta)).collect();
        let s: f64 = w.iter().sum();
        w.iter().map(|x| x / s).collect()
    }

    #[test]
    fn zipf_matches_its_distribution() {
        for &(n, theta) in &[(10u64, 0.99), (10, 0.0), (50, 1.0), (7, 2.5), (1, 0.99)] {
            let z = Zipf::new(n, theta);
            let mut rng = SplitMix64::new(n ^ theta.to_bits());
            let draws = 200_000;
            let mut hist = vec![0u64; n as usize];
            for _ in 0..draws {
                let k = z.sample(&mut rng);
                assert!(k < n);
                hist[k as usize] += 1;
            }
            for (k, p) in zipf_pmf(n, theta).iter().enumerate() {
                let got = hist[k] as f64 / draws as f64;
                assert!(
                    (got - p).abs() < 0.01 + 0.05 * p,
                    "n={n} theta={theta} rank {k}: {got} vs {p}"
                );
            }
        }
    }

    #[test]
    fn zipf_handles_large_ranges() {
        let z = Zipf::new(1 << 30, 0.99);
        let mut rng = SplitMix64::new(3);
        let mut low = 0;
        for _ in 0..10_000 {
            let k = z.sample(&mut rng);
            assert!(k < 1 << 30);
            if k < 1000 {
                low += 1;
            }
        }
        // With theta 0.99 over 2^30 items, the top 1000 ranks get about a third of draws.
        assert!((2000..5000).contains(&low), "{low}");
    }

    #[test]
    fn permutations_are_bijective() {
        for n in [1u64, 2, 3, 5, 16, 17, 1000, 4099] {
            let p = Permutation::new(n, 99);
            let mut seen = vec![false; n as usize];
            for i in 0..n {
                let j = p.apply(i);
                assert!(j < n);
                assert!(!seen[j as usize], "n={n}: {j} twice");
                seen[j as usize] = true;
            }
        }
        let a: Vec<u64> = (0..100)
            .map(|i| Permutation::new(100, 1).apply(i))
            .collect();
        let b: Vec<u64> = (0..100)
            .map(|i| Permutation::new(100, 2).apply(i))
            .collect();
        assert_ne!(a, b);
        assert_ne!(a, (0..100).collect::<Vec<u64>>());
    }
}
