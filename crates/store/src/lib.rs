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

/// Successful, non-warm-up runs' values, in run order (the store's schema, `store/schema.py`).
const MEASURED: &str = "SELECT r.cell_key, r.variant, r.block, m.name, m.value FROM runs r \
     JOIN metrics m ON m.run_id = r.id \
     WHERE r.experiment_id=?1 AND r.status='ok' AND r.warmup=0 ORDER BY r.order_index";

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
pub fn read_grouped(db: &Connection, experiment_id: i64) -> Result<Grouped, StoreError> {
    let mut stmt = db.prepare(MEASURED)?;
    let mut rows = stmt.query([experiment_id])?;
    // Each text is looked up by &str (no allocation per row) and numbered once; a group is
    // keyed by the three numbers. Rows of one group are scattered through run order:
    // collected per group, then laid out one after another.
    let (mut cells, mut variants, mut metrics) = (Names::default(), Names::default(), Names::default());
    let mut index: HashMap<(u32, u32, u32), usize> = HashMap::new();
    let mut groups: Vec<(Vec<f64>, Vec<i64>)> = Vec::new();
    let mut keys: Vec<(String, String, String)> = Vec::new();
    let mut total = 0usize;
    while let Some(row) = rows.next()? {
        let cell = row.get_ref(0)?.as_str().map_err(rusqlite::Error::from)?;
        let variant = row.get_ref(1)?.as_str().map_err(rusqlite::Error::from)?;
        let metric = row.get_ref(3)?.as_str().map_err(rusqlite::Error::from)?;
        let id = (cells.number(cell), variants.number(variant), metrics.number(metric));
        let g = *index.entry(id).or_insert_with(|| {
            keys.push((cell.to_string(), variant.to_string(), metric.to_string()));
            groups.push((Vec::new(), Vec::new()));
            groups.len() - 1
        });
        groups[g].0.push(row.get(4)?);
        groups[g].1.push(row.get(2)?);
        total += 1;
    }
    let mut out = Grouped {
        keys,
        offsets: Vec::with_capacity(groups.len() + 1),
        values: Vec::with_capacity(total),
        blocks: Vec::with_capacity(total),
    };
    out.offsets.push(0);
    for (values, blocks) in groups {
        out.values.extend(values);
        out.blocks.extend(blocks);
        out.offsets.push(out.values.len());
    }
    Ok(out)
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

/// `cells_and_variants` on an open connection.
pub fn read_cells_and_variants(db: &Connection, experiment_id: i64) -> Result<RunsOverview, StoreError> {
    let mut stmt =
        db.prepare("SELECT cell_key, variant, cell, status FROM runs WHERE experiment_id=?1 ORDER BY order_index")?;
    let mut rows = stmt.query([experiment_id])?;
    let (mut cells, mut variants) = (Names::default(), Names::default());
    let mut seen: HashSet<(u32, u32)> = HashSet::new();
    let mut out = RunsOverview::default();
    let mut counts: std::collections::BTreeMap<String, i64> = std::collections::BTreeMap::new();
    while let Some(row) = rows.next()? {
        let cell = row.get_ref(0)?.as_str().map_err(rusqlite::Error::from)?;
        let variant = row.get_ref(1)?.as_str().map_err(rusqlite::Error::from)?;
        let id = (cells.number(cell), variants.number(variant));
        if seen.insert(id) {
            let labels = row.get_ref(2)?.as_str().map_err(rusqlite::Error::from)?;
            out.cells.push((cell.to_string(), labels.to_string(), variant.to_string()));
        }
        let status = row.get_ref(3)?.as_str().map_err(rusqlite::Error::from)?;
        match counts.get_mut(status) {
            Some(n) => *n += 1,
            None => {
                counts.insert(status.to_string(), 1);
            }
        }
    }
    out.status_counts = counts.into_iter().collect();
    Ok(out)
}

/// Texts numbered in order of first sight.
#[derive(Default)]
struct Names(HashMap<String, u32>);

impl Names {
    fn number(&mut self, name: &str) -> u32 {
        if let Some(&n) = self.0.get(name) {
            return n;
        }
        let n = self.0.len() as u32;
        self.0.insert(name.to_string(), n);
        n
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
