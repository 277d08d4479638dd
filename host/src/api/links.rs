//! The OpenAPI links of the document: where one operation's answer names
//! what another takes (the id a POST answers, the dossier of its path), so
//! a client or a stateful tester can follow one to the other. One table,
//! [`LINKS`]; the test below holds every link to operations and
//! parameters the document has.

use utoipa::openapi::link::LinkBuilder;
use utoipa::openapi::{OpenApi, RefOr};

/// A link: from the answer `status` of the operation `from`, named `name`,
/// to the operation `to`, its parameters given as runtime expressions.
#[derive(Debug)]
struct Link {
    from: &'static str,
    statuses: &'static [&'static str],
    name: &'static str,
    to: &'static str,
    parameters: &'static [(&'static str, &'static str)],
}

/// The same dossier as the request's path.
const DOSSIER: (&str, &str) = ("dossier_id", "$request.path.dossier_id");

const LINKS: &[Link] = &[
    Link {
        from: "create_response",
        statuses: &["201", "200"],
        name: "GetVerification",
        to: "get_verification",
        parameters: &[DOSSIER, ("id", "$response.body#/id")],
    },
    Link {
        from: "create_response",
        statuses: &["201", "200"],
        name: "UpdateResponse",
        to: "update_response",
        parameters: &[DOSSIER, ("external_id", "$response.body#/external_id")],
    },
    Link {
        from: "create_response",
        statuses: &["201", "200"],
        name: "DeleteResponse",
        to: "delete_response",
        parameters: &[DOSSIER, ("external_id", "$response.body#/external_id")],
    },
    Link {
        from: "create_response",
        statuses: &["201", "200"],
        name: "ListResponses",
        to: "list_responses",
        parameters: &[DOSSIER],
    },
    Link {
        from: "create_response",
        statuses: &["201", "200"],
        name: "GetRespondent",
        to: "get_respondent",
        parameters: &[DOSSIER, ("id", "$response.body#/respondent_id")],
    },
    Link {
        from: "start_subscription",
        statuses: &["200"],
        name: "StopSubscription",
        to: "stop_subscription",
        parameters: &[DOSSIER, ("id", "$response.body#/id")],
    },
    Link {
        from: "start_subscription",
        statuses: &["200"],
        name: "ListSubscriptions",
        to: "list_subscriptions",
        parameters: &[DOSSIER],
    },
    Link {
        from: "create_fill_out_request",
        statuses: &["200"],
        name: "WithdrawFillOutRequest",
        to: "withdraw_fill_out_request",
        parameters: &[DOSSIER, ("id", "$response.body#/id")],
    },
    Link {
        from: "create_non_response",
        statuses: &["201"],
        name: "GetNonResponse",
        to: "get_non_response",
        parameters: &[DOSSIER, ("id", "$response.body#/id")],
    },
    Link {
        from: "list_respondents",
        statuses: &["200"],
        name: "GetRespondent",
        to: "get_respondent",
        parameters: &[DOSSIER, ("id", "$response.body#/0/id")],
    },
    Link {
        from: "list_protocols",
        statuses: &["200"],
        name: "GetProtocol",
        to: "get_protocol",
        parameters: &[("id", "$response.body#/0/id")],
    },
    Link {
        from: "list_questionnaires",
        statuses: &["200"],
        name: "GetQuestionnaire",
        to: "get_questionnaire",
        parameters: &[("key", "$response.body#/0/key")],
    },
];

/// Adds [`LINKS`] to the answers of `doc`'s operations.
pub fn add(doc: &mut OpenApi) {
    for item in doc.paths.paths.values_mut() {
        for operation in super::openapi::operations(item) {
            let id = operation.operation_id.clone().unwrap_or_default();
            for link in LINKS.iter().filter(|l| l.from == id) {
                for status in link.statuses {
                    let Some(RefOr::T(answer)) = operation.responses.responses.get_mut(*status)
                    else {
                        continue;
                    };
                    let mut built = LinkBuilder::new();
                    for (name, expression) in link.parameters {
                        built = built.parameter(*name, *expression);
                    }
                    let mut built = built.build();
                    // utoipa 5 writes `operation_id` where OpenAPI says
                    // `operationId`; extensions are written as named.
                    built
                        .extensions
                        .get_or_insert_with(Default::default)
                        .insert("operationId".to_owned(), link.to.into());
                    answer.links.insert(link.name.to_owned(), RefOr::T(built));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    #[test]
    fn links_name_their_operation_as_openapi_spells_it() {
        let doc = serde_json::to_value(crate::api::document()).expect("serializes");
        let link =
            &doc["paths"]["/api/v1/protocols"]["get"]["responses"]["200"]["links"]["GetProtocol"];
        assert_eq!(link["operationId"], "get_protocol");
        assert!(link.get("operation_id").is_none(), "{link}");
    }

    #[test]
    fn every_link_joins_answers_and_parameters_the_document_has() {
        let doc = crate::api::document();
        let mut operations = BTreeMap::new();
        for item in doc.paths.paths.values() {
            let mut item = item.clone();
            for operation in super::super::openapi::operations(&mut item) {
                operations.insert(
                    operation.operation_id.clone().unwrap_or_default(),
                    operation.clone(),
                );
            }
        }
        for link in LINKS {
            let from = operations
                .get(link.from)
                .unwrap_or_else(|| panic!("{}", link.from));
            let to = operations
                .get(link.to)
                .unwrap_or_else(|| panic!("{}", link.to));
            let names: Vec<&str> = to
                .parameters
                .iter()
                .flatten()
                .map(|p| p.name.as_str())
                .collect();
            for (name, _) in link.parameters {
                assert!(names.contains(name), "{} takes no {name}", link.to);
            }
            // Every parameter of the path is given.
            for parameter in to.parameters.iter().flatten() {
                if matches!(
                    parameter.parameter_in,
                    utoipa::openapi::path::ParameterIn::Path
                ) {
                    assert!(
                        link.parameters.iter().any(|(n, _)| *n == parameter.name),
                        "{} -> {}: no {}",
                        link.from,
                        link.to,
                        parameter.name
                    );
                }
            }
            for status in link.statuses {
                let Some(RefOr::T(answer)) = from.responses.responses.get(*status) else {
                    panic!("{} answers no {status}", link.from);
                };
                let made = answer.links.get(link.name);
                let Some(RefOr::T(made)) = made else {
                    panic!("{}", link.name)
                };
                let target = made.extensions.as_ref().and_then(|e| e.get("operationId"));
                assert_eq!(target, Some(&serde_json::json!(link.to)), "{}", link.name);
            }
        }
    }
}
