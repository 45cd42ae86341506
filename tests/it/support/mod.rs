//! The integration tests' harness: the server in-process (`server`), a trader and its
//! signed requests and orders (`trader`), the binary as a child process and load from
//! threads (`processes`), WebSocket clients (`feeds`) and chain mode's anvil and venue
//! (`chain`). A test module takes it all with `use crate::support::*;`.

pub mod chain;
mod feeds;
mod processes;
mod server;
mod trader;

pub(crate) use feeds::*;
pub(crate) use processes::*;
pub(crate) use server::*;
pub(crate) use trader::*;
