//! The grid's history of finished jobs: how long they stay in the meta-scheduler's memory
//! (`[retention]`), and the filter of `list` that selects them in memory and in the store alike.
//!
//! The meta-scheduler keeps in memory the jobs not finished and, for a while, the finished ones;
//! after their retention they live only in the durable store, where `get`, `list` and `explain`
//! still find them (the store indexes finished jobs by user, site, cluster and state). So memory
//! follows the live work, not the history (the Meta-Scheduler of spec
//! `two-level-grid-scheduler.md` D3 keeps only what decisions need: the Load / Ordering arrays
//! and the classifier's window).

use gridsched_proto::v1::{self, JobState};
use serde::Deserialize;

/// The `[retention]` section.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RetentionConfig {
    /// A finished job leaves memory this long (seconds) after it finished.
    pub finished_s: u64,
    /// At most this many finished jobs stay in memory (the oldest leave first).
    pub finished_max: usize,
    /// At most this many job events are retained for `Watch { from_sequence }`; an event also
    /// leaves once it is older than `finished_s`.
    pub events: usize,
}

impl Default for RetentionConfig {
    fn default() -> Self {
        RetentionConfig {
            finished_s: 3_600,
            finished_max: 5_000,
            events: 50_000,
        }
    }
}

/// The filter of a `list`: states, user, site (a split job's fragments' sites count) and
/// cluster; an absent part matches every job.
#[derive(Debug, Clone, Copy)]
pub struct Filter<'a> {
    /// Only jobs in one of these states (`v1::JobState` values); empty = any.
    pub states: &'a [i32],
    /// Only this user's jobs.
    pub user: Option<&'a str>,
    /// Only jobs dispatched to this site.
    pub site: Option<&'a str>,
    /// Only jobs dispatched to this cluster.
    pub cluster: Option<&'a str>,
    /// Also the tasks of arrays.
    pub tasks: bool,
}

impl Filter<'_> {
    /// Whether `job` passes.
    pub fn matches(&self, job: &v1::Job) -> bool {
        (self.states.is_empty() || self.states.contains(&job.state))
            && self
                .user
                .is_none_or(|u| job.spec.as_ref().is_some_and(|s| s.user == u))
            && self.site.is_none_or(|s| {
                job.site.as_deref() == Some(s) || job.fragments.iter().any(|f| f.site == s)
            })
            && self
                .cluster
                .is_none_or(|c| job.cluster.as_deref() == Some(c))
            && (self.tasks || job.array_id.is_none())
    }

    /// The finished states the filter lets through, in `v1::JobState` order.
    pub fn finished_states(&self) -> Vec<i32> {
        FINISHED
            .iter()
            .map(|s| *s as i32)
            .filter(|s| self.states.is_empty() || self.states.contains(s))
            .collect()
    }
}

/// The states of a finished job.
pub const FINISHED: [JobState; 5] = [
    JobState::Completed,
    JobState::Failed,
    JobState::Cancelled,
    JobState::Killed,
    JobState::Lost,
];

/// One page of a list, merged from the jobs in memory and the finished jobs of the store, both
/// by increasing id and both past the page token: the first `limit` of their union (a job in
/// both counts once; memory's copy is shown). When the store stopped early (`store_to`: it looked
/// at every id up to there, but not beyond), the page ends there too. Returns the jobs and the
/// next page token (empty: the last page).
pub fn merge_page(
    memory: Vec<v1::Job>,
    store: Vec<v1::Job>,
    store_to: Option<u64>,
    limit: usize,
) -> (Vec<v1::Job>, String) {
    let mut all = memory;
    if let Some(to) = store_to {
        all.retain(|j| j.id <= to);
    }
    let have: std::collections::HashSet<u64> = all.iter().map(|j| j.id).collect();
    all.extend(store.into_iter().filter(|j| !have.contains(&j.id)));
    all.sort_unstable_by_key(|j| j.id);
    if all.len() > limit {
        all.truncate(limit);
        let token = all.last().map_or(String::new(), |j| j.id.to_string());
        return (all, token);
    }
    let token = store_to.map_or(String::new(), |to| to.to_string());
    (all, token)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(id: u64, state: JobState) -> v1::Job {
        v1::Job {
            id,
            state: state.into(),
            ..Default::default()
        }
    }

    /// The union by id, a job in both once, cut at the limit with the last id as the token;
    /// a store that stopped early ends the page where it stopped, token included.
    #[test]
    fn pages_merge_memory_and_store_by_id() {
        let mem = vec![job(2, JobState::Running), job(5, JobState::Completed)];
        let sto = vec![
            job(1, JobState::Completed),
            job(5, JobState::Completed),
            job(7, JobState::Failed),
        ];
        let ids = |p: &[v1::Job]| p.iter().map(|j| j.id).collect::<Vec<_>>();
        let (p, t) = merge_page(mem.clone(), sto.clone(), None, 10);
        assert_eq!((ids(&p), t.as_str()), (vec![1, 2, 5, 7], ""));
        let (p, t) = merge_page(mem.clone(), sto.clone(), None, 3);
        assert_eq!((ids(&p), t.as_str()), (vec![1, 2, 5], "5"));
        let (p, t) = merge_page(mem, sto[..1].to_vec(), Some(4), 3);
        assert_eq!((ids(&p), t.as_str()), (vec![1, 2], "4"));
    }

    #[test]
    fn the_filter_selects_by_every_part() {
        let mut j = job(1, JobState::Completed);
        j.spec = Some(v1::JobSpec {
            user: "ann".into(),
            ..Default::default()
        });
        j.fragments = vec![v1::Fragment {
            site: "beta".into(),
            ..Default::default()
        }];
        let none = Filter {
            states: &[],
            user: None,
            site: None,
            cluster: None,
            tasks: true,
        };
        assert!(none.matches(&j));
        assert!(
            Filter {
                site: Some("beta"),
                user: Some("ann"),
                ..none
            }
            .matches(&j)
        );
        assert!(
            !Filter {
                user: Some("bob"),
                ..none
            }
            .matches(&j)
        );
        assert!(
            !Filter {
                cluster: Some("beta"),
                ..none
            }
            .matches(&j)
        );
        let failed = [JobState::Failed as i32, JobState::Running as i32];
        assert!(
            !Filter {
                states: &failed,
                ..none
            }
            .matches(&j)
        );
        assert_eq!(
            Filter {
                states: &failed,
                ..none
            }
            .finished_states(),
            vec![JobState::Failed as i32]
        );
        assert_eq!(none.finished_states().len(), 5);
    }
}
