//! What a benchmark reads, declared once: its channels. A channel has a
//! name, a unit and a kind, and a workload hands the runner one reading of
//! every channel at each tick (one snapshot). The runner differences a
//! counter's readings into each second's share, passes a gauge's through,
//! and asks for the values measured once when the run ends. Figures and
//! lines are expressions over channels (`figures`, `lines`); nothing reads a
//! count by its position or by a string the code spells twice.

use serde::{Deserialize, Serialize};

/// How the runner treats a channel's readings.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// A running count (events, bytes, calls): a second holds its
    /// difference, a fixed run the difference over the run.
    Counter,
    /// A level read at the tick (a map's memory): a second holds the
    /// reading at its end, a fixed run the reading at its end.
    Gauge,
    /// Nanoseconds measured inside BPF, a running sum: differenced as a
    /// counter, a time rather than a count.
    Duration,
    /// A value the workload works out once, when the run ends (a median of
    /// timings kept in BPF): no second has one.
    Final,
    /// As [`Kind::Final`], one value per CPU that has one.
    FinalPerCpu,
}

impl Kind {
    /// Whether the runner reads it every tick (and differences it, unless a
    /// gauge).
    pub const fn is_read_each_tick(self) -> bool {
        matches!(self, Kind::Counter | Kind::Gauge | Kind::Duration)
    }

    /// Whether a second's share is a difference of two readings.
    pub const fn is_differenced(self) -> bool {
        matches!(self, Kind::Counter | Kind::Duration)
    }
}

/// One thing a benchmark reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Channel {
    /// Its name in result files and lines (`hits`, `memory`).
    pub name: &'static str,
    /// What one unit of a reading is (`events`, `bytes`, `ns`).
    pub unit: &'static str,
    pub kind: Kind,
    /// One sentence for result files and the manual: what it counts.
    pub about: &'static str,
    /// Where its count stood in result files written before channels were
    /// declared (bench-result/2 and earlier), for reading those.
    pub was: Slot,
}

/// A place a count had in the old layout's samples: `hits`, `drops`, or the
/// i-th of `extra`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Slot {
    Hits,
    Drops,
    Extra(u8),
    /// Not kept in a sample then (read once at the end, or new).
    Nowhere,
}

impl Slot {
    /// Its index in an old sample's counts laid out as `[hits, drops,
    /// extra...]`.
    pub const fn index(self) -> Option<usize> {
        match self {
            Slot::Hits => Some(0),
            Slot::Drops => Some(1),
            Slot::Extra(i) => Some(2 + i as usize),
            Slot::Nowhere => None,
        }
    }
}

impl Channel {
    /// A counter, new in bench-result/3 unless [`Channel::was`] says.
    pub const fn counter(name: &'static str, unit: &'static str, about: &'static str) -> Channel {
        Channel {
            name,
            unit,
            kind: Kind::Counter,
            about,
            was: Slot::Nowhere,
        }
    }

    pub const fn gauge(name: &'static str, unit: &'static str, about: &'static str) -> Channel {
        Channel {
            kind: Kind::Gauge,
            ..Channel::counter(name, unit, about)
        }
    }

    /// Nanoseconds measured inside BPF, a running sum.
    pub const fn duration(name: &'static str, about: &'static str) -> Channel {
        Channel {
            kind: Kind::Duration,
            ..Channel::counter(name, "ns", about)
        }
    }

    /// A value worked out once, at the run's end.
    pub const fn once(name: &'static str, unit: &'static str, about: &'static str) -> Channel {
        Channel {
            kind: Kind::Final,
            ..Channel::counter(name, unit, about)
        }
    }

    /// A value worked out once, at the run's end, for each CPU.
    pub const fn once_per_cpu(
        name: &'static str,
        unit: &'static str,
        about: &'static str,
    ) -> Channel {
        Channel {
            kind: Kind::FinalPerCpu,
            ..Channel::counter(name, unit, about)
        }
    }

    /// Where its count stood in the old layout.
    pub const fn was(self, was: Slot) -> Channel {
        Channel { was, ..self }
    }
}

/// Events a BPF program or the producers counted: the kernel runner's hits.
pub const HITS: Channel = Channel::counter(
    "hits",
    "events",
    "events the BPF program or the producers counted",
)
.was(Slot::Hits);

/// Records lost: a ring buffer or perf buffer had no room (the ringbuf body,
/// the ring buffer family). Nothing else is a drop.
pub const DROPS: Channel = Channel::counter(
    "drops",
    "events",
    "records a ring or perf buffer had no room for",
)
.was(Slot::Drops);

/// Operations the producers completed: `perf bench`'s ops.
pub const OPERATIONS: Channel = Channel::counter(
    "operations",
    "operations",
    "operations the producers completed",
)
.was(Slot::Hits);

/// One reading of every channel a workload reads each tick, in the order
/// it declared them; `None` where a reading failed (never a zero).
pub type Readings = Vec<Option<u64>>;

/// A value measured once, when the run ended.
#[derive(Clone, Debug, PartialEq)]
pub struct Final {
    pub channel: &'static Channel,
    /// The CPU it is of, for a [`Kind::FinalPerCpu`] channel.
    pub cpu: Option<u32>,
    pub value: f64,
}

impl Final {
    pub fn of(channel: &'static Channel, value: f64) -> Final {
        Final {
            channel,
            cpu: None,
            value,
        }
    }

    pub fn of_cpu(channel: &'static Channel, cpu: u32, value: f64) -> Final {
        Final {
            channel,
            cpu: Some(cpu),
            value,
        }
    }
}

/// The channels read each tick, in declared order: what [`Readings`] hold.
pub fn ticked(channels: &[Channel]) -> impl Iterator<Item = &Channel> {
    channels.iter().filter(|c| c.kind.is_read_each_tick())
}

/// Where `channel` is among the channels read each tick of `channels`.
pub fn position(channels: &[Channel], channel: &Channel) -> Option<usize> {
    ticked(channels).position(|c| c.name == channel.name)
}

/// A second's share of each channel: a counter's difference of two
/// readings (unknown when either failed), a gauge's reading as it is.
pub fn share(kinds: &[Kind], now: &[Option<u64>], then: &[Option<u64>]) -> Vec<Option<u64>> {
    kinds
        .iter()
        .zip(now)
        .enumerate()
        .map(|(i, (kind, now))| match kind.is_differenced() {
            true => Some(now.as_ref()?.saturating_sub(*then.get(i)?.as_ref()?)),
            false => *now,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_are_differenced_and_gauges_passed_through() {
        let kinds = [Kind::Counter, Kind::Gauge, Kind::Duration];
        let then = [Some(10), Some(500), Some(7)];
        let now = [Some(25), Some(400), None];
        assert_eq!(
            share(&kinds, &now, &then),
            [Some(15), Some(400), None],
            "a failed reading is unknown, not zero"
        );
        assert_eq!(
            share(&kinds, &[Some(3), None, Some(9)], &[None, Some(1), Some(2)]),
            [None, None, Some(7)]
        );
    }

    #[test]
    fn finals_are_not_read_each_tick() {
        const MEDIAN: Channel = Channel::once("median", "ns", "");
        let channels = [HITS, MEDIAN, DROPS];
        assert_eq!(position(&channels, &DROPS), Some(1));
        assert_eq!(position(&channels, &MEDIAN), None);
    }
}
