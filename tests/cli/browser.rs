//! The HTML report in a real browser: headless Chromium (Debian's
//! `chromium`, which `scripts/test-deps.sh` installs) loads the file, runs
//! its script, and must find every section and chart; nothing may be fetched
//! from outside (every request goes to a proxy this test owns, which must see
//! none). The screenshot is kept for a reader to look at.

use std::io::Read;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::common::TestEnv;

/// The browser: `PERFPIPE_CHROMIUM`, else Debian's `/usr/bin/chromium`.
/// Missing, the test fails unless `PERFPIPE_TEST_SKIP=browser` skips it.
fn chromium() -> Option<PathBuf> {
    let path = std::env::var_os("PERFPIPE_CHROMIUM")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/chromium"));
    if path.is_file() {
        return Some(path);
    }
    crate::common::cannot_test(
        "browser",
        &format!(
            "no browser at {} (scripts/test-deps.sh installs chromium)",
            path.display()
        ),
    );
    None
}

/// A loopback listener standing in for the network: it records the first
/// line of every connection made to it.
struct Proxy {
    port: u16,
    seen: Arc<Mutex<Vec<String>>>,
}

impl Proxy {
    fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let record = Arc::clone(&seen);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let _ = stream.set_read_timeout(Some(Duration::from_millis(500)));
                let mut head = [0u8; 256];
                let n = (&stream).read(&mut head).unwrap_or(0);
                let text = String::from_utf8_lossy(&head[..n]);
                let line = text.lines().next().unwrap_or("(nothing sent)").to_owned();
                record.lock().unwrap().push(line);
            }
        });
        Self { port, seen }
    }

    /// Fails when anything but Chromium's own services reached the proxy.
    fn assert_page_fetched_nothing(&self) {
        let fetched: Vec<String> = self
            .seen
            .lock()
            .unwrap()
            .iter()
            .filter(|line| !browser_service(line))
            .cloned()
            .collect();
        assert_eq!(
            fetched,
            Vec::<String>::new(),
            "the page reached for the network"
        );
    }
}

/// Chromium headless on `page` with `args`, every request through `proxy`
/// and no name resolving; killed after `secs`.
fn browse(browser: &Path, profile: &Path, proxy: &Proxy, args: &[&str], page: &Path) -> Output {
    let child = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-default-apps",
            "--disable-extensions",
            "--metrics-recording-only",
            "--no-pings",
            "--disable-breakpad",
            "--disable-domain-reliability",
            "--disable-client-side-phishing-detection",
            "--hide-scrollbars",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("--proxy-server=http://127.0.0.1:{}", proxy.port))
        // Loopback too goes through the proxy (Chromium bypasses it by default).
        .arg("--proxy-bypass-list=<-loopback>")
        .arg("--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1")
        .args(args)
        .arg(format!("file://{}", page.display()))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("chromium starts");
    let pid = child.id() as i32;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || tx.send(child.wait_with_output()));
    match rx.recv_timeout(Duration::from_secs(60)) {
        Ok(output) => output.expect("chromium runs"),
        Err(_) => {
            // SAFETY: signals our own child.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            panic!("chromium did not end within 60 s");
        }
    }
}

/// The page's DOM once its scripts ran (3 s of virtual time), as Chromium
/// dumps it; fails when Chromium does not end with a whole document.
fn dump_dom(browser: &Path, profile: &Path, proxy: &Proxy, page: &Path) -> String {
    let dom = browse(
        browser,
        profile,
        proxy,
        &["--virtual-time-budget=3000", "--dump-dom"],
        page,
    );
    let text = String::from_utf8_lossy(&dom.stdout).into_owned();
    assert!(
        dom.status.success() && text.contains("</html>"),
        "{}",
        String::from_utf8_lossy(&dom.stderr)
    );
    text
}

