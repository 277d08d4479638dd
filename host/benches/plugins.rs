//! The plugin platform's goals, measured on the built plugins (run
//! `cargo xtask plugins` first):
//!
//! - `scoring`: one PHQ-9 scoring call with a fresh instance, p50 <= 20 µs
//!   and p99 <= 100 µs; split into instantiation, the guest's work and the
//!   host's JSON.
//! - `cold_start`: `Plugins::new` + `reload` of 20 plugin folders, <= 1 s
//!   from the compiled-artifact cache; also without a cache, and without
//!   fixtures (no self-test).
//! - `hot_reload`: from writing a changed module into a watched plugin
//!   folder of a running host to the new version serving, <= 500 ms.
//! - `calculators`: score_series and reliable_change over 1,000 PHQ-9
//!   responses, <= 20 ms per call.
//! - `languages`: the PHQ-9 scorer in Rust against the same scorer in
//!   AssemblyScript (`examples/assemblyscript-scorer/`, compiled here with
//!   its compiler from npm: `npm ci` there first): module size, fuel and
//!   call time on the same fixtures.
//!
//! Percentiles are exact (all samples sorted). A criterion group gives the
//! medians of the scoring call and of instantiation alone.
//!
//! Run: `cargo bench -p host --bench plugins` (all), or name sections:
//! `cargo bench -p host --bench plugins -- scoring hot_reload`. Without
//! `--bench` (as `cargo test --benches` runs it) every section runs once,
//! briefly, as a smoke test.

#![allow(clippy::print_stdout)]

use std::collections::BTreeMap;
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::{DateTime, SecondsFormat, TimeZone, Utc};
use criterion::Criterion;
use host::clock::SystemClock;
use host::config::{Config, FileSettings, Settings};
use host::domain::answers::{Answers, GivenAnswers, StoredAnswers};
use host::domain::questionnaire::Questionnaire;
use host::metrics::Metrics;
use host::plugins::sections::with_custom_section;
use host::plugins::{LimitSettings, Plugin, PluginSettings, Plugins, call};
use host::scoring::{self, ScoringContext};
use plugin_sdk::{
    CalculatorInput, CalculatorOutput, OutcomeInfo, PluginKind, ResponseInfo, ScorerInput,
    ScorerOutput,
};

/// The plugins `cargo xtask plugins` builds, by folder.
const PLUGINS: [&str; 4] = ["phq9", "score_series", "reliable_change", "alarm_summary"];

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn built_plugins() -> PathBuf {
    let dir = repo_root().join("plugins");
    assert!(
        PLUGINS
            .iter()
            .all(|p| dir.join(p).join(format!("{p}.wasm")).is_file()),
        "{} lacks built plugins: run `cargo xtask plugins` first",
        dir.display()
    );
    dir
}

/// How much to measure: full runs under `cargo bench`, a smoke test
/// otherwise.
#[derive(Debug, Clone, Copy)]
struct Scale {
    full: bool,
}

impl Scale {
    fn n(self, full: usize, quick: usize) -> usize {
        if self.full { full } else { quick }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let scale = Scale {
        full: args.iter().any(|a| a == "--bench"),
    };
    let wanted: Vec<&str> = args
        .iter()
        .filter(|a| !a.starts_with('-'))
        .map(String::as_str)
        .collect();
    let run = |section: &str| wanted.is_empty() || wanted.iter().any(|w| section.contains(w));
    println!(
        "plugin benchmarks ({} cores{})",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        if scale.full { "" } else { "; smoke test" }
    );
    if run("scoring") {
        scoring_section(scale);
    }
    if run("cold_start") {
        cold_start_section(scale);
    }
    if run("hot_reload") {
        hot_reload_section(scale);
    }
    if run("calculators") {
        calculators_section(scale);
    }
    if run("languages") {
        languages_section(scale);
    }
}

// ---------------------------------------------------------------- helpers

/// Sorted samples and their percentiles.
struct Samples(Vec<Duration>);

impl Samples {
    fn new(mut samples: Vec<Duration>) -> Samples {
        assert!(!samples.is_empty(), "no samples");
        samples.sort_unstable();
        Samples(samples)
    }

