#!/usr/bin/env bash
# A crate outside the workspace that depends on the library by path (and on
# serde_json, as the README's set-up says), as a study would: it builds and
# runs the README's library example, and its dependency tree holds none of
# the command line's crates.
set -euo pipefail
cd "$(dirname "$0")/.."
kit="$PWD/kit"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
mkdir -p "$dir/src"
cat > "$dir/Cargo.toml" <<TOML
[package]
name = "study"
version = "0.1.0"
edition = "2021"
publish = false

[dependencies]
flashkit = { path = "$kit" }
serde_json = "1"

[workspace]
TOML
# The workspace's lock file pins the same versions the kit is tested with.
cp Cargo.lock "$dir/"
{
    echo "fn main() {"
    awk '/^## Use as a library/ {on = 1} on && /^```rust/ {code = 1; next} code && /^```/ {exit} code' README.md
    echo "}"
} > "$dir/src/main.rs"
tree=$(cargo tree --manifest-path "$dir/Cargo.toml" -e normal --prefix none)
for cli in clap plotters indicatif; do
    if grep -q "^$cli " <<<"$tree"; then
        echo "the library pulls $cli into a study" >&2
        exit 1
    fi
done
CARGO_TARGET_DIR="$PWD/target/outside" cargo run --quiet --manifest-path "$dir/Cargo.toml"
