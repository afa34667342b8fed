//! Where a cache is: a directory (an OCI image layout plus a tag list per
//! key), the same tree on a static web server (read-only), or an OCI
//! registry (`oci://host/repository`).
//!
//! ```text
//! <cache>/oci-layout                 {"imageLayoutVersion": "1.0.0"}
//! <cache>/index.json                 every sample's manifest, tagged (org.opencontainers.image.ref.name)
//! <cache>/blobs/sha256/<hex>         key material, results, logs, manifests
//! <cache>/keys/<run key>.json        {"<tag>": "sha256:<manifest digest>"}: a key's samples,
//!                                    read where nothing lists files (a web server)
//! ```

use std::fmt;
use std::path::PathBuf;

use super::Error;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    Dir(PathBuf),
    /// A base URL, without a trailing `/`.
    Http(String),
    /// A registry and repository, as `lock` addresses them.
    Oci(crate::oci::ImageRef),
}

impl Location {
    /// `oci://HOST/REPO`, `http(s)://…`, `file://PATH` or a path.
    pub fn parse(text: &str) -> Result<Self, Error> {
        let bad = |why: &str| Error::Location {
            location: text.to_owned(),
            why: why.to_owned(),
        };
        if let Some(rest) = text.strip_prefix("oci://") {
            let image =
                crate::oci::ImageRef::parse(&format!("{rest}:cache")).map_err(|e| bad(&e))?;
            if !rest.contains('/') {
                return Err(bad("an OCI cache is `oci://HOST/REPOSITORY`"));
            }
            return Ok(Self::Oci(image));
        }
        if text.starts_with("http://") || text.starts_with("https://") {
            return Ok(Self::Http(text.trim_end_matches('/').to_owned()));
        }
        if text.contains("://") && !text.starts_with("file://") {
            return Err(bad(
                "a cache is a directory, an http(s):// URL or oci://HOST/REPOSITORY",
            ));
        }
        let path = text.strip_prefix("file://").unwrap_or(text);
        if path.is_empty() {
            return Err(bad("empty"));
        }
        Ok(Self::Dir(PathBuf::from(path)))
    }

    /// The `host[:port]` its credentials are kept under; none for a directory.
    pub fn host(&self) -> Option<String> {
        match self {
            Self::Dir(_) => None,
            Self::Http(url) => {
                let url = reqwest::Url::parse(url).ok()?;
                let host = url.host_str()?;
                Some(match url.port() {
                    Some(port) => format!("{host}:{port}"),
                    None => host.to_owned(),
                })
            }
            Self::Oci(image) => Some(image.registry.clone()),
        }
    }

    /// Whether asking it takes the network (not under `--offline`).
    pub fn is_network(&self) -> bool {
        !matches!(self, Self::Dir(_))
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Dir(path) => write!(f, "{}", path.display()),
            Self::Http(url) => f.write_str(url),
            Self::Oci(image) => write!(f, "oci://{}/{}", image.registry, image.repository),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_are_directories_urls_and_registries() {
        assert_eq!(
            Location::parse("/srv/cache").unwrap(),
            Location::Dir("/srv/cache".into())
        );
        assert_eq!(
            Location::parse("file:///srv/cache").unwrap(),
            Location::Dir("/srv/cache".into())
        );
        assert_eq!(
            Location::parse("https://c.example/p/").unwrap(),
            Location::Http("https://c.example/p".into())
        );
        let oci = Location::parse("oci://localhost:5000/team/results").unwrap();
        assert_eq!(oci.to_string(), "oci://localhost:5000/team/results");
        assert!(oci.is_network());
        assert_eq!(oci.host().as_deref(), Some("localhost:5000"));
        let web = Location::parse("https://c.example/p").unwrap();
        assert_eq!(web.host().as_deref(), Some("c.example"));
        assert!(!Location::parse("cache").unwrap().is_network());
        assert!(Location::parse("s3://bucket").is_err());
        assert!(Location::parse("oci://localhost:5000").is_err());
    }
}
