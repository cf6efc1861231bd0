//! Conversions between the core model ([`gridsched_core::model`], [`gridsched_core::policy`]) and
//! the wire messages of [`crate::v1`].
//!
//! The wire speaks in names (users, licences, machines), the model in dense ids; a [`NameTable`]
//! maps one to the other. What comes from the wire is validated: [`job_from_spec`] returns a
//! [`ConvertError`] naming the offending `JobSpec` field, which becomes a gRPC `INVALID_ARGUMENT`
//! status. Conversions towards the wire fail only when an id has no name ([`UnnamedId`]).

use crate::limits::check_text;
use crate::v1;
use gridsched_core::Time;
use gridsched_core::model::{
    ArraySpec, DataIn, Dependency, InputRef, Job, JobError, JobId, LicenceId, MachineId, Platform,
    ReservationId, Urgency, UserClass, UserId,
};
use gridsched_core::policy::{Reservation, ReservationKind};
use std::collections::HashMap;

/// A dense, append-only dictionary: names to indices and back.
#[derive(Clone, Debug, Default)]
struct Dictionary {
    names: Vec<String>,
    index: HashMap<String, usize>,
}

impl Dictionary {
    /// The index of `name`, adding it at the end when new.
    fn intern(&mut self, name: &str) -> usize {
        if let Some(&i) = self.index.get(name) {
            return i;
        }
        let i = self.names.len();
        self.names.push(name.to_string());
        self.index.insert(name.to_string(), i);
        i
    }

    fn get(&self, name: &str) -> Option<usize> {
        self.index.get(name).copied()
    }

    fn name(&self, i: usize) -> Option<&str> {
        self.names.get(i).map(String::as_str)
    }
}

/// Maps the names used on the wire to the ids of the model: licence names ↔ [`LicenceId`],
/// machine names ↔ [`MachineId`] and user names ↔ [`UserId`].
///
/// Licences and machines normally come from the [`Platform`] ([`NameTable::from_platform`]), so
/// that their ids index the platform's lists; users are interned as they appear
/// ([`job_from_spec`] does it for each accepted job).
#[derive(Clone, Debug, Default)]
pub struct NameTable {
    licences: Dictionary,
    machines: Dictionary,
    users: Dictionary,
}

impl NameTable {
    /// An empty table.
    pub fn new() -> NameTable {
        NameTable::default()
    }

    /// A table holding the platform's licence catalogue and machines, with the platform's ids.
    pub fn from_platform(platform: &Platform) -> NameTable {
        let mut t = NameTable::new();
        for l in &platform.licences {
            t.add_licence(&l.name);
        }
        for m in &platform.machines {
            t.add_machine(&m.name);
        }
        t
    }

    /// The id of licence `name`, adding it to the catalogue when new.
    ///
    /// # Panics
    /// When the catalogue already holds 65 536 licence types.
    pub fn add_licence(&mut self, name: &str) -> LicenceId {
        let i = self.licences.intern(name);
        LicenceId(u16::try_from(i).expect("more than 65536 licence types"))
    }

    /// The id of licence `name`, if known.
    pub fn licence_id(&self, name: &str) -> Option<LicenceId> {
        self.licences.get(name).map(|i| LicenceId(i as u16))
    }

    /// The name of a licence, if known.
    pub fn licence_name(&self, id: LicenceId) -> Option<&str> {
        self.licences.name(id.index())
    }

    /// The id of machine `name`, adding it when new.
    ///
    /// # Panics
    /// When the table already holds 2³² machines.
    pub fn add_machine(&mut self, name: &str) -> MachineId {
        let i = self.machines.intern(name);
        MachineId(u32::try_from(i).expect("more than 2^32 machines"))
    }

    /// The id of machine `name`, if known.
    pub fn machine_id(&self, name: &str) -> Option<MachineId> {
        self.machines.get(name).map(|i| MachineId(i as u32))
    }

    /// The name of a machine, if known.
    pub fn machine_name(&self, id: MachineId) -> Option<&str> {
        self.machines.name(id.index())
    }

    /// The id of user `name`, interning it when new.
    ///
    /// # Panics
    /// When the table already holds 2³² users.
    pub fn intern_user(&mut self, name: &str) -> UserId {
        let i = self.users.intern(name);
        UserId(u32::try_from(i).expect("more than 2^32 users"))
    }

