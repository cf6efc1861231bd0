//! Bearer tokens: what a client sends (`authorization: Bearer <token>` metadata,
//! added by the [`Bearer`] interceptor) and what a server checks — the meta-scheduler maps each
//! user's token to a [`Caller`] ([`Tokens`]); a local scheduler compares a shared secret
//! ([`SharedSecret`]) in constant time.
//!
//! Tokens are given inline or, better, in a file (`token_file`, first line, surrounding blanks
//! removed) so that configuration files can be shared without secrets. An empty [`Tokens`] or
//! [`SharedSecret`] means authentication is off (the development default).

use serde::Deserialize;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use tonic::Status;
use tonic::metadata::{AsciiMetadataValue, MetadataMap};

/// Who made a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    /// User name: the only user whose jobs a non-admin caller sees, submits and cancels.
    pub user: String,
    /// Sees and cancels every job, may submit for any user.
    pub admin: bool,
}

impl Caller {
    /// Whether this caller may see or act on a job of `owner`.
    pub fn may_access(&self, owner: &str) -> bool {
        self.admin || self.user == owner
    }
}

/// One user's entry of the `[[auth.users]]` list.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct UserToken {
    /// User name.
    pub user: String,
    /// The token, inline.
    #[serde(default)]
    pub token: Option<String>,
    /// A file holding the token.
    #[serde(default)]
    pub token_file: Option<PathBuf>,
    /// An administrator.
    #[serde(default)]
    pub admin: bool,
}

/// A token setting that cannot be used; the message names the configuration key.
#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    /// The token file could not be read.
    #[error("{key}: reading {path}: {source}")]
    Read {
        /// The configuration key.
        key: String,
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// The token is empty, or not printable ASCII, or given twice.
    #[error("{key}: {message}")]
    Invalid {
        /// The configuration key.
        key: String,
        /// What is wrong.
        message: String,
    },
}

/// Reads a secret given inline or in a file (exactly one of them, or none).
pub fn read_secret(
    inline: Option<&str>,
    file: Option<&Path>,
    key: &str,
) -> Result<Option<String>, TokenError> {
    let invalid = |message: &str| TokenError::Invalid {
        key: key.to_owned(),
        message: message.to_owned(),
    };
    let token = match (inline, file) {
        (Some(_), Some(_)) => return Err(invalid("give the token or the token file, not both")),
        (Some(t), None) => t.trim().to_owned(),
        (None, Some(p)) => std::fs::read_to_string(p)
            .map_err(|source| TokenError::Read {
                key: format!("{key}_file"),
                path: p.to_owned(),
                source,
            })?
            .lines()
            .next()
            .unwrap_or("")
            .trim()
            .to_owned(),
        (None, None) => return Ok(None),
    };
    if token.is_empty() {
        return Err(invalid("the token is empty"));
    }
    if !token.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(invalid("a token is printable ASCII without spaces"));
    }
    Ok(Some(token))
}

/// The token of a request, if it carries one.
fn presented(md: &MetadataMap) -> Result<&str, Status> {
    let v = md.get("authorization").ok_or_else(|| {
        Status::unauthenticated(
            "missing credentials: send metadata `authorization: Bearer <token>`",
        )
    })?;
    v.to_str()
        .ok()
        .and_then(|s| s.strip_prefix("Bearer "))
        .map(str::trim)
        .ok_or_else(|| Status::unauthenticated("`authorization` is not `Bearer <token>`"))
}

/// Equality that takes the same time wherever the first difference is.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The meta-scheduler's users: token → caller.
#[derive(Clone, Default)]
pub struct Tokens {
    by_token: HashMap<String, Caller>,
}

impl std::fmt::Debug for Tokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tokens")
            .field("users", &self.by_token.len())
            .finish()
    }
}

impl Tokens {
    /// The tokens of `users` (`auth.users` of the configuration).
    pub fn new(users: &[UserToken]) -> Result<Tokens, TokenError> {
        let mut by_token = HashMap::new();
        for (i, u) in users.iter().enumerate() {
            let key = format!("auth.users[{i}].token");
            if u.user.trim().is_empty() {
                return Err(TokenError::Invalid {
                    key: format!("auth.users[{i}].user"),
                    message: "empty user name".into(),
                });
            }
            let token = read_secret(u.token.as_deref(), u.token_file.as_deref(), &key)?
                .ok_or_else(|| TokenError::Invalid {
                    key: key.clone(),
                    message: "a user needs `token` or `token_file`".into(),
                })?;
            let caller = Caller {
                user: u.user.clone(),
                admin: u.admin,
            };
            if by_token.insert(token, caller).is_some() {
                return Err(TokenError::Invalid {
                    key,
                    message: "the same token is given to two users".into(),
                });
            }
        }
        Ok(Tokens { by_token })
    }

    /// Whether any user is configured (authentication on).
    pub fn enabled(&self) -> bool {
        !self.by_token.is_empty()
    }

    /// The caller of a request; `None` when authentication is off; UNAUTHENTICATED for a
    /// missing or unknown token.
    pub fn caller(&self, md: &MetadataMap) -> Result<Option<Caller>, Status> {
        if !self.enabled() {
            return Ok(None);
        }
        self.caller_of_token(presented(md)?).map(Some)
    }

    /// The caller holding `token` (for the HTTP endpoints, where it comes from a header or a
    /// cookie).
    pub fn caller_of_token(&self, token: &str) -> Result<Caller, Status> {
        self.by_token
            .iter()
            .find(|(t, _)| same(t.as_bytes(), token.as_bytes()))
            .map(|(_, c)| c.clone())
            .ok_or_else(|| Status::unauthenticated("unknown token"))
    }
}

