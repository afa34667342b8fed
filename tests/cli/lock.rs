//! `perfpipe lock` against real servers on loopback: Debian's
//! `docker-registry` (distribution 2.8) behind a bearer-token endpoint, as
//! Docker Hub is, and a stand-in for the Hugging Face Hub's revision API.

use std::collections::BTreeMap;
use std::io::Write;
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::Json;
use axum::extract::{Path as UrlPath, RawQuery, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::json;
use sha2::{Digest, Sha256};

use crate::common::hub::{self, HubLog, HubRequest, hub_error, hub_experiment};
use crate::common::{
    FIXTURES, TestEnv, assert_secret_absent, contains, exited, files_under, free_port, huge_body,
    random_hex, runtime, serve, stderr, stdout, words,
};

const SERVICE: &str = "perfpipe-test-registry";
const ISSUER: &str = "perfpipe-test";
const OCI_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
const OCI_INDEX: &str = "application/vnd.oci.image.index.v1+json";
/// The commit `main` of Qwen/Qwen3-14B is at on the stand-in Hub.
const QWEN_MAIN: &str = "40c069824f4251a91eefaf281ebe4c544efd3e18";
/// The commit of its `refs/pr/1`.
const QWEN_PR: &str = "9b1e4f7c2d3a5e6f8a0b1c2d3e4f5a6b7c8d9e0f";
/// A gated repository's `main`.
const GATED_REPO: &str = "perfpipe-test/gated-model";
const GATED_MAIN: &str = "c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00";
/// A commit, so the registry tests pin the model without a Hub.
const COMMIT: &str = "0123456789abcdef0123456789abcdef01234567";

fn sha256(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

const STD_ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const URL_ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

fn base64_with(bytes: &[u8], alphabet: &[u8; 64], pad: bool) -> String {
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, &b)| n | u32::from(b) << (16 - 8 * i));
        for i in 0..=chunk.len() {
            out.push(char::from(alphabet[(n >> (18 - 6 * i) & 63) as usize]));
        }
        if pad {
            for _ in chunk.len()..3 {
                out.push('=');
            }
        }
    }
    out
}

/// Standard base64 with padding (`x5c`, HTTP basic auth).
fn base64(bytes: &[u8]) -> String {
    base64_with(bytes, STD_ALPHABET, true)
}

/// URL-safe base64 without padding (JWT segments).
fn base64url(bytes: &[u8]) -> String {
    base64_with(bytes, URL_ALPHABET, false)
}

#[test]
fn base64_matches_rfc_4648() {
    let cases = [
        ("", "", ""),
        ("f", "Zg==", "Zg"),
        ("fo", "Zm8=", "Zm8"),
        ("foo", "Zm9v", "Zm9v"),
        ("foob", "Zm9vYg==", "Zm9vYg"),
        ("fooba", "Zm9vYmE=", "Zm9vYmE"),
        ("foobar", "Zm9vYmFy", "Zm9vYmFy"),
    ];
    for (text, std, url) in cases {
        assert_eq!(base64(text.as_bytes()), std, "{text}");
        assert_eq!(base64url(text.as_bytes()), url, "{text}");
    }
    assert_eq!(base64url(&[0xfb, 0xff]), "-_8");
    assert_eq!(base64(&[0xfb, 0xff]), "+/8=");
}

/// What perfpipe (or anyone) asked the token endpoint.
#[derive(Debug, Clone, PartialEq)]
struct TokenRequest {
    service: Option<String>,
    scope: Option<String>,
    authorization: Option<String>,
}

/// Mints the RS256 JWTs distribution's `auth: token` accepts: the signing
/// certificate travels in the `x5c` header and is verified against the
/// registry's `rootcertbundle`.
struct TokenIssuer {
    key_pem: PathBuf,
    /// Base64 of the certificate's DER.
    cert: String,
    asked: Mutex<Vec<TokenRequest>>,
}

impl TokenIssuer {
    /// A fresh RSA key and self-signed certificate in `dir`.
    fn new(dir: &Path) -> Self {
        let key_pem = dir.join("key.pem");
        let cert_pem = dir.join("cert.pem");
        let made = Command::new("openssl")
            .args(["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout"])
            .arg(&key_pem)
            .arg("-out")
            .arg(&cert_pem)
            .args(["-days", "1", "-subj", "/CN=perfpipe-test"])
            .output()
            .expect("the openssl CLI (/usr/bin/openssl) is installed");
        assert!(made.status.success(), "openssl req: {}", stderr(&made));
        let der = Command::new("openssl")
            .args(["x509", "-outform", "DER", "-in"])
            .arg(&cert_pem)
            .output()
            .unwrap();
        assert!(der.status.success(), "openssl x509: {}", stderr(&der));
        Self {
            key_pem,
            cert: base64(&der.stdout),
            asked: Mutex::default(),
        }
    }

    fn cert_pem(&self) -> PathBuf {
        self.key_pem.with_file_name("cert.pem")
    }

    /// A token granting `scope` (`repository:NAME:ACTIONS`, as asked).
    fn mint(&self, scope: &str) -> String {
        let (name, actions) = scope
            .strip_prefix("repository:")
            .and_then(|s| s.rsplit_once(':'))
            .unwrap_or_else(|| panic!("scope `{scope}` is not repository:NAME:ACTIONS"));
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs();
        let header = json!({"typ": "JWT", "alg": "RS256", "x5c": [self.cert]});
        let claims = json!({
            "iss": ISSUER,
            "sub": "perfpipe-tests",
            "aud": SERVICE,
            "exp": now + 300,
            "nbf": now - 10,
            "iat": now,
            "jti": random_hex(),
            "access": [{
                "type": "repository",
                "name": name,
                "actions": actions.split(',').collect::<Vec<_>>(),
            }],
        });
        let signing_input = format!(
            "{}.{}",
            base64url(header.to_string().as_bytes()),
            base64url(claims.to_string().as_bytes())
        );
        let mut openssl = Command::new("openssl")
            .args(["dgst", "-sha256", "-sign"])
            .arg(&self.key_pem)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        openssl
            .stdin
            .take()
            .unwrap()
            .write_all(signing_input.as_bytes())
            .unwrap();
        let signed = openssl.wait_with_output().unwrap();
        assert!(signed.status.success(), "openssl dgst: {}", stderr(&signed));
        format!("{signing_input}.{}", base64url(&signed.stdout))
    }

