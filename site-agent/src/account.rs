//! Jobs run as their owners' local accounts: the site's `[users]` map names the account in each
//! start order (`StartJob.local_account`), and an agent running as root starts the job as that
//! account and its group (no supplementary groups), in a work directory the account owns and
//! nobody else can enter, with `HOME`, `USER` and `LOGNAME` set to the account's. The account's
//! processes cannot read another account's job directory nor signal its processes: the kernel's
//! own checks keep the users apart, as under ARC or HTCondor with per-user accounts.
//!
//! An agent not running as root cannot change accounts: it starts a job only when the order
//! names no account or its own, and says so at registration (`separates_users`).

use nix::unistd::{Gid, Group, Uid, User};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// The local account a job runs as.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Account {
    /// Its name.
    pub name: String,
    /// Its user id.
    pub uid: u32,
    /// The group the job runs as.
    pub gid: u32,
    /// Its home directory.
    pub home: PathBuf,
}

/// Who the agent is: the account it runs as, and whether it can start jobs as others (root).
/// Looked up once (the process keeps its user), not at every job's start.
pub fn agent() -> (String, bool) {
    static AGENT: std::sync::OnceLock<(String, bool)> = std::sync::OnceLock::new();
    AGENT
        .get_or_init(|| {
            let uid = nix::unistd::geteuid();
            let name = User::from_uid(uid)
                .ok()
                .flatten()
                .map_or_else(|| uid.to_string(), |u| u.name);
            (name, uid.is_root())
        })
        .clone()
}

/// The account an order asks for (`local_account`, `local_group`): `None` = the agent's own (no
/// account asked, or the agent's own named). Errors say why the job cannot start.
pub fn resolve(account: Option<&str>, group: Option<&str>) -> Result<Option<Account>, String> {
    let Some(name) = account else {
        return Ok(None);
    };
    if name.is_empty() {
        return Err("the site maps no local account to the job's owner".into());
    }
    let (own, root) = agent();
    if !root {
        return match name == own && group.is_none() {
            true => Ok(None),
            false => Err(format!(
                "this agent runs as `{own}`, not root: it cannot start jobs as `{}`",
                group.map_or_else(|| name.to_owned(), |g| format!("{name}:{g}"))
            )),
        };
    }
    let user = User::from_name(name)
        .map_err(|e| format!("looking up the local account `{name}`: {e}"))?
        .ok_or_else(|| format!("no local account `{name}` on this machine"))?;
    if user.uid.is_root() {
        return Err(format!(
            "`{name}` is the superuser: jobs do not run as it (map the owner to an account of its own)"
        ));
    }
    let gid = match group {
        None => user.gid,
        Some(g) => {
            Group::from_name(g)
                .map_err(|e| format!("looking up the local group `{g}`: {e}"))?
                .ok_or_else(|| format!("no local group `{g}` on this machine"))?
                .gid
        }
    };
    if gid == Gid::from_raw(0) {
        return Err(format!(
            "jobs do not run in the superuser's group (`{name}`)"
        ));
    }
    Ok(Some(Account {
        name: user.name,
        uid: user.uid.as_raw(),
        gid: gid.as_raw(),
        home: user.dir,
    }))
}

/// A fresh directory for a job of `account` at `dir`, closed to others (0700) and still the
/// agent's until [`hand_over`]: whatever an earlier run left there (links it may have planted
/// among them) is removed first, so the agent writes into no one else's files.
pub fn fresh_dir(dir: &Path) -> std::io::Result<()> {
    match std::fs::remove_dir_all(dir) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
        _ => {}
    }
    std::fs::create_dir(dir)?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
}

/// Gives the job's directory and its output files (made by the agent) to `account`; the inputs
/// placed there stay the agent's, read-only links to its cache.
pub fn hand_over(dir: &Path, files: &[&Path], account: &Account) -> std::io::Result<()> {
    let (uid, gid) = (Some(account.uid), Some(account.gid));
    for f in files {
        std::os::unix::fs::lchown(f, uid, gid)?;
    }
    std::os::unix::fs::lchown(dir, uid, gid)
}

