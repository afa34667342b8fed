//! The index of results: what each entry held when it was last read, kept
//! beside the entries so that `plan`, `report` and `diff` read one file
//! instead of opening ~3 files per run. The entries stay the truth; the
//! index only saves reading them, and is checked before it is believed.
//!
//! ```text
//! index/results.keys   a header, then one fixed-size record per snapshot
//! index/results.data   the snapshots' payloads: each sample's id, the stamp
//!                      of its result.json and its exact bytes
//! ```
//!
//! A record is a snapshot of one entry: the stamps (size, mtime and ctime
//! in ns, inode, device) of its `samples/` directory, `inputs.json` and
//! each `result.json`, each taken before what it covers was read, where its
//! payload is, and a CRC of the payload and of the record itself. The last
//! sound record of a key wins. It is used only when every stamp still
//! matches (one `stat` each): a sample added or removed changes
//! `samples/`'s, an edit changes a file's. As git's index does, a record
//! taken within 2 s of a stamp's mtime is not used (a coarse timestamp could
//! hide a second change in the same tick); a commit sets the mtime of what
//! it wrote 3 s back, so its own record is used at once. A record of an
//! entry holding damage or a signed sample says to read its files (readers
//! check those every time), so a sample the index gives is known unsigned:
//! perfpipe writes a signature only with a new sample, which changes
//! `samples/`'s stamp. What is not used is read from the entry, and the
//! reader appends a fresh record (a store that cannot be written keeps
//! reading the entries).
//!
//! Appends (a commit's, a reader's) take `locks/index.lock`, write the
//! payload, then the record: a writer killed in between leaves a payload no
//! record names, or a torn record (the next append cuts it off); a record
//! whose CRC fails is skipped. Either way the entry reads as unknown and is
//! read from its files: a crash leaves the index stale, never wrong.
//! `store verify` compares it with the entries, `store verify --repair`
//! rewrites it from them.
//!
//! Records of a key recorded again are superseded. An append that leaves
//! more of those than live records compacts the index
//! (`compact_if_mostly_superseded`): it counts them a few times each time
//! the index doubles, so an append reads a few records' worth on average.

use std::collections::HashMap;
use std::io::{ErrorKind, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use super::check::{inspect_samples, read_result_bytes};
use super::entry_stat::EntryStats;
use super::layout::{entry_dir, index_data_path, index_keys_path, index_lock_path};
use super::signed::SIGNATURE_FILE;
use super::{Error, Sample, Store, StoredSample};
use crate::inputs::Stamp;
use crate::key::RunKey;

/// What starts `results.keys`: its format. Another header is an index this
/// perfpipe does not read (nor append to); `store verify --repair` rewrites it.
const HEADER: &[u8; 16] = b"perfpipe-index1\n";

/// Bytes of one record in `results.keys`.
const RECORD: usize = 32 + 4 + 16 + 2 * STAMP + 8 + 4 + 4 + 4;
/// Bytes of a stamp: size, mtime and ctime in ns, inode, device.
const STAMP: usize = 8 + 16 + 16 + 8 + 8;

/// Flag: the entry held damage or a signed sample when the record was
/// taken: read it from its files.
const READ_FILES: u32 = 1;

/// A file's or directory's stat data (git's, as the input hash cache keeps
/// it), taken of the path itself (a link is not followed).
fn stamp(path: &Path) -> std::io::Result<Stamp> {
    Ok(Stamp::of(&std::fs::symlink_metadata(path)?))
}

/// The coarsest timestamp granularity of a file system (FAT keeps 2 s), as
/// the input hash cache assumes: a file whose mtime is not this much older
/// than a snapshot could change again within the same tick unseen.
const GRANULARITY_NS: i128 = 2_000_000_000;

/// Whether a change after `taken` would show in `stamp`: the file's mtime
/// is more than a tick older. (Its ctime is compared, not waited for: a
/// change sets it to the clock, so a later one differs from an older mtime.)
fn settled(stamp: &Stamp, taken: i128) -> bool {
    stamp.mtime_ns + GRANULARITY_NS < taken
}

/// Sets the mtime of what a commit wrote (`result.json`, `inputs.json`,
/// `samples/`) back by more than [`GRANULARITY_NS`], so that the record the
/// commit appends is settled at once: any later change, in any tick, sets
/// a newer mtime than this. Best effort: a file left as it is only makes
/// readers read it until a record taken later settles.
pub(super) fn backdate(path: &Path) {
    if let Ok(file) = std::fs::File::open(path) {
        let then = crate::clock::file_time_ns() - GRANULARITY_NS - 1_000_000_000;
        let then = std::time::Duration::from_nanos(u64::try_from(then).unwrap_or(0));
        let _ = file.set_modified(std::time::UNIX_EPOCH + then);
    }
}

fn put_stamp(stamp: &Stamp, out: &mut Vec<u8>) {
    out.extend_from_slice(&stamp.size.to_le_bytes());
    out.extend_from_slice(&stamp.mtime_ns.to_le_bytes());
    out.extend_from_slice(&stamp.ctime_ns.to_le_bytes());
    out.extend_from_slice(&stamp.inode.to_le_bytes());
    out.extend_from_slice(&stamp.device.to_le_bytes());
}

fn take_stamp(bytes: &mut &[u8]) -> Option<Stamp> {
    Some(Stamp {
        size: u64::from_le_bytes(take(bytes)?),
        mtime_ns: i128::from_le_bytes(take(bytes)?),
        ctime_ns: i128::from_le_bytes(take(bytes)?),
        inode: u64::from_le_bytes(take(bytes)?),
        device: u64::from_le_bytes(take(bytes)?),
    })
}

/// The first `N` bytes of `bytes`, which move past them.
fn take<const N: usize>(bytes: &mut &[u8]) -> Option<[u8; N]> {
    let (head, rest) = bytes.split_first_chunk::<N>()?;
    *bytes = rest;
    Some(*head)
}

/// The first `n` bytes of `bytes`, which move past them.
fn take_slice<'a>(bytes: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
    if bytes.len() < n {
        return None;
    }
    let (head, rest) = bytes.split_at(n);
    *bytes = rest;
    Some(head)
}

