//! All integration tests, one binary: each module drives the real server over HTTP.

mod account;
mod admin;
mod analytics;
mod backup;
mod bad_input;
mod book;
mod bridge;
mod builders;
mod catalogue;
mod chain;
mod clients;
mod crash;
mod ctf;
mod fixture;
mod fuzz;
mod keys;
mod loadgen;
mod matching;
mod openapi;
mod orders;
mod resolution;
mod restart;
mod rewards;
mod rfq;
mod workers;
mod ws;
