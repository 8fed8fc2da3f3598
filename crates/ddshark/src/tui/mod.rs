//! The terminal UI of `ddshark -i IFACE` / `ddshark -r FILE`.
//!
//! It runs on its own thread and only reads the latest [`Snapshot`] from the
//! [`SnapshotHub`] (a lock held just long enough to clone an `Arc`): the capture
//! and state threads never wait on it, so a slow terminal cannot cause capture
//! drops. Rendering is a pure function of (`Snapshot`, [`UiState`]) → frame
//! ([`render`]), which the snapshot tests exercise with ratatui's `TestBackend`.
//!
//! The terminal is restored when the UI ends normally, on an error and on a panic
//! (a panic hook restores it before the default hook prints the message).
//!
//! A terminal that goes away (its tmux server killed, the ssh session dropped) ends the UI
//! as `q` does: crossterm reads end-of-file from a hung-up terminal as "no event" and would
//! poll it forever, so the loop asks the kernel whether the terminal hung up.

mod app;
pub(crate) mod fmt;
pub mod log;
mod pane;
mod render;
mod style;

use std::io::{self, IsTerminal, Stdout};
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Once};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context, Result};
use ratatui::backend::{Backend, CrosstermBackend};
use ratatui::crossterm::cursor::Show;
use ratatui::crossterm::event::{self, Event};
use ratatui::crossterm::execute;
use ratatui::crossterm::terminal::{
    disable_raw_mode, enable_raw_mode, EnterAlternateScreen, LeaveAlternateScreen,
};
use ratatui::Terminal;

pub use app::{Action, TopicColumn, UiState, View};
pub use render::render;

use crate::pipeline::{PaceControl, SnapshotHub};
use crate::state::Snapshot;

/// Messages the UI keeps for its log line.
const LOG_LINES: usize = 20;

/// Capture-time period of the snapshots the TUI shows.
pub const SNAPSHOT_NS: u64 = 500_000_000;

/// Can the TUI run here (stdin and stdout are terminals)?
pub(crate) fn available() -> bool {
    io::stdout().is_terminal() && io::stdin().is_terminal()
}

/// What the TUI shows about its input.
#[derive(Clone)]
pub struct TuiOptions {
    /// Interface(s) or file name.
    pub source: String,
    pub replay: bool,
    /// Initial replay speed (`None`: as fast as possible).
    pub speed: Option<f64>,
    pub ros_names: bool,
    /// The OTLP exporter, when exporting: its queue and drops go to Health.
    pub export: Option<otel_export::ExportHandle>,
    /// Messages shown on the log line (the program's stderr while the UI is up).
    pub log: Option<log::MessageLog>,
}

/// A running TUI.
pub struct TuiHandle {
    thread: Option<JoinHandle<Result<()>>>,
    quit: Arc<AtomicBool>,
}

impl TuiHandle {
    /// Wait for the user to quit (the input has ended). With `abort`, close it now
    /// (the capture failed: the error must be readable on a restored terminal).
    pub fn finish(mut self, abort: bool) -> Result<()> {
        if abort {
            self.quit.store(true, Ordering::Relaxed);
        }
        self.join()
    }

    fn join(&mut self) -> Result<()> {
        match self.thread.take() {
            Some(t) => t
                .join()
                .map_err(|_| anyhow!("the terminal UI panicked"))
                .and_then(|r| r),
            None => Ok(()),
        }
    }
}

impl Drop for TuiHandle {
    fn drop(&mut self) {
        self.quit.store(true, Ordering::Relaxed);
        let _ = self.join();
    }
}

/// The terminal is in raw mode on the alternate screen.
static ACTIVE: AtomicBool = AtomicBool::new(false);

/// Put the terminal back: cooked mode, main screen, visible cursor. Only once:
/// leaving the alternate screen twice would move the cursor back over what was
/// printed in between (the panic message).
pub(crate) fn restore_terminal() {
    if ACTIVE.swap(false, Ordering::SeqCst) {
        let _ = disable_raw_mode();
        let _ = execute!(io::stdout(), LeaveAlternateScreen, Show);
    }
}

/// Restore the terminal before any panic message is printed (once per process).
fn install_panic_hook() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            PANICKED.store(true, Ordering::SeqCst);
            restore_terminal();
            previous(info);
        }));
    });
}

/// A termination signal (SIGINT, SIGTERM, SIGHUP) asked the program to end: the UI closes
/// instead of waiting for `q` after the input ended.
static CLOSE_REQUESTED: AtomicBool = AtomicBool::new(false);

/// Close the running UI (if any) from a signal handler's thread.
pub(crate) fn request_close() {
    CLOSE_REQUESTED.store(true, Ordering::SeqCst);
}

