//! Threads the exchange cannot run without: the engine, the persister's two, the feeds'
//! publisher and the analytics writer. A panic on one of them aborts the process.
//!
//! Left to itself a panic ends only its thread, and the rest of the process keeps serving
//! around the hole: with the persister gone the engine still matches in memory and answers
//! every command with a storage error; with the publisher gone the feeds fall silent. No
//! supervisor restarts such a process (the systemd watchdog pings the engine alone). An
//! abort is what a failed group commit already does, and what `kill -9` does: nothing
//! acknowledged is lost, and the service manager restarts from disk.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::thread::JoinHandle;

/// Spawns `f` on a thread named `name`; if `f` panics, the process aborts (the panic's
/// message has been printed by then, with the thread's name).
pub fn spawn<T, F>(name: &'static str, f: F) -> JoinHandle<T>
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    std::thread::Builder::new()
        .name(name.into())
        .spawn(move || match catch_unwind(AssertUnwindSafe(f)) {
            Ok(t) => t,
            Err(_) => {
                tracing::error!(thread = name, "an essential thread panicked; aborting to restart from disk");
                std::process::abort();
            }
        })
        .unwrap_or_else(|e| panic!("spawn the {name} thread: {e}"))
}

#[cfg(test)]
mod tests {
    /// Set for the child process of `a_panic_aborts_the_process`.
    const CHILD: &str = "PREDEX_TEST_VITAL_CHILD";

    #[test]
    fn a_thread_that_returns_hands_back_its_value() {
        assert_eq!(super::spawn("essential-ok", || 7).join().unwrap(), 7);
    }

    /// The child's side of the next test: an essential thread panics. Does nothing unless
    /// started by that test.
    #[test]
    #[ignore = "run in a child process by a_panic_aborts_the_process"]
    fn essential_child_panics() {
        if std::env::var_os(CHILD).is_none() {
            return;
        }
        let _ = super::spawn("essential-test", || panic!("the essential test's panic")).join();
        // Reached only when the panic did not abort.
        std::process::exit(3);
    }

    #[test]
    fn a_panic_aborts_the_process() {
        use std::os::unix::process::ExitStatusExt;
        const SIGABRT: i32 = 6;
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--ignored", "--exact", "essential::tests::essential_child_panics", "--nocapture"])
            .env(CHILD, "1")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.signal(), Some(SIGABRT), "{:?}; stderr: {stderr}", out.status);
        assert!(stderr.contains("'essential-test'") && stderr.contains("the essential test's panic"), "{stderr}");
    }
}
