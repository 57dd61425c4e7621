//! A deterministic fuzz of the command line (issue 32): a few hundred argument vectors
//! drawn with a seeded generator from the commands, flags and values `tilekit` takes, mixed
//! with junk (empty strings, control characters, huge and negative numbers, unknown flags),
//! each run against a cache in a temporary directory. Every run must end by itself with
//! exit status 0 (done), 1 (failed, said why) or 2 (usage, or no GPU), and never panic.
//!
//! Safety: every path the binary may write (the tuning and CUBIN caches, `--cache-path`,
//! `--out`, `--svg`, `cache export`, and a bare word taken as a file) lies in the
//! temporary directory, which is also the working directory; no token is absolute, `..`
//! or `.`; no GPU is visible (`CUDA_VISIBLE_DEVICES` empty), so `tune` and `bench` stop at
//! the device check. `TILEKIT_FUZZ_SEED` and `TILEKIT_FUZZ_CASES` replay or widen a run.

use rand::rngs::StdRng;
use rand::{Rng as _, SeedableRng};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A seeded generator (the same vectors every run, for a given `rand`).
struct Rng(StdRng);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0.random_range(0..n)
    }
    fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[self.below(xs.len())]
    }
}

const COMMANDS: &[&str] = &[
    "list",
    "show",
    "cache",
    "devices",
    "tune",
    "bench",
    "help",
    "--help",
    "-h",
    "-V",
    "--version",
    "lst",
    "",
];

const CACHE_ACTIONS: &[&str] = &["show", "export", "import", "merge", "clear", "purge"];

const KERNELS: &[&str] = &[
    "softmax",
    "rmsnorm",
    "matmul",
    "matmul_bias_act",
    "layernorm_bwd",
    "partial_sum",
    "scale_chain",
    "cross_entropy",
    "nope",
    "SOFTMAX",
];

/// Flags (some take the value that may follow them).
const FLAGS: &[&str] = &[
    "--json",
    "--config",
    "--dtype",
    "--target",
    "--unaligned",
    "--access",
    "--ir",
    "--stage",
    "--kernel",
    "--shape",
    "--scalar",
    "--all",
    "--exhaustive",
    "--force",
    "--seed",
    "--in-process",
    "--dry-run",
    "--timeout",
    "--out",
    "--device",
    "--from",
    "--peer",
    "--svg",
    "--rounds",
    "--cache-path",
    "-q",
    "-v",
    "-vv",
    "-qv",
    "--quiet",
    "--verbose",
    "--bogus",
    "-x",
    "--",
    "--help",
];

/// Values flags and positionals take, valid and not.
const VALUES: &[&str] = &[
    "BLOCK=1024,WARPS=4",
    "BLOCK=4096,WARPS=8",
    "BM=128,BN=128,BK=32,WARPS=4,STAGES=5,SMEM=Swizzle128",
    "BLOCK=3",
    "BLOCK=",
    "=",
    ",,",
    "4096x4096",
    "4x4",
    "1x1x1",
    "0x0",
    "x",
    "18446744073709551616x2",
    "-1",
    "0",
    "1",
    "99999999999999999999999",
    "NaN",
    "inf",
    "f32",
    "bf16",
    "f16",
    "i64",
    "sm_80",
    "sm_90a",
    "sm_1000",
    "a=cols",
    "c=general",
    "a=rows",
    "ir",
    "layouts",
    "smem",
    "cuda",
    "eps=1e-5",
    "eps=NaN",
    "repeats=18446744073709551615",
    "act=99",
    "torch=0.5",
    "torch=-1",
    "out.json",
    "report.json",
    "plot.svg",
    "sub/dir/file.json",
    "junk.json",
    "export.json",
    "cache2.sled",
    "not-a-cache",
    "",
    " ",
    "\u{1b}[2J",
    "\u{1b}]0;title\u{7}",
    "a\nb",
    "\t",
    "\u{202e}rtl",
    "é名",
    "\u{7f}",
];

/// A word made of random characters (never a path that leaves the temporary directory:
/// no `/`, no leading `.`).
fn junk(rng: &mut Rng) -> String {
    const CHARS: &[char] = &[
        'a', 'z', 'K', '0', '9', '=', ',', 'x', '-', '_', ' ', '\u{1b}', '\u{0}', '\u{7}', '\n',
        'é', '\u{202e}', '.', '%', '$', '{', '}',
    ];
    let n = rng.below(12);
    let mut s: String = (0..n).map(|_| CHARS[rng.below(CHARS.len())]).collect();
    // A NUL cannot be passed to a process; keep the rest.
    s.retain(|c| c != '\u{0}');
    while s.starts_with('.') {
        s.remove(0);
    }
    s
}

