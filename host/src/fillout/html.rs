//! HTML written by hand, escaped by default: markup goes in only as
//! `&'static str` (text of this program), everything else through
//! [`Html::text`] or [`Html::attr`], which escape it. So no text from a
//! definition, a response or a request can become markup.

/// A page being written.
#[derive(Debug, Default)]
pub struct Html(String);

impl Html {
    pub fn new() -> Html {
        Html(String::with_capacity(8 * 1024))
    }

    /// Markup, as written in this program.
    pub fn raw(&mut self, markup: &'static str) -> &mut Html {
        self.0.push_str(markup);
        self
    }

    /// Text, escaped.
    pub fn text(&mut self, text: &str) -> &mut Html {
        escape_into(text, &mut self.0);
        self
    }

    /// ` name="value"`, the value escaped.
    pub fn attr(&mut self, name: &'static str, value: &str) -> &mut Html {
        self.0.push(' ');
        self.0.push_str(name);
        self.0.push_str("=\"");
        escape_into(value, &mut self.0);
        self.0.push('"');
        self
    }

    /// A number, as text.
    pub fn number(&mut self, n: impl std::fmt::Display) -> &mut Html {
        // Digits need no escaping, but go through the same door.
        self.text(&n.to_string())
    }

    pub fn finish(self) -> String {
        self.0
    }
}

/// Escapes the five characters that matter in text and in quoted
/// attribute values.
fn escape_into(text: &str, out: &mut String) {
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_and_attributes_are_escaped_markup_is_not() {
        let mut h = Html::new();
        h.raw("<p").attr("title", "\"><script>").raw(">");
        h.text("<b>Tom & 'Jerry'</b>").raw("</p>");
        assert_eq!(
            h.finish(),
            "<p title=\"&quot;&gt;&lt;script&gt;\">&lt;b&gt;Tom &amp; &#39;Jerry&#39;&lt;/b&gt;</p>"
        );
    }
}
