//! A job's step in the engine's image through Pyxis/enroot (`container =
//! "pyxis"`): the image by digest in enroot's form (`REGISTRY#IMAGE@sha256:…`,
//! Docker Hub's without a registry), the store and the perfpipe binary
//! mounted at their own paths, and perfpipe in the container starting the
//! engine as a local process (`realise --engine-here`). `srun`'s
//! arguments are Pyxis's as its usage documents them
//! (<https://github.com/NVIDIA/pyxis/wiki/Usage>). (pure)

use std::path::{Path, PathBuf};

use super::options::Unplaceable;

/// How a job's step runs in the engine's image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PyxisStep {
    /// The image as `--container-image` takes it.
    pub image: String,
    /// Paths mounted at themselves (`--container-mounts=SRC:SRC`).
    pub mounts: Vec<PathBuf>,
    /// The working directory in the container (the store).
    pub workdir: PathBuf,
}

impl PyxisStep {
    /// The step of a launch whose engine image is `image` (a Docker
    /// reference, pinned by digest), reaching `store` through `program`.
    pub fn new(image: Option<&str>, store: &Path, program: &Path) -> Result<Self, Unplaceable> {
        let image = image.ok_or(Unplaceable::NoImage)?;
        let image = enroot_image(image).ok_or_else(|| Unplaceable::NotByDigest {
            image: image.to_owned(),
        })?;
        let mounts = vec![store.to_owned(), program.to_owned()];
        for path in &mounts {
            mountable(path)?;
        }
        Ok(Self {
            image,
            mounts,
            workdir: store.to_owned(),
        })
    }

    /// `srun`'s arguments for the step, each one argument.
    pub fn srun_args(&self) -> Vec<String> {
        let mounts: Vec<String> = self
            .mounts
            .iter()
            .map(|p| format!("{0}:{0}", p.display()))
            .collect();
        vec![
            "--ntasks=1".to_owned(),
            format!("--container-image={}", self.image),
            format!("--container-mounts={}", mounts.join(",")),
            format!("--container-workdir={}", self.workdir.display()),
            // Nothing of the user's home: the image and the store only.
            "--no-container-mount-home".to_owned(),
        ]
    }
}

/// A path Pyxis can mount as `SRC:DST`: absolute, without the `,` and `:`
/// that separate its mounts, nor a byte a shell would read.
fn mountable(path: &Path) -> Result<(), Unplaceable> {
    let text = path.to_str().unwrap_or("");
    let fine = path.is_absolute()
        && !text.is_empty()
        && !text
            .chars()
            .any(|c| matches!(c, ',' | ':') || c.is_control() || c.is_whitespace());
    if fine {
        Ok(())
    } else {
        Err(Unplaceable::Unmountable {
            path: path.display().to_string(),
        })
    }
}

/// A Docker reference pinned by digest (`[REGISTRY/]REPO[:TAG]@sha256:HEX`)
/// as enroot names it: `REGISTRY#REPO@sha256:HEX`, Docker Hub's without a
/// registry (enroot's default); the tag is dropped, as the digest names
/// the image and enroot does not read both. `None` without a digest.
pub fn enroot_image(reference: &str) -> Option<String> {
    let (name, digest) = reference.split_once("@sha256:")?;
    let hex_digest = digest.len() == 64 && digest.bytes().all(|b| b.is_ascii_hexdigit());
    if !hex_digest || name.is_empty() {
        return None;
    }
    // A tag is after the last `/` (a registry's port is before it).
    let untagged = match name.rsplit_once('/') {
        Some((path, last)) => match last.split_once(':') {
            Some((repo, _tag)) => format!("{path}/{repo}"),
            None => name.to_owned(),
        },
        None => name.split(':').next().unwrap_or(name).to_owned(),
    };
    let (registry, repo) = match untagged.split_once('/') {
        Some((first, rest))
            if first.contains('.') || first.contains(':') || first == "localhost" =>
        {
            (Some(first), rest.to_owned())
        }
        _ => (None, untagged.clone()),
    };
    let valid = |s: &str| {
        !s.is_empty()
            && s.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"._-/".contains(&b))
    };
    if !valid(&repo) {
        return None;
    }
    Some(match registry {
        Some("docker.io" | "index.docker.io" | "registry-1.docker.io") | None => {
            format!("{repo}@sha256:{digest}")
        }
        Some(registry) => {
            let registry_ok = registry
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b".-:".contains(&b));
            if !registry_ok {
                return None;
            }
            format!("{registry}#{repo}@sha256:{digest}")
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIGEST: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    #[test]
    fn images_take_enroots_form_by_digest() {
        let cases = [
            (
                "vllm/vllm-openai:v0.11.0@sha256:",
                "vllm/vllm-openai@sha256:",
            ),
            (
                "docker.io/vllm/vllm-openai@sha256:",
                "vllm/vllm-openai@sha256:",
            ),
            ("ubuntu:24.04@sha256:", "ubuntu@sha256:"),
            (
                "nvcr.io/nvidia/tritonserver:25.01-trtllm-python-py3@sha256:",
                "nvcr.io#nvidia/tritonserver@sha256:",
            ),
            (
                "registry.example.com:5000/team/engine:1@sha256:",
                "registry.example.com:5000#team/engine@sha256:",
            ),
            ("localhost/engine@sha256:", "localhost#engine@sha256:"),
        ];
        for (docker, enroot) in cases {
            assert_eq!(
                enroot_image(&format!("{docker}{DIGEST}")),
                Some(format!("{enroot}{DIGEST}")),
                "{docker}"
            );
        }
        for unpinned in [
            "vllm/vllm-openai:v0.11.0".to_owned(),
            "vllm/vllm-openai@sha256:00".to_owned(),
            format!("@sha256:{DIGEST}"),
            format!("Evil Name@sha256:{DIGEST}"),
            format!("a/b,c@sha256:{DIGEST}"),
        ] {
            assert_eq!(enroot_image(&unpinned), None, "{unpinned}");
        }
    }

    #[test]
    fn the_step_mounts_the_store_and_perfpipe_and_nothing_of_home() {
        let image = format!("nvcr.io/nvidia/vllm:25.09-py3@sha256:{DIGEST}");
        let step = PyxisStep::new(
            Some(&image),
            Path::new("/shared/store"),
            Path::new("/opt/perfpipe/bin/perfpipe"),
        )
        .unwrap();
        assert_eq!(
            step.srun_args(),
            [
                "--ntasks=1".to_owned(),
                format!("--container-image=nvcr.io#nvidia/vllm@sha256:{DIGEST}"),
                "--container-mounts=/shared/store:/shared/store,/opt/perfpipe/bin/perfpipe:/opt/perfpipe/bin/perfpipe".to_owned(),
                "--container-workdir=/shared/store".to_owned(),
                "--no-container-mount-home".to_owned(),
            ]
        );
        let store = Path::new("/s");
        let program = Path::new("/p");
        assert_eq!(
            PyxisStep::new(None, store, program),
            Err(Unplaceable::NoImage)
        );
        assert!(matches!(
            PyxisStep::new(Some("vllm/vllm-openai:v0.11.0"), store, program),
            Err(Unplaceable::NotByDigest { .. })
        ));
        assert!(matches!(
            PyxisStep::new(Some(&image), Path::new("/a,b:c"), program),
            Err(Unplaceable::Unmountable { .. })
        ));
    }
}