    fn asked(&self) -> Vec<TokenRequest> {
        self.asked.lock().unwrap().clone()
    }
}

/// `GET /token?service=…&scope=…`, as Docker Hub's auth.docker.io answers it.
async fn token_endpoint(
    State(issuer): State<Arc<TokenIssuer>>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    let url = reqwest::Url::parse(&format!("http://x/?{}", query.unwrap_or_default())).unwrap();
    let param = |name: &str| {
        url.query_pairs()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.into_owned())
    };
    let request = TokenRequest {
        service: param("service"),
        scope: param("scope"),
        authorization: headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned),
    };
    issuer.asked.lock().unwrap().push(request.clone());
    let (Some(SERVICE), Some(scope)) = (request.service.as_deref(), request.scope) else {
        return (StatusCode::BAD_REQUEST, "service and scope, please").into_response();
    };
    let token = tokio::task::spawn_blocking(move || issuer.mint(&scope))
        .await
        .unwrap();
    Json(json!({"token": token, "expires_in": 300})).into_response()
}

/// `docker-registry serve` on a loopback port, with token auth; killed on drop.
struct Registry {
    child: Child,
    port: u16,
    issuer: Arc<TokenIssuer>,
    dir: tempfile::TempDir,
    client: reqwest::Client,
}

