//! The one client side of the OCI distribution API that perfpipe speaks:
//! image references and their API URLs, the media types of manifests and
//! indexes, and the token handshake (a 401's `WWW-Authenticate: Bearer
//! realm=…` names a token endpoint). `lock` pins image tags to digests
//! with it; the result cache reads and writes its artifacts with it. Who
//! may be shown a login, and how much of an answer is read, is decided by
//! each caller (`cache::Remote` keeps credentials to their origin). (effects)

mod reference;
pub mod token;

pub use reference::ImageRef;

/// An OCI image manifest: what the result cache writes.
pub const OCI_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";

/// Image indexes (manifest lists), OCI's and Docker's.
pub const INDEX_TYPES: &[&str] = &[
    "application/vnd.oci.image.index.v1+json",
    "application/vnd.docker.distribution.manifest.list.v2+json",
];

/// Image manifests, OCI's and Docker's.
pub const MANIFEST_TYPES: &[&str] = &[
    OCI_MANIFEST,
    "application/vnd.docker.distribution.manifest.v2+json",
];
