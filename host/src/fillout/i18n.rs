//! The pages' own words in English and Dutch, and the choice of language:
//! the questionnaire's, unless the browser prefers another language the
//! questionnaire is written in (Accept-Language).

use crate::domain::questionnaire::Questionnaire;
use crate::domain::text::Text;

/// A language the pages speak.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lang {
    En,
    Nl,
}

impl Lang {
    /// The ISO 639-1 code.
    pub fn code(self) -> &'static str {
        match self {
            Lang::En => "en",
            Lang::Nl => "nl",
        }
    }

    fn of_code(code: &str) -> Option<Lang> {
        match code {
            "en" => Some(Lang::En),
            "nl" => Some(Lang::Nl),
            _ => None,
        }
    }

    /// The language of a page with no questionnaire on it: the browser's
    /// preference among ours, else English.
    pub fn for_browser(accept_language: Option<&str>) -> Lang {
        preferences(accept_language.unwrap_or_default())
            .into_iter()
            .find_map(|code| Lang::of_code(&code))
            .unwrap_or(Lang::En)
    }

    /// The language of a questionnaire's page: the first of `asked` (the
    /// session's `language`, then the fill-out request's) that the
    /// questionnaire is written in and the pages speak; else as
    /// [`Lang::for_questionnaire`] chooses.
    pub fn for_page(
        asked: &[Option<&str>],
        accept_language: Option<&str>,
        q: &Questionnaire,
    ) -> Lang {
        let written = written_in(q);
        asked
            .iter()
            .flatten()
            .filter(|code| written.iter().any(|w| w == *code))
            .find_map(|code| Lang::of_code(code))
            .unwrap_or_else(|| Lang::for_questionnaire(accept_language, q))
    }

    /// The language of a questionnaire's page: the first language the
    /// browser accepts that the questionnaire is written in and the pages
    /// speak; else the questionnaire's own language when the pages speak
    /// it; else English.
    pub fn for_questionnaire(accept_language: Option<&str>, q: &Questionnaire) -> Lang {
        let written = written_in(q);
        preferences(accept_language.unwrap_or_default())
            .into_iter()
            .filter(|code| written.iter().any(|w| w == code))
            .find_map(|code| Lang::of_code(&code))
            .or_else(|| Lang::of_code(&q.language))
            .unwrap_or(Lang::En)
    }
}

/// The languages every question of `q` has a text in (its own language
/// always).
fn written_in(q: &Questionnaire) -> Vec<String> {
    let mut languages = vec![q.language.clone()];
    let mut localized = q.questions.iter().map(|question| match &question.title {
        Text::Plain(_) => Vec::new(),
        Text::Localized(map) => map.keys().cloned().collect(),
    });
    if let Some(first) = localized.next() {
        let common: Vec<String> = localized.fold(first, |acc, these| {
            acc.into_iter().filter(|l| these.contains(l)).collect()
        });
        languages.extend(common);
    }
    languages
}

/// The primary language subtags of an Accept-Language header, most wanted
/// first (RFC 9110 §12.5.4); `q=0` means not wanted.
fn preferences(header: &str) -> Vec<String> {
    let mut ranked: Vec<(u16, usize, String)> = header
        .split(',')
        .take(32)
        .enumerate()
        .filter_map(|(at, part)| {
            let mut pieces = part.split(';');
            let tag = pieces.next()?.trim();
            let primary = tag.split('-').next()?.to_ascii_lowercase();
            if primary.is_empty()
                || primary.len() > 8
                || !primary.bytes().all(|b| b.is_ascii_alphabetic())
            {
                return None;
            }
            let weight = pieces
                .find_map(|p| p.trim().strip_prefix("q="))
                .map_or(Some(1000), parse_weight)?;
            (weight > 0).then_some((weight, at, primary))
        })
        .collect();
    ranked.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    ranked.into_iter().map(|(_, _, tag)| tag).collect()
}

/// A quality value `0`..`1` with up to three decimals, in thousandths.
fn parse_weight(text: &str) -> Option<u16> {
    let value: f32 = text.trim().parse().ok()?;
    (0.0..=1.0)
        .contains(&value)
        .then(|| (value * 1000.0).round() as u16)
}

