//! The reachability matrix between port groups (tenants, partitions) from the isolation
//! audit's JSON report (`AuditReply.report_json`, read back from the fabric): full when the
//! two groups share a partition in which both hold full members, limited when they exchange
//! traffic only through partitions where one side is limited, none otherwise; exchange the
//! policy does not intend is flagged. Rendered with the `svg` crate's document builder.

use crate::ViewsError;
use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};
use svg::Document;
use svg::node::element::{Rectangle, Text, Title};

/// One cell of the matrix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cell {
    /// Both hold full membership of a shared partition.
    Full,
    /// Exchange only through partitions where one side is limited.
    Limited,
    /// No exchange.
    None,
}

impl Cell {
    fn word(self) -> &'static str {
        match self {
            Cell::Full => "full",
            Cell::Limited => "limited",
            Cell::None => "none",
        }
    }
    fn colour(self) -> &'static str {
        match self {
            Cell::Full => "#2e7d32",
            Cell::Limited => "#9ccc65",
            Cell::None => "#eeeeee",
        }
    }
}

/// The matrix: `cells[i][j]` between `names[i]` and `names[j]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reachability {
    /// Group names (rows and columns).
    pub names: Vec<String>,
    /// Group sizes (ports).
    pub sizes: Vec<usize>,
    /// Cells.
    pub cells: Vec<Vec<Cell>>,
    /// Partitions (names or `0x....`) through which each pair exchanges traffic.
    pub via: Vec<Vec<Vec<String>>>,
    /// Exchange the policy does not intend.
    pub unintended: Vec<Vec<bool>>,
    /// Error findings of the audit.
    pub errors: usize,
}

#[derive(Deserialize)]
struct JPart {
    pkey: String,
    name: Option<String>,
    full: Vec<String>,
}

#[derive(Deserialize)]
struct JPair {
    a: String,
    b: String,
    via: Vec<String>,
    unintended: Vec<String>,
}

#[derive(Deserialize)]
struct JFinding {
    severity: String,
}

#[derive(Deserialize)]
struct JReport {
    partitions: Vec<JPart>,
    groups: BTreeMap<String, Vec<String>>,
    exchange: Vec<JPair>,
    findings: Vec<JFinding>,
}

impl Reachability {
    /// Reads the audit's `report_json`.
    pub fn from_audit_json(json: &str) -> Result<Reachability, ViewsError> {
        let r: JReport =
            serde_json::from_str(json).map_err(|e| ViewsError::AuditJson(e.to_string()))?;
        let names: Vec<String> = r.groups.keys().cloned().collect();
        let pos: BTreeMap<&str, usize> = r
            .groups
            .keys()
            .enumerate()
            .map(|(i, n)| (n.as_str(), i))
            .collect();
        let n = names.len();
        let full_of: BTreeMap<&str, (Option<&str>, BTreeSet<&str>)> = r
            .partitions
            .iter()
            .map(|p| {
                (
                    p.pkey.as_str(),
                    (
                        p.name.as_deref(),
                        p.full.iter().map(String::as_str).collect(),
                    ),
                )
            })
            .collect();
        let mut m = Reachability {
            sizes: names.iter().map(|k| r.groups[k].len()).collect(),
            names,
            cells: vec![vec![Cell::None; n]; n],
            via: vec![vec![Vec::new(); n]; n],
            unintended: vec![vec![false; n]; n],
            errors: r.findings.iter().filter(|f| f.severity == "error").count(),
        };
        for p in &r.exchange {
            let (Some(&i), Some(&j)) = (pos.get(p.a.as_str()), pos.get(p.b.as_str())) else {
                continue;
            };
            let has_full = |g: &str, part: &str| {
                full_of
                    .get(part)
                    .is_some_and(|(_, f)| r.groups[g].iter().any(|x| f.contains(x.as_str())))
            };
            let full = p.via.iter().any(|v| has_full(&p.a, v) && has_full(&p.b, v));
            let cell = if full {
                Cell::Full
            } else if p.via.is_empty() {
                Cell::None
            } else {
                Cell::Limited
            };
            let via: Vec<String> = p
                .via
                .iter()
                .map(|v| {
                    full_of
                        .get(v.as_str())
                        .and_then(|(name, _)| name.map(str::to_string))
                        .unwrap_or_else(|| v.clone())
                })
                .collect();
            for (x, y) in [(i, j), (j, i)] {
                m.cells[x][y] = cell;
                m.via[x][y] = via.clone();
                m.unintended[x][y] = !p.unintended.is_empty();
            }
        }
        Ok(m)
    }
}