/// A secret shared by a local scheduler and its peers of one kind (the meta-scheduler, or the
/// site agents).
#[derive(Clone, Default)]
pub struct SharedSecret(Option<String>);

impl std::fmt::Debug for SharedSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = if self.0.is_some() { "set" } else { "off" };
        f.debug_tuple("SharedSecret").field(&state).finish()
    }
}

impl SharedSecret {
    /// The secret (`None` = no check).
    pub fn new(secret: Option<String>) -> SharedSecret {
        SharedSecret(secret)
    }

    /// Checks a request; `who` names the expected peer in the error.
    pub fn check(&self, md: &MetadataMap, who: &str) -> Result<(), Status> {
        let Some(secret) = &self.0 else { return Ok(()) };
        let token = presented(md).map_err(|s| {
            Status::unauthenticated(format!("{} (this call is for the {who})", s.message()))
        })?;
        if same(secret.as_bytes(), token.as_bytes()) {
            Ok(())
        } else {
            Err(Status::unauthenticated(format!(
                "wrong token for the {who}'s calls"
            )))
        }
    }
}

/// A client interceptor adding `authorization: Bearer <token>` to every request (nothing when it
/// has no token).
#[derive(Clone, Default)]
pub struct Bearer(Option<AsciiMetadataValue>);

impl std::fmt::Debug for Bearer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = if self.0.is_some() { "set" } else { "none" };
        f.debug_tuple("Bearer").field(&state).finish()
    }
}

impl Bearer {
    /// The interceptor for `token`.
    pub fn new(token: Option<&str>) -> Result<Bearer, TokenError> {
        token
            .map(|t| {
                format!("Bearer {t}")
                    .parse::<AsciiMetadataValue>()
                    .map_err(|_| TokenError::Invalid {
                        key: "token".into(),
                        message: "a token is printable ASCII without spaces".into(),
                    })
            })
            .transpose()
            .map(Bearer)
    }
}

impl tonic::service::Interceptor for Bearer {
    fn call(&mut self, mut req: tonic::Request<()>) -> Result<tonic::Request<()>, Status> {
        if let Some(v) = &self.0 {
            req.metadata_mut().insert("authorization", v.clone());
        }
        Ok(req)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tonic::service::Interceptor;

    fn md_of(b: &Bearer) -> MetadataMap {
        b.clone()
            .call(tonic::Request::new(()))
            .unwrap()
            .metadata()
            .clone()
    }

    fn users() -> Tokens {
        Tokens::new(&[
            UserToken {
                user: "alice".into(),
                token: Some("a-secret".into()),
                token_file: None,
                admin: false,
            },
            UserToken {
                user: "root".into(),
                token: Some("r-secret".into()),
                token_file: None,
                admin: true,
            },
        ])
        .unwrap()
    }

    #[test]
    fn a_known_token_names_its_user_and_others_are_refused() {
        let t = users();
        let alice = t
            .caller(&md_of(&Bearer::new(Some("a-secret")).unwrap()))
            .unwrap();
        assert_eq!(
            alice,
            Some(Caller {
                user: "alice".into(),
                admin: false
            })
        );
        assert!(alice.unwrap().may_access("alice"));
        let root = t
            .caller(&md_of(&Bearer::new(Some("r-secret")).unwrap()))
            .unwrap()
            .unwrap();
        assert!(root.admin && root.may_access("alice"));
        let wrong = t
            .caller(&md_of(&Bearer::new(Some("guess")).unwrap()))
            .unwrap_err();
        assert_eq!(wrong.code(), tonic::Code::Unauthenticated);
        let none = t.caller(&md_of(&Bearer::default())).unwrap_err();
        assert_eq!(none.code(), tonic::Code::Unauthenticated);
        assert!(none.message().contains("authorization"));
        assert_eq!(Tokens::default().caller(&MetadataMap::new()).unwrap(), None);
    }

    #[test]
    fn shared_secrets_compare_whole_tokens() {
        let s = SharedSecret::new(Some("cluster-key".into()));
        assert!(
            s.check(&md_of(&Bearer::new(Some("cluster-key")).unwrap()), "agents")
                .is_ok()
        );
        for t in ["cluster-ke", "cluster-key2", "x"] {
            let e = s
                .check(&md_of(&Bearer::new(Some(t)).unwrap()), "agents")
                .unwrap_err();
            assert_eq!(e.code(), tonic::Code::Unauthenticated);
        }
        assert!(
            s.check(&MetadataMap::new(), "agents")
                .unwrap_err()
                .message()
                .contains("agents")
        );
        assert!(
            SharedSecret::default()
                .check(&MetadataMap::new(), "agents")
                .is_ok()
        );
    }

    #[test]
    fn bad_token_settings_name_their_key() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("tok");
        std::fs::write(&f, "  file-secret \nignored\n").unwrap();
        assert_eq!(
            read_secret(None, Some(&f), "auth.agent_token")
                .unwrap()
                .as_deref(),
            Some("file-secret")
        );
        let e = read_secret(Some("a"), Some(&f), "auth.agent_token").unwrap_err();
        assert!(e.to_string().starts_with("auth.agent_token: "));
        let e = read_secret(None, Some(&dir.path().join("nope")), "auth.meta_token").unwrap_err();
        assert!(e.to_string().starts_with("auth.meta_token_file: reading"));
        assert!(read_secret(Some("has space"), None, "k").is_err());
        let dup = UserToken {
            user: "u".into(),
            token: Some("t".into()),
            token_file: None,
            admin: false,
        };
        let e = Tokens::new(&[
            dup.clone(),
            UserToken {
                user: "v".into(),
                ..dup
            },
        ])
        .unwrap_err();
        assert!(e.to_string().contains("auth.users[1].token"));
    }
}