/// One sample as a snapshot holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct SnapSample {
    id: String,
    result: Stamp,
    bytes: Vec<u8>,
}

/// What an entry held when it was read: its record and payload.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Snapshot {
    key: [u8; 32],
    flags: u32,
    /// When the files were read (after their stamps were taken).
    taken: i128,
    samples_dir: Stamp,
    inputs: Stamp,
    samples: Vec<SnapSample>,
}

fn raw_key(key: &RunKey) -> [u8; 32] {
    let mut raw = [0; 32];
    hex::decode_to_slice(key.as_str(), &mut raw).expect("a run key is 64 hex digits");
    raw
}

impl Snapshot {
    /// Reads `key`'s entry as it is now; `None` when it has no `samples/`
    /// (nothing to remember: readers find that with one `stat`). Every stamp
    /// is taken before what it covers is read, so a change while reading
    /// leaves the snapshot older than the files, never newer.
    fn take(entry: &Path, key: &RunKey) -> Result<Option<Self>, Error> {
        let Ok(samples_dir) = stamp(&entry.join("samples")) else {
            return Ok(None);
        };
        let Ok(inputs) = stamp(&entry.join("inputs.json")) else {
            return Ok(None);
        };
        let mut clean = super::check::check_inputs(entry, key).is_none();
        let mut samples = Vec::new();
        for sample in inspect_samples(entry, key)? {
            let signed = std::fs::symlink_metadata(sample.path.join(SIGNATURE_FILE)).is_ok();
            if sample.state.is_err() || signed {
                clean = false;
                continue;
            }
            let path = sample.path.join("result.json");
            let read = stamp(&path).and_then(|stamp| {
                let bytes = super::files::read(&path)?;
                Ok((stamp, bytes))
            });
            match read {
                Ok((result, bytes)) if read_result_bytes(&bytes, key).is_ok() => {
                    samples.push(SnapSample {
                        id: sample.name,
                        result,
                        bytes,
                    });
                }
                _ => clean = false,
            }
        }
        Ok(Some(Self {
            key: raw_key(key),
            flags: if clean { 0 } else { READ_FILES },
            taken: crate::clock::file_time_ns(),
            samples_dir,
            inputs,
            samples: if clean { samples } else { Vec::new() },
        }))
    }

    /// Whether every file it covers last changed more than 2 s before it
    /// was taken (else readers do not use it).
    fn settled(&self) -> bool {
        settled(&self.samples_dir, self.taken)
            && settled(&self.inputs, self.taken)
            && self.samples.iter().all(|s| settled(&s.result, self.taken))
    }

    fn payload(&self) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(&(self.samples.len() as u32).to_le_bytes());
        for s in &self.samples {
            out.extend_from_slice(&(s.id.len() as u32).to_le_bytes());
            out.extend_from_slice(s.id.as_bytes());
            put_stamp(&s.result, &mut out);
            out.extend_from_slice(&(s.bytes.len() as u32).to_le_bytes());
            out.extend_from_slice(&s.bytes);
        }
        out
    }

    /// The record of this snapshot, its payload at `offset` in `results.data`.
    fn record(&self, offset: u64, payload: &[u8]) -> Vec<u8> {
        Record {
            flags: self.flags,
            taken: self.taken,
            samples_dir: self.samples_dir.clone(),
            inputs: self.inputs.clone(),
            offset,
            len: payload.len() as u32,
            crc: crc32fast::hash(payload),
        }
        .encode(&self.key)
    }
}

/// A record read back from `results.keys`: the snapshot without its samples.
#[derive(Debug, Clone)]
struct Record {
    flags: u32,
    taken: i128,
    samples_dir: Stamp,
    inputs: Stamp,
    offset: u64,
    len: u32,
    crc: u32,
}

impl Record {
    /// The key and record in `bytes` (one record long); `None` when its CRC
    /// fails (a torn or damaged record).
    fn parse(bytes: &[u8]) -> Option<([u8; 32], Self)> {
        let (body, crc) = bytes.split_at(RECORD - 4);
        if crc32fast::hash(body).to_le_bytes() != crc {
            return None;
        }
        let mut b = body;
        let key = take::<32>(&mut b)?;
        Some((
            key,
            Self {
                flags: u32::from_le_bytes(take(&mut b)?),
                taken: i128::from_le_bytes(take(&mut b)?),
                samples_dir: take_stamp(&mut b)?,
                inputs: take_stamp(&mut b)?,
                offset: u64::from_le_bytes(take(&mut b)?),
                len: u32::from_le_bytes(take(&mut b)?),
                crc: u32::from_le_bytes(take(&mut b)?),
            },
        ))
    }

    /// The bytes of this record of `key`, its own CRC last.
    fn encode(&self, key: &[u8; 32]) -> Vec<u8> {
        let mut out = Vec::with_capacity(RECORD);
        out.extend_from_slice(key);
        out.extend_from_slice(&self.flags.to_le_bytes());
        out.extend_from_slice(&self.taken.to_le_bytes());
        put_stamp(&self.samples_dir, &mut out);
        put_stamp(&self.inputs, &mut out);
        out.extend_from_slice(&self.offset.to_le_bytes());
        out.extend_from_slice(&self.len.to_le_bytes());
        out.extend_from_slice(&self.crc.to_le_bytes());
        let crc = crc32fast::hash(&out);
        out.extend_from_slice(&crc.to_le_bytes());
        debug_assert_eq!(out.len(), RECORD);
        out
    }

