//! The one hot read of perflab's results store: every measured value of an experiment,
//! grouped by (cell, variant, metric) in run order.
//!
//! Python's `sqlite3` makes a tuple and five objects per value; for an 80,000-run
//! experiment (160,000 values) that, and grouping them in Python, cost more than the
//! statistics. Here the rows are read and grouped without an object per value.
use rusqlite::{Connection, OpenFlags};
use std::collections::{HashMap, HashSet};

/// The measured values of one experiment, grouped. Group `g` holds
/// `values[offsets[g]..offsets[g + 1]]` (and the same range of `blocks`), in run order;
/// groups are in the order of their first run.
#[derive(Debug, Default, PartialEq)]
pub struct Grouped {
    pub keys: Vec<(String, String, String)>,
    pub offsets: Vec<usize>,
    pub values: Vec<f64>,
    pub blocks: Vec<i64>,
}

impl Grouped {
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// (values, blocks) of group `g`.
    pub fn group(&self, g: usize) -> (&[f64], &[i64]) {
        let (a, b) = (self.offsets[g], self.offsets[g + 1]);
        (&self.values[a..b], &self.blocks[a..b])
    }
}

/// An SQLite error: its result-code name (`SQLITE_CORRUPT`, …) and message.
#[derive(Debug, PartialEq)]
pub struct StoreError {
    pub code_name: String,
    pub message: String,
}

impl From<rusqlite::Error> for StoreError {
    fn from(e: rusqlite::Error) -> Self {
        let code_name = match &e {
            rusqlite::Error::SqliteFailure(f, _) => code_name(f.extended_code),
            _ => "SQLITE_ERROR".to_string(),
        };
        let message = match &e {
            rusqlite::Error::SqliteFailure(f, Some(m)) if !m.is_empty() => m.clone(),
            rusqlite::Error::SqliteFailure(f, _) => f.to_string(),
            other => other.to_string(),
        };
        StoreError { code_name, message }
    }
}

/// SQLite's name for a (primary) result code, as Python's `sqlite3` reports it in
/// `sqlite_errorname` (the callers word errors by it).
fn code_name(extended: i32) -> String {
    let primary = match extended & 0xff {
        1 => "SQLITE_ERROR",
        2 => "SQLITE_INTERNAL",
        3 => "SQLITE_PERM",
        4 => "SQLITE_ABORT",
        5 => "SQLITE_BUSY",
        6 => "SQLITE_LOCKED",
        7 => "SQLITE_NOMEM",
        8 => "SQLITE_READONLY",
        9 => "SQLITE_INTERRUPT",
        10 => "SQLITE_IOERR",
        11 => "SQLITE_CORRUPT",
        12 => "SQLITE_NOTFOUND",
        13 => "SQLITE_FULL",
        14 => "SQLITE_CANTOPEN",
        15 => "SQLITE_PROTOCOL",
        17 => "SQLITE_SCHEMA",
        18 => "SQLITE_TOOBIG",
        19 => "SQLITE_CONSTRAINT",
        20 => "SQLITE_MISMATCH",
        21 => "SQLITE_MISUSE",
        23 => "SQLITE_AUTH",
        26 => "SQLITE_NOTADB",
        _ => "SQLITE_ERROR",
    };
    primary.to_string()
}

/// Successful, non-warm-up runs, in run order (the store's schema, `store/schema.py`).
const MEASURED_RUNS: &str = "SELECT id, cell_key, variant, block FROM runs \
     WHERE experiment_id=?1 AND status='ok' AND warmup=0 ORDER BY order_index";

/// The values of the runs with ids in [?1, ?2], in the table's own order (run id, then
/// metric name): one pass over a range of the table rather than a lookup per run.
const VALUES_OF_RUNS: &str = "SELECT run_id, name, value FROM metrics WHERE run_id BETWEEN ?1 AND ?2";

