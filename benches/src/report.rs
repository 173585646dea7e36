//! What the examples that print their own figures (`load`, `store`) share: their command
//! line, a table of cells by row and column, and percentiles of sorted samples.

/// The value after `flag` on a command line (`--flag value`), if there is one.
///
/// # Example
/// ```
/// let args: Vec<String> = ["store", "--runtime", "smol"].map(String::from).into();
/// assert_eq!(ssekit_benches::report::flag_value(&args, "--runtime"), Some("smol".into()));
/// assert_eq!(ssekit_benches::report::flag_value(&args, "--quick"), None);
/// ```
pub fn flag_value(args: &[String], flag: &str) -> Option<String> {
    args.iter()
        .position(|a| a == flag)
        .and_then(|i| args.get(i + 1))
        .cloned()
}

/// Cells by row and column, rows in the order they were first set; the caller prints it.
///
/// # Example
/// ```
/// let mut table = ssekit_benches::report::Table::default();
/// table.set("calls/s", "memory", 100);
/// table.set("calls/s", "redis", 60);
/// let (row, cells) = table.rows().next().unwrap();
/// assert_eq!((row, ssekit_benches::report::cell(cells, "redis")), ("calls/s", Some(&60)));
/// ```
#[derive(Debug)]
pub struct Table<V> {
    rows: Vec<(String, Vec<(String, V)>)>,
}

impl<V> Default for Table<V> {
    fn default() -> Self {
        Table { rows: Vec::new() }
    }
}

impl<V> Table<V> {
    /// Adds `value` in `row` (new rows go last) under `column`.
    ///
    /// # Example
    /// See [`Table`].
    pub fn set(&mut self, row: &str, column: &str, value: V) {
        let at = match self.rows.iter().position(|(r, _)| r == row) {
            Some(at) => at,
            None => {
                self.rows.push((row.to_owned(), Vec::new()));
                self.rows.len() - 1
            }
        };
        if let Some((_, cells)) = self.rows.get_mut(at) {
            cells.push((column.to_owned(), value));
        }
    }

    /// Each row's name and its cells (column, value), in order.
    ///
    /// # Example
    /// See [`Table`].
    pub fn rows(&self) -> impl Iterator<Item = (&str, &[(String, V)])> {
        self.rows
            .iter()
            .map(|(row, cells)| (row.as_str(), cells.as_slice()))
    }
}

/// The value under `column` among a row's `cells`.
///
/// # Example
/// See [`Table`].
pub fn cell<'a, V>(cells: &'a [(String, V)], column: &str) -> Option<&'a V> {
    cells.iter().find(|(c, _)| c == column).map(|(_, v)| v)
}

/// The `p` quantile (0 to 1) of `sorted` (ascending), by nearest rank; NaN when empty.
///
/// # Example
/// ```
/// use ssekit_benches::report::percentile;
/// assert_eq!(percentile(&[1.0, 2.0, 3.0, 4.0, 5.0], 0.5), 3.0);
/// assert_eq!(percentile(&[1.0, 2.0, 3.0, 4.0, 5.0], 0.99), 5.0);
/// assert!(percentile(&[], 0.5).is_nan());
/// ```
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    let at = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted
        .get(at.min(sorted.len().saturating_sub(1)))
        .copied()
        .unwrap_or(f64::NAN)
}