    /// Its payload, read from `data` (`None` when it is not the one recorded).
    fn payload(&self, data: &std::fs::File) -> Option<Vec<u8>> {
        let mut payload = vec![0; self.len as usize];
        data.read_exact_at(&mut payload, self.offset).ok()?;
        (crc32fast::hash(&payload) == self.crc).then_some(payload)
    }
}

/// One sample as a payload holds it, borrowed from the payload.
struct SnappedSample<'a> {
    id: &'a str,
    result: Stamp,
    bytes: &'a [u8],
}

/// The samples of a payload (`None` when it does not parse: it is not the
/// one recorded).
fn parse_samples(payload: &[u8]) -> Option<Vec<SnappedSample<'_>>> {
    let mut b = payload;
    let n = u32::from_le_bytes(take(&mut b)?);
    let mut out = Vec::with_capacity(n as usize);
    for _ in 0..n {
        let id_len = u32::from_le_bytes(take(&mut b)?) as usize;
        let id = std::str::from_utf8(take_slice(&mut b, id_len)?).ok()?;
        let result = take_stamp(&mut b)?;
        let len = u32::from_le_bytes(take(&mut b)?) as usize;
        let bytes = take_slice(&mut b, len)?;
        out.push(SnappedSample { id, result, bytes });
    }
    b.is_empty().then_some(out)
}

/// What the index says of one key, after checking it against the files.
#[derive(Debug)]
pub(super) enum Lookup<S = Sample> {
    /// The entry's sound samples, oldest first.
    Samples(Vec<S>),
    /// No `samples/` directory: the key has no sample (as its files say).
    NoSamples,
    /// The index cannot tell: read the entry.
    Unknown(Unknown),
}

/// Why the index cannot tell what an entry holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Unknown {
    /// No sound record of the key.
    NoRecord,
    /// A stamp differs: the entry changed since its record.
    Changed,
    /// The stamps match, but a file changed within 2 s before the record
    /// was taken, so a second change could hide behind them.
    Unsettled,
    /// The entry held damage or a signed sample: readers check its files.
    ReadFiles,
    /// The payload is not the one recorded (a torn or damaged write).
    Unreadable,
}

/// The index as read from disk: the last sound record of each key asked
/// for, and the payload file.
pub(super) struct ResultsIndex {
    records: HashMap<[u8; 32], Record>,
    data: Option<std::fs::File>,
}

impl ResultsIndex {
    /// An index that knows nothing (missing, or in another format).
    fn empty() -> Self {
        Self {
            records: HashMap::new(),
            data: None,
        }
    }

    /// Reads the records of `root`'s index, keeping those `wanted` says yes
    /// to. Read through a small buffer, record by record: the records of a
    /// store of 100,000 results are ~18 MB, of which a command wants a few.
    pub(super) fn read(root: &Path, wanted: impl Fn(&[u8; 32]) -> bool) -> Self {
        let Ok(keys) = open_index_file(&index_keys_path(root), false) else {
            return Self::empty();
        };
        let mut keys = std::io::BufReader::with_capacity(1 << 16, keys);
        let mut header = [0; HEADER.len()];
        if keys.read_exact(&mut header).is_err() || &header != HEADER {
            return Self::empty();
        }
        let Ok(data) = open_index_file(&index_data_path(root), false) else {
            return Self::empty();
        };
        let mut records = HashMap::new();
        let mut record = [0; RECORD];
        loop {
            match keys.read_exact(&mut record) {
                Ok(()) => {}
                // A torn last record (a writer killed mid-append) is left out.
                Err(e) if e.kind() == ErrorKind::UnexpectedEof => break,
                Err(_) => return Self::empty(),
            }
            // The key before the CRC: a record whose key bytes were damaged
            // is of a key nobody wants, or fails its CRC all the same.
            let key = record
                .first_chunk::<32>()
                .expect("a record starts with its key");
            if !wanted(key) {
                continue;
            }
            if let Some((key, record)) = Record::parse(&record) {
                records.insert(key, record);
            }
        }
        Self {
            records,
            data: Some(data),
        }
    }

    /// The samples of `key`, when the index knows them and every stamp it
    /// took still matches the files (`stats` takes them: see [`EntryStats`]).
    pub(super) fn lookup<S: StoredSample>(&self, stats: &EntryStats, key: &RunKey) -> Lookup<S> {
        self.check(stats, key, true)
    }