/// Every sentence the pages say themselves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Msg {
    /// "Questionnaire {n} of {total}": the words around the numbers.
    QuestionnaireOf,
    Of,
    RequiredNote,
    Required,
    ErrorSummaryTitle,
    ErrorSummaryText,
    Unanswered,
    InvalidOption,
    PageOf,
    Back,
    ChooseOne,
    Or,
    Day,
    Month,
    Year,
    DateHintDay,
    DateHintMonth,
    DateHintYear,
    WholeNumber,
    Number,
    From,
    UpTo,
    AtLeast,
    AtMost,
    ScaleHint,
    MaxLengthBefore,
    MaxLengthAfter,
    NotWhole,
    NotANumber,
    EnterANumber,
    TooLongBefore,
    TooLongAfter,
    DateInvalidDay,
    DateInvalidMonth,
    DateInvalidYear,
    ExclusiveBefore,
    ExclusiveAfter,
    NewQuestionsTitle,
    NewQuestionsText,
    NewTag,
    Next,
    Send,
    Interrupt,
    LinkTamperedTitle,
    LinkTamperedText,
    LinkExpiredTitle,
    LinkExpiredText,
    LinkSpentTitle,
    LinkSpentText,
    LinkRevokedTitle,
    LinkRevokedText,
    StartTitle,
    StartText,
    /// A `completing_url`'s page: it works again and again.
    StartAgainText,
    StartButton,
    CompletedAlreadyTitle,
    CompletedAlreadyText,
    SessionGoneTitle,
    SessionGoneText,
    FormRefusedTitle,
    FormRefusedText,
    NotAvailableTitle,
    NotAvailableText,
    DoneTitle,
    DoneText,
    PausedTitle,
    PausedText,
    NothingOpenTitle,
    NothingOpenText,
    TooLargeTitle,
    TooLargeText,
    TooManyTitle,
    TooManyText,
    /// A working link or a session asked too often.
    TooOftenText,
    FailedTitle,
    FailedText,
}

