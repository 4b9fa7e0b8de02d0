//! A strict checker of the two text expositions a scrape can get (OpenMetrics 1.0 and the
//! Prometheus text format 0.0.4), for what sm-node writes: every sample belongs to a family
//! that has exactly one HELP and one TYPE before it, the families are contiguous, names and
//! labels are well formed, counters end in `_total`, no series appears twice, histogram
//! buckets rise to a `+Inf` bucket equal to `_count`. Answers the parsed samples.
#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};

/// Which exposition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    OpenMetrics,
    Prometheus,
}

/// One sample.
#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub value: f64,
}

/// A family's metadata.
#[derive(Clone, Debug, Default)]
pub struct Family {
    pub help: Option<String>,
    pub kind: Option<String>,
    pub unit: Option<String>,
    pub samples: usize,
}

/// A checked exposition.
#[derive(Debug, Default)]
pub struct Exposition {
    pub families: BTreeMap<String, Family>,
    pub samples: Vec<Sample>,
}

impl Exposition {
    /// The value of the series `name{labels}` (labels given in full).
    pub fn get(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        let want: BTreeMap<String, String> = labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        self.samples
            .iter()
            .find(|s| s.name == name && s.labels == want)
            .map(|s| s.value)
    }

    /// Every sample named `name`.
    pub fn named<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Sample> + 'a {
        self.samples.iter().filter(move |s| s.name == name)
    }
}

fn metric_name_ok(n: &str) -> bool {
    let mut c = n.chars();
    matches!(c.next(), Some(ch) if ch.is_ascii_alphabetic() || ch == '_' || ch == ':')
        && c.all(|ch| ch.is_ascii_alphanumeric() || ch == '_' || ch == ':')
}

fn label_name_ok(n: &str) -> bool {
    let mut c = n.chars();
    matches!(c.next(), Some(ch) if ch.is_ascii_alphabetic() || ch == '_')
        && c.all(|ch| ch.is_ascii_alphanumeric() || ch == '_')
        && !n.starts_with("__")
}

/// `{k="v",...}` at the start of `s`: the labels and the rest of the line.
fn labels(s: &str) -> Result<(BTreeMap<String, String>, &str), String> {
    let mut out = BTreeMap::new();
    let Some(mut rest) = s.strip_prefix('{') else {
        return Ok((out, s));
    };
    loop {
        if let Some(r) = rest.strip_prefix('}') {
            return Ok((out, r));
        }
        let eq = rest.find('=').ok_or("label without =")?;
        let key = &rest[..eq];
        if !label_name_ok(key) {
            return Err(format!("bad label name {key:?}"));
        }
        rest = rest[eq + 1..]
            .strip_prefix('"')
            .ok_or_else(|| format!("label {key}: value not quoted"))?;
        let mut value = String::new();
        let mut chars = rest.char_indices();
        let end = loop {
            match chars.next() {
                None => return Err(format!("label {key}: unterminated value")),
                Some((i, '"')) => break i,
                Some((_, '\\')) => match chars.next() {
                    Some((_, '\\')) => value.push('\\'),
                    Some((_, '"')) => value.push('"'),
                    Some((_, 'n')) => value.push('\n'),
                    e => return Err(format!("label {key}: bad escape {e:?}")),
                },
                Some((_, '\n')) => return Err(format!("label {key}: raw newline")),
                Some((_, c)) => value.push(c),
            }
        };
        if out.insert(key.to_string(), value).is_some() {
            return Err(format!("label {key} twice"));
        }
        rest = &rest[end + 1..];
        if let Some(r) = rest.strip_prefix(',') {
            rest = r;
            if rest.starts_with('}') {
                return Err("trailing comma in labels".into());
            }
        } else if !rest.starts_with('}') {
            return Err(format!("expected , or }} after label {key}"));
        }
    }
}

fn number(v: &str) -> Result<f64, String> {
    match v {
        "+Inf" => Ok(f64::INFINITY),
        "-Inf" => Ok(f64::NEG_INFINITY),
        "NaN" => Ok(f64::NAN),
        _ if v.chars().all(|c| c.is_ascii_digit() || "+-.eE".contains(c)) => {
            v.parse().map_err(|e| format!("value {v:?}: {e}"))
        }
        _ => Err(format!("value {v:?} is not a number")),
    }
}

