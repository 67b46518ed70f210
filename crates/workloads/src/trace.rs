//! `trace FILE [--format oraclegeneral|csv] [--region SIZE] [--file NAME] [--limit N]
//! [--speed X] [--hold]` — replay a cache trace's object accesses as page accesses, so
//! traces collected for cache research can be run against the kernel's reclaim.
//!
//! Formats (default: `csv` if FILE ends in `.csv`, else `oraclegeneral`):
//!
//! * libCacheSim's **oracleGeneral** binary format: 24-byte little-endian records
//!   `{u32 timestamp (s), u64 obj_id, u32 obj_size (bytes), i64 next_access_vtime}`; the last
//!   field is ignored. Compressed traces (`.zst`) must be decompressed first.
//! * **CSV**: `time,obj_id[,size[,op]]` per line, time in seconds, size in bytes (default one
//!   page), op `r` or `w` (default: write for anonymous memory, read for a file). Blank lines
//!   and lines starting with `#` are skipped, and so is a first line whose first field is not
//!   a number (a header).
//!
//! Each record touches ceil(size / 4096) consecutive pages (at least one, at most the
//! region) starting at a page chosen by hashing obj_id into the region (`--region`, default
//! 1G), wrapping at its end. The region is an anonymous mapping written from user space, or
//! with `--file NAME` that file (extended sparse to the region), accessed with read() or
//! write() as each record's op says. By default records replay as fast as possible; with
//! `--speed X` the task sleeps Δt / X whenever a record's timestamp advances. `--limit N`
//! replays the first N records only. At the end the task holds its memory (`--hold`) or
//! unmaps it and exits 0.
//!
//! The whole trace is read when the workload is built (the program does no I/O while it
//! runs), kept as 8 bytes per record (plus 8 with `--speed`); traces of more than
//! 100 million records are refused unless `--limit` cuts them down.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};

use memcgsim_model::{Program, Step, TaskCtx, PAGE_SIZE};

use crate::args::{parse, Spec};
use crate::common::{fault_step, Budget, Region, MAX_SIZE};
use crate::rand::{mix64, unmix64};

/// How many records ahead a replay asks the host to load a page-cache slot, and the frame
/// metadata of a resident page or the xarray leaf a missing page's insertion updates
/// (Machine::prefetch_file_page()'s stages; hints only: results do not depend on them).
const PREFETCH_AHEAD: [usize; 2] = [16, 6];

/// The most records a replay accepts.
pub const MAX_RECORDS: u64 = 100_000_000;
/// Size of an oracleGeneral record.
pub const ORACLE_GENERAL_RECORD: usize = 24;
/// oracleGeneral records read from the file at a time (1.5 MiB).
const RECORDS_PER_CHUNK: usize = 65_536;

/// A trace file's format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TraceFormat {
    OracleGeneral,
    Csv,
}

impl TraceFormat {
    /// The format a file name suggests: CSV for `*.csv`, oracleGeneral otherwise.
    pub fn for_path(path: &str) -> TraceFormat {
        if path.to_ascii_lowercase().ends_with(".csv") {
            TraceFormat::Csv
        } else {
            TraceFormat::OracleGeneral
        }
    }
}

/// Read or write, when the trace says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TraceOp {
    Read,
    Write,
}

/// One access of a trace.
#[derive(Clone, Debug, PartialEq)]
pub struct TraceRecord {
    /// Seconds.
    pub time: f64,
    pub obj_id: u64,
    /// Bytes.
    pub size: u64,
    pub op: Option<TraceOp>,
}

/// The first page of object `obj_id` in a region of `region_pages` pages.
pub fn object_start_page(obj_id: u64, region_pages: u64) -> u64 {
    mix64(obj_id) % region_pages.max(1)
}

/// An object id whose first page is `page` in any region of more than `page` pages: the
/// inverse of [`object_start_page`]'s hash. The ids for pages `0..R` put exactly one
/// one-page object on each page of a region of R pages.
pub fn object_id_for_page(page: u64) -> u64 {
    unmix64(page)
}