/// Open the store read-only at `uri` (an SQLite `file:` URI, with the mode the caller's own
/// reading connection succeeded with) and read experiment `experiment_id`'s measured values.
pub fn measured_values(uri: &str, experiment_id: i64, busy_timeout_ms: u32) -> Result<Grouped, StoreError> {
    read_grouped(&open(uri, busy_timeout_ms)?, experiment_id)
}

fn open(uri: &str, busy_timeout_ms: u32) -> Result<Connection, StoreError> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_URI | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let db = Connection::open_with_flags(uri, flags)?;
    db.busy_timeout(std::time::Duration::from_millis(busy_timeout_ms.into()))?;
    Ok(db)
}

/// The grouping itself, on an open connection.
///
/// Two reads joined here: the runs (in run order) and then their values (one range of the
/// metrics table). The same result as joining in SQL and ordering by run, at a third of
/// the cost: SQL's join looks each run's values up in the metrics table one run at a time.
pub fn read_grouped(db: &Connection, experiment_id: i64) -> Result<Grouped, StoreError> {
    // Each text is looked up by &str (no allocation per row) and numbered once; a group is
    // keyed by the three numbers.
    let mut measured = Measured::default();
    {
        let mut stmt = db.prepare(MEASURED_RUNS)?;
        let mut rows = stmt.query([experiment_id])?;
        while let Some(row) = rows.next()? {
            let cell = row.get_ref(1)?.as_str().map_err(rusqlite::Error::from)?;
            let variant = row.get_ref(2)?.as_str().map_err(rusqlite::Error::from)?;
            measured.push(row.get(0)?, cell, variant, row.get(3)?);
        }
    }
    group_values(db, measured)
}

/// An experiment's measured runs (successful, not warm-up) in run order, as the grouping
/// reads them: each run's id, and its cell, variant (numbered) and block.
#[derive(Default)]
struct Measured {
    cells: Names,
    variants: Names,
    runs: Vec<(u32, u32, i64)>, // (cell, variant, block)
    ids: Vec<i64>,
}

impl Measured {
    fn push(&mut self, id: i64, cell: &str, variant: &str, block: i64) {
        self.ids.push(id);
        self.runs.push((self.cells.number(cell), self.variants.number(variant), block));
    }
}

/// The values of the `measured` runs (one range of the metrics table), grouped.
fn group_values(db: &Connection, measured: Measured) -> Result<Grouped, StoreError> {
    let Measured { cells, variants, runs, ids } = measured;
    let mut metrics = Names::default();
    let position = Positions::new(&ids); // run id → its place in `runs`
    let (low, high) = (ids.iter().min().copied().unwrap_or(0), ids.iter().max().copied().unwrap_or(-1));
    // (run's place, metric, value), then laid out in run order (a counting sort: stable, so
    // each run's values stay in metric-name order, as SQL's join gives them).
    let mut found: Vec<(u32, u32, f64)> = Vec::new();
    if !runs.is_empty() {
        let mut stmt = db.prepare(VALUES_OF_RUNS)?;
        let mut rows = stmt.query([low, high])?;
        while let Some(row) = rows.next()? {
            let Some(at) = position.get(row.get(0)?) else {
                continue; // a run of another experiment, failed or warm-up
            };
            let metric = row.get_ref(1)?.as_str().map_err(rusqlite::Error::from)?;
            found.push((at, metrics.number(metric), row.get(2)?));
        }
    }
    let mut start = vec![0usize; runs.len() + 1];
    for &(at, _, _) in &found {
        start[at as usize + 1] += 1;
    }
    for i in 0..runs.len() {
        start[i + 1] += start[i];
    }
    let mut ordered = vec![(0u32, 0.0f64); found.len()];
    for &(at, metric, value) in &found {
        ordered[start[at as usize]] = (metric, value);
        start[at as usize] += 1;
    }
    // Groups in order of their first value; rows of one group are scattered through run
    // order: collected per group, then laid out one after another.
    let (cell_names, variant_names, metric_names) = (cells.list, variants.list, metrics.list);
    let mut index: HashMap<(u32, u32, u32), usize> = HashMap::new();
    let mut groups: Vec<(Vec<f64>, Vec<i64>)> = Vec::new();
    let mut keys: Vec<(String, String, String)> = Vec::new();
    let mut next = 0usize;
    for (at, &(cell, variant, block)) in runs.iter().enumerate() {
        let end = next + (start[at] - next).min(ordered.len() - next);
        for &(metric, value) in &ordered[next..end] {
            let g = *index.entry((cell, variant, metric)).or_insert_with(|| {
                keys.push((
                    cell_names[cell as usize].clone(),
                    variant_names[variant as usize].clone(),
                    metric_names[metric as usize].clone(),
                ));
                groups.push((Vec::new(), Vec::new()));
                groups.len() - 1
            });
            groups[g].0.push(value);
            groups[g].1.push(block);
        }
        next = end;
    }
    let mut out = Grouped {
        keys,
        offsets: Vec::with_capacity(groups.len() + 1),
        values: Vec::with_capacity(ordered.len()),
        blocks: Vec::with_capacity(ordered.len()),
    };
    out.offsets.push(0);
    for (values, blocks) in groups {
        out.values.extend(values);
        out.blocks.extend(blocks);
        out.offsets.push(out.values.len());
    }
    Ok(out)
}

