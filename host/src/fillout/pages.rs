//! The pages: a questionnaire as one form, and the short pages that say
//! why something cannot go on or that all is done. Plain HTML that works
//! without JavaScript or the stylesheet: every question a fieldset whose
//! legend is the question, every option a labelled radio button, one
//! heading per page, the language declared.

use std::collections::BTreeMap;

use super::html::Html;
use super::i18n::{Lang, Msg};
use crate::domain::ids::ResponseId;
use crate::domain::questionnaire::{Question, Questionnaire};
use crate::domain::text::Text;
use crate::domain::variant::Variant;

/// Where the built-in stylesheet is served.
pub const STYLESHEET: &str = "/fill_out/assets/style.css";

/// Why a question of a submitted page is not accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuestionError {
    /// Required and not answered.
    Unanswered,
    /// Answered with something that is not one of its options.
    InvalidOption,
}

impl QuestionError {
    fn message(self) -> Msg {
        match self {
            QuestionError::Unanswered => Msg::Unanswered,
            QuestionError::InvalidOption => Msg::InvalidOption,
        }
    }
}

/// A whole page around `body`: the built-in stylesheet, then the caller's.
pub fn document(
    lang: Lang,
    title: &str,
    stylesheet: Option<&str>,
    body: impl FnOnce(&mut Html),
) -> String {
    let mut h = Html::new();
    h.raw("<!doctype html>\n<html")
        .attr("lang", lang.code())
        .raw(">\n<head>\n");
    h.raw("<meta charset=\"utf-8\">\n");
    h.raw("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    h.raw("<meta name=\"referrer\" content=\"no-referrer\">\n");
    h.raw("<title>").text(title).raw("</title>\n");
    h.raw("<link rel=\"stylesheet\"")
        .attr("href", STYLESHEET)
        .raw(">\n");
    if let Some(href) = stylesheet {
        h.raw("<link rel=\"stylesheet\"")
            .attr("href", href)
            .raw(">\n");
    }
    h.raw("</head>\n<body>\n<main>\n");
    body(&mut h);
    h.raw("</main>\n</body>\n</html>\n");
    h.finish()
}

/// A page that only says something: a heading and a paragraph.
pub fn message(lang: Lang, title: Msg, text: Msg, stylesheet: Option<&str>) -> String {
    document(lang, title.text(lang), stylesheet, |h| {
        h.raw("<h1>").text(title.text(lang)).raw("</h1>\n");
        h.raw("<p>").text(text.text(lang)).raw("</p>\n");
    })
}

