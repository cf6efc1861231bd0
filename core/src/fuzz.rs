//! Bounded, seeded fuzzing on stable Rust, for the parsers' unit tests: a seed corpus of valid
//! inputs is mutated byte by byte (bit flips, byte insertions and deletions, repeated and spliced
//! ranges, interesting numbers and text from a dictionary) and each mutant is fed to a parser's
//! fuzz entry, which must not panic. The same entries serve the coverage-guided `cargo fuzz`
//! targets of `fuzz/` (docs/development.md).
//!
//! A run is deterministic (a fixed seed and number of mutants, no clock), so a failure is
//! reproducible, and the panic names the input that caused it. Long runs are `cargo fuzz`'s.

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::panic::{AssertUnwindSafe, catch_unwind};

/// Numbers and text that often break parsers: edges of the integer types, floats that are not
/// finite, separators, quotes, escapes, control characters and multi-byte UTF-8.
pub const INTERESTING: &[&str] = &[
    "0",
    "-0",
    "1",
    "-1",
    "255",
    "256",
    "65535",
    "65536",
    "2147483647",
    "-2147483648",
    "4294967295",
    "4294967296",
    "9223372036854775807",
    "-9223372036854775808",
    "9223372036854775808",
    "18446744073709551615",
    "18446744073709551616",
    "99999999999999999999999999999",
    "1e308",
    "1e999",
    "-1e999",
    "4.9e-324",
    "0.5",
    "-0.5",
    "1.",
    ".5",
    "NaN",
    "nan",
    "inf",
    "-inf",
    "true",
    "null",
    "\"\"",
    "\"",
    "'",
    "\\",
    "\\u0000",
    "\\uD800",
    "\0",
    "\t",
    "\r",
    "\n",
    " ",
    "#",
    ";",
    ",",
    ":",
    "=",
    "[",
    "]",
    "{",
    "}",
    "[[",
    "]]",
    "'''",
    "\"\"\"",
    "é",
    "\u{202e}",
    "\u{feff}",
    "\u{10ffff}",
    "𝕏",
    "../",
    "/",
    "%",
    "+",
    "${",
];

/// The longest mutant tried, in bytes.
const MAX_LEN: usize = 16 * 1024;

/// How many inputs a run keeps to mutate: the seeds, then mutants the entry accepted.
const MAX_POOL: usize = 256;

/// Mutates inputs drawn from a pool; see the module documentation.
#[derive(Debug)]
pub struct Mutator {
    rng: ChaCha8Rng,
    /// The seeds, then the inputs kept.
    pool: Vec<Vec<u8>>,
    /// How many of `pool` are seeds: they stay, so the run never drifts away from them.
    seeds: usize,
    dictionary: Vec<Vec<u8>>,
}

impl Mutator {
    /// A mutator of `seeds`, with the target's own words (`dictionary`, e.g. its keys) added to
    /// [`INTERESTING`].
    pub fn new(seed: u64, seeds: &[&[u8]], dictionary: &[&str]) -> Mutator {
        let mut pool: Vec<Vec<u8>> = seeds.iter().map(|s| s.to_vec()).collect();
        if pool.is_empty() {
            pool.push(Vec::new());
        }
        Mutator {
            rng: ChaCha8Rng::seed_from_u64(seed),
            seeds: pool.len(),
            pool,
            dictionary: INTERESTING
                .iter()
                .chain(dictionary)
                .map(|w| w.as_bytes().to_vec())
                .collect(),
        }
    }

    /// Keeps `input` to mutate later (an input the entry accepted: its mutants go deeper), in
    /// the place of an earlier one kept when the pool is full.
    pub fn keep(&mut self, input: Vec<u8>) {
        if self.pool.len() < MAX_POOL.max(self.seeds + 1) {
            self.pool.push(input);
        } else {
            let i = self.rng.random_range(self.seeds..self.pool.len());
            self.pool[i] = input;
        }
    }

