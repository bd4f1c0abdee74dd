//! CPU lists, the online CPUs, and which CPU each thread is pinned to.

use std::fs;

use crate::error::{Error, Result};
use crate::lists::{parse_ranges, ListSyntax};

/// How threads are placed on CPUs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Affinity {
    /// Threads run wherever the scheduler puts them.
    #[default]
    None,
    /// Pinned round-robin over the online CPUs: consumers first, then producers.
    Auto {
        producers: Option<Vec<usize>>,
        consumers: Option<Vec<usize>>,
    },
}

/// The CPU for each consumer and each producer (`None`: not pinned).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placement {
    pub consumers: Vec<Option<usize>>,
    pub producers: Vec<Option<usize>>,
}

/// Parses a CPU list such as `0-3,5` (the kernel's cpulist format) into sorted,
/// distinct CPU numbers.
pub fn parse_cpu_list(text: &str) -> std::result::Result<Vec<usize>, String> {
    const SYNTAX: ListSyntax = ListSyntax {
        range: "-",
        item: "a CPU number",
        range_name: "CPU range",
    };
    let text = text.trim();
    if text.is_empty() {
        return Err("the CPU list is empty".into());
    }
    let mut cpus = Vec::new();
    for (lo, hi) in parse_ranges(text, &SYNTAX)? {
        if hi - lo > 65_536 {
            return Err(format!("the CPU range '{lo}-{hi}' is too large"));
        }
        let cpu = |n: u64| usize::try_from(n).map_err(|_| format!("'{n}' is not a CPU number"));
        cpus.extend(cpu(lo)?..=cpu(hi)?);
    }
    cpus.sort_unstable();
    cpus.dedup();
    Ok(cpus)
}

/// The online CPUs, from sysfs.
pub fn online_cpus() -> Result<Vec<usize>> {
    let path = "/sys/devices/system/cpu/online";
    let text =
        fs::read_to_string(path).map_err(|e| Error::runtime(format!("cannot read {path}: {e}")))?;
    parse_cpu_list(&text).map_err(|e| Error::runtime(format!("cannot parse {path}: {e}")))
}

/// Assigns CPUs: with explicit lists, thread i takes the i-th listed CPU (a list
/// shorter than the thread count is an error, as in the kernel's runner);
/// otherwise threads take the online CPUs in turn, consumers first, wrapping.
pub fn place(
    affinity: &Affinity,
    producers: usize,
    consumers: usize,
    online: &[usize],
) -> Result<Placement> {
    let Affinity::Auto {
        producers: prod_list,
        consumers: cons_list,
    } = affinity
    else {
        return Ok(Placement {
            consumers: vec![None; consumers],
            producers: vec![None; producers],
        });
    };
    if online.is_empty() {
        return Err(Error::runtime("no CPU is online"));
    }
    for (flag, list) in [
        ("--prod-affinity", prod_list),
        ("--cons-affinity", cons_list),
    ] {
        if let Some(offline) = list.iter().flatten().find(|cpu| !online.contains(cpu)) {
            return Err(Error::usage(format!(
                "{flag} names CPU {offline}, which is not online (online: {})",
                format_cpu_list(online)
            )));
        }
    }
    let mut next_online = 0usize;
    let mut assign = |count: usize, list: &Option<Vec<usize>>, flag: &str, who: &str| match list {
        Some(list) if list.len() < count => Err(Error::usage(format!(
            "{flag} lists {} CPU(s) but {count} {who} need one each",
            list.len()
        ))),
        Some(list) => Ok(list.iter().take(count).map(|&c| Some(c)).collect()),
        None => Ok((0..count)
            .map(|_| {
                let cpu = online[next_online % online.len()];
                next_online += 1;
                Some(cpu)
            })
            .collect()),
    };
    let consumers = assign(consumers, cons_list, "--cons-affinity", "consumers")?;
    let producers = assign(producers, prod_list, "--prod-affinity", "producers")?;
    Ok(Placement {
        consumers,
        producers,
    })
}

/// Formats CPUs back into the compact list form (`0-3,5`).
pub fn format_cpu_list(cpus: &[usize]) -> String {
    let mut parts = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let start = cpus[i];
        let mut end = start;
        while i + 1 < cpus.len() && cpus[i + 1] == end + 1 {
            i += 1;
            end = cpus[i];
        }
        parts.push(if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
        i += 1;
    }
    parts.join(",")
}

