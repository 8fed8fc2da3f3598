//! `-w FILE`: what the capture threads read, written to pcapng files on a writer thread
//! of its own, with tcpdump's rotation (`-C` size, `-G` seconds, `-W` files).
//!
//! ```text
//!  capture thread ── copy of each batch ──bounded channel──▶ writer thread ─▶ FILE.part
//!        ▲  (full: batch dropped, counted)                        │            (renamed to
//!        └──────────── empty batches recycled ◀───────────────────┘             FILE on close)
//! ```
//!
//! The capture threads never wait on the disk: when the writer falls behind, frames
//! are dropped and counted, and every frame read is either written or counted as not
//! written (`health.pipeline.recording`). Each file is written as `NAME.part` and
//! renamed to `NAME` when it is complete, so a file under its final name is always
//! whole.
//!
//! File names, as tcpdump makes them:
//! - `-C` alone: `FILE`, `FILE1`, `FILE2`, …
//! - `-C` with `-W N` (a ring): `FILE0` … `FILE{N-1}`, zero-padded to the digits of N,
//!   then again from `FILE0` (overwritten).
//! - `-G`: strftime conversions in FILE (`%Y %m %d %H %M %S %j %y %s %%`, UTC) are
//!   expanded when the recording starts for the first file (it is created then, so that
//!   a file that cannot be created is reported at once) and at the capture time of the
//!   first frame of each later file; a FILE without any is
//!   numbered `FILE`, `FILE1`, … (tcpdump would overwrite it). Files split by `-C`
//!   within one name get `1`, `2`, … appended. `-W N` stops the capture after N files.

mod naming;
pub mod pcapng;
mod tap;

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use thiserror::Error;

use naming::{part_path, Naming};
use pcapng::{Interface, PcapngError, Section};
pub(crate) use tap::FrameBatch;
pub use tap::RecordTap;

/// Bytes in one `-C` unit: tcpdump's millions of bytes.
pub(crate) const ROTATE_SIZE_UNIT: u64 = 1_000_000;

/// Files are readable by everyone who may read the directory, like tcpdump's.
const FILE_MODE: u32 = 0o644;

const WRITE_BUFFER: usize = 1 << 20;

/// Most batches waiting for the writer, whatever their size (the bound that matters is
/// the bytes, `--write-queue`).
pub(crate) const MAX_QUEUED_BATCHES: usize = 16_384;
/// Empty batches kept for reuse by the capture threads.
const POOLED_BATCHES: usize = 256;

#[derive(Debug, Error)]
pub(crate) enum RecordError {
    #[error("{path}: cannot create the recording: {source}")]
    Create {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}: cannot write the recording: {source}")]
    Write {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}: cannot finish the recording (rename from {part}): {source}")]
    Rename {
        path: String,
        part: String,
        source: std::io::Error,
    },
    #[error("{path}: {source}")]
    Encode { path: String, source: PcapngError },
    #[error("-w {0}: the file name has no name part (give a file, not a directory)")]
    NoFileName(String),
    #[error("-w {path}: the interface {iface}'s link type {dlt} does not fit pcapng's 16 bits")]
    LinkType {
        path: String,
        iface: String,
        dlt: u32,
    },
}

/// One captured interface: an interface description block in every file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RecordInterface {
    pub(crate) name: String,
    /// pcap link type (DLT) of the capture.
    pub(crate) link_type: u32,
    pub(crate) snaplen: u32,
    /// The capture filter, recorded in the file (if_filter).
    pub(crate) filter: String,
}

/// What `-w/-C/-G/-W` and the capture ask for.
#[derive(Debug, Clone)]
pub(crate) struct RecordOptions {
    pub(crate) path: PathBuf,
    /// `-C`: start a new file before one would grow past this many bytes.
    pub(crate) rotate_bytes: Option<u64>,
    /// `-G`: start a new file once a frame is this much capture time after the file's first.
    pub(crate) rotate_ns: Option<u64>,
    /// `-W`: with `-G`, stop after this many files; with `-C` alone, a ring of this many.
    pub(crate) max_files: Option<u32>,
    /// Written into the section header (opt_comment `host.name=…`, and each if_description).
    pub(crate) host_name: String,
    /// In source order: interface id = source index.
    pub(crate) interfaces: Vec<RecordInterface>,
}

struct OpenFile {
    out: BufWriter<File>,
    path: PathBuf,
    part: PathBuf,
    bytes: u64,
    frames: u64,
    /// Capture time of the file's first frame (`-G` counts from it).
    start_ns: Option<u64>,
}

