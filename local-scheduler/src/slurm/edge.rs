//! The Slurm-backed site in the service shell: [`SlurmShell`] hands the gRPC messages and the
//! tick to the [`SlurmSite`] (through the local scheduler's clock edge, [`crate::edge`]) and sends
//! the calls it decides to two workers, which make them through slurmrestd and post each answer
//! back as a message: one for submissions, releases and cancellations, in the order they were
//! decided, and one for the reads of the cluster, which take long when Slurm retains many jobs
//! and must not hold a release back (the site numbers its reads to tell what a read that crossed
//! a submission can show).

use super::rest::Rest;
use super::{Call, Done, SlurmSite, Snapshot};
use crate::driver::{Msg, Now};
use crate::edge::{EnqueueMsg, Shell};
use std::sync::Arc;
use tokio::sync::mpsc;

/// The site and the way to its worker.
#[derive(Debug)]
pub struct SlurmShell {
    site: SlurmSite,
    commands: mpsc::UnboundedSender<Call>,
    reads: mpsc::UnboundedSender<Call>,
}

impl SlurmShell {
    /// `site`, whose calls go to a worker started here that posts Slurm's answers on `back`.
    pub fn start(site: SlurmSite, rest: Rest, back: mpsc::Sender<Msg>) -> SlurmShell {
        let rest = Arc::new(rest);
        let (commands, rx) = mpsc::unbounded_channel();
        tokio::spawn(worker(rest.clone(), rx, back.clone()));
        let (reads, rx) = mpsc::unbounded_channel();
        tokio::spawn(worker(rest, rx, back));
        SlurmShell {
            site,
            commands,
            reads,
        }
    }
}

impl Shell for SlurmShell {
    fn enqueue_group(&mut self, group: Vec<EnqueueMsg>, now: Now) {
        self.site.enqueue_group(group, now);
    }
    fn handle(&mut self, m: Msg, now: Now) {
        self.site.handle(m, now);
    }
    fn tick(&mut self, now: Now) {
        self.site.tick(now);
    }
    fn after(&mut self) {
        for c in self.site.take_calls() {
            let lane = match c {
                Call::Poll { .. } => &self.reads,
                _ => &self.commands,
            };
            let _ = lane.send(c);
        }
    }
}

/// Makes the calls of one lane in order, posting each answer back.
async fn worker(
    rest: Arc<Rest>,
    mut calls: mpsc::UnboundedReceiver<Call>,
    back: mpsc::Sender<Msg>,
) {
    while let Some(c) = calls.recv().await {
        let done = match c {
            Call::Submit {
                job,
                run,
                submission,
            } => {
                let result = match make_dir(&submission.dir).await {
                    Ok(()) => rest.submit(&submission.body).await,
                    Err(e) => Err(super::rest::CallError::Refused(format!(
                        "its directory {}: {e}",
                        submission.dir.display()
                    ))),
                };
                Done::Submitted { job, run, result }
            }
            Call::Release { job, slurm } => Done::Released {
                job,
                result: rest.release(slurm).await,
            },
            Call::Cancel { slurm } => Done::Cancelled {
                slurm,
                result: rest.cancel(slurm).await,
            },
            Call::Poll { since } => Done::Polled(poll(&rest, since).await),
        };
        if back.send(Msg::Slurm(done)).await.is_err() {
            return;
        }
    }
}

/// The job's directory, open to the job's user (who may not be this process's).
async fn make_dir(dir: &std::path::Path) -> std::io::Result<()> {
    tokio::fs::create_dir_all(dir).await?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        tokio::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o777)).await?;
    }
    Ok(())
}

async fn poll(rest: &Rest, since: Option<i64>) -> Result<Snapshot, super::rest::CallError> {
    let jobs = rest.jobs(since).await?;
    let nodes = rest.nodes().await?;
    let licences = rest.licences().await?;
    Ok(Snapshot {
        jobs,
        nodes,
        licences,
    })
}