    /// Nearest-rank percentile.
    fn at(&self, percentile: f64) -> Duration {
        let rank = ((percentile / 100.0) * self.0.len() as f64).ceil() as usize;
        self.0[rank.clamp(1, self.0.len()) - 1]
    }

    fn max(&self) -> Duration {
        self.0[self.0.len() - 1]
    }

    fn line(&self, unit: Unit) -> String {
        format!(
            "p50 {} p90 {} p99 {} max {} (n={})",
            unit.show(self.at(50.0)),
            unit.show(self.at(90.0)),
            unit.show(self.at(99.0)),
            unit.show(self.max()),
            self.0.len()
        )
    }
}

#[derive(Debug, Clone, Copy)]
enum Unit {
    Micros,
    Millis,
}

impl Unit {
    fn show(self, d: Duration) -> String {
        match self {
            Unit::Micros => format!("{:>7.1} µs", d.as_secs_f64() * 1e6),
            Unit::Millis => format!("{:>7.1} ms", d.as_secs_f64() * 1e3),
        }
    }
}

/// Times `f` `n` times after `warmup` untimed runs.
fn sample(warmup: usize, n: usize, mut f: impl FnMut()) -> Samples {
    for _ in 0..warmup {
        f();
    }
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let started = Instant::now();
        f();
        out.push(started.elapsed());
    }
    Samples::new(out)
}

fn verdict(met: bool) -> &'static str {
    if met { "met" } else { "NOT met" }
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("create folder");
    for entry in std::fs::read_dir(from).expect("read folder").flatten() {
        let path = entry.path();
        let target = to.join(entry.file_name());
        if path.is_dir() {
            copy_dir(&path, &target);
        } else {
            std::fs::copy(&path, &target).expect("copy file");
        }
    }
}

fn plugins_in(dir: &Path, cache_dir: Option<PathBuf>) -> Plugins {
    Plugins::new(
        PluginSettings {
            dir: dir.to_owned(),
            cache_key_file: dir.join("plugin-cache.key"),
            cache_dir,
            allow: Vec::new(),
            limits: LimitSettings::default(),
        },
        Arc::new(Metrics::default()),
    )
    .expect("plugin runtime")
}

/// The real PHQ-9 definition from questionnaires/.
fn phq9() -> Questionnaire {
    let root = repo_root();
    let defs = host::definitions::load(&root.join("questionnaires"), &root.join("protocols"))
        .expect("definitions load");
    defs.questionnaires
        .into_iter()
        .map(|s| s.def)
        .find(|q| q.key == "phq9")
        .expect("the PHQ-9 definition")
}

/// Answers to every question of `q`, varied by `seed` (option keys); those
/// to questions not enabled then taken out, as the service does.
fn answers(q: &Questionnaire, seed: usize) -> Answers {
    let data: serde_json::Map<String, serde_json::Value> = q
        .questions
        .iter()
        .enumerate()
        .map(|(i, question)| {
            let option = &question.options[(seed * 7 + i * 3 + seed / 5) % question.options.len()];
            (
                question.key.clone(),
                serde_json::Value::String(option.key.clone()),
            )
        })
        .collect();
    GivenAnswers::check(q, &data)
        .expect("option keys of the questions")
        .enabled(q, &Default::default())
        .answers
}

fn start_time() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 3, 1, 9, 0, 0)
        .single()
        .expect("a valid time")
}

// ---------------------------------------------------------------- scoring

