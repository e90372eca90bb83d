//! `forge`: the WGSL Forge command line.
//!
//! - `forge info` describes every adapter wgpu sees and the one the runtime picks.
//! - `forge list` lists the registered kernels with their bindings and tuning space.
//! - `forge certify [KERNEL...]` certifies kernels on the chosen adapter, with the tuned
//!   schedule where the manifest cache holds one; with `--diff-prints`, it runs a case of
//!   each on the GPU and in the oracle instead and shows the first print line that differs.
//! - `forge auto-tune-all` tunes every built-in kernel, with a progress bar and a summary.
//! - `forge tune KERNEL [--plot out.svg]` tunes one kernel and shows every candidate.
//! - `forge cache ls` and `forge cache clear` list and empty the manifest cache;
//!   `forge cache export FILE` and `forge cache import FILE [--replace]` move its manifests
//!   to other machines as one checksummed bundle.
//! - `forge bench [KERNEL...]` times the built-ins at the performance targets' shapes.
//! - `forge expand KERNEL` prints the WGSL and the Rust that `#[forge_kernel]` generated.
//! - `forge emit KERNEL --backend wgsl|spirv|msl|hlsl|glsl [--schedule ...] [--browser] [-o PATH]`
//!   translates a kernel with naga; it needs no GPU.
//!
//! The manifest cache is `--cache-dir`, else `FORGE_CACHE_DIR`, else
//! `$XDG_CACHE_HOME/wgsl-forge` (`~/.cache/wgsl-forge`).
//!
//! `RUST_LOG` sets the log level (default `warn`); logs go to stderr. Errors print as
//! `error: ...`; the exit status is 0 on success, 1 on an error or a failed certification,
//! and 2 on bad usage (an unknown kernel name, a `--schedule` or `--problem` that cannot be
//! parsed or that the kernel does not declare, included). A reader that closes the pipe
//! early (`forge list | head -1`) ends the command quietly with status 0; any other write
//! error (a full disk) is an error. Text from manifests and drivers is printed with its
//! control characters escaped.

mod out;
mod run_once;
mod tuning;

use clap::{Args, Parser, Subcommand};
use out::outln;
use std::process::ExitCode;
use wgsl_forge::certify::{certify, CertOptions, CertReport, DEFAULT_SEED};
use wgsl_forge::emit::Target;
use wgsl_forge::Backend;
use wgsl_forge::{Access, ForgeError, ForgeRuntime, Kernel, Schedule};