/// Why a frame was not written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Written {
    Yes,
    /// `-G … -W N`: the N files are complete; the capture should stop.
    FileLimit,
}

/// Counters of a recording, as the health view shows them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct RecordingHealth {
    /// `-w` as given.
    pub(crate) path: String,
    /// The file being written (under its final name; on disk as NAME.part until closed).
    pub(crate) current_file: Option<String>,
    /// Files completed and renamed to their final names.
    pub(crate) files_closed: u64,
    pub(crate) frames_written: u64,
    pub(crate) bytes_written: u64,
    /// Frames not written because the queue to the writer was full.
    pub(crate) queue_dropped: u64,
    /// Frames not written for any other reason (after an error, after `-W` files).
    pub(crate) not_written_other: u64,
    pub(crate) error: Option<String>,
}

impl RecordingHealth {
    /// Every frame that was read and is not in a file.
    pub(crate) fn not_written(&self) -> u64 {
        self.queue_dropped.saturating_add(self.not_written_other)
    }
}

/// pcapng files with rotation. Driven frame by frame on the writer thread (or directly,
/// in tests).
pub(crate) struct Recorder {
    naming: Naming,
    rotate_bytes: Option<u64>,
    rotate_ns: Option<u64>,
    /// `-G … -W N`: stop after this many files.
    stop_after: Option<u64>,
    header: Vec<u8>,
    file: Option<OpenFile>,
    base: String,
    index_in_base: u64,
    files_opened: u64,
    files_closed: u64,
    frames_written: u64,
    bytes_written: u64,
    /// Frames of a file that failed, not yet counted as not written (see `abandon`).
    frames_lost: u64,
    /// Closed files in order: only the rotation tests read them.
    #[cfg(test)]
    closed: Vec<PathBuf>,
}

fn os_release() -> String {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let name = std::fs::read_to_string("/proc/sys/kernel/ostype")
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| std::env::consts::OS.to_string());
    format!("{name} {}", release.trim()).trim().to_string()
}

impl Recorder {
    /// Check the options and create the first file (named at `now_ns`), so that a file
    /// that cannot be created is reported before the capture starts.
    pub(crate) fn create(opts: &RecordOptions, now_ns: u64) -> Result<Self, RecordError> {
        let label = opts.path.display().to_string();
        if opts.path.file_name().is_none() || label.ends_with('/') {
            return Err(RecordError::NoFileName(label));
        }
        let section = Section {
            hardware: std::env::consts::ARCH.to_string(),
            os: os_release(),
            application: format!("ddshark {}", env!("CARGO_PKG_VERSION")),
            comment: format!("host.name={}", opts.host_name),
        };
        let mut header = Vec::new();
        let enc = |source| RecordError::Encode {
            path: label.clone(),
            source,
        };
        pcapng::section_header(&mut header, &section).map_err(enc)?;
        for i in &opts.interfaces {
            let link_type = u16::try_from(i.link_type).map_err(|_| RecordError::LinkType {
                path: label.clone(),
                iface: i.name.clone(),
                dlt: i.link_type,
            })?;
            let idb = Interface {
                link_type,
                snaplen: i.snaplen,
                name: i.name.clone(),
                description: format!("{} on host {}", i.name, opts.host_name),
                filter: i.filter.clone(),
            };
            pcapng::interface_description(&mut header, &idb).map_err(enc)?;
        }
        let naming = Naming::new(opts);
        let stop_after = match (opts.rotate_ns, opts.max_files) {
            (Some(_), Some(n)) => Some(u64::from(n)),
            _ => None,
        };
        let mut r = Self {
            base: naming.base(now_ns),
            naming,
            rotate_bytes: opts.rotate_bytes.map(|b| b.max(1)),
            rotate_ns: opts.rotate_ns.map(|n| n.max(1)),
            stop_after,
            header,
            file: None,
            index_in_base: 0,
            files_opened: 0,
            files_closed: 0,
            frames_written: 0,
            bytes_written: 0,
            frames_lost: 0,
            #[cfg(test)]
            closed: Vec::new(),
        };
        r.open(None)?;
        Ok(r)
    }

