//! Build script: compiles the `.proto` files of `proto/` into Rust with the pure-Rust `protox`
//! compiler (no system `protoc` needed) and `tonic-prost-build`, and saves the encoded
//! `FileDescriptorSet` for gRPC reflection.

use prost::Message;
use std::path::{Path, PathBuf};
use std::{env, fs, io};

/// Root of the proto tree; files import each other relative to it (`gridsched/v1/job.proto`).
const PROTO_ROOT: &str = "proto";

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed={PROTO_ROOT}");
    let mut files = Vec::new();
    collect_protos(Path::new(PROTO_ROOT), &mut files)?;
    files.sort();
    for f in &files {
        println!("cargo:rerun-if-changed={}", f.display());
    }

    let fds = protox::compile(&files, [PROTO_ROOT])?;

    let out_dir = PathBuf::from(env::var("OUT_DIR")?);
    fs::write(
        out_dir.join("gridsched_descriptor.bin"),
        fds.encode_to_vec(),
    )?;

    tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        .compile_fds(fds)?;
    Ok(())
}

/// Appends every `.proto` file under `dir` (recursively) to `out`.
fn collect_protos(dir: &Path, out: &mut Vec<PathBuf>) -> io::Result<()> {
    for entry in fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            collect_protos(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "proto") {
            out.push(path);
        }
    }
    Ok(())
}
