//! The table of dependency cases every driver of the grid runner is tested against (the runner
//! itself, the simulator, the live grid): each Slurm type, all and any, a job cancelled before it
//! ran, a failed dependency and a chain of them, a requeued predecessor, singletons, an unknown
//! job. A case's predecessors are jobs 1, 2, … submitted first; then the dependent job; then the
//! predecessors' steps, one at a time. The expectation says after which step the dependent is
//! dispatched, or ends never started (with words its reason holds), or that it is refused at
//! submission.

/// What happens to a predecessor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// It starts running.
    Start,
    /// It completes (exit 0).
    Complete,
    /// It fails (a non-zero exit).
    Fail,
    /// The user cancels it.
    Cancel,
    /// Its run fails and the grid runs it again (a split job whose fragment failed, with
    /// requeues left): it is waiting again.
    FailRequeued,
}

/// Whether the predecessors are singleton jobs of the dependent's name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Singleton {
    /// They are not.
    No,
    /// They are, of the same user.
    SameUser,
    /// They are, of another user.
    OtherUser,
}

/// What becomes of the dependent job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expect {
    /// Dispatched right after this step (index into the steps; `None`: at its submission).
    Runs(Option<usize>),
    /// Ends never started right after this step, its reason holding these words.
    Never(Option<usize>, &'static str),
    /// Refused at submission, the reason holding these words.
    Refused(&'static str),
}

/// One case.
#[derive(Clone, Copy, Debug)]
pub struct Case {
    /// What it shows.
    pub name: &'static str,
    /// Predecessors: jobs 1..=jobs.
    pub jobs: u64,
    /// Whether they are singletons of the dependent's name.
    pub singleton: Singleton,
    /// Whether a predecessor is split over two sites (so that it can be requeued).
    pub split: bool,
    /// The dependent's dependency (Slurm's syntax; `singleton` takes the name `n`).
    pub after: &'static str,
    /// The predecessors' steps, in order: (job, step).
    pub steps: &'static [(u64, Step)],
    /// What becomes of the dependent.
    pub expect: Expect,
}

use Expect::*;
use Step::*;

const fn case(
    name: &'static str,
    jobs: u64,
    after: &'static str,
    steps: &'static [(u64, Step)],
    expect: Expect,
) -> Case {
    Case {
        name,
        jobs,
        singleton: Singleton::No,
        split: false,
        after,
        steps,
        expect,
    }
}

/// The cases.
pub const CASES: &[Case] = &[
    case(
        "afterok: the predecessor completed",
        1,
        "afterok:1",
        &[(1, Start), (1, Complete)],
        Runs(Some(1)),
    ),
    case(
        "afterok: the predecessor failed",
        1,
        "afterok:1",
        &[(1, Start), (1, Fail)],
        Never(Some(1), "job 1 failed (afterok)"),
    ),
    case(
        "afternotok: the predecessor failed",
        1,
        "afternotok:1",
        &[(1, Start), (1, Fail)],
        Runs(Some(1)),
    ),
    case(
        "afternotok: the predecessor completed",
        1,
        "afternotok:1",
        &[(1, Start), (1, Complete)],
        Never(Some(1), "job 1 completed (afternotok)"),
    ),
    case(
        "afternotok: the predecessor was cancelled while running",
        1,
        "afternotok:1",
        &[(1, Start), (1, Cancel)],
        Runs(Some(1)),
    ),
    case(
        "afterany: the predecessor completed",
        1,
        "afterany:1",
        &[(1, Start), (1, Complete)],
        Runs(Some(1)),
    ),
    case(
        "afterany: the predecessor failed",
        1,
        "afterany:1",
        &[(1, Start), (1, Fail)],
        Runs(Some(1)),
    ),
    case(
        "afterany: the predecessor was cancelled before it ran",
        1,
        "afterany:1",
        &[(1, Cancel)],
        Never(Some(0), "job 1 cancelled before it ran (afterany)"),
    ),
    case(
        "afternotok: the predecessor was cancelled before it ran",
        1,
        "afternotok:1",
        &[(1, Cancel)],
        Never(Some(0), "job 1 cancelled before it ran (afternotok)"),
    ),
    case(
        "after: the predecessor started",
        1,
        "after:1",
        &[(1, Start), (1, Complete)],
        Runs(Some(0)),
    ),
    case(
        "after: the predecessor was cancelled before it ran",
        1,
        "after:1",
        &[(1, Cancel)],
        Runs(Some(0)),
    ),
    case(
        "and: both completed",
        2,
        "afterok:1,afterok:2",
        &[(1, Start), (2, Start), (1, Complete), (2, Complete)],
        Runs(Some(3)),
    ),
    case(
        "and: one of them failed",
        2,
        "afterok:1,afterok:2",
        &[(1, Start), (2, Start), (1, Fail), (2, Complete)],
        Never(Some(2), "job 1 failed (afterok)"),
    ),
    case(
        "or: the first failed, the second completed",
        2,
        "afterok:1?afterok:2",
        &[(1, Start), (2, Start), (1, Fail), (2, Complete)],
        Runs(Some(3)),
    ),
    case(
        "or: both failed",
        2,
        "afterok:1?afterok:2",
        &[(1, Start), (2, Start), (1, Fail), (2, Fail)],
        Never(Some(3), "job 1 failed (afterok), job 2 failed (afterok)"),
    ),
    case(
        "mixed types: afterok and afternotok",
        2,
        "afterok:1,afternotok:2",
        &[(1, Start), (2, Start), (1, Complete), (2, Fail)],
        Runs(Some(3)),
    ),
    case(
        "a job that is not in the grid",
        0,
        "afterok:7",
        &[],
        Refused("job 7 is not known to the grid"),
    ),
    Case {
        split: true,
        ..case(
            "afternotok: a requeued predecessor is waited for until its last run",
            1,
            "afternotok:1",
            &[(1, Start), (1, FailRequeued), (1, Start), (1, Fail)],
            Runs(Some(3)),
        )
    },
    Case {
        split: true,
        ..case(
            "afterok: a requeued predecessor that completes on its second run",
            1,
            "afterok:1",
            &[(1, Start), (1, FailRequeued), (1, Start), (1, Complete)],
            Runs(Some(3)),
        )
    },
    Case {
        singleton: Singleton::SameUser,
        ..case(
            "singleton: the earlier job of the name and user ended",
            1,
            "singleton",
            &[(1, Start), (1, Complete)],
            Runs(Some(1)),
        )
    },
    Case {
        singleton: Singleton::SameUser,
        ..case(
            "singleton: two earlier jobs of the name and user",
            2,
            "singleton",
            &[(1, Start), (1, Fail), (2, Start), (2, Complete)],
            Runs(Some(3)),
        )
    },
    Case {
        singleton: Singleton::OtherUser,
        ..case(
            "singleton: the earlier job of the name is another user's",
            1,
            "singleton",
            &[(1, Start), (1, Complete)],
            Runs(None),
        )
    },
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dispatch::DispatchKind;
    use crate::grid::tests::{runner, splitting};
    use crate::grid::{Effect, GridRunner, Input};
    use crate::model::{Dependency, Job, JobId, Outcome, Time, UserId};
    use std::collections::BTreeMap;

    /// What the dependent did, and after which step.
    #[derive(Debug, PartialEq)]
    enum Seen {
        Placed,
        Unmet(String),
        Refused(String),
    }

    struct Drive {
        r: GridRunner,
        now: Time,
        /// Where each job is: its sites.
        sites: BTreeMap<JobId, Vec<usize>>,
        dependent: Option<Seen>,
    }

    impl Drive {
        /// Feeds `input`, answering holds and commits at once, then a release pass of the
        /// meta-level queue while it holds jobs.
        fn feed(&mut self, input: Input) {
            self.feed_one(input);
            if self.r.held() > 0 {
                self.feed_one(Input::Release);
            }
        }

        fn feed_one(&mut self, input: Input) {
            let mut queue = vec![input];
            while let Some(i) = queue.pop() {
                let mut out = Vec::new();
                self.r.on(self.now, i, &mut out).unwrap();
                for e in out {
                    match e {
                        Effect::Hold {
                            job,
                            fragment,
                            site,
                            reservation,
                            from,
                            ..
                        } => queue.insert(
                            0,
                            Input::Held {
                                job,
                                fragment,
                                site,
                                reservation,
                                answer: Ok(from),
                            },
                        ),
                        Effect::Commit { job, fragment, .. } => queue.insert(
                            0,
                            Input::Committed {
                                job,
                                fragment,
                                answer: Ok(()),
                            },
                        ),
                        Effect::Place { job, site, .. } => {
                            self.sites.insert(job, vec![site]);
                            self.seen(job, Seen::Placed);
                        }
                        Effect::Send { job, fragments, .. } => {
                            self.sites
                                .insert(job, fragments.iter().map(|f| f.site).collect());
                            self.seen(job, Seen::Placed);
                        }
                        Effect::Unmet { job, why } => self.seen(job, Seen::Unmet(why)),
                        Effect::Refuse { job, why, .. } => self.seen(job, Seen::Refused(why)),
                        _ => {}
                    }
                }
            }
        }

        fn seen(&mut self, job: JobId, s: Seen) {
            if job == JobId(100) && self.dependent.is_none() {
                self.dependent = Some(s);
            }
        }

        fn step(&mut self, job: JobId, step: Step) {
            self.now += 10;
            let sites = self.sites.get(&job).cloned().unwrap_or_default();
            let split = sites.len() > 1;
            match (step, split) {
                (Step::Start, false) => self.feed(Input::Claimed {
                    job,
                    site: sites[0],
                }),
                // A split job's fragments are started by the sending.
                (Step::Start, true) => {}
                (Step::Complete | Step::Fail, false) => {
                    let outcome = match step {
                        Step::Complete => Outcome::Completed,
                        _ => Outcome::Failed,
                    };
                    self.feed(Input::Ended {
                        job,
                        site: sites[0],
                        outcome,
                        exit: None,
                    });
                }
                (Step::Complete | Step::Fail | Step::FailRequeued, true) => {
                    let ok = step == Step::Complete;
                    for (k, &site) in sites.iter().enumerate() {
                        let last = k + 1 == sites.len();
                        self.feed(Input::FragmentEnded {
                            job,
                            site,
                            ok,
                            again: last && step == Step::FailRequeued,
                        });
                    }
                    if step == Step::FailRequeued {
                        self.sites.remove(&job);
                        let back = Input::Requeue {
                            job: wide(job.0),
                            priority: 1,
                        };
                        self.feed(back);
                    }
                }
                (Step::Cancel, _) => self.feed(Input::Cancel { job }),
                (Step::FailRequeued, false) => panic!("only a split job is requeued"),
            }
        }
    }

    fn wide(id: u64) -> Job {
        Job::new(id, 0, 12, 100, 100)
    }

    fn run(c: &Case) -> (Option<usize>, Option<Seen>) {
        let mut d = Drive {
            r: runner(DispatchKind::LoadOrdering, &[8, 8], splitting()),
            now: 0,
            sites: BTreeMap::new(),
            dependent: None,
        };
        for id in 1..=c.jobs {
            let mut j = if c.split && id == 1 {
                wide(id)
            } else {
                Job::new(id, 0, 1, 100, 100)
            };
            if c.singleton != Singleton::No {
                j.after = Some(Box::new(Dependency::parse("singleton", Some("n")).unwrap()));
                if c.singleton == Singleton::OtherUser {
                    j.user = UserId(1);
                }
            }
            d.feed(Input::Submit {
                job: j,
                priority: None,
            });
        }
        let mut dep = Job::new(100, 0, 1, 100, 100);
        dep.after = Some(Box::new(Dependency::parse(c.after, Some("n")).unwrap()));
        d.feed(Input::Submit {
            job: dep,
            priority: None,
        });
        if d.dependent.is_some() {
            return (None, d.dependent);
        }
        for (k, &(job, step)) in c.steps.iter().enumerate() {
            d.step(JobId(job), step);
            if d.dependent.is_some() {
                return (Some(k), d.dependent);
            }
        }
        (None, None)
    }

    #[test]
    fn every_case_of_the_table_holds_in_the_grid_runner() {
        for c in CASES {
            let got = run(c);
            match c.expect {
                Expect::Runs(k) => assert_eq!(got, (k, Some(Seen::Placed)), "{}", c.name),
                Expect::Never(k, words) => match &got {
                    (at, Some(Seen::Unmet(why))) if *at == k && why.contains(words) => {}
                    other => panic!("{}: {other:?}, expected never after {k:?}", c.name),
                },
                Expect::Refused(words) => match &got {
                    (None, Some(Seen::Refused(why))) if why.contains(words) => {}
                    other => panic!("{}: {other:?}, expected refused", c.name),
                },
            }
        }
    }
}