/// Run id → place in run order: an array over the ids' range when they are dense (an
/// experiment's runs are numbered together), else a hash map.
enum Positions {
    Dense { low: i64, at: Vec<u32> },
    Sparse(HashMap<i64, u32>),
}

impl Positions {
    const NONE: u32 = u32::MAX;

    fn new(ids: &[i64]) -> Self {
        let (Some(&low), Some(&high)) = (ids.iter().min(), ids.iter().max()) else {
            return Positions::Sparse(HashMap::new());
        };
        let span = (high - low) as u128 + 1;
        if span > 4 * ids.len() as u128 + 1024 {
            return Positions::Sparse(ids.iter().enumerate().map(|(i, &id)| (id, i as u32)).collect());
        }
        let mut at = vec![Self::NONE; span as usize];
        for (i, &id) in ids.iter().enumerate() {
            at[(id - low) as usize] = i as u32;
        }
        Positions::Dense { low, at }
    }

    fn get(&self, id: i64) -> Option<u32> {
        match self {
            Positions::Dense { low, at } => {
                let i = id.checked_sub(*low)?;
                at.get(usize::try_from(i).ok()?).copied().filter(|&p| p != Self::NONE)
            }
            Positions::Sparse(map) => map.get(&id).copied(),
        }
    }
}

/// What an experiment's runs are, whatever their status: every (cell_key, cell labels as
/// stored (JSON), variant) in order of first appearance, and how many runs have each status.
#[derive(Debug, Default, PartialEq)]
pub struct RunsOverview {
    pub cells: Vec<(String, String, String)>,
    /// (status, runs), by status in byte order (as SQL's GROUP BY status gives them).
    pub status_counts: Vec<(String, i64)>,
}

pub fn cells_and_variants(uri: &str, experiment_id: i64, busy_timeout_ms: u32) -> Result<RunsOverview, StoreError> {
    read_cells_and_variants(&open(uri, busy_timeout_ms)?, experiment_id)
}

/// `measured_values` and `cells_and_variants` of one experiment in one pass over its runs
/// (and one over their values): what a command that reads both pays once.
pub fn experiment_values(
    uri: &str,
    experiment_id: i64,
    busy_timeout_ms: u32,
) -> Result<(Grouped, RunsOverview), StoreError> {
    read_experiment_values(&open(uri, busy_timeout_ms)?, experiment_id)
}

/// `experiment_values` on an open connection.
pub fn read_experiment_values(db: &Connection, experiment_id: i64) -> Result<(Grouped, RunsOverview), StoreError> {
    let mut measured = Measured::default();
    let overview = scan_runs(db, experiment_id, Some(&mut measured))?;
    Ok((group_values(db, measured)?, overview))
}

