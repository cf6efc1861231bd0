//! The inputs of `gridctl submit --input`: a URL is passed on for the job's site to fetch; a
//! local file is uploaded to the meta-scheduler (`Upload`, streamed in 1 MiB chunks) and named
//! by the digest it answers; a local directory is uploaded file by file, each under the
//! directory's name and its path inside it.

use gridsched_proto::v1;
use std::path::{Path, PathBuf};

/// Marks, inside `gridctl`, an input still to be uploaded (`url` holds the marker and the local
/// path until [`upload_all`] replaces it; a NUL byte can be in no URL).
const LOCAL: &str = "\0local:";

/// An `--input` argument as an input of the spec (a local one still to be uploaded).
pub fn parse(arg: &str) -> anyhow::Result<v1::StagedInput> {
    let is_url = ["http://", "https://", "file://"]
        .iter()
        .any(|p| arg.starts_with(p));
    if is_url {
        let (url, sha) = match arg.split_once("#sha256=") {
            Some((u, h)) => (u, h.to_ascii_lowercase()),
            None => (arg, String::new()),
        };
        let name = url
            .split(['?', '#'])
            .next()
            .and_then(|u| u.rsplit('/').next())
            .filter(|n| !n.is_empty())
            .ok_or_else(|| {
                anyhow::anyhow!("--input {arg}: the URL ends in `/`; no file name to give it")
            })?;
        return Ok(v1::StagedInput {
            name: name.to_owned(),
            sha256: sha,
            url: url.to_owned(),
            size: 0,
            site: String::new(),
        });
    }
    // `PATH:NAME`, unless the whole argument names a file.
    let (path, name) = match arg.rsplit_once(':') {
        Some((p, n)) if !Path::new(arg).exists() && !n.is_empty() => (p, Some(n.to_owned())),
        _ => (arg, None),
    };
    let path = PathBuf::from(path);
    if !path.exists() {
        anyhow::bail!("--input {arg}: no such file or directory");
    }
    let name = match name {
        Some(n) => n,
        None => path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .ok_or_else(|| anyhow::anyhow!("--input {arg}: give it a name (`PATH:NAME`)"))?,
    };
    Ok(v1::StagedInput {
        name,
        sha256: String::new(),
        url: format!("{LOCAL}{}", path.display()),
        size: 0,
        site: String::new(),
    })
}

/// Uploads the local inputs of `spec` (and of its workflow's nodes) through `c`.
pub async fn upload_all(c: &mut crate::Client, spec: &mut v1::JobSpec) -> anyhow::Result<()> {
    upload_in(c, spec).await?;
    if let Some(w) = spec.workflow.as_mut() {
        for n in &mut w.nodes {
            if let Some(j) = n.job.as_mut() {
                upload_in(c, j).await?;
            }
        }
    }
    Ok(())
}

async fn upload_in(c: &mut crate::Client, spec: &mut v1::JobSpec) -> anyhow::Result<()> {
    let mut out = Vec::with_capacity(spec.stage_in.len());
    for i in std::mem::take(&mut spec.stage_in) {
        let Some(path) = i.url.strip_prefix(LOCAL) else {
            out.push(i);
            continue;
        };
        let path = PathBuf::from(path);
        for (file, name) in files(&path, &i.name)? {
            let (sha256, size) = upload(c, &file, &name).await?;
            out.push(v1::StagedInput {
                name,
                sha256,
                url: String::new(),
                size,
                site: String::new(),
            });
        }
    }
    spec.stage_in = out;
    Ok(())
}

/// The files under `path` with their names under `name`: itself, or a directory's files.
fn files(path: &Path, name: &str) -> anyhow::Result<Vec<(PathBuf, String)>> {
    if !path.is_dir() {
        return Ok(vec![(path.to_owned(), name.to_owned())]);
    }
    let mut out = Vec::new();
    let mut rd: Vec<_> = std::fs::read_dir(path)
        .map_err(|e| anyhow::anyhow!("--input {}: {e}", path.display()))?
        .collect::<Result<_, _>>()?;
    rd.sort_by_key(|e| e.file_name());
    for e in rd {
        let sub = format!("{name}/{}", e.file_name().to_string_lossy());
        out.extend(files(&e.path(), &sub)?);
    }
    Ok(out)
}

/// Uploads one file: its digest and size.
pub(crate) async fn upload(
    c: &mut crate::Client,
    file: &Path,
    name: &str,
) -> anyhow::Result<(String, u64)> {
    use tokio::io::AsyncReadExt;
    let mut f = tokio::fs::File::open(file)
        .await
        .map_err(|e| anyhow::anyhow!("--input {}: {e}", file.display()))?;
    let (tx, rx) = tokio::sync::mpsc::channel::<v1::BlobChunk>(4);
    let name_owned = name.to_owned();
    let reader = tokio::spawn(async move {
        let mut offset = 0u64;
        loop {
            let mut data = vec![0; gridsched_proto::blobs::CHUNK];
            let mut n = 0;
            while n < data.len() {
                let got = f.read(&mut data[n..]).await?;
                if got == 0 {
                    break;
                }
                n += got;
            }
            data.truncate(n);
            let first = offset == 0;
            let chunk = v1::BlobChunk {
                offset,
                data,
                name: if first {
                    name_owned.clone()
                } else {
                    String::new()
                },
                ..Default::default()
            };
            offset += n as u64;
            // The first chunk goes even when empty: it names the file.
            if (n > 0 || first) && tx.send(chunk).await.is_err() {
                break;
            }
            if n == 0 || n < gridsched_proto::blobs::CHUNK {
                break;
            }
        }
        std::io::Result::Ok(())
    });
    let r = c
        .upload(tokio_stream::wrappers::ReceiverStream::new(rx))
        .await
        .map_err(|s| anyhow::anyhow!("uploading {}: {}", file.display(), s.message()))?
        .into_inner();
    reader
        .await?
        .map_err(|e| anyhow::anyhow!("reading {}: {e}", file.display()))?;
    eprintln!(
        "uploaded {name} ({} bytes, sha256 {})",
        r.size,
        &r.sha256[..12.min(r.sha256.len())]
    );
    Ok((r.sha256, r.size))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_input_is_a_url_to_fetch_or_a_local_path_to_upload() {
        let u = parse("http://data.example/sets/big.csv#sha256=ABCD").unwrap();
        assert_eq!(
            (u.name.as_str(), u.url.as_str(), u.sha256.as_str()),
            ("big.csv", "http://data.example/sets/big.csv", "abcd")
        );
        assert!(parse("https://data.example/dir/").is_err());
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("in.txt");
        std::fs::write(&f, "x").unwrap();
        let l = parse(&format!("{}:data/in.txt", f.display())).unwrap();
        assert_eq!(l.name, "data/in.txt");
        assert!(l.url.starts_with(LOCAL));
        assert_eq!(parse(f.to_str().unwrap()).unwrap().name, "in.txt");
        let e = parse("/no/such/file").unwrap_err().to_string();
        assert!(e.contains("no such file"), "{e}");
        std::fs::create_dir(dir.path().join("d")).unwrap();
        std::fs::write(dir.path().join("d/b"), "b").unwrap();
        std::fs::write(dir.path().join("d/a"), "a").unwrap();
        let names: Vec<String> = files(&dir.path().join("d"), "d")
            .unwrap()
            .into_iter()
            .map(|f| f.1)
            .collect();
        assert_eq!(names, ["d/a", "d/b"]);
    }
}