/// A screenshot of `page` in a window of `size` ("W,H") once its scripts
/// ran, kept as `name` under the tests' directory for a reader to look at.
fn screenshot(
    browser: &Path,
    profile: &Path,
    proxy: &Proxy,
    page: &Path,
    name: &str,
    size: &str,
) -> PathBuf {
    let shots = Path::new(env!("CARGO_TARGET_TMPDIR")).join("browser");
    std::fs::create_dir_all(&shots).unwrap();
    let shot = shots.join(name);
    let _ = std::fs::remove_file(&shot);
    let taken = browse(
        browser,
        profile,
        proxy,
        &[
            &format!("--window-size={size}"),
            "--virtual-time-budget=3000",
            &format!("--screenshot={}", shot.display()),
        ],
        page,
    );
    assert!(
        taken.status.success(),
        "{}",
        String::from_utf8_lossy(&taken.stderr)
    );
    let png = std::fs::read(&shot).expect("a screenshot");
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    shot
}

/// Requests Chromium makes of its own whatever the page (its clock, its
/// component updater, its sign-in), which its flags do not all turn off: the
/// exact endpoints, so a page's fetch of any other Google host (fonts,
/// scripts) still fails the test.
fn browser_service(request_line: &str) -> bool {
    [
        "GET http://clients2.google.com/time/1/current?",
        "POST http://update.googleapis.com/service/update2/json?",
        "CONNECT update.googleapis.com:443 ",
        "CONNECT redirector.gvt1.com:443 ",
        "CONNECT accounts.google.com:443 ",
    ]
    .iter()
    .any(|service| request_line.starts_with(service))
}

