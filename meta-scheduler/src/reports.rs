//! The accounting reports answered to clients: `Usage` (sreport-like sums over a period, from
//! the rollups) and `History` (sacct-like records of the jobs that ended in a period), read from
//! the store (see [`crate::accounting`]), with the client API's per-user visibility.

use crate::accounting;
use crate::store::{RecordFilter, Store};
use gridsched_proto::v1;
use gridsched_security::Caller;
use tonic::Status;

/// Candidates a history page looks at before it answers with what it found and a token to go
/// on from (a filter on a rare site or state over a long period).
const HISTORY_BUDGET: usize = 20_000;

/// The largest page of a history.
const HISTORY_MAX: usize = 10_000;

/// The period of a request: until now (this second included) and since a day before `until` by
/// default; `until` after `since`.
fn period(since: Option<i64>, until: Option<i64>, now: i64) -> Result<(i64, i64), Status> {
    let until = until.unwrap_or(now + 1);
    let since = since.unwrap_or(until - accounting::DAY);
    if until <= since {
        return Err(Status::invalid_argument(format!(
            "field `until`: {until} is not after `since` ({since})"
        )));
    }
    Ok((since, until))
}

/// `Usage`: the rollups of the period, summed per key. A caller who is not an admin (with
/// `[auth]` users) may sum by user only, and sees their own row.
pub fn usage(
    store: &Store,
    caller: Option<&Caller>,
    req: v1::UsageRequest,
    now: i64,
) -> Result<v1::UsageResponse, Status> {
    let by = match req.by() {
        v1::UsageBy::Unspecified => v1::UsageBy::User,
        b => b,
    };
    let own = match caller {
        Some(c) if !c.admin => {
            if by != v1::UsageBy::User {
                return Err(Status::permission_denied(format!(
                    "field `by`: only an admin sees the usage by {}; a user sees their own, by user",
                    by.as_str_name()
                        .trim_start_matches("USAGE_BY_")
                        .to_lowercase()
                )));
            }
            Some(c.user.as_str())
        }
        _ => None,
    };
    let (since, until) = period(req.since, req.until, now)?;
    let (since, until) = accounting::hours(since, until);
    let rows = store
        .reader()
        .map_err(Status::from)?
        .usage(by as i32, &accounting::spans(since, until))
        .map_err(Status::from)?;
    Ok(v1::UsageResponse {
        since,
        until,
        rows: rows
            .into_iter()
            .filter(|(k, _)| own.is_none_or(|u| k == u))
            .map(|(k, s)| s.row(k))
            .collect(),
    })
}