/// Has the terminal on stdin or stdout hung up (its pty's other side closed)? A hung-up
/// terminal polls as POLLHUP (or POLLERR/POLLNVAL once the fd is revoked).
pub(crate) fn terminal_lost() -> bool {
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    let (stdin, stdout) = (io::stdin(), io::stdout());
    let mut fds = [
        PollFd::new(stdin.as_fd(), PollFlags::empty()),
        PollFd::new(stdout.as_fd(), PollFlags::empty()),
    ];
    if poll(&mut fds, PollTimeout::ZERO).is_err() {
        return false;
    }
    let gone = PollFlags::POLLHUP | PollFlags::POLLERR | PollFlags::POLLNVAL;
    fds.iter()
        .any(|f| f.revents().is_some_and(|r| r.intersects(gone)))
}

/// Wait up to `timeout` for something to read on stdin (or its hang-up); false on timeout.
fn wait_for_input(timeout: Duration) -> bool {
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    let stdin = io::stdin();
    let mut fds = [PollFd::new(stdin.as_fd(), PollFlags::POLLIN)];
    let ms = u16::try_from(timeout.as_millis()).unwrap_or(u16::MAX);
    matches!(poll(&mut fds, PollTimeout::from(ms)), Ok(n) if n > 0)
}

/// The terminal went away: later messages and reports go to /dev/null instead (writing to a
/// hung-up terminal fails, and `eprintln!` would panic before the outputs are written).
pub(crate) fn detach_from_lost_terminal() {
    if let Ok(null) = std::fs::OpenOptions::new().write(true).open("/dev/null") {
        let _ = nix::unistd::dup2_stdout(&null);
        let _ = nix::unistd::dup2_stderr(&null);
    }
}

/// Some thread panicked: the terminal was restored and must stay so (the UI
/// thread stops drawing, so the panic message stays readable).
static PANICKED: AtomicBool = AtomicBool::new(false);

/// Sets the capture's stop flag when the UI thread ends, even by a panic: the
/// capture must not outlive the UI.
struct StopOnDrop(Arc<AtomicBool>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// Owns raw mode + alternate screen; restores them when dropped.
struct TerminalGuard {
    terminal: Terminal<CrosstermBackend<Stdout>>,
}

impl TerminalGuard {
    fn enter() -> Result<Self> {
        install_panic_hook();
        enable_raw_mode().context("cannot put the terminal into raw mode")?;
        ACTIVE.store(true, Ordering::SeqCst);
        if let Err(e) = execute!(io::stdout(), EnterAlternateScreen) {
            restore_terminal();
            return Err(e).context("cannot switch to the alternate screen");
        }
        match Terminal::new(CrosstermBackend::new(io::stdout())) {
            Ok(mut terminal) => {
                let _ = terminal.hide_cursor();
                let _ = terminal.clear();
                Ok(Self { terminal })
            }
            Err(e) => {
                restore_terminal();
                Err(e).context("cannot start the terminal UI")
            }
        }
    }
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        restore_terminal();
    }
}

