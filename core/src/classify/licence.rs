//! The meta-scheduler's Licence heuristic (spec `two-level-grid-scheduler.md` D4.1.2, Figure 11;
//! D12 #7): jobs asking for many licence types first. `[0, |L|]` is cut into `max` equal intervals;
//! the contribution is the 1-based index of the interval holding the job's licence count,
//! `min(⌊n / (|L| / max)⌋ + 1, max)`.

/// The contribution of a job needing `needed` licence types out of a catalogue of `types`.
pub fn licence_priority(needed: usize, types: usize, max: u8) -> u8 {
    if types == 0 {
        return 1;
    }
    let width = types as f64 / f64::from(max);
    let idx = (needed as f64 / width).floor() as u64 + 1;
    idx.min(u64::from(max)) as u8
}

#[cfg(test)]
mod tests {
    use super::licence_priority;

    #[test]
    fn figure_11_and_the_edges() {
        assert_eq!(
            licence_priority(5, 20, 10),
            3,
            "Figure 11: 5 of 20 types -> [4, 6) -> 3"
        );
        assert_eq!(licence_priority(0, 20, 10), 1);
        assert_eq!(licence_priority(1, 20, 10), 1);
        assert_eq!(licence_priority(2, 20, 10), 2);
        assert_eq!(licence_priority(19, 20, 10), 10);
        assert_eq!(licence_priority(20, 20, 10), 10, "clamped");
        assert_eq!(licence_priority(3, 0, 10), 1, "no catalogue");
        assert_eq!(licence_priority(3, 40, 10), 1);
        assert_eq!(licence_priority(4, 40, 10), 2);
    }
}
