//! QoS policy checks of the admin API: what ApplyQosPolicy refuses before anything is
//! proposed (the size limit, a text that does not parse, with the line and column of its
//! first error) and the lints it reports with an accepted text. Pure.

use super::AdminError;

/// Checks a QoS policy text: `Err` for a text over [`qos::MAX_POLICY_BYTES`] or one that
/// does not parse; otherwise its lints, one per line as "CODE line:col message" (checked
/// against OpenSM's default tables and the partitions' SLs given).
pub fn check(text: &str, partition_sls: &[(u16, u8)]) -> Result<Vec<String>, AdminError> {
    if text.len() > qos::MAX_POLICY_BYTES {
        return Err(AdminError::Limit {
            what: "the QoS policy text (bytes)",
            size: text.len(),
            limit: qos::MAX_POLICY_BYTES,
            name: "MAX_POLICY_BYTES",
        });
    }
    let policy = qos::Policy::parse(text).map_err(|errs| {
        let first = errs.first();
        let pos = first.and_then(|e| e.pos());
        AdminError::PolicySyntax {
            line: pos.map_or(0, |p| p.line),
            col: pos.map_or(0, |p| p.col),
            first: first.map(|e| e.to_string()).unwrap_or_default(),
            count: errs.len(),
        }
    })?;
    Ok(
        qos::lints(&policy, &qos::QosTables::default(), partition_sls)
            .into_iter()
            .map(|l| {
                format!(
                    "{} {}:{} {}",
                    l.code.code(),
                    l.pos.line,
                    l.pos.col,
                    l.message
                )
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn syntax_errors_carry_their_position_and_limits_hold() {
        let e = check("qos-levels\n  qos-level\n    sl: 99\n", &[]).unwrap_err();
        assert!(matches!(e, AdminError::PolicySyntax { .. }), "{e}");
        assert_eq!(e.code(), "E_NODE_POLICY_SYNTAX");
        let big = "#".repeat(qos::MAX_POLICY_BYTES + 1);
        assert_eq!(check(&big, &[]).unwrap_err().code(), "E_ADMIN_LIMIT");
        let ok =
            "qos-levels\n qos-level\n  name: DEFAULT\n  sl: 0\n end-qos-level\nend-qos-levels\n";
        assert!(check(ok, &[]).is_ok());
    }
}