    /// The next mutant: a seed (one time in four) or an input kept, with one to eight mutations.
    pub fn next_input(&mut self) -> Vec<u8> {
        let from = match self.rng.random_bool(0.25) {
            true => 0..self.seeds,
            false => 0..self.pool.len(),
        };
        let mut data = self.pool[self.rng.random_range(from)].clone();
        let rounds = 1 + self
            .rng
            .random_range(0..8usize)
            .min(self.rng.random_range(0..8usize));
        for _ in 0..rounds {
            self.mutate(&mut data);
        }
        data.truncate(MAX_LEN);
        data
    }

    /// A random position in `data` (its end included).
    fn pos(&mut self, data: &[u8]) -> usize {
        self.rng.random_range(0..=data.len())
    }

    /// A random range of `data`, mostly short.
    fn range(&mut self, data: &[u8]) -> (usize, usize) {
        let start = self.pos(data);
        let most = (data.len() - start).min(if self.rng.random_bool(0.8) { 8 } else { 256 });
        (start, start + self.rng.random_range(0..=most))
    }

    fn word(&mut self) -> Vec<u8> {
        self.dictionary[self.rng.random_range(0..self.dictionary.len())].clone()
    }

    fn mutate(&mut self, data: &mut Vec<u8>) {
        match self.rng.random_range(0..11u8) {
            0 if !data.is_empty() => {
                let i = self.rng.random_range(0..data.len());
                data[i] ^= 1 << self.rng.random_range(0..8u8);
            }
            1 if !data.is_empty() => {
                let i = self.rng.random_range(0..data.len());
                data[i] = self.rng.random();
            }
            2 => {
                let at = self.pos(data);
                let n = self.rng.random_range(1..=4usize);
                let bytes: Vec<u8> = (0..n).map(|_| self.rng.random()).collect();
                data.splice(at..at, bytes);
            }
            3 => {
                let (a, b) = self.range(data);
                data.drain(a..b);
            }
            4 => {
                // A range repeated, up to 64 times: long lines, deep nesting, many fields.
                let (a, b) = self.range(data);
                let times = self.rng.random_range(1..=64usize);
                let copy = data[a..b].repeat(times);
                let at = self.pos(data);
                data.splice(at..at, copy);
            }
            5 | 6 => {
                let at = self.pos(data);
                let w = self.word();
                data.splice(at..at, w);
            }
            7 => {
                // A number of the input replaced by an interesting one.
                let digits: Vec<usize> = (0..data.len())
                    .filter(|&i| data[i].is_ascii_digit())
                    .collect();
                if let Some(&i) = digits.get(self.rng.random_range(0..digits.len().max(1))) {
                    let mut i = i;
                    while i > 0 && (data[i - 1].is_ascii_digit() || data[i - 1] == b'.') {
                        i -= 1;
                    }
                    let mut end = i;
                    while end < data.len() && (data[end].is_ascii_digit() || data[end] == b'.') {
                        end += 1;
                    }
                    let w = self.word();
                    data.splice(i..end, w);
                }
            }
            8 => {
                // Part of another input spliced in: its lines, keys and values in new places.
                let other = self.pool[self.rng.random_range(0..self.pool.len())].clone();
                let (a, b) = self.range(&other);
                let at = self.pos(data);
                data.splice(at..at, other[a..b].iter().copied());
            }
            9 => {
                // Cut at a line: the input ends early.
                if let Some(i) = data.iter().rposition(|&b| b == b'\n') {
                    let at = self.rng.random_range(0..=i);
                    data.truncate(at);
                }
            }
            _ => {
                let (a, b) = self.range(data);
                let w = self.word();
                data.splice(a..b, w);
            }
        }
    }
}

/// What a run did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stats {
    /// Mutants run (the seeds not counted).
    pub runs: u64,
    /// Of them, those the entry accepted.
    pub accepted: u64,
}