/// Draws one frame of the UI from a snapshot and the UI state: [`render`] in the
/// program. Tests hand in their own (one that panics proves that the terminal is
/// restored after a UI panic, see examples/tui_panic.rs).
pub(crate) type Renderer = fn(&mut ratatui::Frame<'_>, Option<&Snapshot>, &UiState);

/// Start the TUI on its own thread. `stop` is set when the user quits (the
/// capture then ends); `pace` carries the replay speed keys.
pub(crate) fn start(
    hub: SnapshotHub,
    stop: Arc<AtomicBool>,
    pace: Option<Arc<PaceControl>>,
    opts: TuiOptions,
) -> Result<TuiHandle> {
    start_with_renderer(hub, stop, pace, opts, render)
}

/// [`start`] with the frames drawn by `renderer`.
pub fn start_with_renderer(
    hub: SnapshotHub,
    stop: Arc<AtomicBool>,
    pace: Option<Arc<PaceControl>>,
    opts: TuiOptions,
    renderer: Renderer,
) -> Result<TuiHandle> {
    let guard = TerminalGuard::enter()?;
    let quit = Arc::new(AtomicBool::new(false));
    let q = quit.clone();
    let thread = std::thread::Builder::new()
        .name("tui".into())
        .spawn(move || {
            let _stop = StopOnDrop(stop.clone());
            let mut guard = guard;
            event_loop(
                &mut guard.terminal,
                &mut TerminalEvents,
                renderer,
                &LoopInputs {
                    hub: &hub,
                    stop: &stop,
                    pace: pace.as_deref(),
                    quit: &q,
                    opts: &opts,
                },
            )
        })
        .context("cannot start the TUI thread")?;
    Ok(TuiHandle {
        thread: Some(thread),
        quit,
    })
}

/// Where the UI reads keys and resizes: the terminal in the program, a script in tests.
pub trait EventSource {
    /// The next event, waiting at most `timeout`; `None` when none came in time.
    fn next_event(&mut self, timeout: Duration) -> Result<Option<Event>>;

    /// Is the terminal gone (hung up)? The UI then ends as `q` would.
    fn lost(&mut self) -> bool {
        false
    }
}

/// The real terminal's events (crossterm).
struct TerminalEvents;

impl EventSource for TerminalEvents {
    fn lost(&mut self) -> bool {
        terminal_lost()
    }

    fn next_event(&mut self, timeout: Duration) -> Result<Option<Event>> {
        // Wait for the terminal here, not in crossterm: its reader takes a hung-up terminal's
        // end-of-file for "more to read" and loops on it without end (a core spinning, the
        // UI never seeing the loss).
        // After a timeout crossterm is still asked, without waiting: it delivers resizes.
        let _ = wait_for_input(timeout);
        if terminal_lost() || !event::poll(Duration::ZERO).context("reading the terminal")? {
            return Ok(None);
        }
        event::read().context("reading the terminal").map(Some)
    }
}

/// What the UI loop reads and controls besides its terminal.
pub struct LoopInputs<'a> {
    pub hub: &'a SnapshotHub,
    /// Set when the user quits: the capture ends.
    pub stop: &'a AtomicBool,
    /// The replay's speed and pause, which the pace keys set.
    pub pace: Option<&'a PaceControl>,
    /// Set by the program to close the UI.
    pub quit: &'a AtomicBool,
    pub opts: &'a TuiOptions,
}

/// The UI loop: shows the hub's latest snapshot on `terminal` and handles `events` until
/// the user quits (or `quit` is set). Tests drive it with ratatui's `TestBackend` and a
/// scripted [`EventSource`], as the program does with the terminal.
pub fn event_loop<B: Backend>(
    terminal: &mut Terminal<B>,
    events: &mut dyn EventSource,
    renderer: Renderer,
    inputs: &LoopInputs<'_>,
) -> Result<()> {
    let LoopInputs {
        hub,
        stop,
        pace,
        quit,
        opts,
    } = *inputs;
    let mut ui = UiState::new(&opts.source, opts.replay, opts.speed, opts.ros_names);
    let mut shown: Option<Arc<Snapshot>> = None;
    let mut version = u64::MAX;
    let mut dirty = true;
    let mut last_draw = Instant::now();
    let mut log_version = 0u64;
    loop {
        if quit.load(Ordering::Relaxed) || PANICKED.load(Ordering::SeqCst) {
            return Ok(());
        }
        if CLOSE_REQUESTED.load(Ordering::SeqCst) || events.lost() {
            // As `q`: the capture stops and the program writes its outputs.
            stop.store(true, Ordering::Relaxed);
            return Ok(());
        }
        let v = hub.version();
        if v != version && !ui.frozen {
            version = v;
            if let Some(s) = hub.latest() {
                ui.ingest(&s);
                shown = Some(s);
                dirty = true;
            }
        }
        if let Some(log) = &opts.log {
            let v = log.version();
            if v != log_version {
                log_version = v;
                (ui.log, ui.log_total) = log.last(LOG_LINES);
                dirty = true;
            }
        }
        if let Some(h) = &opts.export {
            let stats = Some(h.stats());
            if stats != ui.export {
                ui.export = stats;
                dirty = true;
            }
        }
        if dirty || last_draw.elapsed() >= Duration::from_secs(1) {
            let size = terminal.size().unwrap_or_default();
            ui.page = usize::from(size.height.saturating_sub(14).max(1));
            if let Err(e) = terminal.draw(|f| renderer(f, shown.as_deref(), &ui)) {
                if events.lost() {
                    // Hung up between the check above and this frame: as `q`.
                    stop.store(true, Ordering::Relaxed);
                    return Ok(());
                }
                return Err(e).context("drawing the terminal UI");
            }
            dirty = false;
            last_draw = Instant::now();
        }
        match events.next_event(Duration::from_millis(100))? {
            Some(Event::Key(k)) => {
                dirty = true;
                match ui.on_key(k, shown.as_deref()) {
                    Action::Quit => {
                        stop.store(true, Ordering::Relaxed);
                        return Ok(());
                    }
                    Action::Pace => {
                        if let Some(p) = pace {
                            p.set_speed(ui.speed);
                            p.set_paused(ui.replay_paused);
                        }
                    }
                    Action::None => {}
                }
            }
            Some(Event::Resize(..)) => dirty = true,
            _ => {}
        }
    }
}
