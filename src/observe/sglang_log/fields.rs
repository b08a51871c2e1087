//! Byte-level pieces shared by every line parser: the leading number or boolean of a value,
//! and the split of a message tail into `key: value` fields, as bytes (allocation-free) and
//! as owned strings. A leaf of `sglang_log`: it uses no other module of it. No function here
//! panics on any input.

// ---------------------------------------------------------------------------------------------
// Numbers and booleans

/// The numeric text a value starts with; `full=X, swa=Y` gives X.
fn num_text(v: &[u8]) -> &[u8] {
    let v = v.trim_ascii();
    let v = v.strip_prefix(b"full=").unwrap_or(v);
    let end = v
        .iter()
        .position(|c| !(c.is_ascii_digit() || matches!(c, b'.' | b'-' | b'+' | b'e' | b'E')))
        .unwrap_or(v.len());
    v.get(..end).unwrap_or(&[])
}

/// Exact powers of ten (all representable in f64).
const POW10: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
];

/// `123` / `123.45`: an integer mantissa below 2^53 divided by an exact power of ten, which
/// is correctly rounded, i.e. the same as `str::parse`. None for anything else.
fn fast_decimal(t: &[u8]) -> Option<f64> {
    let mut mant: u64 = 0;
    let mut int_digits = 0usize;
    let mut frac_digits = 0usize;
    let mut in_frac = false;
    for &c in t {
        match c {
            b'0'..=b'9' => {
                mant = mant.checked_mul(10)?.checked_add(u64::from(c - b'0'))?;
                if in_frac {
                    frac_digits += 1;
                } else {
                    int_digits += 1;
                }
            }
            b'.' if !in_frac => in_frac = true,
            _ => return None,
        }
    }
    if int_digits == 0 || mant >= (1u64 << 53) {
        return None;
    }
    let p = *POW10.get(frac_digits)?;
    Some(mant as f64 / p)
}

/// Where a value's number starts: leading whitespace and a `full=` (SWA pools) skipped.
fn num_start(v: &[u8]) -> &[u8] {
    let v = v.trim_ascii_start();
    v.strip_prefix(b"full=").unwrap_or(v)
}

/// Leading number of a value (`0.84`, `12.50%`, `0.02 GB`, `0.0980 -> 0.7047` gives 0.098).
/// The usual `123.45` is read in one pass; anything else goes through `str::parse`.
pub fn parse_f64_bytes(v: &[u8]) -> Option<f64> {
    let t = num_start(v);
    let mut mant: u64 = 0;
    let mut int_digits = 0usize;
    let mut frac_digits = 0usize;
    let mut in_frac = false;
    let mut simple = true;
    for &c in t {
        match c {
            b'0'..=b'9' => {
                match mant
                    .checked_mul(10)
                    .and_then(|m| m.checked_add(u64::from(c - b'0')))
                {
                    Some(m) => mant = m,
                    None => simple = false,
                }
                if in_frac {
                    frac_digits += 1;
                } else {
                    int_digits += 1;
                }
            }
            b'.' if !in_frac => in_frac = true,
            b'.' | b'+' | b'-' | b'e' | b'E' => {
                simple = false;
                break;
            }
            _ => break,
        }
    }
    if simple && int_digits > 0 && mant < (1u64 << 53) {
        if let Some(p) = POW10.get(frac_digits) {
            return Some(mant as f64 / p);
        }
    }
    let t = num_text(v);
    fast_decimal(t)
        .or_else(|| std::str::from_utf8(t).ok()?.parse::<f64>().ok())
        .filter(|x| x.is_finite())
}

/// Leading unsigned integer of a value (`3`, `+3`, `full=165376, swa=768` gives 165376;
/// `-3`, `x` and overflow give None).
pub fn parse_u64_bytes(v: &[u8]) -> Option<u64> {
    let t = num_start(v);
    let t = t.strip_prefix(b"+").unwrap_or(t);
    let mut n: u64 = 0;
    let mut any = false;
    for &c in t {
        if !c.is_ascii_digit() {
            break;
        }
        n = n.checked_mul(10)?.checked_add(u64::from(c - b'0'))?;
        any = true;
    }
    any.then_some(n)
}

