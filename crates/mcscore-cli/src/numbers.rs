//! Numeric flags, checked against their range and refused in words (clap's
//! own ranged parsers say `0 is not in 1..=2147483647`, Rust's syntax), by
//! one rule for every command.

/// Parses a whole number from `min` to `max`.
pub(crate) fn whole<T>(min: T, max: T) -> impl Fn(&str) -> Result<T, String> + Clone + Send + Sync + 'static
where
    T: Copy + TryInto<i128> + TryFrom<i128> + Send + Sync + 'static,
{
    let (low, high) = (wide(min), wide(max));
    move |text| parse(text, low, high, &format!("a whole number from {low} to {high}"))
}

/// Parses a whole number of at least `min`, up to the largest its type holds.
pub(crate) fn at_least<T>(min: T) -> impl Fn(&str) -> Result<T, String> + Clone + Send + Sync + 'static
where
    T: Copy + TryInto<i128> + TryFrom<i128> + Send + Sync + 'static,
{
    let low = wide(min);
    // The type's largest value: the greatest i128 that converts back.
    let high = (0..127).rev().map(|bit| (1i128 << bit) - 1).find(|&n| T::try_from(n).is_ok()).unwrap_or(0);
    move |text| parse(text, low, high, &format!("a whole number of at least {low}"))
}

/// An integer of at most 64 bits as an i128, which holds them all.
fn wide<T: TryInto<i128>>(value: T) -> i128 {
    value.try_into().unwrap_or(i128::MAX)
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

/// One end of a real flag's range.
#[derive(Clone, Copy)]
pub(crate) enum End {
    /// The end itself is allowed.
    Closed(f64),
    /// Values must stay strictly inside it.
    Open(f64),
}

/// Parses a finite real number between `low` and `high`; `what` names the
/// quantity ("an error rate") and `example` is a typical value.
pub(crate) fn real(
    what: &'static str,
    low: End,
    high: End,
    example: &'static str,
) -> impl Fn(&str) -> Result<f64, String> + Clone + Send + Sync + 'static {
    move |text| {
        let inside = |x: f64| {
            let above = match low {
                End::Closed(l) => x >= l,
                End::Open(l) => x > l,
            };
            let below = match high {
                End::Closed(h) => x <= h,
                End::Open(h) => x < h,
            };
            above && below
        };
        match text.parse::<f64>() {
            Ok(x) if x.is_finite() && inside(x) => Ok(x),
            _ => {
                let low = match low {
                    End::Closed(l) => format!("at least {l}"),
                    End::Open(l) => format!("above {l}"),
                };
                let high = match high {
                    End::Closed(h) => format!("at most {h}"),
                    End::Open(h) => format!("below {h}"),
                };
                Err(format!("expected {what} {low} and {high}, such as {example}; got {text:?}"))
            }
        }
    }
}

/// `--margin`'s values, for every command that has it: accuracy points, as
/// people say a margin; [`points_as_fraction`] gives the library's unit.
pub(crate) fn margin() -> impl Fn(&str) -> Result<f64, String> + Clone + Send + Sync + 'static {
    real("accuracy points", End::Open(0.0), End::Closed(100.0), "1 or 2.5")
}

/// Accuracy points given on the command line as the fraction the library holds.
pub(crate) fn points_as_fraction(points: f64) -> f64 {
    points / 100.0
}

/// `--alpha`'s values, for every command that has it.
pub(crate) fn alpha() -> impl Fn(&str) -> Result<f64, String> + Clone + Send + Sync + 'static {
    real("an error rate", End::Open(0.0), End::Open(0.5), "0.05")
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

    #[test]
    fn a_real_range_says_its_ends() {
        let alpha = real("an error rate", End::Open(0.0), End::Open(0.5), "0.05");
        assert_eq!(alpha("0.05"), Ok(0.05));
        for bad in ["0", "0.5", "nan", "inf", "-1e308", "x"] {
            assert_eq!(alpha(bad).unwrap_err(), format!("expected an error rate above 0 and below 0.5, such as 0.05; got {bad:?}"));
        }
        let probability = real("a probability", End::Closed(0.0), End::Closed(1.0), "0.25");
        assert_eq!((probability("0"), probability("1")), (Ok(0.0), Ok(1.0)));
        assert_eq!(probability("1.01").unwrap_err(), "expected a probability at least 0 and at most 1, such as 0.25; got \"1.01\"");
    }
}
