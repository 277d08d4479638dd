#!/usr/bin/env bash
# Builds the service and every plugin, and lays out a folder that runs as
# it is (the Dockerfile copies it to /opt/outcomes; docs/operations.md#install):
#
#   bin/outcomes                  the binary
#   bin/outcomes-entrypoint       migrate, then serve (deploy/entrypoint.sh)
#   bin/outcomes-healthcheck      asks the local port for /health (deploy/healthcheck.sh)
#   questionnaires/<key>/questionnaire.toml
#   protocols/<key>.toml
#   plugins/<name>/<name>.wasm    with the plugin's fixtures/ (its self-test)
#   deploy/                       systemd unit, example configuration, PostgreSQL role scripts
#
# Definitions and plugins are found relative to the working directory (the
# defaults ./questionnaires, ./protocols, ./plugins), so run the service
# from this folder, as the image and deploy/outcomes.service do.
#
# Usage: deploy/build-dist.sh [--profile release|dev] [--out DIR]
# The image builds the release profile. CI builds the dev profile, which
# reuses what its tests built, and starts the result (`cargo xtask dist`).
set -euo pipefail
cd "$(dirname "$0")/.."

profile=release
out=target/dist
while [ $# -gt 0 ]; do
    case "$1" in
        --profile) profile="${2:?--profile needs a value}"; shift 2 ;;
        --out) out="${2:?--out needs a folder}"; shift 2 ;;
        *) echo "usage: deploy/build-dist.sh [--profile release|dev] [--out DIR]" >&2; exit 2 ;;
    esac
done
target_dir="${CARGO_TARGET_DIR:-target}"
case "$profile" in
    dev) profile_dir=debug ;;
    *) profile_dir="$profile" ;;
esac

# Plugins: every crate under questionnaires/ and calculators/, folder name =
# package name, in one cargo invocation, as `cargo xtask plugins` builds
# them (xtask/src/plugins.rs; the profile `plugin` is in Cargo.toml).
plugins=()
for manifest in questionnaires/*/Cargo.toml calculators/*/Cargo.toml; do
    if [ -f "$manifest" ]; then
        plugins+=("$(basename "$(dirname "$manifest")")")
    fi
done
[ "${#plugins[@]}" -gt 0 ] || { echo "no plugin crates under questionnaires/ or calculators/" >&2; exit 1; }
packages=()
for name in "${plugins[@]}"; do
    packages+=(--package "$name")
done
echo "building ${#plugins[@]} plugins (wasm32-unknown-unknown, profile plugin)" >&2
cargo build --locked --target wasm32-unknown-unknown --profile plugin "${packages[@]}"
echo "building the host (profile $profile)" >&2
cargo build --locked --package host --bin outcomes --profile "$profile"

rm -rf "$out"
mkdir -p "$out/bin" "$out/questionnaires" "$out/protocols" "$out/plugins" "$out/deploy"
install -m 0755 "$target_dir/$profile_dir/outcomes" "$out/bin/outcomes"
install -m 0755 deploy/entrypoint.sh "$out/bin/outcomes-entrypoint"
install -m 0755 deploy/healthcheck.sh "$out/bin/outcomes-healthcheck"
for definition in questionnaires/*/questionnaire.toml; do
    key="$(basename "$(dirname "$definition")")"
    install -D -m 0644 "$definition" "$out/questionnaires/$key/questionnaire.toml"
done
install -m 0644 protocols/*.toml "$out/protocols/"
for name in "${plugins[@]}"; do
    crate_dir="questionnaires/$name"
    [ -d "$crate_dir" ] || crate_dir="calculators/$name"
    install -D -m 0644 "$target_dir/wasm32-unknown-unknown/plugin/${name//-/_}.wasm" \
        "$out/plugins/$name/$name.wasm"
    mkdir -p "$out/plugins/$name/fixtures"
    for fixture in "$crate_dir"/fixtures/*.json; do
        if [ -f "$fixture" ]; then
            install -m 0644 "$fixture" "$out/plugins/$name/fixtures/"
        fi
    done
done
install -m 0644 deploy/outcomes.service deploy/outcomes.toml \
    deploy/postgres-roles.sql deploy/postgres-grants.sql "$out/deploy/"
echo "assembled $out: $("$out/bin/outcomes" --version)" >&2
