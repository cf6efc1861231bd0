//! Published claims quoted word for word, each with the rule it is tested by, judged once per
//! reading of the algorithm (as printed, ours), and the Markdown table that shows them side by
//! side — the shared form of the reports that compare a publication's algorithm as printed with
//! our readings (thesis §4.2 and §5.2 as the specification states them).

use super::verdict;
use std::fmt::Write as _;

/// A published claim (quoted), the rule it is tested by, and the outcome.
#[derive(Clone, Debug)]
pub struct Claim {
    /// The claim, word for word.
    pub quote: &'static str,
    /// How we test it.
    pub rule: String,
    /// Whether it holds on our numbers.
    pub holds: bool,
    /// The numbers.
    pub evidence: String,
}

/// The table `| claim | rule | reading… |`: one row per claim of the first reading, each
/// reading's verdict and evidence in its column (every reading judges the same claims in the same
/// order).
pub fn table(header: (&str, &str), readings: &[&str], by_reading: &[Vec<Claim>]) -> String {
    let mut r = String::new();
    let _ = writeln!(
        r,
        "| {} | {} | {} |\n|---|---|{}",
        header.0,
        header.1,
        readings.join(" | "),
        "---|".repeat(readings.len())
    );
    let cell = |x: &str| x.replace('|', "\\|");
    let Some(first) = by_reading.first() else {
        return r;
    };
    for (i, c) in first.iter().enumerate() {
        let verdicts: Vec<String> = by_reading
            .iter()
            .map(|cs| {
                let c = &cs[i];
                format!("**{}** — {}", verdict(c.holds), cell(&c.evidence))
            })
            .collect();
        let _ = writeln!(
            r,
            "| \"{}\" | {} | {} |",
            cell(c.quote),
            cell(&c.rule),
            verdicts.join(" | ")
        );
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_row_per_claim_with_a_verdict_per_reading_and_pipes_escaped() {
        let claim = |holds| Claim {
            quote: "A | B beats C",
            rule: "at every Ta".into(),
            holds,
            evidence: "1 vs 2".into(),
        };
        let t = table(
            ("claim", "rule"),
            &["as printed", "ours"],
            &[vec![claim(false)], vec![claim(true)]],
        );
        assert_eq!(
            t,
            "| claim | rule | as printed | ours |\n|---|---|---|---|\n\
             | \"A \\| B beats C\" | at every Ta | **does not hold** — 1 vs 2 | **holds** — 1 vs 2 |\n"
        );
    }
}
