//! Aligned plain-text tables: left-aligned text, right-aligned numbers.

/// An aligned plain-text table: a header row and rows of cells.
pub struct TextTable {
    head: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl TextTable {
    /// An empty table with these column heads.
    pub fn new(head: &[&str]) -> TextTable {
        TextTable {
            head: head.iter().map(|s| s.to_string()).collect(),
            rows: Vec::new(),
        }
    }

    /// Add a row (one cell per column).
    pub fn row(&mut self, cells: Vec<String>) {
        debug_assert_eq!(cells.len(), self.head.len());
        self.rows.push(cells);
    }

    /// The table as text, columns padded to their widest cell.
    pub fn render(&self) -> String {
        let w: Vec<usize> = (0..self.head.len())
            .map(|c| {
                self.rows
                    .iter()
                    .map(|r| r[c].len())
                    .chain([self.head[c].len()])
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        // A column is numeric when every cell starts with a digit or '-'.
        let numeric: Vec<bool> = (0..self.head.len())
            .map(|c| {
                !self.rows.is_empty()
                    && self
                        .rows
                        .iter()
                        .all(|r| r[c].starts_with(|ch: char| ch.is_ascii_digit() || ch == '-'))
            })
            .collect();
        let mut out = String::new();
        for line in std::iter::once(&self.head).chain(self.rows.iter()) {
            let cells: Vec<String> = line
                .iter()
                .enumerate()
                .map(|(c, s)| {
                    if numeric[c] {
                        format!("{s:>0$}", w[c])
                    } else {
                        format!("{s:<0$}", w[c])
                    }
                })
                .collect();
            out.push_str(cells.join("  ").trim_end());
            out.push('\n');
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_align() {
        let mut t = TextTable::new(&["name", "n"]);
        t.row(vec!["a".into(), "10".into()]);
        t.row(vec!["long".into(), "7".into()]);
        assert_eq!(t.render(), "name   n\na     10\nlong   7\n");
    }
}
