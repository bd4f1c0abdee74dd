//! The comma-separated lists of numbers and inclusive ranges that CPU lists
//! (`0-3,5`) and sweeps (`1..4,8`) share; each names its own range marker.

/// The words of one list syntax, for its messages.
pub struct ListSyntax {
    /// What separates a range's ends: `-` or `..`.
    pub range: &'static str,
    /// What each number is, after "is not": "a CPU number".
    pub item: &'static str,
    /// What a range is called: "CPU range".
    pub range_name: &'static str,
}

/// Parses `text` into inclusive ranges (a single number is a range of one),
/// in the order given. Refuses empty parts, non-numbers and backward ranges.
pub fn parse_ranges(
    text: &str,
    syntax: &ListSyntax,
) -> std::result::Result<Vec<(u64, u64)>, String> {
    let number = |s: &str| {
        let s = s.trim();
        s.parse::<u64>()
            .map_err(|_| format!("'{s}' is not {}", syntax.item))
    };
    let mut ranges = Vec::new();
    for part in text.split(',') {
        let part = part.trim();
        // `-1` is a negative number, not a range with no start.
        match part
            .split_once(syntax.range)
            .filter(|(lo, _)| !lo.trim().is_empty())
        {
            Some((lo, hi)) => {
                let (lo, hi) = (number(lo)?, number(hi)?);
                if lo > hi {
                    return Err(format!("the {} '{part}' runs backwards", syntax.range_name));
                }
                ranges.push((lo, hi));
            }
            None => {
                let value = number(part)?;
                ranges.push((value, value));
            }
        }
    }
    Ok(ranges)
}

#[cfg(test)]
mod tests {
    use super::*;

    const CPUS: ListSyntax = ListSyntax {
        range: "-",
        item: "a CPU number",
        range_name: "CPU range",
    };
    const SWEEP: ListSyntax = ListSyntax {
        range: "..",
        item: "a whole number",
        range_name: "range",
    };

    #[test]
    fn both_syntaxes_parse() {
        assert_eq!(parse_ranges("0-3, 5", &CPUS).unwrap(), [(0, 3), (5, 5)]);
        assert_eq!(parse_ranges("1..4,8", &SWEEP).unwrap(), [(1, 4), (8, 8)]);
    }

    #[test]
    fn mistakes_are_named() {
        for (text, syntax, needle) in [
            ("-1", &CPUS, "'-1' is not a CPU number"),
            ("1-", &CPUS, "'' is not a CPU number"),
            ("3-1", &CPUS, "the CPU range '3-1' runs backwards"),
            ("1,,2", &CPUS, "'' is not a CPU number"),
            ("4..1", &SWEEP, "the range '4..1' runs backwards"),
            ("x", &SWEEP, "'x' is not a whole number"),
        ] {
            let err = parse_ranges(text, syntax).unwrap_err();
            assert!(err.contains(needle), "{text}: {err}");
        }
    }
}