/// The page a one-time `fill_out_url` opens: a button whose form posts the
/// link's parts back, so only a person's click spends the link (a mail
/// scanner's GET spends nothing). `fields` are the link's query
/// parameters; `stylesheet` the session's.
pub fn start(
    lang: Lang,
    text: Msg,
    action: &str,
    stylesheet: Option<&str>,
    fields: &[(&'static str, &str)],
) -> String {
    document(lang, Msg::StartTitle.text(lang), stylesheet, |h| {
        h.raw("<h1>")
            .text(Msg::StartTitle.text(lang))
            .raw("</h1>\n");
        h.raw("<p>").text(text.text(lang)).raw("</p>\n");
        h.raw("<form method=\"post\"")
            .attr("action", action)
            .raw(">\n");
        for &(name, value) in fields {
            h.raw("<input type=\"hidden\"")
                .attr("name", name)
                .attr("value", value)
                .raw(">\n");
        }
        h.raw("<div class=\"actions\">\n<button type=\"submit\">")
            .text(Msg::StartButton.text(lang))
            .raw("</button>\n</div>\n</form>\n");
    })
}

/// Everything a questionnaire page shows.
#[derive(Debug)]
pub struct Form<'a> {
    pub questionnaire: &'a Questionnaire,
    pub variant: &'a Variant,
    pub lang: Lang,
    pub response_id: ResponseId,
    /// This questionnaire's place among the session's, and their number.
    pub position: (usize, usize),
    /// Question key to the option key chosen so far.
    pub answers: &'a BTreeMap<String, String>,
    /// Questions a submission left wrong, with why.
    pub errors: &'a BTreeMap<String, QuestionError>,
    pub csrf: &'a str,
    /// When the page was made (Unix milliseconds), sent back on submit.
    pub shown_at: i64,
    pub stylesheet: Option<&'a str>,
}

/// The page of one questionnaire: every question the variant shows, in
/// definition order, with the answers given so far chosen.
pub fn questionnaire(form: &Form<'_>) -> String {
    let q = form.questionnaire;
    let lang = form.lang;
    let (at, of) = form.position;
    let counter = format!(
        "{} {at} {} {of}",
        Msg::QuestionnaireOf.text(lang),
        Msg::Of.text(lang)
    );
    let title = if form.errors.is_empty() {
        format!("{} – {counter}", q.name)
    } else {
        format!("{} – {}", Msg::ErrorSummaryTitle.text(lang), q.name)
    };
    let shown: Vec<(usize, &Question)> = q
        .questions
        .iter()
        .filter(|question| form.variant.shows(q, question))
        .enumerate()
        .map(|(i, question)| (i + 1, question))
        .collect();
    document(lang, &title, form.stylesheet, |h| {
        h.raw("<p class=\"counter\">").text(&counter).raw("</p>\n");
        h.raw("<h1>").text(&q.name).raw("</h1>\n");
        if let Some(description) = &q.description {
            h.raw("<p class=\"description\"");
            text_language(h, description, q, lang);
            h.raw(">")
                .text(&form.variant.render(q, description, lang.code()))
                .raw("</p>\n");
        }
        if !form.errors.is_empty() {
            error_summary(h, form, &shown);
        }
        h.raw("<form method=\"post\" novalidate")
            .attr(
                "action",
                &format!("/fill_out/session/responses/{}", form.response_id),
            )
            .raw(">\n");
        h.raw("<input type=\"hidden\" name=\"csrf\"")
            .attr("value", form.csrf)
            .raw(">\n");
        h.raw("<input type=\"hidden\" name=\"shown_at\"")
            .attr("value", &form.shown_at.to_string())
            .raw(">\n");
        if shown.iter().any(|(_, question)| question.required) {
            h.raw("<p class=\"required-note\">")
                .text(Msg::RequiredNote.text(lang))
                .raw("</p>\n");
        }
        for (number, question) in &shown {
            fieldset(h, form, *number, question);
        }
        let last = at == of;
        h.raw("<div class=\"actions\">\n");
        h.raw("<button type=\"submit\" name=\"action\" value=\"submit\">")
            .text(if last {
                Msg::Send.text(lang)
            } else {
                Msg::Next.text(lang)
            })
            .raw("</button>\n");
        h.raw("<button type=\"submit\" name=\"action\" value=\"interrupt\" class=\"secondary\" formnovalidate>")
            .text(Msg::Interrupt.text(lang))
            .raw("</button>\n");
        h.raw("</div>\n</form>\n");
    })
}

/// The box at the top of a page sent back: what is missing, each a link
/// to its question.
fn error_summary(h: &mut Html, form: &Form<'_>, shown: &[(usize, &Question)]) {
    let (q, lang) = (form.questionnaire, form.lang);
    h.raw("<div class=\"error-summary\" role=\"alert\" aria-labelledby=\"error-summary-title\">\n");
    h.raw("<h2 id=\"error-summary-title\">")
        .text(Msg::ErrorSummaryTitle.text(lang))
        .raw("</h2>\n");
    h.raw("<p>")
        .text(Msg::ErrorSummaryText.text(lang))
        .raw("</p>\n<ul>\n");
    for (number, question) in shown {
        if form.errors.contains_key(&question.key) {
            h.raw("<li><a")
                .attr("href", &format!("#q-{}", question.key))
                .raw(">");
            h.number(number).raw(". ");
            h.text(&form.variant.render(q, &question.title, lang.code()));
            h.raw("</a></li>\n");
        }
    }
    h.raw("</ul>\n</div>\n");
}

/// One question: a fieldset with the question as its legend and a
/// labelled radio button per option.
fn fieldset(h: &mut Html, form: &Form<'_>, number: usize, question: &Question) {
    let (q, lang) = (form.questionnaire, form.lang);
    let error = form.errors.get(&question.key);
    h.raw("<fieldset")
        .attr("id", &format!("q-{}", question.key));
    if error.is_some() {
        h.attr("class", "invalid")
            .attr("aria-describedby", &format!("e-{}", question.key));
    }
    h.raw(">\n<legend");
    text_language(h, &question.title, q, lang);
    h.raw("><span class=\"number\">")
        .number(number)
        .raw(".</span> ");
    h.text(&form.variant.render(q, &question.title, lang.code()));
    if question.required {
        h.raw(" <span class=\"required\" aria-hidden=\"true\">*</span><span class=\"visually-hidden\"");
        h.attr("lang", lang.code()).raw(">");
        h.text(Msg::Required.text(lang)).raw("</span>");
    }
    h.raw("</legend>\n");
    if let Some(error) = error {
        h.raw("<p class=\"error\"")
            .attr("id", &format!("e-{}", question.key))
            .raw(">");
        h.text(error.message().text(lang)).raw("</p>\n");
    }
    let chosen = form.answers.get(&question.key);
    h.raw("<div class=\"options\">\n");
    for option in &question.options {
        h.raw("<label");
        text_language(h, &option.description, q, lang);
        h.raw("><input type=\"radio\"")
            .attr("name", &question.key)
            .attr("value", &option.key);
        if chosen == Some(&option.key) {
            h.raw(" checked");
        }
        h.raw("> <span>")
            .text(&form.variant.render(q, &option.description, lang.code()))
            .raw("</span></label>\n");
    }
    h.raw("</div>\n</fieldset>\n");
}

/// ` lang="xx"` when a text is shown in another language than the page's
/// (a questionnaire without a translation), so a screen reader reads it
/// in the right voice.
fn text_language(h: &mut Html, text: &Text, q: &Questionnaire, lang: Lang) {
    let shown_in = text.language(lang.code(), &q.language);
    if shown_in != lang.code() {
        h.attr("lang", shown_in);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::testing;

    fn render(variant: &Variant, lang: Lang, errors: &BTreeMap<String, QuestionError>) -> String {
        let q = testing::questionnaire();
        let answers = BTreeMap::from([("v_1".to_owned(), "a1".to_owned())]);
        questionnaire(&Form {
            questionnaire: &q,
            variant,
            lang,
            response_id: ResponseId(12),
            position: (2, 3),
            answers: &answers,
            errors,
            csrf: "token\"><x",
            shown_at: 1_772_355_600_000,
            stylesheet: Some("https://epd.example.org/rom.css"),
        })
    }

    #[test]
    fn a_questionnaire_is_a_form_of_fieldsets_with_labelled_radio_buttons() {
        let page = render(&Variant::default(), Lang::En, &BTreeMap::new());
        assert!(page.starts_with("<!doctype html>\n<html lang=\"en\">"));
        assert!(page.contains("<title>Mini &lt;check&gt; – Questionnaire 2 of 3</title>"));
        assert!(page.contains("<h1>Mini &lt;check&gt;</h1>"));
        assert!(page.contains("In the past 2 weeks:"));
        assert!(page.contains(
            "<form method=\"post\" novalidate action=\"/fill_out/session/responses/12\">"
        ));
        assert!(page.contains("value=\"token&quot;&gt;&lt;x\""));
        assert!(page.contains("<fieldset id=\"q-v_1\">\n<legend><span class=\"number\">1.</span> In the past 2 weeks, {{ name }}, were you sad? <span class=\"required\""));
        assert!(page.contains("<label><input type=\"radio\" name=\"v_1\" value=\"a1\" checked> <span>Yes</span></label>"));
        assert!(page.contains(
            "<label><input type=\"radio\" name=\"v_1\" value=\"a0\"> <span>No</span></label>"
        ));
        // Optional: no asterisk.
        assert!(page.contains("<span class=\"number\">2.</span> Were you tired?</legend>"));
        assert!(page.contains(">Next</button>"));
        let css = page.find("/fill_out/assets/style.css").expect("built-in");
        let own = page
            .find("https://epd.example.org/rom.css")
            .expect("caller's");
        assert!(
            css < own,
            "the caller's stylesheet comes after the built-in one"
        );
    }

    #[test]
    fn flags_hide_questions_textvars_fill_texts_and_dutch_is_dutch() {
        let variant = Variant {
            flags: [("short".to_owned(), true)].into(),
            textvars: [("period".to_owned(), "3 weken".to_owned())].into(),
        };
        let page = render(&variant, Lang::Nl, &BTreeMap::new());
        assert!(page.contains("<html lang=\"nl\">"));
        assert!(!page.contains("v_2"), "the hidden question is absent");
        assert!(page.contains("In de afgelopen 3 weken:"));
        assert!(page.contains("Vragenlijst 2 van 3"));
        assert!(page.contains("Was u de afgelopen 3 weken somber?"));
        assert!(page.contains(">Stoppen en later verdergaan</button>"));
    }

    #[test]
    fn a_text_without_a_translation_says_its_language() {
        let page = render(&Variant::default(), Lang::Nl, &BTreeMap::new());
        assert!(page.contains(
            "<legend lang=\"en\"><span class=\"number\">2.</span> Were you tired?</legend>"
        ));
    }

    #[test]
    fn a_page_sent_back_says_what_is_missing_and_where() {
        let errors = BTreeMap::from([("v_1".to_owned(), QuestionError::Unanswered)]);
        let page = render(&Variant::default(), Lang::En, &errors);
        assert!(
            page.contains(
                "<title>Some questions still need an answer – Mini &lt;check&gt;</title>"
            )
        );
        assert!(page.contains("role=\"alert\""));
        assert!(page.contains(
            "<li><a href=\"#q-v_1\">1. In the past 2 weeks, {{ name }}, were you sad?</a></li>"
        ));
        assert!(
            page.contains("<fieldset id=\"q-v_1\" class=\"invalid\" aria-describedby=\"e-v_1\">")
        );
        assert!(page.contains("<p class=\"error\" id=\"e-v_1\">Please answer this question.</p>"));
        // The answer given is still chosen.
        assert!(page.contains("value=\"a1\" checked"));
    }

    #[test]
    fn message_pages_escape_nothing_they_do_not_need_to() {
        let page = message(Lang::Nl, Msg::DoneTitle, Msg::DoneText, None);
        assert!(page.contains("<title>Bedankt</title>"));
        assert!(page.contains("<h1>Bedankt</h1>"));
        assert!(!page.contains("<form"));
    }
}
