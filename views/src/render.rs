//! A [`Drawing`] as Graphviz DOT text (tiers as `rank=same` groups, for `dot -Tsvg`) and
//! as SVG laid out and rendered by the `layout-rs` library (Sugiyama-style layering: edges
//! point from the upper tier down, so each tier lands on its own rank).

use crate::fabric_view::{Drawing, LinkState, Shape, Tier};
use layout::backends::svg::SVGWriter;
use layout::core::base::Orientation;
use layout::core::color::Color;
use layout::core::style::{LineStyleKind, StyleAttr};
use layout::std_shapes::render::get_shape_size;
use layout::std_shapes::shapes::{Arrow, Element, LineEndKind, ShapeKind};
use layout::topo::layout::VisualGraph;
use std::collections::BTreeMap;

const FONT: usize = 12;

/// A box's fill colour (shared by the tiered SVG drawing).
pub(crate) fn fill(t: &Tier) -> &'static str {
    if t.highlight {
        "#ffe066"
    } else if t.master {
        "#ffb347"
    } else {
        match t.shape {
            Shape::Switch => "#cfe2ff",
            Shape::Host => "#eeeeee",
            Shape::HostGroup => "#dddddd",
        }
    }
}

/// A link's colour by state.
pub(crate) fn edge_color(s: LinkState) -> &'static str {
    match s {
        LinkState::Active => "#2e7d32",
        LinkState::Degraded => "#f9a825",
        LinkState::Down => "#c62828",
    }
}

fn esc(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}

/// The drawing's one-line caption.
pub(crate) fn caption(d: &Drawing) -> String {
    format!(
        "{} switches, {} hosts, {} links ({} not active)",
        d.switches, d.hosts, d.links, d.links_not_active
    )
}

/// The drawing as Graphviz DOT.
pub fn to_dot(d: &Drawing) -> String {
    let mut o = String::from(
        "graph fabric {\n  rankdir=TB;\n  node [shape=box, style=filled, fontsize=10];\n",
    );
    o.push_str(&format!("  label=\"{}\";\n", esc(&caption(d))));
    let mut tiers: BTreeMap<u32, Vec<&Tier>> = BTreeMap::new();
    for b in &d.boxes {
        tiers.entry(b.level).or_default().push(b);
    }
    for (lvl, boxes) in tiers.iter().rev() {
        o.push_str(&format!("  subgraph tier{lvl} {{ rank=same;\n"));
        for b in boxes {
            let pen = if b.master { ", penwidth=3" } else { "" };
            let shape = if b.shape == Shape::HostGroup {
                ", shape=folder"
            } else {
                ""
            };
            o.push_str(&format!(
                "    {} [label=\"{}\", fillcolor=\"{}\"{pen}{shape}];\n",
                b.id,
                esc(&b.label),
                fill(b)
            ));
        }
        o.push_str("  }\n");
    }
    for (u, w, s, c) in &d.edges {
        let label = if *c > 1 {
            format!(", label=\"x{c}\"")
        } else {
            String::new()
        };
        let style = if *s == LinkState::Down {
            ", style=dashed"
        } else {
            ""
        };
        o.push_str(&format!(
            "  {} -- {} [color=\"{}\"{label}{style}];\n",
            d.boxes[*u].id,
            d.boxes[*w].id,
            edge_color(*s)
        ));
    }
    o.push_str("}\n");
    o
}

/// The drawing as SVG, laid out and rendered by `layout-rs`.
pub fn to_svg(d: &Drawing) -> String {
    let dir = Orientation::TopToBottom;
    let mut vg = VisualGraph::new(dir);
    let mut handles = Vec::with_capacity(d.boxes.len() + 1);
    // The caption as a borderless box above everything.
    let cap = ShapeKind::new_box(&caption(d));
    let cap_look = StyleAttr::new(
        Color::fast("white"),
        0,
        Some(Color::fast("white")),
        0,
        FONT + 2,
    );
    let cap_size = get_shape_size(dir.flip(), &cap, FONT + 2, false);
    let cap_h = vg.add_node(Element::create(cap, cap_look, dir, cap_size));
    for b in &d.boxes {
        let shape = ShapeKind::new_box(&b.label);
        let look = StyleAttr::new(
            Color::fast(if b.master { "#b35900" } else { "#444444" }),
            if b.master { 3 } else { 1 },
            Some(Color::fast(fill(b))),
            if b.shape == Shape::Switch { 0 } else { 8 },
            FONT,
        );
        let size = get_shape_size(dir.flip(), &shape, FONT, false);
        handles.push(vg.add_node(Element::create(shape, look, dir, size)));
    }
    // Invisible edges from the caption to the top tier keep it on top.
    if let Some(top) = d.boxes.iter().map(|b| b.level).max() {
        for (i, b) in d.boxes.iter().enumerate() {
            if b.level == top {
                vg.add_edge(Arrow::invisible(), cap_h, handles[i]);
            }
        }
    }
    for (u, w, s, c) in &d.edges {
        let look = StyleAttr::new(Color::fast(edge_color(*s)), 1, None, 0, FONT - 2);
        let text = if *c > 1 {
            format!("x{c}")
        } else {
            String::new()
        };
        let style = if *s == LinkState::Down {
            LineStyleKind::Dashed
        } else {
            LineStyleKind::Normal
        };
        let arrow = Arrow::new(
            LineEndKind::None,
            LineEndKind::None,
            style,
            &text,
            &look,
            &None,
            &None,
        );
        vg.add_edge(arrow, handles[*u], handles[*w]);
    }
    let mut svg = SVGWriter::new();
    vg.do_it(false, false, false, &mut svg);
    svg.finalize()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fabric_view::{DrawOptions, LinkState, arrange, tests::ft};

    #[test]
    fn dot_has_tiers_master_and_colours() {
        let mut m = ft(2, 2, 2);
        m.master_lid = Some(m.nodes[0].lid);
        m.links[0].state = LinkState::Down;
        let d = arrange(&m, &DrawOptions::default()).unwrap();
        let dot = to_dot(&d);
        assert!(dot.starts_with("graph fabric {"));
        assert_eq!(dot.matches("rank=same").count(), 3);
        assert!(dot.contains("[master SM]"));
        assert!(dot.contains("penwidth=3"));
        assert_eq!(dot.matches("style=dashed").count(), 1);
        assert_eq!(dot.matches(" -- ").count(), d.edges.len());
        assert!(dot.contains("1 not active"));
    }

    #[test]
    fn svg_is_rendered_with_every_box() {
        let m = ft(2, 3, 8);
        let d = arrange(&m, &DrawOptions::default()).unwrap();
        let svg = to_svg(&d);
        assert!(svg.contains("<svg"));
        for b in &d.boxes {
            assert!(svg.contains(&b.label), "{} missing", b.label);
        }
        assert_eq!(svg.matches(">8 hosts<").count(), 3);
        assert!(svg.contains(edge_color(LinkState::Active)));
    }
}
