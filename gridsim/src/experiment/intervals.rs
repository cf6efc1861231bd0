//! Confidence intervals over the repetitions of an experiment's configurations: each mean with
//! the half-width of its 95 % interval (Student t over the repetitions), kept in the summary's
//! extra figures and printed as `mean ± half-width`.

use super::Summary;
use super::output::Row;
use std::collections::BTreeMap;

/// The two-sided 97.5 % quantile of Student's t with `df` degrees of freedom (1.96 from 31 on,
/// where the normal's is within 2 % of it).
pub fn t975(df: usize) -> f64 {
    const T: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    match df {
        0 => f64::NAN,
        1..=30 => T[df - 1],
        _ => 1.96,
    }
}

/// The mean of `v` and the half-width of its 95 % confidence interval (Student t, sample
/// standard deviation; NaN for fewer than two values).
pub fn ci95(v: &[f64]) -> (f64, f64) {
    let n = v.len();
    let mean = v.iter().sum::<f64>() / n.max(1) as f64;
    if n < 2 {
        return (mean, f64::NAN);
    }
    let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    (mean, t975(n - 1) * (var / n as f64).sqrt())
}

/// The key of a confidence interval's half-width in the summary's extra figures.
pub fn ci_key(metric: &str, algorithm: &str, variant: &str, load: f64) -> String {
    format!("{metric}_ci95/{algorithm}/{variant}/{load}")
}

/// Adds to `summary` the half-width of every configuration's interval of each of `metrics`.
pub fn summarize(rows: &[Row], metrics: &[&str], summary: &mut Summary) {
    let mut values: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for (k, m) in rows {
        for (name, x) in m {
            if metrics.contains(&name.as_str()) {
                (values.entry(ci_key(name, &k.algorithm, &k.variant, k.ta)))
                    .or_default()
                    .push(*x);
            }
        }
    }
    for (key, v) in values {
        summary.extra.insert(key, ci95(&v).1);
    }
}

/// A mean and its interval (two decimals for a slowdown, none otherwise), `–` where the
/// configuration did not run.
pub fn cell(s: &Summary, alg: &str, variant: &str, load: f64, metric: &str) -> String {
    let digits = if metric == "slowdown" { 2 } else { 0 };
    let Some(m) = s.get(alg, variant, load, metric) else {
        return "–".into();
    };
    match s.extra.get(&ci_key(metric, alg, variant, load)) {
        Some(h) if h.is_finite() => format!("{m:.digits$} ± {h:.digits$}"),
        _ => format!("{m:.digits$}"),
    }
}

/// The half-width of the interval of `metric` in a configuration, 0 where not known.
pub fn half_width(s: &Summary, metric: &str, alg: &str, variant: &str, load: f64) -> f64 {
    (s.extra.get(&ci_key(metric, alg, variant, load)))
        .copied()
        .filter(|h| h.is_finite())
        .unwrap_or(0.0)
}
