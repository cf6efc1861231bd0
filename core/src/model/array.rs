//! Job arrays: one submission standing for many tasks of the same job, each knowing its index
//! (Slurm's `sbatch --array`, as its manual documents it: `0-999`, `1,3,5-9`, `0-15:4` with a
//! step, `%50` for the most tasks of the array running at once). The grid gives the tasks ids of
//! their own: an array of id `A` takes the ids after it, task `k` (its `k`-th index, from 0)
//! having id `A + 1 + k`, shown as `A_index`.

use super::JobId;
use serde::{Deserialize, Serialize};
use std::fmt;

/// The indices of an array and its limit of tasks out at once.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct ArraySpec {
    /// Its indices, increasing, each once.
    indices: Vec<u32>,
    /// `%N`: at most this many of its tasks dispatched and not ended at once.
    pub limit: Option<u32>,
}

/// The largest index an array may have (Slurm's `MaxArraySize` is a configured bound too).
pub const MAX_INDEX: u32 = 4_000_000;

/// Why an array's text cannot be read.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("array `{text}`: {why}")]
pub struct ArrayError {
    /// The text.
    pub text: String,
    /// What is wrong.
    pub why: String,
}

impl ArraySpec {
    /// Reads Slurm's syntax: ranges and single indices joined by `,`, a range with an optional
    /// step (`0-15:4`), then an optional `%N`. At most `max_tasks` tasks.
    pub fn parse(text: &str, max_tasks: usize) -> Result<ArraySpec, ArrayError> {
        let err = |why: String| ArrayError {
            text: text.to_string(),
            why,
        };
        let t = text.trim();
        let (list, limit) = match t.split_once('%') {
            Some((l, n)) => {
                let n: u32 = n.trim().parse().ok().filter(|n| *n > 0).ok_or_else(|| {
                    err(format!(
                        "`%{n}`: the limit must be a whole number, at least 1"
                    ))
                })?;
                (l, Some(n))
            }
            None => (t, None),
        };
        let number = |s: &str| -> Result<u32, ArrayError> {
            let n: u32 = s
                .trim()
                .parse()
                .map_err(|_| err(format!("`{s}` is not an index")))?;
            if n > MAX_INDEX {
                return Err(err(format!("index {n} is above the largest, {MAX_INDEX}")));
            }
            Ok(n)
        };
        let mut indices = Vec::new();
        for part in list.split(',') {
            let part = part.trim();
            if part.is_empty() {
                return Err(err(
                    "an empty element (expected `0-9`, `3` or `0-9:2`)".into()
                ));
            }
            let (range, step) = match part.split_once(':') {
                Some((r, s)) => {
                    let s: u32 = s.trim().parse().ok().filter(|s| *s > 0).ok_or_else(|| {
                        err(format!(
                            "`{part}`: the step must be a whole number, at least 1"
                        ))
                    })?;
                    (r, s)
                }
                None => (part, 1),
            };
            let (first, last) = match range.split_once('-') {
                Some((a, b)) => (number(a)?, number(b)?),
                None if step == 1 => {
                    let n = number(range)?;
                    (n, n)
                }
                None => return Err(err(format!("`{part}`: a step needs a range"))),
            };
            if last < first {
                return Err(err(format!("`{part}`: the range ends before it begins")));
            }
            let count = (last - first) / step + 1;
            if indices.len() + count as usize > max_tasks {
                return Err(err(format!("more than {max_tasks} tasks")));
            }
            indices.extend((first..=last).step_by(step as usize));
        }
        indices.sort_unstable();
        indices.dedup();
        Ok(ArraySpec { indices, limit })
    }

    /// Its indices, increasing.
    pub fn indices(&self) -> &[u32] {
        &self.indices
    }

    /// How many tasks it has.
    pub fn len(&self) -> usize {
        self.indices.len()
    }

    /// Whether it has no task (never, once read).
    pub fn is_empty(&self) -> bool {
        self.indices.is_empty()
    }

    /// The index of task `k`.
    pub fn index(&self, k: usize) -> Option<u32> {
        self.indices.get(k).copied()
    }

