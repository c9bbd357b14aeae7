//! The tables commands print for machines and papers: one set of rows,
//! written as CSV (every column, full precision, fractions), Markdown or
//! LaTeX (the columns a reader needs, percentages and rounded numbers).
//!
//! Each command's human text stays its own (the answer in its first line);
//! its `--format csv|markdown|latex` goes through here, so that the three
//! forms of one command never disagree on a row.

use std::fmt::Write as _;

use crate::text::printable;

/// How a table is printed (`--format`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TableFormat {
    /// Comma-separated values (RFC 4180's quoting, lines ending in LF):
    /// every column, fractions as they are computed.
    Csv,
    /// A GitHub-flavoured Markdown table: the main columns, in percent where they are fractions.
    Markdown,
    /// A LaTeX `tabular` with booktabs rules (`\usepackage{booktabs}`): as Markdown's.
    Latex,
}

/// `--format` of the commands whose results are tables: their own text,
/// or the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Printed {
    /// Text for people, the answer in its first line.
    Human,
    Csv,
    Markdown,
    Latex,
}

impl Printed {
    pub(crate) fn table(self) -> Option<TableFormat> {
        match self {
            Printed::Human => None,
            Printed::Csv => Some(TableFormat::Csv),
            Printed::Markdown => Some(TableFormat::Markdown),
            Printed::Latex => Some(TableFormat::Latex),
        }
    }
}

/// What a cell holds, which decides how each format writes it.
#[derive(Clone, Debug)]
pub(crate) enum Cell {
    Text(String),
    /// A fraction (an accuracy, a difference of accuracies): percent in
    /// Markdown and LaTeX, with two decimals.
    Fraction(f64),
    /// A number shown with this many decimals in Markdown and LaTeX.
    Number(f64, usize),
    /// A fraction and its standard error: `55.61 ± 2.08` in percent in
    /// Markdown and LaTeX (CSV gives them columns of their own).
    Estimate(f64, Option<f64>),
    /// A p-value: three significant figures, and `< 0.001` below that.
    P(f64),
    Count(u64),
    /// Nothing to say (an undefined correlation, no cluster interval).
    Empty,
}

impl Cell {
    pub(crate) fn text(s: impl Into<String>) -> Cell {
        Cell::Text(s.into())
    }

    pub(crate) fn maybe(x: Option<f64>, decimals: usize) -> Cell {
        x.map_or(Cell::Empty, |x| Cell::Number(x, decimals))
    }

    /// The cell as CSV holds it: numbers as Rust prints them (shortest
    /// round-trip form), so a reader gets back the value computed.
    fn raw(&self) -> String {
        match self {
            Cell::Text(s) => printable(s).into_owned(),
            Cell::Fraction(x) | Cell::Number(x, _) | Cell::P(x) | Cell::Estimate(x, _) => x.to_string(),
            Cell::Count(n) => n.to_string(),
            Cell::Empty => String::new(),
        }
    }

    /// The cell as a reader of a paper reads it: a fraction in percent,
    /// its sign in the header where the whole column is of fractions
    /// (`column_percent`), else beside it.
    pub(crate) fn shown(&self, column_percent: bool) -> String {
        let sign = if column_percent { "" } else { " %" };
        match self {
            Cell::Text(s) => printable(s).into_owned(),
            Cell::Fraction(x) => format!("{:.2}{sign}", 100.0 * x),
            Cell::Estimate(x, se) => match se {
                Some(se) => format!("{:.2} ± {:.2}{sign}", 100.0 * x, 100.0 * se),
                None => format!("{:.2}{sign}", 100.0 * x),
            },
            Cell::Number(x, decimals) => format!("{x:.decimals$}"),
            Cell::P(p) if *p < 0.001 => "< 0.001".into(),
            Cell::P(p) => format!("{p:.3}"),
            Cell::Count(n) => n.to_string(),
            Cell::Empty => String::new(),
        }
    }

    fn numeric(&self) -> bool {
        !matches!(self, Cell::Text(_))
    }
}

/// A column: its CSV name, and whether Markdown and LaTeX show it.
#[derive(Clone, Debug)]
pub(crate) struct Column {
    name: String,
    brief: bool,
}

/// Rows under named columns.
#[derive(Clone, Debug, Default)]
pub(crate) struct Table {
    columns: Vec<Column>,
    rows: Vec<Vec<Cell>>,
}

