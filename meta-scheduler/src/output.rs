//! A job's standard output and error, fetched through the grid from the site that runs or ran
//! it (`MetaScheduler.Output`, `gridctl output`): the site's local scheduler holds what its agents
//! handed over (or what Slurm wrote), and this call streams it on to the user, following it while
//! the job runs. For a job split over sites each fragment's site holds its own output, asked for
//! by the fragment's rank. A job not yet started is waited for when following.

use crate::MetaService;
use gridsched_proto::v1;
use std::pin::Pin;
use std::time::Duration;
use tokio_stream::{Stream, StreamExt};
use tonic::Status;

/// The chunks streamed to the caller.
pub type OutputStream = Pin<Box<dyn Stream<Item = Result<v1::OutputChunk, Status>> + Send>>;

/// How often a followed job that is not at a site yet is looked at again.
const WAIT: Duration = Duration::from_millis(500);

/// Where a job's output is, as far as the grid knows now.
enum Place {
    /// At site `usize` (its index), where the job started.
    Site(usize),
    /// Nowhere yet: the job has not started.
    NotYet,
    /// Nowhere, for good: the job ended without starting.
    Never,
}

/// An emulated job (`emulate_runtime_s`): it runs nothing, so it writes nothing.
fn emulated(job: &v1::Job) -> bool {
    job.spec
        .as_ref()
        .is_some_and(|s| s.emulate_runtime_s.is_some())
}

/// Where the output of `job` (fragment `fragment` of a split job) is; an error for a job that
/// has none of its own.
fn place(svc: &MetaService, job: &v1::Job, fragment: Option<u32>) -> Result<Place, Status> {
    let id = job.id;
    if let Some(a) = &job.array {
        return Err(Status::invalid_argument(format!(
            "job {id} is an array of {} tasks: ask for a task's output (`gridctl list --array {id}` lists them)",
            a.tasks
        )));
    }
    if let Some(w) = &job.workflow {
        let names: Vec<&str> = w.nodes.iter().map(|n| n.name.as_str()).take(5).collect();
        return Err(Status::invalid_argument(format!(
            "job {id} is a workflow: ask for a node's run (`gridctl workflow status {id}` names them; nodes {}…)",
            names.join(", ")
        )));
    }
    let (site, started) = if job.fragments.is_empty() {
        if let Some(k) = fragment.filter(|&k| k > 0) {
            return Err(Status::invalid_argument(format!(
                "field `fragment`: job {id} is not split over sites (no fragment {k})"
            )));
        }
        (job.site.clone(), job.start_time.is_some())
    } else {
        let k = fragment.unwrap_or(0) as usize;
        let f = job.fragments.get(k).ok_or_else(|| {
            Status::invalid_argument(format!(
                "field `fragment`: job {id} has {} fragments (0 to {})",
                job.fragments.len(),
                job.fragments.len() - 1
            ))
        })?;
        (Some(f.site.clone()), f.start_time.is_some())
    };
    // Only a job that started has output at its site (one merely dispatched may not even have
    // reached it yet).
    Ok(match site {
        Some(name) if started => Place::Site(svc.site_index(&name).ok_or_else(|| {
            Status::internal(format!("job {id} is at site `{name}`, unknown here"))
        })?),
        _ if job.state().is_terminal() => Place::Never,
        _ => Place::NotYet,
    })
}