    /// As [`lookup`](Self::lookup); `settled` false also gives the samples
    /// of an unsettled record (for `store verify` to compare, never to use).
    fn check<S: StoredSample>(
        &self,
        stats: &EntryStats,
        key: &RunKey,
        settled_only: bool,
    ) -> Lookup<S> {
        let samples_dir = match stats.stat(key, &["samples"]) {
            Ok(stat) => stat.stamp(),
            // As `check::sample_dirs` reads it: no samples.
            Err(e) if e.kind() == ErrorKind::NotFound => return Lookup::NoSamples,
            Err(_) => return Lookup::Unknown(Unknown::Changed),
        };
        let (Some(record), Some(data)) = (self.records.get(&raw_key(key)), &self.data) else {
            return Lookup::Unknown(Unknown::NoRecord);
        };
        if record.flags != 0 {
            return Lookup::Unknown(Unknown::ReadFiles);
        }
        let unchanged = record.samples_dir == samples_dir
            && (stats.stat(key, &["inputs.json"])).is_ok_and(|s| s.stamp() == record.inputs);
        if !unchanged {
            return Lookup::Unknown(Unknown::Changed);
        }
        let Some(payload) = record.payload(data) else {
            return Lookup::Unknown(Unknown::Unreadable);
        };
        let Some(snapped) = parse_samples(&payload) else {
            return Lookup::Unknown(Unknown::Unreadable);
        };
        let mut unsettled =
            !settled(&record.samples_dir, record.taken) || !settled(&record.inputs, record.taken);
        let mut samples = Vec::with_capacity(snapped.len());
        let samples_path = std::cell::OnceCell::new();
        for s in snapped {
            // Never a path out of the entry, whatever the payload says.
            if !super::layout::is_sample_id(s.id) {
                return Lookup::Unknown(Unknown::Unreadable);
            }
            let now = stats.stat(key, &["samples", s.id, "result.json"]);
            if !now.is_ok_and(|now| now.stamp() == s.result) {
                return Lookup::Unknown(Unknown::Changed);
            }
            unsettled |= !settled(&s.result, record.taken);
            let samples_path = || {
                samples_path
                    .get_or_init(|| entry_dir(stats.root(), key).join("samples"))
                    .as_path()
            };
            match S::from_indexed(s.id, samples_path, s.bytes, key.as_str()) {
                Some(sample) => samples.push(sample),
                None => return Lookup::Unknown(Unknown::Unreadable),
            }
        }
        if unsettled && settled_only {
            return Lookup::Unknown(Unknown::Unsettled);
        }
        Lookup::Samples(samples)
    }
}

/// Test hook (debug builds): with `PERFPIPE_TEST_PAUSE_IN_INDEX_APPEND`
/// naming a file, writes half of an append's records, creates that file
/// and waits there to be killed (`kill -9`), to test what a crash in the
/// middle of an append leaves.
fn pause_in_append(keys: &mut std::fs::File, records: &[u8]) -> std::io::Result<()> {
    if !cfg!(debug_assertions) {
        return Ok(());
    }
    let Some(marker) = std::env::var_os("PERFPIPE_TEST_PAUSE_IN_INDEX_APPEND") else {
        return Ok(());
    };
    keys.write_all(&records[..records.len() / 2])?;
    keys.sync_all()?;
    fs_err::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(marker)?;
    loop {
        std::thread::sleep(std::time::Duration::from_secs(1));
    }
}

impl Store {
    /// The index of results, reading only the records of `keys`.
    pub(super) fn results_index<'a>(
        &self,
        keys: impl IntoIterator<Item = &'a RunKey>,
    ) -> ResultsIndex {
        let wanted: std::collections::HashSet<[u8; 32]> = keys.into_iter().map(raw_key).collect();
        ResultsIndex::read(&self.root, |key| wanted.contains(key))
    }

    /// Appends a snapshot of each of `keys`' entries to the index (a commit,
    /// holding the key's lock; or a reader that found them unknown). The
    /// entries' files are the truth: an index that cannot be written is
    /// left as it is, and readers read the entries.
    pub(super) fn index_entries(&self, keys: &[&RunKey]) -> Result<(), Error> {
        self.append_snapshots(keys, false)
    }

    /// Appends a snapshot of each of `keys`' entries; with `settled_only`,
    /// only those a reader could use (no file changed within 2 s).
    fn append_snapshots(&self, keys: &[&RunKey], settled_only: bool) -> Result<(), Error> {
        let mut snapshots = Vec::new();
        for key in keys {
            if let Some(s) = Snapshot::take(&entry_dir(&self.root, key), key)?
                && (!settled_only || s.settled())
            {
                snapshots.push(s);
            }
        }
        if snapshots.is_empty() {
            return Ok(());
        }
        let _lock = IndexLock::take(&self.root)?;
        append(&self.root, &snapshots)
    }

    /// Appends records for the keys a reader found unknown, when the store
    /// is one perfpipe marked; failures only cost the next reader a read.
    pub(super) fn refresh_index(&self, keys: &[&RunKey]) {
        if !keys.is_empty() && super::is_marked(&self.root) {
            let _ = self.append_snapshots(keys, true);
        }
    }

    /// Rewrites the index from every entry (`store verify --repair`), under
    /// its lock: what it says afterwards is what the entries hold.
    pub fn rebuild_index(&self) -> Result<usize, Error> {
        self.writable()?;
        let _lock = IndexLock::take(&self.root)?;
        let mut snapshots = Vec::new();
        for dir in self.entry_dirs()? {
            let Some(key) = &dir.key else { continue };
            if let Some(s) = Snapshot::take(&dir.path, key)? {
                snapshots.push(s);
            }
        }
        let mut data = Vec::new();
        let mut keys = HEADER.to_vec();
        for s in &snapshots {
            let payload = s.payload();
            keys.extend(s.record(data.len() as u64, &payload));
            data.extend(payload);
        }
        // The payloads first: killed between the two, the old records name
        // payloads whose CRC no longer matches, and read as unknown.
        // Readable by all, as the entries are (a team shares a store).
        let write = crate::atomic_write::AtomicWrite::new().mode(0o644);
        write.write(&index_data_path(&self.root), &data)?;
        write.write(&index_keys_path(&self.root), &keys)?;
        Ok(snapshots.len())
    }

    /// Rewrites the index without the records of keys whose entry is gone
    /// (`store gc` removed it), under its lock; how many it dropped. Such a
    /// record is never used (its key reads as having no samples), but no
    /// later record supersedes it, so compaction would keep it and its
    /// payload for good.
    pub fn prune_index(&self) -> Result<usize, Error> {
        if std::fs::symlink_metadata(index_keys_path(&self.root)).is_err() {
            return Ok(0);
        }
        self.writable()?;
        let _lock = IndexLock::take(&self.root)?;
        let Some((live, _)) = live_records(&self.root)? else {
            return Ok(0);
        };
        let stats = EntryStats::new(&self.root);
        let before = live.len();
        let kept: Records = (live.into_iter())
            .filter(|(key, _)| has_entry(&stats, key))
            .collect();
        let dropped = before - kept.len();
        if dropped > 0 {
            rewrite(&self.root, kept)?;
        }
        Ok(dropped)
    }

    /// Compares the index with the entries, as `store verify` does: which
    /// entries it would give other samples than their files (wrong: never
    /// after a crash, only after an edit no stamp shows) and how many it
    /// does not know (stale: read from their files until a reader or
    /// `store verify --repair` records them again).
    pub fn verify_index(&self) -> Result<IndexCheck, Error> {
        let index = ResultsIndex::read(&self.root, |_| true);
        let stats = EntryStats::new(&self.root);
        let mut check = IndexCheck::default();
        for dir in self.entry_dirs()? {
            let Some(key) = &dir.key else { continue };
            let files = self.samples(key)?;
            let same = |indexed: &[Sample]| {
                indexed.len() == files.len()
                    && (indexed.iter().zip(&files))
                        .all(|(a, b)| a.id == b.id && a.result == b.result)
            };
            match index.lookup::<Sample>(&stats, key) {
                Lookup::Samples(indexed) if same(&indexed) => check.sound += 1,
                Lookup::NoSamples if files.is_empty() => check.sound += 1,
                Lookup::Samples(_) | Lookup::NoSamples => check.wrong.push(dir.path.clone()),
                // Not used until it settles: sound when it says what the files do.
                Lookup::Unknown(Unknown::Unsettled) => {
                    match index.check::<Sample>(&stats, key, false) {
                        Lookup::Samples(indexed) if same(&indexed) => check.sound += 1,
                        _ => check.stale += 1,
                    }
                }
                // Read from its files every time, as it should be; and an
                // entry without a sound sample reads the same either way.
                Lookup::Unknown(Unknown::ReadFiles) => check.sound += 1,
                Lookup::Unknown(_) if files.is_empty() => check.sound += 1,
                Lookup::Unknown(_) => check.stale += 1,
            }
        }
        check.removed = (index.records.keys())
            .filter(|key| !has_entry(&stats, key))
            .count();
        Ok(check)
    }
}