/// The sample suffixes a family of `kind` allows (OpenMetrics naming: the family name
/// without `_total`, `_info`, `_bucket`...).
fn om_suffixes(kind: &str) -> Result<&'static [&'static str], String> {
    Ok(match kind {
        "counter" => &["_total", "_created"],
        "gauge" | "unknown" => &[""],
        "histogram" => &["_bucket", "_count", "_sum", "_created"],
        "info" => &["_info"],
        "summary" => &["", "_count", "_sum", "_created"],
        k => return Err(format!("unknown type {k:?}")),
    })
}

fn prom_suffixes(kind: &str) -> Result<&'static [&'static str], String> {
    Ok(match kind {
        "counter" | "gauge" | "untyped" => &[""],
        "histogram" => &["_bucket", "_count", "_sum"],
        "summary" => &["", "_count", "_sum"],
        k => return Err(format!("unknown type {k:?}")),
    })
}

/// Checks `text`; every error names its line.
pub fn check(text: &str, format: Format) -> Result<Exposition, String> {
    let mut x = Exposition::default();
    if !text.ends_with('\n') {
        return Err("the text does not end with a newline".into());
    }
    let lines: Vec<&str> = text[..text.len() - 1].split('\n').collect();
    if format == Format::OpenMetrics && lines.last() != Some(&"# EOF") {
        return Err("OpenMetrics text must end with # EOF".into());
    }
    let mut current: Option<String> = None;
    let mut closed: BTreeSet<String> = BTreeSet::new();
    let mut series: BTreeSet<String> = BTreeSet::new();
    for (n, line) in lines.iter().enumerate() {
        let at = |e: String| format!("line {}: {e}: {line:?}", n + 1);
        if format == Format::OpenMetrics && *line == "# EOF" {
            if n + 1 != lines.len() {
                return Err(at("# EOF before the end".into()));
            }
            break;
        }
        if line.is_empty() {
            return Err(at("empty line".into()));
        }
        if let Some(meta) = line.strip_prefix("# ") {
            let mut parts = meta.splitn(3, ' ');
            let (what, name, rest) = (parts.next(), parts.next(), parts.next());
            let (Some(what), Some(name)) = (what, name) else {
                return Err(at("short metadata line".into()));
            };
            if !metric_name_ok(name) {
                return Err(at(format!("bad family name {name:?}")));
            }
            if current.as_deref() != Some(name) {
                if closed.contains(name) {
                    return Err(at(format!("family {name} is not contiguous")));
                }
                if let Some(c) = current.take() {
                    closed.insert(c);
                }
                current = Some(name.to_string());
            }
            let fam = x.families.entry(name.to_string()).or_default();
            if fam.samples > 0 {
                return Err(at(format!("metadata of {name} after its samples")));
            }
            let rest = rest.unwrap_or("");
            match what {
                "HELP" if fam.help.is_none() => fam.help = Some(rest.to_string()),
                "TYPE" if fam.kind.is_none() => {
                    match format {
                        Format::OpenMetrics => om_suffixes(rest).map_err(at)?,
                        Format::Prometheus => prom_suffixes(rest).map_err(at)?,
                    };
                    fam.kind = Some(rest.to_string());
                }
                "UNIT" if format == Format::OpenMetrics && fam.unit.is_none() => {
                    if !name.ends_with(&format!("_{rest}")) {
                        return Err(at(format!("{name} does not end with its unit {rest}")));
                    }
                    fam.unit = Some(rest.to_string());
                }
                "HELP" | "TYPE" | "UNIT" => {
                    return Err(at(format!("{what} of {name} twice or not allowed")));
                }
                _ if format == Format::Prometheus => {} // a plain comment
                _ => return Err(at(format!("unknown metadata {what}"))),
            }
            continue;
        }
        if line.starts_with('#') {
            if format == Format::OpenMetrics {
                return Err(at("comment in OpenMetrics text".into()));
            }
            continue;
        }
        // A sample.
        let name_end = line
            .find(['{', ' '])
            .ok_or_else(|| at("sample without value".into()))?;
        let name = &line[..name_end];
        if !metric_name_ok(name) {
            return Err(at(format!("bad metric name {name:?}")));
        }
        let (lab, rest) = labels(&line[name_end..]).map_err(at)?;
        let rest = rest
            .strip_prefix(' ')
            .ok_or_else(|| at("no space before the value".into()))?;
        let mut fields = rest.split(' ');
        let value = number(fields.next().unwrap_or("")).map_err(at)?;
        if let Some(ts) = fields.next() {
            number(ts).map_err(at)?;
        }
        if fields.next().is_some() {
            return Err(at("extra fields (exemplars are not expected)".into()));
        }
        let fam_name = current
            .clone()
            .ok_or_else(|| at("sample before any family".into()))?;
        let fam = x.families.get_mut(&fam_name).unwrap();
        let (Some(kind), Some(_)) = (fam.kind.clone(), fam.help.as_ref()) else {
            return Err(at(format!("family {fam_name} lacks HELP or TYPE")));
        };
        let suffixes = match format {
            Format::OpenMetrics => om_suffixes(&kind),
            Format::Prometheus => prom_suffixes(&kind),
        }
        .map_err(at)?;
        let suffix = name
            .strip_prefix(fam_name.as_str())
            .filter(|s| suffixes.contains(s))
            .ok_or_else(|| at(format!("{name} is not a sample of {kind} {fam_name}")))?;
        if kind == "counter" && !name.ends_with("_total") && suffix != "_created" {
            return Err(at(format!("counter sample {name} does not end in _total")));
        }
        if kind == "counter" && (value.is_nan() || value < 0.0) {
            return Err(at("negative or NaN counter".into()));
        }
        if kind == "info" && value != 1.0 {
            return Err(at("an info sample must be 1".into()));
        }
        if (suffix == "_bucket") != lab.contains_key("le") {
            return Err(at(
                "le belongs to histogram buckets, and every bucket has one".into(),
            ));
        }
        if matches!(suffix, "_count" | "_bucket")
            && (value.fract() != 0.0 || value < 0.0 || value.is_nan())
        {
            return Err(at("a count must be a non-negative integer".into()));
        }
        let key = format!("{name}{lab:?}");
        if !series.insert(key) {
            return Err(at("series twice".into()));
        }
        fam.samples += 1;
        x.samples.push(Sample {
            name: name.to_string(),
            labels: lab,
            value,
        });
    }
    histograms(&x)?;
    Ok(x)
}