/// `cells_and_variants` on an open connection.
pub fn read_cells_and_variants(db: &Connection, experiment_id: i64) -> Result<RunsOverview, StoreError> {
    scan_runs(db, experiment_id, None)
}

/// One pass over an experiment's runs in order: the overview, and the measured runs (ok,
/// not warm-up) into ``measured`` when given.
fn scan_runs(
    db: &Connection,
    experiment_id: i64,
    mut measured: Option<&mut Measured>,
) -> Result<RunsOverview, StoreError> {
    let mut stmt = db.prepare(
        "SELECT id, cell_key, variant, block, cell, status, warmup FROM runs WHERE experiment_id=?1 \
         ORDER BY order_index",
    )?;
    let mut rows = stmt.query([experiment_id])?;
    let mut overview = Overview::default();
    while let Some(row) = rows.next()? {
        let cell = row.get_ref(1)?.as_str().map_err(rusqlite::Error::from)?;
        let variant = row.get_ref(2)?.as_str().map_err(rusqlite::Error::from)?;
        let status = row.get_ref(5)?.as_str().map_err(rusqlite::Error::from)?;
        overview.count(cell, variant, status, || {
            Ok(row.get_ref(4)?.as_str().map_err(rusqlite::Error::from)?.to_string())
        })?;
        if let Some(m) = measured.as_deref_mut() {
            if status == "ok" && row.get::<_, i64>(6)? == 0 {
                m.push(row.get(0)?, cell, variant, row.get(3)?);
            }
        }
    }
    Ok(overview.finish())
}

/// `RunsOverview` as the runs are read: each (cell, variant) at first sight, the statuses counted.
#[derive(Default)]
struct Overview {
    cells: Names,
    variants: Names,
    seen: HashSet<(u32, u32)>,
    out: RunsOverview,
    counts: std::collections::BTreeMap<String, i64>,
}

impl Overview {
    /// One run; `labels` (its cell's labels as stored) is read only for a new (cell, variant).
    fn count(
        &mut self,
        cell: &str,
        variant: &str,
        status: &str,
        labels: impl FnOnce() -> Result<String, StoreError>,
    ) -> Result<(), StoreError> {
        let id = (self.cells.number(cell), self.variants.number(variant));
        if self.seen.insert(id) {
            self.out.cells.push((cell.to_string(), labels()?, variant.to_string()));
        }
        match self.counts.get_mut(status) {
            Some(n) => *n += 1,
            None => {
                self.counts.insert(status.to_string(), 1);
            }
        }
        Ok(())
    }

    fn finish(mut self) -> RunsOverview {
        self.out.status_counts = self.counts.into_iter().collect();
        self.out
    }
}

/// Texts numbered in order of first sight. Rows come in runs of the same text (a cell's
/// runs, a run's few metrics): the last text seen, and a short list, are checked before
/// the hash map.
#[derive(Default)]
struct Names {
    list: Vec<String>,
    map: HashMap<String, u32>,
    last: u32,
}

impl Names {
    fn number(&mut self, name: &str) -> u32 {
        if self.list.get(self.last as usize).is_some_and(|x| x == name) {
            return self.last;
        }
        let known = if self.list.len() <= 8 {
            self.list.iter().position(|x| x == name).map(|n| n as u32)
        } else {
            self.map.get(name).copied()
        };
        self.last = known.unwrap_or_else(|| {
            let n = self.list.len() as u32;
            self.list.push(name.to_string());
            self.map.insert(name.to_string(), n);
            n
        });
        self.last
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store() -> Connection {
        let db = Connection::open_in_memory().unwrap();
        db.execute_batch(
            "CREATE TABLE runs (id INTEGER PRIMARY KEY, experiment_id INTEGER, order_index INTEGER,
                 block INTEGER, cell_key TEXT, variant TEXT, warmup INTEGER, status TEXT, cell TEXT);
             CREATE TABLE metrics (run_id INTEGER, name TEXT, value REAL, PRIMARY KEY (run_id, name));",
        )
        .unwrap();
        db
    }