/// Leading signed integer (`-1`).
pub fn parse_i64_bytes(v: &[u8]) -> Option<i64> {
    let t = num_text(v);
    let (neg, t) = match t.strip_prefix(b"-") {
        Some(r) => (true, r),
        None => (false, t.strip_prefix(b"+").unwrap_or(t)),
    };
    let n = i64::try_from(parse_u64_bytes(t)?).ok()?;
    Some(if neg { -n } else { n })
}

/// `True`/`False` (any case).
pub fn parse_bool_bytes(v: &[u8]) -> Option<bool> {
    let v = v.trim_ascii();
    let starts = |w: &[u8]| v.get(..w.len()).is_some_and(|p| p.eq_ignore_ascii_case(w));
    if starts(b"true") {
        Some(true)
    } else if starts(b"false") {
        Some(false)
    } else {
        None
    }
}

/// Leading number of a value (`0.84`, `12.50%`, `0.02 GB`, `0.0980 -> 0.7047` gives 0.098).
pub fn parse_f64(v: &str) -> Option<f64> {
    parse_f64_bytes(v.as_bytes())
}

/// Leading unsigned integer of a value (`3`, `full=165376, swa=768` gives 165376).
pub fn parse_u64(v: &str) -> Option<u64> {
    parse_u64_bytes(v.as_bytes())
}

/// Leading signed integer (`-1`).
pub fn parse_i64(v: &str) -> Option<i64> {
    parse_i64_bytes(v.as_bytes())
}

// ---------------------------------------------------------------------------------------------
// key: value pieces

#[derive(Clone, Copy, PartialEq)]
enum Sep {
    Comma,
    DotSpace,
    End,
}

fn is_key_trim(c: u8) -> bool {
    c.is_ascii_whitespace() || matches!(c, b'.' | b',' | b';')
}

/// `s[a..b]` without leading and trailing whitespace.
fn trim_range(s: &[u8], mut a: usize, mut b: usize) -> (usize, usize) {
    while a < b && s.get(a).is_some_and(u8::is_ascii_whitespace) {
        a += 1;
    }
    while b > a && s.get(b - 1).is_some_and(u8::is_ascii_whitespace) {
        b -= 1;
    }
    (a, b)
}

/// A key without surrounding whitespace and `.,;`.
fn clean_key_range(s: &[u8], mut a: usize, mut b: usize) -> (usize, usize) {
    while a < b && s.get(a).is_some_and(|c| is_key_trim(*c)) {
        a += 1;
    }
    while b > a && s.get(b - 1).is_some_and(|c| is_key_trim(*c)) {
        b -= 1;
    }
    (a, b)
}

/// A value without surrounding whitespace and without trailing `.,;`.
fn clean_val_range(s: &[u8], a: usize, b: usize) -> (usize, usize) {
    let (a, mut b) = trim_range(s, a, b);
    while b > a && s.get(b - 1).is_some_and(|c| is_key_trim(*c)) {
        b -= 1;
    }
    (a, b)
}

/// The bytes [`visit_fields`] stops at: `,`, `.` and `:`.
static SEPARATOR: [bool; 256] = {
    let mut t = [false; 256];
    t[b',' as usize] = true;
    t[b'.' as usize] = true;
    t[b':' as usize] = true;
    t
};

/// The field being assembled by [`visit_fields`]: (key start, key end, value start, value end)
/// of the field not yet handed out, and a pending key prefix (start, end).
struct FieldState {
    cur: Option<(usize, usize, usize, usize)>,
    pending: Option<(usize, usize)>,
}