/// What [`Store::verify_index`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IndexCheck {
    /// Entries the index gives as their files do.
    pub sound: usize,
    /// Entries it does not know (read from their files).
    pub stale: usize,
    /// Entries it would give otherwise than their files: damage.
    pub wrong: Vec<PathBuf>,
    /// Keys it holds records of whose entries are gone (never used: such a
    /// key has no samples; `store gc` drops them, `--repair` too).
    pub removed: usize,
}

/// `locks/index.lock`, held while the index is appended to or rewritten.
struct IndexLock {
    _file: std::fs::File,
}

impl IndexLock {
    fn take(root: &Path) -> Result<Self, Error> {
        let file = crate::filelock::open(&index_lock_path(root))?;
        file.lock()?;
        Ok(Self { _file: file })
    }
}

/// Appends `snapshots` (the caller holds the index lock): payloads, then
/// records. A torn record left by a killed writer is cut off first, so the
/// records stay aligned; an index in another format is left alone.
fn append(root: &Path, snapshots: &[Snapshot]) -> Result<(), Error> {
    let keys_path = index_keys_path(root);
    super::root::refuse_link(root, keys_path.parent().expect("under index/"))?;
    fs_err::create_dir_all(keys_path.parent().expect("under index/"))?;
    let mut keys = open_index_file(&keys_path, true)?;
    let len = keys.metadata()?.len();
    if len == 0 {
        keys.write_all(HEADER)?;
    } else {
        let mut header = [0; HEADER.len()];
        keys.read_exact(&mut header).ok();
        if &header != HEADER {
            return Ok(());
        }
        let whole =
            HEADER.len() as u64 + (len - HEADER.len() as u64) / RECORD as u64 * RECORD as u64;
        if whole != len {
            keys.set_len(whole)?;
        }
    }
    let mut data = open_index_file(&index_data_path(root), true)?;
    let mut offset = data.seek(SeekFrom::End(0))?;
    let mut payloads = Vec::new();
    let mut records = Vec::new();
    for s in snapshots {
        let payload = s.payload();
        records.extend(s.record(offset, &payload));
        offset += payload.len() as u64;
        payloads.extend(payload);
    }
    data.write_all(&payloads)?;
    keys.seek(SeekFrom::End(0))?;
    pause_in_append(&mut keys, &records)?;
    keys.write_all(&records)?;
    let before = (len.saturating_sub(HEADER.len() as u64)) / RECORD as u64;
    if due_for_count(before, before + snapshots.len() as u64) {
        compact_if_mostly_superseded(root)?;
    }
    Ok(())
}

/// An index shorter than this many records is never compacted: reading it
/// whole costs less than rewriting it.
const COMPACT_FROM: u64 = 1024;

/// Whether an append that took `results.keys` from `before` records to
/// `after` counts its superseded ones: when it crosses a multiple of an
/// eighth of the power of two below `after` (at least [`COMPACT_FROM`]), so
/// each append pays for reading a few records, not the whole index, and the
/// index is counted eight times per doubling.
fn due_for_count(before: u64, after: u64) -> bool {
    if after < COMPACT_FROM {
        return false;
    }
    let step = (1u64 << after.ilog2() >> 3).max(COMPACT_FROM);
    before / step != after / step
}

/// Records with their keys.
type Records = Vec<([u8; 32], Record)>;

