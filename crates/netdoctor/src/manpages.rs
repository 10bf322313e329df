//! Shell completions (`netdoctor completions SHELL`, clap_complete) and man pages (`netdoctor
//! man DIR`, clap_mangen: `netdoctor.1` plus one `netdoctor-<command>.1` per command),
//! both generated from the CLI definition so they cannot drift from `--help`.

use crate::cli::Cli;
use clap::{Args, CommandFactory};
use clap_complete::Shell;
use std::io::Write;
use std::path::PathBuf;

#[derive(Debug, Clone, Args)]
pub struct CompletionsArgs {
    /// The shell to print completions for.
    #[arg(value_enum)]
    pub shell: Shell,
}

#[derive(Debug, Clone, Args)]
pub struct ManArgs {
    /// Directory to write the pages into (created if missing).
    pub dir: PathBuf,
}

/// The CLI as clap sees it, with the version `--version` prints.
fn command() -> clap::Command {
    let version: &'static str = Box::leak(crate::version_line().into_boxed_str());
    Cli::command().version(version)
}

pub fn completions(args: &CompletionsArgs, out: &mut dyn Write) -> anyhow::Result<i32> {
    clap_complete::generate(args.shell, &mut command(), "netdoctor", out);
    Ok(0)
}

/// Writes `netdoctor.1` and `netdoctor-<command>.1` for every visible command; prints each
/// path written.
pub fn man(args: &ManArgs, out: &mut dyn Write) -> anyhow::Result<i32> {
    use anyhow::Context;
    std::fs::create_dir_all(&args.dir).with_context(|| format!("create {}", args.dir.display()))?;
    let mut cmd = command();
    cmd.build();
    let mut pages = vec![("netdoctor".to_string(), cmd.clone())];
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        // clap wants a 'static name; a few per process.
        let name: &'static str =
            Box::leak(format!("netdoctor-{}", sub.get_name()).into_boxed_str());
        pages.push((name.to_string(), sub.clone().name(name)));
    }
    for (name, page) in pages {
        let path = args.dir.join(format!("{name}.1"));
        let mut buf = Vec::new();
        clap_mangen::Man::new(page).render(&mut buf)?;
        std::fs::write(&path, buf).with_context(|| format!("write {}", path.display()))?;
        writeln!(out, "{}", path.display())?;
    }
    Ok(0)
}