impl FieldState {
    /// One piece `s[start..end]`, followed by `sep`; `colon` is its first `:`.
    fn piece<'a>(
        &mut self,
        s: &'a [u8],
        (start, end): (usize, usize),
        sep: Sep,
        colon: Option<usize>,
        f: &mut impl FnMut(&'a [u8], &'a [u8]),
    ) {
        let (ps, pe) = trim_range(s, start, end);
        if ps >= pe {
            return;
        }
        if let Some(colon) = colon {
            let (ks, ke) = clean_key_range(s, ps, colon);
            let key = match self.pending.take() {
                Some((p, pend)) => Some((p, if ke > ks { ke } else { pend })),
                None if ke > ks => Some((ks, ke)),
                None => None,
            };
            if let Some((ks, ke)) = key {
                let (vs, ve) = clean_val_range(s, colon + 1, pe);
                self.flush(s, f);
                self.cur = Some((ks, ke, vs, ve));
            }
        } else if sep == Sep::DotSpace {
            self.pending = Some(match self.pending {
                Some((p, _)) => (p, pe),
                None => (ps, pe),
            });
        } else if self.pending.is_none() {
            if let Some(c) = self.cur.as_mut() {
                let (xs, xe) = clean_val_range(s, ps, pe);
                if xs < xe {
                    c.3 = xe;
                }
            }
        }
    }

    fn flush<'a>(&mut self, s: &'a [u8], f: &mut impl FnMut(&'a [u8], &'a [u8])) {
        if let Some(c) = self.cur.take() {
            if let (Some(k), Some(v)) = (s.get(c.0..c.1), s.get(c.2..c.3)) {
                f(k, v);
            }
        }
    }
}

/// Call `f(key, value)` for every `key: value` pair of a message tail, in order.
///
/// Pieces are split on `,` and on `. ` (v0.1 used `. ` between fields). A piece without `:`
/// that is followed by `. ` is the start of the next key (`est. decode TFLOPS/s (per GPU): X`);
/// one followed by `,` or the end continues the previous value (`#token: full=1, swa=2`).
/// Keys and values are slices of `s`, trimmed. One plain pass over the bytes: the pieces are
/// short, so this beats both a `memchr` call per piece and `memchr3_iter` (measured).
pub fn visit_fields<'a>(s: &'a [u8], f: &mut impl FnMut(&'a [u8], &'a [u8])) {
    let mut st = FieldState {
        cur: None,
        pending: None,
    };
    let mut start = 0;
    let mut colon = None;
    for (i, &c) in s.iter().enumerate() {
        if !SEPARATOR[usize::from(c)] {
            continue;
        }
        match c {
            b':' if colon.is_none() => colon = Some(i),
            b',' => {
                st.piece(s, (start, i), Sep::Comma, colon, f);
                start = i + 1;
                colon = None;
            }
            b'.' if s.get(i + 1) == Some(&b' ') => {
                st.piece(s, (start, i), Sep::DotSpace, colon, f);
                start = i + 2;
                colon = None;
            }
            _ => {}
        }
    }
    st.piece(s, (start.min(s.len()), s.len()), Sep::End, colon, f);
    st.flush(s, f);
}