fn clip(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(n - 1).collect();
        t.push('…');
        t
    }
}

/// The matrix as text rows (for terminals and tests).
pub fn matrix_text(m: &Reachability) -> String {
    let w = m.names.iter().map(|n| n.len()).max().unwrap_or(4).max(7);
    let mut o = format!("{:w$}", "");
    for n in &m.names {
        o.push_str(&format!("  {:>w$}", clip(n, w)));
    }
    o.push('\n');
    for (i, n) in m.names.iter().enumerate() {
        o.push_str(&format!("{:w$}", clip(n, w)));
        for j in 0..m.names.len() {
            let mut c = m.cells[i][j].word().to_string();
            if m.unintended[i][j] {
                c.push('!');
            }
            o.push_str(&format!("  {c:>w$}"));
        }
        o.push('\n');
    }
    o
}

/// The matrix as an SVG document.
pub fn matrix_svg(m: &Reachability, title: &str) -> String {
    const CELL: usize = 64;
    const LABEL: usize = 170;
    const TOP: usize = 60;
    let n = m.names.len();
    // Wide enough for the grid and the title (about 9 px a character at 16 px).
    let width = (LABEL + CELL * n.max(1) + 20).max(title.chars().count() * 9 + 20);
    let height = TOP + LABEL + CELL * n.max(1) + 60;
    let grid_top = TOP + LABEL;
    let mut doc = Document::new()
        .set("viewBox", (0, 0, width, height))
        .set("width", width)
        .set("height", height)
        .set("font-family", "sans-serif")
        .add(
            Text::new(title)
                .set("x", 10)
                .set("y", 24)
                .set("font-size", 16)
                .set("font-weight", "bold"),
        )
        .add(
            Text::new(format!(
                "{} groups; {} audit errors; ! marks exchange the policy does not intend",
                n, m.errors
            ))
            .set("x", 10)
            .set("y", 44)
            .set("font-size", 11),
        );
    for (i, name) in m.names.iter().enumerate() {
        let label = format!("{} ({})", clip(name, 22), m.sizes[i]);
        doc = doc.add(
            Text::new(label.clone())
                .set("x", LABEL - 6)
                .set("y", grid_top + i * CELL + CELL / 2 + 4)
                .set("text-anchor", "end")
                .set("font-size", 11),
        );
        let cx = LABEL + i * CELL + CELL / 2;
        doc = doc.add(
            Text::new(label)
                .set("x", cx)
                .set("y", grid_top - 6)
                .set("font-size", 11)
                .set("transform", format!("rotate(-60 {cx} {})", grid_top - 6)),
        );
    }
    for i in 0..n {
        for j in 0..n {
            let c = m.cells[i][j];
            let bad = m.unintended[i][j];
            let x = LABEL + j * CELL;
            let y = grid_top + i * CELL;
            let tip = format!(
                "{} / {}: {}{}{}",
                m.names[i],
                m.names[j],
                c.word(),
                if m.via[i][j].is_empty() {
                    String::new()
                } else {
                    format!(" via {}", m.via[i][j].join(", "))
                },
                if bad { " (not intended)" } else { "" }
            );
            doc = doc.add(
                Rectangle::new()
                    .set("x", x)
                    .set("y", y)
                    .set("width", CELL - 2)
                    .set("height", CELL - 2)
                    .set("fill", c.colour())
                    .set("stroke", if bad { "#c62828" } else { "#ffffff" })
                    .set("stroke-width", if bad { 4 } else { 1 })
                    .set("class", format!("cell {}", c.word()))
                    .add(Title::new(tip)),
            );
            let word = if bad {
                format!("{}!", c.word())
            } else {
                c.word().to_string()
            };
            doc = doc.add(
                Text::new(word)
                    .set("x", x + CELL / 2 - 1)
                    .set("y", y + CELL / 2 + 4)
                    .set("text-anchor", "middle")
                    .set("font-size", 11)
                    .set(
                        "fill",
                        if c == Cell::Full {
                            "#ffffff"
                        } else {
                            "#222222"
                        },
                    ),
            );
        }
    }
    let ly = grid_top + n.max(1) * CELL + 24;
    for (k, c) in [Cell::Full, Cell::Limited, Cell::None].iter().enumerate() {
        let x = 10 + k * 110;
        doc = doc
            .add(
                Rectangle::new()
                    .set("x", x)
                    .set("y", ly - 12)
                    .set("width", 14)
                    .set("height", 14)
                    .set("fill", c.colour()),
            )
            .add(
                Text::new(c.word())
                    .set("x", x + 20)
                    .set("y", ly)
                    .set("font-size", 11),
            );
    }
    doc.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    const REPORT: &str = r#"{
      "partitions":[
        {"pkey":"0x0001","name":"alpha","full":["0x0000000000000001","0x0000000000000002","0x0000000000000009"],"limited":[],"blocked":[]},
        {"pkey":"0x0002","name":"beta","full":["0x0000000000000003","0x0000000000000009"],"limited":["0x0000000000000004"],"blocked":[]},
        {"pkey":"0x0003","name":"storage","full":["0x0000000000000009"],"limited":["0x0000000000000001","0x0000000000000003"],"blocked":[]}
      ],
      "groups":{"alpha":["0x0000000000000001","0x0000000000000002"],
                "beta":["0x0000000000000003","0x0000000000000004"],
                "admin":["0x0000000000000009"]},
      "exchange":[
        {"a":"alpha","b":"alpha","via":["0x0001"],"unintended":[],"pairs":1,"example":["0x1","0x2"]},
        {"a":"admin","b":"alpha","via":["0x0001","0x0003"],"unintended":[],"pairs":2,"example":["0x9","0x1"]},
        {"a":"admin","b":"beta","via":["0x0003"],"unintended":[],"pairs":2,"example":["0x9","0x3"]},
        {"a":"alpha","b":"beta","via":["0x0003"],"unintended":["0x0003"],"pairs":1,"example":["0x1","0x3"]}
      ],
      "findings":[{"code":"AUDIT-E001","severity":"error","message":"x"}]
    }"#;

    #[test]
    fn cells_from_the_report() {
        let m = Reachability::from_audit_json(REPORT).unwrap();
        assert_eq!(m.names, vec!["admin", "alpha", "beta"]);
        let at = |a: &str, b: &str| {
            let i = m.names.iter().position(|n| n == a).unwrap();
            let j = m.names.iter().position(|n| n == b).unwrap();
            (m.cells[i][j], m.unintended[i][j])
        };
        assert_eq!(at("alpha", "alpha"), (Cell::Full, false));
        assert_eq!(at("alpha", "admin"), (Cell::Full, false));
        // admin is full in storage but beta is limited there: limited.
        assert_eq!(at("beta", "admin"), (Cell::Limited, false));
        // alpha and beta: both limited in storage is flagged by the audit as unintended.
        assert_eq!(at("alpha", "beta"), (Cell::Limited, true));
        // No exchange pair listed: none.
        assert_eq!(at("beta", "beta"), (Cell::None, false));
        assert_eq!(m.errors, 1);
        assert_eq!(m.via[1][0], vec!["alpha", "storage"]);
    }

    #[test]
    fn svg_and_text_show_every_cell() {
        let m = Reachability::from_audit_json(REPORT).unwrap();
        let svg = matrix_svg(&m, "two tenants");
        assert!(svg.starts_with("<svg"));
        assert_eq!(svg.matches("class=\"cell ").count(), 9);
        assert!(svg.contains("limited!"));
        assert!(svg.contains("via alpha, storage"));
        let t = matrix_text(&m);
        assert_eq!(t.lines().count(), 4);
        assert!(t.contains("limited!"));
    }

    #[test]
    fn bad_json_is_an_error_not_a_panic() {
        for bad in ["", "{", "[]", r#"{"partitions":1}"#] {
            assert!(Reachability::from_audit_json(bad).is_err(), "{bad}");
        }
    }
}
