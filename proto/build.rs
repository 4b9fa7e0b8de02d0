//! Generates the prost messages (always) and the tonic services (feature `grpc`) from
//! the `*.proto` files at the crate root (`proto/admin.proto`, …), with the protoc shipped by the protoc-bin-vendored crate. PROTOC is never
//! set in the environment: the path goes to prost-build's Config for this invocation only.

use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = PathBuf::from(".");
    let files = ["state.proto", "peer.proto", "admin.proto"].map(|f| dir.join(f));
    // tonic-prost-build prints no rerun-if-changed lines of its own.
    for f in &files {
        println!("cargo:rerun-if-changed={}", f.display());
    }
    println!("cargo:rerun-if-changed=build.rs");

    let grpc = std::env::var_os("CARGO_FEATURE_GRPC").is_some();
    let mut config = prost_build::Config::new();
    config.protoc_executable(protoc_bin_vendored::protoc_bin_path()?);
    tonic_prost_build::configure()
        .build_server(grpc)
        .build_client(grpc)
        .compile_with_config(config, &files, &[dir])?;
    Ok(())
}
