//! Random prompts kept from one benchmark to the next: building them costs
//! each prompt a decode and a re-encode with the model's tokenizer, or
//! several (as vLLM builds them), and a rerun with the same settings gets the
//! same prompts byte for byte.
//!
//! The cache is in the user's cache directory (`$XDG_CACHE_HOME/perfpipe/prompts`,
//! else `~/.cache/perfpipe/prompts`), not in a store: `perfpipe bench` runs
//! outside any project, and prompts are a pure function of their settings,
//! the same for every store. A file is named by the sha256 of everything that
//! decides the prompts (the tokenizer's sha256, lengths, range ratio, seed,
//! count, the generator's version and perfpipe's, whose tokenizers crate
//! decodes them) and begins with the sha256 of its content: a file that is
//! truncated, corrupt or of another key is ignored and built again.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::dataset::{BenchRequest, Shape};
use crate::tokenizer::Tokenizer;

/// Bump when the random prompts' construction changes (2: vLLM 0.32's,
/// numpy's generator; 3: each asks for exactly its output length).
const GENERATOR_VERSION: u32 = 3;

/// Where prompts are kept, if anywhere.
#[derive(Debug, Clone, Default)]
pub struct PromptCache {
    dir: Option<PathBuf>,
}

/// What decides a set of random prompts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RandomPrompts {
    pub tokenizer: String,
    /// Absent when 0: the prompts cached before prefixes keep their files.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub prefix_len: u32,
    pub input_len: u32,
    pub output_len: u32,
    pub range_ratio: f64,
    pub seed: u64,
    pub count: u32,
}

#[derive(PartialEq, Serialize, Deserialize)]
struct Key {
    generator: u32,
    perfpipe: String,
    random: RandomPrompts,
}

#[derive(Deserialize)]
struct OnDisk {
    key: Key,
    prompts: Vec<BenchRequest>,
}

#[derive(Serialize)]
struct ToDisk<'a> {
    key: Key,
    prompts: &'a [BenchRequest],
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl PromptCache {
    /// The user's cache directory (`XDG_CACHE_HOME`, else `~/.cache`);
    /// none when neither is set.
    pub fn user() -> Self {
        let base = std::env::var_os("XDG_CACHE_HOME")
            .filter(|d| !d.is_empty())
            .map(PathBuf::from)
            .or_else(|| Some(PathBuf::from(std::env::var_os("HOME")?).join(".cache")));
        Self {
            dir: base.map(|b| b.join("perfpipe").join("prompts")),
        }
    }

    /// Prompts kept in `dir`.
    pub fn at(dir: &Path) -> Self {
        Self {
            dir: Some(dir.to_path_buf()),
        }
    }

    /// The prompts `settings` decide, when kept and whole.
    pub fn read(&self, settings: &RandomPrompts) -> Option<Vec<BenchRequest>> {
        let bytes = crate::regular_file::read(&self.path(settings)?).ok()?;
        let (sum, body) = bytes.split_at_checked(64)?;
        let body = body.strip_prefix(b"\n")?;
        if hex::decode(sum).ok()? != Sha256::digest(body).as_slice() {
            return None;
        }
        let on_disk: OnDisk = serde_json::from_slice(body).ok()?;
        let whole =
            on_disk.key == key(settings) && on_disk.prompts.len() == settings.count as usize;
        whole.then_some(on_disk.prompts)
    }

    /// Keeps `prompts` for `settings`; a cache that cannot be written is
    /// skipped (the next run builds them again).
    pub fn write(&self, settings: &RandomPrompts, prompts: &[BenchRequest]) {
        let Some(path) = self.path(settings) else {
            return;
        };
        let on_disk = ToDisk {
            key: key(settings),
            prompts,
        };
        let Ok(body) = serde_json::to_vec(&on_disk) else {
            return;
        };
        let mut file = hex::encode(Sha256::digest(&body)).into_bytes();
        file.push(b'\n');
        file.extend_from_slice(&body);
        let _ = crate::atomic_write::AtomicWrite::new().write(&path, &file);
    }

    fn path(&self, settings: &RandomPrompts) -> Option<PathBuf> {
        let key = serde_json::to_vec(&key(settings)).expect("a key is plain data");
        let name = format!("random-{}.json", hex::encode(Sha256::digest(key)));
        Some(self.dir.as_ref()?.join(name))
    }
}

fn key(settings: &RandomPrompts) -> Key {
    Key {
        generator: GENERATOR_VERSION,
        perfpipe: env!("CARGO_PKG_VERSION").to_owned(),
        random: settings.clone(),
    }
}

/// [`crate::dataset::random`]'s prompts, from `cache` when it has them
/// (then `true`), else built and kept there.
pub fn random(
    cache: &PromptCache,
    tokenizer: &Tokenizer,
    shape: Shape,
    seed: u64,
    count: u32,
) -> (Vec<BenchRequest>, bool) {
    let Shape {
        prefix_len,
        input_len,
        output_len,
        range_ratio,
    } = shape;
    let settings = RandomPrompts {
        tokenizer: tokenizer.id(),
        prefix_len,
        input_len,
        output_len,
        range_ratio,
        seed,
        count,
    };
    if let Some(prompts) = cache.read(&settings) {
        return (prompts, true);
    }
    let prompts = crate::dataset::random(tokenizer, shape, seed, count);
    cache.write(&settings, &prompts);
    (prompts, false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[expect(clippy::disallowed_methods, reason = "damages a cache file")]
    fn cached_prompts_are_those_built_and_a_damaged_file_is_built_again() {
        let dir = tempfile::tempdir().unwrap();
        let cache = PromptCache::at(dir.path());
        let t = Tokenizer::from_file(Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/tokenizer/tokenizer.json"
        )))
        .unwrap();
        let built = crate::dataset::random(&t, Shape::unprefixed(64, 8, 0.5), 7, 30);
        let (first, reused) = random(&cache, &t, Shape::unprefixed(64, 8, 0.5), 7, 30);
        assert_eq!((first.as_slice(), reused), (built.as_slice(), false));
        let (again, reused) = random(&cache, &t, Shape::unprefixed(64, 8, 0.5), 7, 30);
        assert_eq!((again.as_slice(), reused), (built.as_slice(), true));
        // Any other setting is another file.
        assert!(!random(&cache, &t, Shape::unprefixed(64, 8, 0.5), 8, 30).1);
        assert!(!random(&cache, &t, Shape::unprefixed(64, 8, 0.25), 7, 30).1);
        assert!(
            !random(
                &cache,
                &Tokenizer::Whitespace,
                Shape::unprefixed(64, 8, 0.5),
                7,
                30
            )
            .1
        );

        let settings = RandomPrompts {
            tokenizer: t.id(),
            prefix_len: 0,
            input_len: 64,
            output_len: 8,
            range_ratio: 0.5,
            seed: 7,
            count: 30,
        };
        let path = cache.path(&settings).unwrap();
        let whole = std::fs::read(&path).unwrap();
        let flipped = {
            let mut b = whole.clone();
            let at = b.len() / 2;
            b[at] ^= 1;
            b
        };
        let damaged: [&[u8]; 4] = [&whole[..whole.len() - 10], &flipped, b"", &whole[..64]];
        for damaged in damaged {
            std::fs::write(&path, damaged).unwrap();
            assert_eq!(cache.read(&settings), None);
            let (rebuilt, reused) = random(&cache, &t, Shape::unprefixed(64, 8, 0.5), 7, 30);
            assert_eq!((rebuilt.as_slice(), reused), (built.as_slice(), false));
            assert_eq!(std::fs::read(&path).unwrap(), whole, "written again");
        }
    }
}
