// The package version. `cargo xtask build-wasm` rewrites this file in web/pkg/ with the
// workspace version (Cargo.toml, [workspace.package]), the one source of the version; the
// source tree's copy says that it is unbuilt.
export const version = '0.0.0-source';