/// Pins the calling thread to `cpu`.
pub fn pin_current_thread(cpu: usize) -> Result<()> {
    // SAFETY: cpu_set_t is plain data; CPU_SET writes within it after the bound check.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if cpu >= 8 * std::mem::size_of::<libc::cpu_set_t>() {
            return Err(Error::runtime(format!(
                "CPU {cpu} is beyond the affinity mask"
            )));
        }
        libc::CPU_SET(cpu, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            let err = std::io::Error::last_os_error();
            return Err(Error::runtime(format!(
                "cannot pin a thread to CPU {cpu}: {err}"
            )));
        }
    }
    Ok(())
}

/// The calling thread pinned to the CPU it is on, until dropped: then it
/// may run where it could before.
pub struct PinnedHere {
    former: libc::cpu_set_t,
}

/// Pins the calling thread to the CPU it runs on now.
pub fn pin_here() -> Result<PinnedHere> {
    // SAFETY: cpu_set_t is plain data, filled by sched_getaffinity.
    let mut former: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: the size is the set's own.
    let got = unsafe { libc::sched_getaffinity(0, std::mem::size_of_val(&former), &mut former) };
    // SAFETY: no argument; -1 on failure.
    let cpu = unsafe { libc::sched_getcpu() };
    if got != 0 || cpu < 0 {
        let err = std::io::Error::last_os_error();
        return Err(Error::runtime(format!(
            "cannot find which CPU this thread runs on: {err}"
        )));
    }
    pin_current_thread(cpu as usize)?;
    Ok(PinnedHere { former })
}

impl Drop for PinnedHere {
    fn drop(&mut self) {
        // SAFETY: a set the kernel gave; a failure leaves the thread pinned,
        // which costs nothing but spread.
        unsafe { libc::sched_setaffinity(0, std::mem::size_of_val(&self.former), &self.former) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_parse() {
        assert_eq!(parse_cpu_list("0-3,5").unwrap(), vec![0, 1, 2, 3, 5]);
        assert_eq!(parse_cpu_list(" 1 , 1,0 \n").unwrap(), vec![0, 1]);
        assert_eq!(parse_cpu_list("7").unwrap(), vec![7]);
    }

    #[test]
    fn malformed_cpu_lists_are_refused() {
        for bad in ["", "a", "1-", "-1", "3-1", "1,,2", "0-99999999", "1.5"] {
            assert!(parse_cpu_list(bad).is_err(), "{bad:?} was accepted");
        }
    }

    #[test]
    fn cpu_lists_format_back() {
        assert_eq!(format_cpu_list(&[0, 1, 2, 3, 5, 7, 8]), "0-3,5,7-8");
        assert_eq!(format_cpu_list(&[]), "");
    }

    #[test]
    fn auto_affinity_places_consumers_first_and_wraps() {
        let auto = Affinity::Auto {
            producers: None,
            consumers: None,
        };
        let p = place(&auto, 3, 1, &[0, 1]).unwrap();
        assert_eq!(p.consumers, vec![Some(0)]);
        assert_eq!(p.producers, vec![Some(1), Some(0), Some(1)]);
    }

    #[test]
    fn explicit_lists_are_followed_and_checked() {
        let lists = Affinity::Auto {
            producers: Some(vec![1]),
            consumers: None,
        };
        let p = place(&lists, 1, 0, &[0, 1]).unwrap();
        assert_eq!(p.producers, vec![Some(1)]);
        let err = place(&lists, 2, 0, &[0, 1]).unwrap_err();
        assert!(
            err.to_string().contains("lists 1 CPU(s) but 2 producers"),
            "{err}"
        );
        let offline = Affinity::Auto {
            producers: Some(vec![5]),
            consumers: None,
        };
        let err = place(&offline, 1, 0, &[0, 1]).unwrap_err();
        assert!(
            err.to_string().contains("CPU 5, which is not online"),
            "{err}"
        );
    }

    #[test]
    fn no_affinity_pins_nothing() {
        let p = place(&Affinity::None, 2, 1, &[0]).unwrap();
        assert_eq!(p.producers, vec![None, None]);
        assert_eq!(p.consumers, vec![None]);
    }
}
