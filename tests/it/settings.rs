//! Every setting is a flag of `predex serve`, a `PREDEX_*` variable and a key of the TOML
//! file under one name, listed by `--help`; the example files in `systemd/` are what the
//! definition writes.

use std::collections::BTreeSet;
use std::process::Command;

/// A value for every setting, none its default, valid together (chain mode, so every
/// chain setting is taken).
const SAMPLES: &[(&str, &str)] = &[
    ("data-dir", "/srv/predex-data"),
    ("wal-logs-ahead", "4"),
    ("clob-addr", "127.0.0.1:18080"),
    ("catalogue-addr", "127.0.0.1:18081"),
    ("analytics-addr", "127.0.0.1:18082"),
    ("bridge-addr", "127.0.0.1:18083"),
    ("internal-addr", "127.0.0.1:18090"),
    ("chain-id", "80002"),
    ("exchange-address", "0x0000000000000000000000000000000000000011"),
    ("neg-risk-exchange-address", "0x0000000000000000000000000000000000000012"),
    ("order-domain-name", "Polymarket CTF Exchange"),
    ("order-version", "2"),
    ("exchange-v2-address", "0x0000000000000000000000000000000000000021"),
    ("neg-risk-exchange-v2-address", "0x0000000000000000000000000000000000000022"),
    ("proxy-factory-address", "0x0000000000000000000000000000000000000013"),
    ("proxy-init-code-hash", "0xabababababababababababababababababababababababababababababababab"),
    ("safe-factory-address", "0x0000000000000000000000000000000000000014"),
    ("safe-init-code-hash", "0xcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcd"),
    ("safe-multisend-address", "0x0000000000000000000000000000000000000018"),
    ("relay-hub-address", "0x0000000000000000000000000000000000000019"),
    ("settlement", "chain"),
    ("rpc-url", "http://10.1.2.3:8545"),
    ("operator-key-file", "/run/credentials/predex.service/operator"),
    ("relayer-key-file", "/run/credentials/predex.service/relayer"),
    ("secrets-key-file", "/run/credentials/predex.service/secrets"),
    ("internal-token-file", "/run/credentials/predex.service/token"),
    ("backup-dir", "/srv/predex-backup"),
    ("collateral-address", "0x0000000000000000000000000000000000000015"),
    ("ctf-address", "0x0000000000000000000000000000000000000016"),
    ("neg-risk-adapter-address", "0x0000000000000000000000000000000000000017"),
    ("confirmations", "3"),
    ("replace-after-secs", "30"),
    ("faucet-max", "50"),
    ("faucet-interval-secs", "60"),
    ("faucet-gas", "true"),
    ("catalogue", "/srv/markets.json"),
    ("invite-only", "false"),
    ("invite-ttl-secs", "3600"),
    ("fee-address", "0x0000000000000000000000000000000000000018"),
    ("settlement-interval-ms", "250"),
    ("gtd-interval-ms", "250"),
    ("heartbeat-check-ms", "250"),
    ("rate-limit-max", "1000"),
    ("rate-limit-window-secs", "30"),
    ("trusted-proxies", "10.0.0.1,10.0.0.2"),
    ("body-bytes-in-flight", "33554432"),
    ("max-connections-per-ip", "16"),
    ("ws-window", "1024"),
    ("ws-idle-secs", "30"),
    ("ws-threads", "2"),
    ("events-to", "nats://10.0.0.1:4222"),
    ("events-stream", "VENUE"),
    ("events-replicas", "3"),
    ("reward-sample-ms", "1000"),
    ("payout-check-ms", "1000"),
    ("payout-grace-secs", "10"),
    ("rebate-tiers", "500:1,5000:4"),
    ("resolution-interval-ms", "1000"),
    ("resolution-cooldown-secs", "60"),
    ("bond-clusters", "1:50,2:500"),
    ("rfq-interval-ms", "500"),
    ("rfq-request-ttl-secs", "120"),
    ("rfq-quote-ttl-secs", "30"),
];

fn predex() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_predex"));
    // Nothing of the test's own environment: every variable a run sees, it is given here.
    c.env_clear();
    c
}

/// `predex serve --print-config`, to be given settings.
fn serve() -> Command {
    let mut c = predex();
    c.args(["serve", "--print-config"]);
    c
}

/// What the command printed, parsed; or its one-line refusal.
fn settings(c: &mut Command) -> Result<toml::Table, String> {
    let out = c.output().unwrap();
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).trim().to_string());
    }
    Ok(String::from_utf8(out.stdout).unwrap().parse().unwrap())
}

fn var(key: &str) -> String {
    predex::config::env_name(&key.replace('-', "_"))
}