/// Makes a placed input readable by every account (it lies in a directory only its job's
/// account can enter).
pub fn readable(path: &Path) -> std::io::Result<()> {
    let mode = std::fs::metadata(path)?.permissions().mode();
    if mode & 0o444 != 0o444 {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode | 0o444))?;
    }
    Ok(())
}

/// Whether a file the agent opened for `account`'s job is the account's own: output handed over
/// from a separated job must be (a link the job made to somebody else's file is not read).
pub fn owns(account: Option<u32>, meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    account.is_none_or(|uid| meta.uid() == uid)
}

/// The directories an agent running as root keeps: its work directory passable but not
/// listable by the jobs' accounts (0711), its cache its own (0700).
pub fn close_dirs(work_dir: &Path, cache: &Path) -> std::io::Result<()> {
    if !Uid::effective().is_root() {
        return Ok(());
    }
    std::fs::set_permissions(work_dir, std::fs::Permissions::from_mode(0o711))?;
    std::fs::create_dir_all(cache)?;
    std::fs::set_permissions(cache, std::fs::Permissions::from_mode(0o700))?;
    // A job's account must pass through every directory above its own.
    let full = work_dir.canonicalize()?;
    for dir in full.ancestors().skip(1) {
        let mode = std::fs::metadata(dir)?.permissions().mode();
        if mode & 0o001 == 0 {
            tracing::warn!(
                "{} is closed to others (mode {:o}): jobs run as the sites' mapped accounts \
                 cannot reach their directories under {}",
                dir.display(),
                mode & 0o777,
                full.display()
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A job's directory is made afresh, closed to others, whatever an earlier run left there
    /// (a link it planted to a file outside included, which is removed, not followed); a
    /// placed input becomes readable by every account.
    #[test]
    fn a_jobs_directory_is_fresh_and_closed_and_its_inputs_readable() {
        let root = tempfile::tempdir().unwrap();
        let outside = root.path().join("outside");
        std::fs::write(&outside, "kept").unwrap();
        let dir = root.path().join("7");
        std::fs::create_dir(&dir).unwrap();
        std::os::unix::fs::symlink(&outside, dir.join("stdout")).unwrap();
        fresh_dir(&dir).unwrap();
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
        let mode = std::fs::metadata(&dir).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "kept");
        let input = dir.join("data");
        std::fs::write(&input, "x").unwrap();
        std::fs::set_permissions(&input, std::fs::Permissions::from_mode(0o600)).unwrap();
        readable(&input).unwrap();
        let mode = std::fs::metadata(&input).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o644);
    }

    #[test]
    fn orders_resolve_to_the_agents_own_account_or_say_why_not() {
        assert_eq!(resolve(None, None), Ok(None));
        assert_eq!(
            resolve(Some(""), None),
            Err("the site maps no local account to the job's owner".into())
        );
        let (own, root) = agent();
        if root {
            // Mapping a grid user to the superuser is refused, and unknown names say so.
            assert!(
                resolve(Some("root"), None)
                    .unwrap_err()
                    .contains("superuser")
            );
            let nobody = resolve(Some("nobody"), None).unwrap().unwrap();
            assert_eq!((nobody.name.as_str(), nobody.uid), ("nobody", 65534));
            assert!(
                resolve(Some("nobody"), Some("root"))
                    .unwrap_err()
                    .contains("superuser's group")
            );
        } else {
            assert_eq!(resolve(Some(&own), None), Ok(None));
            assert!(
                resolve(Some("nobody"), None)
                    .unwrap_err()
                    .contains("not root: it cannot start jobs as `nobody`")
            );
        }
        assert_eq!(
            resolve(Some("gridsched-no-such-account"), None).unwrap_err(),
            match root {
                true => "no local account `gridsched-no-such-account` on this machine".to_owned(),
                false => format!(
                    "this agent runs as `{own}`, not root: it cannot start jobs as \
                     `gridsched-no-such-account`"
                ),
            }
        );
    }
}
