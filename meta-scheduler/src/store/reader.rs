//! Reads of the history in the store: one job, its decision, a token's job, the finished jobs
//! of a list page through the indexes, and the jobs newest first (to rebuild the classifier of
//! a store written before it kept a snapshot).

use super::{
    BY_CLUSTER, BY_SITE, BY_STATE, BY_USER, DECISIONS, FinishedPage, JOBS, Reader, StoreError,
    TOKENS, decode_decision, err,
};
use crate::history::Filter;
use crate::state::Decision;
use gridsched_proto::v1;
use prost::Message;
use redb::{ReadableTable, TableDefinition};

/// Ids ascending from one index range, or an error.
type Ids<'a> = Box<dyn Iterator<Item = Result<u64, StoreError>> + 'a>;

impl Reader {
    /// Job `id`, if the store has it.
    pub fn job(&self, id: u64) -> Result<Option<v1::Job>, StoreError> {
        let t = self.0.open_table(JOBS).map_err(err)?;
        t.get(id)
            .map_err(err)?
            .map(|v| v1::Job::decode(v.value()).map_err(err))
            .transpose()
    }

    /// How job `id` was classified and dispatched, if recorded.
    pub fn decision(&self, id: u64) -> Result<Option<Decision>, StoreError> {
        let t = self.0.open_table(DECISIONS).map_err(err)?;
        t.get(id)
            .map_err(err)?
            .map(|v| decode_decision(v.value()))
            .transpose()
    }

    /// The job an idempotency key (`user \0 token`) was given to.
    pub fn token(&self, key: &str) -> Result<Option<u64>, StoreError> {
        let t = self.0.open_table(TOKENS).map_err(err)?;
        Ok(t.get(key).map_err(err)?.map(|v| v.value()))
    }

    /// The first `want` finished jobs past id `after` that `f` lets through, looking at no more
    /// than `budget` candidates of the most selective index the filter names (user, site,
    /// cluster, else the states').
    pub fn finished(
        &self,
        f: &Filter<'_>,
        after: u64,
        want: usize,
        budget: usize,
    ) -> Result<FinishedPage, StoreError> {
        let states = f.finished_states();
        let mut page = FinishedPage::default();
        if states.is_empty() || want == 0 {
            return Ok(page);
        }
        let from = after.saturating_add(1);
        let by_name =
            |table: TableDefinition<(&str, u64), ()>, name: &str| -> Result<Ids<'_>, StoreError> {
                let t = self.0.open_table(table).map_err(err)?;
                let range = t.range((name, from)..=(name, u64::MAX)).map_err(err)?;
                Ok(Box::new(
                    range.map(|r| r.map(|(k, _)| k.value().1).map_err(err)),
                ))
            };
        let mut sources: Vec<Ids<'_>> = Vec::new();
        if let Some(u) = f.user {
            sources.push(by_name(BY_USER, u)?);
        } else if let Some(s) = f.site {
            sources.push(by_name(BY_SITE, s)?);
        } else if let Some(c) = f.cluster {
            sources.push(by_name(BY_CLUSTER, c)?);
        } else {
            let t = self.0.open_table(BY_STATE).map_err(err)?;
            for s in states {
                let range = t.range((s, from)..=(s, u64::MAX)).map_err(err)?;
                sources.push(Box::new(
                    range.map(|r| r.map(|(k, _)| k.value().1).map_err(err)),
                ));
            }
        }
        let jobs = self.0.open_table(JOBS).map_err(err)?;
        let mut heads: Vec<Option<u64>> = Vec::with_capacity(sources.len());
        for s in &mut sources {
            heads.push(s.next().transpose()?);
        }
        let mut looked = 0;
        let mut last = None;
        // Merges the ascending sources: the least head next, each id once.
        while let Some(id) = heads.iter().flatten().min().copied() {
            for (k, h) in heads.iter_mut().enumerate() {
                if *h == Some(id) {
                    *h = sources[k].next().transpose()?;
                }
            }
            if last == Some(id) {
                continue;
            }
            last = Some(id);
            if looked == budget {
                page.looked_to = Some(id - 1);
                break;
            }
            looked += 1;
            let Some(v) = jobs.get(id).map_err(err)? else {
                continue;
            };
            let job = v1::Job::decode(v.value()).map_err(err)?;
            if f.matches(&job) {
                page.jobs.push(job);
                if page.jobs.len() == want {
                    break;
                }
            }
        }
        Ok(page)
    }

    /// Calls `f` with the stored jobs, newest first, until it answers false.
    pub fn newest_first(&self, mut f: impl FnMut(v1::Job) -> bool) -> Result<(), StoreError> {
        let t = self.0.open_table(JOBS).map_err(err)?;
        for row in t.iter().map_err(err)?.rev() {
            let (_, v) = row.map_err(err)?;
            if !f(v1::Job::decode(v.value()).map_err(err)?) {
                break;
            }
        }
        Ok(())
    }
}