    fn open(&mut self, start_ns: Option<u64>) -> Result<(), RecordError> {
        let path = self.naming.name(&self.base, self.index_in_base);
        let part = part_path(&path);
        let create = |source| RecordError::Create {
            path: path.display().to_string(),
            source,
        };
        let file = {
            use std::os::unix::fs::OpenOptionsExt;
            OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .mode(FILE_MODE)
                .open(&part)
                .map_err(create)?
        };
        let mut out = BufWriter::with_capacity(WRITE_BUFFER, file);
        out.write_all(&self.header)
            .map_err(|source| RecordError::Write {
                path: path.display().to_string(),
                source,
            })?;
        self.files_opened = self.files_opened.saturating_add(1);
        self.bytes_written = self.bytes_written.saturating_add(self.header.len() as u64);
        self.file = Some(OpenFile {
            out,
            bytes: self.header.len() as u64,
            frames: 0,
            start_ns,
            path,
            part,
        });
        Ok(())
    }

    fn close(&mut self) -> Result<(), RecordError> {
        let Some(f) = self.file.take() else {
            return Ok(());
        };
        let path = f.path.display().to_string();
        let (frames, bytes) = (f.frames, f.bytes);
        let closed = match f.out.into_inner() {
            Err(e) => Err(RecordError::Write {
                path: path.clone(),
                source: e.into_error(),
            }),
            Ok(file) => {
                drop(file);
                std::fs::rename(&f.part, &f.path).map_err(|source| RecordError::Rename {
                    path,
                    part: f.part.display().to_string(),
                    source,
                })
            }
        };
        if let Err(e) = closed {
            self.frames_written = self.frames_written.saturating_sub(frames);
            self.bytes_written = self.bytes_written.saturating_sub(bytes);
            self.frames_lost = self.frames_lost.saturating_add(frames);
            return Err(e);
        }
        self.files_closed = self.files_closed.saturating_add(1);
        #[cfg(test)]
        self.closed.push(f.path);
        Ok(())
    }

    /// Close the current file and open the next (named at `ts_ns`).
    fn rotate(&mut self, ts_ns: u64) -> Result<(), RecordError> {
        self.close()?;
        let base = self.naming.base(ts_ns);
        if base == self.base {
            self.index_in_base = self.index_in_base.saturating_add(1);
        } else {
            self.base = base;
            self.index_in_base = 0;
        }
        self.open(Some(ts_ns))
    }

    /// Write one frame of interface `interface` (its source index).
    pub(crate) fn write(
        &mut self,
        interface: u32,
        ts_ns: u64,
        data: &[u8],
        original_len: u32,
    ) -> Result<Written, RecordError> {
        let Some(f) = &mut self.file else {
            return Ok(Written::FileLimit);
        };
        let start = *f.start_ns.get_or_insert(ts_ns);
        let block = pcapng::epb_len(data.len()) as u64;
        let by_time = self
            .rotate_ns
            .is_some_and(|g| ts_ns.saturating_sub(start) >= g);
        let by_size = self
            .rotate_bytes
            .is_some_and(|c| f.frames > 0 && f.bytes.saturating_add(block) > c);
        if by_time || by_size {
            if self.stop_after.is_some_and(|n| self.files_opened >= n) {
                self.close()?;
                return Ok(Written::FileLimit);
            }
            self.rotate(ts_ns)?;
        }
        let Some(f) = &mut self.file else {
            return Ok(Written::FileLimit);
        };
        let path = &f.path;
        let framing = pcapng::EnhancedPacket::new(interface, ts_ns, data.len(), original_len)
            .map_err(|source| RecordError::Encode {
                path: path.display().to_string(),
                source,
            })?;
        f.out
            .write_all(framing.head())
            .and_then(|()| f.out.write_all(data))
            .and_then(|()| f.out.write_all(framing.tail()))
            .map_err(|source| RecordError::Write {
                path: path.display().to_string(),
                source,
            })?;
        f.bytes = f.bytes.saturating_add(block);
        f.frames = f.frames.saturating_add(1);
        self.frames_written = self.frames_written.saturating_add(1);
        self.bytes_written = self.bytes_written.saturating_add(block);
        Ok(Written::Yes)
    }

    /// Close the last file (renaming it to its final name).
    pub fn finish(&mut self) -> Result<(), RecordError> {
        self.close()
    }

    /// After an error: give up the current file (it stays as NAME.part, incomplete) and
    /// return how many frames were in it or in a file that could not be closed; they no
    /// longer count as written.
    pub(crate) fn abandon(&mut self) -> u64 {
        if let Some(f) = self.file.take() {
            self.frames_written = self.frames_written.saturating_sub(f.frames);
            self.bytes_written = self.bytes_written.saturating_sub(f.bytes);
            self.frames_lost = self.frames_lost.saturating_add(f.frames);
        }
        std::mem::take(&mut self.frames_lost)
    }

    pub(crate) fn current_file(&self) -> Option<&Path> {
        self.file.as_ref().map(|f| f.path.as_path())
    }

