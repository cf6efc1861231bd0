//! Receiving a stream of a blob's chunks into a [`Blobs`] store (a site taking a push, an agent
//! reading its site's cache): the chunks are written and hashed on a thread of their own, up to
//! [`DEPTH`] of them waiting, while the next ones come off the network, so that receiving and
//! writing overlap instead of taking turns (a transfer is paced by the slower of the two, not by
//! their sum); a large blob is hashed on a third thread, beside its writes. The store's rules hold as for one append at a time: only the bytes after the
//! partial copy are taken, and the blob becomes visible only once whole and checked.

use crate::blobs::{BlobError, Blobs, CHUNK, Held};
use crate::v1;
use tokio_stream::{Stream, StreamExt as _};

/// Chunks received and not yet written, at most (8 MiB: the stream's flow-control window).
pub const DEPTH: usize = 8;

/// From this size on, a blob's digest is computed on a thread of its own, beside its writes
/// ([`crate::blobs::Appender::overlapped`]).
pub const OVERLAP: u64 = 16 << 20;

/// Why a received blob is not complete.
#[derive(Debug, thiserror::Error)]
pub enum IntakeError {
    /// The stream broke, or sent a chunk larger than [`CHUNK`]: what was written is kept, to be
    /// resumed.
    #[error("{}", .0.message())]
    Stream(tonic::Status),
    /// The store refused: a digest mismatch (the copy dropped), a chunk past the end, the disk.
    #[error("{0}")]
    Store(#[from] BlobError),
}

/// Receives blob `sha` of `size` bytes into `store`: `first` (a chunk already taken off the
/// stream, if any), then the chunks of `rest`, until the blob is complete or the stream ends.
/// What the store holds then (complete or not: a short stream leaves a partial copy that a
/// later transfer resumes). Returns only once every chunk received is written, so that no later
/// transfer of the same blob finds its partial copy still growing.
pub async fn receive<S>(
    store: &Blobs,
    sha: &str,
    size: u64,
    first: Option<v1::BlobChunk>,
    rest: &mut S,
) -> Result<Held, IntakeError>
where
    S: Stream<Item = Result<v1::BlobChunk, tonic::Status>> + Unpin,
{
    let (tx, mut rx) = tokio::sync::mpsc::channel::<v1::BlobChunk>(DEPTH);
    let (store, sha_owned) = (store.clone(), sha.to_owned());
    let writer = tokio::task::spawn_blocking(move || -> Result<Held, BlobError> {
        let mut a = store.appender(&sha_owned, size)?;
        if size >= OVERLAP {
            a = a.overlapped();
        }
        if size == 0 {
            // An empty content has no chunk to complete it.
            return a.append(0, &[]);
        }
        while let Some(c) = rx.blocking_recv() {
            let h = a.append_owned(c.offset, c.data)?;
            if h.complete {
                return Ok(h);
            }
        }
        Ok(a.held())
    });
    let mut broke = None;
    let mut next = first;
    loop {
        let c = match next.take() {
            Some(c) => c,
            None => match rest.next().await {
                Some(Ok(c)) => c,
                Some(Err(e)) => {
                    broke = Some(e);
                    break;
                }
                None => break,
            },
        };
        if c.data.len() > CHUNK {
            broke = Some(tonic::Status::invalid_argument(format!(
                "field `data`: {} bytes, at most {CHUNK} in one chunk",
                c.data.len()
            )));
            break;
        }
        // A closed channel: the writer is done (complete, or refused).
        if tx.send(c).await.is_err() {
            break;
        }
    }
    drop(tx);
    let held = writer
        .await
        .map_err(|e| IntakeError::Store(BlobError::Io(std::io::Error::other(e.to_string()))))??;
    match broke {
        Some(e) if !held.complete => Err(IntakeError::Stream(e)),
        _ => Ok(held),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sha2::{Digest, Sha256};

    fn chunks(data: &[u8], sha: &str, from: usize, size: usize) -> Vec<v1::BlobChunk> {
        (data[from..].chunks(size).enumerate())
            .map(|(i, d)| v1::BlobChunk {
                sha256: sha.to_owned(),
                offset: (from + i * size) as u64,
                data: d.to_vec(),
                size: data.len() as u64,
                name: String::new(),
            })
            .collect()
    }

    #[tokio::test]
    async fn a_stream_is_written_whole_resumed_after_a_break_and_checked() {
        let dir = tempfile::tempdir().unwrap();
        let store = Blobs::open(dir.path()).unwrap();
        let data: Vec<u8> = (0..(3 * CHUNK + 77) as u32)
            .map(|i| (i % 253) as u8)
            .collect();
        let sha: String = Sha256::digest(&data)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let size = data.len() as u64;
        // Two chunks, then the stream breaks: they are kept, and the error says so.
        let mut all = chunks(&data, &sha, 0, CHUNK);
        let mut broken = tokio_stream::iter(
            all.drain(..2)
                .map(Ok)
                .chain([Err(tonic::Status::unavailable("cut"))]),
        );
        let e = receive(&store, &sha, size, None, &mut broken)
            .await
            .unwrap_err();
        assert!(matches!(e, IntakeError::Stream(_)), "{e}");
        assert_eq!(store.held(&sha).unwrap().have, 2 * CHUNK as u64);
        assert_eq!(store.size(&sha), None, "not visible while partial");
        // Resumed from an earlier offset (resent bytes are skipped), the first chunk given apart.
        let mut again = chunks(&data, &sha, CHUNK, 1000);
        let first = again.remove(0);
        let mut rest = tokio_stream::iter(again.into_iter().map(Ok));
        let held = receive(&store, &sha, size, Some(first), &mut rest)
            .await
            .unwrap();
        assert!(held.complete && held.have == size);
        assert_eq!(std::fs::read(store.path(&sha)).unwrap(), data);
        // Wrong bytes under a digest are dropped, never visible.
        let other = vec![1u8; 10];
        let mut wrong =
            tokio_stream::iter(chunks(&other, &"ab".repeat(32), 0, 4).into_iter().map(Ok));
        let e = receive(&store, &"ab".repeat(32), 10, None, &mut wrong)
            .await
            .unwrap_err();
        assert!(
            matches!(e, IntakeError::Store(BlobError::Mismatch { .. })),
            "{e}"
        );
        // An oversized chunk is refused; an empty content completes without a chunk.
        let mut big = tokio_stream::iter([Ok(v1::BlobChunk {
            data: vec![0; CHUNK + 1],
            size: 2 * CHUNK as u64,
            sha256: "cd".repeat(32),
            ..Default::default()
        })]);
        let e = receive(&store, &"cd".repeat(32), 2 * CHUNK as u64, None, &mut big)
            .await
            .unwrap_err();
        assert!(e.to_string().contains("at most"), "{e}");
        let empty: String = Sha256::digest(b"")
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let mut none = tokio_stream::iter(Vec::<Result<v1::BlobChunk, tonic::Status>>::new());
        assert!(
            receive(&store, &empty, 0, None, &mut none)
                .await
                .unwrap()
                .complete
        );
    }
}