/// What a command fails with: the library's errors, and what only the command line can get
/// wrong.
#[derive(Debug, thiserror::Error)]
enum CliError {
    /// An error of the library.
    #[error(transparent)]
    Forge(#[from] ForgeError),
    /// A kernel name that names no registered kernel, or several.
    #[error(transparent)]
    Select(#[from] forge_cli::select::SelectError),
    /// An option's value that cannot be used: bad usage, exit status 2.
    #[error(transparent)]
    Usage(ForgeError),
    /// Writing to stdout failed.
    #[error("writing to stdout: {0}")]
    Stdout(std::io::Error),
}

impl CliError {
    /// Whether the error is stdout's reader having gone away (`forge list | head -1`):
    /// the command ends quietly then.
    fn is_broken_pipe(&self) -> bool {
        let io = match self {
            CliError::Stdout(e) => Some(e),
            CliError::Forge(ForgeError::Io { source, .. }) => Some(source),
            _ => None,
        };
        io.is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
    }
}

/// Write GPU compute kernels once, as annotated Rust; run and certify them anywhere.
#[derive(Parser, Debug)]
#[command(name = "forge", version, about, long_about = None)]
struct Cli {
    #[command(flatten)]
    runtime: RuntimeArgs,
    #[command(subcommand)]
    command: Command,
}

/// How to pick the adapter. Each flag overrides its environment variable.
#[derive(Args, Clone, Debug)]
struct RuntimeArgs {
    /// Use the adapter whose name contains this text, ignoring case [env: FORGE_ADAPTER].
    #[arg(long, global = true)]
    adapter: Option<String>,
    /// The backend: `wgsl`, `spirv`, `glsl` or `hlsl` (handed to wgpu), or `cuda` (the CUDA
    /// driver, a build with the `cuda` feature) [env: FORGE_BACKEND]. For `forge
    /// emit`: the language to write, `wgsl`, `spirv`, `msl`, `hlsl`, `glsl`, `cuda` or
    /// `ptx` (NVRTC's; a build with the `cuda` feature).
    #[arg(long, global = true)]
    backend: Option<String>,
    /// The runtime's memory budget, in MiB.
    #[arg(long, global = true, default_value_t = 1024)]
    capacity_mib: u64,
    /// The manifest cache directory [env: FORGE_CACHE_DIR] [default: ~/.cache/wgsl-forge].
    #[arg(long, global = true)]
    cache_dir: Option<std::path::PathBuf>,
}

impl RuntimeArgs {
    /// The cache directory the CLI uses.
    fn cache_dir(&self) -> Result<Option<std::path::PathBuf>, ForgeError> {
        match &self.cache_dir {
            Some(dir) => Ok(Some(dir.clone())),
            None => tuning::default_cache_dir(),
        }
    }
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Print every adapter, the chosen one, its limits, features, subgroup sizes and topology hash.
    Info {
        /// Print every wgpu limit, not only those kernels run into.
        #[arg(long)]
        all_limits: bool,
        /// Print the chosen adapter's hardware profile as JSON.
        #[arg(long)]
        json: bool,
    },
    /// List the registered kernels: bindings, scalar parameters, schedule and tuning space.
    List {
        /// Print instead one line per kernel and schedule (the declared one, then each of
        /// the tuning space): the name, a tab, the schedule as `--schedule` takes it.
        #[arg(long)]
        schedules: bool,
    },
    /// Certify kernels: GPU against the CPU oracle, the oracle against the reference, and
    /// every output element written. Exits 1 if any kernel fails.
    Certify {
        /// Kernels to certify, each by its name, a family's (`topk`) or, ending in `$`, its
        /// whole name only (`attention$`); all registered kernels when none is named.
        kernels: Vec<String>,
        /// The seed the test vectors derive from.
        #[arg(long, default_value_t = DEFAULT_SEED)]
        seed: u64,
        /// Certify every schedule of each kernel's tuning space, and its declared schedule,
        /// not only the one it runs with.
        #[arg(long)]
        all_schedules: bool,
        /// Print the reports as JSON instead of a table.
        #[arg(long)]
        json: bool,
        /// Instead of certifying, run a certification case of each kernel on the GPU and in
        /// the oracle and compare their `debug_print!` lines: the first line that differs,
        /// or how many agree. Exits 1 if any differ.
        #[arg(long, conflicts_with_all = ["all_schedules", "json"])]
        diff_prints: bool,
    },
    /// Time the built-in kernels (GPU timestamps, median after warm-up, random data) at the
    /// shapes of the performance targets, with a device copy measured in the same run.
    Bench {
        /// Kernels to time, each by a prefix of its name (`topk`) or, ending in `$`, by its
        /// whole name (`attention$`, not `attention_rows`), and `overhead` for the typed
        /// call's host overhead; all when none is named (the copy always runs).
        kernels: Vec<String>,
        /// Print one JSON object per result instead of a table.
        #[arg(long)]
        json: bool,
        /// Small shapes and the declared schedules only: runs on lavapipe in seconds.
        #[arg(long)]
        quick: bool,
        /// Instead of the figures, time each case's declared schedule several ways
        /// (each dispatch alone, on the same buffers, many dispatches per timed pass, the
        /// wall clock, bare wgpu) to check the timer against independent clocks.
        #[arg(long)]
        compare_timers: bool,
        /// Also draw the rows on a roofline (log-log: flop per byte against TFLOP/s, under
        /// the copy bandwidth and the FMA peak measured in the same run) into this SVG.
        #[arg(long)]
        plot: Option<std::path::PathBuf>,
    },
    /// Tune every built-in kernel (each candidate certified, then timed) and cache the
    /// winners; prints a summary: kernel, winner, time, speedup over the declared schedule.
    AutoTuneAll {
        /// Kernels to tune; all registered kernels when none is named.
        kernels: Vec<String>,
        /// The seed of the certification and timing data.
        #[arg(long, default_value_t = DEFAULT_SEED)]
        seed: u64,
    },
    /// Tune one kernel and print every candidate's verdict and time.
    Tune {
        /// The kernel.
        kernel: String,
        /// Write an SVG bar chart of the candidates' times here.
        #[arg(long)]
        plot: Option<std::path::PathBuf>,
        /// The problem to time, as `name=value,...` for every scalar parameter; default: the
        /// kernel's largest certification case.
        #[arg(long)]
        problem: Option<String>,
        /// The seed of the certification and timing data.
        #[arg(long, default_value_t = DEFAULT_SEED)]
        seed: u64,
        /// Print the manifest as JSON instead of a table.
        #[arg(long)]
        json: bool,
        /// Tune on each of these backends (`wgsl,cuda`, say) in turn, each on its own
        /// runtime, and report which backend's winner is fastest. Each backend's winner is
        /// stored under its own topology, so each backend's calls use their own.
        #[arg(long, value_delimiter = ',')]
        backends: Vec<String>,
    },
    /// Time each kernel's first call in this fresh process (pipeline compile included)
    /// and its second, on its first certification case. Run it twice with one cache
    /// directory to see what the persisted pipeline cache saves (`FORGE_PIPELINE_CACHE=0`
    /// turns it off).
    FirstCall {
        /// Kernels to time; all registered kernels when none is named.
        kernels: Vec<String>,
        /// Compile every kernel's pipeline first with `warm_up` (on threads), and report
        /// that time.
        #[arg(long)]
        warm_up: bool,
        /// Time every schedule of each kernel's tuning space that the adapter can hold
        /// (each compiles a pipeline of its own), not only the one the runtime would pick.
        #[arg(long)]
        all_schedules: bool,
        /// Print one JSON object per kernel, then a summary object, instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Run one kernel at one problem on seeded random inputs, `--repeat` times, and print
    /// the wall time: a program with exactly these launches, for profilers (`ncu`) and
    /// checkers (`compute-sanitizer`).
    Run {
        /// The kernel.
        kernel: String,
        /// The problem, as `name=value,...` for every scalar parameter; default: the
        /// kernel's largest certification case.
        #[arg(long)]
        problem: Option<String>,
        /// The schedule, as `forge list --schedules` prints it; default: the declared one.
        #[arg(long)]
        schedule: Option<String>,
        /// How many times to launch it.
        #[arg(long, default_value_t = 1)]
        repeat: u32,
        /// The seed of the inputs.
        #[arg(long, default_value_t = DEFAULT_SEED)]
        seed: u64,
    },
    /// The manifest cache.
    Cache {
        #[command(subcommand)]
        action: CacheCommand,
    },
    /// Translate a kernel's WGSL with naga (`--backend wgsl|spirv|msl|hlsl|glsl`), for one
    /// schedule. Needs no GPU.
    Emit(EmitArgs),
    /// Print what `#[forge_kernel]` generated for a kernel: its WGSL, then its Rust.
    Expand {
        /// The kernel.
        kernel: String,
        /// Print only the WGSL.
        #[arg(long)]
        wgsl: bool,
    },
}

/// `forge emit KERNEL --backend ...`
#[derive(Args, Debug)]
struct EmitArgs {
    /// The kernel.
    kernel: String,
    /// The schedule, written as `forge list` prints it, e.g. `wg=128,items=2,vec=1`; settings
    /// left out keep the declared schedule's value. It must be the declared schedule or in
    /// the kernel's tuning space. Default: the declared schedule.
    #[arg(long)]
    schedule: Option<String>,
    /// Write to this file (replaced atomically) instead of stdout. SPIR-V is binary: it goes
    /// to stdout only when stdout is not a terminal.
    #[arg(short = 'o', long)]
    output: Option<std::path::PathBuf>,
    /// With `--backend ptx`: the virtual architecture NVRTC targets, e.g. `compute_80`.
    /// Default: `compute_90` (Hopper).
    #[arg(long)]
    arch: Option<String>,
    /// With `--backend wgsl`: the WGSL as a browser's WebGPU takes it, with the `enable
    /// subgroups;` directive a kernel with subgroups needs there (naga, which validates the
    /// WGSL first, does not implement that directive).
    #[arg(long)]
    browser: bool,
    /// Every loop guarded, as the runtime compiles the kernel on an adapter whose driver
    /// cuts loops past 65,535 iterations per invocation (llvmpipe, under lavapipe): each
    /// loop counts its runs in a hidden storage buffer, so that a cut loop is an error
    /// rather than a wrong result.
    #[arg(long)]
    guard_loops: bool,
}

/// `forge cache ...`
#[derive(Subcommand, Debug)]
enum CacheCommand {
    /// List every manifest: topology, kernel, adapter, tuned buckets, winner.
    Ls,
    /// Remove every manifest.
    Clear,
    /// Write every manifest of the cache (all topologies) as one checksummed bundle file,
    /// to import on identical machines or to embed in a program
    /// (`RuntimeBuilder::manifest_bundle`).
    Export {
        /// The bundle file to write (replaced atomically).
        file: std::path::PathBuf,
    },
    /// Import a bundle that `forge cache export` wrote. Each manifest is checked as loading
    /// checks it (kernel source hash against the built-ins, topology, crate version); one
    /// that fails is named with its reason and skipped. A damaged bundle is an error, and
    /// nothing is written. Prints: imported N, kept M existing, rejected R.
    Import {
        /// The bundle file.
        file: std::path::PathBuf,
        /// Replace manifests already in the cache (by default a trusted one is kept).
        #[arg(long)]
        replace: bool,
    },
}

fn main() -> ExitCode {
    quiet_device_select();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return usage_error(e),
    };
    // Logs to stderr at RUST_LOG's level (warn by default); every span, whatever that
    // level, into the trace of a runtime that keeps one (FORGE_TRACE).
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    use tracing_subscriber::Layer;
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    tracing_subscriber::registry()
        .with(
            tracing_subscriber::fmt::layer()
                .with_writer(std::io::stderr)
                // Colours only on a terminal: in a pipe or a log they are escape codes.
                .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
                .with_filter(filter),
        )
        .with(wgsl_forge::trace::SpanLayer::new())
        .init();
    match run(cli).and_then(|code| out::flush().map(|()| code)) {
        Ok(code) => code,
        Err(e) if e.is_broken_pipe() => ExitCode::SUCCESS,
        Err(e) => {
            // stderr may be closed too: what cannot be said is dropped, never a panic.
            use std::io::Write;
            let mut stderr = std::io::stderr().lock();
            let _ = writeln!(stderr, "error: {}", out::escape(&e.to_string()));
            let mut source = std::error::Error::source(&e);
            while let Some(s) = source {
                let _ = writeln!(stderr, "  caused by: {}", out::escape(&s.to_string()));
                source = s.source();
            }
            match e {
                CliError::Select(_)
                | CliError::Usage(_)
                | CliError::Forge(
                    ForgeError::UnknownBackend { .. }
                    | ForgeError::BackendNotExecutable { .. }
                    | ForgeError::BadEnvVar { .. },
                ) => ExitCode::from(2),
                _ => ExitCode::from(1),
            }
        }
    }
}

/// What clap says about a command line it cannot parse, or its help. clap quotes what it
/// was given as it was given: a 100 kB `--seed` or an argument holding escape sequences
/// would come back whole and raw, so each line of an error goes through the library's
/// [`forge_core::shown::shown`] (escaped, and cut with its length said), and is printed
/// without colour. Help and version are clap's own text, printed as clap prints them.
fn usage_error(e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    if matches!(
        e.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        e.exit()
    }
    use std::io::Write;
    let mut stderr = std::io::stderr().lock();
    for line in e.render().to_string().lines() {
        let _ = writeln!(stderr, "{}", out::shown(line));
    }
    ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2))
}