/// `History`: one page of the records of the jobs that ended in the period. A caller who is
/// not an admin sees only their own.
pub fn history(
    store: &Store,
    caller: Option<&Caller>,
    req: v1::HistoryRequest,
    now: i64,
) -> Result<v1::HistoryResponse, Status> {
    let user = crate::access::user_filter(caller, req.user)?;
    let (since, until) = period(req.since, req.until, now)?;
    let after = if req.page_token.is_empty() {
        (i64::MIN, 0)
    } else {
        req.page_token
            .split_once('.')
            .and_then(|(e, i)| Some((e.parse().ok()?, i.parse().ok()?)))
            .ok_or_else(|| Status::invalid_argument("field `page_token`: not a token of ours"))?
    };
    let limit = match req.limit {
        0 => 100,
        n => (n as usize).min(HISTORY_MAX),
    };
    let f = RecordFilter {
        since,
        until,
        user: user.as_deref(),
        account: req.account.as_deref(),
        site: req.site.as_deref(),
        states: &req.states,
    };
    let page = store
        .reader()
        .map_err(Status::from)?
        .records(&f, after, limit + 1, HISTORY_BUDGET)
        .map_err(Status::from)?;
    let mut records = page.records;
    let next = if records.len() > limit {
        records.truncate(limit);
        records.last().map(|r| (r.end_time, r.job))
    } else {
        page.looked_to
    };
    Ok(v1::HistoryResponse {
        records,
        next_page_token: next.map_or_else(String::new, |(e, i)| format!("{e}.{i}")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{StoreConfig, Write};

    /// A store holding the records of ann's job 1 and bob's job 2, both run from 100 to 200.
    fn store(dir: &std::path::Path) -> Store {
        let s = Store::open(dir, &StoreConfig::default()).unwrap();
        let rec = |job: u64, user: &str| v1::UsageRecord {
            job,
            user: user.into(),
            processors: 1,
            parts: vec![v1::UsagePart {
                site: "alpha".into(),
                machine: "m".into(),
                processors: 1,
                start_time: 100,
                end_time: 200,
            }],
            start_time: Some(100),
            end_time: 200,
            wall_s: 100,
            processor_seconds: 100,
            ..Default::default()
        };
        s.commit(&Write {
            records: vec![rec(1, "ann"), rec(2, "bob")],
            ..Default::default()
        })
        .unwrap();
        s
    }

    /// With `[auth]` users, a user sees their own records and usage row, and no other
    /// dimension; an admin sees everyone's; a period that ends before it starts is refused.
    #[test]
    fn a_user_sees_their_own_accounting_and_an_admin_everyones() {
        let dir = tempfile::tempdir().unwrap();
        let s = store(dir.path());
        let ann = Caller {
            user: "ann".into(),
            admin: false,
        };
        let root = Caller {
            user: "root".into(),
            admin: true,
        };
        let all = v1::HistoryRequest {
            since: Some(0),
            ..Default::default()
        };
        let jobs = |c: &Caller| -> Vec<u64> {
            history(&s, Some(c), all.clone(), 1_000)
                .unwrap()
                .records
                .iter()
                .map(|r| r.job)
                .collect()
        };
        assert_eq!(jobs(&ann), vec![1]);
        assert_eq!(jobs(&root), vec![1, 2]);
        let bob = v1::HistoryRequest {
            user: Some("bob".into()),
            ..all.clone()
        };
        let e = history(&s, Some(&ann), bob, 1_000).unwrap_err();
        assert_eq!(e.code(), tonic::Code::PermissionDenied);
        let by = |b: v1::UsageBy| v1::UsageRequest {
            by: b.into(),
            since: Some(0),
            until: None,
        };
        let keys = |c: Option<&Caller>, b| -> Vec<(String, u64)> {
            usage(&s, c, by(b), 1_000)
                .unwrap()
                .rows
                .into_iter()
                .map(|r| (r.key, r.processor_seconds))
                .collect()
        };
        assert_eq!(
            keys(Some(&ann), v1::UsageBy::User),
            vec![("ann".into(), 100)]
        );
        assert_eq!(keys(None, v1::UsageBy::User).len(), 2);
        assert_eq!(
            keys(Some(&root), v1::UsageBy::Site),
            vec![("alpha".into(), 200)]
        );
        let e = usage(&s, Some(&ann), by(v1::UsageBy::Account), 1_000).unwrap_err();
        assert_eq!(e.code(), tonic::Code::PermissionDenied);
        assert!(e.message().contains("field `by`"), "{}", e.message());
        let backwards = v1::HistoryRequest {
            since: Some(500),
            until: Some(100),
            ..Default::default()
        };
        let e = history(&s, None, backwards, 1_000).unwrap_err();
        assert_eq!(e.code(), tonic::Code::InvalidArgument);
        assert!(e.message().contains("field `until`"), "{}", e.message());
        let e = history(
            &s,
            None,
            v1::HistoryRequest {
                page_token: "x".into(),
                ..Default::default()
            },
            1_000,
        )
        .unwrap_err();
        assert!(
            e.message().contains("field `page_token`"),
            "{}",
            e.message()
        );
    }

    /// A history of one record a page: the first page's token leads to the second, whose
    /// token is empty.
    #[test]
    fn a_history_goes_on_from_its_page_token() {
        let dir = tempfile::tempdir().unwrap();
        let s = store(dir.path());
        let page = |token: String| {
            let req = v1::HistoryRequest {
                since: Some(0),
                limit: 1,
                page_token: token,
                ..Default::default()
            };
            let r = history(&s, None, req, 1_000).unwrap();
            (
                r.records.iter().map(|r| r.job).collect::<Vec<_>>(),
                r.next_page_token,
            )
        };
        let (first, token) = page(String::new());
        assert_eq!((first, token.as_str()), (vec![1], "200.1"));
        assert_eq!(page(token), (vec![2], String::new()));
    }
}