/// The last sound record of each key in `results.keys`, in the order of
/// their places there, and how many records it holds in all (superseded,
/// torn and damaged ones too); `None` for an index in another format.
fn live_records(root: &Path) -> Result<Option<(Records, usize)>, Error> {
    let mut bytes = Vec::new();
    open_index_file(&index_keys_path(root), false)?.read_to_end(&mut bytes)?;
    let Some(body) = bytes.strip_prefix(HEADER.as_slice()) else {
        return Ok(None);
    };
    let sound: Vec<([u8; 32], Record)> = body
        .chunks_exact(RECORD)
        .filter_map(Record::parse)
        .collect();
    let last: HashMap<[u8; 32], usize> = (sound.iter().enumerate())
        .map(|(place, (key, _))| (*key, place))
        .collect();
    let total = body.len() / RECORD;
    let live = (sound.into_iter().enumerate())
        .filter(|(place, (key, _))| last[key] == *place)
        .map(|(_, record)| record)
        .collect();
    Ok(Some((live, total)))
}

/// Rewrites the index without its superseded records when they outnumber
/// the live ones (the caller holds the index lock); whether it did.
fn compact_if_mostly_superseded(root: &Path) -> Result<bool, Error> {
    let Some((live, total)) = live_records(root)? else {
        return Ok(false);
    };
    if total - live.len() <= live.len() {
        return Ok(false);
    }
    rewrite(root, live)?;
    Ok(true)
}

/// Rewrites the index with only the records `live` (the caller holds the
/// index lock), each kept as it is, its payload copied (one whose CRC fails
/// is dropped: it read as unknown, as no record does); the payloads are
/// written first, then the records, each file renamed whole into place. A
/// reader that read the old records and opens the new payloads finds their
/// CRCs wrong and reads the entries' files: stale, never wrong.
fn rewrite(root: &Path, live: Records) -> Result<(), Error> {
    let old_data = open_index_file(&index_data_path(root), false)?;
    // Readable by all, as the entries are (a team shares a store).
    let write = crate::atomic_write::AtomicWrite::new().mode(0o644);
    let mut data = write.begin(&index_data_path(root))?;
    let mut keys = HEADER.to_vec();
    let mut offset = 0;
    let mut payloads = std::io::BufWriter::new(data.file());
    for (key, record) in live {
        let Some(payload) = record.payload(&old_data) else {
            continue;
        };
        payloads.write_all(&payload)?;
        keys.extend(Record { offset, ..record }.encode(&key));
        offset += payload.len() as u64;
    }
    payloads.flush()?;
    drop(payloads);
    data.commit()?;
    write.write(&index_keys_path(root), &keys)?;
    Ok(())
}

/// The run key whose raw bytes a record starts with.
fn key_of_raw(raw: &[u8; 32]) -> Option<RunKey> {
    RunKey::parse(&hex::encode(raw))
}

/// Whether `key` has an entry directory (an error other than its absence
/// says yes: its record is kept).
fn has_entry(stats: &EntryStats, key: &[u8; 32]) -> bool {
    key_of_raw(key).is_some_and(
        |key| !matches!(stats.stat(&key, &[]), Err(e) if e.kind() == ErrorKind::NotFound),
    )
}