    /// The id of user `name`, if known.
    pub fn user_id(&self, name: &str) -> Option<UserId> {
        self.users.get(name).map(|i| UserId(i as u32))
    }

    /// The name of a user, if known.
    pub fn user_name(&self, id: UserId) -> Option<&str> {
        self.users.name(id.0 as usize)
    }
}

/// A message from the wire is invalid: `field` (a path into the message, e.g. `processors`,
/// `licences[2]`, `inputs[0].machine`) breaks a rule explained by `reason`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("field `{field}`: {reason}")]
pub struct ConvertError {
    field: String,
    reason: String,
}

impl ConvertError {
    /// An error on `field`.
    pub fn new(field: impl Into<String>, reason: impl Into<String>) -> ConvertError {
        ConvertError {
            field: field.into(),
            reason: reason.into(),
        }
    }

    /// The offending field, as a path into the message (`processors`, `licences[2]`, ...).
    pub fn field(&self) -> &str {
        &self.field
    }

    /// What is wrong with it.
    pub fn reason(&self) -> &str {
        &self.reason
    }
}

impl From<JobError> for ConvertError {
    /// Renames the model's fields to the `JobSpec` fields they come from.
    fn from(e: JobError) -> ConvertError {
        match e {
            JobError::StageIn(key) => {
                ConvertError::new("stage_in", format!("input {key} is listed twice"))
            }
            JobError::NoProcessors => {
                ConvertError::new("processors", "a job needs at least one processor")
            }
            JobError::DependsOnItself(id) => {
                ConvertError::new("after", format!("job {id} cannot wait for itself"))
            }
            JobError::NonPositiveEstimate(v) => {
                ConvertError::new("estimate_s", format!("must be at least 1 second, got {v}"))
            }
            JobError::NegativeRuntime(v) => ConvertError::new(
                "emulate_runtime_s",
                format!("must not be negative, got {v}"),
            ),
            JobError::NegativeSubmit(v) => {
                ConvertError::new("submit_time", format!("must not be negative, got {v}"))
            }
            JobError::OwnerPriority(v) => {
                ConvertError::new("owner_priority", format!("must be in 0..=3, got {v}"))
            }
            JobError::DeadlineBeforeSubmit { deadline, submit } => ConvertError::new(
                "deadline",
                format!("{deadline} is before the submission time {submit}"),
            ),
            JobError::DuplicateLicence(l) => {
                ConvertError::new("licences", format!("licence {l} is listed twice"))
            }
            JobError::ZeroBenchmark => {
                ConvertError::new("benchmark", "a benchmark score must be positive")
            }
            JobError::NestedArray => {
                ConvertError::new("array", "a task of an array cannot be an array")
            }
        }
    }
}

impl From<ConvertError> for tonic::Status {
    /// `INVALID_ARGUMENT`, with a message naming the field.
    fn from(e: ConvertError) -> tonic::Status {
        tonic::Status::invalid_argument(e.to_string())
    }
}

/// A model id that the [`NameTable`] cannot name, so it cannot be put on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum UnnamedId {
    /// A user without a name.
    #[error("user {0} has no name")]
    User(UserId),
    /// A licence without a name.
    #[error("licence {0} has no name")]
    Licence(LicenceId),
    /// A machine without a name.
    #[error("machine {0} has no name")]
    Machine(MachineId),
}

impl From<UnnamedId> for tonic::Status {
    /// `INTERNAL`: the server's own state is inconsistent.
    fn from(e: UnnamedId) -> tonic::Status {
        tonic::Status::internal(e.to_string())
    }
}

impl From<UserClass> for v1::UserClass {
    fn from(c: UserClass) -> v1::UserClass {
        match c {
            UserClass::Gold => v1::UserClass::Gold,
            UserClass::Silver => v1::UserClass::Silver,
            UserClass::Regular => v1::UserClass::Regular,
        }
    }
}

impl From<Urgency> for v1::Urgency {
    fn from(u: Urgency) -> v1::Urgency {
        match u {
            Urgency::Important => v1::Urgency::Important,
            Urgency::High => v1::Urgency::High,
            Urgency::Critical => v1::Urgency::Critical,
        }
    }
}