impl Table {
    /// A table whose columns all show in every format.
    pub(crate) fn new<S: Into<String>>(columns: impl IntoIterator<Item = S>) -> Table {
        Table { columns: columns.into_iter().map(|name| Column { name: name.into(), brief: true }).collect(), rows: Vec::new() }
    }

    /// A table with columns that only CSV holds: `(name, shown in Markdown and LaTeX)`.
    pub(crate) fn with_detail<S: Into<String>>(columns: impl IntoIterator<Item = (S, bool)>) -> Table {
        Table { columns: columns.into_iter().map(|(name, brief)| Column { name: name.into(), brief }).collect(), rows: Vec::new() }
    }

    /// Adds a row; it holds a cell for every column (a caller's bug otherwise).
    pub(crate) fn row(&mut self, cells: Vec<Cell>) {
        assert_eq!(cells.len(), self.columns.len(), "a row of {} cells under {} columns", cells.len(), self.columns.len());
        self.rows.push(cells);
    }

    pub(crate) fn render(&self, format: TableFormat) -> String {
        match format {
            TableFormat::Csv => self.csv(),
            TableFormat::Markdown => self.markdown(),
            TableFormat::Latex => self.latex(),
        }
    }

    fn csv(&self) -> String {
        let mut writer = csv::WriterBuilder::new().terminator(csv::Terminator::Any(b'\n')).from_writer(Vec::new());
        // Writing into memory cannot fail.
        let _ = writer.write_record(self.columns.iter().map(|c| printable(&c.name).into_owned()));
        for row in &self.rows {
            let _ = writer.write_record(row.iter().map(Cell::raw));
        }
        String::from_utf8(writer.into_inner().unwrap_or_default()).unwrap_or_default()
    }

    /// The shown columns: index, header, and whether it is in percent (a
    /// column of fractions, empty cells aside, whose header says so).
    fn shown_columns(&self) -> Vec<(usize, String, bool)> {
        self.columns
            .iter()
            .enumerate()
            .filter(|(_, c)| c.brief)
            .map(|(i, c)| {
                let cells = || self.rows.iter().map(|r| &r[i]).filter(|c| !matches!(c, Cell::Empty));
                let percent = cells().next().is_some() && cells().all(|c| matches!(c, Cell::Fraction(_) | Cell::Estimate(..)));
                let name = printable(&c.name);
                (i, if percent { format!("{name} (%)") } else { name.into_owned() }, percent)
            })
            .collect()
    }

    /// Whether a column holds numbers only (right-aligned).
    fn numeric(&self, i: usize) -> bool {
        !self.rows.is_empty() && self.rows.iter().all(|r| r[i].numeric())
    }

    fn markdown(&self) -> String {
        // A cell is one line of text: a `|` would end it, and `*`, `` ` ``,
        // `<` and brackets would be read as markup (an underscore inside a
        // word is not, in GitHub's Markdown).
        let cell = |s: &str| {
            let mut out = String::with_capacity(s.len());
            for c in s.chars() {
                match c {
                    '\\' | '|' | '*' | '`' | '<' | '>' | '[' | ']' => {
                        out.push('\\');
                        out.push(c);
                    }
                    '\n' | '\r' => out.push(' '),
                    c => out.push(c),
                }
            }
            out
        };
        let columns = self.shown_columns();
        let mut out = String::new();
        let line = |cells: Vec<String>| format!("| {} |\n", cells.join(" | "));
        out.push_str(&line(columns.iter().map(|(_, name, _)| cell(name)).collect()));
        out.push_str(&line(columns.iter().map(|&(i, ..)| if self.numeric(i) { "---:" } else { "---" }.to_owned()).collect()));
        for row in &self.rows {
            out.push_str(&line(columns.iter().map(|&(i, _, percent)| cell(&row[i].shown(percent))).collect()));
        }
        out
    }

    fn latex(&self) -> String {
        let columns = self.shown_columns();
        let align: String = columns.iter().map(|&(i, ..)| if self.numeric(i) { 'r' } else { 'l' }).collect();
        let mut out = format!("\\begin{{tabular}}{{{align}}}\n\\toprule\n");
        let line = |cells: Vec<String>| format!("{} \\\\\n", cells.join(" & "));
        out.push_str(&line(columns.iter().map(|(_, name, _)| latex_text(name)).collect()));
        out.push_str("\\midrule\n");
        for row in &self.rows {
            let cells = columns
                .iter()
                .map(|&(i, _, percent)| match &row[i] {
                    Cell::P(p) if *p < 0.001 => "$<$ 0.001".to_owned(),
                    // ± as a math symbol: every LaTeX engine sets it.
                    cell => latex_text(&cell.shown(percent)).replace('±', "$\\pm$"),
                })
                .collect();
            out.push_str(&line(cells));
        }
        out.push_str("\\bottomrule\n\\end{tabular}\n");
        out
    }
}

