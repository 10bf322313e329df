//! `netdoctor load URL` and `netdoctor connect HOST:PORT`: the load engine on its own.

use clap::Args;
use std::io::Write;

#[derive(Debug, Clone, Args)]
pub struct LoadArgs {
    /// Target URL.
    pub url: String,
}

#[derive(Debug, Clone, Args)]
pub struct ConnectArgs {
    /// Target HOST:PORT.
    pub target: String,
}

pub fn load_command(_args: &LoadArgs, _out: &mut dyn Write) -> anyhow::Result<i32> {
    anyhow::bail!("`netdoctor load` is not implemented yet")
}

pub fn connect_command(_args: &ConnectArgs, _out: &mut dyn Write) -> anyhow::Result<i32> {
    anyhow::bail!("`netdoctor connect` is not implemented yet")
}