/// The urgency of a wire value: `UNSPECIFIED` is a typical job (`None`).
pub fn urgency_from(value: i32) -> Result<Option<Urgency>, ConvertError> {
    match v1::Urgency::try_from(value) {
        Ok(v1::Urgency::Unspecified) => Ok(None),
        Ok(v1::Urgency::Important) => Ok(Some(Urgency::Important)),
        Ok(v1::Urgency::High) => Ok(Some(Urgency::High)),
        Ok(v1::Urgency::Critical) => Ok(Some(Urgency::Critical)),
        Err(_) => Err(ConvertError::new(
            "urgency",
            format!("unknown value {value}"),
        )),
    }
}

impl From<v1::UserClass> for UserClass {
    /// `UNSPECIFIED` is `Regular`.
    fn from(c: v1::UserClass) -> UserClass {
        match c {
            v1::UserClass::Gold => UserClass::Gold,
            v1::UserClass::Silver => UserClass::Silver,
            v1::UserClass::Regular | v1::UserClass::Unspecified => UserClass::Regular,
        }
    }
}

impl From<ReservationKind> for v1::ReservationKind {
    fn from(k: ReservationKind) -> v1::ReservationKind {
        match k {
            ReservationKind::Head => v1::ReservationKind::Head,
            ReservationKind::Planned => v1::ReservationKind::Planned,
        }
    }
}

/// Validates a submitted `JobSpec` and turns it into a model [`Job`] with id `id`, submitted at
/// `submit`.
///
/// Licence and input machine names must be known to `names`; the user is interned in `names`
/// once the whole spec is valid. `user_class` `UNSPECIFIED` becomes [`UserClass::Regular`];
/// `emulate_runtime_s` becomes the job's [`Job::runtime`]. The spec must give exactly one of
/// `command` (with a program) and `emulate_runtime_s`. The first broken rule is reported, naming
/// its field.
pub fn job_from_spec(
    spec: &v1::JobSpec,
    id: JobId,
    submit: Time,
    names: &mut NameTable,
) -> Result<Job, ConvertError> {
    if spec.user.is_empty() {
        return Err(ConvertError::new("user", "must not be empty"));
    }
    check_strings(spec)?;
    let user_class = v1::UserClass::try_from(spec.user_class)
        .map_err(|_| ConvertError::new("user_class", format!("unknown value {}", spec.user_class)))?
        .into();
    let owner_priority = match u8::try_from(spec.owner_priority) {
        Ok(p) if p <= 3 => p,
        _ => {
            return Err(ConvertError::new(
                "owner_priority",
                format!("must be in 0..=3, got {}", spec.owner_priority),
            ));
        }
    };
    let mut licences = Vec::with_capacity(spec.licences.len());
    for (i, name) in spec.licences.iter().enumerate() {
        let field = || format!("licences[{i}]");
        let l = names
            .licence_id(name)
            .ok_or_else(|| ConvertError::new(field(), format!("unknown licence `{name}`")))?;
        if licences.contains(&l) {
            return Err(ConvertError::new(
                field(),
                format!("licence `{name}` is listed twice"),
            ));
        }
        licences.push(l);
    }
    let mut inputs = Vec::with_capacity(spec.inputs.len());
    for (i, input) in spec.inputs.iter().enumerate() {
        let machine = match &input.machine {
            None => None,
            Some(name) => Some(names.machine_id(name).ok_or_else(|| {
                ConvertError::new(
                    format!("inputs[{i}].machine"),
                    format!("unknown machine `{name}`"),
                )
            })?),
        };
        inputs.push(InputRef {
            machine,
            size: input.size,
        });
    }
    match (&spec.command, spec.emulate_runtime_s) {
        (None, None) => {
            return Err(ConvertError::new(
                "command",
                "required unless `emulate_runtime_s` is given",
            ));
        }
        (Some(_), Some(_)) => {
            return Err(ConvertError::new(
                "emulate_runtime_s",
                "give either a command or an emulated run time, not both",
            ));
        }
        (Some(c), None) if c.program.is_empty() => {
            return Err(ConvertError::new("command.program", "must not be empty"));
        }
        _ => {}
    }
    let mut job = Job {
        id,
        user: UserId(0),
        user_class,
        owner_priority,
        submit,
        procs: spec.processors,
        memory_kb: spec.memory_kb,
        estimate: spec.estimate_s,
        runtime: spec.emulate_runtime_s,
        deadline: spec.deadline,
        licences,
        inputs,
        stage_in: stage_in(spec),
        benchmark: spec.benchmark,
        partition: spec.partition,
        reservation: match spec.reservation {
            Some(0) => return Err(ConvertError::new("reservation", "must be positive")),
            r => r.map(ReservationId),
        },
        urgency: urgency_from(spec.urgency)?,
        after: match spec.after.as_deref() {
            None | Some("") => None,
            Some(text) => Some(Box::new(
                Dependency::parse(text, spec.name.as_deref())
                    .map_err(|e| ConvertError::new("after", e.why))?,
            )),
        },
        array: match spec.array.as_deref() {
            None => None,
            Some(text) => Some(Box::new(
                text.parse::<ArraySpec>()
                    .map_err(|e| ConvertError::new("array", e.why))?,
            )),
        },
        task: None,
    };
    job.validate()?;
    job.user = names.intern_user(&spec.user);
    Ok(job)
}

