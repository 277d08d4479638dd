//! The pages: a questionnaire's page as a form, and the short pages that
//! say why something cannot go on or that all is done. Plain HTML that
//! works without JavaScript or the stylesheet: each question labelled by
//! its text (`widgets.rs`), one heading per page, the language declared.

use std::collections::BTreeMap;

use super::fields::FormFields;
use super::html::Html;
use super::i18n::{Lang, Msg};
use super::widgets::{self, Item, QuestionError};
use crate::domain::ids::ResponseId;
use crate::domain::kind::Kind;
use crate::domain::questionnaire::{Question, Questionnaire};
use crate::domain::text::Text;
use crate::domain::variant::Variant;

/// Where the built-in stylesheet is served.
pub const STYLESHEET: &str = "/fill_out/assets/style.css";

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
    /// The page shown, by position in the questionnaire's pages.
    pub page: usize,
    /// Its place among the pages shown, and their number.
    pub page_position: (usize, usize),
    /// Which questions are enabled, by position.
    pub enabled: &'a [bool],
    /// The form's values so far, by field name.
    pub values: &'a FormFields,
    /// Questions a submission left wrong, with why.
    pub errors: &'a BTreeMap<String, QuestionError>,
    /// Questions shown for the first time after the page was sent.
    pub new: &'a [String],
    pub csrf: &'a str,
    /// When the page was made (Unix milliseconds), sent back on submit.
    pub shown_at: i64,
    pub stylesheet: Option<&'a str>,
}

impl Form<'_> {
    /// The enabled questions of the page shown with their numbers: each
    /// answerable question's place among the enabled ones of the whole
    /// questionnaire (display items have none).
    fn items(&self) -> Vec<(Option<usize>, &Question)> {
        let q = self.questionnaire;
        let mut number = 0;
        let mut items = Vec::new();
        for (i, question) in q.questions.iter().enumerate() {
            if !self.enabled.get(i).copied().unwrap_or(false) {
                continue;
            }
            let numbered = question.answerable().then(|| {
                number += 1;
                number
            });
            if question.page == self.page {
                items.push((numbered, question));
            }
        }
        items
    }

    fn text(&self, text: &Text) -> String {
        self.variant
            .render(self.questionnaire, text, self.lang.code())
    }
}

