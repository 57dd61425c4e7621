//! The backup read in full, without the database's lock: the snapshot line by line, the
//! journal's records of the same generation applied on top, damaged lines counted and
//! skipped (each line stands alone), and how many entries the database held taken from the
//! latest stamp that survives (the journal's last record or header, the snapshot's stamps).

use super::super::Entry;
use super::journal::{parse_line, slot, snapshot_end, snapshot_head, Parsed, Record, Slot, Stamp};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

/// The backup read in full: the snapshot with the journal's records applied.
#[derive(Clone, Debug, Default)]
pub struct Backup {
    /// Every entry it holds, the latest value of each key, with its layer as its origin.
    pub entries: Vec<Entry>,
    /// How many entries the database held at the last write, as the backup records it
    /// (`None`: every line that says so is damaged, or there is no backup).
    pub held: Option<u64>,
    /// Lines that could not be read (damage; not a line a killed writer left unfinished).
    pub damaged_lines: usize,
    /// The stamp of the state read (`None`: not a backup of this version).
    pub(super) stamp: Option<Stamp>,
    /// The journal's records by slot, the latest of each (the entries newer than the
    /// snapshot), its entry with its layer as its origin.
    pub(super) records: BTreeMap<Slot, Record>,
}

/// A snapshot read line by line.
#[derive(Default)]
struct SnapshotRead {
    stamp: Option<Stamp>,
    entries: Vec<Entry>,
    damaged: usize,
}

fn read_snapshot(path: &Path) -> SnapshotRead {
    let mut out = SnapshotRead::default();
    let Ok(bytes) = std::fs::read(path) else {
        return out;
    };
    let lines: Vec<&[u8]> = bytes
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .collect();
    let (mut head, mut end) = (None, None);
    for (i, line) in lines.iter().enumerate() {
        if i == 0 {
            if let Some(s) = snapshot_head(line) {
                head = Some(s);
                continue;
            }
        }
        if i + 1 == lines.len() {
            if let Some(s) = snapshot_end(line) {
                end = Some(s);
                continue;
            }
        }
        let entry = line.strip_suffix(b",").unwrap_or(line);
        match serde_json::from_slice::<Entry>(entry) {
            Ok(e) => out.entries.push(e),
            Err(_) => out.damaged += 1,
        }
    }
    if head.is_none() && end.is_none() && out.entries.is_empty() {
        // An export file of an earlier version (the whole file, pretty-printed).
        let text = String::from_utf8_lossy(&bytes);
        return match super::parse_export(&text, path) {
            Ok((entries, rejected)) => SnapshotRead {
                stamp: None,
                damaged: rejected.len(),
                entries,
            },
            Err(_) => SnapshotRead {
                damaged: 1,
                ..SnapshotRead::default()
            },
        };
    }
    // The later stamp wins where the two differ (a damaged digit is rare, but possible).
    out.stamp = match (head, end) {
        (Some(h), Some(e)) => Some(if e.held >= h.held { e } else { h }),
        (h, e) => h.or(e),
    };
    out
}

/// A journal read line by line: its header, its records, its damaged lines.
#[derive(Default)]
struct JournalRead {
    header: Option<(Stamp, u64)>,
    records: Vec<Record>,
    damaged: usize,
}

fn read_journal(path: &Path) -> JournalRead {
    let mut out = JournalRead::default();
    let Ok(bytes) = std::fs::read(path) else {
        return out;
    };
    // A last line without its newline was cut short by a killed writer: not damage.
    let whole = match bytes.iter().rposition(|b| *b == b'\n') {
        Some(p) => &bytes[..=p],
        None => &[][..],
    };
    for line in whole.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
        match parse_line(line) {
            Some(Parsed::Header(s, seq)) if out.header.is_none() => out.header = Some((s, seq)),
            Some(Parsed::Record(r)) => out.records.push(*r),
            _ => out.damaged += 1,
        }
    }
    out
}

/// Reads the backup in full, without the database's lock. A compaction seen half done is
/// read again (a few times, a few milliseconds apart).
pub(super) fn read_backup(snapshot: &Path, journal: &Path) -> Backup {
    let mut attempt = 0;
    loop {
        let snap = read_snapshot(snapshot);
        let jour = read_journal(journal);
        let jgen = jour
            .header
            .map(|(h, _)| h.generation)
            .or_else(|| jour.records.iter().map(|r| r.stamp.generation).max());
        if let (Some(s), Some(j)) = (snap.stamp.map(|s| s.generation), jgen) {
            if j > s && attempt < 4 {
                attempt += 1;
                std::thread::sleep(Duration::from_millis(3));
                continue;
            }
        }
        return combine(snap, jour, jgen);
    }
}

