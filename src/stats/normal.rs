//! Seeded normal deviates for the tests that simulate many comparisons.

use super::rng::SplitMix64;

/// A seeded generator of normal deviates (splitmix64, Box–Muller): the
/// decision procedure's tests must give the same answer every time.
pub struct Normal(pub u64);

impl Normal {
    pub fn next(&mut self) -> f64 {
        let mut rng = SplitMix64(self.0);
        let (u, v) = (rng.uniform(), rng.uniform());
        self.0 = rng.0;
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }
}
