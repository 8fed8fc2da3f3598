//! OTLP export against the real OpenTelemetry Collector and InfluxDB 2, started by
//! `scripts/stack/start.sh` in a throwaway run dir on free ports.
//!
//! Needs the binaries that `scripts/stack/build.sh` caches (`common::stack::stack_dir`).
//! Without them these tests FAIL (they never skip): build them once with `scripts/stack/build.sh`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "../common/mod.rs"]
mod common;
mod faults;
mod harness;
mod join;
mod metrics;
mod tls;
mod two_hosts;

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::stack::{fresh_run_dir, metric_sum, scrape, stack_bin, RunningStack};
use common::{fixture, ns_of, read_tsv, repo_root};
use serde_json::Value;

use harness::*;
