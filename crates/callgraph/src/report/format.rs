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

/// Appends `%{width}.{prec}f` of `x` to `out`: right-aligned, never truncated, with
/// [`fixed`]'s spelling, and without allocating.
///
/// The listings print hundreds of thousands of numbers, and `format!` dominates their cost.
/// Finite values with `prec <= 3` whose scaled integer fits 128 bits are rounded here exactly
/// as glibc does (half to even on the exact binary value); anything else takes the general path.
pub(crate) fn push_fixed(out: &mut Vec<u8>, x: f64, width: usize, prec: usize) {
    match exact_scaled(x, prec).and_then(|q| u64::try_from(q).ok()) {
        Some(q) => {
            let mut digits = [0u8; 24];
            // At least one digit before the point: `prec + 1` digits or more.
            let mut at = digits.len();
            let mut rest = q;
            for _ in 0..prec {
                at -= 1;
                digits[at] = b'0' + (rest % 10) as u8;
                rest /= 10;
            }
            if prec != 0 {
                at -= 1;
                digits[at] = b'.';
            }
            at -= uint_digits_into(&mut digits[..at], rest);
            if x.is_sign_negative() {
                at -= 1;
                digits[at] = b'-';
            }
            right(out, &digits[at..], width);
        }
        None => right(out, fixed(x, prec).as_bytes(), width),
    }
}

/// `|x| × 10^prec`, rounded half to even on the exact value, when that is cheap to get exactly.
fn exact_scaled(x: f64, prec: usize) -> Option<u128> {
    const POW10: [u64; 4] = [1, 10, 100, 1000];
    let scale = *POW10.get(prec)?;
    if !x.is_finite() {
        return None;
    }
    let bits = x.to_bits();
    let raw_exp = ((bits >> 52) & 0x7ff) as i32;
    let fraction = bits & ((1 << 52) - 1);
    let (mantissa, exp) = if raw_exp == 0 {
        (fraction, -1074)
    } else {
        (fraction | (1 << 52), raw_exp - 1075)
    };
    // mantissa < 2^53 and scale < 2^10, so the product fits in 63 bits.
    let scaled = u128::from(mantissa * scale);
    if exp >= 0 {
        // Whole numbers up to 2^127: no rounding at all.
        return (exp <= 64).then(|| scaled << exp);
    }
    let shift = exp.unsigned_abs();
    if shift >= 128 {
        // Below 2^-64: less than half of the last digit.
        return Some(0);
    }
    let q = scaled >> shift;
    let r = scaled & ((1u128 << shift) - 1);
    let half = 1u128 << (shift - 1);
    Some(if r > half || (r == half && q & 1 == 1) {
        q + 1
    } else {
        q
    })
}

/// Appends the decimal digits of `n`, right-aligned in `width` (`%{width}lu`).
pub(crate) fn push_uint(out: &mut Vec<u8>, n: u64, width: usize) {
    let mut digits = [0u8; 20];
    let text = uint_digits(&mut digits, n);
    right(out, text, width);
}

/// Appends the decimal digits of `n`, left-aligned in `width` (`%-{width}lu`).
pub(crate) fn push_uint_left(out: &mut Vec<u8>, n: u64, width: usize) {
    let mut digits = [0u8; 20];
    let text = uint_digits(&mut digits, n);
    left(out, text, width);
}

/// The decimal digits of `n`, written at the end of `buf`.
pub(crate) fn uint_digits(buf: &mut [u8; 20], n: u64) -> &[u8] {
    let len = uint_digits_into(buf, n);
    &buf[20 - len..]
}

/// Two decimal digits for each value below 100.
const PAIRS: &[u8; 200] = b"\
0001020304050607080910111213141516171819\
2021222324252627282930313233343536373839\
4041424344454647484950515253545556575859\
6061626364656667686970717273747576777879\
8081828384858687888990919293949596979899";

/// Writes the decimal digits of `n` at the end of `buf` (which must hold 20 bytes or more
/// for any `n`) and returns how many there are.
fn uint_digits_into(buf: &mut [u8], mut n: u64) -> usize {
    let mut at = buf.len();
    while n >= 100 {
        let pair = (n % 100) as usize * 2;
        n /= 100;
        at -= 2;
        buf[at..at + 2].copy_from_slice(&PAIRS[pair..pair + 2]);
    }
    if n >= 10 {
        at -= 2;
        buf[at..at + 2].copy_from_slice(&PAIRS[n as usize * 2..n as usize * 2 + 2]);
    } else {
        at -= 1;
        buf[at] = b'0' + n as u8;
    }
    buf.len() - at
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
    pad(out, width.saturating_sub(text.len()));
    out.extend_from_slice(text);
}