/// Split a message tail into `key: value` pairs (see [`visit_fields`]: pieces split on `,` and
/// `. `; a piece without `:` before `. ` starts the next key, one before `,` continues the
/// previous value).
pub fn split_fields(s: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    visit_fields(s.as_bytes(), &mut |k, v| {
        out.push((
            String::from_utf8_lossy(k).into_owned(),
            String::from_utf8_lossy(v).into_owned(),
        ));
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(s: &str) -> Vec<(String, String)> {
        let mut out = Vec::new();
        visit_fields(s.as_bytes(), &mut |k, v| {
            out.push((
                String::from_utf8_lossy(k).into_owned(),
                String::from_utf8_lossy(v).into_owned(),
            ))
        });
        out
    }

    #[test]
    fn fast_decimal_matches_std() {
        for t in [
            "0",
            "0.84",
            "566.12",
            "12.50",
            "1707904",
            "0.0980",
            "9007199254740991",
            "1.",
            "00.5",
            "123456789012.345678",
        ] {
            assert_eq!(
                fast_decimal(t.as_bytes()).or_else(|| t.parse().ok()),
                t.parse::<f64>().ok(),
                "{t}"
            );
        }
        assert_eq!(fast_decimal(b".5"), None);
        assert_eq!(fast_decimal(b"1e5"), None);
        assert_eq!(parse_f64_bytes(b"1e5"), Some(1e5));
        assert_eq!(parse_f64_bytes(b"99999999999999999999.5"), Some(1e20));
        assert_eq!(parse_u64_bytes(b"99999999999999999999999"), None);
        assert_eq!(parse_i64_bytes(b"-17"), Some(-17));
        assert_eq!(parse_bool_bytes(b" TRUE,"), Some(true));
        assert_eq!(parse_bool_bytes(b"fals"), None);
    }

    mod props {
        use super::*;
        use proptest::collection::vec;
        use proptest::prelude::*;
        use proptest::sample::select;

        /// What values in the log start with, and what may follow their number.
        const NUMERIC: &[u8] = b"0123456789..+-eE %xfull= ,";

        /// The plain definition of [`parse_f64_bytes`]: the numeric prefix through
        /// `str::parse`, finite only.
        fn reference_f(v: &[u8]) -> Option<f64> {
            std::str::from_utf8(num_text(v))
                .ok()?
                .parse::<f64>()
                .ok()
                .filter(|x| x.is_finite())
        }

        /// The plain definition of [`parse_u64_bytes`]: the numeric prefix's leading digits.
        fn reference_u(v: &[u8]) -> Option<u64> {
            let t = num_text(v);
            let t = t.strip_prefix(b"+").unwrap_or(t);
            let end = t
                .iter()
                .position(|c| !c.is_ascii_digit())
                .unwrap_or(t.len());
            std::str::from_utf8(t.get(..end)?).ok()?.parse::<u64>().ok()
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(20000))]

            /// The one-pass readers agree with the plain definition, on short values of the
            /// numeric alphabet and on long digit runs (mantissas past 2^53, u64 overflow).
            #[test]
            fn one_pass_numbers_match_str_parse(
                v in prop_oneof![
                    vec(select(NUMERIC), 0..12),
                    vec(select(b"0123456789.".as_slice()), 0..26),
                ],
            ) {
                let shown = String::from_utf8_lossy(&v).into_owned();
                prop_assert_eq!(parse_f64_bytes(&v), reference_f(&v), "{:?}", shown);
                prop_assert_eq!(parse_u64_bytes(&v), reference_u(&v), "{:?}", shown);
            }
        }
    }

    #[test]
    fn fields_split_like_the_reference() {
        assert_eq!(
            fields(", #token: full=1000, swa=200, token usage: full=0.10, swa=0.02, x: 1"),
            vec![
                ("#token".into(), "full=1000, swa=200".into()),
                ("token usage".into(), "full=0.10, swa=0.02".into()),
                ("x".into(), "1".into()),
            ]
        );
        assert_eq!(
            fields(", #queue-req: 0, est. decode TFLOPS/s (per GPU): 12.34, "),
            vec![
                ("#queue-req".into(), "0".into()),
                ("est. decode TFLOPS/s (per GPU)".into(), "12.34".into()),
            ]
        );
        assert_eq!(
            fields(". #seq: 1. #cached_token: 0. tree_cache_hit_rate: 12.50%. t: 0.01s."),
            vec![
                ("#seq".into(), "1".into()),
                ("#cached_token".into(), "0".into()),
                ("tree_cache_hit_rate".into(), "12.50%".into()),
                ("t".into(), "0.01s".into()),
            ]
        );
        assert!(fields("").is_empty());
        assert!(fields(": : ,,. . :").iter().all(|(k, _)| !k.is_empty()));
    }

    #[test]
    fn value_parsers() {
        assert_eq!(parse_f64("12.50%"), Some(12.5));
        assert_eq!(parse_f64("0.0980 -> 0.7047"), Some(0.098));
        assert_eq!(parse_f64("True"), None);
        assert_eq!(parse_f64("1e999"), None);
        assert_eq!(parse_u64("full=165376, swa=768"), Some(165376));
        assert_eq!(parse_u64("-3"), None);
        assert_eq!(parse_i64("-1"), Some(-1));
        assert_eq!(parse_bool_bytes(b"True"), Some(true));
        assert_eq!(parse_bool_bytes(b"false,"), Some(false));
        assert_eq!(parse_bool_bytes(b"maybe"), None);
    }
}
