//! A paired comparison that looks after every round and stops when it can
//! tell.

use serde::{Deserialize, Serialize};

use super::change::{paired_change_at, Change};
use super::student::ALPHA;

/// Where a sequential comparison stands after a look.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Decision {
    /// The adjusted interval excludes no change, and the change is at least
    /// the noise floor.
    Different,
    /// The adjusted interval lies within ±the equivalence margin.
    Equivalent,
    Undecided,
}

/// The first round a sequential comparison looks at: fewer give no spread.
pub const FIRST_LOOK: u32 = 3;

/// The significance level of each look when up to `max_rounds` rounds are
/// looked at from [`FIRST_LOOK`] on, one look a round: α divided by the
/// planned looks (Bonferroni), so that the chance of any false call over
/// all the looks stays at most α.
pub fn alpha_per_look(max_rounds: u32) -> f64 {
    let looks = max_rounds.saturating_sub(FIRST_LOOK) + 1;
    ALPHA / f64::from(looks.max(1))
}

/// One look of a sequential paired comparison: the change over the rounds so
/// far with its interval at 1 − `alpha` (see [`alpha_per_look`]), and what it
/// decides against the equivalence margin `within_pct` and the noise floor.
pub fn sequential_look(
    old: &[f64],
    new: &[f64],
    alpha: f64,
    within_pct: f64,
    floor_pct: f64,
) -> Option<(Decision, Change)> {
    let change = paired_change_at(old, new, 1.0 - alpha)?;
    let excludes_zero = change.low > 0.0 || change.high < 0.0;
    let decision = if excludes_zero && change.percent.abs() >= floor_pct {
        Decision::Different
    } else if change.low >= -within_pct && change.high <= within_pct {
        Decision::Equivalent
    } else {
        Decision::Undecided
    };
    Some((decision, change))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::normal::Normal;

    /// Runs a sequential comparison of rounds drawn from `round` until it
    /// decides or reaches `max` rounds: the decision and the rounds taken.
    fn sequential(rng: &mut Normal, ratio: f64, within: f64, max: u32) -> (Decision, u32) {
        let alpha = alpha_per_look(max);
        let (mut old, mut new) = (Vec::new(), Vec::new());
        for round in 1..=max {
            let level = 1e6 * (1.0 + 0.05 * rng.next());
            old.push(level * (1.0 + 0.02 * rng.next()));
            new.push(level * ratio * (1.0 + 0.02 * rng.next()));
            if round < FIRST_LOOK {
                continue;
            }
            let (decision, _) = sequential_look(&old, &new, alpha, within, 2.0).unwrap();
            if decision != Decision::Undecided {
                return (decision, round);
            }
        }
        (Decision::Undecided, max)
    }

    #[test]
    fn sequential_looks_stay_honest_and_stop_for_a_reason() {
        // 18 looks (rounds 3 to 20) at α/18 each: α = 0.05, 0.00278 a look.
        assert!((alpha_per_look(20) - 0.05 / 18.0).abs() < 1e-12);
        assert_eq!(alpha_per_look(3), ALPHA);
        let mut rng = Normal(41);
        let trials = 2000;
        let outcomes: Vec<(Decision, u32)> = (0..trials)
            .map(|_| sequential(&mut rng, 1.0, 5.0, 20))
            .collect();
        // Identical sides: called different at most α of the time over all
        // the looks (measured: well under), and mostly found equivalent
        // within ±5 % before the cap.
        let false_calls = outcomes
            .iter()
            .filter(|(d, _)| *d == Decision::Different)
            .count();
        assert!(
            (false_calls as f64) < ALPHA * trials as f64,
            "{false_calls}"
        );
        let equivalent = outcomes
            .iter()
            .filter(|(d, _)| *d == Decision::Equivalent)
            .count();
        assert!(equivalent as f64 > 0.9 * trials as f64, "{equivalent}");
        // A 10 % slowdown is called different, long before the cap.
        let slower: Vec<(Decision, u32)> = (0..200)
            .map(|_| sequential(&mut rng, 0.9, 5.0, 20))
            .collect();
        assert!(
            slower.iter().all(|(d, _)| *d == Decision::Different),
            "{slower:?}"
        );
        assert!(slower.iter().all(|(_, n)| *n <= 10), "{slower:?}");
        // A margin no interval can fit into, and no change: the cap.
        let (decision, rounds) = sequential(&mut rng, 1.0, 0.001, 6);
        assert_eq!((decision, rounds), (Decision::Undecided, 6));
    }
}