impl Stats {
    /// Asserts that at least one mutant in twenty was accepted: the run got past the entry's
    /// first syntax check, so it fuzzed more than the error path.
    pub fn assert_reaches_past_the_syntax(&self) {
        assert!(self.accepted > self.runs / 20, "too few accepted: {self:?}");
    }
}

/// The seed of every run: a run is the same on every machine and every time.
pub const SEED: u64 = 0x5eed;

/// Runs `entry` on each of `seeds`, then on `runs` mutants of them, keeping to mutate further the
/// mutants for which it returns `true` (accepted). A panic of `entry` is raised again with the
/// input that caused it (escaped) and its number in the run.
pub fn run(
    name: &str,
    seeds: &[&[u8]],
    dictionary: &[&str],
    runs: u64,
    mut entry: impl FnMut(&[u8]) -> bool,
) -> Stats {
    let mut try_one = |data: &[u8], what: &str| -> bool {
        match catch_unwind(AssertUnwindSafe(|| entry(data))) {
            Ok(accepted) => accepted,
            Err(panic) => {
                let why = panic
                    .downcast_ref::<String>()
                    .map(String::as_str)
                    .or_else(|| panic.downcast_ref::<&str>().copied())
                    .unwrap_or("(no message)");
                panic!(
                    "fuzz target `{name}` panicked on {what}: {why}\ninput: b\"{}\"",
                    data.escape_ascii()
                )
            }
        }
    };
    for (n, s) in seeds.iter().enumerate() {
        try_one(s, &format!("seed {n}"));
    }
    let mut m = Mutator::new(SEED, seeds, dictionary);
    let mut accepted = 0;
    for n in 0..runs {
        let data = m.next_input();
        if try_one(&data, &format!("mutant {n}")) {
            accepted += 1;
            m.keep(data);
        }
    }
    Stats { runs, accepted }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mutants_are_reproducible_bounded_and_varied() {
        let seeds: &[&[u8]] = &[b"id = 12\nname = \"a\"\n", b"1 0 5 100 4"];
        let mut a = Mutator::new(7, seeds, &["procs"]);
        let mut b = Mutator::new(7, seeds, &["procs"]);
        let mut distinct = std::collections::HashSet::new();
        for _ in 0..2_000 {
            let x = a.next_input();
            assert_eq!(x, b.next_input(), "the same seed gives the same mutants");
            assert!(x.len() <= MAX_LEN);
            distinct.insert(x);
        }
        assert!(
            distinct.len() > 1_500,
            "{} distinct mutants",
            distinct.len()
        );
        assert!(
            distinct
                .iter()
                .any(|x| x.windows(19).any(|w| w == b"9223372036854775807")),
            "dictionary words are inserted"
        );
    }

    #[test]
    fn a_panic_is_raised_again_naming_the_input() {
        let hit = catch_unwind(|| {
            run("t", &[b"abc"], &["KEY"], 100_000, |d| {
                assert!(!d.windows(3).any(|w| w == b"KEY"), "found");
                true
            })
        });
        let panic = hit.expect_err("a dictionary word is inserted");
        let message = panic.downcast_ref::<String>().unwrap();
        assert!(
            message.starts_with("fuzz target `t` panicked on mutant ")
                && message.contains(": found\ninput: b\""),
            "{message}"
        );
        let stats = run("t", &[b"x"], &[], 50, |d| d.len() % 2 == 0);
        assert_eq!(stats.runs, 50);
        assert!(stats.accepted > 5 && stats.accepted < 45, "{stats:?}");
    }

    #[test]
    fn kept_inputs_are_mutated_further() {
        let mut m = Mutator::new(1, &[b""], &[]);
        let long = |x: &Vec<u8>| x.windows(12).any(|w| w == b"zzzzzzzzzzzz");
        assert!(!(0..500).any(|_| long(&m.next_input())));
        m.keep(b"zzzzzzzzzzzzzzzzzzzzzzzzzzzzzz".to_vec());
        assert!((0..500).any(|_| long(&m.next_input())));
    }
}
