//! All integration tests, one binary: each module drives the real server over HTTP.

mod book;
mod crash;
mod fixture;
mod keys;
mod matching;
mod orders;
mod restart;
