//! C `printf` number formatting, as gprof's listings need it.
//!
//! Rust's `{:.N}` already rounds like glibc (half to even on the exact binary value); what
//! differs is the spelling of NaN and infinity, and `%g`, which Rust does not have.

/// `%.{prec}f` of `x`, with glibc's spelling of NaN (`-nan`: gprof's NaNs come from 0/0 on
/// x86, which sets the sign bit) and infinity.
pub(crate) fn fixed(x: f64, prec: usize) -> String {
    if x.is_nan() {
        "-nan".to_owned()
    } else if x.is_infinite() {
        if x < 0.0 { "-inf" } else { "inf" }.to_owned()
    } else {
        format!("{x:.prec$}")
    }
}

/// `%{width}.{prec}f`: right-aligned, never truncated.
pub(crate) fn fixed_width(x: f64, width: usize, prec: usize) -> String {
    format!("{:>width$}", fixed(x, prec))
}

/// C `%g` (six significant digits, trailing zeros removed, exponent form outside 1e-4..1e6).
pub(crate) fn general(x: f64) -> String {
    const PRECISION: i32 = 6;
    if x.is_nan() || x.is_infinite() {
        return fixed(x, 0);
    }
    if x == 0.0 {
        return if x.is_sign_negative() { "-0" } else { "0" }.to_owned();
    }
    // The exponent after rounding to six significant digits decides the form.
    let sci = format!("{:.*e}", (PRECISION - 1) as usize, x);
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if (-4..PRECISION).contains(&exp) {
        let decimals = (PRECISION - 1 - exp) as usize;
        strip_zeros(&format!("{x:.decimals$}")).to_owned()
    } else {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", strip_zeros(mantissa), exp.abs())
    }
}

fn strip_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

/// `%{width}s` of bytes: right-aligned, padded with spaces, never truncated.
pub(crate) fn right(out: &mut Vec<u8>, text: &[u8], width: usize) {
    out.extend(std::iter::repeat_n(b' ', width.saturating_sub(text.len())));
    out.extend_from_slice(text);
}

/// `%{width}.{width}s`: right-aligned and cut to `width` bytes.
pub(crate) fn right_cut(out: &mut Vec<u8>, text: &[u8], width: usize) {
    right(out, &text[..text.len().min(width)], width);
}

/// `%-{width}s` of bytes: left-aligned, padded with spaces, never truncated.
pub(crate) fn left(out: &mut Vec<u8>, text: &[u8], width: usize) {
    out.extend_from_slice(text);
    out.extend(std::iter::repeat_n(b' ', width.saturating_sub(text.len())));
}

/// `%-{width}.{width}s`: left-aligned and cut to `width` bytes.
pub(crate) fn left_cut(out: &mut Vec<u8>, text: &[u8], width: usize) {
    let text = &text[..text.len().min(width)];
    out.extend_from_slice(text);
    out.extend(std::iter::repeat_n(b' ', width - text.len()));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_rounds_half_to_even_and_spells_nan_like_glibc() {
        assert_eq!(fixed(0.125, 2), "0.12");
        assert_eq!(fixed(0.375, 2), "0.38");
        assert_eq!(fixed(f64::NAN, 2), "-nan");
        assert_eq!(fixed_width(f64::NAN, 8, 2), "    -nan");
        assert_eq!(fixed(f64::INFINITY, 2), "inf");
        assert_eq!(fixed_width(1234567.0, 4, 2), "1234567.00");
    }

    #[test]
    fn general_matches_c() {
        let cases = [
            (0.01, "0.01"),
            (0.001, "0.001"),
            (1e-6, "1e-06"),
            (1.0 / 7.0, "0.142857"),
            (1.0, "1"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (123456.0, "123456"),
            (1234567.0, "1.23457e+06"),
            (999999.5, "1e+06"),
            (1.0 / 60.0, "0.0166667"),
            (1e100, "1e+100"),
            (f64::INFINITY, "inf"),
            (0.0, "0"),
        ];
        for (x, expected) in cases {
            assert_eq!(general(x), expected, "%g of {x}");
        }
    }
}
