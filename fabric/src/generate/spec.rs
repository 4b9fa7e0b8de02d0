//! [`GenSpec`]: compact names of generated fabrics.

use super::{FatTreeSpec, GenError, RandomSpec, TorusSpec, fat_tree, random, torus};
use crate::topology::Topology;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// A generated fabric named by a compact string, so configs and command lines can say which
/// fabric to build. Grammar (fields separated by `:`, options as `key=value` in any order):
///
/// | spec | fabric |
/// |---|---|
/// | `ft2:K[:hosts=H]` | 2-level fat tree of radix K (even), H hosts per leaf (default K/2) |
/// | `ft3:K[:hosts=H][:pods=P]` | 3-level fat tree of radix K, P pods (default K) |
/// | `torus:AxBxC..[:hosts=H]` | torus with those dimension sizes, H hosts per switch (default 1) |
/// | `random:N[:seed=S][:radix=R][:links=L][:hosts=H]` | N random switches of radix R (default 36), L links (default R/2) and H hosts (default R−L) per switch, seed S (default 0) |
///
/// Examples: `ft2:36` (648 hosts, 54 switches), `ft3:36` (11,664 hosts, 1,620 switches),
/// `ft3:48:hosts=8`, `ft3:36:pods=6`, `torus:6x6x6`, `torus:4x4:hosts=2`,
/// `random:256:seed=7`. Numbers are decimal. [`Display`](fmt::Display) prints the canonical
/// form (defaults omitted, except the seed), which parses back to the same spec.
///
/// With serde, a `GenSpec` is (de)serialised as its string form, so configs can say
/// `fabric = "ft3:36"`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum GenSpec {
    /// A 2- or 3-level fat tree.
    FatTree(FatTreeSpec),
    /// An n-dimensional torus.
    Torus(TorusSpec),
    /// A random irregular graph.
    Random(RandomSpec),
}

impl GenSpec {
    /// Builds the fabric.
    pub fn generate(&self) -> Result<Topology, GenError> {
        match self {
            GenSpec::FatTree(s) => fat_tree(s),
            GenSpec::Torus(s) => torus(s),
            GenSpec::Random(s) => random(s),
        }
    }

    /// Checks the parameters without building anything.
    pub fn validate(&self) -> Result<(), GenError> {
        match self {
            GenSpec::FatTree(s) => s.validate(),
            GenSpec::Torus(s) => s.validate(),
            GenSpec::Random(s) => s.validate(),
        }
    }
}

fn bad(spec: &str, reason: impl Into<String>) -> GenError {
    GenError::BadSpec {
        spec: spec.to_string(),
        reason: reason.into(),
    }
}

fn num<T: FromStr>(spec: &str, what: &str, v: &str) -> Result<T, GenError> {
    v.parse::<T>()
        .map_err(|_| bad(spec, format!("{what} must be a number in range, not {v:?}")))
}

/// Parses `AxBxC`.
fn dims(spec: &str, v: &str) -> Result<Vec<u16>, GenError> {
    v.split(['x', 'X'])
        .map(|d| num::<u16>(spec, "a torus dimension", d))
        .collect()
}

impl FromStr for GenSpec {
    type Err = GenError;

    fn from_str(s: &str) -> Result<GenSpec, GenError> {
        let mut fields = s.trim().split(':');
        let kind = fields.next().unwrap_or("");
        let Some(main) = fields.next() else {
            return Err(bad(
                s,
                "expected KIND:VALUE, e.g. ft2:36, ft3:36, torus:6x6x6, random:256:seed=7",
            ));
        };
        let mut opts: Vec<(&str, &str)> = Vec::new();
        for f in fields {
            let Some((k, v)) = f.split_once('=') else {
                return Err(bad(s, format!("option {f:?} is not key=value")));
            };
            if opts.iter().any(|(seen, _)| *seen == k) {
                return Err(bad(s, format!("option {k:?} given twice")));
            }
            opts.push((k, v));
        }
        let allow = |allowed: &[&str]| -> Result<(), GenError> {
            match opts.iter().find(|(k, _)| !allowed.contains(k)) {
                Some((k, _)) => Err(bad(
                    s,
                    format!(
                        "unknown option {k:?} for {kind} (allowed: {})",
                        allowed.join(", ")
                    ),
                )),
                None => Ok(()),
            }
        };
        let opt = |k: &str| opts.iter().find(|(key, _)| *key == k).map(|(_, v)| *v);
        let spec = match kind {
            "ft2" | "ft3" => {
                allow(if kind == "ft2" {
                    &["hosts"]
                } else {
                    &["hosts", "pods"]
                })?;
                let radix = num::<u16>(s, "the radix", main)?;
                let mut ft = FatTreeSpec::new(if kind == "ft2" { 2 } else { 3 }, radix);
                if let Some(h) = opt("hosts") {
                    ft.hosts_per_leaf = num(s, "hosts", h)?;
                }
                if let Some(p) = opt("pods") {
                    ft.pods = num(s, "pods", p)?;
                }
                GenSpec::FatTree(ft)
            }
            "torus" => {
                allow(&["hosts"])?;
                let mut t = TorusSpec::new(dims(s, main)?);
                if let Some(h) = opt("hosts") {
                    t.hosts_per_switch = num(s, "hosts", h)?;
                }
                GenSpec::Torus(t)
            }
            "random" => {
                allow(&["seed", "radix", "links", "hosts"])?;
                let mut r = RandomSpec::new(num(s, "the switch count", main)?, 0);
                if let Some(v) = opt("seed") {
                    r.seed = num(s, "seed", v)?;
                }
                if let Some(v) = opt("radix") {
                    r.radix = num(s, "radix", v)?;
                }
                r.links_per_switch = match opt("links") {
                    Some(v) => num(s, "links", v)?,
                    None => r.radix / 2,
                };
                r.hosts_per_switch = match opt("hosts") {
                    Some(v) => num(s, "hosts", v)?,
                    None => r.radix.saturating_sub(r.links_per_switch),
                };
                GenSpec::Random(r)
            }
            other => {
                return Err(bad(
                    s,
                    format!("unknown kind {other:?}; expected ft2, ft3, torus or random"),
                ));
            }
        };
        spec.validate().map_err(|e| bad(s, e.to_string()))?;
        Ok(spec)
    }
}

