//! The examples each subcommand's long help (`--help`) ends with.

pub const RUN: &str = "\
Examples:
  perfpipe run experiments/qwen3-235b-a100.kdl --runtime sim
  perfpipe run experiments/qwen3-14b-a100.kdl --max-prompts 5      # a quick smoke test
  perfpipe run experiments/qwen3-14b-a100.kdl --locked --samples 3 # CI: three samples per run
  perfpipe run experiments/qwen3-235b-a100.kdl --executor slurm --partition gpu --time-limit 4:00:00";

pub const PLAN: &str = "\
Examples:
  perfpipe plan experiments/qwen3-235b-a100.kdl --runtime sim
  perfpipe plan experiments/qwen3-14b-a100.kdl --retry-failed --samples 3
  perfpipe plan experiments/qwen3-14b-a100.kdl --refresh   # ask caches again about runs they lacked";

pub const REPORT: &str = "\
Examples:
  perfpipe report experiments/qwen3-14b-a100.kdl --runtime sim
  perfpipe report experiments/qwen3-14b-a100.kdl --published --out published.md
  perfpipe report experiments/qwen3-14b-a100.kdl --format html --out report.html
  perfpipe report experiments/qwen3-14b-a100.kdl --format csv > numbers.csv";

pub const VERIFY: &str = "\
Examples:
  perfpipe verify experiments/qwen3-14b-a100.kdl
  perfpipe verify experiments/qwen3-14b-a100.kdl --tolerance 3% --metrics total_token_throughput";

pub const LOCK: &str = "\
Examples:
  perfpipe lock experiments/qwen3-235b-a100.kdl
  perfpipe lock experiments/qwen3-235b-a100.kdl --update engine.vllm  # take the tag's new digest
  perfpipe lock experiments/qwen3-235b-a100.kdl --offline";

pub const FETCH: &str = "\
Examples:
  perfpipe fetch experiments/qwen3-235b-a100.kdl
  perfpipe fetch experiments/qwen3-235b-a100.kdl --runtime local  # models only, no images";

pub const EXPLAIN: &str = "\
Examples:
  perfpipe explain experiments/qwen3-235b-a100.kdl --runtime sim
  perfpipe explain experiments/qwen3-235b-a100.kdl vllm-fp8-tp8-ep";

pub const DIFF: &str = "\
Examples:
  cp lockfiles/qwen3-235b-a100.lock before.lock   # then upgrade vLLM in the experiment
  perfpipe diff before.lock lockfiles/qwen3-235b-a100.lock
  perfpipe diff before.lock lockfiles/qwen3-235b-a100.lock --fail-on-regression 5 --format json";

pub const REALISE: &str = "\
Examples:
  perfpipe plan experiments/qwen3-14b-a100.kdl --write-launches  # writes store/drv/<launch key>.json
  perfpipe realise 0d2d461fab25                                  # the key as `plan` lists it
  perfpipe realise store/drv/<launch key>.json
  perfpipe realise <launch key> --store /shared/perfpipe-store";

pub const IMPORT: &str = "\
Examples:
  perfpipe import experiments/qwen3-14b-a100.kdl --step vllm --workload sharegpt --from block.txt
  perfpipe import experiments/qwen3-14b-a100.kdl --step vllm --workload sharegpt \\
      --source https://example.com/qwen3-14b-a100 < block.txt";

pub const INIT: &str = "\
Examples:
  perfpipe init --from-page qwen3-14b-a100.md
  perfpipe init --from-page qwen3-14b-a100.md -o experiments/qwen3-14b-a100.kdl --force
  perfpipe report experiments/qwen3-14b-a100.kdl --published";

pub const BENCH: &str = "\
Examples:
  perfpipe bench --base-url http://127.0.0.1:8000 --backend openai-chat \\
      --dataset-name random --random-input-len 4000 --random-output-len 200 \\
      --num-prompts 500 --seed 42 --save-result
  perfpipe bench --port 8000 --dataset-name sharegpt \\
      --dataset-path ShareGPT_V3_unfiltered_cleaned_split.json --request-rate 10
Without a GPU, against perfpipe's simulated engine (docs/metrics.md, \"Trying `bench` without a GPU\"):
  PERFPIPE_SIM_GPU=nvidia-h100-sxm5-80gb perfpipe sim-engine vllm serve Qwen/Qwen3-14B --port 8000 &
  perfpipe bench --port 8000 --model Qwen/Qwen3-14B --num-prompts 200";

pub const STORE: &str = "\
Examples:
  perfpipe store verify
  perfpipe store gc --dry-run
  perfpipe store path experiments/qwen3-14b-a100.kdl vllm sharegpt";

pub const STORE_VERIFY: &str = "\
Examples:
  perfpipe store verify
  perfpipe store verify --store /data/perfpipe-store";

pub const STORE_GC: &str = "\
Examples:
  perfpipe store gc --dry-run
  perfpipe store gc experiments/qwen3-14b-a100.kdl before.lock  # keep only what these reach";

pub const COMPLETIONS: &str = "\
Examples:
  perfpipe completions bash > ~/.local/share/bash-completion/completions/perfpipe
  perfpipe completions zsh > ~/.zfunc/_perfpipe      # with `fpath+=~/.zfunc` in ~/.zshrc
  perfpipe completions fish > ~/.config/fish/completions/perfpipe.fish";

pub const MAN: &str = "\
Examples:
  perfpipe man | man -l -
  perfpipe man ~/.local/share/man/man1   # then `man perfpipe-run`";

pub const STORE_PATH: &str = "\
Examples:
  perfpipe store path experiments/qwen3-14b-a100.kdl --runtime sim
  perfpipe store path experiments/qwen3-14b-a100.kdl vllm sharegpt | awk '$3 == \"log\" {print $4}'
  less $(perfpipe store path experiments/qwen3-14b-a100.kdl vllm sharegpt | grep engine.log | cut -f4)";

pub const CACHE: &str = "\
Examples:
  perfpipe cache keygen alice-1
  perfpipe cache push --all --to oci://registry.example.org/team/perfpipe";

pub const CACHE_PUSH: &str = "\
Examples:
  perfpipe cache push experiments/qwen3-14b-a100.kdl   # to `push-to` of config.toml
  perfpipe cache push --all --to /srv/perfpipe-cache --secret-key ~/.config/perfpipe/keys/alice-1.secret
  perfpipe cache push --all --to oci://localhost:5000/team/perfpipe";

pub const CACHE_SIGN: &str = "\
Examples:
  perfpipe cache sign --all --key ~/.config/perfpipe/keys/alice-2.secret   # rotate: alice-1's samples get alice-2's signature
  perfpipe cache sign experiments/qwen3-14b-a100.kdl --to oci://localhost:5000/team/perfpipe --key keys/team-b.secret";

pub const CACHE_KEYGEN: &str = "\
Examples:
  perfpipe cache keygen alice-1             # ~/.config/perfpipe/keys/alice-1.{secret,public}
  perfpipe cache keygen ci-runner --dir /etc/perfpipe/keys";