/// Appends `n` spaces.
pub(crate) fn pad(out: &mut Vec<u8>, n: usize) {
    const SPACES: [u8; 64] = [b' '; 64];
    let mut n = n;
    while n > 0 {
        let k = n.min(SPACES.len());
        out.extend_from_slice(&SPACES[..k]);
        n -= k;
    }
}

/// `%{width}.{width}s`: right-aligned and cut to `width` bytes.
pub(crate) fn right_cut(out: &mut Vec<u8>, text: &[u8], width: usize) {
    right(out, &text[..text.len().min(width)], width);
}

/// `%-{width}s` of bytes: left-aligned, padded with spaces, never truncated.
pub(crate) fn left(out: &mut Vec<u8>, text: &[u8], width: usize) {
    out.extend_from_slice(text);
    pad(out, width.saturating_sub(text.len()));
}

/// `%-{width}.{width}s`: left-aligned and cut to `width` bytes.
pub(crate) fn left_cut(out: &mut Vec<u8>, text: &[u8], width: usize) {
    let text = &text[..text.len().min(width)];
    out.extend_from_slice(text);
    pad(out, width - text.len());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_rounds_half_to_even_and_spells_nan_like_glibc() {
        assert_eq!(fixed(0.125, 2), "0.12");
        assert_eq!(fixed(0.375, 2), "0.38");
        assert_eq!(fixed(f64::NAN, 2), "-nan");
        let width = |x: f64, width: usize, prec: usize| {
            let mut out = Vec::new();
            push_fixed(&mut out, x, width, prec);
            String::from_utf8(out).unwrap()
        };
        assert_eq!(width(f64::NAN, 8, 2), "    -nan");
        assert_eq!(fixed(f64::INFINITY, 2), "inf");
        assert_eq!(width(1234567.0, 4, 2), "1234567.00");
    }

    /// A deterministic spread of values: random bit patterns, random magnitudes around the
    /// listings' usual range, and exact halfway cases.
    fn samples() -> Vec<f64> {
        let mut x: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = move || {
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            x.wrapping_mul(0x2545_f491_4f6c_dd1d)
        };
        let mut v = vec![
            0.0,
            -0.0,
            0.005,
            0.015,
            0.025,
            0.125,
            0.375,
            -0.125,
            -0.001,
            0.5,
            1.5,
            2.5,
            0.05,
            0.45,
            99.995,
            1e15,
            1e19,
            1e20,
            1.8e19,
            3.4e38,
            1e300,
            f64::MAX,
            f64::MIN_POSITIVE,
            5e-324,
            1e-20,
            f64::NAN,
            -f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
        ];
        for _ in 0..20_000 {
            v.push(f64::from_bits(next()));
            let ticks = (next() % 10_000_000) as f64;
            let hz = [100.0, 1000.0, 60.0, 7.0][(next() % 4) as usize];
            v.push(ticks / hz);
            v.push(ticks * (next() % 1000) as f64 / (1 + next() % 1000) as f64 / hz);
            v.push((next() % 100_000) as f64 / 1000.0 + 0.0005);
            v.push(-((next() % 100_000) as f64) / 8.0);
        }
        v
    }

    #[test]
    fn push_fixed_spells_like_format() {
        let mut out = Vec::new();
        for x in samples() {
            for (width, prec) in [(8, 2), (7, 2), (5, 1), (6, 2), (0, 0), (9, 3), (4, 4)] {
                out.clear();
                push_fixed(&mut out, x, width, prec);
                assert_eq!(
                    std::str::from_utf8(&out).unwrap(),
                    format!("{:>width$}", fixed(x, prec)),
                    "%{width}.{prec}f of {x:e} ({:#x})",
                    x.to_bits()
                );
            }
        }
    }

    #[test]
    fn push_uint_aligns() {
        let mut out = Vec::new();
        for n in [0, 7, 10, 12345678, u64::MAX] {
            out.clear();
            push_uint(&mut out, n, 7);
            push_uint_left(&mut out, n, 7);
            assert_eq!(out, format!("{n:>7}{n:<7}").as_bytes());
        }
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