    /// Which task has index `index`.
    pub fn position(&self, index: u32) -> Option<usize> {
        self.indices.binary_search(&index).ok()
    }

    /// The id of task `k` of array `array`.
    pub fn task_id(array: JobId, k: usize) -> JobId {
        JobId(array.0 + 1 + k as u64)
    }

    /// The last id the array takes (its last task's).
    pub fn last_id(&self, array: JobId) -> JobId {
        JobId(array.0 + self.indices.len() as u64)
    }
}

impl fmt::Display for ArraySpec {
    /// The compact form: runs of consecutive indices as ranges, then `%N`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        let mut i = 0;
        while i < self.indices.len() {
            let start = self.indices[i];
            let mut j = i;
            while j + 1 < self.indices.len() && self.indices[j + 1] == self.indices[j] + 1 {
                j += 1;
            }
            if !first {
                f.write_str(",")?;
            }
            first = false;
            match j > i {
                true => write!(f, "{start}-{}", self.indices[j])?,
                false => write!(f, "{start}")?,
            }
            i = j + 1;
        }
        if let Some(n) = self.limit {
            write!(f, "%{n}")?;
        }
        Ok(())
    }
}

impl std::str::FromStr for ArraySpec {
    type Err = ArrayError;
    /// Reads an array of any size up to one task per index ([`MAX_INDEX`]); a configured bound
    /// is [`ArraySpec::parse`]'s.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ArraySpec::parse(s, MAX_INDEX as usize + 1)
    }
}

impl TryFrom<String> for ArraySpec {
    type Error = ArrayError;
    fn try_from(s: String) -> Result<Self, Self::Error> {
        s.parse()
    }
}

impl From<ArraySpec> for String {
    fn from(a: ArraySpec) -> String {
        a.to_string()
    }
}

/// A task of an array: the array's id and the task's index.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Task {
    /// The array.
    pub array: JobId,
    /// Its index (`GRIDSCHED_ARRAY_INDEX`).
    pub index: u32,
}

impl fmt::Display for Task {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}_{}", self.array, self.index)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_slurm_s_forms_and_prints_them_compactly() {
        let a = ArraySpec::parse("0-3,7,10-20:5%2", 100).unwrap();
        assert_eq!(a.indices(), [0, 1, 2, 3, 7, 10, 15, 20]);
        assert_eq!(a.limit, Some(2));
        assert_eq!(a.to_string(), "0-3,7,10,15,20%2");
        assert_eq!(a.position(15), Some(6));
        assert_eq!(a.position(4), None);
        assert_eq!(ArraySpec::task_id(JobId(12), 6), JobId(19));
        assert_eq!(a.last_id(JobId(12)), JobId(20));
        let b = ArraySpec::parse(" 5,1-2,2 ", 10).unwrap();
        assert_eq!(
            (b.indices(), b.to_string().as_str()),
            (&[1, 2, 5][..], "1-2,5")
        );
        let json = serde_json::to_string(&a).unwrap();
        assert_eq!(json, "\"0-3,7,10,15,20%2\"");
        assert_eq!(serde_json::from_str::<ArraySpec>(&json).unwrap(), a);
    }

    #[test]
    fn bad_text_is_refused_saying_what_is_wrong() {
        let why = |t: &str| ArraySpec::parse(t, 1000).unwrap_err().why;
        assert_eq!(
            why("0-9%0"),
            "`%0`: the limit must be a whole number, at least 1"
        );
        assert_eq!(why("5-1"), "`5-1`: the range ends before it begins");
        assert_eq!(
            why("1,,2"),
            "an empty element (expected `0-9`, `3` or `0-9:2`)"
        );
        assert_eq!(why("x"), "`x` is not an index");
        assert_eq!(why("-3"), "`` is not an index");
        assert_eq!(
            why("0-9:0"),
            "`0-9:0`: the step must be a whole number, at least 1"
        );
        assert_eq!(why("4:2"), "`4:2`: a step needs a range");
        assert_eq!(why("0-1000"), "more than 1000 tasks");
        assert_eq!(
            why("4000001"),
            "index 4000001 is above the largest, 4000000"
        );
    }
}