impl Registry {
    fn start(rt: &tokio::runtime::Runtime) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let issuer = Arc::new(TokenIssuer::new(dir.path()));
        let token_port = serve(
            rt,
            axum::Router::new()
                .route("/token", get(token_endpoint))
                .with_state(Arc::clone(&issuer)),
        );
        let port = free_port();
        let config = format!(
            "version: 0.1
log:
  level: info
storage:
  filesystem:
    rootdirectory: {storage}
http:
  addr: 127.0.0.1:{port}
  secret: perfpipe-test-http-secret
auth:
  token:
    realm: http://127.0.0.1:{token_port}/token
    service: {SERVICE}
    issuer: {ISSUER}
    rootcertbundle: {cert}
",
            storage = dir.path().join("storage").display(),
            cert = issuer.cert_pem().display(),
        );
        let config_path = dir.path().join("config.yml");
        std::fs::write(&config_path, config).unwrap();
        let log = std::fs::File::create(dir.path().join("registry.log")).unwrap();
        let child = Command::new("docker-registry")
            .arg("serve")
            .arg(&config_path)
            .env_clear()
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("Debian's docker-registry (distribution 2.8) is installed: apt-get install docker-registry");
        perfpipe::tls::ensure_provider();
        let mut registry = Self {
            child,
            port,
            issuer,
            dir,
            client: reqwest::Client::new(),
        };
        registry.wait_until_listening();
        registry
    }

    fn wait_until_listening(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            if let Some(status) = self.child.try_wait().unwrap() {
                panic!("docker-registry exited ({status}):\n{}", self.log());
            }
            assert!(
                Instant::now() < deadline,
                "docker-registry did not listen on {} within 10 s:\n{}",
                self.port,
                self.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("registry.log")).unwrap_or_default()
    }

    /// `127.0.0.1:PORT`, as an image reference names the registry.
    fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    fn base(&self) -> String {
        format!("http://{}", self.host())
    }

    /// Pushes a blob with a push token; returns its digest.
    async fn push_blob(&self, repo: &str, token: &str, bytes: Vec<u8>) -> String {
        let digest = sha256(&bytes);
        let started = self
            .client
            .post(format!("{}/v2/{repo}/blobs/uploads/", self.base()))
            .bearer_auth(token)
            .send()
            .await
            .unwrap();
        assert_eq!(started.status(), StatusCode::ACCEPTED, "{}", self.log());
        let location = started.headers()[header::LOCATION].to_str().unwrap();
        let location = if location.starts_with('/') {
            format!("{}{location}", self.base())
        } else {
            location.to_owned()
        };
        let separator = if location.contains('?') { '&' } else { '?' };
        let put = self
            .client
            .put(format!("{location}{separator}digest={digest}"))
            .bearer_auth(token)
            .header(header::CONTENT_TYPE, "application/octet-stream")
            .body(bytes)
            .send()
            .await
            .unwrap();
        assert_eq!(put.status(), StatusCode::CREATED, "{}", self.log());
        digest
    }

    /// Pushes a manifest tagged `tag`, or by its digest; returns its digest.
    async fn push_manifest(
        &self,
        repo: &str,
        token: &str,
        tag: Option<&str>,
        media_type: &str,
        manifest: &serde_json::Value,
    ) -> String {
        let body = serde_json::to_vec(manifest).unwrap();
        let digest = sha256(&body);
        let reference = tag.unwrap_or(&digest);
        let put = self
            .client
            .put(format!("{}/v2/{repo}/manifests/{reference}", self.base()))
            .bearer_auth(token)
            .header(header::CONTENT_TYPE, media_type)
            .body(body)
            .send()
            .await
            .unwrap();
        let status = put.status();
        let announced = put
            .headers()
            .get("docker-content-digest")
            .map(|v| v.to_str().unwrap().to_owned());
        assert_eq!(
            status,
            StatusCode::CREATED,
            "{}\n{}",
            put.text().await.unwrap(),
            self.log()
        );
        assert_eq!(announced.as_deref(), Some(digest.as_str()));
        digest
    }

    /// Pushes a one-layer OCI image for `arch` (its config and layer differ
    /// by `variant`), tagged `tag` or by digest; returns its manifest's
    /// digest and size.
    async fn push_image(
        &self,
        repo: &str,
        token: &str,
        tag: Option<&str>,
        arch: &str,
        variant: &str,
    ) -> (String, usize) {
        let layer = format!("a layer of {repo} for linux/{arch} ({variant})").into_bytes();
        let layer_size = layer.len();
        let diff_id = sha256(&layer);
        let layer_digest = self.push_blob(repo, token, layer).await;
        let config = serde_json::to_vec(&json!({
            "architecture": arch,
            "os": "linux",
            "config": {"Labels": {"perfpipe.test.variant": variant}},
            "rootfs": {"type": "layers", "diff_ids": [diff_id]},
        }))
        .unwrap();
        let config_size = config.len();
        let config_digest = self.push_blob(repo, token, config).await;
        let manifest = json!({
            "schemaVersion": 2,
            "mediaType": OCI_MANIFEST,
            "config": {
                "mediaType": "application/vnd.oci.image.config.v1+json",
                "digest": config_digest,
                "size": config_size,
            },
            "layers": [{
                "mediaType": "application/vnd.oci.image.layer.v1.tar",
                "digest": layer_digest,
                "size": layer_size,
            }],
        });
        let size = serde_json::to_vec(&manifest).unwrap().len();
        let digest = self
            .push_manifest(repo, token, tag, OCI_MANIFEST, &manifest)
            .await;
        (digest, size)
    }

    /// Pushes a linux/arm64 and a linux/amd64 image by digest and tags an
    /// OCI index of both (arm64 first); returns (index digest, amd64 digest).
    async fn push_index(&self, repo: &str, token: &str, tag: &str) -> (String, String) {
        let mut entries = Vec::new();
        let mut amd64 = String::new();
        for arch in ["arm64", "amd64"] {
            let (digest, size) = self.push_image(repo, token, None, arch, "1").await;
            entries.push(json!({
                "mediaType": OCI_MANIFEST,
                "digest": digest,
                "size": size,
                "platform": {"architecture": arch, "os": "linux"},
            }));
            amd64 = digest;
        }
        let index = json!({
            "schemaVersion": 2,
            "mediaType": OCI_INDEX,
            "manifests": entries,
        });
        let digest = self
            .push_manifest(repo, token, Some(tag), OCI_INDEX, &index)
            .await;
        (digest, amd64)
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn lockfile(env: &TestEnv, rel: &str) -> perfpipe::lock::Lockfile {
    perfpipe::lock::parse(rel, &env.read(rel)).unwrap()
}

fn locked(lock: &perfpipe::lock::Lockfile, input: &str) -> Option<BTreeMap<String, String>> {
    lock.input(input)
        .unwrap_or_else(|| panic!("the lockfile has no input `{input}`"))
        .locked
        .clone()
}

fn attrs<const N: usize>(pairs: [(&str, &str); N]) -> BTreeMap<String, String> {
    pairs
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

/// `(step, workload)` → the run's key under `runtime`.
fn keys(lock: &perfpipe::lock::Lockfile, runtime: &str) -> BTreeMap<(String, String), String> {
    lock.runs
        .iter()
        .map(|r| {
            (
                (r.step.clone(), r.workload.clone()),
                r.keys[runtime].as_str().to_owned(),
            )
        })
        .collect()
}

/// `(step, workload)` → short key, from `perfpipe plan`'s table.
fn plan_keys(output: &Output) -> BTreeMap<(String, String), String> {
    stdout(output)
        .lines()
        .filter_map(|line| {
            let cols: Vec<&str> = line.split_whitespace().collect();
            match cols[..] {
                [step, workload, key, ..]
                    if key.len() == 12 && key.bytes().all(|b| b.is_ascii_hexdigit()) =>
                {
                    Some(((step.to_owned(), workload.to_owned()), key.to_owned()))
                }
                _ => None,
            }
        })
        .collect()
}

fn run_names(names: &[(&str, &str)]) -> Vec<(String, String)> {
    names
        .iter()
        .map(|(s, w)| ((*s).to_owned(), (*w).to_owned()))
        .collect()
}

#[test]
fn a_tag_resolves_to_its_digest_through_token_auth_and_a_repushed_tag_moves_only_its_runs() {
    let rt = runtime();
    let registry = Registry::start(&rt);
    let host = registry.host();
    let vllm_token = registry
        .issuer
        .mint("repository:vllm/vllm-openai:pull,push");
    let sglang_token = registry.issuer.mint("repository:lmsysorg/sglang:pull,push");
    let push_vllm = |variant| {
        rt.block_on(registry.push_image(
            "vllm/vllm-openai",
            &vllm_token,
            Some("v1"),
            "amd64",
            variant,
        ))
        .0
    };
    let first_vllm = push_vllm("1");
    let (sglang_index, sglang_amd64) =
        rt.block_on(registry.push_index("lmsysorg/sglang", &sglang_token, "v1"));

    let env = TestEnv::new();
    env.write(
        "pins.kdl",
        &format!(
            r#"experiment "pins" {{
    hardware "nvidia-a100-sxm4-80gb" gpus=2
    model "Qwen/Qwen3-14B" revision="{COMMIT}"
    runtime docker
    engine vllm version="0.11.0" image="{host}/vllm/vllm-openai:v1"
    engine sglang version="0.5.0" image="{host}/lmsysorg/sglang:v1"
    harness builtin backend="openai-chat"

    workload short {{
        dataset random input=16 output=4 seed=1
        prompts 8
    }}
    workload long {{
        dataset random input=64 output=8 seed=2
        prompts 8
    }}

    step vllm engine=vllm gpus=1
    step sglang engine=sglang gpus=1
    sweep vllm-seqs engine=vllm gpus=1 {{
        vary "--max-num-seqs" 8 64
        workloads short
    }}
}}
"#
        ),
    );
    let lock = |args: &[&str]| {
        let mut all = vec!["lock", "pins.kdl"];
        all.extend_from_slice(args);
        env.cmd(&all)
            .env_remove("PERFPIPE_OFFLINE")
            .output()
            .unwrap()
    };

    let first = lock(&[]);
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    let before = lockfile(&env, "lockfiles/pins.lock");
    assert_eq!(
        locked(&before, "engine.vllm"),
        Some(attrs([(
            "image",
            &format!("{host}/vllm/vllm-openai@{first_vllm}")
        )]))
    );
    assert_eq!(
        locked(&before, "engine.sglang"),
        Some(attrs([
            ("image", &format!("{host}/lmsysorg/sglang@{sglang_amd64}")),
            ("index", &sglang_index),
        ])),
        "an index is pinned to its linux/amd64 manifest, not its first"
    );
    // Both tags were refused without a token, and perfpipe asked for a pull
    // token per repository, anonymously (no registry login is set).
    let mut asked = registry.issuer.asked();
    asked.sort_by(|a, b| a.scope.cmp(&b.scope));
    let anonymous = |repo: &str| TokenRequest {
        service: Some(SERVICE.into()),
        scope: Some(format!("repository:{repo}:pull")),
        authorization: None,
    };
    assert_eq!(
        asked,
        [anonymous("lmsysorg/sglang"), anonymous("vllm/vllm-openai")]
    );
    let plan = |env: &TestEnv| {
        let out = env.run(&["plan", "pins.kdl", "--runtime", "docker"]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        plan_keys(&out)
    };
    let plan_before = plan(&env);

    // The tag moves to another image.
    let second_vllm = push_vllm("2");
    assert_ne!(second_vllm, first_vllm);

    // A pin is never resolved again unless asked: not even the registry is asked.
    let text = env.read("lockfiles/pins.lock");
    let again = lock(&[]);
    assert_eq!(again.status.code(), Some(0), "{}", stderr(&again));
    assert!(
        stderr(&again).contains("is up to date"),
        "{}",
        stderr(&again)
    );
    assert_eq!(env.read("lockfiles/pins.lock"), text);
    assert_eq!(registry.issuer.asked().len(), 2);

    // `--update engine.vllm`, this time with a registry login.
    let password = format!("registry-pw-{}", random_hex());
    let updated = env
        .cmd(&["lock", "pins.kdl", "--update", "engine.vllm"])
        .env_remove("PERFPIPE_OFFLINE")
        .env("PERFPIPE_REGISTRY_USERNAME", "perfpipe-ci")
        .env("PERFPIPE_REGISTRY_PASSWORD", &password)
        .output()
        .unwrap();
    assert_eq!(updated.status.code(), Some(0), "{}", stderr(&updated));
    assert!(
        stderr(&updated).contains("4 runs with new keys"),
        "{}",
        stderr(&updated)
    );
    let after = lockfile(&env, "lockfiles/pins.lock");
    assert_eq!(
        locked(&after, "engine.vllm"),
        Some(attrs([(
            "image",
            &format!("{host}/vllm/vllm-openai@{second_vllm}")
        )]))
    );
    assert_eq!(
        locked(&after, "engine.sglang"),
        locked(&before, "engine.sglang")
    );
    assert_eq!(
        registry.issuer.asked()[2..],
        [TokenRequest {
            authorization: Some(format!(
                "Basic {}",
                base64(format!("perfpipe-ci:{password}").as_bytes())
            )),
            ..anonymous("vllm/vllm-openai")
        }],
        "only vllm is asked again, with the login as HTTP basic auth"
    );
    let lock_text = env.read("lockfiles/pins.lock");
    assert!(!lock_text.contains(&password));
    assert!(!stderr(&updated).contains(&password));

    let (docker_before, docker_after) = (keys(&before, "docker"), keys(&after, "docker"));
    assert_eq!(docker_before.len(), 6);
    let changed: Vec<(String, String)> = docker_after
        .iter()
        .filter(|(run, key)| docker_before.get(*run) != Some(*key))
        .map(|(run, _)| run.clone())
        .collect();
    let vllm_runs = run_names(&[
        ("vllm", "long"),
        ("vllm", "short"),
        ("vllm-seqs-64", "short"),
        ("vllm-seqs-8", "short"),
    ]);
    assert_eq!(changed, vllm_runs, "exactly the runs of engine vllm move");
    assert_eq!(docker_after.len(), docker_before.len());
    for runtime in ["local", "sim"] {
        assert_eq!(
            keys(&before, runtime),
            keys(&after, runtime),
            "the image is no part of {runtime} keys"
        );
    }

    // `plan` shows the new short keys for the vllm runs, the old ones for sglang's.
    let plan_after = plan(&env);
    assert_eq!(plan_before.len(), 6, "{plan_before:?}");
    assert_eq!(plan_after.len(), 6, "{plan_after:?}");
    for (run, key) in &docker_before {
        assert_eq!(plan_before[run], key[..12], "{run:?}");
        assert_eq!(plan_after[run], docker_after[run][..12], "{run:?}");
    }
    let moved: Vec<(String, String)> = plan_after
        .iter()
        .filter(|(run, short)| plan_before[*run] != **short)
        .map(|(run, _)| run.clone())
        .collect();
    assert_eq!(moved, vllm_runs);
}

/// The Hub's `GET /api/models/{repo}/revision/{revision}`, answering as
/// huggingface.co does: Qwen/Qwen3-14B is public, `GATED_REPO` needs the
/// token. Its log, and its URL.
fn start_hub(rt: &tokio::runtime::Runtime) -> (Arc<HubLog>, String) {
    let hub = Arc::new(HubLog::new());
    let app = axum::Router::new()
        .route(
            "/api/models/{org}/{name}/revision/{revision}",
            get(hub_revision),
        )
        .with_state(Arc::clone(&hub));
    let port = serve(rt, app);
    (hub, format!("http://127.0.0.1:{port}"))
}

async fn hub_revision(
    State(hub): State<Arc<HubLog>>,
    UrlPath((org, name, revision)): UrlPath<(String, String, String)>,
    uri: axum::http::Uri,
    headers: HeaderMap,
) -> Response {
    let authenticated = match hub.record(&uri, &headers) {
        None => false,
        Some(a) if a == hub.bearer() => true,
        Some(_) => {
            return hub_error(
                StatusCode::UNAUTHORIZED,
                "Invalid credentials in Authorization header",
            );
        }
    };
    let repo = format!("{org}/{name}");
    let sha = match (repo.as_str(), revision.as_str()) {
        ("Qwen/Qwen3-14B", "main" | QWEN_MAIN) => QWEN_MAIN,
        ("Qwen/Qwen3-14B", "refs/pr/1") => QWEN_PR,
        (GATED_REPO, _) if !authenticated => {
            return hub_error(
                StatusCode::UNAUTHORIZED,
                &format!(
                    "Access to model {GATED_REPO} is restricted. You must have access to it and be authenticated to access it. Please log in."
                ),
            );
        }
        (GATED_REPO, "main") => GATED_MAIN,
        ("Qwen/Qwen3-14B" | GATED_REPO, _) => {
            return hub_error(StatusCode::NOT_FOUND, "Revision Not Found");
        }
        _ => return hub_error(StatusCode::NOT_FOUND, "Repository not found"),
    };
    Json(model_info(&repo, sha)).into_response()
}

/// A model's info as the Hub sends it: huggingface.co's answer for
/// Qwen/Qwen3-14B (tests/fixtures/hub), renamed to `repo` at commit `sha`.
fn model_info(repo: &str, sha: &str) -> serde_json::Value {
    let path = Path::new(FIXTURES).join("hub/Qwen3-14B.model-info.json");
    let mut info: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    info["id"] = json!(repo);
    info["modelId"] = json!(repo);
    info["author"] = json!(repo.split_once('/').unwrap().0);
    info["sha"] = json!(sha);
    if repo == GATED_REPO {
        info["gated"] = json!("manual");
    }
    info
}

/// `perfpipe ARGS` online, asking the stand-in Hub.
fn hub_cmd(env: &TestEnv, endpoint: &str, args: &[&str]) -> Command {
    let mut cmd = hub::hub_cmd(env, endpoint, args);
    cmd.env_remove("PERFPIPE_OFFLINE");
    cmd
}

#[test]
fn a_branch_resolves_to_the_hubs_commit_with_hf_token_which_no_file_or_output_holds() {
    let rt = runtime();
    let (hub, endpoint) = start_hub(&rt);
    let env = TestEnv::new();
    env.write(
        "hub.kdl",
        &hub_experiment(r#"model "Qwen/Qwen3-14B""#, "sim"),
    );
    let mut outputs = Vec::new();
    let mut perfpipe = |args: &[&str]| {
        let out = hub_cmd(&env, &endpoint, args)
            .env("HF_TOKEN", &hub.token)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
        outputs.push(out.clone());
        out
    };

    // `lock` pins the model (`run --runtime sim` asks no network: its
    // engine loads no weights), then `run` runs the engine with the token in
    // its environment.
    perfpipe(&["lock", "hub.kdl"]);
    perfpipe(&["run", "hub.kdl", "--runtime", "sim"]);
    let lock = lockfile(&env, "lockfiles/hub.lock");
    assert_eq!(
        locked(&lock, "model.Qwen/Qwen3-14B@main"),
        Some(attrs([("revision", QWEN_MAIN)]))
    );
    let asked_with_token = HubRequest {
        path: "/api/models/Qwen/Qwen3-14B/revision/main".into(),
        query: None,
        authorization: Some(hub.bearer()),
    };
    assert_eq!(hub.asked(), std::slice::from_ref(&asked_with_token));
    assert_eq!(env.samples().len(), 1);

    // Pinned: `lock` does not ask again; `--update` does, and finds the same commit.
    let text = env.read("lockfiles/hub.lock");
    let up_to_date = perfpipe(&["lock", "hub.kdl"]);
    assert!(stderr(&up_to_date).contains("is up to date"));
    assert_eq!(hub.asked().len(), 1);
    perfpipe(&["lock", "hub.kdl", "--update", "model.Qwen/Qwen3-14B@main"]);
    assert_eq!(hub.asked(), [asked_with_token.clone(), asked_with_token]);
    assert_eq!(env.read("lockfiles/hub.lock"), text);
    perfpipe(&["report", "hub.kdl"]);

    let written = files_under(env.dir.path());
    for expected in [
        "lockfiles/hub.lock",
        "reports/hub.md",
        "result.json",
        "engine.log",
    ] {
        assert!(
            written.iter().any(|p| p.ends_with(expected)),
            "perfpipe wrote no {expected}: {written:?}"
        );
    }
    assert_secret_absent(&written, &outputs, &hub.token);
}

#[test]
fn a_revision_the_hub_does_not_know_stays_unpinned_and_lock_exits_1() {
    let rt = runtime();
    let (hub, endpoint) = start_hub(&rt);
    let env = TestEnv::new();
    // The model at a branch the Hub does not have, and at a pull request's ref
    // (one path segment: `refs%2Fpr%2F1`).
    let experiment = hub_experiment(r#"model "Qwen/Qwen3-14B" revision="no-such-branch""#, "sim").replace(
        "    step vllm engine=vllm gpus=1\n",
        "    step vllm engine=vllm gpus=1\n    step vllm-pr engine=vllm gpus=1 revision=\"refs/pr/1\"\n",
    );
    env.write("hub.kdl", &experiment);
    let out = hub_cmd(&env, &endpoint, &["lock", "hub.kdl"])
        .env("HF_TOKEN", &hub.token)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let warnings: Vec<String> = stderr(&out)
        .lines()
        .filter(|l| l.starts_with("warning: "))
        .map(str::to_owned)
        .collect();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].starts_with("warning: cannot pin model.Qwen/Qwen3-14B@no-such-branch: "),
        "{}",
        warnings[0]
    );
    assert!(
        warnings[0].contains("no revision `no-such-branch`"),
        "{}",
        warnings[0]
    );
    let lock = lockfile(&env, "lockfiles/hub.lock");
    assert_eq!(locked(&lock, "model.Qwen/Qwen3-14B@no-such-branch"), None);
    assert!(
        env.read("lockfiles/hub.lock").contains("    unpinned\n"),
        "{}",
        env.read("lockfiles/hub.lock")
    );
    assert_eq!(
        locked(&lock, "model.Qwen/Qwen3-14B@refs/pr/1"),
        Some(attrs([("revision", QWEN_PR)])),
        "one failed pin does not keep the others from resolving"
    );
    let mut paths: Vec<String> = hub.asked().into_iter().map(|r| r.path).collect();
    paths.sort();
    assert_eq!(
        paths,
        [
            "/api/models/Qwen/Qwen3-14B/revision/no-such-branch",
            "/api/models/Qwen/Qwen3-14B/revision/refs%2Fpr%2F1",
        ]
    );
    assert!(!contains(&out.stderr, &hub.token));
}

