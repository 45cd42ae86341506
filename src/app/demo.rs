//! The demo catalogue in `data/`: its markets (`catalogue`), series and events
//! (`events.json` beside it), loaded once into a data directory.

use std::path::Path;

use anyhow::Context;
use serde::Deserialize;

use super::catalogue::writes;
use super::markets::MarketSpec;
use super::AppState;

/// Loads the demo catalogue — `catalogue` (markets) and `events.json` beside it (series
/// and events) — once into a data directory. Ledger mode only: its tokens exist on no
/// chain.
pub async fn load(s: &AppState, catalogue: &Path) -> anyhow::Result<()> {
    if !s.store.demo_loaded(false)? {
        let specs: Vec<MarketSpec> = read_or_default(catalogue, "no demo catalogue loaded")?;
        let n = specs.len();
        for spec in specs {
            super::markets::write(s, spec, true).await.context("catalogue")?;
        }
        s.store.set_demo_loaded(false)?;
        tracing::info!(markets = n, "demo catalogue loaded");
    }
    if !s.store.demo_loaded(true)? {
        let file: EventsFile = read_or_default(&catalogue.with_file_name("events.json"), "no demo events loaded")?;
        let (ns, ne) = (file.series.len(), file.events.len());
        for series in file.series {
            writes::add_series(s, series).await.context("catalogue series")?;
        }
        for event in file.events {
            writes::add_event(s, event).await.context("catalogue event")?;
        }
        s.store.set_demo_loaded(true)?;
        tracing::info!(series = ns, events = ne, "demo events loaded");
    }
    Ok(())
}

/// The demo catalogue's series and events.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct EventsFile {
    #[serde(default)]
    series: Vec<writes::SeriesInput>,
    #[serde(default)]
    events: Vec<writes::EventInput>,
}

/// `path` parsed, or the default (with a warning naming `missing`) when it cannot be read.
fn read_or_default<T: serde::de::DeserializeOwned + Default>(path: &Path, missing: &str) -> anyhow::Result<T> {
    match std::fs::read_to_string(path) {
        Ok(text) => serde_json::from_str(&text).with_context(|| format!("parse {}", path.display())),
        Err(e) => {
            tracing::warn!(path = %path.display(), error = %e, "{missing}");
            Ok(T::default())
        }
    }
}