#[test]
fn the_html_report_shows_its_sections_and_charts_in_a_browser_offline() {
    let Some(browser) = chromium() else {
        return;
    };
    let started = Instant::now();
    let env = TestEnv::new();
    env.copy_fixture("experiments/curves.kdl", "curves.kdl");
    let run = env.run_within(120, &["run", "curves.kdl"]);
    assert_eq!(
        run.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let page = env.path("reports/curves.html");
    assert!(page.is_file());
    let proxy = Proxy::start();

    let dom_text = dump_dom(&browser, &env.path("chromium-profile"), &proxy, &page);
    // The script ran: the tables are sortable.
    assert!(dom_text.contains("data-sortable=\"ready\""), "{dom_text}");
    assert!(dom_text.contains("title=\"sort by this column\""));
    for section in [
        "<h1 id=\"curves-study\"",
        "<h2 id=\"charts\"",
        "<h2 id=\"runs\"",
    ] {
        assert!(dom_text.contains(section), "no {section}");
    }
    for chart in ["latency-c1", "frontier-c1", "cdf-c1", "cdf-c4", "cdf-c16"] {
        let figure = format!("<figure id=\"chart-{chart}\" class=\"chart\"><svg");
        assert!(dom_text.contains(&figure), "no {figure}");
    }

    let shot = screenshot(
        &browser,
        &env.path("chromium-profile"),
        &proxy,
        &page,
        "curves-report.png",
        "1366,3000",
    );
    eprintln!("screenshot of the HTML report: {}", shot.display());

    proxy.assert_page_fetched_nothing();
    assert!(
        started.elapsed() < Duration::from_secs(180),
        "{:?}",
        started.elapsed()
    );
}

/// What the page's script does when a reader uses it, checked from inside
/// the page: a point hovered shows its values, a series' button hides and
/// shows it, a column sorted either way keeps rows without a value last, and
/// a long command wraps. Its findings are set on `<body>` as attributes.
const DRIVER: &str = r#"
(function () {
  "use strict";
  var body = document.body;
  var hit = document.querySelector("figure.chart circle.hit");
  hit.dispatchEvent(new MouseEvent("mouseenter"));
  var tip = document.querySelector("div.chart-tip");
  body.setAttribute("data-test-tip", tip.hidden ? "(hidden)" : tip.textContent);
  hit.dispatchEvent(new MouseEvent("mouseleave"));
  body.setAttribute("data-test-tip-after", tip.hidden ? "hidden" : "shown");

  var button = document.querySelector("figure.chart button[data-series='1']");
  var group = button.closest("figure").querySelector("g.series[data-series='1']");
  button.click();
  body.setAttribute("data-test-toggled", button.getAttribute("aria-pressed") + " " + group.getAttribute("display"));
  button.click();
  body.setAttribute("data-test-untoggled", button.getAttribute("aria-pressed") + " " + group.getAttribute("display"));

  // A row of the runs table whose first numeric column has no value.
  var table = Array.prototype.find.call(document.querySelectorAll("table"), function (t) {
    return t.tBodies[0] && t.tBodies[0].rows.length > 1;
  });
  var rows = table.tBodies[0].rows;
  var column = Array.prototype.findIndex.call(rows[0].cells, function (cell) {
    return /^[0-9]/.test(cell.textContent.trim());
  });
  var failed = rows[0].cloneNode(true);
  failed.cells[column].textContent = "-";
  failed.setAttribute("data-failed", "yes");
  table.tBodies[0].insertBefore(failed, rows[0]);
  var header = table.querySelectorAll("thead th")[column];
  var last = function () { var r = table.tBodies[0].rows; return r[r.length - 1].getAttribute("data-failed"); };
  header.click();
  var ascending = last();
  header.click();
  body.setAttribute("data-test-sorted", ascending + " " + last() + " " + header.getAttribute("aria-sort"));

  var pre = document.createElement("pre");
  var code = document.createElement("code");
  code.textContent = "vllm serve Qwen/Qwen3-14B" + " --max-num-seqs 256 --max-num-batched-tokens 16384".repeat(12);
  pre.appendChild(code);
  document.querySelector("main").appendChild(pre);
  body.setAttribute("data-test-wraps", pre.scrollWidth <= pre.clientWidth ? "yes" : "no " + pre.scrollWidth + ">" + pre.clientWidth);

  // Left so for the screenshot: the first chart moved to the page's top
  // (a headless screenshot does not follow a scroll), its second series
  // hidden and a point's values shown.
  button.click();
  var main = document.querySelector("main");
  main.insertBefore(hit.closest("figure"), main.firstChild);
  hit.dispatchEvent(new MouseEvent("mouseenter"));
})();
"#;

/// `page` with [`DRIVER`] run after its own script: allowed by its digest
/// in the page's Content-Security-Policy, as the page's own script is.
fn with_driver(page: &str) -> String {
    use base64::Engine;
    use sha2::Digest;
    let digest = base64::engine::general_purpose::STANDARD.encode(sha2::Sha256::digest(DRIVER));
    let allowed = page.replacen("script-src ", &format!("script-src 'sha256-{digest}' "), 1);
    assert_ne!(allowed, page, "the page has a script-src");
    allowed.replacen("</body>", &format!("<script>{DRIVER}</script>\n</body>"), 1)
}

/// The value of `name` on the dumped `<body>`.
fn body_attribute<'a>(dom: &'a str, name: &str) -> &'a str {
    let start = dom
        .find(&format!(" {name}=\""))
        .unwrap_or_else(|| panic!("no {name} in {dom}"))
        + name.len()
        + 3;
    let end = dom[start..].find('"').expect("a closed attribute") + start;
    &dom[start..end]
}

