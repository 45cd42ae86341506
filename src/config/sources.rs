//! Where the settings come from, and how they are written out. Every field of [`Config`] is
//! a flag of `predex serve` (`--chain-id`), a variable (`PREDEX_CHAIN_ID`) and a key of the
//! TOML file (`chain-id`): the names derive from the field's, its default and documentation
//! are its `#[arg]` and doc comment. A flag beats a variable, a variable beats the file, the
//! file beats the default.

use clap::parser::ValueSource;
use clap::{ArgMatches, Args, Command, FromArgMatches};

use super::Config;

/// The settings as arguments of a command, without their variables.
fn arguments() -> Command {
    Config::augment_args(Command::new("predex"))
}

/// Every setting at its default.
pub(super) fn defaults() -> Config {
    let m = arguments().try_get_matches_from(["predex"]).expect("every setting has a default or none");
    Config::from_arg_matches(&m).expect("the defaults parse")
}

/// The settings' names, as their fields spell them (`chain_id`), in the order documented.
pub fn names() -> Vec<String> {
    arguments().get_arguments().map(|a| a.get_id().to_string()).collect()
}

/// A setting's variable: `chain_id` → `PREDEX_CHAIN_ID`.
pub fn env_name(name: &str) -> String {
    format!("PREDEX_{}", name.to_uppercase())
}

/// A command with every setting as an argument, each with its variable.
pub fn add_arguments(cmd: Command) -> Command {
    let names = names();
    Config::augment_args(cmd.next_help_heading("Settings (each also a PREDEX_* variable and a TOML key)")).mut_args(
        |a| {
            let id = a.get_id().to_string();
            if names.contains(&id) {
                a.env(env_name(&id))
            } else {
                a
            }
        },
    )
}

/// The settings to run with: those `m` holds from flags and variables over the keys of the
/// TOML file's text over the defaults. Under systemd, a data directory set nowhere is the
/// unit's state directory. Checked ([`Config::validate`]).
pub fn resolve(m: &ArgMatches, file: Option<&str>) -> anyhow::Result<Config> {
    let given = |id: &str| matches!(m.value_source(id), Some(ValueSource::CommandLine | ValueSource::EnvVariable));
    let names = names();
    let mut table = toml::Table::try_from(Config::from_arg_matches(m)?)?;
    let file: toml::Table = file.map(str::parse).transpose()?.unwrap_or_default();
    let state_dir = !given("data_dir") && !file.contains_key("data-dir");
    for (key, value) in file {
        let id = key.replace('-', "_");
        if !names.contains(&id) || key.contains('_') {
            anyhow::bail!("unknown setting `{key}` in the configuration file");
        }
        if !given(&id) {
            table.insert(key, value);
        }
    }
    let mut c: Config = table.try_into()?;
    if state_dir {
        // Several state directories come colon-separated: the first is the data's.
        if let Ok(state) = std::env::var("STATE_DIRECTORY") {
            c.data_dir = state.split(':').next().unwrap_or_default().into();
        }
    }
    c.validate()?;
    Ok(c)
}

/// Which example file [`example`] writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Example {
    /// The TOML file (`--config`), as `systemd/predex.toml`.
    Toml,
    /// The environment file, as `systemd/predex.env`.
    Env,
}

/// Every setting, its documentation and its default, commented out: the configuration
/// file or the environment file an operator starts from.
pub fn example(kind: Example) -> String {
    let defaults = toml::Table::try_from(defaults()).expect("settings serialize");
    let mut out = String::from(match kind {
        Example::Toml => {
            "# predex's settings (`predex serve --config FILE`; /etc/predex/predex.toml under\n\
             # systemd). Every key is optional: each is shown at its default, commented out. A\n\
             # PREDEX_* variable or a flag of the same name overrides the file.\n\
             # Written by `predex settings-file toml`.\n"
        }
        Example::Env => {
            "# The environment of predex.service (/etc/predex/predex.env). Each PREDEX_* variable\n\
             # overrides the key of the same name in the TOML file; each is shown at its\n\
             # default, commented out.\n\
             # Written by `predex settings-file env`.\n\
             \n\
             # PREDEX_CONFIG=/etc/predex/predex.toml\n\
             # PREDEX_LOG_JSON=false\n"
        }
    });
    for a in arguments().get_arguments() {
        let id = a.get_id().as_str();
        let key = id.replace('_', "-");
        out.push('\n');
        let help = a.get_long_help().or(a.get_help()).map(|h| h.to_string()).unwrap_or_default();
        let width = textwrap::Options::new(86).word_splitter(textwrap::WordSplitter::NoHyphenation);
        for line in textwrap::wrap(&help, width) {
            out.push_str(&format!("# {line}\n"));
        }
        let placeholder = || a.get_value_names().and_then(|v| v.first()).map(|v| v.to_string()).unwrap_or_default();
        let line = match kind {
            Example::Toml => match defaults.get(&key) {
                Some(v) => format!("# {key} = {v}\n"),
                None => format!("# {key} = \"{}\"   (unset)\n", placeholder()),
            },
            Example::Env => {
                let values: Vec<String> = a.get_default_values().iter().map(|v| v.to_string_lossy().into()).collect();
                match values.is_empty() {
                    false => format!("# {}={}\n", env_name(id), values.join(",")),
                    true => format!("# {}={}   (unset)\n", env_name(id), placeholder()),
                }
            }
        };
        out.push_str(&line);
    }
    out
}