impl TryFrom<String> for GenSpec {
    type Error = GenError;

    fn try_from(s: String) -> Result<GenSpec, GenError> {
        s.parse()
    }
}

impl From<GenSpec> for String {
    fn from(spec: GenSpec) -> String {
        spec.to_string()
    }
}

impl fmt::Display for GenSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GenSpec::FatTree(s) => {
                write!(f, "ft{}:{}", s.levels, s.radix)?;
                if s.hosts_per_leaf != s.radix / 2 {
                    write!(f, ":hosts={}", s.hosts_per_leaf)?;
                }
                if s.pods != s.radix {
                    write!(f, ":pods={}", s.pods)?;
                }
                Ok(())
            }
            GenSpec::Torus(s) => {
                f.write_str("torus:")?;
                for (i, d) in s.dims.iter().enumerate() {
                    if i > 0 {
                        f.write_str("x")?;
                    }
                    write!(f, "{d}")?;
                }
                if s.hosts_per_switch != 1 {
                    write!(f, ":hosts={}", s.hosts_per_switch)?;
                }
                Ok(())
            }
            GenSpec::Random(s) => {
                write!(f, "random:{}:seed={}", s.switches, s.seed)?;
                if s.radix != 36 {
                    write!(f, ":radix={}", s.radix)?;
                }
                if s.links_per_switch != s.radix / 2 {
                    write!(f, ":links={}", s.links_per_switch)?;
                }
                if s.hosts_per_switch != s.radix.saturating_sub(s.links_per_switch) {
                    write!(f, ":hosts={}", s.hosts_per_switch)?;
                }
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_and_display() {
        for (text, canonical) in [
            ("ft2:36", "ft2:36"),
            ("ft3:36", "ft3:36"),
            ("ft3:48:hosts=8", "ft3:48:hosts=8"),
            ("ft3:36:pods=6:hosts=18", "ft3:36:pods=6"),
            ("torus:6x6x6", "torus:6x6x6"),
            ("torus:4x4:hosts=2", "torus:4x4:hosts=2"),
            ("random:256:seed=7", "random:256:seed=7"),
            ("random:16", "random:16:seed=0"),
            (
                "random:64:seed=3:radix=16:links=4",
                "random:64:seed=3:radix=16:links=4",
            ),
        ] {
            let spec: GenSpec = text.parse().unwrap();
            assert_eq!(spec.to_string(), canonical, "{text}");
            assert_eq!(canonical.parse::<GenSpec>().unwrap(), spec);
        }
        let r: GenSpec = "random:64:seed=3:radix=16:links=4".parse().unwrap();
        let GenSpec::Random(r) = r else { panic!() };
        assert_eq!(
            (r.radix, r.links_per_switch, r.hosts_per_switch),
            (16, 4, 12)
        );
    }

    #[test]
    fn rejects() {
        for text in [
            "",
            "ft2",
            "ft2:35",
            "ft2:36:pods=2",
            "ft3:36:hosts=19",
            "ft3:36:color=red",
            "ft4:36",
            "torus:6x0",
            "torus:6xx6",
            "random:0",
            "random:10:links=1",
            "random:10:seed=-1",
            "ft2:36:hosts=1:hosts=2",
        ] {
            assert!(text.parse::<GenSpec>().is_err(), "{text} should not parse");
        }
        let e = "ft2:35".parse::<GenSpec>().unwrap_err().to_string();
        assert!(e.contains("even"), "{e}");
    }
}
