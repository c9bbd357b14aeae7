//! Whole-number flags, checked against their range and refused in words:
//! clap's own ranged parsers say `0 is not in 1..=2147483647`, Rust's syntax.

/// Parses a whole number from `min` to `max`.
pub(crate) fn whole<T>(min: T, max: T) -> impl Fn(&str) -> Result<T, String> + Clone + Send + Sync + 'static
where
    T: Copy + Into<i128> + TryFrom<i128> + Send + Sync + 'static,
{
    let (low, high) = (min.into(), max.into());
    move |text| parse(text, low, high, &format!("a whole number from {low} to {high}"))
}

/// Parses a whole number of at least `min`, up to the largest its type holds.
pub(crate) fn at_least<T>(min: T) -> impl Fn(&str) -> Result<T, String> + Clone + Send + Sync + 'static
where
    T: Copy + Into<i128> + TryFrom<i128> + Send + Sync + 'static,
{
    let low = min.into();
    // The type's largest value: the greatest i128 that converts back.
    let high = (0..127).rev().map(|bit| (1i128 << bit) - 1).find(|&n| T::try_from(n).is_ok()).unwrap_or(0);
    move |text| parse(text, low, high, &format!("a whole number of at least {low}"))
}

fn parse<T: TryFrom<i128>>(text: &str, low: i128, high: i128, expected: &str) -> Result<T, String> {
    let too_large = || format!("expected {expected}, got {text:?}, which is larger than {high}");
    match text.parse::<i128>() {
        Ok(n) if n > high => Err(too_large()),
        Ok(n) if n >= low => T::try_from(n).map_err(|_| too_large()),
        Err(e) if *e.kind() == std::num::IntErrorKind::PosOverflow => Err(too_large()),
        _ => Err(format!("expected {expected}, got {text:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_range_is_said_in_words() {
        let parallel = whole(1u32, 256);
        assert_eq!(parallel("16"), Ok(16));
        assert_eq!(parallel("0").unwrap_err(), "expected a whole number from 1 to 256, got \"0\"");
        assert_eq!(parallel("257").unwrap_err(), "expected a whole number from 1 to 256, got \"257\", which is larger than 256");
        assert_eq!(parallel("1.5").unwrap_err(), "expected a whole number from 1 to 256, got \"1.5\"");
        let threads = at_least(1i32);
        assert_eq!(threads("2147483647"), Ok(i32::MAX));
        assert_eq!(threads("0").unwrap_err(), "expected a whole number of at least 1, got \"0\"");
        assert_eq!(
            threads("99999999999999999999999999999999999999999").unwrap_err(),
            "expected a whole number of at least 1, got \"99999999999999999999999999999999999999999\", which is larger than 2147483647"
        );
        assert_eq!(
            at_least(0u64)("18446744073709551616").unwrap_err(),
            format!("expected a whole number of at least 0, got \"18446744073709551616\", which is larger than {}", u64::MAX)
        );
    }
}
