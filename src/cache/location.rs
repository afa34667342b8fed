//! Where a cache is: a directory, the same tree on a static web server
//! (read-only) or in an S3 bucket (`s3://bucket/prefix`, src/cache/s3.rs),
//! or an OCI registry (`oci://host/repository`).
//!
//! Every kind holds the same objects, and a key's samples are found by ONE
//! read of ONE object named by the run key (as Nix reads `<hash>.narinfo`),
//! never by listing: the key's *index*. A missing index is "no sample".
//!
//! ```text
//! directory, web server, S3 bucket (under its prefix; no index.json):
//! <cache>/oci-layout                 {"imageLayoutVersion": "1.0.0"}
//! <cache>/index.json                 the layout's index, written empty once (keys are not
//!                                    listed there: rewriting one list of every sample on
//!                                    each push would make pushing N samples cost N²)
//! <cache>/blobs/sha256/<hex>         key material, results, logs, sample manifests
//! <cache>/keys/<run key>.json        the key's index (below): the one object read per key
//!
//! OCI registry (distribution API):
//! manifests/<run key>                the key's index, tagged by the run key (64 hex)
//! manifests/sha256:<hex>             each sample manifest (the index's children)
//! blobs/sha256:<hex>                 key material, results, logs
//! ```
//!
//! A key's index is an OCI image index (`application/vnd.oci.image.index.v1+json`,
//! `artifactType` `application/vnd.perfpipe.samples.v1`, annotation
//! `dev.perfpipe.key` = the run key) with one descriptor per sample:
//!
//! ```text
//! { "mediaType": "application/vnd.oci.image.manifest.v1+json",
//!   "artifactType": "application/vnd.perfpipe.sample.v2",
//!   "digest": "sha256:<sha256 of the sample manifest>", "size": <its bytes>,
//!   "data": "<base64 of the sample manifest>",          (OCI 1.1 embedded data)
//!   "annotations": { "dev.perfpipe.signatures":
//!       "[{\"signer\":\"NAME:base64\",\"signature\":\"base64\"}, …]" } }
//! ```
//!
//! A sample manifest is signer-independent (the same bytes whoever pushes
//! it): an OCI image manifest, `artifactType` `application/vnd.perfpipe.sample.v2`,
//! config the key material, layers `result.json` and each `logs/NAME`
//! (`org.opencontainers.image.title`), annotations `dev.perfpipe.statement`
//! and `dev.perfpipe.outcome` (`success` or `failure`: what `plan` counts the
//! sample as; `run` refuses a result that says otherwise).
//! Signatures (ed25519 over the statement) live only in the index, so a new
//! key adds a signature without changing any content (`cache sign`).
//!
//! Writing a sample: its blobs, then its manifest, then the key's index
//! (read, the sample or signature added, written back): a reader never sees
//! an index naming what is missing. A directory updates an index under
//! `<cache>/.lock`; a bucket writes it only if it is still the version read
//! (`If-Match` its ETag, `If-None-Match: *` for a new one), else reads it
//! again (`remote.rs`); a registry has no compare-and-swap, so two pushes
//! of one key at the same moment may lose one's entry (pushing again
//! restores it).

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
    /// A bucket and prefix, asked as a directory that is never listed.
    S3(super::s3::Bucket),
}

impl Location {
    /// `oci://HOST/REPO`, `s3://BUCKET/PREFIX`, `http(s)://…`,
    /// `file://PATH` or a path.
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
        if let Some(rest) = text.strip_prefix("s3://") {
            return super::s3::Bucket::parse(rest)
                .map(Self::S3)
                .map_err(|why| bad(&why));
        }
        if text.starts_with("http://") || text.starts_with("https://") {
            return Ok(Self::Http(text.trim_end_matches('/').to_owned()));
        }
        if text.contains("://") && !text.starts_with("file://") {
            return Err(bad(
                "a cache is a directory, an http(s):// URL, oci://HOST/REPOSITORY or s3://BUCKET/PREFIX",
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
            // The host its requests go to, as a web server's.
            Self::S3(bucket) => Self::Http(bucket.base()).host(),
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
            Self::S3(bucket) => bucket.fmt(f),
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
        let s3 = Location::parse("s3://team-cache/perf?endpoint=http://127.0.0.1:9000").unwrap();
        assert_eq!(s3.host().as_deref(), Some("127.0.0.1:9000"));
        assert!(s3.is_network());
        // A bucket without `endpoint=` takes AWS's host, or the `AWS_*`
        // variables' endpoint: `s3::tests`, with the environment given.
        assert!(Location::parse("s3://Bucket").is_err());
        assert!(Location::parse("gs://bucket").is_err());
        assert!(Location::parse("oci://localhost:5000").is_err());
    }
}