/// Text as LaTeX sets it literally: its ten special characters escaped,
/// line breaks as spaces.
fn latex_text(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\textbackslash{}"),
            '~' => out.push_str("\\textasciitilde{}"),
            '^' => out.push_str("\\textasciicircum{}"),
            '&' | '%' | '$' | '#' | '_' | '{' | '}' => {
                out.push('\\');
                out.push(c);
            }
            // Glyphs the default font encoding sets as others (¡, ¿, —).
            '<' => out.push_str("\\textless{}"),
            '>' => out.push_str("\\textgreater{}"),
            '|' => out.push_str("\\textbar{}"),
            '\n' | '\r' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// Several tables, one after another, each under its title (in CSV a
/// `# title` line: the commands print one CSV table, which a reader can
/// parse, and this only where they cannot). One table is written alone, as
/// [`Table::render`] writes it.
pub(crate) fn render_all(tables: &[(String, Table)], format: TableFormat) -> String {
    if let [(_, table)] = tables {
        return table.render(format);
    }
    let mut out = String::new();
    for (k, (title, table)) in tables.iter().enumerate() {
        if k > 0 {
            out.push('\n');
        }
        match format {
            TableFormat::Csv => {
                let _ = writeln!(out, "# {}", printable(title));
            }
            TableFormat::Markdown => {
                let _ = writeln!(out, "**{}**\n", title.replace('*', "\\*"));
            }
            TableFormat::Latex => {
                let _ = writeln!(out, "% {}", printable(title));
            }
        }
        out.push_str(&table.render(format));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> Table {
        let mut t = Table::with_detail([("model", true), ("accuracy", true), ("p", true), ("detail", false)]);
        t.row(vec![Cell::text("a|b_c & 50%"), Cell::Fraction(0.12345), Cell::P(0.0001), Cell::Count(3)]);
        t.row(vec![Cell::text("plain,\"quoted\""), Cell::Fraction(1.0), Cell::P(0.25), Cell::Empty]);
        t
    }

    #[test]
    fn csv_has_every_column_at_full_precision_and_quotes_by_the_rfc() {
        let csv = table().render(TableFormat::Csv);
        assert_eq!(csv, "model,accuracy,p,detail\na|b_c & 50%,0.12345,0.0001,3\n\"plain,\"\"quoted\"\"\",1,0.25,\n");
    }

    #[test]
    fn markdown_shows_the_brief_columns_in_percent_with_pipes_escaped() {
        let md = table().render(TableFormat::Markdown);
        assert_eq!(
            md,
            "| model | accuracy (%) | p |\n| --- | ---: | ---: |\n| a\\|b_c & 50% | 12.35 | \\< 0.001 |\n\
             | plain,\"quoted\" | 100.00 | 0.250 |\n"
        );
        // A column of fractions and other numbers: each fraction carries its sign.
        let mut mixed = Table::new(["value"]);
        mixed.row(vec![Cell::Fraction(0.5)]);
        mixed.row(vec![Cell::Number(0.25, 3)]);
        assert_eq!(mixed.render(TableFormat::Markdown), "| value |\n| ---: |\n| 50.00 % |\n| 0.250 |\n");
    }

    #[test]
    fn latex_escapes_its_special_characters_and_uses_booktabs() {
        let tex = table().render(TableFormat::Latex);
        assert_eq!(
            tex,
            "\\begin{tabular}{lrr}\n\\toprule\nmodel & accuracy (\\%) & p \\\\\n\\midrule\n\
             a\\textbar{}b\\_c \\& 50\\% & 12.35 & $<$ 0.001 \\\\\nplain,\"quoted\" & 100.00 & 0.250 \\\\\n\
             \\bottomrule\n\\end{tabular}\n"
        );
        assert_eq!(latex_text("\\~^#${}"), "\\textbackslash{}\\textasciitilde{}\\textasciicircum{}\\#\\$\\{\\}");
    }
}