fn scoring_section(scale: Scale) {
    println!("\n== scoring: one PHQ-9 call with a fresh instance ==");
    let cache = tempfile::tempdir().expect("temporary folder");
    let plugins = plugins_in(&built_plugins(), Some(cache.path().to_owned()));
    let report = plugins.reload(Utc::now());
    assert!(report.failed.is_empty(), "plugins refused: {report:?}");
    let plugin = plugins
        .get(PluginKind::Scorer, "phq9")
        .expect("phq9 serves");
    let q = phq9();
    let ctx = ScoringContext {
        completed_at: start_time(),
        professional: false,
        variant: &Default::default(),
    };
    let given = answers(&q, 3);
    let full = scoring::scorer_input(&q, &given, ctx);
    // What the host sends this scorer: without the questions and the option
    // keys when its manifest declines them (the PHQ-9 scorer does).
    let input_json = scoring::scorer_input_for(&plugin, &q, &given, ctx);
    let input: ScorerInput = serde_json::from_slice(&input_json).expect("input JSON");

    let probe = plugin.invoke::<_, ScorerOutput>(&input);
    let output = probe.result.expect("the scorer answers");
    assert!(output.scores.contains_key("total"), "a total score");
    let usage = probe.usage;
    println!(
        "input {} bytes JSON, output {} bytes; fuel {} per call; peak guest memory {} KiB",
        usage.input_bytes,
        usage.output_bytes,
        usage.fuel_used,
        usage.peak_memory / 1024
    );

    let (warmup, n) = (scale.n(2_000, 20), scale.n(20_000, 200));
    // Interleaved in rounds so that the machine's noise hits every variant
    // alike.
    let rounds = 4;
    let mut instantiate = Vec::new();
    let mut raw = Vec::new();
    let mut typed = Vec::new();
    let mut pipeline = Vec::new();
    for _ in 0..rounds {
        instantiate.extend(
            sample(warmup / rounds, n / rounds, || {
                black_box(plugin.abi_version().expect("abi version"));
            })
            .0,
        );
        raw.extend(
            sample(warmup / rounds, n / rounds, || {
                black_box(plugin.invoke_raw(black_box(&input_json)).result).expect("raw call");
            })
            .0,
        );
        typed.extend(
            sample(warmup / rounds, n / rounds, || {
                black_box(plugin.invoke::<_, ScorerOutput>(black_box(&input)).result)
                    .expect("typed call");
            })
            .0,
        );
        pipeline.extend(
            sample(warmup / rounds, n / rounds, || {
                black_box(scoring::score_with(
                    &Metrics::default(),
                    &plugin,
                    &q,
                    black_box(&given),
                    ctx,
                ));
            })
            .0,
        );
    }
    let (instantiate, raw, typed, pipeline) = (
        Samples::new(instantiate),
        Samples::new(raw),
        Samples::new(typed),
        Samples::new(pipeline),
    );
    let reply = plugin.invoke_raw(&input_json).result.expect("raw call");
    let host_json = sample(warmup, n, || {
        let bytes = serde_json::to_vec(black_box(&input)).expect("serialize");
        black_box(bytes);
        black_box(call::parse_reply::<ScorerOutput>(black_box(&reply))).expect("parse");
    });
    // The host's own path: a call slot, the call on the worker in a spare
    // instance (made ahead by the spare thread, which also drops it), the
    // call counted.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");
    let hop = runtime.block_on(async {
        let mut out = Vec::with_capacity(n);
        for i in 0..warmup + n {
            let started = Instant::now();
            let call = plugins
                .call_json::<ScorerOutput>(plugin.clone(), input_json.clone())
                .await;
            call.result.expect("async call");
            if i >= warmup {
                out.push(started.elapsed());
            }
        }
        Samples::new(out)
    });
    drop(runtime);
    for (label, samples) in [
        ("instantiate + trivial export", &instantiate),
        ("invoke_raw: bytes in, bytes out", &raw),
        ("invoke: typed, host JSON both ways (*)", &typed),
        ("score_with: input built, call, outcome", &pipeline),
        ("Plugins::call_json: slot, spare instance", &hop),
        ("host JSON alone (no call)", &host_json),
    ] {
        println!("{label:<40} {}", samples.line(Unit::Micros));
    }
    // The guest's cost against the input it parses: an empty object (the
    // fixed cost: allocation, a refusal, the reply), the input as the host
    // sends it, and the input with the questions, without their titles and
    // score labels, whole, and twice.
    let full_json = serde_json::to_vec(&full).expect("input JSON");
    let mut lean = full.clone();
    for question in &mut lean.questionnaire.questions {
        question.title.clear();
    }
    for score in &mut lean.questionnaire.scores {
        score.label.clear();
    }
    let lean_json = serde_json::to_vec(&lean).expect("input JSON");
    let mut doubled = full.clone();
    let again = doubled.questionnaire.questions.clone();
    doubled.questionnaire.questions.extend(again);
    let doubled_json = serde_json::to_vec(&doubled).expect("input JSON");
    for (label, bytes) in [
        ("{} (refused)", b"{}".as_slice()),
        (
            "as sent (questions, option keys declined)",
            input_json.as_slice(),
        ),
        ("questions without titles/labels", lean_json.as_slice()),
        ("questions whole", full_json.as_slice()),
        ("questions twice", doubled_json.as_slice()),
    ] {
        let fuel = plugin.invoke_raw(bytes).usage.fuel_used;
        let time = sample(warmup / 4, n / 4, || {
            black_box(plugin.invoke_raw(black_box(bytes)).result).expect("raw call");
        });
        println!(
            "guest on {label:<32} {:>5} bytes: fuel {fuel:>7}, invoke_raw p50 {}",
            bytes.len(),
            Unit::Micros.show(time.at(50.0))
        );
    }
    let p50 = |s: &Samples| s.at(50.0).as_secs_f64() * 1e6;
    println!(
        "where a typed call's p50 goes: instantiation ~{:.1} µs, guest work (copy in, parse, score, serialize) ~{:.1} µs, host JSON ~{:.1} µs",
        p50(&instantiate),
        p50(&raw) - p50(&instantiate),
        p50(&typed) - p50(&raw),
    );
    println!(
        "Goal (*): p50 <= 20 µs: {} ({:.1} µs); p99 <= 100 µs: {} ({:.1} µs)",
        verdict(typed.at(50.0) <= Duration::from_micros(20)),
        p50(&typed),
        verdict(typed.at(99.0) <= Duration::from_micros(100)),
        typed.at(99.0).as_secs_f64() * 1e6
    );

    if scale.full {
        let mut c = Criterion::default()
            .sample_size(100)
            .measurement_time(Duration::from_secs(5))
            .warm_up_time(Duration::from_secs(1));
        let mut group = c.benchmark_group("scoring");
        group.bench_function("instantiate", |b| {
            b.iter(|| plugin.abi_version().expect("abi version"))
        });
        group.bench_function("invoke_phq9", |b| {
            b.iter(|| {
                plugin
                    .invoke::<_, ScorerOutput>(black_box(&input))
                    .result
                    .expect("typed call")
            })
        });
        group.finish();
    }
}