/// A job's inputs as the grid counts their transfers: named by their content where known, else
/// by their URL, each content once (two names of one content move once); the sites holding a
/// copy are not known at the door (the grid learns them as it places jobs).
fn stage_in(spec: &v1::JobSpec) -> Vec<DataIn> {
    let mut out: Vec<DataIn> = Vec::with_capacity(spec.stage_in.len());
    for s in &spec.stage_in {
        let key = if s.sha256.is_empty() {
            &s.url
        } else {
            &s.sha256
        };
        if !key.is_empty() && !out.iter().any(|d| &d.key == key) {
            out.push(DataIn::new(key.clone(), s.size));
        }
    }
    out
}

/// Where an advance reservation stands at `now`: PENDING stays PENDING (not confirmed by its
/// site); otherwise HELD before its start, ACTIVE during its interval, ENDED after it.
pub fn reservation_state(r: &v1::AdvanceReservation, now: Time) -> v1::AdvanceReservationState {
    use v1::AdvanceReservationState as St;
    if r.state == St::Pending as i32 {
        St::Pending
    } else if now < r.start_time {
        St::Held
    } else if now < r.end_time {
        St::Active
    } else {
        St::Ended
    }
}

/// Refuses the text a program cannot be given: a NUL byte anywhere in the user, the client
/// token or the command, and an environment variable name that is empty or holds `=`.
fn check_strings(spec: &v1::JobSpec) -> Result<(), ConvertError> {
    check_text(|| "user".into(), &spec.user)?;
    if let Some(t) = &spec.client_token {
        check_text(|| "client_token".into(), t)?;
    }
    let Some(c) = &spec.command else {
        return Ok(());
    };
    check_text(|| "command.program".into(), &c.program)?;
    for (i, a) in c.args.iter().enumerate() {
        check_text(|| format!("command.args[{i}]"), a)?;
    }
    // A map: sorted, so that the same spec always blames the same entry.
    let mut env: Vec<(&String, &String)> = c.env.iter().collect();
    env.sort();
    for (k, v) in env {
        let field = || format!("command.env[{k:?}]");
        if k.is_empty() || k.contains('=') {
            return Err(ConvertError::new(
                field(),
                "a variable name must be non-empty and without `=`",
            ));
        }
        check_text(field, k)?;
        check_text(field, v)?;
    }
    if let Some(d) = &c.working_directory {
        check_text(|| "command.working_directory".into(), d)?;
    }
    Ok(())
}