/// Every histogram series: buckets rising in `le` and count, ending at `+Inf` = `_count`,
/// with a `_sum`.
fn histograms(x: &Exposition) -> Result<(), String> {
    for (fam, f) in &x.families {
        if f.kind.as_deref() != Some("histogram") {
            continue;
        }
        let mut by_series: BTreeMap<BTreeMap<String, String>, Vec<(f64, f64)>> = BTreeMap::new();
        for s in x.named(&format!("{fam}_bucket")) {
            let mut key = s.labels.clone();
            let le = number(&key.remove("le").unwrap())?;
            by_series.entry(key).or_default().push((le, s.value));
        }
        for (key, buckets) in &by_series {
            let pairs: Vec<(&str, &str)> =
                key.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            for w in buckets.windows(2) {
                if w[1].0 <= w[0].0 || w[1].1 < w[0].1 {
                    return Err(format!("{fam}{key:?}: buckets not rising: {buckets:?}"));
                }
            }
            let last = buckets.last().unwrap();
            if last.0 != f64::INFINITY {
                return Err(format!("{fam}{key:?}: no +Inf bucket"));
            }
            let count = x.get(&format!("{fam}_count"), &pairs);
            if count != Some(last.1) {
                return Err(format!("{fam}{key:?}: +Inf {} != _count {count:?}", last.1));
            }
            if x.get(&format!("{fam}_sum"), &pairs).is_none() {
                return Err(format!("{fam}{key:?}: no _sum"));
            }
        }
        for s in x.named(&format!("{fam}_count")) {
            if !by_series.contains_key(&s.labels) {
                return Err(format!("{fam}{:?}: _count without buckets", s.labels));
            }
        }
    }
    Ok(())
}