impl Msg {
    pub fn text(self, lang: Lang) -> &'static str {
        let (en, nl) = match self {
            Msg::QuestionnaireOf => ("Questionnaire", "Vragenlijst"),
            Msg::Of => ("of", "van"),
            Msg::RequiredNote => (
                "Questions marked with * need an answer.",
                "Vragen met een * moeten beantwoord worden.",
            ),
            Msg::Required => ("(needs an answer)", "(moet beantwoord worden)"),
            Msg::ErrorSummaryTitle => (
                "Some questions still need an answer",
                "Sommige vragen moeten nog beantwoord worden",
            ),
            Msg::ErrorSummaryText => (
                "Your answers so far are kept. Please answer these questions:",
                "Uw antwoorden tot nu toe zijn bewaard. Beantwoord nog deze vragen:",
            ),
            Msg::Unanswered => ("Please answer this question.", "Beantwoord deze vraag."),
            Msg::InvalidOption => (
                "Please choose one of the answers.",
                "Kies een van de antwoorden.",
            ),
            Msg::PageOf => ("Page", "Pagina"),
            Msg::Back => ("Back", "Vorige"),
            Msg::ChooseOne => ("Choose an answer", "Kies een antwoord"),
            Msg::Or => ("or", "of"),
            Msg::Day => ("Day", "Dag"),
            Msg::Month => ("Month", "Maand"),
            Msg::Year => ("Year", "Jaar"),
            Msg::DateHintDay => (
                "Day, month and year, for example 17 5 2024",
                "Dag, maand en jaar, bijvoorbeeld 17 5 2024",
            ),
            Msg::DateHintMonth => (
                "Month and year, for example 5 2024",
                "Maand en jaar, bijvoorbeeld 5 2024",
            ),
            Msg::DateHintYear => ("Year, for example 2024", "Jaar, bijvoorbeeld 2024"),
            Msg::WholeNumber => ("A whole number", "Een heel getal"),
            Msg::Number => ("A number", "Een getal"),
            Msg::From => ("from", "van"),
            Msg::UpTo => ("to", "tot en met"),
            Msg::AtLeast => ("of at least", "van minstens"),
            Msg::AtMost => ("of at most", "van hoogstens"),
            Msg::ScaleHint => ("Choose a number", "Kies een getal"),
            Msg::MaxLengthBefore => ("At most", "Hoogstens"),
            Msg::MaxLengthAfter => ("characters", "tekens"),
            Msg::NotWhole => (
                "Enter a whole number, without a decimal point.",
                "Vul een heel getal in, zonder komma.",
            ),
            Msg::NotANumber => (
                "Enter a number, such as 7.5.",
                "Vul een getal in, zoals 7,5.",
            ),
            Msg::EnterANumber => ("Enter a number", "Vul een getal in"),
            Msg::TooLongBefore => ("Use at most", "Gebruik hoogstens"),
            Msg::TooLongAfter => ("characters.", "tekens."),
            Msg::DateInvalidDay => (
                "Enter a date that exists: day, month and year (four digits).",
                "Vul een bestaande datum in: dag, maand en jaar (vier cijfers).",
            ),
            Msg::DateInvalidMonth => (
                "Enter a month from 1 to 12 and a year of four digits.",
                "Vul een maand van 1 tot en met 12 in en een jaar van vier cijfers.",
            ),
            Msg::DateInvalidYear => (
                "Enter a year of four digits.",
                "Vul een jaar van vier cijfers in.",
            ),
            Msg::ExclusiveBefore => ("Tick", "Vink"),
            Msg::ExclusiveAfter => (
                "on its own, or other answers without it.",
                "alleen aan, of andere antwoorden zonder dit.",
            ),
            Msg::NewQuestionsTitle => (
                "There are more questions on this page",
                "Er staan meer vragen op deze pagina",
            ),
            Msg::NewQuestionsText => (
                "Because of your answers, questions were added to this page; they are marked \u{201c}new\u{201d}. Please look at them, then press the button again.",
                "Door uw antwoorden zijn er vragen bij gekomen op deze pagina; ze zijn gemarkeerd met \u{201c}nieuw\u{201d}. Bekijk ze en druk dan opnieuw op de knop.",
            ),
            Msg::NewTag => ("new", "nieuw"),
            Msg::Next => ("Next", "Volgende"),
            Msg::Send => ("Send answers", "Antwoorden versturen"),
            Msg::Interrupt => ("Stop and continue later", "Stoppen en later verdergaan"),
            Msg::LinkTamperedTitle => ("This link does not work", "Deze link werkt niet"),
            Msg::LinkTamperedText => (
                "The link may be incomplete or changed. Please ask for a new link where you received this one.",
                "De link is misschien onvolledig of veranderd. Vraag een nieuwe link aan waar u deze hebt gekregen.",
            ),
            Msg::LinkExpiredTitle => ("This link has expired", "Deze link is verlopen"),
            Msg::LinkExpiredText => (
                "For your safety a link works only for a short time. Please ask for a new link where you received this one.",
                "Voor uw veiligheid werkt een link maar korte tijd. Vraag een nieuwe link aan waar u deze hebt gekregen.",
            ),
            Msg::LinkSpentTitle => (
                "This link has been used already",
                "Deze link is al gebruikt",
            ),
            Msg::LinkSpentText => (
                "For your safety a link works only once. Please ask for a new link where you received this one.",
                "Voor uw veiligheid werkt een link maar één keer. Vraag een nieuwe link aan waar u deze hebt gekregen.",
            ),
            Msg::LinkRevokedTitle => ("This link no longer works", "Deze link werkt niet meer"),
            Msg::LinkRevokedText => (
                "It has been withdrawn. Please ask for a new link where you received this one.",
                "Hij is ingetrokken. Vraag een nieuwe link aan waar u deze hebt gekregen.",
            ),
            Msg::StartTitle => ("Your questionnaires", "Uw vragenlijsten"),
            Msg::StartAgainText => (
                "Press the button to start, or to continue where you left off.",
                "Druk op de knop om te beginnen, of om verder te gaan waar u gebleven was.",
            ),
            Msg::StartText => (
                "Press the button to start. The link works once: after that, this browser continues where you are.",
                "Druk op de knop om te beginnen. De link werkt één keer: daarna gaat u in deze browser verder.",
            ),
            Msg::StartButton => ("Start", "Beginnen"),
            Msg::CompletedAlreadyTitle => (
                "This questionnaire was completed already",
                "Deze vragenlijst was al ingevuld",
            ),
            Msg::CompletedAlreadyText => (
                "It was completed elsewhere in the meantime, so the answers on this page were not saved. Open the link you were given again to go on with anything that is left.",
                "Hij is intussen ergens anders ingevuld, dus de antwoorden op deze pagina zijn niet bewaard. Open de link die u kreeg opnieuw om verder te gaan met wat er nog over is.",
            ),
            Msg::SessionGoneTitle => ("Your session has ended", "Uw sessie is afgelopen"),
            Msg::SessionGoneText => (
                "For your safety a session ends after a while, or when all questionnaires are done. To continue, open the link you were given again or ask for a new one.",
                "Voor uw veiligheid stopt een sessie na een tijd, of als alle vragenlijsten klaar zijn. Open de link die u kreeg opnieuw of vraag een nieuwe aan om verder te gaan.",
            ),
            Msg::FormRefusedTitle => (
                "This form could not be accepted",
                "Dit formulier kon niet verwerkt worden",
            ),
            Msg::FormRefusedText => (
                "It did not come from this page as it was shown to you. Please go back, reload the page and try again.",
                "Het kwam niet van deze pagina zoals die aan u werd getoond. Ga terug, laad de pagina opnieuw en probeer het nog eens.",
            ),
            Msg::NotAvailableTitle => (
                "This questionnaire is not available",
                "Deze vragenlijst is niet beschikbaar",
            ),
            Msg::NotAvailableText => (
                "It may have been filled out already, or its time may have passed.",
                "Misschien is hij al ingevuld, of is de tijd ervoor voorbij.",
            ),
            Msg::DoneTitle => ("Thank you", "Bedankt"),
            Msg::DoneText => (
                "Your answers have been saved. You can close this window.",
                "Uw antwoorden zijn opgeslagen. U kunt dit venster sluiten.",
            ),
            Msg::PausedTitle => (
                "Your answers so far have been saved",
                "Uw antwoorden tot nu toe zijn opgeslagen",
            ),
            Msg::PausedText => (
                "You can continue later with the same link.",
                "U kunt later verdergaan met dezelfde link.",
            ),
            Msg::NothingOpenTitle => (
                "There is nothing to fill out now",
                "Er is nu niets in te vullen",
            ),
            Msg::NothingOpenText => (
                "Everything has been filled out, or the next questionnaire is not open yet.",
                "Alles is ingevuld, of de volgende vragenlijst is nog niet open.",
            ),
            Msg::TooLargeTitle => ("This form was too large", "Dit formulier was te groot"),
            Msg::TooLargeText => (
                "Please go back, reload the page and try again.",
                "Ga terug, laad de pagina opnieuw en probeer het nog eens.",
            ),
            Msg::TooManyTitle => ("Too many attempts", "Te veel pogingen"),
            Msg::TooOftenText => (
                "This page was asked for too often in a short time. Please wait a few minutes and try again.",
                "Deze pagina is in korte tijd te vaak opgevraagd. Wacht een paar minuten en probeer het dan opnieuw.",
            ),
            Msg::TooManyText => (
                "Links that do not work were opened too often from this network. Please wait a few minutes and try again.",
                "Er zijn vanaf dit netwerk te vaak links geopend die niet werken. Wacht een paar minuten en probeer het dan opnieuw.",
            ),
            Msg::FailedTitle => ("Something went wrong", "Er ging iets mis"),
            Msg::FailedText => (
                "Your answers on this page may not have been saved. Please try again in a moment.",
                "Uw antwoorden op deze pagina zijn misschien niet opgeslagen. Probeer het over een moment nog eens.",
            ),
        };
        match lang {
            Lang::En => en,
            Lang::Nl => nl,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::questionnaire;

    fn questionnaire(language: &str, titles: &str) -> Questionnaire {
        let text = format!(
            "key = \"q\"\nname = \"Q\"\nshort_description = \"Q\"\nlanguage = \"{language}\"\nlicence = \"none\"\nscorer = \"q\"\n\
             [[questions]]\nkey = \"v_1\"\ntitle = {titles}\ntype = \"radio\"\noptions = [{{ key = \"a0\", value = 0, description = \"No\" }}]\n"
        );
        questionnaire::parse(&text, "q").expect("valid")
    }

    #[test]
    fn accept_language_is_ranked_by_quality_then_order() {
        assert_eq!(
            preferences("nl-NL,nl;q=0.9,en-US;q=0.8,en;q=0.7"),
            ["nl", "nl", "en", "en"]
        );
        assert_eq!(preferences("en;q=0.5, nl"), ["nl", "en"]);
        assert_eq!(preferences("nl;q=0, de, *"), ["de"]);
        assert_eq!(preferences("x1;q=2, ;q=1, nl;q=abc"), Vec::<String>::new());
    }

    #[test]
    fn the_browser_may_choose_a_language_the_questionnaire_is_written_in() {
        let bilingual = questionnaire("en", "{ en = \"Mood\", nl = \"Stemming\" }");
        assert_eq!(
            Lang::for_questionnaire(Some("nl-BE,en;q=0.5"), &bilingual),
            Lang::Nl
        );
        assert_eq!(Lang::for_questionnaire(None, &bilingual), Lang::En);
        let english_only = questionnaire("en", "\"Mood\"");
        assert_eq!(Lang::for_questionnaire(Some("nl"), &english_only), Lang::En);
        let dutch_only = questionnaire("nl", "\"Stemming\"");
        assert_eq!(Lang::for_questionnaire(Some("en"), &dutch_only), Lang::Nl);
        let german = questionnaire("de", "\"Stimmung\"");
        assert_eq!(Lang::for_questionnaire(Some("de"), &german), Lang::En);
        assert_eq!(Lang::for_browser(Some("fr, nl;q=0.3")), Lang::Nl);
        assert_eq!(Lang::for_browser(None), Lang::En);
    }
}