/// Opens a file of the index for reading, and with `write` for writing
/// too (created when missing). A link is refused, never followed (the index
/// is the store's own), and so is anything but a regular file.
fn open_index_file(path: &Path, write: bool) -> std::io::Result<std::fs::File> {
    use fs_err::os::unix::fs::OpenOptionsExt;
    let file = fs_err::OpenOptions::new()
        .read(true)
        .write(write)
        .create(write)
        .truncate(false)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)?
        .into_parts()
        .0;
    if !file.metadata()?.is_file() {
        return Err(std::io::Error::new(
            ErrorKind::InvalidInput,
            "not a regular file",
        ));
    }
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::RunResult;
    use crate::store::testing::{commit, mark, store};

    /// Appends `keys`' snapshots as if taken `secs` later: what a reader
    /// would record once the entries settled, without waiting for it.
    fn index_later(store: &Store, keys: &[&RunKey], secs: i128) {
        let snapshots: Vec<Snapshot> = keys
            .iter()
            .filter_map(|key| Snapshot::take(&entry_dir(store.root(), key), key).unwrap())
            .map(|mut s| {
                s.taken += secs * 1_000_000_000;
                s
            })
            .collect();
        let _lock = IndexLock::take(store.root()).unwrap();
        append(store.root(), &snapshots).unwrap();
    }

    fn lookup(store: &Store, key: &RunKey) -> Lookup {
        store
            .results_index([key])
            .lookup(&EntryStats::new(store.root()), key)
    }

    /// The ids and results `samples` hold, to compare.
    fn summary(samples: &[Sample]) -> Vec<(String, RunResult)> {
        samples
            .iter()
            .map(|s| (s.id.clone(), s.result.clone()))
            .collect()
    }

    #[test]
    fn a_commit_appends_a_record_that_readers_use() {
        let (_root, store) = store();
        let (key, _) = commit(&store, r#"{"a":1}"#);
        commit(&store, r#"{"a":1}"#);
        let Lookup::Samples(indexed) = lookup(&store, &key) else {
            panic!("the commit's record is used");
        };
        let files = store.samples(&key).unwrap();
        assert_eq!(summary(&indexed), summary(&files));
        assert_eq!(indexed.len(), 2);
        assert_eq!(indexed[1].dir, files[1].dir);
        let check = store.verify_index().unwrap();
        assert_eq!((check.sound, check.stale, check.wrong.len()), (1, 0, 0));
    }

    #[test]
    fn a_record_taken_within_a_tick_of_a_change_is_not_used() {
        let (_root, store) = store();
        let (key, _) = commit(&store, r#"{"a":2}"#);
        let entry = entry_dir(store.root(), &key);
        // Changed now, as outside perfpipe: no backdating.
        fs_err::create_dir(entry.join("samples/0002")).unwrap();
        fs_err::remove_dir(entry.join("samples/0002")).unwrap();
        store.index_entries(&[&key]).unwrap();
        assert!(matches!(
            lookup(&store, &key),
            Lookup::Unknown(Unknown::Unsettled)
        ));
        let check = store.verify_index().unwrap();
        assert_eq!((check.sound, check.stale), (1, 0), "unsettled, yet right");
        index_later(&store, &[&key], 3);
        assert!(matches!(lookup(&store, &key), Lookup::Samples(_)));
    }

    #[test]
    fn entries_changed_outside_read_as_unknown_and_verify_calls_the_index_stale() {
        let (_root, store) = store();
        let (added, _) = commit(&store, r#"{"b":1}"#);
        let (removed, _) = commit(&store, r#"{"b":2}"#);
        commit(&store, r#"{"b":2}"#);
        index_later(&store, &[&added, &removed], 3);
        // A sample removed outside perfpipe: `samples/` changed.
        let samples = entry_dir(store.root(), &removed).join("samples");
        fs_err::remove_dir_all(samples.join("0002")).unwrap();
        assert!(matches!(
            lookup(&store, &removed),
            Lookup::Unknown(Unknown::Changed)
        ));
        // An entry added outside: no record.
        let (fresh, _) = commit(&store, r#"{"b":3}"#);
        let index = store.verify_index().unwrap();
        assert_eq!((index.sound, index.stale), (2, 1), "{index:?}");
        // A whole entry removed: no samples, as its files say.
        fs_err::remove_dir_all(entry_dir(store.root(), &added)).unwrap();
        assert!(matches!(lookup(&store, &added), Lookup::NoSamples));

        // What readers get is what the files hold, whatever the index says.
        let runs = [
            (&added, r#"{"b":1}"#),
            (&removed, r#"{"b":2}"#),
            (&fresh, r#"{"b":3}"#),
        ];
        let read = store.index(runs).unwrap();
        assert!(read.samples(&added).is_empty());
        assert_eq!(read.samples(&removed).len(), 1);
        assert_eq!(read.samples(&fresh).len(), 1);

        // Rebuilt, it knows them all again.
        assert_eq!(store.rebuild_index().unwrap(), 2);
        let index = store.verify_index().unwrap();
        assert_eq!((index.sound, index.stale, index.wrong.len()), (2, 0, 0));
    }

    #[test]
    fn a_torn_append_is_skipped_then_cut_off_by_the_next() {
        let (_root, store) = store();
        mark(store.root());
        let (first, _) = commit(&store, r#"{"c":1}"#);
        let (second, _) = commit(&store, r#"{"c":2}"#);
        // An index that knows only `first`.
        fs_err::remove_dir_all(store.root().join("index")).unwrap();
        index_later(&store, &[&first], 3);
        let keys = index_keys_path(store.root());
        let len = fs_err::metadata(&keys).unwrap().len();
        // A writer killed in the middle of `second`'s record.
        let torn = Snapshot::take(&entry_dir(store.root(), &second), &second)
            .unwrap()
            .unwrap()
            .record(0, b"");
        let mut file = open_index_file(&keys, true).unwrap();
        file.seek(SeekFrom::End(0)).unwrap();
        file.write_all(&torn[..RECORD / 2]).unwrap();
        assert!(matches!(lookup(&store, &first), Lookup::Samples(_)));
        assert!(matches!(
            lookup(&store, &second),
            Lookup::Unknown(Unknown::NoRecord)
        ));
        let check = store.verify_index().unwrap();
        assert_eq!((check.sound, check.stale, check.wrong.len()), (1, 1, 0));
        // A reader records it again, cutting the torn record off first.
        store.index([(&second, r#"{"c":2}"#)]).unwrap();
        assert_eq!(
            fs_err::metadata(&keys).unwrap().len(),
            len + RECORD as u64,
            "the torn record was cut off before the next"
        );
        assert!(matches!(lookup(&store, &second), Lookup::Samples(_)));
    }

    #[test]
    fn a_damaged_record_or_payload_is_never_used() {
        let (_root, store) = store();
        let (key, _) = commit(&store, r#"{"d":1}"#);
        assert!(matches!(lookup(&store, &key), Lookup::Samples(_)));
        let data = index_data_path(store.root());
        let mut bytes = fs_err::read(&data).unwrap();
        let last = bytes.len() - 3;
        bytes[last] ^= 0x20;
        crate::store::testing::overwrite(&data, &bytes);
        assert!(matches!(
            lookup(&store, &key),
            Lookup::Unknown(Unknown::Unreadable)
        ));
        let keys = index_keys_path(store.root());
        let mut bytes = fs_err::read(&keys).unwrap();
        bytes[HEADER.len() + 40] ^= 1;
        crate::store::testing::overwrite(&keys, &bytes);
        assert!(matches!(
            lookup(&store, &key),
            Lookup::Unknown(Unknown::NoRecord)
        ));
    }

    #[test]
    fn appends_count_superseded_records_a_few_times_per_doubling() {
        assert!(!due_for_count(0, COMPACT_FROM - 1));
        assert!(due_for_count(COMPACT_FROM - 1, COMPACT_FROM));
        assert!(!due_for_count(COMPACT_FROM, COMPACT_FROM + 1));
        assert!(due_for_count(0, 5000), "one append of many");
        // From 16384 records on, every 2048.
        assert!(!due_for_count(16385, 18431));
        assert!(due_for_count(18431, 18432));
        let counted = |from: u64, to: u64| (from..to).filter(|&n| due_for_count(n, n + 1)).count();
        assert_eq!(counted(1 << 16, 1 << 17), 8, "eight times per doubling");
        assert_eq!(counted(COMPACT_FROM, 1 << 20), 63, "fewer below 8192");
    }

    #[test]
    fn an_append_that_leaves_mostly_superseded_records_compacts_the_index() {
        let (_root, store) = store();
        let (a, _) = commit(&store, r#"{"f":1}"#);
        let (b, _) = commit(&store, r#"{"f":2}"#);
        let keys = index_keys_path(store.root());
        let record_count =
            || (fs_err::metadata(&keys).unwrap().len() - HEADER.len() as u64) / RECORD as u64;
        assert_eq!(record_count(), 2);
        // Nothing superseded: left as it is.
        assert!(!compact_if_mostly_superseded(store.root()).unwrap());
        // A reader's refreshes of `a`, over and over, then one of `b`: the
        // append that passes COMPACT_FROM records counts them.
        let snapshot = |key: &RunKey| {
            let mut s = Snapshot::take(&entry_dir(store.root(), key), key)
                .unwrap()
                .unwrap();
            s.taken += 3_000_000_000;
            s
        };
        let again = vec![snapshot(&a); COMPACT_FROM as usize - 3];
        let lock = IndexLock::take(store.root()).unwrap();
        append(store.root(), &again).unwrap();
        assert_eq!(record_count(), COMPACT_FROM - 1, "not counted yet");
        append(store.root(), &[snapshot(&b)]).unwrap();
        drop(lock);
        assert_eq!(record_count(), 2, "the last record of each key is left");
        let data_len = fs_err::metadata(index_data_path(store.root()))
            .unwrap()
            .len();
        let payloads = snapshot(&a).payload().len() + snapshot(&b).payload().len();
        assert_eq!(data_len, payloads as u64, "and only their payloads");
        for key in [&a, &b] {
            let Lookup::Samples(indexed) = lookup(&store, key) else {
                panic!("a compacted record is used");
            };
            assert_eq!(summary(&indexed), summary(&store.samples(key).unwrap()));
        }
        let check = store.verify_index().unwrap();
        assert_eq!((check.sound, check.stale, check.wrong.len()), (2, 0, 0));
    }

    #[test]
    fn every_entry_is_read_through_the_index() {
        let (_root, store) = store();
        let (key, _) = commit(&store, r#"{"h":1}"#);
        let (other, _) = commit(&store, r#"{"h":2}"#);
        // A record the files do not show (as `store verify` would call
        // wrong): what a reader gives is the index's, not the files'.
        let entry = entry_dir(store.root(), &key);
        let mut snapshot = Snapshot::take(&entry, &key).unwrap().unwrap();
        snapshot.taken += 3_000_000_000;
        let mut indexed = crate::store::testing::result(&key);
        indexed.engine_command = vec!["from the index".into()];
        snapshot.samples[0].bytes = serde_json::to_vec(&indexed).unwrap();
        {
            let _lock = IndexLock::take(store.root()).unwrap();
            append(store.root(), &[snapshot]).unwrap();
        }
        let mut read = Vec::new();
        store
            .each_entry(
                |_| true,
                |k, text, samples| read.push((k.clone(), text.to_owned(), samples)),
            )
            .unwrap();
        assert_eq!(read.len(), 2);
        let (_, text, samples) = read.iter().find(|(k, ..)| *k == key).unwrap();
        assert_eq!(*text, r#"{"h":1}"#);
        assert_eq!(samples[0].result.engine_command, ["from the index"]);
        let (_, _, samples) = read.iter().find(|(k, ..)| *k == other).unwrap();
        assert_eq!(summary(samples), summary(&store.samples(&other).unwrap()));
    }

    #[test]
    fn pruning_after_gc_drops_the_records_of_removed_entries() {
        let (_root, store) = store();
        let (kept, _) = commit(&store, r#"{"g":1}"#);
        commit(&store, r#"{"g":2}"#);
        let reached = [kept.clone()].into();
        for item in store.garbage(&reached).unwrap() {
            assert_eq!(store.remove(&item).unwrap(), crate::store::Removal::Removed);
        }
        let check = store.verify_index().unwrap();
        assert_eq!(check.removed, 1, "its record outlives the entry");
        assert_eq!(store.prune_index().unwrap(), 1);
        let check = store.verify_index().unwrap();
        assert_eq!(
            (check.sound, check.stale, check.removed, check.wrong.len()),
            (1, 0, 0, 0)
        );
        let keys = fs_err::metadata(index_keys_path(store.root())).unwrap();
        assert_eq!(
            keys.len(),
            (HEADER.len() + RECORD) as u64,
            "one record left"
        );
        let snapshot = Snapshot::take(&entry_dir(store.root(), &kept), &kept)
            .unwrap()
            .unwrap();
        let data = fs_err::metadata(index_data_path(store.root())).unwrap();
        assert_eq!(
            data.len(),
            snapshot.payload().len() as u64,
            "and its payload"
        );
        assert!(matches!(lookup(&store, &kept), Lookup::Samples(_)));
        assert_eq!(store.prune_index().unwrap(), 0, "nothing more to drop");
    }

    #[test]
    fn an_index_that_gives_other_samples_than_the_files_is_wrong() {
        let (_root, store) = store();
        let (key, _) = commit(&store, r#"{"e":1}"#);
        let entry = entry_dir(store.root(), &key);
        let mut snapshot = Snapshot::take(&entry, &key).unwrap().unwrap();
        snapshot.taken += 3_000_000_000;
        // A forged payload under the entry's true stamps.
        let mut other = crate::store::testing::result(&key);
        other.engine_command = vec!["forged".into()];
        snapshot.samples[0].bytes = serde_json::to_vec(&other).unwrap();
        let _lock = IndexLock::take(store.root()).unwrap();
        append(store.root(), &[snapshot]).unwrap();
        let check = store.verify_index().unwrap();
        assert_eq!(check.wrong, [entry]);
    }
}