/// Values for the flag `flag` that it could take, good and bad (or any value).
fn value_for(rng: &mut Rng, flag: &str) -> String {
    let xs: &[&str] = match flag {
        "--config" => &[
            "BLOCK=1024,WARPS=4",
            "BLOCK=4096,WARPS=8",
            "BLOCK=3",
            "WARPS=4",
            "",
        ],
        "--dtype" => &["f32", "bf16", "f16", "i64", "F32"],
        "--target" => &["sm_80", "sm_90a", "sm_1000"],
        "--access" => &["a=cols", "c=general", "a=cols,b=cols", "x=cols", "a=rows"],
        "--stage" => &["ir", "layouts", "smem", "cuda", "ptx"],
        "--shape" => &[
            "4096x4096",
            "4x4",
            "1x1x1",
            "0x0",
            "18446744073709551616x2",
            "x",
        ],
        "--scalar" => &[
            "eps=1e-5",
            "eps=NaN",
            "repeats=18446744073709551615",
            "act=99",
            "=",
        ],
        "--seed" | "--timeout" | "--device" | "--rounds" => {
            &["0", "1", "-1", "99999999999999999999"]
        }
        "--out" | "--svg" | "--from" => {
            &["out.json", "plot.svg", "junk.json", "sub/dir/f.json", ""]
        }
        "--peer" => &["torch=0.5", "torch=-1", "torch", "=1"],
        "--kernel" => KERNELS,
        _ => VALUES,
    };
    rng.pick(xs).to_string()
}

/// A vector shaped as the command line expects (a command, its arguments, flags with
/// values), with one part in four replaced by something else.
fn structured(rng: &mut Rng) -> Vec<String> {
    let mut v: Vec<String> = Vec::new();
    let flags: &[&str] = match rng.below(5) {
        0 => {
            v.extend(["show".to_string(), rng.pick(KERNELS).to_string()]);
            &[
                "--config",
                "--dtype",
                "--target",
                "--unaligned",
                "--access",
                "--ir",
                "--stage",
                "--json",
            ]
        }
        1 => {
            v.extend(["cache".to_string(), rng.pick(CACHE_ACTIONS).to_string()]);
            if rng.below(2) == 0 {
                v.push(
                    rng.pick(&["export.json", "junk.json", "not-a-cache", "missing.json"])
                        .into(),
                );
            }
            &["--json", "--cache-path"]
        }
        2 => {
            v.push("tune".into());
            &[
                "--kernel",
                "--shape",
                "--dtype",
                "--scalar",
                "--all",
                "--dry-run",
                "--seed",
                "--force",
                "--out",
            ]
        }
        3 => {
            v.push("bench".into());
            &[
                "--kernel", "--shape", "--dtype", "--scalar", "--config", "--peer", "--svg",
                "--from", "--rounds",
            ]
        }
        _ => {
            // `list` counts every kernel's valid configurations (about a second): rarely.
            v.push(
                if rng.below(10) == 0 {
                    "list"
                } else {
                    "devices"
                }
                .into(),
            );
            &["--json", "-q", "-v"]
        }
    };
    for _ in 0..rng.below(5) {
        let flag = rng.pick(flags);
        v.push(flag.to_string());
        let takes_value = !matches!(
            flag,
            "--unaligned" | "--ir" | "--json" | "--all" | "--dry-run" | "--force" | "-q" | "-v"
        );
        if takes_value {
            let value = if flag == "--cache-path" {
                rng.pick(&["c1.sled", "not-a-cache", "sub"]).to_string()
            } else {
                value_for(rng, flag)
            };
            v.push(value);
        }
    }
    if !v.is_empty() && rng.below(4) == 0 {
        let i = rng.below(v.len());
        v[i] = if rng.below(2) == 0 {
            junk(rng)
        } else {
            rng.pick(VALUES).to_string()
        };
    }
    v
}

