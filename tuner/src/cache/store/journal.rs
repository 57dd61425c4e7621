//! The backup beside the database: a snapshot and an append-only journal, both plain files
//! that a reader can read without sled's lock.
//!
//! - The **snapshot** (`tune.json`, [`super::TuneCache::backup_path`]) is an export file
//!   (it reads back with [`super::read_export`]) written one entry per line, with a
//!   [`Stamp`] before the entries (`"backup"`) and again after them (`"backup_end"`): its
//!   generation, and how many entries the database held with a digest of their keys.
//! - The **journal** (`tune.journal`, [`super::TuneCache::journal_path`]) starts with a
//!   header line (`"journal": "tilekit-tune-journal"` and the snapshot's stamp); every write
//!   appends one line per entry, each with the entry, its layer, a sequence number and the
//!   stamp after it, and syncs the file *before* the database is written, so the backup is
//!   never behind the database (a write cut short leaves the journal at most ahead by the
//!   entries in flight, which the next reader puts in).
//!
//! A write appends; when the journal holds more than `max(1000, entries)` lines the writer
//! **compacts**: a new snapshot from the database with the next generation, then a new
//! journal holding only its header. A reader without the lock pairs a snapshot and a
//! journal of the same generation; a journal of a later one means a compaction is under
//! way (read again), an earlier one that it finished the snapshot only (the snapshot holds
//! everything). Each line stands alone, so damage costs the lines it touches and the count
//! survives in three places (the snapshot's two stamps and the journal).

use super::super::{Entry, Origin};
use super::export::write_atomic;
use super::{EXPORT_FORMAT, EXPORT_VERSION};
use serde::{Deserialize, Serialize};
use std::io::{BufRead, Read, Seek, SeekFrom, Write};
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

/// `journal` field of a journal's header line.
const JOURNAL_FORMAT: &str = "tilekit-tune-journal";

/// The journal is compacted into a new snapshot once it holds more lines than this, or
/// than the database holds entries.
pub(super) const COMPACT_AFTER: u64 = 1000;

/// The layer an entry is stored in: `imported` or `local` (shipped entries are never
/// stored; they would go to `local`).
pub(super) fn layer(origin: Origin) -> Origin {
    match origin {
        Origin::Imported => Origin::Imported,
        _ => Origin::Local,
    }
}

/// A key as the backup and the database compare it: its layer and canonical bytes.
pub(super) type Slot = (Origin, Vec<u8>);

/// The slot of an entry (its layer from its provenance, as stored).
pub(super) fn slot(e: &Entry) -> Slot {
    (layer(e.value.provenance.origin), e.key.to_bytes())
}

/// A backup's generation and what the database held: how many readable entries, and the
/// XOR of a hash of each one's layer and key, so two sets of the same size still differ.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Stamp {
    /// Shared by a snapshot and the journal that continues it.
    pub generation: u64,
    /// Readable entries in the database.
    pub held: u64,
    /// XOR over those entries of [`key_hash`].
    pub digest: u64,
}

impl Stamp {
    /// Counts a new entry.
    pub fn add(&mut self, slot: &Slot) {
        self.held += 1;
        self.digest ^= key_hash(slot);
    }

    /// The stamp of `entries` (one per slot) under `generation`.
    pub fn of<'a>(generation: u64, entries: impl IntoIterator<Item = &'a Slot>) -> Stamp {
        let mut s = Stamp {
            generation,
            ..Stamp::default()
        };
        for e in entries {
            s.add(e);
        }
        s
    }

    /// Same entries (generations aside).
    pub fn same_entries(&self, other: &Stamp) -> bool {
        (self.held, self.digest) == (other.held, other.digest)
    }
}

/// FNV-1a of a slot's layer and key bytes.
fn key_hash((layer, key): &Slot) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for b in std::iter::once(*layer as u8).chain(key.iter().copied()) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// A generation after `previous`: the time in milliseconds, or one more when that is not
/// later (so a generation never repeats, even when the old one could not be read).
pub(super) fn next_generation(previous: Option<u64>) -> u64 {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0);
    previous.map_or(now, |p| now.max(p + 1))
}

/// The snapshot's first line, as JSON once `"entries":[` is cut off and the object closed.
#[derive(Serialize, Deserialize)]
struct SnapshotHead {
    format: String,
    version: u32,
    exported: String,
    backup: Stamp,
}

/// The snapshot's last line, as JSON once `],` is cut off and an object opened.
#[derive(Serialize, Deserialize)]
struct SnapshotEnd {
    backup_end: Stamp,
}

