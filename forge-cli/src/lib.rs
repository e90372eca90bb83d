//! # forge-cli
//!
//! The `forge` command line of WGSL Forge (`src/main.rs`) and what it shares with its
//! examples: [`bench`](mod@bench), the timings of `forge bench`, [`first_call`], the
//! cold-start timings of `forge first-call`, and [`select`](mod@select),
//! which kernels a command line names. It lives apart from the `wgsl-forge`
//! library so that a library user builds none of the CLI's dependencies (clap, indicatif,
//! plotters, tracing-subscriber).
//!
//! Run it with `cargo run -p forge-cli --bin forge -- certify`; `forge --help` lists the
//! commands.

#![warn(missing_docs)]

pub mod bench;
pub mod first_call;
pub mod select;