/// The `JobSpec` describing a model [`Job`] (its id and submission time are not part of a spec).
///
/// The job's [`Job::runtime`], when known, becomes `emulate_runtime_s` (a replayed job is
/// emulated); otherwise the spec has neither a command nor an emulated run time and the caller
/// must set `command` before submitting it. `client_token` is left unset.
pub fn spec_from_job(job: &Job, names: &NameTable) -> Result<v1::JobSpec, UnnamedId> {
    let user = names
        .user_name(job.user)
        .ok_or(UnnamedId::User(job.user))?
        .to_string();
    let licences = job
        .licences
        .iter()
        .map(|&l| {
            names
                .licence_name(l)
                .map(str::to_string)
                .ok_or(UnnamedId::Licence(l))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let inputs = job
        .inputs
        .iter()
        .map(|input| {
            let machine = input.machine.map(|m| machine_name(m, names)).transpose()?;
            Ok(v1::InputRef {
                machine,
                size: input.size,
            })
        })
        .collect::<Result<Vec<_>, UnnamedId>>()?;
    Ok(v1::JobSpec {
        user,
        user_class: v1::UserClass::from(job.user_class).into(),
        owner_priority: u32::from(job.owner_priority),
        processors: job.procs,
        memory_kb: job.memory_kb,
        estimate_s: job.estimate,
        deadline: job.deadline,
        licences,
        inputs,
        benchmark: job.benchmark,
        command: None,
        emulate_runtime_s: job.runtime,
        client_token: None,
        partition: job.partition,
        reservation: job.reservation.map(|r| r.0),
        urgency: job.urgency.map_or(0, |u| v1::Urgency::from(u) as i32),
        after: job.after.as_ref().map(|d| d.to_string()),
        name: job.after.as_ref().and_then(|d| d.singleton.clone()),
        array: job.array.as_ref().map(|a| a.to_string()),
        workflow: None,
        outputs: Vec::new(),
        stage_in: Vec::new(),
    })
}

/// The wire form of a policy's [`Reservation`].
pub fn reservation_to_proto(
    r: &Reservation,
    names: &NameTable,
) -> Result<v1::Reservation, UnnamedId> {
    Ok(v1::Reservation {
        job_id: r.job.0,
        start_time: r.start,
        end_time: r.end,
        processors: r.procs,
        machine: r.machine.map(|m| machine_name(m, names)).transpose()?,
        kind: v1::ReservationKind::from(r.kind).into(),
    })
}

fn machine_name(m: MachineId, names: &NameTable) -> Result<String, UnnamedId> {
    names
        .machine_name(m)
        .map(str::to_string)
        .ok_or(UnnamedId::Machine(m))
}

#[cfg(test)]
mod tests {
    use super::*;
    use gridsched_core::model::LicenceType;

    fn names() -> NameTable {
        let mut p = Platform::single_machine(8);
        p.licences = ["matlab", "fluent", "abaqus"]
            .into_iter()
            .map(|n| LicenceType { name: n.into() })
            .collect();
        let mut t = NameTable::from_platform(&p);
        t.add_machine("m1");
        t.intern_user("alice");
        t.intern_user("bob");
        t
    }

    /// A job with every model field on the wire set to a non-default value (advance reservations
    /// are not on the wire yet).
    fn full_job() -> Job {
        Job {
            id: JobId(42),
            user: UserId(1),
            user_class: UserClass::Gold,
            owner_priority: 2,
            submit: 1_700_000_000,
            procs: 16,
            memory_kb: Some(1 << 20),
            estimate: 3600,
            runtime: Some(1800),
            deadline: Some(1_700_010_000),
            licences: vec![LicenceId(2), LicenceId(0)],
            inputs: vec![
                InputRef {
                    machine: Some(MachineId(1)),
                    size: 300,
                },
                InputRef {
                    machine: None,
                    size: 100,
                },
            ],
            // Staged inputs carry names and sources the model does not keep: not round-tripped.
            stage_in: Vec::new(),
            benchmark: Some(250),
            partition: Some(3),
            reservation: None,
            urgency: Some(Urgency::High),
            after: Some(Box::new(
                Dependency::parse("afterok:40:41,afterany:7+60,singleton", Some("n")).unwrap(),
            )),
            array: Some(Box::new(ArraySpec::parse("0-9:3,20%2", 100).unwrap())),
            // A task's array and index are the record's, not the spec's.
            task: None,
        }
    }

    /// A valid spec to break one field at a time.
    fn valid_spec() -> v1::JobSpec {
        spec_from_job(&full_job(), &names()).unwrap()
    }

    fn convert(spec: &v1::JobSpec) -> Result<Job, ConvertError> {
        job_from_spec(spec, JobId(42), 1_700_000_000, &mut names())
    }

    #[test]
    fn job_round_trips_through_spec() {
        let t = names();
        let job = full_job();
        let spec = spec_from_job(&job, &t).unwrap();
        assert_eq!(spec.user, "bob");
        assert_eq!(spec.user_class(), v1::UserClass::Gold);
        assert_eq!(spec.licences, ["abaqus", "matlab"]);
        assert_eq!(spec.inputs[0].machine.as_deref(), Some("m1"));
        assert_eq!(spec.emulate_runtime_s, Some(1800));
        assert_eq!(spec.urgency(), v1::Urgency::High);
        assert_eq!(
            (spec.after.as_deref(), spec.name.as_deref()),
            (
                Some("afterok:40,afterok:41,afterany:7+60,singleton"),
                Some("n")
            )
        );
        let mut t2 = t.clone();
        let back = job_from_spec(&spec, job.id, job.submit, &mut t2).unwrap();
        assert_eq!(back, job);

        // Defaults and absences survive too; a job without a run time needs a command.
        let mut minimal = Job::new(7, 0, 1, 1, 0);
        minimal.runtime = None;
        let mut spec = spec_from_job(&minimal, &t).unwrap();
        assert_eq!(spec.user_class(), v1::UserClass::Regular);
        assert!(spec.command.is_none() && spec.emulate_runtime_s.is_none());
        spec.command = Some(v1::Command {
            program: "/bin/true".into(),
            ..Default::default()
        });
        let back = job_from_spec(&spec, minimal.id, minimal.submit, &mut t2).unwrap();
        assert_eq!(back, minimal);
    }

    #[test]
    fn users_are_interned_only_for_valid_specs() {
        let mut t = names();
        let mut spec = valid_spec();
        spec.user = "carol".into();
        spec.processors = 0;
        job_from_spec(&spec, JobId(1), 0, &mut t).unwrap_err();
        assert_eq!(t.user_id("carol"), None);
        spec.processors = 1;
        let job = job_from_spec(&spec, JobId(1), 0, &mut t).unwrap();
        assert_eq!(job.user, UserId(2));
        assert_eq!(t.user_name(UserId(2)), Some("carol"));
    }

    #[test]
    fn unspecified_user_class_is_regular() {
        let mut spec = valid_spec();
        spec.user_class = v1::UserClass::Unspecified.into();
        assert_eq!(convert(&spec).unwrap().user_class, UserClass::Regular);
    }

    /// Turns the spec into a real command's (program `echo`), returning the command.
    fn with_command(s: &mut v1::JobSpec) -> &mut v1::Command {
        s.emulate_runtime_s = None;
        s.command.insert(v1::Command {
            program: "echo".into(),
            ..Default::default()
        })
    }

    #[test]
    fn each_invalid_field_is_named() {
        type Breaker = fn(&mut v1::JobSpec);
        let cases: &[(&str, Breaker)] = &[
            ("user", |s| s.user.clear()),
            ("user_class", |s| s.user_class = 17),
            ("urgency", |s| s.urgency = 4),
            ("owner_priority", |s| s.owner_priority = 4),
            ("owner_priority", |s| s.owner_priority = 1000),
            ("processors", |s| s.processors = 0),
            ("estimate_s", |s| s.estimate_s = 0),
            ("estimate_s", |s| s.estimate_s = -5),
            ("deadline", |s| s.deadline = Some(1_699_999_999)),
            ("licences[1]", |s| s.licences[1] = "ansys".into()),
            ("licences[1]", |s| s.licences[1] = s.licences[0].clone()),
            ("inputs[1].machine", |s| {
                s.inputs[1].machine = Some("zz".into())
            }),
            ("benchmark", |s| s.benchmark = Some(0)),
            ("emulate_runtime_s", |s| s.emulate_runtime_s = Some(-1)),
            ("emulate_runtime_s", |s| {
                s.command = Some(v1::Command {
                    program: "sleep".into(),
                    ..Default::default()
                })
            }),
            ("command", |s| s.emulate_runtime_s = None),
            ("command.program", |s| {
                s.emulate_runtime_s = None;
                s.command = Some(v1::Command::default());
            }),
            ("user", |s| s.user = "al\0ice".into()),
            ("client_token", |s| s.client_token = Some("\0".into())),
            ("command.program", |s| {
                with_command(s).program = "ec\0ho".into()
            }),
            ("command.args[1]", |s| {
                with_command(s).args = vec!["ok".into(), "n\0ul".into()]
            }),
            ("command.env[\"A\"]", |s| {
                with_command(s).env.insert("A".into(), "x\0".into());
            }),
            ("command.env[\"A=B\"]", |s| {
                with_command(s).env.insert("A=B".into(), "x".into());
            }),
            ("command.env[\"\"]", |s| {
                with_command(s).env.insert(String::new(), "x".into());
            }),
            ("command.working_directory", |s| {
                with_command(s).working_directory = Some("/tmp\0".into())
            }),
            ("after", |s| {
                s.after = Some("afterok:1?after:2,after:3".into())
            }),
            ("after", |s| s.after = Some("before:3".into())),
            ("after", |s| s.after = Some("afterok:42".into())),
            ("after", |s| s.name = None),
        ];
        for (field, breaker) in cases {
            let mut spec = valid_spec();
            convert(&spec).expect("the base spec is valid");
            breaker(&mut spec);
            let err = convert(&spec).expect_err(field);
            assert_eq!(err.field(), *field, "{err}");
            assert!(err.to_string().contains(&format!("`{field}`")), "{err}");
        }
    }

    #[test]
    fn model_errors_map_to_wire_fields() {
        let e = ConvertError::from(JobError::NegativeSubmit(-1));
        assert_eq!(e.field(), "submit_time");
        let e = ConvertError::from(JobError::DuplicateLicence(LicenceId(1)));
        assert_eq!(e.field(), "licences");
        let e = job_from_spec(&valid_spec(), JobId(1), -3, &mut names()).unwrap_err();
        assert_eq!(e.field(), "submit_time");
    }

    #[test]
    fn convert_error_is_invalid_argument() {
        let mut spec = valid_spec();
        spec.processors = 0;
        let status = tonic::Status::from(convert(&spec).unwrap_err());
        assert_eq!(status.code(), tonic::Code::InvalidArgument);
        assert!(status.message().contains("`processors`"), "{status:?}");

        let status = tonic::Status::from(UnnamedId::User(UserId(9)));
        assert_eq!(status.code(), tonic::Code::Internal);
    }

    #[test]
    fn outbound_conversions_need_names() {
        let t = names();
        let mut job = full_job();
        job.user = UserId(9);
        assert_eq!(spec_from_job(&job, &t), Err(UnnamedId::User(UserId(9))));
        let mut job = full_job();
        job.licences.push(LicenceId(3));
        assert_eq!(
            spec_from_job(&job, &t),
            Err(UnnamedId::Licence(LicenceId(3)))
        );
        let mut job = full_job();
        job.inputs[1].machine = Some(MachineId(5));
        assert_eq!(
            spec_from_job(&job, &t),
            Err(UnnamedId::Machine(MachineId(5)))
        );
    }

    #[test]
    fn reservation_converts() {
        let t = names();
        let r = Reservation {
            job: JobId(5),
            start: 100,
            end: 400,
            procs: 4,
            machine: Some(MachineId(1)),
            kind: ReservationKind::Head,
        };
        let m = reservation_to_proto(&r, &t).unwrap();
        assert_eq!(
            m,
            v1::Reservation {
                job_id: 5,
                start_time: 100,
                end_time: 400,
                processors: 4,
                machine: Some("m1".into()),
                kind: v1::ReservationKind::Head.into(),
            }
        );
        let planned = Reservation {
            machine: None,
            kind: ReservationKind::Planned,
            ..r
        };
        let m = reservation_to_proto(&planned, &t).unwrap();
        assert_eq!(m.machine, None);
        assert_eq!(m.kind(), v1::ReservationKind::Planned);
        let unknown = Reservation {
            machine: Some(MachineId(9)),
            ..r
        };
        assert_eq!(
            reservation_to_proto(&unknown, &t),
            Err(UnnamedId::Machine(MachineId(9)))
        );
    }

    #[test]
    fn name_table_from_platform_keeps_ids() {
        let t = names();
        assert_eq!(t.licence_id("fluent"), Some(LicenceId(1)));
        assert_eq!(t.licence_name(LicenceId(2)), Some("abaqus"));
        assert_eq!(t.machine_id("machine"), Some(MachineId(0)));
        assert_eq!(t.machine_id("m1"), Some(MachineId(1)));
        assert_eq!(t.licence_id("nope"), None);
        let mut t = t;
        assert_eq!(
            t.add_licence("matlab"),
            LicenceId(0),
            "re-adding is a no-op"
        );
        assert_eq!(t.intern_user("alice"), UserId(0));
    }
}
