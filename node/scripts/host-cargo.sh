#!/usr/bin/env bash
# The `cargo` that `napi build` runs (through the CARGO variable, see package.json): napi always
# asks for `--target <triple>`, which makes cargo build everything — llama.cpp included — a
# second time under target/<triple>/. For the host's own triple this drops `--target` and the
# `--target-dir` napi passes, so the addon is built into the workspace's target/release/ beside
# everything else (one build of llama.cpp), then links the artifact where napi looks for it
# (<napi target dir>/<triple>/<profile>/). Any other target goes to cargo unchanged.
set -euo pipefail

real_cargo=${NUCLEUS_REAL_CARGO:-cargo}
# napi hands the type-definition folder over as given on its command line (relative to this
# directory), but rustc expands the macros that write into it from the workspace root: make it
# absolute, or index.d.ts comes out empty.
if [ -n "${NAPI_TYPE_DEF_TMP_FOLDER:-}" ]; then
    NAPI_TYPE_DEF_TMP_FOLDER=$(realpath -m "$NAPI_TYPE_DEF_TMP_FOLDER")
    export NAPI_TYPE_DEF_TMP_FOLDER
fi
host=$(rustc -vV | sed -n 's/^host: //p')
args=() triple="" napi_dir="" profile=debug
while [ $# -gt 0 ]; do
    case "$1" in
        --target) triple=$2; shift 2 ;;
        --target-dir) napi_dir=$2; shift 2 ;;
        --release) profile=release; args+=("$1"); shift ;;
        --profile) profile=$2; [ "$profile" = dev ] && profile=debug; args+=("$1" "$2"); shift 2 ;;
        *) args+=("$1"); shift ;;
    esac
done
if [ -n "$triple" ] && [ "$triple" != "$host" ]; then
    exec "$real_cargo" "${args[@]}" --target "$triple" ${napi_dir:+--target-dir "$napi_dir"}
fi
unset CARGO
"$real_cargo" "${args[@]}"
if [ -n "$triple" ] && [ -n "$napi_dir" ]; then
    workspace_dir=$("$real_cargo" metadata --format-version 1 --no-deps |
        sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
    lib=libnucleus_node.so
    mkdir -p "$napi_dir/$triple/$profile"
    ln -sf "$workspace_dir/$profile/$lib" "$napi_dir/$triple/$profile/$lib"
fi