#[test]
fn a_gated_model_is_refused_without_hf_token_or_with_a_wrong_one_and_pinned_with_the_right_one() {
    let rt = runtime();
    let (hub, endpoint) = start_hub(&rt);
    let env = TestEnv::new();
    env.write(
        "hub.kdl",
        &hub_experiment(&format!(r#"model "{GATED_REPO}""#), "sim"),
    );
    let input = format!("model.{GATED_REPO}@main");
    let lock = |token: Option<&str>| {
        let mut cmd = hub_cmd(&env, &endpoint, &["lock", "hub.kdl"]);
        if let Some(token) = token {
            cmd.env("HF_TOKEN", token);
        }
        let out = cmd.output().unwrap();
        (out, lockfile(&env, "lockfiles/hub.lock"))
    };
    let refused = |out: &Output, lock: &perfpipe::lock::Lockfile| {
        assert_eq!(out.status.code(), Some(1), "{}", stderr(out));
        let warning = format!("warning: cannot pin {input}: ");
        let line = stderr(out)
            .lines()
            .find(|l| l.starts_with(&warning))
            .unwrap_or_else(|| panic!("no `{warning}` in {}", stderr(out)))
            .to_owned();
        assert!(line.contains("401"), "{line}");
        assert!(
            line.contains("HF_TOKEN"),
            "the warning says what to set: {line}"
        );
        assert_eq!(locked(lock, &input), None);
    };

    let (anonymous, pins) = lock(None);
    refused(&anonymous, &pins);
    assert_eq!(hub.asked()[0].authorization, None);

    let wrong = format!("hf_wrong{}", random_hex());
    let (wrong_token, pins) = lock(Some(&wrong));
    refused(&wrong_token, &pins);
    assert_eq!(
        hub.asked()[1].authorization,
        Some(format!("Bearer {wrong}"))
    );
    assert!(!contains(&wrong_token.stderr, &wrong));
    assert!(!contains(env.read("lockfiles/hub.lock").as_bytes(), &wrong));

    // `lock` fills the open pin once the token is right.
    let (right, pins) = lock(Some(&hub.token));
    assert_eq!(right.status.code(), Some(0), "{}", stderr(&right));
    assert_eq!(
        locked(&pins, &input),
        Some(attrs([("revision", GATED_MAIN)]))
    );
    assert_eq!(hub.asked().len(), 3);
}

/// The repository's experiments lock, afresh, to the very bytes committed in
/// `lockfiles/`: no key moved when rate workloads (arrival process, cap,
/// ShareGPT conversion) entered the key; the built-in harness's version 3
/// (connections reused) moved every built-in run's key once, version 4
/// (vLLM 0.32's random prompts) once more, and version 5 (vLLM 0.32's
/// request bodies and input token counts) once more.
#[test]
fn the_repositorys_experiments_lock_to_their_committed_keys() {
    let env = TestEnv::new();
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let copy = |rel: &str| env.write(rel, &std::fs::read_to_string(repo.join(rel)).unwrap());
    copy("datasets/sharegpt-sample.json");
    for study in ["qwen3-14b-a100", "qwen3-235b-a100"] {
        copy(&format!("experiments/{study}.kdl"));
        let out = env.run(&["lock", &format!("experiments/{study}.kdl"), "--offline"]);
        assert_eq!(out.status.code(), Some(0), "{}", words(&out));
        let committed =
            std::fs::read_to_string(repo.join(format!("lockfiles/{study}.lock"))).unwrap();
        assert_eq!(
            env.read(&format!("lockfiles/{study}.lock")),
            committed,
            "{study}"
        );
    }
    assert!(
        env.read("lockfiles/qwen3-14b-a100.lock").contains(
            r#"key sim="bda193971e45a6642a1eb21d8ccab9cf70229b1e6b8d73b741f007a68926cb1d""#
        )
    );
}

#[test]
fn sim_asks_no_network_and_an_unreachable_network_is_said_once() {
    let env = TestEnv::new();
    let registry = format!("127.0.0.1:{}", free_port());
    let experiment = hub_experiment(r#"model "Qwen/Qwen3-14B""#, "sim")
        .replace(
            &format!(r#"image="vllm/vllm-openai@sha256:{}""#, "5e".repeat(32)),
            &format!(r#"image="{registry}/vllm/vllm-openai:v0.11.0""#),
        )
        .replace(
            "    step vllm engine=vllm gpus=1\n",
            "    step vllm engine=vllm gpus=1\n    step vllm-pr engine=vllm gpus=1 revision=\"refs/pr/1\"\n",
        );
    env.write("hub.kdl", &experiment);
    // Nothing listens on either port: a request would fail at once.
    let hub = format!("http://127.0.0.1:{}", free_port());

    let run = hub_cmd(&env, &hub, &["run", "hub.kdl", "--runtime", "sim"])
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
    assert!(
        !stderr(&run).contains("warning"),
        "sim asked the network: {}",
        stderr(&run)
    );

    for attempt in ["without a lockfile's pins", "again"] {
        let lock = hub_cmd(&env, &hub, &["lock", "hub.kdl"]).output().unwrap();
        let err = stderr(&lock);
        assert_eq!(lock.status.code(), Some(1), "{attempt}: {err}");
        assert!(!err.contains("up to date"), "{attempt}: {err}");
        let warnings: Vec<&str> = err.lines().filter(|l| l.starts_with("warning: ")).collect();
        assert_eq!(
            warnings,
            [
                format!(
                    "warning: cannot reach {registry}, so engine.vllm stays unpinned (`perfpipe lock` pins them where it is reachable; `--offline` asks no network)"
                ),
                format!(
                    "warning: cannot reach {hub}, so model.Qwen/Qwen3-14B@main, model.Qwen/Qwen3-14B@refs/pr/1 stay unpinned (`perfpipe lock` pins them where it is reachable; `--offline` asks no network)"
                ),
            ],
            "{attempt}: {err}"
        );
    }
}

/// Far past the most `lock` reads of a manifest (4 MiB) and of a Hub
/// answer (16 MiB): a reader without a limit takes it all.
const HUGE_ANSWER_BYTES: usize = 64 << 20;

#[test]
fn a_manifest_longer_than_a_manifest_is_not_read_past_its_limit_and_its_engine_stays_unpinned() {
    let rt = runtime();
    // Every manifest is answered without end in sight, and without a
    // `Content-Length` that would give it away before reading.
    let app = axum::Router::new().route(
        "/v2/{*rest}",
        get(|| async { huge_body(b"{\"schemaVersion\":2,\"x\":\"", HUGE_ANSWER_BYTES) }),
    );
    let host = format!("127.0.0.1:{}", serve(&rt, app));
    let env = TestEnv::new();
    env.write(
        "huge.kdl",
        &format!(
            r#"experiment "huge" {{
    hardware "nvidia-a100-sxm4-80gb" gpus=2
    model "Qwen/Qwen3-14B" revision="{COMMIT}"
    runtime docker
    engine vllm version="0.11.0" image="{host}/vllm/vllm-openai:v1"
    harness builtin backend="openai-chat"

    workload short {{
        dataset random input=16 output=4 seed=1
        prompts 8
    }}

    step vllm engine=vllm gpus=1
}}
"#
        ),
    );
    let out = env
        .cmd(&["lock", "huge.kdl"])
        .env_remove("PERFPIPE_OFFLINE")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let text = words(&out);
    assert!(
        text.contains(&format!(
            "cannot ask {host} for `vllm/vllm-openai`: the manifest it sent is longer than the 4194304 bytes perfpipe reads of a manifest"
        )),
        "{text}"
    );
    let lock = lockfile(&env, "lockfiles/huge.lock");
    assert_eq!(locked(&lock, "engine.vllm"), None);
}

#[test]
fn a_hub_answer_longer_than_a_hub_answer_is_not_read_past_its_limit_and_the_model_stays_unpinned() {
    let rt = runtime();
    let app = axum::Router::new().route(
        "/api/models/{org}/{name}/revision/{revision}",
        get(|| async { huge_body(b"{\"sha\":\"", HUGE_ANSWER_BYTES) }),
    );
    let endpoint = format!("http://127.0.0.1:{}", serve(&rt, app));
    let env = TestEnv::new();
    env.write(
        "hub.kdl",
        &hub_experiment(r#"model "Qwen/Qwen3-14B""#, "sim"),
    );
    let out = hub_cmd(&env, &endpoint, &["lock", "hub.kdl"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let text = words(&out);
    assert!(
        text.contains(&format!(
            "cannot pin model.Qwen/Qwen3-14B@main: cannot ask {endpoint} for `Qwen/Qwen3-14B`: its answer is longer than the 16777216 bytes perfpipe reads of a Hub API answer"
        )),
        "{text}"
    );
    let lock = lockfile(&env, "lockfiles/hub.lock");
    assert_eq!(locked(&lock, "model.Qwen/Qwen3-14B@main"), None);
}

/// A `lock --update` that cannot reach the Hub, or is offline, keeps the
/// pins it cannot refresh and says so: the file is unchanged (it rewrote
/// them unpinned, moving every key that used them).
#[test]
fn an_update_that_cannot_refresh_its_pins_keeps_them_and_the_file() {
    let rt = runtime();
    let (hub, endpoint) = start_hub(&rt);
    let env = TestEnv::new();
    env.write(
        "hub.kdl",
        &hub_experiment(r#"model "Qwen/Qwen3-14B""#, "sim"),
    );
    let pinned = hub_cmd(&env, &endpoint, &["lock", "hub.kdl"])
        .env("HF_TOKEN", &hub.token)
        .output()
        .unwrap();
    assert_eq!(pinned.status.code(), Some(0), "{}", stderr(&pinned));
    let text = env.read("lockfiles/hub.lock");
    assert!(text.contains(QWEN_MAIN), "{text}");

    let gone = format!("http://127.0.0.1:{}", crate::common::free_port());
    let unreachable = hub_cmd(&env, &gone, &["lock", "hub.kdl", "--update"])
        .output()
        .unwrap();
    let err = stderr(&unreachable);
    assert_eq!(unreachable.status.code(), Some(1), "{err}");
    assert_eq!(env.read("lockfiles/hub.lock"), text);
    assert!(
        err.contains("perfpipe: `lockfiles/hub.lock` unchanged")
            && err.contains(&format!(
                "warning: cannot reach {gone}, so model.Qwen/Qwen3-14B@main keeps the pin the lockfile had (`perfpipe lock --update` refreshes them where it is reachable)"
            )),
        "{err}"
    );

    let offline = env.run(&["lock", "hub.kdl", "--update", "--offline"]);
    let err = stderr(&offline);
    assert_eq!(offline.status.code(), Some(0), "{err}");
    assert_eq!(env.read("lockfiles/hub.lock"), text);
    assert!(
        err.contains("offline, so `--update` refreshed no pin: the lockfile keeps those it had"),
        "{err}"
    );
}

/// `facts::releases`: a version vLLM never released is named by `plan`
/// under `sim` and `docker` (not `local`, which checks the installed
/// engine), and refused by `run --locked` before anything starts.
#[test]
fn an_engine_version_never_released_is_warned_by_plan_and_refused_under_locked() {
    let env = TestEnv::tiny();
    let said = "warning: `engine vllm version=\"0.99.7\"`: vLLM has released no such version that perfpipe knows of";
    // Each plan succeeds before what it lacks counts.
    let plan = |runtime: &str| exited(env.run(&["plan", "tiny.kdl", "--runtime", runtime]), 0);
    for runtime in ["sim", "docker", "local"] {
        let out = plan(runtime);
        assert!(
            !crate::common::stderr(&out).contains("has released no such"),
            "{runtime}"
        );
    }
    let kdl = env.read("tiny.kdl").replace(
        "engine vllm version=\"0.11.0\"",
        "engine vllm version=\"0.99.7\"",
    );
    env.write("tiny.kdl", &kdl);
    for runtime in ["sim", "docker"] {
        let out = plan(runtime);
        let err = crate::common::stderr(&out);
        assert!(err.contains(said), "{runtime}: {err}");
        assert!(err.contains("to 0.32.0, is of 2026-11-27"), "{err}");
    }
    let local = plan("local");
    assert!(!crate::common::stderr(&local).contains("has released no such"));
    let locked = env.run(&["run", "tiny.kdl", "--runtime", "sim", "--locked"]);
    assert_eq!(
        locked.status.code(),
        Some(2),
        "{}",
        crate::common::stderr(&locked)
    );
    let err = crate::common::words(&locked);
    assert!(
        err.contains("vLLM has released no such version") && err.contains("under `--locked`"),
        "{err}"
    );
}

/// A one-run study of vLLM `version`, its image named in `host`'s registry.
fn pins_study(host: &str, version: &str) -> String {
    format!(
        r#"experiment "pins" {{
    hardware "nvidia-a100-sxm4-80gb" gpus=1
    model "Qwen/Qwen3-14B" revision="{COMMIT}"
    engine vllm version="{version}" image="{host}/vllm/vllm-openai:v{version}"
    workload short {{
        dataset random input=16 output=4 seed=1
        prompts 8
    }}
    step vllm engine=vllm gpus=1
}}
"#
    )
}

/// Online, the registry's tags say which versions an engine released: a
/// tag it lacks (`v0.99.7`) is named with the tags nearest it, and a version
/// newer than perfpipe's list (`0.33.0`) is warned of by `plan` only until
/// `lock` has pinned its image.
#[test]
fn the_registrys_tags_decide_whether_an_engine_version_was_released() {
    let rt = runtime();
    let registry = Registry::start(&rt);
    let host = registry.host();
    let token = registry
        .issuer
        .mint("repository:vllm/vllm-openai:pull,push");
    for tag in ["v0.11.0", "v0.33.0", "nightly"] {
        rt.block_on(registry.push_image("vllm/vllm-openai", &token, Some(tag), "amd64", tag));
    }
    let env = TestEnv::new();
    let study = |version: &str| pins_study(&host, version);
    let lock = || {
        env.cmd(&["lock", "pins.kdl"])
            .env_remove("PERFPIPE_OFFLINE")
            .output()
            .unwrap()
    };
    let warned = |env: &TestEnv| {
        let plan = env.run(&["plan", "pins.kdl", "--runtime", "docker"]);
        assert_eq!(plan.status.code(), Some(0), "{}", stderr(&plan));
        stderr(&plan).contains("vLLM has released no such version that perfpipe knows of")
    };

    env.write("pins.kdl", &study("0.99.7"));
    let never = lock();
    assert_eq!(never.status.code(), Some(1), "{}", stderr(&never));
    assert!(
        stderr(&never).contains(&format!(
            "warning: cannot pin engine.vllm: {host} has no `vllm/vllm-openai:v0.99.7` (its tags nearest it: v0.11.0, v0.33.0, nightly)"
        )),
        "{}",
        stderr(&never)
    );
    assert!(
        warned(&env),
        "a version neither the list nor the registry has"
    );

    env.write("pins.kdl", &study("0.33.0"));
    assert!(warned(&env), "before `lock` asked the registry");
    let pinned = lock();
    assert_eq!(pinned.status.code(), Some(0), "{}", stderr(&pinned));
    assert!(!warned(&env), "its registry has the tag");
    let locked = env.run(&["run", "pins.kdl", "--runtime", "sim", "--locked"]);
    assert_eq!(locked.status.code(), Some(0), "{}", stderr(&locked));
}

/// Offline, `lock` never changes a pin without saying so: after an engine
/// upgrade with its registry gone, the new declaration is written (the
/// experiment moved on), its dropped pin said (`→ (unpinned)`), the runs
/// with new keys counted, and what could not be checked named (exit 1);
/// `--offline` then leaves the file as it is.
#[test]
fn an_upgrade_locked_without_its_registry_says_the_pin_it_dropped_and_what_was_not_checked() {
    let rt = runtime();
    let registry = Registry::start(&rt);
    let host = registry.host();
    let token = registry
        .issuer
        .mint("repository:vllm/vllm-openai:pull,push");
    let (digest, _) =
        rt.block_on(registry.push_image("vllm/vllm-openai", &token, Some("v0.11.0"), "amd64", "1"));
    let env = TestEnv::new();
    let study = |version: &str| pins_study(&host, version);
    let lock = |extra: &[&str]| {
        let mut args = vec!["lock", "pins.kdl"];
        args.extend(extra);
        env.cmd(&args)
            .env_remove("PERFPIPE_OFFLINE")
            .output()
            .unwrap()
    };
    env.write("pins.kdl", &study("0.11.0"));
    let pinned = lock(&[]);
    assert_eq!(pinned.status.code(), Some(0), "{}", stderr(&pinned));
    drop(registry);

    env.write("pins.kdl", &study("0.17.1"));
    let upgraded = lock(&[]);
    let err = stderr(&upgraded);
    assert_eq!(upgraded.status.code(), Some(1), "{err}");
    let said: Vec<&str> = err
        .lines()
        .filter(|l| !l.starts_with("  cannot ask"))
        .collect();
    assert_eq!(
        said,
        [
            "perfpipe: updated `lockfiles/pins.lock`:".to_owned(),
            format!(
                "  ~ engine.vllm: image {host}/vllm/vllm-openai:v0.11.0 → {host}/vllm/vllm-openai:v0.17.1; version 0.11.0 → 0.17.1; pinned image {host}/vllm/vllm-openai@{digest} → (unpinned)"
            ),
            "  1 run with new keys (`perfpipe explain` says why each one runs)".to_owned(),
            format!(
                "warning: cannot reach {host}, so engine.vllm stays unpinned (`perfpipe lock` pins them where it is reachable; `--offline` asks no network)"
            ),
            "perfpipe: 4 inputs, 1 unpinned: engine.vllm".to_owned(),
        ],
        "{err}"
    );
    let written = env.read("lockfiles/pins.lock");
    let offline = lock(&["--offline"]);
    assert_eq!(offline.status.code(), Some(0), "{}", stderr(&offline));
    assert!(
        stderr(&offline).contains("perfpipe: `lockfiles/pins.lock` is up to date"),
        "{}",
        stderr(&offline)
    );
    assert_eq!(env.read("lockfiles/pins.lock"), written);
}
