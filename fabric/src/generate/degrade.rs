//! [`DegradedSpec`]: a generated fabric with some switch-to-switch links removed,
//! deterministically from a seed (`ft2:36:remove=3:seed=1`, `ft3:36:pods=6:remove=1%`).
//!
//! The removed links are drawn uniformly among the switch-to-switch links of the generated
//! fabric (host links are never removed) with [`SplitMix64`] seeded by `seed`: a partial
//! Fisher-Yates shuffle of the links in [`Topology::links`] order, so the same spec removes
//! the same links on every machine. The result may be disconnected when many links go; the
//! routing engines refuse such a fabric with a typed error.

use super::{GenError, GenSpec};
use crate::rng::SplitMix64;
use crate::topology::{PortRef, Topology};
use std::fmt;
use std::str::FromStr;

/// How many switch-to-switch links to remove.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Removal {
    /// This many links (at most all of them).
    Count(u32),
    /// This percentage of the switch-to-switch links, rounded to the nearest link.
    Percent(u32),
}

/// A [`GenSpec`] plus removed links. Grammar: any generator spec followed by
/// `:remove=N` or `:remove=P%` and an optional `:seed=S` (default 0). For `random:` the
/// `seed` option stays the generator's seed and also seeds the removal.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct DegradedSpec {
    /// The complete fabric.
    pub base: GenSpec,
    /// Links to remove (None: the complete fabric).
    pub remove: Option<Removal>,
    /// Seed of the removal.
    pub seed: u64,
}

impl DegradedSpec {
    /// Builds the fabric and removes the links.
    pub fn generate(&self) -> Result<Topology, GenError> {
        let mut t = self.base.generate()?;
        if let Some(r) = self.remove {
            remove_switch_links(&mut t, r, self.seed);
        }
        Ok(t)
    }
}

/// Removes switch-to-switch links of `t` as [`Removal`] says, drawn from `seed`; returns the
/// removed links (lower end, higher end), in the order drawn.
pub fn remove_switch_links(t: &mut Topology, r: Removal, seed: u64) -> Vec<(PortRef, PortRef)> {
    let mut links: Vec<(PortRef, PortRef)> = t
        .links()
        .filter(|(a, b)| t.node(a.node).is_switch() && t.node(b.node).is_switch())
        .collect();
    let n = links.len() as u64;
    let k = match r {
        Removal::Count(c) => (c as u64).min(n),
        Removal::Percent(p) => ((n * p as u64 + 50) / 100).min(n),
    } as usize;
    let mut rng = SplitMix64::new(seed ^ 0x5eed_0f11_4e55_0000);
    for i in 0..k {
        let j = i + rng.below(n - i as u64) as usize;
        links.swap(i, j);
    }
    links.truncate(k);
    for (a, _) in &links {
        t.disconnect(*a);
    }
    links
}

impl FromStr for DegradedSpec {
    type Err = GenError;

    fn from_str(s: &str) -> Result<DegradedSpec, GenError> {
        let bad = |reason: String| GenError::BadSpec {
            spec: s.to_string(),
            reason,
        };
        let is_random = s.trim().starts_with("random:");
        let mut remove = None;
        let mut seed = None;
        let mut kept: Vec<&str> = Vec::new();
        for f in s.trim().split(':') {
            if let Some(v) = f.strip_prefix("remove=") {
                if remove.is_some() {
                    return Err(bad("option \"remove\" given twice".into()));
                }
                let r = match v.strip_suffix('%') {
                    Some(p) => p.parse().ok().filter(|&p| p <= 100).map(Removal::Percent),
                    None => v.parse().ok().map(Removal::Count),
                };
                remove = Some(r.ok_or_else(|| {
                    bad(format!("remove must be a count or a percentage, not {v:?}"))
                })?);
            } else if let (Some(v), false) = (f.strip_prefix("seed="), is_random) {
                if seed.is_some() {
                    return Err(bad("option \"seed\" given twice".into()));
                }
                seed = Some(
                    v.parse::<u64>()
                        .map_err(|_| bad(format!("seed must be a number, not {v:?}")))?,
                );
            } else {
                kept.push(f);
            }
        }
        let base: GenSpec = kept.join(":").parse()?;
        if let (GenSpec::Random(r), true) = (&base, is_random) {
            seed = Some(r.seed);
        }
        if seed.is_some() && remove.is_none() && !is_random {
            return Err(bad("seed without remove=".into()));
        }
        Ok(DegradedSpec {
            base,
            remove,
            seed: seed.unwrap_or(0),
        })
    }
}

impl fmt::Display for DegradedSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.base)?;
        match self.remove {
            None => Ok(()),
            Some(r) => {
                match r {
                    Removal::Count(c) => write!(f, ":remove={c}")?,
                    Removal::Percent(p) => write!(f, ":remove={p}%")?,
                }
                if matches!(self.base, GenSpec::Random(_)) {
                    Ok(())
                } else {
                    write!(f, ":seed={}", self.seed)
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_display_and_determinism() {
        for (text, canonical) in [
            ("ft2:36", "ft2:36"),
            ("ft2:36:remove=3:seed=1", "ft2:36:remove=3:seed=1"),
            ("ft3:36:pods=6:remove=1%", "ft3:36:pods=6:remove=1%:seed=0"),
            ("random:64:seed=3:remove=2", "random:64:seed=3:remove=2"),
        ] {
            let d: DegradedSpec = text.parse().unwrap();
            assert_eq!(d.to_string(), canonical, "{text}");
            assert_eq!(canonical.parse::<DegradedSpec>().unwrap(), d);
        }
        for text in ["ft2:36:seed=1", "ft2:36:remove=x", "ft2:36:remove=101%"] {
            assert!(text.parse::<DegradedSpec>().is_err(), "{text}");
        }
        let full = "ft2:36"
            .parse::<DegradedSpec>()
            .unwrap()
            .generate()
            .unwrap();
        let d: DegradedSpec = "ft2:36:remove=3:seed=1".parse().unwrap();
        let (a, b) = (d.generate().unwrap(), d.generate().unwrap());
        assert_eq!(a.num_links(), full.num_links() - 3);
        assert_eq!(a.links().collect::<Vec<_>>(), b.links().collect::<Vec<_>>());
        let other: DegradedSpec = "ft2:36:remove=3:seed=2".parse().unwrap();
        assert_ne!(
            other.generate().unwrap().links().collect::<Vec<_>>(),
            a.links().collect::<Vec<_>>()
        );
        let p: DegradedSpec = "ft3:36:pods=6:remove=1%".parse().unwrap();
        let full3 = p.base.generate().unwrap();
        let sw = full3
            .links()
            .filter(|(a, b)| full3.node(a.node).is_switch() && full3.node(b.node).is_switch())
            .count();
        assert_eq!(
            p.generate().unwrap().num_links(),
            full3.num_links() - (sw + 50) / 100
        );
    }
}
