//! `perfpipe fetch` (and the fetch `run` does first) against a stand-in for
//! the Hugging Face Hub: its `?blobs=true` listing and its `resolve/`
//! downloads, each request counted; images through the stand-in `docker`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Arc;

use axum::Json;
use axum::extract::{Path as UrlPath, RawQuery, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::json;
use sha2::{Digest, Sha256};

use crate::common::hub::{HubLog, HubRequest, IMAGE_DIGEST, hub_cmd, hub_error, hub_experiment};
use crate::common::{
    FIXTURES, TestEnv, assert_secret_absent, files_under, huge_body, runtime, serve, stderr, words,
};

/// The commit the experiments pin Qwen/Qwen3-14B at.
const COMMIT: &str = "8f2c1a9e4b7d3c6f0e5a1b2c3d4e5f60718293a4";
const REPO: &str = "Qwen/Qwen3-14B";

/// One file of the stand-in repository.
#[derive(Clone)]
struct HubFile {
    name: &'static str,
    bytes: Vec<u8>,
    /// Listed with `lfs: {sha256, size}`, as weights are.
    lfs: bool,
}

impl HubFile {
    fn sha256(&self) -> String {
        hex::encode(Sha256::digest(&self.bytes))
    }

    /// `git hash-object`: what the Hub lists as `blobId`.
    fn git_blob_id(&self) -> String {
        let mut sha1 = sha1::Sha1::new();
        sha1.update(format!("blob {}\0", self.bytes.len()).as_bytes());
        sha1.update(&self.bytes);
        hex::encode(sha1.finalize())
    }

    /// Its name under `blobs/`, as huggingface_hub names it.
    fn blob(&self) -> String {
        if self.lfs {
            self.sha256()
        } else {
            self.git_blob_id()
        }
    }
}

fn weights() -> HubFile {
    // 300 kB of bytes no two positions of which repeat soon.
    let bytes = (0..300_000u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    HubFile {
        name: "model.safetensors",
        bytes,
        lfs: true,
    }
}

fn config() -> HubFile {
    HubFile {
        name: "config.json",
        bytes: br#"{"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3"}"#.to_vec(),
        lfs: false,
    }
}

fn tokenizer() -> HubFile {
    HubFile {
        name: "tokenizer.json",
        bytes: std::fs::read(format!("{FIXTURES}/tokenizer/tokenizer.json")).unwrap(),
        lfs: false,
    }
}

/// How the stand-in Hub misbehaves.
#[derive(Clone, Copy, PartialEq)]
enum Fault {
    None,
    /// Sends other bytes (of the right length) for the LFS file.
    CorruptLfs,
    /// Lists the LFS file at 10^18 bytes.
    HugeListing,
    /// Sends a listing of 64 MiB, without a `Content-Length`.
    LongListing,
    /// Sends the LFS file one byte every 20 s the first time it is asked.
    TrickleOnce,
}

/// `REPO` at `COMMIT` only, for a bearer of its log's token only.
struct Hub {
    log: HubLog,
    files: Vec<HubFile>,
    fault: Fault,
}

impl Hub {
    fn start(
        rt: &tokio::runtime::Runtime,
        files: Vec<HubFile>,
        fault: Fault,
    ) -> (Arc<Self>, String) {
        let hub = Arc::new(Self {
            log: HubLog::new(),
            files,
            fault,
        });
        let app = axum::Router::new()
            .route("/api/models/{org}/{name}/revision/{revision}", get(listing))
            .route("/{org}/{name}/resolve/{revision}/{*file}", get(resolve))
            .with_state(Arc::clone(&hub));
        let port = serve(rt, app);
        (hub, format!("http://127.0.0.1:{port}"))
    }

    fn asked(&self) -> Vec<HubRequest> {
        self.log.asked()
    }

    /// Paths of the `resolve/` (download) requests.
    fn downloads(&self) -> Vec<String> {
        self.asked()
            .into_iter()
            .map(|r| r.path)
            .filter(|p| p.contains("/resolve/"))
            .collect()
    }

    /// Records the request; the refusal of one without the token.
    fn refusal(&self, uri: &axum::http::Uri, headers: &HeaderMap) -> Option<Response> {
        let authorized = self.log.record(uri, headers) == Some(self.log.bearer());
        (!authorized).then(|| {
            hub_error(
                StatusCode::UNAUTHORIZED,
                "Invalid credentials in Authorization header",
            )
        })
    }
}

fn not_found() -> Response {
    hub_error(StatusCode::NOT_FOUND, "Repository not found")
}

async fn listing(
    State(hub): State<Arc<Hub>>,
    UrlPath((org, name, revision)): UrlPath<(String, String, String)>,
    RawQuery(query): RawQuery,
    uri: axum::http::Uri,
    headers: HeaderMap,
) -> Response {
    if let Some(refused) = hub.refusal(&uri, &headers) {
        return refused;
    }
    if format!("{org}/{name}") != REPO || revision != COMMIT {
        return not_found();
    }
    assert_eq!(
        query.as_deref(),
        Some("blobs=true"),
        "sizes need ?blobs=true"
    );
    if hub.fault == Fault::LongListing {
        return huge_body(b"{\"sha\":\"", 64 << 20);
    }
    let siblings: Vec<serde_json::Value> = hub
        .files
        .iter()
        .map(|f| {
            let size = if f.lfs && hub.fault == Fault::HugeListing {
                1_000_000_000_000_000_000u64
            } else {
                f.bytes.len() as u64
            };
            let mut sibling = json!({
                "rfilename": f.name,
                "size": size,
                "blobId": f.git_blob_id(),
            });
            if f.lfs {
                sibling["lfs"] = json!({"sha256": f.sha256(), "size": size, "pointerSize": 134});
            }
            sibling
        })
        .collect();
    Json(json!({
        "_id": "661f7e0c3a9b5e3d2c1b0a99",
        "id": REPO,
        "modelId": REPO,
        "sha": COMMIT,
        "private": false,
        "siblings": siblings,
    }))
    .into_response()
}

async fn resolve(
    State(hub): State<Arc<Hub>>,
    UrlPath((org, name, revision, file)): UrlPath<(String, String, String, String)>,
    uri: axum::http::Uri,
    headers: HeaderMap,
) -> Response {
    if let Some(refused) = hub.refusal(&uri, &headers) {
        return refused;
    }
    let Some(found) = hub.files.iter().find(|f| f.name == file) else {
        return not_found();
    };
    if format!("{org}/{name}") != REPO || revision != COMMIT {
        return not_found();
    }
    let mut bytes = found.bytes.clone();
    let asked = hub
        .downloads()
        .iter()
        .filter(|p| p.ends_with(found.name))
        .count();
    if found.lfs && hub.fault == Fault::TrickleOnce && asked == 1 {
        // A byte now, then one every 20 s: each read comes well within any
        // read timeout, and the whole would take 70 days.
        let trickle = futures_util::stream::unfold(0, move |i| {
            let byte = bytes.get(i).copied();
            async move {
                if i > 0 {
                    tokio::time::sleep(std::time::Duration::from_secs(20)).await;
                }
                Some((Ok::<_, std::convert::Infallible>(vec![byte?]), i + 1))
            }
        });
        return axum::body::Body::from_stream(trickle).into_response();
    }
    if found.lfs && hub.fault == Fault::CorruptLfs {
        bytes[1000] ^= 0xff;
    }
    bytes.into_response()
}

/// A one-step experiment whose image and model are pinned as declared, so
/// `lock --offline` pins every input without a registry or a Hub.
fn experiment(revision: &str) -> String {
    hub_experiment(&format!(r#"model "{REPO}" revision="{revision}""#), "local")
}

/// A project with the experiment, locked offline.
fn locked_project(revision: &str) -> TestEnv {
    locked(&experiment(revision))
}

/// A project with `experiment` as `hub.kdl`, locked offline.
fn locked(experiment: &str) -> TestEnv {
    let env = TestEnv::new();
    env.write("hub.kdl", experiment);
    let out = env.run(&["lock", "hub.kdl"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    env
}

/// `perfpipe ARGS` with the stand-in Hub, the token, and a cache of its own.
fn with_hub(env: &TestEnv, hub: &Hub, endpoint: &str, args: &[&str]) -> Command {
    let mut cmd = hub_cmd(env, endpoint, args);
    cmd.env("HF_HOME", env.path("hf"))
        .env("HF_TOKEN", &hub.log.token);
    cmd
}

fn model_dir(env: &TestEnv) -> PathBuf {
    env.path("hf/hub/models--Qwen--Qwen3-14B")
}

fn snapshot(env: &TestEnv) -> PathBuf {
    model_dir(env).join("snapshots").join(COMMIT)
}

/// Names of the entries of `dir` (none when it does not exist), sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Each file is a relative symlink `../../blobs/<blob>` holding its bytes.
fn assert_linked(env: &TestEnv, file: &HubFile) {
    let link = snapshot(env).join(file.name);
    let meta =
        std::fs::symlink_metadata(&link).unwrap_or_else(|e| panic!("{}: {e}", link.display()));
    assert!(
        meta.file_type().is_symlink(),
        "{} is no symlink",
        link.display()
    );
    assert_eq!(
        std::fs::read_link(&link).unwrap(),
        PathBuf::from(format!("../../blobs/{}", file.blob()))
    );
    assert_eq!(std::fs::read(&link).unwrap(), file.bytes, "{}", file.name);
}

#[test]
fn fetch_downloads_a_pinned_model_into_the_hf_cache_once_with_hf_token_as_bearer_which_no_file_holds()
 {
    let rt = runtime();
    let files = vec![weights(), config()];
    let (hub, endpoint) = Hub::start(&rt, files.clone(), Fault::None);
    let env = locked_project(COMMIT);
    let mut outputs = Vec::new();
    let mut fetch = || {
        let out = with_hub(&env, &hub, &endpoint, &["fetch", "hub.kdl"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        outputs.push(out.clone());
        out
    };

    // What interrupted downloads left: a part of the weights, and a blob no
    // listing names any more. The fetch overwrites one and removes the other.
    let blobs = model_dir(&env).join("blobs");
    std::fs::create_dir_all(&blobs).unwrap();
    let partial = &weights().bytes[..1000];
    std::fs::write(
        blobs.join(format!("{}.incomplete", weights().blob())),
        partial,
    )
    .unwrap();
    std::fs::write(blobs.join(format!("{}.incomplete", "0".repeat(64))), "x").unwrap();

    let first = fetch();
    for file in &files {
        assert_linked(&env, file);
    }
    let blobs = names(&model_dir(&env).join("blobs"));
    let mut expected: Vec<String> = files.iter().map(HubFile::blob).collect();
    expected.sort();
    assert_eq!(blobs, expected, "no temp file is left beside the blobs");
    assert!(
        !model_dir(&env).join("refs").exists(),
        "refs/ is left alone"
    );
    let text = stderr(&first);
    assert!(
        text.contains(&format!(
            "model.{REPO}@{COMMIT}: 2 of 2 files to download (300.1 kB of 300.1 kB)"
        )),
        "{text}"
    );
    assert!(text.contains("model.safetensors (300.0 kB)"), "{text}");
    assert!(text.contains("free in `"), "{text}");
    assert!(
        text.contains("downloaded 2 files (300.1 kB), each matching the digest"),
        "{text}"
    );
    assert!(
        text.contains("every pinned model is on this machine"),
        "{text}"
    );
    let mut downloads = hub.downloads();
    downloads.sort();
    assert_eq!(
        downloads,
        [
            format!("/{REPO}/resolve/{COMMIT}/config.json"),
            format!("/{REPO}/resolve/{COMMIT}/model.safetensors"),
        ]
    );
    assert_eq!(
        hub.asked()[0],
        HubRequest {
            path: format!("/api/models/{REPO}/revision/{COMMIT}"),
            query: Some("blobs=true".into()),
            authorization: Some(hub.log.bearer()),
        }
    );
    assert!(
        hub.asked()
            .iter()
            .all(|r| r.authorization == Some(hub.log.bearer())),
        "{:?}",
        hub.asked()
    );

    // Everything is there: the second fetch lists, and downloads nothing.
    let second = fetch();
    assert_eq!(hub.asked().len(), 4);
    assert_eq!(hub.downloads().len(), 2);
    assert!(
        stderr(&second).contains(&format!(
            "model.{REPO}@{COMMIT}: present (2 files, 300.1 kB)"
        )),
        "{}",
        stderr(&second)
    );

    assert_secret_absent(&files_under(env.dir.path()), &outputs, &hub.log.token);
}

/// A search's probes are no runs of the lockfile: what they use is fetched
/// all the same (from the workload they search).
#[test]
fn fetch_brings_the_model_an_experiment_of_searches_only_probes_with() {
    let rt = runtime();
    let files = vec![weights(), config()];
    let (hub, endpoint) = Hub::start(&rt, files.clone(), Fault::None);
    let searched = experiment(COMMIT).replace(
        "prompts 8\n",
        "prompts 8\n        slo ttft_ms=100\n        search concurrency from=1 to=4\n",
    );
    assert!(searched.contains("search concurrency"));
    let env = locked(&searched);
    let out = with_hub(&env, &hub, &endpoint, &["fetch", "hub.kdl"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = stderr(&out);
    assert!(
        text.contains("downloaded 2 files (300.1 kB), each matching the digest"),
        "{text}"
    );
    for file in &files {
        assert_linked(&env, file);
    }
}

#[test]
fn a_corrupted_download_fails_naming_the_file_and_leaves_nothing_in_the_snapshot() {
    let rt = runtime();
    let (hub, endpoint) = Hub::start(&rt, vec![weights(), config()], Fault::CorruptLfs);
    let env = locked_project(COMMIT);
    let out = with_hub(&env, &hub, &endpoint, &["fetch", "hub.kdl"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let text = words(&out);
    assert!(
        text.contains(&format!(
            "model.{REPO}@{COMMIT}: `model.safetensors` of `{REPO}` is not the file the Hub lists at `{COMMIT}`: its sha256 is"
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!("cannot fetch model.{REPO}@{COMMIT}")),
        "{text}"
    );
    assert!(text.contains("perfpipe fetch hub.kdl"), "{text}");
    // The good file is in place; the bad one is nowhere, not even as a temp file.
    assert_eq!(names(&snapshot(&env)), ["config.json"]);
    assert_eq!(names(&model_dir(&env).join("blobs")), [config().blob()]);
    assert_eq!(
        hub.downloads().len(),
        2,
        "a mismatch is not downloaded again"
    );
}

#[test]
fn a_listing_longer_than_a_hub_answer_is_not_read_past_its_limit_and_nothing_is_downloaded() {
    let rt = runtime();
    let (hub, endpoint) = Hub::start(&rt, vec![weights(), config()], Fault::LongListing);
    let env = locked_project(COMMIT);
    let out = with_hub(&env, &hub, &endpoint, &["fetch", "hub.kdl"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let text = words(&out);
    assert!(
        text.contains(&format!(
            "cannot ask {endpoint} for the files of `{REPO}`: its listing is longer than the 16777216 bytes perfpipe reads of a Hub API answer"
        )),
        "{text}"
    );
    assert_eq!(hub.downloads(), Vec::<String>::new());
}

#[test]
fn a_download_slower_than_the_minimum_rate_is_cut_off_and_retried() {
    let rt = runtime();
    let (hub, endpoint) = Hub::start(&rt, vec![weights(), config()], Fault::TrickleOnce);
    let env = locked_project(COMMIT);
    let started = std::time::Instant::now();
    let out = with_hub(&env, &hub, &endpoint, &["fetch", "hub.kdl"])
        .env("PERFPIPE_FETCH_RATE_WINDOW_SECS", "1")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        started.elapsed() < std::time::Duration::from_secs(15),
        "the trickle is cut off after its window"
    );
    let text = words(&out);
    assert!(
        text.contains(&format!(
            "cannot download `model.safetensors` of `{REPO}` from {endpoint}: too slow: 1 bytes in 1s, below the minimum of 1048576 bytes per 1s; downloading it again"
        )),
        "{text}"
    );
    assert_linked(&env, &weights());
    let weights_asked = hub
        .downloads()
        .iter()
        .filter(|p| p.ends_with("model.safetensors"))
        .count();
    assert_eq!(weights_asked, 2);
}

#[test]
fn a_model_larger_than_the_free_space_is_refused_before_any_download() {
    let rt = runtime();
    let (hub, endpoint) = Hub::start(&rt, vec![weights(), config()], Fault::HugeListing);
    let env = locked_project(COMMIT);
    let out = with_hub(&env, &hub, &endpoint, &["fetch", "hub.kdl"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let text = words(&out);
    assert!(
        text.contains("not enough disk space: the missing files need 1000000000.0 GB and `"),
        "{text}"
    );
    // Measured where the cache will be: its nearest existing directory
    // (miette may wrap the path, so compared without spaces).
    let dir = env.dir.path().display().to_string();
    assert!(
        text.replace(' ', "").contains(&format!("`{dir}`has")),
        "{text}"
    );
    assert!(text.contains(" GB free"), "{text}");
    assert!(text.contains("set HF_HOME"), "{text}");
    assert_eq!(hub.asked().len(), 1, "only the listing: {:?}", hub.asked());
    assert!(hub.downloads().is_empty());
    assert!(!env.path("hf").exists(), "nothing was written to the cache");
}

#[test]
fn fetch_needs_a_lockfile_and_never_fetches_by_branch() {
    let rt = runtime();
    let (hub, endpoint) = Hub::start(&rt, vec![config()], Fault::None);
    let env = TestEnv::new();
    env.write("hub.kdl", &experiment("main"));
    let missing = with_hub(&env, &hub, &endpoint, &["fetch", "hub.kdl"])
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(3), "{}", stderr(&missing));
    assert!(
        words(&missing).contains("perfpipe lock hub.kdl"),
        "{}",
        stderr(&missing)
    );

    // Locked offline, `main` stays unpinned: reported, never fetched.
    assert_eq!(env.run(&["lock", "hub.kdl"]).status.code(), Some(0));
    let out = with_hub(&env, &hub, &endpoint, &["fetch", "hub.kdl"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(&format!(
            "model.{REPO}@main: unpinned: run `perfpipe lock` first"
        )),
        "{}",
        stderr(&out)
    );
    assert!(hub.asked().is_empty(), "{:?}", hub.asked());

    // An experiment that no longer matches its lockfile is refused as under `run --locked`.
    env.write("hub.kdl", &experiment(COMMIT));
    let stale = with_hub(&env, &hub, &endpoint, &["fetch", "hub.kdl"])
        .output()
        .unwrap();
    assert_eq!(stale.status.code(), Some(3), "{}", stderr(&stale));
    assert!(hub.asked().is_empty());
}

/// `perfpipe ARGS` on a stand-in GPU box: stand-in `nvidia-smi`, engines and
/// `docker` first on PATH, each call logged.
fn on_gpu_box(cmd: &mut Command, env: &TestEnv) -> Output {
    cmd.env("PATH", format!("{FIXTURES}/standins:/usr/bin:/bin"))
        .env("HOME", env.path("home"))
        .env("PERFPIPE_BIN", env!("CARGO_BIN_EXE_perfpipe"))
        .env("STANDIN_LOG", env.path("standin.log"))
        .env("PERFPIPE_GPU_LOCKS", env.path("gpu-locks"))
        .env("PERFPIPE_SIM_TIMING", "fixed:ttft_ms=0,itl_ms=0")
        .output()
        .unwrap()
}

/// The stand-in calls of `tool`, arguments joined by spaces.
fn calls(env: &TestEnv, tool: &str) -> Vec<String> {
    std::fs::read_to_string(env.path("standin.log"))
        .unwrap_or_default()
        .lines()
        .filter(|l| l.starts_with(&format!("{tool}\t")))
        .map(|l| l.split('\t').skip(2).collect::<Vec<_>>().join(" "))
        .collect()
}

#[test]
fn under_docker_fetch_pulls_the_pinned_image_by_digest_once() {
    let rt = runtime();
    let (hub, endpoint) = Hub::start(&rt, vec![config()], Fault::None);
    let env = locked_project(COMMIT);
    let image = format!("vllm/vllm-openai@sha256:{IMAGE_DIGEST}");
    let fetch = |extra: &[(&str, &str)]| {
        let mut cmd = with_hub(
            &env,
            &hub,
            &endpoint,
            &["fetch", "hub.kdl", "--runtime", "docker"],
        );
        cmd.envs(extra.iter().copied());
        on_gpu_box(&mut cmd, &env)
    };

    let refused = fetch(&[("STANDIN_PULL_FAIL", "1")]);
    assert_eq!(refused.status.code(), Some(1), "{}", stderr(&refused));
    let text = words(&refused);
    assert!(
        text.contains(&format!("engine.vllm: `docker pull {image}` failed")),
        "{text}"
    );
    assert!(text.contains("cannot fetch engine.vllm"), "{text}");
    assert_linked(&env, &config());

    let first = fetch(&[]);
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    assert!(stderr(&first).contains(&format!("engine.vllm: to pull: {image}")));
    let second = fetch(&[]);
    assert_eq!(second.status.code(), Some(0), "{}", stderr(&second));
    assert!(stderr(&second).contains(&format!("engine.vllm: present: {image}")));
    let inspect = &*format!("image inspect {image}");
    let pull = &*format!("pull {image}");
    assert_eq!(
        calls(&env, "docker"),
        [
            inspect, pull, // refused
            inspect, pull, inspect, // pulled, then checked
            inspect, // present
        ]
    );
    // Under `local`, images are the engine's business: docker is not asked.
    let local = with_hub(
        &env,
        &hub,
        &endpoint,
        &["fetch", "hub.kdl", "--runtime", "local"],
    );
    let out = on_gpu_box(&mut { local }, &env);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(calls(&env, "docker").len(), 6);
}

#[test]
fn run_fetches_what_its_missing_runs_need_before_the_gpus_and_under_sim_nothing() {
    let rt = runtime();
    let (hub, endpoint) = Hub::start(&rt, vec![weights(), config()], Fault::None);
    let env = locked_project(COMMIT);
    let run = |runtime: &str| {
        let mut cmd = with_hub(
            &env,
            &hub,
            &endpoint,
            &["run", "hub.kdl", "--runtime", runtime],
        );
        cmd.env_remove("PERFPIPE_OFFLINE");
        on_gpu_box(&mut cmd, &env)
    };

    let sim = run("sim");
    assert_eq!(sim.status.code(), Some(0), "{}", stderr(&sim));
    assert!(
        hub.asked().is_empty(),
        "sim fetches nothing: {:?}",
        hub.asked()
    );

    // `--offline` fetches nothing either (capped prompts: runs of their own).
    let mut cmd = with_hub(
        &env,
        &hub,
        &endpoint,
        &["run", "hub.kdl", "--runtime", "local", "--max-prompts", "2"],
    );
    let offline = on_gpu_box(&mut cmd, &env);
    assert_eq!(offline.status.code(), Some(0), "{}", stderr(&offline));
    assert!(
        hub.asked().is_empty(),
        "offline fetches nothing: {:?}",
        hub.asked()
    );

    let local = run("local");
    assert_eq!(local.status.code(), Some(0), "{}", stderr(&local));
    let text = stderr(&local);
    let fetched = text.find("model.safetensors (300.0 kB)").expect(&text);
    let started = text.find("[1/1]").expect(&text);
    assert!(fetched < started, "fetched before the run started: {text}");
    assert_eq!(hub.downloads().len(), 2);
    assert_linked(&env, &weights());
    assert_linked(&env, &config());

    // Nothing is missing: no run, no fetch, not even a listing.
    let asked = hub.asked().len();
    let again = run("local");
    assert_eq!(again.status.code(), Some(0), "{}", stderr(&again));
    assert_eq!(hub.asked().len(), asked);
}

#[test]
fn a_lockfile_written_where_the_tokenizer_was_cached_runs_locked_on_a_fresh_machine_after_fetching()
{
    let rt = runtime();
    let (hub, endpoint) = Hub::start(&rt, vec![config(), tokenizer()], Fault::None);
    let env = locked_project(COMMIT);
    // Where the lockfile is written, the model (with its tokenizer) is cached.
    let out = with_hub(&env, &hub, &endpoint, &["fetch", "hub.kdl"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let out = env
        .cmd(&["lock", "hub.kdl"])
        .env("HF_HOME", env.path("hf"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let lockfile = env.read("lockfiles/hub.lock");
    assert!(
        lockfile.contains("sha256:"),
        "the tokenizer is pinned: {lockfile}"
    );

    // A fresh machine: an empty cache, so the tokenizer differs until fetched.
    std::fs::rename(env.path("hf"), env.path("hf-elsewhere")).unwrap();
    let stale = env.run(&["run", "hub.kdl", "--runtime", "sim", "--locked"]);
    assert_eq!(stale.status.code(), Some(3), "{}", stderr(&stale));
    let mut cmd = with_hub(
        &env,
        &hub,
        &endpoint,
        &["run", "hub.kdl", "--runtime", "local", "--locked"],
    );
    cmd.env_remove("PERFPIPE_OFFLINE");
    let out = on_gpu_box(&mut cmd, &env);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("this machine does not have the tokenizers"),
        "{}",
        stderr(&out)
    );
    assert_linked(&env, &tokenizer());
    assert_eq!(
        env.read("lockfiles/hub.lock"),
        lockfile,
        "--locked writes nothing"
    );
}

/// A study measured by guidellm 0.5.3 on the simulated engine: its client
/// is an input perfpipe installs.
const GUIDELLM_STUDY: &str = r#"experiment "guidellm-env" {
    hardware "nvidia-h100-sxm5-80gb" gpus=1
    model "Qwen/Qwen3-8B"
    runtime sim
    engine vllm version="0.11.0"
    harness guidellm version="0.5.3"
    workload w { dataset random input=64 output=16; prompts 4; concurrency 2 }
    step vllm engine=vllm gpus=1
}
"#;

/// `perfpipe ARGS` of the guidellm study, installing its client where
/// `home`'s cache is, with the Python `python`.
fn guidellm_env(env: &TestEnv, python: &str, args: &[&str]) -> Command {
    let mut cmd = env.cmd(args);
    cmd.env_remove("PERFPIPE_HARNESS_FROM")
        .env("HOME", env.path("home"))
        .env("PATH", "/usr/bin:/bin")
        .env("PERFPIPE_PYTHON", python)
        .env("PERFPIPE_UV", "/nonexistent/uv");
    cmd
}

#[test]
fn a_missing_python_stops_fetch_and_run_before_anything_starts() {
    let env = TestEnv::new();
    env.write("g.kdl", GUIDELLM_STUDY);
    crate::common::exited(env.run(&["lock", "g.kdl"]), 0);
    for args in [&["fetch", "g.kdl"][..], &["run", "g.kdl"]] {
        let out = guidellm_env(&env, "/nonexistent/python3", args)
            .output()
            .unwrap();
        let out = crate::common::exited(out, 2);
        let text = words(&out);
        assert!(
            text.contains(
                "cannot run the Python perfpipe makes the `guidellm==0.5.3` environment with (`/nonexistent/python3`)"
            ),
            "{text}"
        );
        assert!(text.contains("PERFPIPE_PYTHON"), "the hint: {text}");
        assert!(!text.contains("[1/1]"), "no run started: {text}");
        if args[0] == "fetch" {
            insta::assert_snapshot!("fetch_without_python", stderr(&out));
        }
    }
    assert!(
        !env.path("home/.cache/perfpipe/envs").exists(),
        "nothing made"
    );
    assert!(env.samples().is_empty());
}

/// pip against an index nothing serves: said as the index out of reach,
/// exit 1, and nothing left behind but perfpipe's own bookkeeping.
#[test]
fn an_index_out_of_reach_is_named_and_leaves_no_environment() {
    let python = "/usr/bin/python3";
    if !Path::new(python).is_file() {
        crate::common::cannot_test("python", "no /usr/bin/python3");
        return;
    }
    let env = TestEnv::new();
    env.write("g.kdl", GUIDELLM_STUDY);
    crate::common::exited(env.run(&["lock", "g.kdl"]), 0);
    let out = guidellm_env(&env, python, &["fetch", "g.kdl"])
        .env("PIP_INDEX_URL", "http://127.0.0.1:9/simple")
        .env("PIP_RETRIES", "1")
        .env("PIP_TIMEOUT", "2")
        .output()
        .unwrap();
    let text = words(&crate::common::exited(out, 1));
    assert!(
        text.contains("installing guidellm==0.5.3 into")
            && text.contains("with pip (uv is not on PATH)"),
        "{text}"
    );
    assert!(
        text.contains("cannot reach the package index to install `guidellm==0.5.3` with pip"),
        "{text}"
    );
    assert!(text.contains("PIP_INDEX_URL"), "the hint: {text}");
    let envs = env.path("home/.cache/perfpipe/envs");
    let left: Vec<PathBuf> = files_under(&envs)
        .into_iter()
        .filter(|f| !f.starts_with(envs.join(".building")))
        .collect();
    assert!(left.is_empty(), "no environment: {left:?}");
    let building: Vec<String> = std::fs::read_dir(envs.join(".building"))
        .unwrap()
        .flatten()
        .filter(|e| e.file_type().unwrap().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(building.is_empty(), "nothing half-made: {building:?}");
    assert!(
        !env.read("lockfiles/g.lock").contains("locked env="),
        "nothing recorded"
    );
}
