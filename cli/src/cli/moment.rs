//! Moments on a timeline, as people type them.

use hamlet_engine::history::Moment;

/// Parses `#<seq>`, `day<N> <HH:MM[:SS]>`, `<HH:MM[:SS]>` (day 0), `<N>s` or `end`.
pub fn parse_moment(text: &str) -> Result<Moment, String> {
    let t = text.trim();
    let err = || {
        format!(
            "`{text}` is not a moment; use `#<seq>` (#1200), `day<N> <HH:MM[:SS]>` (day1 08:30), \
             `<HH:MM>` (day 0), `<seconds>s` (3600s) or `end`"
        )
    };
    if t.eq_ignore_ascii_case("end") {
        return Ok(Moment::End);
    }
    if let Some(seq) = t.strip_prefix('#') {
        return seq.parse().map(Moment::Seq).map_err(|_| err());
    }
    if let Some(secs) = t.strip_suffix('s') {
        if let Ok(n) = secs.parse() {
            return Ok(Moment::Time(n));
        }
    }
    let (day, clock) = match t.strip_prefix("day") {
        Some(rest) => {
            let rest = rest.trim_start();
            let (d, c) = rest.split_once(char::is_whitespace).ok_or_else(err)?;
            (d.parse::<u64>().map_err(|_| err())?, c.trim())
        }
        None => (0, t),
    };
    let parts: Vec<&str> = clock.split(':').collect();
    let num = |s: &str, max: u64| s.parse::<u64>().ok().filter(|n| *n < max).ok_or_else(err);
    let (h, m, s) = match parts.as_slice() {
        [h, m] => (num(h, 24)?, num(m, 60)?, 0),
        [h, m, s] => (num(h, 24)?, num(m, 60)?, num(s, 60)?),
        _ => return Err(err()),
    };
    day.checked_mul(86_400)
        .and_then(|d| d.checked_add(h * 3600 + m * 60 + s))
        .map(Moment::Time)
        .ok_or_else(err)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn moments_parse_in_every_documented_form() {
        assert_eq!(parse_moment("#12"), Ok(Moment::Seq(12)));
        assert_eq!(parse_moment("end"), Ok(Moment::End));
        assert_eq!(parse_moment("3600s"), Ok(Moment::Time(3600)));
        assert_eq!(parse_moment("08:30"), Ok(Moment::Time(8 * 3600 + 1800)));
        assert_eq!(parse_moment("day1 08:30:05"), Ok(Moment::Time(86_400 + 8 * 3600 + 1805)));
        assert_eq!(parse_moment("day 2 00:00"), Ok(Moment::Time(2 * 86_400)));
        for bad in ["", "#x", "25:00", "day1", "08:61", "yesterday", "day99999999999999999 00:00"] {
            assert!(parse_moment(bad).unwrap_err().contains("#<seq>"), "{bad}");
        }
    }
}