/// One argument vector: half shaped as the commands expect, half loose tokens.
fn vector(rng: &mut Rng) -> Vec<String> {
    if rng.below(2) == 0 {
        return structured(rng);
    }
    let mut v: Vec<String> = Vec::new();
    if rng.below(5) == 0 {
        v.push(rng.pick(&["-q", "-v", "--cache-path"]).to_string());
        if v[0] == "--cache-path" {
            v.push(
                rng.pick(&["c1.sled", "c2.sled", "not-a-cache", ""])
                    .to_string(),
            );
        }
    }
    let command = rng.pick(COMMANDS);
    v.push(command.to_string());
    match command {
        "cache" => v.push(rng.pick(CACHE_ACTIONS).to_string()),
        "show" | "tune" | "bench" if rng.below(4) != 0 => {
            if command != "show" {
                v.push("--kernel".to_string());
            }
            v.push(rng.pick(KERNELS).to_string());
        }
        _ => {}
    }
    for _ in 0..rng.below(6) {
        let token = match rng.below(10) {
            0..=3 => rng.pick(FLAGS).to_string(),
            4..=7 => rng.pick(VALUES).to_string(),
            8 => rng.pick(KERNELS).to_string(),
            _ => junk(rng),
        };
        v.push(token);
    }
    v
}

/// Flags whose every use is excluded: `--resources` compiles every variant with NVRTC
/// (seconds each), which a fuzz of argument handling does not need.
fn allowed(v: &[String]) -> bool {
    !v.iter().any(|t| t == "--resources")
}

/// Runs one vector in `dir` with a deadline; `Err` says what went wrong.
fn run(dir: &Path, args: &[String], deadline: Duration) -> Result<i32, String> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_tilekit"))
        .args(args)
        .current_dir(dir)
        .env("TILEKIT_TUNE_CACHE", dir.join("tune.sled"))
        .env("TILEKIT_CACHE_DIR", dir.join("cubin"))
        .env("HOME", dir)
        .env("XDG_DATA_HOME", dir.join("data"))
        .env("XDG_CACHE_HOME", dir.join("xdg-cache"))
        .env("CUDA_VISIBLE_DEVICES", "")
        .env_remove("TILEKIT_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("spawn: {e}"))?;
    let stderr = child.stderr.take();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        if let Some(mut e) = stderr {
            use std::io::Read;
            let _ = e.read_to_string(&mut s);
        }
        s
    });
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            break status;
        }
        if start.elapsed() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("still running after {deadline:?} (killed)"));
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    let err = reader.join().unwrap_or_default();
    if err.contains("panicked") || err.contains("RUST_BACKTRACE") {
        return Err(format!("panicked: {err}"));
    }
    match status.code() {
        Some(c @ 0..=2) => Ok(c),
        Some(c) => Err(format!("exit status {c}: {err}")),
        None => Err(format!("killed by a signal ({status}): {err}")),
    }
}

#[test]
fn random_argument_vectors_never_panic_and_exit_0_1_or_2() {
    let seed = std::env::var("TILEKIT_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x7e11_c1a0_2026_0032u64);
    let cases = std::env::var("TILEKIT_FUZZ_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(400usize);
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng(StdRng::seed_from_u64(seed));
    let mut vectors = Vec::with_capacity(cases);
    while vectors.len() < cases {
        let v = vector(&mut rng);
        if allowed(&v) {
            vectors.push(v);
        }
    }
    let start = Instant::now();
    // Two at a time (CI runners have two cores), each half in its own directory (its own
    // caches: the two never wait on each other's lock, so every run is reproducible).
    let results: Vec<Result<i32, String>> = std::thread::scope(|s| {
        let halves: Vec<_> = vectors
            .chunks(vectors.len().div_ceil(2).max(1))
            .enumerate()
            .map(|(i, chunk)| {
                let dir = dir.path().join(format!("runner{i}"));
                std::fs::create_dir_all(&dir).unwrap();
                std::fs::write(dir.join("junk.json"), "{\"format\": 7, \"entries\": [1, 2")
                    .unwrap();
                std::fs::write(dir.join("not-a-cache"), "a user's file").unwrap();
                s.spawn(move || {
                    chunk
                        .iter()
                        .map(|v| {
                            run(&dir, v, Duration::from_secs(30)).map_err(|e| format!("{v:?}: {e}"))
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        halves
            .into_iter()
            .flat_map(|h| {
                h.join()
                    .unwrap_or_else(|_| vec![Err("a runner panicked".into())])
            })
            .collect()
    });
    let failures: Vec<&String> = results.iter().filter_map(|r| r.as_ref().err()).collect();
    let count = |c: i32| results.iter().filter(|r| r.as_ref() == Ok(&c)).count();
    assert!(
        failures.is_empty(),
        "{} of {cases} vectors failed (seed {seed:#x}):\n{}",
        failures.len(),
        failures
            .iter()
            .map(|f| f.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    );
    eprintln!(
        "{cases} vectors in {:.1} s: {} exited 0, {} exited 1, {} exited 2",
        start.elapsed().as_secs_f64(),
        count(0),
        count(1),
        count(2)
    );
}
