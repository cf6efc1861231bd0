//! The service's doors for workflows (HTCondor DAGMan's semantics, decided by the grid runner):
//! a workflow accepted whole in one durable commit — each node's job checked as a job of its own
//! would be, the shape checked by the core, a resume starting from the rescue of the workflow it
//! resumes — its cancellation, and the cancellation of the nodes its runner stops.

use crate::service::MetaService;
use crate::state::{Batch, State};
use gridsched_core::model::{JobId, Workflow, WorkflowText};
use gridsched_proto::v1::{self, JobState, WorkflowNodeState};
use tonic::Status;

/// The most ids a workflow may take (its nodes, one per run each may have, with array nodes'
/// tasks).
pub const MAX_IDS: u64 = 1_000_000;

fn refused(code: tonic::Code, field: &str, message: String) -> v1::SubmitError {
    v1::SubmitError {
        code: code as i32,
        field: Some(field.into()),
        message: format!("field `{field}`: {message}"),
    }
}

impl MetaService {
    /// Accepts workflow `spec` (checked at the door) as a new job id at `t`, or says why not.
    pub(crate) fn accept_workflow(
        &self,
        st: &mut State,
        b: &mut Batch,
        reader: &mut Option<crate::store::Reader>,
        mut spec: v1::JobSpec,
        t: i64,
    ) -> Result<Result<u64, v1::SubmitError>, Status> {
        let invalid = tonic::Code::InvalidArgument;
        let user = spec.user.clone();
        let wf = spec.workflow.as_mut().expect("a workflow");
        if let Some(w0) = wf.resume {
            let found = match st.jobs.get(&w0) {
                Some(j) => Some(j.clone()),
                None => self.reader(reader)?.job(w0).map_err(Status::from)?,
            };
            let found = found.filter(|j| {
                j.spec
                    .as_ref()
                    .is_some_and(|s| s.workflow.is_some() && s.user == user)
            });
            let Some(old) = found else {
                let why = format!("workflow {w0} does not exist (or is another user's)");
                return Ok(Err(refused(tonic::Code::NotFound, "workflow.resume", why)));
            };
            let precondition = |why: String| {
                Ok(Err(refused(
                    tonic::Code::FailedPrecondition,
                    "workflow.resume",
                    why,
                )))
            };
            match old.state() {
                JobState::Completed => {
                    return precondition(format!("workflow {w0} completed: nothing to resume"));
                }
                s if !s.is_terminal() => {
                    return precondition(format!("workflow {w0} is still running"));
                }
                _ => {}
            }
            let rescue = old.workflow.unwrap_or_default();
            for n in rescue.nodes.iter().filter(|n| {
                matches!(
                    n.state(),
                    WorkflowNodeState::Completed | WorkflowNodeState::DoneBefore
                )
            }) {
                let Some(node) = wf.nodes.iter_mut().find(|m| m.name == n.name) else {
                    let why = format!(
                        "node `{}` completed in workflow {w0} and is not a node of this one",
                        n.name
                    );
                    return Ok(Err(refused(invalid, "workflow.resume", why)));
                };
                node.done = true;
            }
        }
        let id = st.last_id + 1;
        let mut nodes = Vec::with_capacity(wf.nodes.len());
        for (i, n) in wf.nodes.iter_mut().enumerate() {
            let job = n.job.get_or_insert_default();
            job.user.clone_from(&user);
            let model = st.decider.job(job, id, t).map_err(|e| {
                let field = format!("workflow.nodes[{i}].job.{}", e.field());
                refused(invalid, &field, e.reason().to_string())
            });
            let model = match model {
                Ok(m) => m,
                Err(e) => return Ok(Err(e)),
            };
            nodes.push(crate::state::workflows::model_node(n, model));
        }
        let text = WorkflowText {
            name: spec.name.clone().unwrap_or_default(),
            nodes,
        };
        let model = match Workflow::new(text) {
            Ok(w) => w,
            Err(e) => return Ok(Err(refused(invalid, "workflow.nodes", e.to_string()))),
        };
        if model.span() > MAX_IDS {
            let why = format!(
                "it takes {} job ids (one per node run and array task), more than {MAX_IDS}",
                model.span()
            );
            return Ok(Err(refused(invalid, "workflow.nodes", why)));
        }
        // Each node admitted as a job of its own would be (the runner admits the whole again).
        let wf = spec.workflow.as_ref().expect("a workflow");
        for (k, n) in wf.nodes.iter().enumerate().filter(|(_, n)| !n.done) {
            let node_id = model.node_id(JobId(id), k, 1).0;
            if let Err(mut e) = st.decider.admit(n.job.as_ref().expect("set"), node_id, t) {
                let field = format!("workflow.nodes[{k}].job.{}", e.field.unwrap_or_default());
                let why = (e.message.split_once("`: "))
                    .filter(|(f, _)| f.starts_with("field `"))
                    .map_or(e.message.as_str(), |(_, why)| why);
                e.message = format!("field `{field}`: node `{}`: {why}", n.name);
                e.field = Some(field);
                return Ok(Err(e));
            }
        }
        let last = model.last_id(JobId(id)).0;
        let job = v1::Job {
            id,
            state: JobState::Accepted.into(),
            submit_time: Some(t),
            spec: Some(spec),
            ..Default::default()
        };
        if let Err(e) = st.add_workflow(b, job, model, t) {
            return Ok(Err(e));
        }
        st.last_id = last;
        Ok(Ok(id))
    }

    /// Cancels open workflow `id`: nothing more starts, its running nodes are cancelled.
    pub(crate) fn cancel_workflow(&self, id: u64, reason: &str) -> Result<v1::Job, Status> {
        self.mutate(|st, b, t| {
            st.update(b, id, t, |j| {
                (!j.state().is_terminal()).then(|| format!("cancellation requested ({reason})"))
            });
            st.drive(b, t, gridsched_core::grid::Input::Cancel { job: JobId(id) });
            let j = st.jobs.get(&id).ok_or_else(|| {
                Status::internal(format!("workflow {id} vanished while it was cancelled"))
            })?;
            Ok(st.shown(j))
        })
    }

    /// Cancels the workflow nodes the runner stopped (after the commit that recorded why).
    pub(crate) fn start_stops(&self, stops: Vec<(u64, String)>) {
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            return;
        };
        for (id, why) in stops {
            let svc = self.clone();
            rt.spawn(async move {
                match svc.cancel_by_request(id, why).await {
                    Ok(_) => {}
                    Err(e) if e.code() == tonic::Code::FailedPrecondition => {}
                    Err(e) => tracing::error!(job = id, "cannot stop the workflow's node: {e}"),
                }
            });
        }
    }
}
