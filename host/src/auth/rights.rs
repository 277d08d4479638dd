//! Rights: the endpoint groups a token may use (docs/api/rights.md#rights).

use std::fmt;
use std::str::FromStr;

/// One endpoint group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Right {
    Responses,
    ProtocolSubscriptions,
    FillOutSessions,
    ReportCalculations,
    Stats,
    NonResponses,
    Respondents,
    Protocols,
    Questionnaires,
    /// `POST /api/v1/responses/import`: many responses, of any dossier,
    /// in one request.
    Import,
    Alarms,
}

impl Right {
    pub const ALL: [Right; 11] = [
        Right::Responses,
        Right::ProtocolSubscriptions,
        Right::FillOutSessions,
        Right::ReportCalculations,
        Right::Stats,
        Right::NonResponses,
        Right::Respondents,
        Right::Protocols,
        Right::Questionnaires,
        Right::Import,
        Right::Alarms,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Right::Responses => "responses",
            Right::ProtocolSubscriptions => "protocol_subscriptions",
            Right::FillOutSessions => "fill_out_sessions",
            Right::ReportCalculations => "report_calculations",
            Right::Stats => "stats",
            Right::NonResponses => "non_responses",
            Right::Respondents => "respondents",
            Right::Protocols => "protocols",
            Right::Questionnaires => "questionnaires",
            Right::Import => "import",
            Right::Alarms => "alarms",
        }
    }

    /// Whether the group's endpoints touch dossier data (and so need a JWT
    /// `sub` and write an access-log row).
    pub fn is_dossier_group(self) -> bool {
        !matches!(self, Right::Protocols | Right::Questionnaires)
    }
}

impl fmt::Display for Right {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Right {
    type Err = String;

    fn from_str(s: &str) -> Result<Right, String> {
        Right::ALL
            .into_iter()
            .find(|r| r.as_str() == s.trim())
            .ok_or_else(|| {
                let names: Vec<&str> = Right::ALL.iter().map(|r| r.as_str()).collect();
                format!("unknown right {s:?}; rights are {}", names.join(", "))
            })
    }
}

/// Parses a comma-separated list of rights; `all` grants every group.
pub fn parse_list(text: &str) -> Result<Vec<Right>, String> {
    let mut rights = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        if part == "all" {
            rights.extend(Right::ALL);
        } else {
            rights.push(part.parse()?);
        }
    }
    rights.sort();
    rights.dedup();
    Ok(rights)
}

/// The stored form: comma-separated names.
pub fn to_list(rights: &[Right]) -> String {
    rights
        .iter()
        .map(|r| r.as_str())
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rights_round_trip_and_all_expands() {
        assert_eq!(
            parse_list("responses, stats").expect("valid"),
            vec![Right::Responses, Right::Stats]
        );
        assert_eq!(parse_list("all").expect("valid").len(), 11);
        assert!(
            parse_list("responses,admin")
                .expect_err("invalid")
                .contains("admin")
        );
        let all = parse_list("all").expect("valid");
        assert_eq!(parse_list(&to_list(&all)).expect("valid"), all);
    }
}
