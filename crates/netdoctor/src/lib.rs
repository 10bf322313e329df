//! The netdoctor binary as a library: `main.rs` is one call into [`main_with_args`], and
//! integration tests call [`run`] in-process with `Cli::parse_from(..)`.

pub mod analyze;
pub mod cli;
pub mod comparecmd;
pub mod connectcmd;
pub mod demo;
pub mod diagnose;
pub mod dnscmd;
pub mod hostcmd;
pub mod labcmd;
pub mod loadcmd;
pub mod manpages;
pub mod mcp;
pub mod output;
pub mod routeout;
pub mod stop;
pub mod target;
pub mod throughputcmd;
pub mod tracecmd;
pub mod watchcmd;
pub mod watchpods;

pub use cli::{Cli, Command};

use std::io::Write;

/// Exit code for usage and runtime errors (DESIGN.md: 0 healthy, 1 problem, 2 error, 3 inconclusive).
pub const EXIT_ERROR: i32 = 2;

/// Runs one command, writing its result to `out` and progress to stderr. Returns the exit code.
pub fn run(cli: Cli, out: &mut dyn Write) -> anyhow::Result<i32> {
    cli.output().format().map_err(anyhow::Error::msg)?;
    cli.output().lang().map_err(anyhow::Error::msg)?;
    match cli.command {
        Command::Diagnose(args) => diagnose::command(&args, out),
        Command::Analyze(args) => analyze::command(&args, out),
        Command::Lab(args) => labcmd::command(&args, out),
        Command::Demo(args) => demo::command(&args, out),
        Command::Load(args) => loadcmd::load_command(&args, out),
        Command::Connect(args) => connectcmd::connect_command(&args, out),
        Command::Dns(args) => dnscmd::command(&args, out),
        Command::Trace(args) => tracecmd::command(&args, out),
        Command::Watch(args) => watchcmd::command(&args, out),
        Command::Host(args) => hostcmd::command(&args, out),
        Command::Mcp(_) => {
            let stdin = std::io::stdin();
            mcp::serve(&mut stdin.lock(), out)
        }
        Command::Throughput(args) => throughputcmd::command(&args, out),
        Command::Completions(args) => manpages::completions(&args, out),
        Command::Man(args) => manpages::man(&args, out),
    }
}

/// What `--version` prints after the name: the version, the git commit it was built from
/// (`-modified` when the work tree had changes, `unknown` outside git) and whether the eBPF
/// observers are built in (else why not), e.g. `0.1.0 (commit 4f90b95c1a2b, eBPF observers
/// built in)`.
pub fn version_line() -> String {
    let ebpf = match netdoctor_bpf::not_built_reason() {
        None => "eBPF observers built in".to_string(),
        Some(why) => format!("eBPF observers not built: {why}"),
    };
    format!(
        "{} (commit {}, {ebpf})",
        env!("CARGO_PKG_VERSION"),
        env!("NETDOCTOR_GIT_COMMIT")
    )
}

/// Parses the process arguments, runs, prints an error once with its causes, and returns the
/// process exit code. A closed stdout (`netdoctor … | head`) ends the run quietly.
pub fn main_with_args() -> i32 {
    use clap::{CommandFactory, FromArgMatches};
    // What the caller left open (a `flock` lock around `netdoctor lab start`) must not reach
    // the daemons this run starts; an old kernel without close_range keeps the old behaviour.
    let _ = netdoctor_sys::fds::cloexec_inherited();
    // The version line is made at run time (the eBPF state is a constant of netdoctor-bpf);
    // clap wants it 'static, and it is made once per process.
    let version: &'static str = Box::leak(version_line().into_boxed_str());
    let matches = Cli::command().version(version).get_matches();
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    if let Err(msg) = cli.output().format() {
        Cli::command()
            .error(clap::error::ErrorKind::ArgumentConflict, msg)
            .exit();
    }
    let mut out = anstream::AutoStream::auto(std::io::stdout());
    match run(cli, &mut out) {
        Ok(code) => code,
        Err(e) if output::is_broken_pipe(&e) => 0,
        Err(e) => {
            let _ = writeln!(anstream::stderr(), "{}", error_line(&e));
            EXIT_ERROR
        }
    }
}

/// An error as the one line netdoctor prints: `error: ` and its causes, each once.
pub fn error_line(e: &anyhow::Error) -> String {
    let mut msg = format!("error: {e}");
    for cause in e.chain().skip(1) {
        let c = cause.to_string();
        if !msg.contains(&c) {
            msg.push_str(": ");
            msg.push_str(&c);
        }
    }
    msg
}
