//! Numbers as perflab's reports print them: `fmt_number` of `perflab.report.numbers`,
//! "readable at a glance" (48,551 · 812.3 · 8.435 · 0.00469 · 1.235e-05), for a whole
//! column at once. A summary table of a large comparison formats ~50,000 numbers, and
//! Python's `format()` costs ~0.16 µs each; by hand because no crate writes Python's
//! format mini-language (grouping, exponent form) digit for digit.
//!
//! The digits are Python's: both round the exact binary value to the nearest decimal,
//! ties to even (Rust's `{:.N}` since 1.67, Python's `_Py_dg_dtoa`), and the decimals
//! come from the same libm `log10`.

use std::fmt::Write;

/// Significant digits shown (at least), as `fmt_number`'s default `digits = 4`.
const DIGITS: i32 = 4;

/// `fmt_number(x)` of perflab.report.numbers, appended to `out`.
pub fn push_number(out: &mut String, x: f64) {
    if x.is_nan() {
        out.push('–');
        return;
    }
    if x == 0.0 {
        out.push('0');
        return;
    }
    let ax = x.abs();
    if ax >= 10f64.powi(DIGITS) {
        push_grouped(out, x, 0);
    } else if ax >= 1e-4 {
        let decimals = (DIGITS - 1 - ax.log10().floor() as i32).max(0) as usize;
        push_grouped(out, x, decimals);
    } else {
        push_exponent(out, x, (DIGITS - 1) as usize);
    }
}

/// `fmt_number` of each.
pub fn numbers(xs: &[f64]) -> Vec<String> {
    xs.iter()
        .map(|&x| {
            let mut s = String::with_capacity(12);
            push_number(&mut s, x);
            s
        })
        .collect()
}

/// Python's `format(x, ",.{decimals}f")`: fixed point, the integer digits grouped by three.
fn push_grouped(out: &mut String, x: f64, decimals: usize) {
    match exact_fixed(x, decimals) {
        Some(scaled) => {
            if x < 0.0 {
                out.push('-');
            }
            let unit = 10u128.pow(decimals as u32);
            push_digits_grouped(out, scaled / unit);
            if decimals > 0 {
                let _ = write!(out, ".{:0decimals$}", scaled % unit);
            }
        }
        None => {
            // far from the common range (≥ 2⁶³, inf): the standard formatter, then grouped
            let plain = format!("{x:.decimals$}");
            let (sign, rest) = plain.split_at(usize::from(plain.starts_with('-')));
            if !rest.as_bytes().first().is_some_and(u8::is_ascii_digit) {
                out.push_str(&plain); // inf
                return;
            }
            let point = rest.find('.').unwrap_or(rest.len());
            out.push_str(sign);
            push_grouped_text(out, &rest[..point]);
            out.push_str(&rest[point..]);
        }
    }
}

/// |x| × 10^decimals rounded to an integer, exactly (the binary value's own digits, ties to
/// even), when it fits the arithmetic here: |x| < 2⁶³ and decimals ≤ 7. The standard
/// formatter gives the same digits at ~5× the cost.
fn exact_fixed(x: f64, decimals: usize) -> Option<u128> {
    if decimals > 7 || !x.is_finite() || x.abs() >= 9.2e18 {
        return None;
    }
    let bits = x.to_bits();
    let biased = ((bits >> 52) & 0x7ff) as i32;
    let fraction = (bits & ((1u64 << 52) - 1)) as u128;
    // x = mantissa × 2^exponent exactly
    let (mantissa, exponent) = if biased == 0 { (fraction, -1074) } else { (fraction | (1u128 << 52), biased - 1075) };
    let scaled = mantissa * 10u128.pow(decimals as u32); // < 2⁵³ × 10⁷ < 2⁷⁷
    if exponent >= 0 {
        return Some(scaled << exponent); // |x| < 2⁶³: fits
    }
    let shift = (-exponent) as u32;
    if shift >= 127 {
        return None;
    }
    let (whole, rest) = (scaled >> shift, scaled & ((1u128 << shift) - 1));
    let half = 1u128 << (shift - 1);
    Some(if rest > half || (rest == half && whole & 1 == 1) { whole + 1 } else { whole })
}

fn push_digits_grouped(out: &mut String, n: u128) {
    let mut digits = String::with_capacity(40);
    let _ = write!(digits, "{n}");
    push_grouped_text(out, &digits);
}

/// Decimal digits with a comma between groups of three (from the right).
fn push_grouped_text(out: &mut String, digits: &str) {
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
}

/// Python's `f"{x:.{decimals}e}"`: the exponent signed and of two digits at least.
fn push_exponent(out: &mut String, x: f64, decimals: usize) {
    let mut plain = String::with_capacity(16);
    let _ = write!(plain, "{x:.decimals$e}");
    let Some((mantissa, exponent)) = plain.split_once('e') else {
        out.push_str(&plain);
        return;
    };
    out.push_str(mantissa);
    out.push('e');
    let (sign, magnitude) = match exponent.strip_prefix('-') {
        Some(m) => ('-', m),
        None => ('+', exponent),
    };
    out.push(sign);
    if magnitude.len() < 2 {
        out.push('0');
    }
    out.push_str(magnitude);
}

#[cfg(test)]
mod tests {
    use super::numbers;

    #[test]
    fn as_python_formats_them() {
        let cases = [
            (48_551.2, "48,551"),
            (-1_234_567.5, "-1,234,568"),
            (812.34, "812.3"),
            (8.4354, "8.435"),
            (0.004_694, "0.004694"),
            (999.95, "1,000.0"),
            (1.234_5e-5, "1.234e-05"),
            (-2.5e-300, "-2.500e-300"),
            (0.125, "0.1250"),
            (f64::INFINITY, "inf"),
            (f64::NEG_INFINITY, "-inf"),
            (f64::NAN, "–"),
            (-0.0, "0"),
        ];
        let got = numbers(&cases.iter().map(|c| c.0).collect::<Vec<_>>());
        for ((x, want), got) in cases.iter().zip(got) {
            assert_eq!(got, *want, "{x}");
        }
    }
}