// ------------------------------------------------------------- cold start

/// Builds 20 plugin folders from the 4 built modules (5 distinct copies
/// each), with or without their fixtures.
fn twenty_plugins(into: &Path, fixtures: bool) {
    let built = built_plugins();
    for name in PLUGINS {
        let bytes = std::fs::read(built.join(name).join(format!("{name}.wasm"))).expect("module");
        for copy in 1..=5 {
            let folder = into.join(format!("{name}_{copy}"));
            std::fs::create_dir_all(&folder).expect("plugin folder");
            let variant = with_custom_section(&bytes, "bench", format!("copy {copy}").as_bytes());
            std::fs::write(folder.join(format!("{name}.wasm")), variant).expect("write module");
            if fixtures {
                copy_dir(&built.join(name).join("fixtures"), &folder.join("fixtures"));
            }
        }
    }
}

struct ColdStart {
    new: Duration,
    reload: Duration,
}

impl ColdStart {
    fn total(&self) -> Duration {
        self.new + self.reload
    }
}

fn cold_start(dir: &Path, cache_dir: Option<PathBuf>) -> ColdStart {
    let started = Instant::now();
    let plugins = plugins_in(dir, cache_dir);
    let new = started.elapsed();
    let report = plugins.reload(Utc::now());
    let reload = started.elapsed() - new;
    // The 4 names serve once each; the other 16 copies are loaded, compiled
    // and self-tested in full and then refused as duplicate names.
    assert_eq!(report.loaded.len(), 4, "{report:?}");
    assert!(
        report
            .failed
            .iter()
            .all(|(_, why)| why.contains("already served")),
        "{report:?}"
    );
    assert_eq!(report.failed.len(), 16, "{report:?}");
    drop(plugins);
    ColdStart { new, reload }
}