/// Read up to `buf.len()` bytes, stopping early only at end of file.
fn fill(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// Read a trace file, calling `visit` for each record, at most `limit` records (at most
/// [`MAX_RECORDS`]; more without a limit is an error). Returns the number of records.
/// Errors name the file and the record number (oracleGeneral) or line (CSV), from 1.
pub fn read_trace(
    path: &str,
    format: TraceFormat,
    limit: Option<u64>,
    visit: impl FnMut(TraceRecord),
) -> Result<u64, String> {
    let file = File::open(path).map_err(|e| format!("{path}: cannot open: {e}"))?;
    if format == TraceFormat::OracleGeneral && limit.unwrap_or(u64::MAX) > MAX_RECORDS {
        if let Ok(meta) = file.metadata() {
            if meta.len() / ORACLE_GENERAL_RECORD as u64 > MAX_RECORDS {
                return Err(too_many(path));
            }
        }
    }
    // oracleGeneral is read in large chunks of whole records already.
    let cap = match format {
        TraceFormat::OracleGeneral => 0,
        TraceFormat::Csv => 1 << 20,
    };
    let r = BufReader::with_capacity(cap, file);
    read_trace_from(path, r, format, limit, visit)
}

/// [`read_trace`] over any reader; `path` names it in errors. A file's size is not known
/// here, so an oracleGeneral trace of too many records fails when its record
/// [`MAX_RECORDS`] + 1 is read rather than at once.
pub fn read_trace_from(
    path: &str,
    reader: impl BufRead,
    format: TraceFormat,
    limit: Option<u64>,
    mut visit: impl FnMut(TraceRecord),
) -> Result<u64, String> {
    let limit = limit.unwrap_or(u64::MAX);
    match format {
        TraceFormat::OracleGeneral => read_oracle_general(path, reader, limit, &mut visit),
        TraceFormat::Csv => read_csv(path, reader, limit, &mut visit),
    }
}

fn too_many(path: &str) -> String {
    format!("{path}: more than {MAX_RECORDS} records (use --limit to replay a prefix)")
}

fn read_oracle_general(
    path: &str,
    mut r: impl BufRead,
    limit: u64,
    visit: &mut impl FnMut(TraceRecord),
) -> Result<u64, String> {
    // Whole records are read a chunk at a time and parsed from the chunk: a record costs
    // no call into the reader.
    let mut buf = vec![0u8; ORACLE_GENERAL_RECORD * RECORDS_PER_CHUNK];
    let mut n = 0u64;
    while n < limit {
        let want = (limit - n).min(RECORDS_PER_CHUNK as u64) as usize * ORACLE_GENERAL_RECORD;
        let got = fill(&mut r, &mut buf[..want]).map_err(|e| format!("{path}: read error: {e}"))?;
        if got == 0 {
            break;
        }
        if n == 0 && got >= 4 && buf[..4] == [0x28, 0xb5, 0x2f, 0xfd] {
            return Err(format!(
                "{path}: zstd-compressed; decompress it first (zstd -d)"
            ));
        }
        let whole = got - got % ORACLE_GENERAL_RECORD;
        for rec in buf[..whole].chunks_exact(ORACLE_GENERAL_RECORD) {
            if n == MAX_RECORDS {
                return Err(too_many(path));
            }
            let ts = u32::from_le_bytes(rec[0..4].try_into().expect("4 bytes"));
            let obj_id = u64::from_le_bytes(rec[4..12].try_into().expect("8 bytes"));
            let size = u32::from_le_bytes(rec[12..16].try_into().expect("4 bytes"));
            visit(TraceRecord {
                time: ts as f64,
                obj_id,
                size: size as u64,
                op: None,
            });
            n += 1;
        }
        if whole < got {
            // fill() stops short only at the end of the file.
            return Err(format!(
                "{path}: record {}: truncated ({} of {ORACLE_GENERAL_RECORD} bytes)",
                n + 1,
                got - whole
            ));
        }
        if got < want {
            break;
        }
    }
    Ok(n)
}

fn read_csv(
    path: &str,
    mut r: impl BufRead,
    limit: u64,
    visit: &mut impl FnMut(TraceRecord),
) -> Result<u64, String> {
    let mut line = String::new();
    let mut lineno = 0u64;
    let mut n = 0u64;
    let mut seen_data = false;
    while n < limit {
        line.clear();
        lineno += 1;
        let got = r.read_line(&mut line).map_err(|e| {
            if e.kind() == std::io::ErrorKind::InvalidData {
                format!("{path}:{lineno}: not UTF-8 text")
            } else {
                format!("{path}: read error: {e}")
            }
        })?;
        if got == 0 {
            break;
        }
        let text = line.trim();
        if text.is_empty() || text.starts_with('#') {
            continue;
        }
        let fields: Vec<&str> = text.split(',').map(str::trim).collect();
        if !seen_data {
            seen_data = true;
            if fields[0].parse::<f64>().is_err() {
                continue;
            }
        }
        let bad = |what: &str, v: &str| format!("{path}:{lineno}: bad {what} '{v}'");
        if fields.len() < 2 {
            return Err(format!("{path}:{lineno}: missing obj_id"));
        }
        if fields.len() > 4 {
            return Err(format!(
                "{path}:{lineno}: {} columns (expected time,obj_id[,size[,op]])",
                fields.len()
            ));
        }
        let time = fields[0]
            .parse::<f64>()
            .ok()
            .filter(|t| t.is_finite() && *t >= 0.0)
            .ok_or_else(|| bad("time", fields[0]))?;
        let obj_id = fields[1]
            .parse::<u64>()
            .map_err(|_| bad("obj_id", fields[1]))?;
        let size = match fields.get(2) {
            None | Some(&"") => PAGE_SIZE,
            Some(s) => s.parse::<u64>().map_err(|_| bad("size", s))?,
        };
        let op = match fields.get(3).map(|s| s.to_ascii_lowercase()) {
            None => None,
            Some(s) if s.is_empty() => None,
            Some(s) if s == "r" || s == "read" => Some(TraceOp::Read),
            Some(s) if s == "w" || s == "write" => Some(TraceOp::Write),
            Some(_) => {
                return Err(format!(
                    "{path}:{lineno}: bad op '{}' (expected r or w)",
                    fields[3]
                ))
            }
        };
        if n == MAX_RECORDS {
            return Err(too_many(path));
        }
        visit(TraceRecord {
            time,
            obj_id,
            size,
            op,
        });
        n += 1;
    }
    Ok(n)
}

pub(crate) const SPEC: Spec = Spec {
    flags: &["--hold"],
    options: &["--format", "--region", "--file", "--limit", "--speed"],
    positional: &["FILE"],
    required: 1,
};

const WRITE_BIT: u64 = 1 << 31;

pub(crate) fn build(args: &[String]) -> Result<Box<dyn Program>, String> {
    let a = parse("trace", args, &SPEC)?;
    let path = a.positional(0).expect("required").to_string();
    let format = match a.choice("--format", &["oraclegeneral", "csv"], "auto")? {
        "csv" => TraceFormat::Csv,
        "oraclegeneral" => TraceFormat::OracleGeneral,
        _ => TraceFormat::for_path(&path),
    };
    let region = a.size("--region", 1 << 30, PAGE_SIZE, MAX_SIZE)?;
    let region_pages = region / PAGE_SIZE;
    let limit = match a.value("--limit") {
        Some(_) => Some(a.count("--limit", 0, 1, MAX_RECORDS)?),
        None => None,
    };
    let speed = match a.value("--speed") {
        Some(_) => Some(a.float("--speed", 1.0, 0.0, true, 1e9)?),
        None => None,
    };
    let file = a.string("--file");
    let default_write = file.is_none();
    // The records an oracleGeneral file holds, reserved at once.
    let expect = match format {
        TraceFormat::OracleGeneral => std::fs::metadata(&path)
            .map(|m| m.len() / ORACLE_GENERAL_RECORD as u64)
            .unwrap_or(0)
            .min(limit.unwrap_or(MAX_RECORDS))
            .min(MAX_RECORDS) as usize,
        TraceFormat::Csv => 0,
    };
    let mut recs = Vec::with_capacity(expect);
    let mut times = speed.map(|_| Vec::with_capacity(expect));
    read_trace(&path, format, limit, |r| {
        let npages = r.size.div_ceil(PAGE_SIZE).clamp(1, region_pages);
        let write = match r.op {
            Some(op) => op == TraceOp::Write,
            None => default_write,
        };
        let start = object_start_page(r.obj_id, region_pages);
        recs.push((start << 32) | if write { WRITE_BIT } else { 0 } | npages);
        if let Some(t) = times.as_mut() {
            t.push(r.time);
        }
    })
    .map_err(|e| format!("trace: {e}"))?;
    let clock = times
        .as_ref()
        .and_then(|t| t.first().copied())
        .unwrap_or(0.0);
    Ok(Box::new(TraceReplay {
        recs,
        times,
        speed: speed.unwrap_or(1.0),
        clock,
        region: Region::new(region_pages, file),
        hold: a.flag("--hold"),
        idx: 0,
        off: 0,
    }))
}

pub struct TraceReplay {
    /// start page << 32 | WRITE_BIT | pages.
    recs: Vec<u64>,
    /// Timestamps, when replaying at a speed.
    times: Option<Vec<f64>>,
    speed: f64,
    /// The trace time replayed up to.
    clock: f64,
    region: Region,
    hold: bool,
    /// Next record, and the next page within it.
    idx: usize,
    off: u64,
}

impl Program for TraceReplay {
    fn name(&self) -> &str {
        "trace"
    }

    fn step(&mut self, cx: &mut TaskCtx<'_>) -> Step {
        if let Err(s) = self.region.setup(cx) {
            return s;
        }
        let mut budget = Budget::new();
        while self.idx < self.recs.len() {
            if self.off == 0 {
                if let Some(times) = &self.times {
                    let t = times[self.idx];
                    if t > self.clock {
                        let ns = (t - self.clock) / self.speed * 1e9;
                        self.clock = t;
                        if ns >= 1.0 {
                            return Step::Sleep(ns.min(1e18) as u64);
                        }
                    }
                }
            }
            if self.off == 0 {
                // The trace is known ahead: load what the records a few steps on will need.
                for (stage, ahead) in PREFETCH_AHEAD.iter().enumerate() {
                    if let Some(&r) = self.recs.get(self.idx + ahead) {
                        // A record's start page is already within the region.
                        self.region.prefetch(cx, r >> 32, stage as u8);
                    }
                }
            }
            let rec = self.recs[self.idx];
            let start = rec >> 32;
            let npages = rec & (WRITE_BIT - 1);
            // start < pages and off < npages <= pages: (start + off) % pages.
            let mut page = start + self.off;
            if page >= self.region.pages {
                page -= self.region.pages;
            }
            if let Err(e) = self.region.access(cx, page, rec & WRITE_BIT != 0) {
                return fault_step(e);
            }
            self.off += 1;
            if self.off == npages {
                self.idx += 1;
                self.off = 0;
            }
            if budget.spent(cx) && self.idx < self.recs.len() {
                return Step::Continue;
            }
        }
        if self.hold {
            return Step::Hold;
        }
        self.region.release(cx);
        Step::Exit(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(name: &str, data: &[u8]) -> String {
        let p =
            std::env::temp_dir().join(format!("memcgsim-workloads-{}-{name}", std::process::id()));
        std::fs::write(&p, data).unwrap();
        p.to_string_lossy().into_owned()
    }

    fn og(records: &[(u32, u64, u32, i64)]) -> Vec<u8> {
        let mut v = Vec::new();
        for &(t, id, size, next) in records {
            v.extend_from_slice(&t.to_le_bytes());
            v.extend_from_slice(&id.to_le_bytes());
            v.extend_from_slice(&size.to_le_bytes());
            v.extend_from_slice(&next.to_le_bytes());
        }
        v
    }

    fn collect(path: &str, f: TraceFormat, limit: Option<u64>) -> Result<Vec<TraceRecord>, String> {
        let mut v = Vec::new();
        let n = read_trace(path, f, limit, |r| v.push(r))?;
        assert_eq!(n as usize, v.len());
        Ok(v)
    }

    #[test]
    fn oracle_general_records_parse() {
        let p = temp(
            "a.oracleGeneral.bin",
            &og(&[(5, 1, 4096, 3), (5, u64::MAX, 10_000, -1), (9, 1, 0, -1)]),
        );
        assert_eq!(TraceFormat::for_path(&p), TraceFormat::OracleGeneral);
        let v = collect(&p, TraceFormat::OracleGeneral, None).unwrap();
        assert_eq!(
            v,
            vec![
                TraceRecord {
                    time: 5.0,
                    obj_id: 1,
                    size: 4096,
                    op: None
                },
                TraceRecord {
                    time: 5.0,
                    obj_id: u64::MAX,
                    size: 10_000,
                    op: None
                },
                TraceRecord {
                    time: 9.0,
                    obj_id: 1,
                    size: 0,
                    op: None
                },
            ]
        );
        assert_eq!(
            collect(&p, TraceFormat::OracleGeneral, Some(2))
                .unwrap()
                .len(),
            2
        );
        std::fs::remove_file(&p).unwrap();
    }

    #[test]
    fn truncated_binary_record_is_an_error() {
        let mut data = og(&[(1, 2, 3, 4), (5, 6, 7, 8)]);
        data.truncate(24 + 10);
        let p = temp("trunc.bin", &data);
        let e = collect(&p, TraceFormat::OracleGeneral, None).unwrap_err();
        assert_eq!(e, format!("{p}: record 2: truncated (10 of 24 bytes)"));
        // A limit that stops before the bad record reads fine.
        assert_eq!(
            collect(&p, TraceFormat::OracleGeneral, Some(1))
                .unwrap()
                .len(),
            1
        );
        std::fs::remove_file(&p).unwrap();
        let p = temp("z.zst", &[0x28, 0xb5, 0x2f, 0xfd, 0, 0, 0, 0]);
        assert!(collect(&p, TraceFormat::OracleGeneral, None)
            .unwrap_err()
            .contains("zstd-compressed"));
        std::fs::remove_file(&p).unwrap();
        let e = collect("/nonexistent/x.bin", TraceFormat::OracleGeneral, None).unwrap_err();
        assert!(e.starts_with("/nonexistent/x.bin: cannot open"), "{e}");
    }

    #[test]
    fn records_across_chunks_parse() {
        let n = RECORDS_PER_CHUNK * 2 + 5;
        let recs: Vec<_> = (0..n as u64)
            .map(|i| ((i / 7) as u32, i * 3, 4096, -1))
            .collect();
        let mut data = og(&recs);
        let p = temp("chunks.oracleGeneral", &data);
        let v = collect(&p, TraceFormat::OracleGeneral, None).unwrap();
        assert_eq!(v.len(), n);
        for (i, r) in v.iter().enumerate() {
            assert_eq!(
                (r.time, r.obj_id),
                ((i / 7) as f64, i as u64 * 3),
                "record {i}"
            );
        }
        let cut = RECORDS_PER_CHUNK as u64 + 1;
        assert_eq!(
            collect(&p, TraceFormat::OracleGeneral, Some(cut))
                .unwrap()
                .len() as u64,
            cut
        );
        // A record cut short in the last chunk, and one ending a full chunk.
        data.truncate(data.len() - 3);
        std::fs::write(&p, &data).unwrap();
        let e = collect(&p, TraceFormat::OracleGeneral, None).unwrap_err();
        assert_eq!(e, format!("{p}: record {n}: truncated (21 of 24 bytes)"));
        data.truncate(RECORDS_PER_CHUNK * ORACLE_GENERAL_RECORD + 10);
        std::fs::write(&p, &data).unwrap();
        let e = collect(&p, TraceFormat::OracleGeneral, None).unwrap_err();
        assert_eq!(
            e,
            format!(
                "{p}: record {}: truncated (10 of 24 bytes)",
                RECORDS_PER_CHUNK + 1
            )
        );
        std::fs::remove_file(&p).unwrap();
    }

    #[test]
    fn csv_records_parse() {
        let p = temp(
            "ok.csv",
            b"time,obj_id,size,op\n# a comment\n\n1,10\n2.5, 11 ,8192,w\r\n3,12,100,R\n4,13,,\n",
        );
        assert_eq!(TraceFormat::for_path(&p), TraceFormat::Csv);
        let v = collect(&p, TraceFormat::Csv, None).unwrap();
        let r = |time, obj_id, size, op| TraceRecord {
            time,
            obj_id,
            size,
            op,
        };
        assert_eq!(
            v,
            vec![
                r(1.0, 10, 4096, None),
                r(2.5, 11, 8192, Some(TraceOp::Write)),
                r(3.0, 12, 100, Some(TraceOp::Read)),
                r(4.0, 13, 4096, None),
            ]
        );
        // No header: the first line is data.
        let p2 = temp("nohdr.csv", b"0,1\n0,2\n");
        assert_eq!(collect(&p2, TraceFormat::Csv, None).unwrap().len(), 2);
        assert_eq!(collect(&p, TraceFormat::Csv, Some(3)).unwrap().len(), 3);
        std::fs::remove_file(&p).unwrap();
        std::fs::remove_file(&p2).unwrap();
    }

    #[test]
    fn readers_take_any_reader() {
        let mut v = Vec::new();
        let n = read_trace_from(
            "mem.csv",
            &b"t,id\n1,7\n2,8,0,r\n"[..],
            TraceFormat::Csv,
            None,
            |r| v.push(r),
        )
        .unwrap();
        assert_eq!(n, 2);
        assert_eq!(
            (v[1].obj_id, v[1].size, v[1].op),
            (8, 0, Some(TraceOp::Read))
        );
        let data = og(&[(1, 5, 4096, -1), (2, 6, 100, -1), (3, 7, 1, -1)]);
        let n = read_trace_from(
            "mem",
            &data[..],
            TraceFormat::OracleGeneral,
            Some(2),
            |_| {},
        )
        .unwrap();
        assert_eq!(n, 2);
        let e = read_trace_from("mem", &data[..30], TraceFormat::OracleGeneral, None, |_| {})
            .unwrap_err();
        assert_eq!(e, "mem: record 2: truncated (6 of 24 bytes)");
    }

    #[test]
    fn csv_errors_name_the_line() {
        let cases: &[(&[u8], &str)] = &[
            (b"time,obj\n1,2\n1,x\n", ":3: bad obj_id 'x'"),
            (b"1,2\nx,2\n", ":2: bad time 'x'"),
            (b"1,2\n-1,2\n", ":2: bad time '-1'"),
            (b"# c\n1,2,big\n", ":2: bad size 'big'"),
            (b"1,2,4096,q\n", ":1: bad op 'q' (expected r or w)"),
            (b"1\n", ":1: missing obj_id"),
            (
                b"1,2,3,r,5\n",
                ":1: 5 columns (expected time,obj_id[,size[,op]])",
            ),
            (b"1,2\n\xff\xfe\n", ":2: not UTF-8 text"),
        ];
        for (i, (data, want)) in cases.iter().enumerate() {
            let p = temp(&format!("bad{i}.csv"), data);
            let e = collect(&p, TraceFormat::Csv, None).unwrap_err();
            assert_eq!(e, format!("{p}{want}"));
            std::fs::remove_file(&p).unwrap();
        }
    }

    #[test]
    fn objects_map_into_the_region() {
        for id in 0..1000 {
            assert!(object_start_page(id, 77) < 77);
        }
        assert_eq!(object_start_page(5, 1), 0);
        assert_ne!(object_start_page(1, 1 << 20), object_start_page(2, 1 << 20));
    }

    #[test]
    fn inverse_ids_put_one_object_on_each_page() {
        for r in [1u64, 77, 256, 1 << 28] {
            for p in (0..r).step_by((r / 50).max(1) as usize) {
                assert_eq!(object_start_page(object_id_for_page(p), r), p);
            }
        }
    }
}