fn combine(snap: SnapshotRead, jour: JournalRead, jgen: Option<u64>) -> Backup {
    let mut out = Backup {
        damaged_lines: snap.damaged + jour.damaged,
        stamp: snap.stamp,
        held: snap.stamp.map(|s| s.held),
        ..Backup::default()
    };
    let mut map: BTreeMap<Slot, Entry> = BTreeMap::new();
    for e in snap.entries {
        map.insert(slot(&e), e);
    }
    if snap.stamp.is_none() && jgen.is_none() && out.damaged_lines == 0 && !map.is_empty() {
        // An earlier version's backup, whole: it held what the database held.
        out.held = Some(map.len() as u64);
    }
    // The journal continues the snapshot of its generation; without a readable snapshot
    // stamp, the journal's own generation is taken. Its latest stamp is the header's or the
    // last record's, whichever is later (either may be damaged).
    let generation = snap.stamp.map(|s| s.generation).or(jgen);
    let mut latest: Option<(u64, Stamp)> = jour
        .header
        .filter(|(h, _)| Some(h.generation) == generation)
        .map(|(h, seq)| (seq, h));
    for mut r in jour.records {
        if Some(r.stamp.generation) != generation {
            continue;
        }
        r.entry.value.provenance.origin = r.layer;
        let s = (r.layer, r.entry.key.to_bytes());
        map.insert(s.clone(), r.entry.clone());
        if latest.is_none_or(|(seq, _)| r.seq >= seq) {
            latest = Some((r.seq, r.stamp));
        }
        out.records.insert(s, r);
    }
    if let Some((_, stamp)) = latest {
        out.stamp = Some(stamp);
        out.held = Some(stamp.held);
    }
    out.entries = map.into_values().collect();
    out
}

#[cfg(test)]
mod tests {
    use super::super::journal::{append, head, replace};
    use super::*;
    use crate::cache::{CacheKey, GpuId, Origin, ShapeBucket, TunedValue};
    use std::io::Write;

    fn entry(i: u64, origin: Origin) -> Entry {
        let key = CacheKey {
            schema: crate::cache::SCHEMA_VERSION,
            gpu: GpuId {
                name: "GPU".into(),
                compute_capability: (9, 0),
                sm_count: 1,
            },
            kernel: "k".into(),
            spec_hash: 1,
            codegen: String::new(),
            bindings: Default::default(),
            shape: ShapeBucket {
                dims: [("M".to_string(), i)].into(),
                align_bytes: 16,
                mult64: true,
            },
            scalars: Default::default(),
            access: Default::default(),
        };
        let mut value = TunedValue {
            best_us: Some(i as f64),
            ..TunedValue::default()
        };
        value.provenance.origin = origin;
        Entry { key, value }
    }

    #[test]
    fn snapshot_and_journal_read_back_and_survive_a_damaged_line() {
        let dir = tempfile::tempdir().unwrap();
        let (snap, jour) = (dir.path().join("t.json"), dir.path().join("t.journal"));
        let entries: Vec<Entry> = (0..5).map(|i| entry(i, Origin::Local)).collect();
        let slots: Vec<Slot> = entries.iter().map(slot).collect();
        let stamp = Stamp::of(7, &slots);
        replace(&snap, &jour, stamp, &entries.iter().collect::<Vec<_>>()).unwrap();
        // The snapshot is an export file.
        let (read, bad) = crate::cache::store::read_export(&snap).unwrap();
        assert_eq!((read.len(), bad.len()), (5, 0));
        assert_eq!(read[3], entries[3]);
        let h = head(&snap, &jour).unwrap();
        assert_eq!((h.stamp, h.seq), (stamp, 0));
        // Two records, then a line cut short.
        let mut s2 = stamp;
        let new = entry(9, Origin::Imported);
        s2.add(&slot(&new));
        let r = Record {
            seq: 1,
            first: 1,
            stamp: s2,
            layer: Origin::Imported,
            entry: new,
        };
        append(&jour, h.append_at, &[r]).unwrap();
        std::fs::OpenOptions::new()
            .append(true)
            .open(&jour)
            .unwrap()
            .write_all(b"{\"generation\":7,\"se")
            .unwrap();
        let h = head(&snap, &jour).unwrap();
        assert_eq!((h.stamp.held, h.seq), (6, 1));
        let b = read_backup(&snap, &jour);
        assert_eq!((b.entries.len(), b.held, b.damaged_lines), (6, Some(6), 0));
        // The last record damaged: its entry is gone, the count is not (the header has it).
        let text = std::fs::read_to_string(&jour).unwrap();
        let record = text.lines().nth(1).unwrap().to_string();
        std::fs::write(
            &jour,
            text.replace(&record[10..], &"x".repeat(record.len() - 10)),
        )
        .unwrap();
        assert!(head(&snap, &jour).is_none());
        let b = read_backup(&snap, &jour);
        assert_eq!((b.entries.len(), b.held, b.damaged_lines), (5, Some(6), 1));
        std::fs::write(&jour, &text).unwrap();
        // Damage one entry line of the snapshot: that entry is gone, the count is not.
        let text = std::fs::read_to_string(&snap).unwrap();
        let second = text.lines().nth(2).unwrap().to_string();
        std::fs::write(&snap, text.replace(&second, "garbage,")).unwrap();
        let b = read_backup(&snap, &jour);
        assert_eq!((b.entries.len(), b.held, b.damaged_lines), (5, Some(6), 1));
    }
}