fn run(cli: Cli) -> Result<ExitCode, CliError> {
    match cli.command {
        Command::Info { all_limits, json } => Ok(info(&cli.runtime, all_limits, json)?),
        Command::List { schedules: false } => {
            list()?;
            Ok(ExitCode::SUCCESS)
        }
        Command::List { schedules: true } => {
            for k in wgsl_forge::kernels::registry::builtin() {
                let declared = k.default_schedule();
                outln!("{}\t{declared}", k.name());
                for s in k.tune_space().candidates() {
                    if s != declared {
                        outln!("{}\t{s}", k.name());
                    }
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::FirstCall {
            kernels,
            warm_up,
            all_schedules,
            json,
        } => {
            let selected = select(&kernels)?;
            let which = match all_schedules {
                true => forge_cli::first_call::Schedules::All,
                false => forge_cli::first_call::Schedules::Runtime,
            };
            first_call(&cli.runtime, &selected, warm_up, which, json)
        }
        Command::Certify {
            kernels,
            seed,
            all_schedules,
            json,
            diff_prints,
        } => {
            // Resolve names before touching the GPU: a typo should not wait for an adapter.
            let selected = select(&kernels)?;
            let mut rt = runtime(&cli.runtime)?;
            if diff_prints {
                return diff_all_prints(&mut rt, &selected, seed);
            }
            Ok(certify_all(&mut rt, &selected, seed, all_schedules, json)?)
        }
        Command::Bench {
            kernels,
            json,
            quick,
            compare_timers,
            plot,
        } => {
            // A path the plot may not replace fails before anything is timed.
            if let Some(path) = &plot {
                forge_core::files::check_replaceable(path)?;
            }
            let named: Vec<String> = kernels
                .iter()
                .filter(|k| k.as_str() != forge_cli::bench::OVERHEAD)
                .cloned()
                .collect();
            select(
                &named
                    .iter()
                    .filter(|k| !k.ends_with('$'))
                    .cloned()
                    .collect::<Vec<_>>(),
            )?;
            // `NAME$` names the kernel whose whole name is `NAME`.
            let all = wgsl_forge::kernels::registry::builtin();
            for k in named.iter().filter(|k| k.ends_with('$')) {
                forge_cli::select::whole_name(&all, k)?;
            }
            let mut rt = runtime(&cli.runtime)?;
            // The first write error of a progress line; the command fails with it after the
            // bench.
            let mut written: Result<(), CliError> = Ok(());
            let mut progress = |json_line: String, human: String| {
                if written.is_ok() {
                    if json {
                        written = out::line(format_args!("{json_line}"));
                    } else {
                        use std::io::Write;
                        let _ = writeln!(std::io::stderr(), "{human}");
                    }
                }
            };
            if compare_timers {
                let rows = forge_cli::bench::compare_timers(&mut rt, &named, quick, |r| {
                    progress(
                        serde_json::to_string(r).unwrap_or_default(),
                        format!("  {} {}: {:.1} us alone", r.kernel, r.shape, r.alone_us),
                    )
                })?;
                written?;
                if !json {
                    out::bytes(forge_cli::bench::comparison_table(&rows).as_bytes())?;
                }
                return Ok(ExitCode::SUCCESS);
            }
            let results = forge_cli::bench::run(&mut rt, &kernels, quick, |r| {
                progress(
                    serde_json::to_string(r).unwrap_or_default(),
                    format!("  {} {}: {:.1} us", r.kernel, r.shape, r.us),
                )
            })?;
            written?;
            if !json {
                out::bytes(forge_cli::bench::table(&results).as_bytes())?;
            }
            if let Some(path) = &plot {
                forge_cli::bench::roofline::plot_svg(&results, path)?;
                if !json {
                    outln!("plot: {}", out::path(path));
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Run {
            kernel,
            problem,
            schedule,
            repeat,
            seed,
        } => {
            let k = select(std::slice::from_ref(&kernel))?[0];
            // Bad usage is found before the GPU is opened.
            let schedule = parse_schedule(k, schedule.as_deref())?;
            let scalars = match problem {
                Some(p) => wgsl_forge::tune::parse_problem(k, &p).map_err(CliError::Usage)?,
                None => largest_case(k)?,
            };
            let mut rt = runtime(&cli.runtime)?;
            let ran = run_once::run(&mut rt, k, &schedule, &scalars, repeat, seed)?;
            outln!(
                "{} at {schedule}: {} launches in {:.3} ms (wall, with upload and readback)",
                k.name(),
                ran.launches,
                ran.wall_ms
            );
            Ok(ExitCode::SUCCESS)
        }
        Command::AutoTuneAll { kernels, seed } => {
            let selected = select(&kernels)?;
            let mut rt = runtime(&cli.runtime)?;
            Ok(tuning::auto_tune_all(&mut rt, &selected, seed)?)
        }
        Command::Tune {
            kernel,
            plot,
            problem,
            seed,
            json,
            backends,
        } => {
            let k = select(std::slice::from_ref(&kernel))?[0];
            // A problem that cannot be parsed is bad usage, found before the GPU is opened.
            let problem = problem
                .map(|p| wgsl_forge::tune::parse_problem(k, &p))
                .transpose()
                .map_err(CliError::Usage)?;
            if !backends.is_empty() {
                if plot.is_some() {
                    return Err(ForgeError::InvalidArgument {
                        kernel: "forge tune",
                        message: "`--plot` draws one backend's candidates; leave it out with `--backends`".into(),
                    }
                    .into());
                }
                let backends = backends
                    .iter()
                    .map(|b| Backend::parse(b))
                    .collect::<Result<Vec<_>, _>>()?;
                let mut open = |b: Backend| {
                    let mut args = cli.runtime.clone();
                    args.backend = Some(b.name().to_string());
                    runtime(&args)
                };
                return tuning::tune_backends(&mut open, k, seed, problem, &backends, json);
            }
            let mut rt = runtime(&cli.runtime)?;
            Ok(tuning::tune_one(
                &mut rt,
                k,
                seed,
                problem,
                plot.as_deref(),
                json,
            )?)
        }
        Command::Cache { action } => {
            let Some(dir) = cli.runtime.cache_dir()? else {
                return Err(ForgeError::InvalidArgument {
                    kernel: "forge cache",
                    message: "no cache directory: pass --cache-dir or set FORGE_CACHE_DIR".into(),
                }
                .into());
            };
            Ok(match action {
                CacheCommand::Ls => {
                    // Marks this machine's manifests when an adapter can be opened.
                    let topology = runtime(&cli.runtime).ok().map(|rt| rt.topology_hash());
                    tuning::cache_ls(&dir, topology.as_deref())?
                }
                CacheCommand::Clear => tuning::cache_clear(&dir)?,
                CacheCommand::Export { file } => tuning::cache_export(&dir, &file)?,
                CacheCommand::Import { file, replace } => {
                    tuning::cache_import(&dir, &file, replace)?
                }
            })
        }
        Command::Emit(args) => {
            // Emission names its target explicitly: FORGE_BACKEND picks what runs, not what
            // is written, so it is not consulted here.
            let Some(backend) = cli.runtime.backend.as_deref() else {
                use clap::CommandFactory;
                Cli::command()
                    .error(
                        clap::error::ErrorKind::MissingRequiredArgument,
                        format!(
                            "`forge emit` needs `--backend <BACKEND>`, one of: {}",
                            Target::VALID
                        ),
                    )
                    .exit()
            };
            emit(&args, Target::parse(backend)?)
        }
        Command::Expand { kernel, wgsl } => {
            let k = select(std::slice::from_ref(&kernel))?[0];
            outln!(
                "// ---- WGSL of `{}` ({}) ----",
                k.name(),
                k.default_schedule()
            );
            outln!("{}", k.wgsl(&k.default_schedule()));
            if !wgsl {
                outln!("// ---- Rust generated by #[forge_kernel] ----");
                outln!("{}", k.expanded_rust());
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn runtime(args: &RuntimeArgs) -> Result<ForgeRuntime, ForgeError> {
    let mut builder = ForgeRuntime::builder().capacity(args.capacity_mib.saturating_mul(1 << 20));
    if let Some(name) = &args.adapter {
        builder = builder.adapter(name.clone());
    }
    if let Some(name) = &args.backend {
        builder = builder.emission(Backend::parse(name)?);
    }
    if let Some(dir) = args.cache_dir()? {
        builder = builder.cache_dir(dir);
    }
    builder.build()
}

/// The registered kernels named on the command line, in the order given, or all of them;
/// see [`forge_cli::select`].
fn select(names: &[String]) -> Result<Vec<&'static dyn Kernel>, CliError> {
    Ok(forge_cli::select::select(
        &wgsl_forge::kernels::registry::builtin(),
        names,
    )?)
}

/// `forge first-call`: the runtime's start, the optional warm-up, then each kernel's first
/// and second call, all timed in this process.
fn first_call(
    args: &RuntimeArgs,
    kernels: &[&dyn Kernel],
    warm_up: bool,
    which: forge_cli::first_call::Schedules,
    json: bool,
) -> Result<ExitCode, CliError> {
    let t = std::time::Instant::now();
    let mut rt = runtime(args)?;
    let runtime_ms = t.elapsed().as_secs_f64() * 1e3;
    let loaded = rt.pipeline_cache_loaded_bytes();
    let warm_up_ms = if warm_up {
        let t = std::time::Instant::now();
        rt.warm_up(kernels)?;
        Some(t.elapsed().as_secs_f64() * 1e3)
    } else {
        None
    };
    // As `forge certify` does: a kernel that needs a feature the adapter lacks (cooperative
    // matrices on lavapipe) is skipped, and says so, rather than failing the others.
    let mut runnable: Vec<&dyn Kernel> = Vec::with_capacity(kernels.len());
    for &k in kernels {
        match rt.cannot_run(k) {
            Some(why) => out::skip(k.name(), &why, json)?,
            None => runnable.push(k),
        }
    }
    let rows = forge_cli::first_call::measure(&mut rt, &runnable, which)?;
    // Written now rather than at drop, so that a failure to write is this command's error.
    rt.save_pipeline_cache()?;
    let summary = serde_json::json!({
        "summary": "first-call",
        "adapter": rt.adapter_info().name,
        "runtime_ms": runtime_ms,
        "warm_up_ms": warm_up_ms,
        "first_calls_ms": rows.iter().map(|r| r.first_ms).sum::<f64>(),
        "slowest_first_ms": rows.iter().map(|r| r.first_ms).fold(0.0, f64::max),
        "pipeline_cache": rt.pipeline_cache_path().map(|p| p.display().to_string()),
        "pipeline_cache_loaded_bytes": loaded,
        // With --warm-up this stays at one per kernel: the calls compiled nothing more.
        "pipelines_compiled": rt.stats().pipelines_compiled,
    });
    if json {
        for r in &rows {
            outln!("{}", serde_json::to_string(r).unwrap_or_default());
        }
        outln!("{summary}");
    } else {
        out::bytes(forge_cli::first_call::table(&rows).as_bytes())?;
        outln!(
            "runtime {runtime_ms:.1} ms{}; pipeline cache: {}",
            warm_up_ms.map_or(String::new(), |w| format!(", warm-up {w:.1} ms")),
            match (rt.pipeline_cache_path(), loaded) {
                (Some(p), Some(b)) => format!("{} ({b} bytes loaded)", out::path(p)),
                _ => "off".to_string(),
            }
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// The schedule `--schedule` names (the declared one when `None`). One that cannot be
/// parsed, or that the kernel does not declare, is bad usage.
fn parse_schedule(kernel: &dyn Kernel, text: Option<&str>) -> Result<Schedule, CliError> {
    let declared = kernel.default_schedule();
    let schedule = match text {
        None => declared,
        Some(text) => declared.with_settings(text).map_err(|reason| {
            CliError::Usage(ForgeError::BadSchedule {
                kernel: kernel.name(),
                schedule: format!("`{}`", out::shown(text)),
                reason,
            })
        })?,
    };
    forge_core::plan::check_declared(kernel, &schedule).map_err(CliError::Usage)?;
    Ok(schedule)
}

/// The scalars of the kernel's largest certification case (by total binding length).
fn largest_case(kernel: &dyn Kernel) -> Result<Vec<wgsl_forge::ScalarValue>, CliError> {
    let size = |c: &Vec<wgsl_forge::ScalarValue>| {
        kernel
            .binding_lens(c)
            .map(|l| l.iter().map(|x| *x as u128).sum::<u128>())
            .unwrap_or(0)
    };
    kernel
        .cert_cases()
        .into_iter()
        .max_by_key(size)
        .ok_or_else(|| {
            CliError::Usage(ForgeError::InvalidArgument {
                kernel: kernel.name(),
                message: "the kernel declares no certification case: name a `--problem`".into(),
            })
        })
}

/// `forge emit`: translates one kernel at one schedule and writes it out.
fn emit(args: &EmitArgs, target: Target) -> Result<ExitCode, CliError> {
    let kernel = select(std::slice::from_ref(&args.kernel))?[0];
    let schedule = parse_schedule(kernel, args.schedule.as_deref())?;
    let emitted = match (&args.arch, target) {
        _ if args.guard_loops && (args.browser || args.arch.is_some()) => {
            return Err(CliError::Usage(ForgeError::InvalidArgument {
                kernel: "forge emit",
                message: "`--guard-loops` shows what the runtime compiles: not with `--browser` or `--arch`".into(),
            }))
        }
        (None, _) if args.guard_loops => wgsl_forge::emit::emit_guarded(kernel, &schedule, target)?,
        (None, Target::Wgsl) if args.browser => {
            wgsl_forge::emit::Emitted::Text(wgsl_forge::emit::emit_for_browser(kernel, &schedule)?)
        }
        (_, t) if args.browser && t != Target::Wgsl => {
            return Err(CliError::Usage(ForgeError::InvalidArgument {
                kernel: "forge emit",
                message: format!("`--browser` is for `--backend wgsl`, not `{target}`"),
            }))
        }
        (Some(arch), Target::Ptx) => {
            wgsl_forge::emit::Emitted::Text(wgsl_forge::emit::emit_ptx(kernel, &schedule, arch)?)
        }
        (Some(_), _) => {
            return Err(CliError::Usage(ForgeError::InvalidArgument {
                kernel: "forge emit",
                message: format!("`--arch` is for `--backend ptx`, not `{target}`"),
            }))
        }
        (None, _) => wgsl_forge::emit::emit(kernel, &schedule, target)?,
    };
    match &args.output {
        // `-o -` is stdout, as it is for most tools.
        Some(path) if path.as_os_str() != "-" => {
            emitted.write_to(path)?;
            use std::io::Write;
            let _ = writeln!(
                std::io::stderr(),
                "wrote {} ({target}, {schedule}) to {}",
                kernel.name(),
                out::path(path)
            );
        }
        _ => {
            use std::io::IsTerminal;
            if emitted.text().is_none() && std::io::stdout().is_terminal() {
                return Err(ForgeError::InvalidArgument {
                    kernel: "forge emit",
                    message: format!(
                        "SPIR-V is binary and stdout is a terminal: write it with `-o {}.spv`, or redirect stdout",
                        kernel.name()
                    ),
                }
                .into());
            }
            out::bytes(&emitted.to_bytes())?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Limits that decide whether and how a kernel runs.
const KEY_LIMITS: &[&str] = &[
    "max_storage_buffer_binding_size",
    "max_buffer_size",
    "max_uniform_buffer_binding_size",
    "max_storage_buffers_per_shader_stage",
    "max_compute_workgroup_storage_size",
    "max_compute_invocations_per_workgroup",
    "max_compute_workgroup_size_x",
    "max_compute_workgroups_per_dimension",
];

fn info(args: &RuntimeArgs, all_limits: bool, json: bool) -> Result<ExitCode, CliError> {
    let adapters = ForgeRuntime::enumerate_adapters();
    if !json {
        outln!("adapters ({}):", adapters.len());
        for a in &adapters {
            outln!(
                "  - {} [{:?}, {:?}] driver: {} {}",
                out::escape(&a.name),
                a.backend,
                a.device_type,
                out::escape(&a.driver),
                out::escape(&a.driver_info)
            );
        }
    }
    let rt = runtime(args)?;
    let profile = rt.profile();
    let hash = profile.topology_hash();
    if json {
        let value = serde_json::json!({
            "adapters": adapters.iter().map(|a| format!("{} [{:?}, {:?}]", a.name, a.backend, a.device_type)).collect::<Vec<_>>(),
            "profile": profile,
            "topology_hash": hash,
            "emission": rt.emission().to_string(),
            "backends": Target::ALL.iter().map(|t| (t.name(), t.where_it_runs())).collect::<std::collections::BTreeMap<_, _>>(),
        });
        outln!("{}", to_json(value)?);
        return Ok(ExitCode::SUCCESS);
    }
    let info = rt.adapter_info();
    outln!();
    outln!("chosen adapter: {}", out::escape(&info.name));
    if rt.is_cuda() {
        outln!("  backend:        CUDA (not wgpu)");
    } else {
        outln!("  backend:        {:?}", info.backend);
    }
    outln!("  device type:    {:?}", info.device_type);
    outln!(
        "  vendor/device:  {:#06x}/{:#06x}",
        info.vendor,
        info.device
    );
    outln!(
        "  driver:         {} {}",
        out::escape(&info.driver),
        out::escape(&info.driver_info)
    );
    outln!(
        "  subgroup sizes: {}..={}",
        profile.subgroup_min_size,
        profile.subgroup_max_size
    );
    outln!("  emission:       {}", rt.emission());
    outln!("  topology hash:  {hash}");
    outln!("backends (forge emit --backend NAME):");
    for t in Target::ALL {
        outln!("  {:<6} {}", t.name(), t.where_it_runs());
    }
    outln!("limits:");
    for (name, value) in &profile.limits {
        if all_limits || KEY_LIMITS.contains(&name.as_str()) {
            outln!("  {name:<44} {value}");
        }
    }
    if !all_limits {
        outln!("  (--all-limits shows all {})", profile.limits.len());
    }
    outln!("adapter features ({}):", profile.features.len());
    for f in &profile.features {
        outln!("  {f}");
    }
    // What cooperative-matrix multiplies the driver offers (A·B + C, per subgroup): the
    // element types say whether an fp32 GEMM could use them.
    let coop = rt
        .wgpu()
        .map(|w| w.adapter.cooperative_matrix_properties())
        .unwrap_or_default();
    outln!("cooperative matrix configurations ({}):", coop.len());
    for p in &coop {
        outln!(
            "  {}x{}x{} (MxNxK): A, B {:?}; C {:?}{}",
            p.m_size,
            p.n_size,
            p.k_size,
            p.ab_type,
            p.cr_type,
            if p.saturating_accumulation {
                ", saturating"
            } else {
                ""
            }
        );
    }
    let enabled: Vec<String> = rt
        .features()
        .iter_names()
        .map(|(n, _)| n.to_string())
        .collect();
    outln!(
        "enabled by the runtime: {}",
        if enabled.is_empty() {
            "none".to_string()
        } else {
            enabled.join(", ")
        }
    );
    Ok(ExitCode::SUCCESS)
}

fn list() -> Result<(), CliError> {
    for k in wgsl_forge::kernels::registry::builtin() {
        let space = k.tune_space();
        outln!("{}", k.name());
        for b in k.layout() {
            let access = match b.access {
                Access::Read => "read",
                Access::ReadWrite => "read_write",
                Access::Out => "out",
            };
            outln!(
                "  @binding({}) {}: array<{}, {}> ({access})",
                b.binding,
                b.name,
                b.elem.wgsl(),
                b.len
            );
        }
        if !k.scalars().is_empty() {
            let scalars: Vec<String> = k
                .scalars()
                .iter()
                .map(|s| format!("{}: {}", s.name, s.ty.wgsl()))
                .collect();
            outln!(
                "  @binding({}) params: {{ {} }}",
                k.layout().len(),
                scalars.join(", ")
            );
        }
        outln!("  schedule: {}", k.default_schedule());
        let knobs: String = space
            .knobs
            .iter()
            .map(|(name, vals)| format!(" × {name} {vals:?}"))
            .collect();
        // Sizes of a 1-D kernel, shapes (`16x16`) of a 2-D or 3-D one.
        let workgroups: Vec<String> = if space.shapes.is_empty() {
            space.workgroup.iter().map(|w| w.to_string()).collect()
        } else {
            space
                .shapes
                .iter()
                .map(|s| {
                    s.iter()
                        .map(|v| v.to_string())
                        .collect::<Vec<_>>()
                        .join("x")
                })
                .collect()
        };
        let keep = if space.keep.is_empty() {
            String::new()
        } else {
            format!(", keep {}", space.keep)
        };
        outln!(
            "  tune space: workgroup [{}] × items {:?} × vector {:?}{knobs}{keep} ({} candidates)",
            workgroups.join(", "),
            space.items,
            space.vector,
            space.len()
        );
        let tol = k.tolerance();
        outln!(
            "  certification: {} cases, tolerance abs {:e} rel {:e}",
            k.cert_cases().len(),
            tol.abs,
            tol.rel
        );
    }
    Ok(())
}

/// `forge certify --diff-prints`: each kernel's GPU and oracle print lines for one case,
/// compared line by line.
fn diff_all_prints(
    rt: &mut ForgeRuntime,
    kernels: &[&'static dyn Kernel],
    seed: u64,
) -> Result<ExitCode, CliError> {
    let opts = CertOptions::new(seed);
    let mut differ = 0;
    for &k in kernels {
        let label = forge_cli::select::label(k, kernels);
        if k.prints().is_none() {
            outln!("{} has no debug_print!", out::escape(&label));
            continue;
        }
        let schedule = rt.schedule_for(k);
        let diff = wgsl_forge::certify::diff_prints(rt, k, &schedule, &opts)?;
        let case = out::escape(&diff.case);
        match diff.first_difference() {
            None => outln!(
                "{}: the GPU and the oracle agree on all {} print lines ({case}, {schedule})",
                out::escape(&label),
                diff.gpu.len()
            ),
            Some((i, gpu, oracle)) => {
                differ += 1;
                let side = |l: Option<&str>| l.map_or_else(|| "(no line)".into(), out::escape);
                outln!(
                    "{}: the prints differ at line {} ({case}, {schedule}; the GPU printed {} lines, the oracle {})",
                    out::escape(&label),
                    i + 1,
                    diff.gpu.len(),
                    diff.oracle.len()
                );
                outln!("  gpu:    {}", side(gpu));
                outln!("  oracle: {}", side(oracle));
            }
        }
    }
    Ok(if differ > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

fn certify_all(
    rt: &mut ForgeRuntime,
    kernels: &[&'static dyn Kernel],
    seed: u64,
    all_schedules: bool,
    json: bool,
) -> Result<ExitCode, CliError> {
    let opts = CertOptions::new(seed);
    let mut reports: Vec<CertReport> = Vec::new();
    // Whether each report's schedule came from the tuning manifest.
    let mut tuned: Vec<bool> = Vec::new();
    // The kernels this runtime cannot run at all.
    let mut skipped: Vec<&str> = Vec::new();
    for &k in kernels {
        // As the browser's certification does: a kernel that needs a feature the adapter
        // lacks (cooperative matrices on lavapipe) is skipped, and says so.
        if let Some(why) = rt.cannot_run(k) {
            // Under `--json` on stderr, so that stdout stays JSON and the reason is not lost.
            out::skip(k.name(), &why, json)?;
            skipped.push(k.name());
            continue;
        }
        // Every schedule the kernel may run at: the tuner's candidates, which put the
        // declared schedule first where the tuning space lacks it (it is what runs untuned).
        let schedules: Vec<Schedule> = if all_schedules {
            wgsl_forge::tune::candidates(k)
        } else {
            vec![rt.schedule_for(k)]
        };
        for schedule in schedules {
            // A schedule of the tuning space past this adapter's limits (workgroup memory
            // beyond its `max_compute_workgroup_storage_size`, say) is skipped, and says so.
            if let Err(why) = rt.check_schedule(k, &schedule) {
                if !json {
                    outln!("skip {} at {schedule}: {why}", k.name());
                }
                continue;
            }
            let mut report = certify(rt, k, &schedule, &opts)?;
            report.kernel = forge_cli::select::label(k, kernels);
            tuned.push(!all_schedules && rt.tuned_schedule(k) == Some(schedule));
            tracing::info!(kernel = k.name(), %schedule, verdict = %report.verdict, "certified");
            reports.push(report);
        }
    }
    // Nothing certified is not a pass: every kernel asked for was skipped.
    if reports.is_empty() && !skipped.is_empty() {
        eprintln!(
            "error: no certification ran: this runtime can run none of {}",
            skipped.join(", ")
        );
        return Ok(ExitCode::FAILURE);
    }
    let failed = reports.iter().filter(|r| !r.passed()).count();
    if json {
        let value = serde_json::to_value(&reports).map_err(json_error)?;
        outln!("{}", to_json(value)?);
    } else {
        print_table(rt, seed, &reports, &tuned)?;
        if failed > 0 {
            outln!("\n{failed} of {} certifications FAILED", reports.len());
        } else {
            outln!("\nall {} certifications passed", reports.len());
        }
    }
    Ok(if failed > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

fn print_table(
    rt: &ForgeRuntime,
    seed: u64,
    reports: &[CertReport],
    tuned: &[bool],
) -> Result<(), CliError> {
    outln!(
        "adapter: {} ({:?}), emission {}, seed {seed}",
        out::escape(&rt.adapter_info().name),
        rt.adapter_info().backend,
        rt.emission()
    );
    let rows: Vec<[String; 5]> = reports
        .iter()
        .zip(tuned.iter().chain(std::iter::repeat(&false)))
        .map(|(r, &tuned)| {
            [
                out::cell(&r.kernel, out::MAX_CELL),
                if tuned {
                    format!("{} (tuned)", r.schedule)
                } else {
                    r.schedule.to_string()
                },
                if r.skipped.is_empty() {
                    r.cases.to_string()
                } else {
                    format!("{} ({} skipped)", r.cases, r.skipped.len())
                },
                format!("{:.2e} abs / {:.2e} rel", r.max_abs_err, r.max_rel_err),
                r.verdict.to_string(),
            ]
        })
        .collect();
    out::table(
        &["kernel", "schedule", "cases", "max error", "verdict"],
        &rows,
    )?;
    for r in reports {
        for f in &r.failures {
            outln!("FAIL {}", out::escape(f));
        }
        for s in &r.skipped {
            outln!("skip {}", out::escape(s));
        }
    }
    Ok(())
}

fn to_json(value: serde_json::Value) -> Result<String, ForgeError> {
    serde_json::to_string_pretty(&value).map_err(json_error)
}

fn json_error(e: serde_json::Error) -> ForgeError {
    ForgeError::Io {
        context: "writing JSON".into(),
        source: std::io::Error::other(e),
    }
}

/// Mesa's device-select Vulkan layer connects to Wayland to find the default GPU, and
/// libwayland prints "error: XDG_RUNTIME_DIR is invalid or not set in the environment."
/// twice where no session runs (CI, containers, ssh). The layer only orders adapters, which
/// the runtime ranks itself, so `forge` turns it off there (`NODEVICE_SELECT=1`) unless the
/// user set it. Set first thing in `main`, before any thread exists.
fn quiet_device_select() {
    if std::env::var_os("XDG_RUNTIME_DIR").is_none()
        && std::env::var_os("NODEVICE_SELECT").is_none()
    {
        std::env::set_var("NODEVICE_SELECT", "1");
    }
}
