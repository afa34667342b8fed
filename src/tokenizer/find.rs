//! Where a model's `tokenizer.json` is on this machine: the model id as a
//! directory, or the Hugging Face cache (`HF_HUB_CACHE`, else `HF_HOME/hub`,
//! else `~/.cache/huggingface/hub`), at the revision's snapshot.

use std::path::PathBuf;

pub fn find_tokenizer_json(model: &str, revision: &str) -> Option<PathBuf> {
    let direct = PathBuf::from(model);
    if direct.is_file() && direct.file_name().is_some_and(|n| n == "tokenizer.json") {
        return Some(direct);
    }
    if direct.join("tokenizer.json").is_file() {
        return Some(direct.join("tokenizer.json"));
    }
    let hub = hub_cache()?;
    let repo = hub.join(format!("models--{}", model.replace('/', "--")));
    let commit = fs_err::read_to_string(repo.join("refs").join(revision))
        .map(|c| c.trim().to_owned())
        .unwrap_or_else(|_| revision.to_owned());
    let at_revision = repo.join("snapshots").join(commit).join("tokenizer.json");
    if at_revision.is_file() {
        return Some(at_revision);
    }
    // Any snapshot that has one, in a stable order.
    let mut snapshots: Vec<PathBuf> = fs_err::read_dir(repo.join("snapshots"))
        .ok()?
        .filter_map(|e| Some(e.ok()?.path().join("tokenizer.json")))
        .filter(|p| p.is_file())
        .collect();
    snapshots.sort();
    snapshots.into_iter().next()
}

/// The Hugging Face hub cache: `HF_HUB_CACHE`, else `HF_HOME/hub`, else
/// `~/.cache/huggingface/hub` (as `huggingface_hub` finds it).
pub fn hub_cache() -> Option<PathBuf> {
    if let Ok(dir) = std::env::var("HF_HUB_CACHE") {
        return Some(dir.into());
    }
    if let Ok(home) = std::env::var("HF_HOME") {
        return Some(PathBuf::from(home).join("hub"));
    }
    let home = std::env::var("HOME").ok()?;
    Some(PathBuf::from(home).join(".cache/huggingface/hub"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[expect(clippy::disallowed_methods, reason = "builds a fake hub cache")]
    fn finds_the_revision_snapshot_in_a_hub_cache_and_model_directories() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("models--Qwen--Qwen3-14B");
        fs_err::create_dir_all(repo.join("refs")).unwrap();
        fs_err::create_dir_all(repo.join("snapshots/abc123")).unwrap();
        std::fs::write(repo.join("refs/main"), "abc123\n").unwrap();
        std::fs::write(repo.join("snapshots/abc123/tokenizer.json"), "{}").unwrap();
        // SAFETY: this test alone reads HF_HUB_CACHE.
        unsafe { std::env::set_var("HF_HUB_CACHE", dir.path()) };
        assert_eq!(
            find_tokenizer_json("Qwen/Qwen3-14B", "main"),
            Some(repo.join("snapshots/abc123/tokenizer.json"))
        );
        assert_eq!(find_tokenizer_json("Qwen/Other", "main"), None);
        let model_dir = repo.join("snapshots/abc123");
        assert_eq!(
            find_tokenizer_json(model_dir.to_str().unwrap(), "main"),
            Some(model_dir.join("tokenizer.json"))
        );
        unsafe { std::env::remove_var("HF_HUB_CACHE") };
    }
}
