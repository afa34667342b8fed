//! An image reference, split as the distribution API addresses it, and the
//! URLs of that API. (pure)

/// An image reference split as the distribution API addresses it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageRef {
    /// `docker.io`, `nvcr.io`, `localhost:5000`.
    pub registry: String,
    /// `vllm/vllm-openai` (`library/ubuntu` for Docker Hub's official images).
    pub repository: String,
    /// A tag, or a `sha256:` digest.
    pub reference: String,
}

impl ImageRef {
    /// Parses as docker does: the first component names a registry when it
    /// has a `.` or a `:` or is `localhost`; otherwise Docker Hub.
    pub fn parse(text: &str) -> Result<Self, String> {
        let bad =
            || format!("`{text}` is not an image reference such as `vllm/vllm-openai:v0.11.0`");
        let (name, digest) = match text.split_once('@') {
            Some((name, digest)) => (name, Some(digest)),
            None => (text, None),
        };
        let (name, tag) = match name.rfind(':') {
            Some(i) if !name[i..].contains('/') => (&name[..i], &name[i + 1..]),
            _ => (name, "latest"),
        };
        let (registry, repository) = match name.split_once('/') {
            Some((first, rest))
                if first.contains('.') || first.contains(':') || first == "localhost" =>
            {
                (first.to_owned(), rest.to_owned())
            }
            _ if name.contains('/') => ("docker.io".to_owned(), name.to_owned()),
            _ => ("docker.io".to_owned(), format!("library/{name}")),
        };
        let valid = |s: &str| {
            !s.is_empty()
                && s.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"._-/:".contains(&b))
        };
        if !valid(&registry)
            || !valid(&repository)
            || !valid(tag)
            || repository.contains("..")
            || repository.split('/').any(str::is_empty)
        {
            return Err(bad());
        }
        Ok(Self {
            registry,
            repository,
            reference: digest.unwrap_or(tag).to_owned(),
        })
    }

    /// Where the API answers: Docker Hub's API host; plain HTTP on loopback
    /// (as docker treats `localhost` registries), HTTPS elsewhere.
    pub fn api_base(&self) -> String {
        let host = self
            .registry
            .rsplit_once(':')
            .map_or(self.registry.as_str(), |(h, _)| h);
        match self.registry.as_str() {
            "docker.io" => "https://registry-1.docker.io".into(),
            _ if host == "localhost" || host.starts_with("127.") || host == "[::1]" => {
                format!("http://{}", self.registry)
            }
            _ => format!("https://{}", self.registry),
        }
    }

    /// The reference that names exactly `digest`.
    pub fn pinned(&self, digest: &str) -> String {
        format!("{}/{}@{digest}", self.registry, self.repository)
    }

    /// The manifest `reference` (a tag or a digest) of this repository.
    pub fn manifest_url(&self, reference: &str) -> String {
        format!(
            "{}/v2/{}/manifests/{reference}",
            self.api_base(),
            self.repository
        )
    }

    /// The blob `digest` of this repository.
    pub fn blob_url(&self, digest: &str) -> String {
        format!("{}/v2/{}/blobs/{digest}", self.api_base(), self.repository)
    }

    /// Where an upload of a blob to this repository starts.
    pub fn uploads_url(&self) -> String {
        format!("{}/v2/{}/blobs/uploads/", self.api_base(), self.repository)
    }

    /// The first page of this repository's tags (up to 1000).
    pub fn tags_url(&self) -> String {
        format!(
            "{}/v2/{}/tags/list?n=1000",
            self.api_base(),
            self.repository
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_are_read_as_docker_reads_them() {
        let cases = [
            (
                "vllm/vllm-openai:v0.11.0",
                "docker.io",
                "vllm/vllm-openai",
                "v0.11.0",
                "https://registry-1.docker.io",
            ),
            (
                "ubuntu",
                "docker.io",
                "library/ubuntu",
                "latest",
                "https://registry-1.docker.io",
            ),
            (
                "nvcr.io/nvidia/tensorrt-llm/release:1.2.0rc1",
                "nvcr.io",
                "nvidia/tensorrt-llm/release",
                "1.2.0rc1",
                "https://nvcr.io",
            ),
            (
                "localhost:5000/x/y:t",
                "localhost:5000",
                "x/y",
                "t",
                "http://localhost:5000",
            ),
            (
                "127.0.0.1:5000/y@sha256:ab",
                "127.0.0.1:5000",
                "y",
                "sha256:ab",
                "http://127.0.0.1:5000",
            ),
        ];
        for (text, registry, repository, reference, base) in cases {
            let r = ImageRef::parse(text).unwrap();
            assert_eq!(
                (
                    r.registry.as_str(),
                    r.repository.as_str(),
                    r.reference.as_str()
                ),
                (registry, repository, reference),
                "{text}"
            );
            assert_eq!(r.api_base(), base);
        }
        for bad in ["", "a b:c", "x/../y:z", "x:"] {
            assert!(ImageRef::parse(bad).is_err(), "{bad}");
        }
    }
}