fn stdout(args: &[&str]) -> String {
    let out = predex().args(args).output().unwrap();
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn every_setting_is_a_flag_a_variable_and_a_key_of_one_name() {
    let names: BTreeSet<String> = predex::config::names().iter().map(|n| n.replace('_', "-")).collect();
    let sampled: BTreeSet<String> = SAMPLES.iter().map(|(k, _)| k.to_string()).collect();
    assert_eq!(names, sampled, "a sample for every setting, and no other");

    // `--help` lists each with its variable.
    let help = stdout(&["serve", "--help"]);
    for key in &names {
        assert!(help.contains(&format!("--{key} ")), "--{key} in --help");
        assert!(help.contains(&format!("[env: {}=", var(key))), "{} in --help", var(key));
    }

    let defaults = settings(&mut serve()).unwrap();
    let mut flags = serve();
    for (k, v) in SAMPLES {
        flags.arg(format!("--{k}")).arg(v);
    }
    let by_flags = settings(&mut flags).unwrap();
    for key in &names {
        assert!(by_flags.contains_key(key), "{key} shown");
        assert_ne!(by_flags.get(key), defaults.get(key), "--{key} took effect");
    }

    let mut vars = serve();
    for (k, v) in SAMPLES {
        vars.env(var(k), v);
    }
    assert_eq!(settings(&mut vars).unwrap(), by_flags, "the variables say the same");

    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("predex.toml");
    std::fs::write(&file, toml::to_string(&by_flags).unwrap()).unwrap();
    assert_eq!(settings(serve().arg("--config").arg(&file)).unwrap(), by_flags, "the file says the same");
}

/// A flag beats a variable, a variable beats the file, the file beats the default; a key
/// the file should not have is refused in one line.
#[test]
fn flags_beat_variables_beat_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("predex.toml");
    std::fs::write(&file, "chain-id = 11\nws-threads = 3\n").unwrap();
    let chain_id = |c: &mut Command| settings(c.arg("--config").arg(&file)).unwrap()["chain-id"].as_integer();
    assert_eq!(chain_id(&mut serve()), Some(11));
    assert_eq!(chain_id(serve().env("PREDEX_CHAIN_ID", "12")), Some(12));
    assert_eq!(chain_id(serve().env("PREDEX_CHAIN_ID", "12").args(["--chain-id", "13"])), Some(13));
    let both = settings(serve().arg("--config").arg(&file).env("PREDEX_CHAIN_ID", "12")).unwrap();
    assert_eq!(both["ws-threads"].as_integer(), Some(3), "the file's other keys stay");
    // Under systemd the state directory is the data directory unless one is set.
    let state = settings(serve().env("STATE_DIRECTORY", "/var/lib/predex:/var/lib/predex-backup")).unwrap();
    assert_eq!(state["data-dir"].as_str(), Some("/var/lib/predex"));
    let set = settings(serve().env("STATE_DIRECTORY", "/var/lib/predex").args(["--data-dir", "/srv/d"])).unwrap();
    assert_eq!(set["data-dir"].as_str(), Some("/srv/d"));

    for (text, refusal) in [
        ("chain_id = 1\n", "unknown setting `chain_id`"),
        ("operator-key = \"0x01\"\n", "unknown setting `operator-key`"),
        ("ws-threads = 0\n", "ws-window, ws-idle-secs and ws-threads must be at least 1"),
    ] {
        std::fs::write(&file, text).unwrap();
        let e = settings(serve().arg("--config").arg(&file)).unwrap_err();
        assert!(e.starts_with("predex: cannot start: ") && e.contains(refusal) && !e.contains('\n'), "{text}: {e}");
    }
}

/// The example files are what the definition writes: every setting, documented, at its
/// default (`systemd/predex.toml` ends with the installation's own lines).
#[test]
fn the_example_files_are_written_by_the_definition() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let toml_file = std::fs::read_to_string(root.join("systemd/predex.toml")).unwrap();
    let written = stdout(&["settings-file", "toml"]);
    assert!(toml_file.starts_with(&written), "systemd/predex.toml: rewrite it with `predex settings-file toml`");
    let env_file = std::fs::read_to_string(root.join("systemd/predex.env")).unwrap();
    assert_eq!(env_file, stdout(&["settings-file", "env"]), "systemd/predex.env: `predex settings-file env`");
    for name in predex::config::names() {
        assert!(written.contains(&format!("# {} = ", name.replace('_', "-"))), "{name}");
        assert!(env_file.contains(&format!("# {}=", predex::config::env_name(&name))), "{name}");
    }
    // The file, as written, reads back as the defaults.
    let dir = tempfile::tempdir().unwrap();
    let uncommented: String = written
        .lines()
        .filter_map(|l| l.strip_prefix("# "))
        .filter(|l| {
            l.contains(" = ")
                && !l.contains("(unset)")
                && l.split(' ')
                    .next()
                    .is_some_and(|k| !k.is_empty() && k.chars().all(|c| c.is_ascii_lowercase() || c == '-'))
        })
        .map(|l| format!("{l}\n"))
        .collect();
    let file = dir.path().join("predex.toml");
    std::fs::write(&file, &uncommented).unwrap();
    assert_eq!(settings(serve().arg("--config").arg(&file)).unwrap(), settings(&mut serve()).unwrap());
}