    /// (id, experiment, order, cell, variant, warm-up, status)
    type Run<'a> = (i64, i64, i64, &'a str, &'a str, i64, &'a str);

    fn run(db: &Connection, (id, exp, order, cell, variant, warmup, status): Run<'_>) {
        db.execute(
            "INSERT INTO runs (id, experiment_id, order_index, block, cell_key, variant, warmup, status) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            rusqlite::params![id, exp, order, order / 2, cell, variant, warmup, status],
        )
        .unwrap();
    }

    fn value(db: &Connection, run: i64, name: &str, v: f64) {
        db.execute("INSERT INTO metrics VALUES (?1, ?2, ?3)", rusqlite::params![run, name, v]).unwrap();
    }

    #[test]
    fn groups_in_run_order_skipping_failed_warmup_and_other_experiments() {
        let db = store();
        // inserted out of run order: the read orders by order_index
        run(&db, (1, 1, 3, "c1", "b", 0, "ok"));
        run(&db, (2, 1, 0, "c1", "a", 0, "ok"));
        run(&db, (3, 1, 1, "c1", "b", 0, "ok"));
        run(&db, (4, 1, 2, "c1", "a", 1, "ok")); // warm-up
        run(&db, (5, 1, 4, "c1", "a", 0, "failed"));
        run(&db, (6, 2, 0, "c1", "a", 0, "ok")); // another experiment
        run(&db, (7, 1, 5, "c2", "a", 0, "ok"));
        for (r, v) in [(1, 4.0), (2, 1.0), (3, 3.0), (4, 99.0), (5, 98.0), (6, 97.0), (7, -2.5e-300)] {
            value(&db, r, "t", v);
        }
        value(&db, 2, "u", 10.0);
        let g = read_grouped(&db, 1).unwrap();
        let keys: Vec<(&str, &str, &str)> =
            g.keys.iter().map(|(a, b, c)| (a.as_str(), b.as_str(), c.as_str())).collect();
        assert_eq!(keys, vec![("c1", "a", "t"), ("c1", "a", "u"), ("c1", "b", "t"), ("c2", "a", "t")]);
        assert_eq!(g.group(0), (&[1.0][..], &[0i64][..]));
        assert_eq!(g.group(1), (&[10.0][..], &[0i64][..]));
        assert_eq!(g.group(2), (&[3.0, 4.0][..], &[0i64, 1][..]));
        assert_eq!(g.group(3), (&[-2.5e-300][..], &[2i64][..]));
        assert_eq!(g.values.len(), 5);
    }

    #[test]
    fn the_read_of_both_is_each_read_alone() {
        let db = store();
        let mut id = 0;
        for (exp, cell, variant, warmup, status) in [
            (1, "c2", "a", 0, "failed"),
            (1, "c1", "b", 1, "ok"),
            (1, "c1", "a", 0, "pending"),
            (1, "c1", "b", 0, "ok"),
            (2, "c9", "a", 0, "ok"),
            (1, "c2", "a", 0, "ok"),
            (1, "c1", "a", 0, "ok"),
            (1, "c2", "b", 0, "timeout"),
            (1, "c1", "b", 0, "ok"),
        ] {
            id += 1;
            run(&db, (id, exp, 100 - id, cell, variant, warmup, status));
            value(&db, id, "t", id as f64 / 3.0);
            if id % 2 == 0 {
                value(&db, id, "u", -(id as f64));
            }
        }
        db.execute_batch("UPDATE runs SET cell = '{\"n\": \"' || cell_key || '\"}'").unwrap();
        for exp in [1, 2, 3] {
            let (grouped, overview) = read_experiment_values(&db, exp).unwrap();
            assert_eq!(grouped, read_grouped(&db, exp).unwrap());
            assert_eq!(overview, read_cells_and_variants(&db, exp).unwrap());
        }
        assert_eq!(read_experiment_values(&db, 1).unwrap().0.len(), 5); // (c1 b, c2 a: t and u; c1 a: t)
    }

    #[test]
    fn cells_and_variants_of_every_run_in_order_of_first_appearance() {
        let db = store();
        run(&db, (1, 1, 2, "c2", "a", 0, "failed"));
        run(&db, (2, 1, 0, "c1", "b", 1, "ok"));
        run(&db, (3, 1, 1, "c1", "a", 0, "pending"));
        run(&db, (4, 1, 3, "c1", "b", 0, "ok"));
        run(&db, (5, 2, 0, "c9", "a", 0, "ok"));
        db.execute_batch("UPDATE runs SET cell = '{\"n\": \"' || cell_key || '\"}'").unwrap();
        let got = read_cells_and_variants(&db, 1).unwrap();
        let want = [("c1", "{\"n\": \"c1\"}", "b"), ("c1", "{\"n\": \"c1\"}", "a"), ("c2", "{\"n\": \"c2\"}", "a")];
        let want: Vec<(String, String, String)> =
            want.iter().map(|(a, b, c)| (a.to_string(), b.to_string(), c.to_string())).collect();
        assert_eq!(got.cells, want);
        // every status of experiment 1's runs, warm-ups included, in byte order
        let counts = [("failed", 1), ("ok", 2), ("pending", 1)];
        let counts: Vec<(String, i64)> = counts.iter().map(|(s, n)| (s.to_string(), *n)).collect();
        assert_eq!(got.status_counts, counts);
    }

    #[test]
    fn runs_far_apart_and_interleaved_with_another_experiments_group_alike() {
        let db = store();
        // experiment 1's runs: ids 5, 9 and 50,000,000 (sparse), experiment 2's in between
        run(&db, (50_000_000, 1, 0, "c1", "a", 0, "ok"));
        run(&db, (9, 1, 1, "c1", "a", 0, "ok"));
        run(&db, (7, 2, 0, "c1", "a", 0, "ok"));
        run(&db, (5, 1, 2, "c1", "b", 0, "ok"));
        for (r, name, v) in
            [(50_000_000, "u", 1.0), (50_000_000, "t", 2.0), (9, "t", 3.0), (7, "t", 4.0), (5, "t", 5.0)]
        {
            value(&db, r, name, v);
        }
        let g = read_grouped(&db, 1).unwrap();
        let keys: Vec<(&str, &str, &str)> =
            g.keys.iter().map(|(a, b, c)| (a.as_str(), b.as_str(), c.as_str())).collect();
        // in run order, and within a run by metric name (t before u), as SQL's join gives
        assert_eq!(keys, vec![("c1", "a", "t"), ("c1", "a", "u"), ("c1", "b", "t")]);
        assert_eq!(g.group(0), (&[2.0, 3.0][..], &[0i64, 0][..]));
        assert_eq!(g.group(1), (&[1.0][..], &[0i64][..]));
        assert_eq!(g.group(2), (&[5.0][..], &[1i64][..]));
    }

    #[test]
    fn an_experiment_without_values_is_empty() {
        let db = store();
        assert!(read_grouped(&db, 7).unwrap().is_empty());
    }

    #[test]
    fn errors_carry_sqlites_code_name() {
        let db = Connection::open_in_memory().unwrap();
        let e = read_grouped(&db, 1).unwrap_err();
        assert_eq!(e.code_name, "SQLITE_ERROR");
        assert!(e.message.contains("no such table"), "{}", e.message);
        let missing = measured_values("file:/nonexistent/dir/x.db?mode=ro", 1, 0).unwrap_err();
        assert_eq!(missing.code_name, "SQLITE_CANTOPEN");
    }
}