fn cold_start_section(scale: Scale) {
    println!("\n== cold start: Plugins::new + reload of 20 plugin folders ==");
    let work = tempfile::tempdir().expect("temporary folder");
    let with_fixtures = work.path().join("with_fixtures");
    let without_fixtures = work.path().join("without_fixtures");
    twenty_plugins(&with_fixtures, true);
    twenty_plugins(&without_fixtures, false);
    println!(
        "20 folders: 4 modules x 5 copies made distinct by a custom section; 4 names serve, 16 \
         copies load, compile and self-test in full before being refused as duplicate names"
    );
    let (warm_runs, cold_runs) = (scale.n(10, 1), scale.n(3, 1));
    for (label, dir) in [
        ("with fixtures", &with_fixtures),
        ("without fixtures", &without_fixtures),
    ] {
        let cache = work
            .path()
            .join(format!("cache-{}", label.replace(' ', "-")));
        // First start: an empty cache folder, filled on the way.
        let first = cold_start(dir, Some(cache.clone()));
        let mut warm = Vec::new();
        let mut warm_new = Vec::new();
        let mut none = Vec::new();
        for i in 0..warm_runs.max(cold_runs) {
            if i < warm_runs {
                let run = cold_start(dir, Some(cache.clone()));
                warm_new.push(run.new);
                warm.push(run.total());
            }
            if i < cold_runs {
                none.push(cold_start(dir, None).total());
            }
        }
        let (warm, warm_new, none) = (
            Samples::new(warm),
            Samples::new(warm_new),
            Samples::new(none),
        );
        println!("{label}:");
        println!(
            "  warm artifact cache:     p50 {} max {} (n={}; Plugins::new alone p50 {})",
            Unit::Millis.show(warm.at(50.0)),
            Unit::Millis.show(warm.max()),
            warm.0.len(),
            Unit::Millis.show(warm_new.at(50.0)),
        );
        println!(
            "  no cache (compile all):  p50 {} max {} (n={})",
            Unit::Millis.show(none.at(50.0)),
            Unit::Millis.show(none.max()),
            none.0.len()
        );
        println!(
            "  empty cache folder (first start, compiles and writes): {}",
            Unit::Millis.show(first.total())
        );
        if label == "with fixtures" {
            println!(
                "Goal: <= 1 s from the cache (with fixtures): {} ({:.0} ms p50)",
                verdict(warm.at(50.0) <= Duration::from_secs(1)),
                warm.at(50.0).as_secs_f64() * 1e3
            );
        }
    }
}

// ------------------------------------------------------------- hot reload

fn hot_reload_section(scale: Scale) {
    println!("\n== hot reload: changed module written -> new version serving ==");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");
    runtime.block_on(hot_reload(scale));
}