/// One line of the journal: the header (`journal` set, `seq` 0) or a record.
#[derive(Serialize, Deserialize)]
struct Line {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    journal: Option<String>,
    #[serde(flatten)]
    stamp: Stamp,
    #[serde(default)]
    seq: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    first: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    layer: Option<Origin>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    entry: Option<Entry>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// One journaled entry: the entry, its layer and the stamp after it.
#[derive(Clone, Debug)]
pub(super) struct Record {
    pub seq: u64,
    /// The sequence number of the first record of the same write.
    pub first: u64,
    pub stamp: Stamp,
    pub layer: Origin,
    pub entry: Entry,
}

impl Record {
    fn line(&self) -> String {
        let line = Line {
            journal: None,
            stamp: self.stamp,
            seq: self.seq,
            first: self.first,
            layer: Some(self.layer),
            entry: Some(self.entry.clone()),
        };
        serde_json::to_string(&line).unwrap_or_default() + "\n"
    }
}

/// The header line's length, newline included: fixed, so that it can be rewritten in place.
const HEADER_WIDTH: usize = 200;

/// The header line: the journal's generation, and the stamp and sequence number after its
/// last record (the snapshot's, 0, when there is none), padded to [`HEADER_WIDTH`].
fn header_line(stamp: Stamp, seq: u64) -> String {
    let line = Line {
        journal: Some(JOURNAL_FORMAT.into()),
        stamp,
        seq,
        first: 0,
        layer: None,
        entry: None,
    };
    let mut text = serde_json::to_string(&line).unwrap_or_default();
    while text.len() + 1 < HEADER_WIDTH {
        text.push(' ');
    }
    text + "\n"
}

/// A journal line read back: the header or a record.
pub(super) enum Parsed {
    /// The header: the stamp and sequence number after the last record.
    Header(Stamp, u64),
    Record(Box<Record>),
}

pub(super) fn parse_line(bytes: &[u8]) -> Option<Parsed> {
    let line: Line = serde_json::from_slice(bytes).ok()?;
    match (line.journal, line.layer, line.entry) {
        (Some(f), None, None) if f == JOURNAL_FORMAT => Some(Parsed::Header(line.stamp, line.seq)),
        (None, Some(layer), Some(entry)) if line.seq > 0 => {
            Some(Parsed::Record(Box::new(Record {
                seq: line.seq,
                first: line.first,
                stamp: line.stamp,
                layer: self::layer(layer),
                entry,
            })))
        }
        _ => None,
    }
}

/// The text of a snapshot of `entries` under `stamp`.
fn snapshot_text(stamp: Stamp, entries: &[&Entry]) -> String {
    let head = SnapshotHead {
        format: EXPORT_FORMAT.into(),
        version: EXPORT_VERSION,
        exported: super::super::value::rfc3339_now(),
        backup: stamp,
    };
    let head = serde_json::to_string(&head).unwrap_or_default();
    let mut out = String::with_capacity(64 + entries.len() * 700);
    // `{...}` -> `{...,"entries":[`
    out.push_str(head.strip_suffix('}').unwrap_or(&head));
    out.push_str(",\"entries\":[\n");
    for (i, e) in entries.iter().enumerate() {
        out.push_str(&serde_json::to_string(e).unwrap_or_default());
        out.push_str(if i + 1 < entries.len() { ",\n" } else { "\n" });
    }
    let end = serde_json::to_string(&SnapshotEnd { backup_end: stamp }).unwrap_or_default();
    // `{"backup_end":..}` -> `],"backup_end":..}`
    out.push_str("],");
    out.push_str(end.strip_prefix('{').unwrap_or(&end));
    out.push('\n');
    out
}

/// Replaces the backup: a snapshot of `entries` (each with its layer as its origin) under
/// `stamp`, then a journal holding only its header. The snapshot goes first, so that a
/// reader sees either the old pair, or the new snapshot with the old journal (which it
/// ignores, being of an earlier generation), or the new pair.
pub(super) fn replace(
    snapshot: &Path,
    journal: &Path,
    stamp: Stamp,
    entries: &[&Entry],
) -> std::io::Result<()> {
    write_atomic(snapshot, &snapshot_text(stamp, entries))?;
    write_atomic(journal, &header_line(stamp, 0))
}

/// Empties the backup (`clear`): an empty snapshot under a new generation, and no
/// journal (the next write starts one).
pub(super) fn empty(snapshot: &Path, journal: &Path, previous: Option<u64>) -> std::io::Result<()> {
    let stamp = Stamp::of(next_generation(previous), &[]);
    write_atomic(snapshot, &snapshot_text(stamp, &[]))?;
    match std::fs::remove_file(journal) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// What the two files say the database holds, read cheaply (the snapshot's first line, the
/// journal's first and last lines): the writer's starting point and the reader's check.
#[derive(Clone, Debug)]
pub(super) struct Head {
    /// The stamp after the last record (the snapshot's when there is none).
    pub stamp: Stamp,
    /// The last record's sequence number (0: none).
    pub seq: u64,
    /// The last record.
    pub last: Option<Record>,
    /// Where the next record goes (the bytes of whole lines); `None`: the journal is of an
    /// earlier generation or missing, and a new one is started.
    pub append_at: Option<u64>,
}

/// The first line of a file (at most 64 KiB), without its newline.
fn first_line(path: &Path) -> Option<Vec<u8>> {
    let f = std::fs::File::open(path).ok()?;
    let mut line = Vec::new();
    std::io::BufReader::new(f)
        .take(64 << 10)
        .read_until(b'\n', &mut line)
        .ok()?;
    line.strip_suffix(b"\n").map(<[u8]>::to_vec)
}

/// The stamp on the snapshot's first line, if it is one of ours and readable.
pub(super) fn snapshot_head(line: &[u8]) -> Option<Stamp> {
    let text = std::str::from_utf8(line).ok()?;
    let obj = text.strip_suffix("\"entries\":[")?.strip_suffix(',')?;
    let head: SnapshotHead = serde_json::from_str(&format!("{obj}}}")).ok()?;
    (head.format == EXPORT_FORMAT).then_some(head.backup)
}

/// The stamp on the snapshot's last line.
pub(super) fn snapshot_end(line: &[u8]) -> Option<Stamp> {
    let text = std::str::from_utf8(line).ok()?;
    let obj = text.strip_prefix("],")?;
    serde_json::from_str::<SnapshotEnd>(&format!("{{{obj}"))
        .ok()
        .map(|e| e.backup_end)
}

/// The journal's last whole line and where it ends (`None`: no whole line).
fn last_line(path: &Path) -> std::io::Result<Option<(Vec<u8>, u64)>> {
    let mut f = std::fs::File::open(path)?;
    let len = f.metadata()?.len();
    let mut size = 64u64 << 10;
    loop {
        let start = len.saturating_sub(size);
        f.seek(SeekFrom::Start(start))?;
        let mut buf = Vec::new();
        (&mut f).take(len - start).read_to_end(&mut buf)?;
        let Some(end) = buf.iter().rposition(|b| *b == b'\n') else {
            if start == 0 {
                return Ok(None);
            }
            size *= 4;
            continue;
        };
        match buf[..end].iter().rposition(|b| *b == b'\n') {
            Some(p) => return Ok(Some((buf[p + 1..end].to_vec(), start + end as u64 + 1))),
            None if start == 0 => return Ok(Some((buf[..end].to_vec(), end as u64 + 1))),
            None => size *= 4,
        }
    }
}

/// The backup's [`Head`], or `None` when it cannot be told cheaply (no snapshot of ours, a
/// journal of a later generation, a damaged first or last line, a header and a last record
/// that disagree): then the backup is compared with the database in full.
pub(super) fn head(snapshot: &Path, journal: &Path) -> Option<Head> {
    let snap = snapshot_head(&first_line(snapshot)?)?;
    let from_snapshot = Head {
        stamp: snap,
        seq: 0,
        last: None,
        append_at: None,
    };
    if !journal.exists() {
        return Some(from_snapshot);
    }
    let Some(Parsed::Header(top, top_seq)) = first_line(journal).and_then(|l| parse_line(&l))
    else {
        return None;
    };
    if top.generation < snap.generation {
        return Some(from_snapshot);
    }
    if top.generation > snap.generation {
        return None;
    }
    let (line, end) = last_line(journal).ok()??;
    match parse_line(&line)? {
        Parsed::Header(..) if top_seq == 0 && top.same_entries(&snap) => Some(Head {
            append_at: Some(end),
            ..from_snapshot
        }),
        // The header is rewritten after the records: it may lag behind them (a writer
        // killed in between), never run ahead.
        Parsed::Record(r) if r.stamp.generation == snap.generation && r.seq >= top_seq => {
            Some(Head {
                stamp: r.stamp,
                seq: r.seq,
                append_at: Some(end),
                last: Some(*r),
            })
        }
        _ => None,
    }
}

/// Appends `records` to the journal after its first `at` bytes (dropping a line cut short
/// by a killed writer), rewrites its header with the last record's stamp, and syncs it; or,
/// when `at` is `None`, starts a new journal holding them.
pub(super) fn append(journal: &Path, at: Option<u64>, records: &[Record]) -> std::io::Result<()> {
    let Some(last) = records.last() else {
        return Ok(());
    };
    let mut text = String::new();
    for r in records {
        text.push_str(&r.line());
    }
    let Some(at) = at else {
        return write_atomic(journal, &(header_line(last.stamp, last.seq) + &text));
    };
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(journal)?;
    if f.metadata()?.len() != at {
        f.set_len(at)?;
    }
    f.seek(SeekFrom::Start(at))?;
    f.write_all(text.as_bytes())?;
    // The count at the journal's other end too (a header damaged is left alone).
    let mut top = vec![0u8; HEADER_WIDTH];
    f.seek(SeekFrom::Start(0))?;
    let header_whole = f.read_exact(&mut top).is_ok()
        && top.last() == Some(&b'\n')
        && matches!(parse_line(&top), Some(Parsed::Header(..)));
    if header_whole {
        f.seek(SeekFrom::Start(0))?;
        f.write_all(header_line(last.stamp, last.seq).as_bytes())?;
    }
    f.sync_data()
}