    /// The files completed so far, in order.
    #[cfg(test)]
    fn closed_files(&self) -> &[PathBuf] {
        &self.closed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    /// A fresh directory of this test's own under the system's temp dir.
    fn scratch_dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("ddshark-rec-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn eth(name: &str) -> RecordInterface {
        RecordInterface {
            name: name.into(),
            link_type: 1,
            snaplen: 200,
            filter: "udp".into(),
        }
    }

    fn record_opts(dir: &Path, file: &str) -> RecordOptions {
        RecordOptions {
            path: dir.join(file),
            rotate_bytes: None,
            rotate_ns: None,
            max_files: None,
            host_name: "hostA".into(),
            interfaces: vec![eth("vethA"), eth("vethB")],
        }
    }

    /// The names of the files a recorder closed, in order.
    fn closed_names(r: &Recorder) -> Vec<std::ffi::OsString> {
        r.closed_files()
            .iter()
            .map(|p| p.file_name().unwrap().to_owned())
            .collect()
    }

    /// The packets in each file a recorder closed, in order.
    fn closed_counts(r: &Recorder) -> Vec<usize> {
        r.closed_files()
            .iter()
            .map(|p| read_back(p).len())
            .collect()
    }

    /// (ts_ns, caplen, len, data) of every packet, as libpcap reads the file.
    fn read_back(path: &Path) -> Vec<(u64, u32, u32, Vec<u8>)> {
        let mut c = pcap::Capture::from_file_with_precision(path, pcap::Precision::Nano).unwrap();
        let mut out = Vec::new();
        while let Ok(p) = c.next_packet() {
            let ts = p.header.ts.tv_sec as u64 * 1_000_000_000 + p.header.ts.tv_usec as u64;
            out.push((ts, p.header.caplen, p.header.len, p.data.to_vec()));
        }
        out
    }

    const T0: u64 = 1_764_000_000_123_456_789;

    #[test]
    fn libpcap_reads_back_ns_timestamps_lengths_and_both_interfaces() {
        let dir = scratch_dir("readback");
        let opts = record_opts(&dir, "a.pcapng");
        let mut r = Recorder::create(&opts, T0).unwrap();
        assert!(dir.join("a.pcapng.part").exists());
        assert!(!dir.join("a.pcapng").exists());
        let frames: Vec<(u32, u64, Vec<u8>, u32)> = vec![
            (0, T0, vec![1u8; 60], 60),
            (1, T0 + 1, vec![2u8; 61], 1514),
            (0, T0 + 1_000_000_007, vec![3u8; 200], 9000),
        ];
        for (iface, ts, data, orig) in &frames {
            assert_eq!(r.write(*iface, *ts, data, *orig).unwrap(), Written::Yes);
        }
        r.finish().unwrap();
        let path = dir.join("a.pcapng");
        assert!(!dir.join("a.pcapng.part").exists());
        let mode = std::os::unix::fs::PermissionsExt::mode(
            &std::fs::metadata(&path).unwrap().permissions(),
        );
        assert_eq!(mode & 0o022, 0, "group/others may not write: {mode:o}");
        let got = read_back(&path);
        let want: Vec<_> = frames
            .iter()
            .map(|(_, ts, d, orig)| (*ts, d.len() as u32, *orig, d.clone()))
            .collect();
        assert_eq!(got, want);
        let bytes = std::fs::read(&path).unwrap();
        let has = |needle: &[u8]| bytes.windows(needle.len()).any(|w| w == needle);
        assert!(has(b"host.name=hostA"));
        assert!(has(b"vethB on host hostA"));
        assert!(has(
            format!("ddshark {}", env!("CARGO_PKG_VERSION")).as_bytes()
        ));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn size_rotation_never_grows_a_file_past_c_and_names_files_like_tcpdump() {
        let dir = scratch_dir("size");
        let mut opts = record_opts(&dir, "s.pcapng");
        let header = Recorder::create(&opts, T0).unwrap().header.len() as u64;
        // Room for exactly three 100-byte packets per file.
        let limit = header + 3 * pcapng::epb_len(100) as u64;
        opts.rotate_bytes = Some(limit);
        let mut r = Recorder::create(&opts, T0).unwrap();
        for i in 0..8u64 {
            r.write(0, T0 + i, &[i as u8; 100], 100).unwrap();
        }
        r.finish().unwrap();
        let names = closed_names(&r);
        assert_eq!(names, ["s.pcapng", "s.pcapng1", "s.pcapng2"]);
        let counts = closed_counts(&r);
        assert_eq!(counts, [3, 3, 2]);
        for p in r.closed_files() {
            assert!(std::fs::metadata(p).unwrap().len() <= limit);
        }
        // The first packet of the second file is the fourth written.
        assert_eq!(read_back(&dir.join("s.pcapng1"))[0].0, T0 + 3);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_ring_keeps_the_last_w_files() {
        let dir = scratch_dir("ring");
        let probe = scratch_dir("ring-probe");
        let header = Recorder::create(&record_opts(&probe, "p"), T0)
            .unwrap()
            .header
            .len() as u64;
        let _ = std::fs::remove_dir_all(&probe);
        let mut opts = record_opts(&dir, "r");
        opts.rotate_bytes = Some(header + pcapng::epb_len(10) as u64);
        opts.max_files = Some(3);
        let mut r = Recorder::create(&opts, T0).unwrap();
        for i in 0..5u64 {
            r.write(0, T0 + i, &[0; 10], 10).unwrap();
        }
        r.finish().unwrap();
        let mut left: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        left.sort();
        assert_eq!(left, ["r0", "r1", "r2"]);
        // Five files in a ring of three: r0 and r1 hold the fourth and fifth frames.
        assert_eq!(read_back(&dir.join("r0"))[0].0, T0 + 3);
        assert_eq!(read_back(&dir.join("r1"))[0].0, T0 + 4);
        assert_eq!(read_back(&dir.join("r2"))[0].0, T0 + 2);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn time_rotation_counts_capture_time_and_w_stops_after_w_files() {
        let dir = scratch_dir("time");
        let mut opts = record_opts(&dir, "t-%H%M%S.pcapng");
        opts.rotate_ns = Some(1_000_000_000);
        opts.max_files = Some(2);
        // 2025-11-24 16:00:00 UTC
        let t = 1_764_000_000_000_000_000u64;
        let mut r = Recorder::create(&opts, t).unwrap();
        let mut outcomes = Vec::new();
        for ms in [0u64, 500, 999, 1000, 1700, 2000, 2100] {
            outcomes.push(r.write(0, t + ms * 1_000_000, &[0; 20], 20).unwrap());
        }
        r.finish().unwrap();
        use Written::{FileLimit, Yes};
        assert_eq!(outcomes, [Yes, Yes, Yes, Yes, Yes, FileLimit, FileLimit]);
        let names = closed_names(&r);
        assert_eq!(names, ["t-160000.pcapng", "t-160001.pcapng"]);
        let counts = closed_counts(&r);
        assert_eq!(counts, [3, 2]);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn time_rotation_without_a_time_in_the_name_numbers_the_files() {
        let dir = scratch_dir("timenum");
        let mut opts = record_opts(&dir, "g.pcapng");
        opts.rotate_ns = Some(10);
        let mut r = Recorder::create(&opts, T0).unwrap();
        for i in [0u64, 10, 25] {
            r.write(0, T0 + i, &[0; 20], 20).unwrap();
        }
        r.finish().unwrap();
        let names = closed_names(&r);
        assert_eq!(names, ["g.pcapng", "g.pcapng1", "g.pcapng2"]);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_file_that_cannot_be_created_is_named() {
        let dir = scratch_dir("nodir");
        let opts = record_opts(&dir.join("missing"), "x.pcapng");
        let e = Recorder::create(&opts, T0).err().unwrap().to_string();
        assert!(e.contains("missing/x.pcapng: cannot create"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_writer_thread_writes_every_batch_it_is_given_and_counts_the_rest() {
        let dir = scratch_dir("tap");
        let opts = record_opts(&dir, "w.pcapng");
        let stop = Arc::new(AtomicBool::new(false));
        let tap = RecordTap::start(
            Recorder::create(&opts, T0).unwrap(),
            &opts.path,
            1 << 20,
            stop.clone(),
        )
        .unwrap();
        for b in 0..10u64 {
            let mut batch = tap.empty_batch();
            for i in 0..100u64 {
                batch.push(T0 + b * 100 + i, 80, &[b as u8; 80]);
            }
            assert!(tap.send((b % 2) as usize, batch, true).is_none());
        }
        tap.finish().unwrap();
        let h = tap.health();
        assert_eq!(
            (h.frames_written, h.not_written(), h.files_closed),
            (1000, 0, 1)
        );
        let got = read_back(&dir.join("w.pcapng"));
        assert_eq!(got.len(), 1000);
        assert!(got.windows(2).all(|w| w[0].0 < w[1].0));
        assert!(!stop.load(Ordering::Relaxed));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