#[test]
fn a_reader_hovers_a_point_hides_a_series_sorts_with_failures_last_and_reads_a_long_command() {
    let Some(browser) = chromium() else {
        return;
    };
    let env = TestEnv::new();
    env.copy_fixture("experiments/curves.kdl", "curves.kdl");
    let run = env.run_within(120, &["run", "curves.kdl"]);
    assert_eq!(
        run.status.code(),
        Some(0),
        "{}",
        crate::common::stderr(&run)
    );
    env.write(
        "driven.html",
        &with_driver(&env.read("reports/curves.html")),
    );
    let proxy = Proxy::start();
    let dom = dump_dom(
        &browser,
        &env.path("chromium-profile"),
        &proxy,
        &env.path("driven.html"),
    );
    assert!(dom.contains("data-charts=\"ready\""), "{dom}");
    let tip = body_attribute(&dom, "data-test-tip");
    assert!(
        tip.starts_with("vllm (vLLM 0.11.0) · c=1")
            && tip.contains("Total TPS, all replicas (tok/s): "),
        "{tip}"
    );
    assert_eq!(body_attribute(&dom, "data-test-tip-after"), "hidden");
    assert_eq!(body_attribute(&dom, "data-test-toggled"), "false none");
    assert_eq!(body_attribute(&dom, "data-test-untoggled"), "true null");
    assert_eq!(
        body_attribute(&dom, "data-test-sorted"),
        "yes yes descending"
    );
    assert_eq!(body_attribute(&dom, "data-test-wraps"), "yes");

    // The state the driver leaves, for a reader to look at.
    let shot = screenshot(
        &browser,
        &env.path("chromium-profile"),
        &proxy,
        &env.path("driven.html"),
        "curves-report-hovered.png",
        "1366,900",
    );
    eprintln!(
        "screenshot of a point hovered and a series hidden: {}",
        shot.display()
    );
    proxy.assert_page_fetched_nothing();
}

/// An experiment whose every free text (title, model path, workload and
/// comparison titles, a step's flag, the page's recommended command and
/// column titles) is markup that would load from `port` or retitle the
/// page if it ran. Step names are identifiers: perfpipe refuses markup there.
fn hostile_experiment(port: u16) -> String {
    let load = format!("http://127.0.0.1:{port}");
    let markup = format!(
        r#"Tiny <span style="background-color:red;background-image:url({load}/track)" tabindex="0" autofocus onfocus="document.title='pwned'"> <img src="{load}/img" onerror="document.title='pwned'"> <script>document.title='pwned'</script> [click]({load}/link) ![i]({load}/i.png)"#
    );
    let q = perfpipe::kdl_string::quote;
    let hostile = q(&markup);
    format!(
        r#"experiment "hostile" {{
    title {hostile}
    hardware "nvidia-h100-sxm5-80gb" gpus=2
    model {model}
    engine vllm version="0.11.0"
    engine sglang version="0.5.9"
    workload chat {{ title {hostile}; dataset random input=128 output=64 seed=1; prompts 100; }}
    step vllm engine=vllm gpus=1 {{
        args "--served-model-name" {hostile}
        expect chat {{ total_token_throughput 500; mean_tpot_ms 8; }}
    }}
    step sglang engine=sglang gpus=1 {{
        expect chat {{ total_token_throughput 1100; mean_tpot_ms 5; }}
    }}
    compare {hostile} baseline=vllm workload=chat {{ candidate sglang; summary {hostile}; }}
    conclusion baseline=vllm optimized=sglang {{
        command "vllm" "serve" {hostile}
        table "Benchmark Case" {hostile} "Optimized"
        case chat {{ baseline "Total TPS: 500.00" "Mean TPOT(ms): 8.00"; optimized "Total TPS: 1100.00 (+120.0%)" "Mean TPOT(ms): 5.00"; }}
    }}
}}
"#,
        model = q(&format!("/models/{markup}")),
    )
}

#[test]
fn markup_in_an_experiment_runs_no_script_and_loads_nothing_in_a_browser() {
    let Some(browser) = chromium() else {
        return;
    };
    let proxy = Proxy::start();
    let env = TestEnv::new();
    env.write("hostile.kdl", &hostile_experiment(proxy.port));
    let out = env.run(&[
        "report",
        "hostile.kdl",
        "--published",
        "--format",
        "html",
        "--out",
        "hostile.html",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        crate::common::stderr(&out)
    );
    let dom_text = dump_dom(
        &browser,
        &env.path("chromium-profile"),
        &proxy,
        &env.path("hostile.html"),
    );
    // The page's own script ran; none of the experiment's did.
    assert!(dom_text.contains("data-sortable=\"ready\""), "{dom_text}");
    assert!(!dom_text.contains("<title>pwned</title>"), "{dom_text}");
    assert!(dom_text.contains("<title>Tiny &lt;span"), "{dom_text}");
    proxy.assert_page_fetched_nothing();
}
