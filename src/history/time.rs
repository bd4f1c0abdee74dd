//! Times of the history: seconds since the epoch (UTC), read from RFC 3339
//! (`2026-12-04T20:27:39Z`, an offset or fractions taken), a date
//! (`2026-12-04`, midnight UTC) or `@SECONDS`, and shown in RFC 3339.

use crate::results::rfc3339_of_secs;

/// `secs` as RFC 3339 in UTC.
/// Before 1970 too (trackers read a date, not `@-1`); outside the years
/// RFC 3339 can write, `@SECONDS`.
pub fn show(secs: i64) -> String {
    // 0000-01-01 and 9999-12-31T23:59:59Z.
    match (-62_167_219_200..=253_402_300_799).contains(&secs) {
        true => rfc3339_of_secs(secs),
        false => format!("@{secs}"),
    }
}

/// The month, day and minute of [`show`], for a chart's axis: `12-04 20:27`.
pub fn short(secs: i64) -> String {
    let shown = show(secs);
    match shown.get(5..16) {
        Some(part) => part.replace('T', " "),
        None => shown,
    }
}

/// Reads a time as `--at` takes it; the error says what is expected.
pub fn parse(text: &str) -> Result<i64, String> {
    let text = text.trim();
    let wrong = || {
        format!("'{text}' is not a time: give RFC 3339 (2026-12-04T20:27:39Z), a date (2026-12-04) or @SECONDS")
    };
    if let Some(secs) = text.strip_prefix('@') {
        return secs.parse().map_err(|_| wrong());
    }
    let (date, rest) = text.split_at(text.len().min(10));
    let mut parts = date.splitn(3, '-').map(|p| p.parse::<i64>().ok());
    let (Some(Some(year)), Some(Some(month)), Some(Some(day))) =
        (parts.next(), parts.next(), parts.next())
    else {
        return Err(wrong());
    };
    if date.len() != 10 || !(1..=12).contains(&month) || !(1..=31).contains(&day) {
        return Err(wrong());
    }
    let last = days_in_month(year, month);
    if day > last {
        return Err(format!(
            "'{text}' is not a date: {year}-{month:02} has {last} days"
        ));
    }
    let days = days_from_civil(year, month, day);
    if rest.is_empty() {
        return Ok(days * 86_400);
    }
    let rest = rest.strip_prefix(['T', 't', ' ']).ok_or_else(wrong)?;
    let clock = rest.get(..8).ok_or_else(wrong)?;
    let mut hms = clock.split(':').map(|p| p.parse::<i64>().ok());
    let (Some(Some(h)), Some(Some(m)), Some(Some(s))) = (hms.next(), hms.next(), hms.next()) else {
        return Err(wrong());
    };
    if s == 60 {
        return Err(format!(
            "'{text}' names a leap second, which seconds since the epoch cannot hold: give :59"
        ));
    }
    if h > 23 || m > 59 || s > 59 {
        return Err(wrong());
    }
    let mut zone = &rest[8..];
    if let Some(fraction) = zone.strip_prefix('.') {
        zone = fraction.trim_start_matches(|c: char| c.is_ascii_digit());
    }
    let offset = match zone {
        "Z" | "z" => 0,
        _ => {
            let sign = match zone.chars().next() {
                Some('+') => 1,
                Some('-') => -1,
                _ => return Err(wrong()),
            };
            let (oh, om) = zone[1..].split_once(':').ok_or_else(wrong)?;
            let (oh, om): (i64, i64) = (
                oh.parse().map_err(|_| wrong())?,
                om.parse().map_err(|_| wrong())?,
            );
            sign * (oh * 3600 + om * 60)
        }
    };
    Ok(days * 86_400 + h * 3600 + m * 60 + s - offset)
}

/// How many days `month` of `year` has (the Gregorian calendar's).
fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a civil date (H. Hinnant's algorithm).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_read_back_as_they_show() {
        for secs in [0, 951_782_400, 1_796_000_941, 1_800_000_000] {
            assert_eq!(parse(&show(secs)), Ok(secs));
        }
        assert_eq!(parse("2026-11-30"), Ok(1_796_000_941 - 3_600 - 9 * 60 - 1));
        assert_eq!(parse("@42"), Ok(42));
        assert_eq!(parse("1970-01-01T01:00:00+01:00"), Ok(0));
        assert_eq!(parse("1970-01-01T00:00:00.250Z"), Ok(0));
        for bad in [
            "",
            "yesterday",
            "2026-13-01",
            "2026-01-01T25:00:00Z",
            "2026-01-01T00:00:00",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn impossible_dates_are_refused_not_moved() {
        assert_eq!(
            parse("2026-02-30"),
            Err("'2026-02-30' is not a date: 2026-02 has 28 days".to_string())
        );
        assert!(parse("2026-04-31T00:00:00Z").is_err());
        assert!(parse("2100-02-29").is_err());
        assert!(parse("2024-02-29").is_ok());
        assert!(parse("2000-02-29").is_ok());
        let leap = parse("2026-12-31T23:59:60Z").unwrap_err();
        assert!(leap.contains("leap second"), "{leap}");
    }
}