/// The `Output` call of `req` by `caller`.
pub async fn output(
    svc: &MetaService,
    caller: Option<gridsched_security::Caller>,
    req: v1::OutputRequest,
) -> Result<OutputStream, Status> {
    let id = req.job_id;
    if !gridsched_proto::output::is_plain_relative(&req.file) {
        return Err(Status::invalid_argument(format!(
            "field `file`: `{}` is not a path relative to the job's working directory",
            req.file
        )));
    }
    let (job, _, _) = svc.visible_job(id, caller.as_ref())?;
    let found = place(svc, &job, req.fragment)?;
    if emulated(&job) {
        return Ok(Box::pin(tokio_stream::empty()));
    }
    let at = match found {
        Place::Site(i) => i,
        Place::Never => return Ok(Box::pin(tokio_stream::empty())),
        Place::NotYet if !req.follow => {
            return Err(Status::failed_precondition(format!(
                "job {id} has not started, so it has no output yet: `--follow` waits for it"
            )));
        }
        Place::NotYet => {
            // Wait, streaming nothing, until it reaches a site or ends before.
            let svc = svc.clone();
            let (tx, rx) = tokio::sync::mpsc::channel(16);
            tokio::spawn(async move {
                loop {
                    tokio::time::sleep(WAIT).await;
                    let found = svc
                        .visible_job(id, caller.as_ref())
                        .and_then(|(job, _, _)| place(&svc, &job, req.fragment));
                    match found {
                        Ok(Place::NotYet) => {
                            if tx.is_closed() {
                                return;
                            }
                        }
                        Ok(Place::Never) => return,
                        Ok(Place::Site(i)) => {
                            match from_site(&svc, i, req).await {
                                Ok(mut s) => {
                                    while let Some(c) = s.next().await {
                                        if tx.send(c).await.is_err() {
                                            return;
                                        }
                                    }
                                }
                                Err(e) => {
                                    let _ = tx.send(Err(e)).await;
                                }
                            }
                            return;
                        }
                        Err(e) => {
                            let _ = tx.send(Err(e)).await;
                            return;
                        }
                    }
                }
            });
            return Ok(Box::pin(tokio_stream::wrappers::ReceiverStream::new(rx)));
        }
    };
    from_site(svc, at, req).await
}

/// The output stream of site `i` for `req`, its errors naming the site.
async fn from_site(
    svc: &MetaService,
    i: usize,
    req: v1::OutputRequest,
) -> Result<OutputStream, Status> {
    let name = svc.site_name(i);
    let id = req.job_id;
    let mut client = svc.client(i)?;
    let local = v1::OutputRequest {
        fragment: None,
        ..req
    };
    let unreachable = |e: Status| match e.code() {
        tonic::Code::NotFound => Status::not_found(format!("site {name}: {}", e.message())),
        tonic::Code::InvalidArgument => Status::invalid_argument(e.message()),
        tonic::Code::Unimplemented => {
            Status::failed_precondition(format!("site {name}: {}", e.message()))
        }
        _ => Status::unavailable(format!(
            "site {name} cannot be reached for job {id}'s output: {}",
            e.message()
        )),
    };
    let stream = svc.call(client.output(local)).await.map_err(&unreachable)?;
    Ok(Box::pin(stream.map(move |c| {
        c.map_err(|e| {
            Status::unavailable(format!(
                "site {name}: the output stream broke: {}",
                e.message()
            ))
        })
    })))
}

/// The `ListOutputFiles` call of `req` by `caller`: the files the job's site holds.
pub async fn list_files(
    svc: &MetaService,
    caller: Option<gridsched_security::Caller>,
    req: v1::ListOutputFilesRequest,
) -> Result<v1::ListOutputFilesResponse, Status> {
    let id = req.job_id;
    let (job, _, _) = svc.visible_job(id, caller.as_ref())?;
    let i = match place(svc, &job, req.fragment)? {
        Place::Site(_) if emulated(&job) => return Ok(v1::ListOutputFilesResponse::default()),
        Place::Site(i) => i,
        Place::NotYet | Place::Never => return Ok(v1::ListOutputFilesResponse::default()),
    };
    let name = svc.site_name(i);
    let mut client = svc.client(i)?;
    let local = v1::ListOutputFilesRequest {
        job_id: id,
        fragment: None,
    };
    svc.call(client.list_output_files(local))
        .await
        .map_err(|e| match e.code() {
            tonic::Code::NotFound => Status::not_found(format!("site {name}: {}", e.message())),
            _ => Status::unavailable(format!(
                "site {name} cannot be reached for job {id}'s files: {}",
                e.message()
            )),
        })
}
