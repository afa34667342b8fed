//! The short-lived memory of what a cache lacks (Nix's
//! `narinfo-cache-negative-ttl`): a network cache that answered that it has
//! no sample of a key is not asked about that key again for `negative-ttl`
//! seconds, so repeated `plan`s and `run`s cost no round trip per missing
//! run. Only a definite "none" is remembered, never a failure (a timeout, a
//! 5xx, a refusal), and `--refresh` asks again at once.
//!
//! ```text
//! <store>/cache/lacks/<first 16 hex of sha256(location)>/<run key>   the Unix time it was asked
//! ```

use std::path::{Path, PathBuf};

use super::location::Location;
use crate::key::RunKey;

/// Nix's default for `narinfo-cache-negative-ttl`.
pub const DEFAULT_NEGATIVE_TTL: u64 = 3600;

/// How long a cache's "no sample of this key" is believed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Recall {
    /// Seconds; 0 remembers nothing.
    pub negative_ttl: u64,
    /// Ask again whatever is remembered (`--refresh`), and remember anew.
    pub refresh: bool,
}

impl Default for Recall {
    fn default() -> Self {
        Self {
            negative_ttl: DEFAULT_NEGATIVE_TTL,
            refresh: false,
        }
    }
}

/// Whether an answer given at `asked` still holds at `now` (pure). A time
/// ahead of `now` (a clock set back) is not believed.
pub fn still_holds(asked: u64, now: u64, ttl: u64) -> bool {
    asked <= now && now - asked < ttl
}

/// The memory of one store.
#[derive(Debug, Clone)]
pub struct Lacks {
    dir: PathBuf,
    recall: Recall,
}

impl Lacks {
    pub fn new(store_root: &Path, recall: Recall) -> Self {
        Self {
            dir: store_root.join("cache").join("lacks"),
            recall,
        }
    }

    /// A directory is read on every ask: a look-up there costs what reading
    /// the memory would.
    fn applies(&self, location: &Location) -> bool {
        location.is_network() && self.recall.negative_ttl > 0
    }

    fn path(&self, location: &Location, key: &RunKey) -> PathBuf {
        let hash = crate::digest::sha256_hex(location.to_string().as_bytes());
        self.dir.join(&hash[..16]).join(key.as_str())
    }

    /// Whether `location` said it had no sample of `key` within the TTL.
    pub fn known(&self, location: &Location, key: &RunKey) -> bool {
        if !self.applies(location) || self.recall.refresh {
            return false;
        }
        fs_err::read_to_string(self.path(location, key))
            .ok()
            .and_then(|text| text.trim().parse().ok())
            .is_some_and(|asked| {
                still_holds(asked, crate::clock::unix_now(), self.recall.negative_ttl)
            })
    }

    /// `location` has no sample of `key` now. The memory only saves a round
    /// trip, so failing to write it is not an error.
    pub fn remember(&self, location: &Location, key: &RunKey) {
        if !self.applies(location) {
            return;
        }
        // Written only into a store perfpipe marked: never into a directory
        // that is not a store, and never creating one.
        let store_root = self.dir.parent().and_then(Path::parent);
        if !store_root.is_some_and(crate::store::is_marked) {
            return;
        }
        let path = self.path(location, key);
        // Not a result: no fsync, as losing it only costs a round trip.
        let now = crate::clock::unix_now().to_string();
        let _ = crate::atomic_write::AtomicWrite::new().write(&path, now.as_bytes());
    }

    /// `location` has samples of `key` (again): nothing to remember.
    pub fn forget(&self, location: &Location, key: &RunKey) {
        if self.applies(location) {
            let _ = fs_err::remove_file(self.path(location, key));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_holds_for_the_ttl_and_not_from_the_future() {
        assert!(still_holds(100, 100, 3600));
        assert!(still_holds(100, 3699, 3600));
        assert!(!still_holds(100, 3700, 3600));
        assert!(!still_holds(200, 100, 3600));
        assert!(!still_holds(100, 100, 0));
    }

    #[test]
    fn only_network_caches_are_remembered_and_refresh_asks_again() {
        let dir = tempfile::tempdir().unwrap();
        let key = RunKey::of_canonical("material");
        let web = Location::parse("http://127.0.0.1:1/c").unwrap();
        let unmarked = Lacks::new(dir.path(), Recall::default());
        unmarked.remember(&web, &key);
        assert!(
            !dir.path().join("cache").exists(),
            "only into a marked store"
        );
        crate::store::testing::mark(dir.path());
        let other = Location::parse("http://127.0.0.1:2/c").unwrap();
        let lacks = Lacks::new(dir.path(), Recall::default());
        assert!(!lacks.known(&web, &key));
        lacks.remember(&web, &key);
        assert!(lacks.known(&web, &key));
        assert!(!lacks.known(&other, &key), "per location");
        let refresh = Recall {
            refresh: true,
            ..Recall::default()
        };
        assert!(!Lacks::new(dir.path(), refresh).known(&web, &key));
        lacks.forget(&web, &key);
        assert!(!lacks.known(&web, &key));

        let local = Location::parse(dir.path().join("c").to_str().unwrap()).unwrap();
        lacks.remember(&local, &key);
        assert!(!lacks.known(&local, &key));
    }
}