/// The page of one questionnaire: the enabled questions of the page shown,
/// in definition order, with the answers given so far chosen; Next (Send
/// on the last page), Back (after the first), and Stop.
pub fn questionnaire(form: &Form<'_>) -> String {
    let q = form.questionnaire;
    let lang = form.lang;
    let name = q.name_in(lang.code());
    let (at, of) = form.position;
    let (page_at, pages) = form.page_position;
    let mut counter = format!(
        "{} {at} {} {of}",
        Msg::QuestionnaireOf.text(lang),
        Msg::Of.text(lang)
    );
    if q.paged {
        counter = format!(
            "{counter} \u{b7} {} {page_at} {} {pages}",
            Msg::PageOf.text(lang),
            Msg::Of.text(lang)
        );
    }
    let title = if form.errors.is_empty() {
        format!("{name} \u{2013} {counter}")
    } else {
        format!("{} \u{2013} {name}", Msg::ErrorSummaryTitle.text(lang))
    };
    let items = form.items();
    let page = q.pages.get(form.page);
    document(lang, &title, form.stylesheet, |h| {
        h.raw("<p class=\"counter\">").text(&counter).raw("</p>\n");
        h.raw("<h1>").text(name).raw("</h1>\n");
        if let Some(description) = q.description.as_ref().filter(|_| page_at == 1) {
            h.raw("<p class=\"description\"");
            text_language(h, description, q, lang);
            h.raw(">").text(&form.text(description)).raw("</p>\n");
        }
        if !form.errors.is_empty() {
            error_summary(h, form, &items);
        } else if !form.new.is_empty() {
            h.raw("<div class=\"notice\" role=\"status\">\n<h2>")
                .text(Msg::NewQuestionsTitle.text(lang))
                .raw("</h2>\n<p>")
                .text(Msg::NewQuestionsText.text(lang))
                .raw("</p>\n</div>\n");
        }
        h.raw("<form method=\"post\" novalidate")
            .attr(
                "action",
                &format!("/fill_out/session/responses/{}", form.response_id),
            )
            .raw(">\n");
        let hidden = |h: &mut Html, name: &'static str, value: &str| {
            h.raw("<input type=\"hidden\"")
                .attr("name", name)
                .attr("value", value)
                .raw(">\n");
        };
        hidden(h, "csrf", form.csrf);
        hidden(h, "shown_at", &form.shown_at.to_string());
        hidden(h, "page", &form.page.to_string());
        let shown: Vec<&str> = items
            .iter()
            .map(|(_, question)| question.key.as_str())
            .collect();
        hidden(h, "shown", &shown.join(" "));
        if let Some(page) = page {
            if let Some(title) = &page.title {
                h.raw("<h2 class=\"page-title\"");
                text_language(h, title, q, lang);
                h.raw(">").text(&form.text(title)).raw("</h2>\n");
            }
            if let Some(intro) = &page.intro {
                h.raw("<p class=\"intro\"");
                text_language(h, intro, q, lang);
                h.raw(">").text(&form.text(intro)).raw("</p>\n");
            }
        }
        if items.iter().any(|(_, question)| question.required) {
            h.raw("<p class=\"required-note\">")
                .text(Msg::RequiredNote.text(lang))
                .raw("</p>\n");
        }
        for (number, question) in &items {
            widgets::question(
                h,
                &Item {
                    q,
                    variant: form.variant,
                    lang,
                    question,
                    number: *number,
                    values: form.values,
                    error: form.errors.get(&question.key).copied(),
                    new: form.new.contains(&question.key),
                },
            );
        }
        let last = at == of && page_at == pages;
        h.raw("<div class=\"actions\">\n");
        // Next comes first: pressing Enter in a field sends the form with
        // the first button.
        h.raw("<button type=\"submit\" name=\"action\" value=\"submit\">")
            .text(if last {
                Msg::Send.text(lang)
            } else {
                Msg::Next.text(lang)
            })
            .raw("</button>\n");
        if page_at > 1 {
            h.raw("<button type=\"submit\" name=\"action\" value=\"back\" class=\"secondary\" formnovalidate>")
                .text(Msg::Back.text(lang))
                .raw("</button>\n");
        }
        h.raw("<button type=\"submit\" name=\"action\" value=\"interrupt\" class=\"secondary\" formnovalidate>")
            .text(Msg::Interrupt.text(lang))
            .raw("</button>\n");
        h.raw("</div>\n</form>\n");
    })
}

/// The box at the top of a page sent back: what is wrong, each a link
/// to its question and what it says.
fn error_summary(h: &mut Html, form: &Form<'_>, items: &[(Option<usize>, &Question)]) {
    let lang = form.lang;
    h.raw("<div class=\"error-summary\" role=\"alert\" aria-labelledby=\"error-summary-title\">\n");
    h.raw("<h2 id=\"error-summary-title\">")
        .text(Msg::ErrorSummaryTitle.text(lang))
        .raw("</h2>\n");
    h.raw("<p>")
        .text(Msg::ErrorSummaryText.text(lang))
        .raw("</p>\n<ul>\n");
    for (number, question) in items {
        if form.errors.contains_key(&question.key) {
            let target = match question.kind {
                Kind::Date { .. } => format!("#q-{}-first", question.key),
                _ => format!("#q-{}", question.key),
            };
            h.raw("<li><a").attr("href", &target).raw(">");
            if let Some(number) = number {
                h.number(number).raw(". ");
            }
            h.text(&form.text(&question.title));
            h.raw("</a></li>\n");
        }
    }
    h.raw("</ul>\n</div>\n");
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
        let values = FormFields::from([("v_1".to_owned(), vec!["a1".to_owned()])]);
        let enabled: Vec<bool> = q
            .questions
            .iter()
            .map(|question| variant.shows(&q, question))
            .collect();
        questionnaire(&Form {
            questionnaire: &q,
            variant,
            lang,
            response_id: ResponseId(12),
            position: (2, 3),
            page: 0,
            page_position: (1, 1),
            enabled: &enabled,
            values: &values,
            errors,
            new: &[],
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