async fn hot_reload(scale: Scale) {
    let dir = tempfile::tempdir().expect("temporary folder");
    let plugin_dir = dir.path().join("plugins");
    let built = built_plugins();
    for name in PLUGINS {
        copy_dir(&built.join(name), &plugin_dir.join(name));
    }
    let root = repo_root();
    let mut settings = Settings::default();
    settings.server.listen = Some("127.0.0.1:0".parse().expect("address"));
    settings.storage.data_dir = Some(dir.path().to_owned());
    settings.storage.database_url = Some(format!(
        "sqlite://{}",
        dir.path().join("outcomes.db").display()
    ));
    settings.definitions.questionnaires_dir = Some(root.join("questionnaires"));
    settings.definitions.protocols_dir = Some(root.join("protocols"));
    settings.plugins.plugins_dir = Some(plugin_dir.clone());
    settings.plugin_cache.plugin_cache_dir = Some(dir.path().join("plugin-cache"));
    settings.server.watch = Some(true);
    settings.pool.max_connections = Some(4);
    let config = Config::resolve(settings, FileSettings::default()).expect("configuration");
    let app = host::startup::App::build(config, Arc::new(SystemClock))
        .await
        .expect("the host starts");
    let state = app.state();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(app.run(async move {
        let _ = stopped.await;
    }));
    // The watcher starts inside `run`; give it a moment to be in place.
    tokio::time::sleep(Duration::from_millis(500)).await;

    let module = plugin_dir.join("phq9").join("phq9.wasm");
    let original = std::fs::read(&module).expect("module");
    let plugins = state.plugins().clone();
    let (mut compile, mut self_test) = (Vec::new(), Vec::new());
    for i in 0..scale.n(5, 1) {
        let variant = with_custom_section(&original, "bench", format!("compile {i}").as_bytes());
        let started = Instant::now();
        let plugin = plugins.load_module(&variant).expect("module loads");
        compile.push(started.elapsed());
        let started = Instant::now();
        let passed = host::plugins::selftest::self_test(&plugin, &plugin_dir.join("phq9/fixtures"))
            .expect("self-test");
        self_test.push(started.elapsed());
        black_box(passed);
    }
    let mut latencies = Vec::new();
    for i in 0..scale.n(20, 2) {
        let variant = with_custom_section(&original, "bench", format!("reload {i}").as_bytes());
        let sha = host::plugins::module::sha256_hex(&variant);
        let mut generation = plugins.subscribe();
        generation.borrow_and_update();
        let started = Instant::now();
        std::fs::write(&module, &variant).expect("write module");
        tokio::time::timeout(Duration::from_secs(30), generation.changed())
            .await
            .expect("a reload within 30 s")
            .expect("the plugin runtime lives");
        let elapsed = started.elapsed();
        let serving = plugins
            .get(PluginKind::Scorer, "phq9")
            .expect("phq9 serves");
        assert_eq!(serving.sha256, sha, "the new version serves");
        latencies.push(elapsed);
        // Let the archive write and any late file events settle.
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    let _ = stop.send(());
    let _ = server.await;
    let latencies = Samples::new(latencies);
    let (compile, self_test) = (Samples::new(compile), Samples::new(self_test));
    println!("write -> serving: {}", latencies.line(Unit::Millis));
    println!(
        "of which: debounce {} ms (host::reload::DEBOUNCE); the phq9 module outside the watcher: \
         validate + compile (no cache) + describe p50 {}, self-test ({} fixtures) p50 {}",
        host::reload::DEBOUNCE.as_millis(),
        Unit::Millis.show(compile.at(50.0)),
        std::fs::read_dir(plugin_dir.join("phq9/fixtures")).map_or(0, |d| d.count()),
        Unit::Millis.show(self_test.at(50.0))
    );
    println!(
        "Goal: <= 500 ms: {} (p50 {:.0} ms, max {:.0} ms)",
        verdict(latencies.max() <= Duration::from_millis(500)),
        latencies.at(50.0).as_secs_f64() * 1e3,
        latencies.max().as_secs_f64() * 1e3
    );
}

// ------------------------------------------------------------ calculators

/// 1,000 completed PHQ-9 responses, one a week, scored by the real scorer,
/// as the reports API hands them to a calculator.
fn calculator_input(plugin: &Plugin, q: &Questionnaire, n: usize) -> CalculatorInput {
    let metrics = Metrics::default();
    let responses = (0..n)
        .map(|i| {
            let completed_at = start_time() + chrono::Duration::days(7 * i as i64);
            let given = answers(q, i);
            let ctx = ScoringContext {
                completed_at,
                professional: false,
                variant: &Default::default(),
            };
            let (outcome, _) = scoring::score_with(&metrics, plugin, q, &given, ctx);
            let outcome = serde_json::to_value(&outcome)
                .and_then(serde_json::from_value::<OutcomeInfo>)
                .expect("outcome as calculators see it");
            ResponseInfo {
                id: i as i64 + 1,
                questionnaire_key: q.key.clone(),
                completed_at: completed_at.to_rfc3339_opts(SecondsFormat::Millis, true),
                values: StoredAnswers::of(&given).texts(),
                outcome,
            }
        })
        .collect();
    CalculatorInput {
        responses,
        questionnaires: BTreeMap::from([(q.key.clone(), scoring::questionnaire_info(q))]),
    }
}

fn calculators_section(scale: Scale) {
    println!("\n== calculators over 1,000 PHQ-9 responses ==");
    let cache = tempfile::tempdir().expect("temporary folder");
    let plugins = plugins_in(&built_plugins(), Some(cache.path().to_owned()));
    let report = plugins.reload(Utc::now());
    assert!(report.failed.is_empty(), "plugins refused: {report:?}");
    let q = phq9();
    let scorer = plugins
        .get(PluginKind::Scorer, "phq9")
        .expect("phq9 serves");
    let input = calculator_input(&scorer, &q, 1_000);
    let (warmup, n) = (scale.n(10, 1), scale.n(200, 3));
    for name in ["score_series", "reliable_change"] {
        let plugin = plugins
            .get(PluginKind::Calculator, name)
            .expect("calculator serves");
        // What the reports API sends this calculator.
        let input = scoring::calculator_input_for(&plugin, input.clone());
        let input_json = serde_json::to_vec(&input).expect("input JSON");
        let probe = plugin.invoke::<_, CalculatorOutput>(&input);
        let output = probe.result.expect("the calculator answers");
        black_box(output);
        let usage = probe.usage;
        // Interleaved in rounds, as for scoring.
        let rounds = 4;
        let (mut typed, mut raw) = (Vec::new(), Vec::new());
        for _ in 0..rounds {
            typed.extend(
                sample(warmup.div_ceil(rounds), n.div_ceil(rounds), || {
                    black_box(
                        plugin
                            .invoke::<_, CalculatorOutput>(black_box(&input))
                            .result,
                    )
                    .expect("typed call");
                })
                .0,
            );
            raw.extend(
                sample(warmup.div_ceil(rounds), n.div_ceil(rounds), || {
                    black_box(plugin.invoke_raw(black_box(&input_json)).result).expect("raw call");
                })
                .0,
            );
        }
        let (typed, raw) = (Samples::new(typed), Samples::new(raw));
        let output_bytes = plugin.invoke_raw(&input_json).result.expect("raw call");
        let serialize = sample(warmup, n, || {
            black_box(serde_json::to_vec(black_box(&input)).expect("serialize"));
        });
        let parse = sample(warmup, n, || {
            black_box(call::parse_reply::<CalculatorOutput>(black_box(
                &output_bytes,
            )))
            .expect("parse");
        });
        let p50 = |s: &Samples| s.at(50.0).as_secs_f64() * 1e3;
        println!("{name}:");
        println!(
            "  input {:.2} MiB JSON, output {} KiB; fuel {} per call ({:.1} per input byte); peak guest memory {:.1} MiB",
            usage.input_bytes as f64 / 1048576.0,
            usage.output_bytes / 1024,
            usage.fuel_used,
            usage.fuel_used as f64 / usage.input_bytes as f64,
            usage.peak_memory as f64 / 1048576.0
        );
        println!("  invoke (typed)      {}", typed.line(Unit::Millis));
        println!("  invoke_raw (guest)  {}", raw.line(Unit::Millis));
        println!(
            "  host: serialize input p50 {:.2} ms, parse reply p50 {:.2} ms",
            p50(&serialize),
            p50(&parse)
        );
        // The same 1,000 responses without what these calculators do not
        // read: the answers, and the label and referenced values the host
        // adds to each score (a flattened map in the contract's Score).
        let mut lean = input.clone();
        for response in &mut lean.responses {
            response.values.clear();
            for score in response.outcome.scores.values_mut() {
                score.extra.clear();
            }
        }
        let lean_json = serde_json::to_vec(&lean).expect("input JSON");
        let lean_call = plugin.invoke_raw(&lean_json);
        lean_call.result.as_ref().expect("lean call");
        let lean_time = sample(warmup, n, || {
            black_box(plugin.invoke_raw(black_box(&lean_json)).result).expect("raw call");
        });
        println!(
            "  1000 responses, lean ({:.2} MiB: no answers, no label/referenced_values): fuel {}, invoke_raw p50 {:.2} ms",
            lean_json.len() as f64 / 1048576.0,
            lean_call.usage.fuel_used,
            lean_time.at(50.0).as_secs_f64() * 1e3
        );
        for size in [0, 100] {
            let smaller = CalculatorInput {
                responses: input.responses[..size].to_vec(),
                questionnaires: input.questionnaires.clone(),
            };
            let bytes = serde_json::to_vec(&smaller).expect("input JSON");
            let fuel = plugin.invoke_raw(&bytes).usage.fuel_used;
            let time = sample(warmup, n, || {
                black_box(plugin.invoke_raw(black_box(&bytes)).result).expect("raw call");
            });
            println!(
                "  {size:>4} responses ({:>6} bytes): fuel {fuel:>9}, invoke_raw p50 {:.2} ms",
                bytes.len(),
                time.at(50.0).as_secs_f64() * 1e3
            );
        }
        println!(
            "  Goal: <= 20 ms: p50 {} ({:.1} ms), p99 {} ({:.1} ms)",
            verdict(typed.at(50.0) <= Duration::from_millis(20)),
            p50(&typed),
            verdict(typed.at(99.0) <= Duration::from_millis(20)),
            typed.at(99.0).as_secs_f64() * 1e3
        );
    }
}

// -------------------------------------------------------------- languages

/// The AssemblyScript PHQ-9 scorer, compiled with the example's own
/// compiler and settings; `None` (with why) when the compiler is not
/// installed.
fn assemblyscript_phq9() -> Result<Vec<u8>, String> {
    let example = repo_root().join("examples/assemblyscript-scorer");
    let asc = example.join("node_modules/assemblyscript/bin/asc.js");
    if !asc.is_file() {
        return Err(format!(
            "{} is missing: run `npm ci` in {}",
            asc.display(),
            example.display()
        ));
    }
    let out = tempfile::tempdir().map_err(|e| e.to_string())?;
    let wasm = out.path().join("phq9.wasm");
    let status = std::process::Command::new("node")
        .arg(&asc)
        .args([
            "assembly/index.ts",
            "--config",
            "asconfig.json",
            "--target",
            "release",
            "--outFile",
        ])
        .arg(&wasm)
        .current_dir(&example)
        .status()
        .map_err(|e| format!("running node: {e}"))?;
    if !status.success() {
        return Err(format!("asc failed ({status})"));
    }
    std::fs::read(&wasm).map_err(|e| e.to_string())
}

fn languages_section(scale: Scale) {
    println!("\n== languages: the PHQ-9 scorer in Rust and in AssemblyScript ==");
    let assemblyscript = match assemblyscript_phq9() {
        Ok(bytes) => bytes,
        Err(why) => {
            println!("skipped: {why}");
            return;
        }
    };
    let rust = std::fs::read(built_plugins().join("phq9/phq9.wasm")).expect("the Rust module");
    let plugins = plugins_in(&built_plugins(), None);
    let fixtures = plugin_sdk::testing::load_dir(repo_root().join("questionnaires/phq9/fixtures"))
        .expect("fixtures");
    let (warmup, n) = (scale.n(200, 5), scale.n(2_000, 20));
    println!(
        "{:<32} {:>22} {:>22}",
        "per fixture (same input)", "Rust: fuel, p50", "AssemblyScript: fuel, p50"
    );
    let mut totals = [(0u64, Vec::new()), (0u64, Vec::new())];
    let modules = [
        plugins.load_module(&rust).expect("the Rust module loads"),
        plugins
            .load_module(&assemblyscript)
            .expect("the AssemblyScript module loads"),
    ];
    for fixture in &fixtures {
        let input = modules[0].manifest.decline_bytes(&fixture.input_bytes());
        let mut cells = Vec::new();
        for (m, module) in modules.iter().enumerate() {
            let call = module.invoke_raw(&input);
            call.result.as_ref().expect("the call answers");
            let time = sample(warmup, n, || {
                black_box(module.invoke_raw(black_box(&input)).result).expect("call");
            });
            totals[m].0 += call.usage.fuel_used;
            totals[m].1.push(time.at(50.0));
            cells.push(format!(
                "{:>9} {:>9.1} µs",
                call.usage.fuel_used,
                time.at(50.0).as_secs_f64() * 1e6
            ));
        }
        println!("{:<32} {:>22} {:>22}", fixture.name, cells[0], cells[1]);
    }
    let k = fixtures.len() as u64;
    let median = |v: &mut Vec<Duration>| {
        v.sort_unstable();
        v[v.len() / 2].as_secs_f64() * 1e6
    };
    let (rust_fuel, asc_fuel) = (totals[0].0 / k, totals[1].0 / k);
    let (rust_p50, asc_p50) = (median(&mut totals[0].1), median(&mut totals[1].1));
    println!(
        "module size: Rust {} bytes, AssemblyScript {} bytes",
        rust.len(),
        assemblyscript.len()
    );
    println!(
        "mean fuel per call: Rust {rust_fuel}, AssemblyScript {asc_fuel}; median of the fixtures' p50: Rust {rust_p50:.1} µs, AssemblyScript {asc_p50:.1} µs"
    );
}
