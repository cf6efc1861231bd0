//! Who may see and do what through the client API (per-user visibility, `docs/security.md`). With
//! `[auth]` users configured every call needs a known bearer token; a user submits only in their
//! own name (an empty `spec.user` becomes theirs), sees, watches, explains and cancels only their
//! own jobs; an admin may do all of it for everyone. Another user's job is answered with
//! PERMISSION_DENIED (job ids are sequential, so hiding their existence would protect nothing).
//! Without users everything is allowed, as before.

use gridsched_proto::v1;
use gridsched_security::Caller;
use tonic::Status;

/// Fills or checks the owner of a submitted job; `field` names it in the error.
pub(crate) fn own_spec(
    caller: Option<&Caller>,
    spec: &mut Option<v1::JobSpec>,
    field: &str,
) -> Result<(), Status> {
    let (Some(c), Some(spec)) = (caller, spec.as_mut()) else {
        return Ok(());
    };
    if spec.user.is_empty() {
        spec.user.clone_from(&c.user);
    } else if !c.may_access(&spec.user) {
        return Err(Status::permission_denied(format!(
            "field `{field}`: `{}` is not the authenticated user `{}`",
            spec.user, c.user
        )));
    }
    Ok(())
}

/// Whether the caller may see or act on `job`.
pub(crate) fn check_job(caller: Option<&Caller>, job: &v1::Job) -> Result<(), Status> {
    let owner = job.spec.as_ref().map_or("", |s| s.user.as_str());
    match caller {
        Some(c) if !c.may_access(owner) => Err(Status::permission_denied(format!(
            "job {} belongs to another user",
            job.id
        ))),
        _ => Ok(()),
    }
}

/// Job `id` if it exists (NOT_FOUND) and the caller may see it (PERMISSION_DENIED).
pub(crate) fn visible_job(
    st: &crate::state::State,
    id: u64,
    caller: Option<&Caller>,
) -> Result<v1::Job, Status> {
    let job = st
        .jobs
        .get(&id)
        .ok_or_else(|| Status::not_found(format!("job {id} not found")))?;
    check_job(caller, job)?;
    Ok(st.shown(job))
}

/// The user filter of a list or watch: a non-admin caller sees only their own jobs.
pub(crate) fn user_filter(
    caller: Option<&Caller>,
    requested: Option<String>,
) -> Result<Option<String>, Status> {
    match caller {
        Some(c) if !c.admin => match requested {
            Some(u) if u != c.user => Err(Status::permission_denied(format!(
                "field `user`: `{u}` is not the authenticated user `{}`",
                c.user
            ))),
            _ => Ok(Some(c.user.clone())),
        },
        _ => Ok(requested),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alice() -> Caller {
        Caller {
            user: "alice".into(),
            admin: false,
        }
    }

    #[test]
    fn a_user_acts_only_on_their_own_jobs() {
        let mut spec = Some(v1::JobSpec::default());
        own_spec(Some(&alice()), &mut spec, "spec.user").unwrap();
        assert_eq!(spec.as_ref().unwrap().user, "alice");
        let mut bob = Some(v1::JobSpec {
            user: "bob".into(),
            ..Default::default()
        });
        let e = own_spec(Some(&alice()), &mut bob, "spec.user").unwrap_err();
        assert_eq!(e.code(), tonic::Code::PermissionDenied);
        assert!(e.message().contains("`spec.user`"));
        let job = v1::Job {
            id: 7,
            spec: bob.clone(),
            ..Default::default()
        };
        assert!(check_job(Some(&alice()), &job).is_err());
        let admin = Caller {
            user: "root".into(),
            admin: true,
        };
        assert!(check_job(Some(&admin), &job).is_ok());
        assert!(check_job(None, &job).is_ok());
        assert!(own_spec(Some(&admin), &mut bob, "spec.user").is_ok());
        assert_eq!(
            user_filter(Some(&alice()), None).unwrap().as_deref(),
            Some("alice")
        );
        assert!(user_filter(Some(&alice()), Some("bob".into())).is_err());
        assert_eq!(user_filter(Some(&admin), None).unwrap(), None);
    }
}
