//! Progress of long work inside a set-up (attaching to every kernel
//! function), told to whoever listens. Neutral ground: the benchmarks tell,
//! `report` draws (main makes it listen), and neither imports the other.

use std::sync::OnceLock;

/// What the long work has got to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Progress {
    /// `done` of `of` kernel functions have a probe attached.
    Attaching { done: usize, of: usize },
    /// The work is over (done or failed): the progress line ends.
    Finished,
}

/// Set once, by main ([`listen`]) before anything runs; read by [`tell`].
static LISTENER: OnceLock<fn(Progress)> = OnceLock::new();

/// Makes `listener` hear every progress told from now on (the first one set
/// stays).
pub fn listen(listener: fn(Progress)) {
    let _ = LISTENER.set(listener);
}

/// Tells the listener, if there is one.
pub fn tell(progress: Progress) {
    if let Some(listener) = LISTENER.get() {
        listener(progress);
    }
}
