//! A rating of 1 to 10 read from a model's probabilities instead of its generated digits.
//!
//! Both the embedded model and a server that returns `logprobs` answer a rating asked item
//! by item (`StructuredForm::Probabilities`) with the probability of each answer 1 to 10;
//! the rating is their expected value, rounded. The embedded model computes the
//! probabilities exactly from its logits; a server gives the top alternatives of each
//! generated token ([`TokenChoice`]), from which [`from_logprobs`] reads them.

/// The rating (the expected value over answers 1, 2, …, rounded) and the shares in
/// ten-thousandths.
pub fn expected_rating(p: &[f64]) -> (u8, Vec<u16>) {
    let expected: f64 = p.iter().enumerate().map(|(i, q)| (i + 1) as f64 * q).sum();
    let rating = expected.round().clamp(1.0, p.len().max(1) as f64) as u8;
    let shares = p.iter().map(|q| (q * 10_000.0).round().clamp(0.0, 10_000.0) as u16).collect();
    (rating, shares)
}

/// One generated token as a server reports it with `logprobs`: its text, and the most
/// likely tokens at its place with their natural-log probabilities (the generated one
/// among them, or added).
#[derive(Clone, Debug, PartialEq)]
pub struct TokenChoice {
    /// The token generated.
    pub token: String,
    /// Its log probability.
    pub logprob: f64,
    /// The most likely tokens at this place, with their log probabilities.
    pub top: Vec<(String, f64)>,
}

/// The answer 1 to 10 a token opens: its leading digits after any whitespace, if they make
/// such a number.
fn number_of(token: &str) -> Option<u8> {
    let t = token.trim_start();
    let digits: String = t.chars().take_while(char::is_ascii_digit).collect();
    match digits.parse::<u8>() {
        Ok(n) if (1..=10).contains(&n) && !digits.starts_with('0') => Some(n),
        _ => None,
    }
}

/// The probabilities of the answers 1 to 10 at the first generated token that opens a
/// number (`{"rating": 7}`, `7`, `Rating: 7/10` all work), from the alternatives the
/// server listed there, normalised over the answers among them. An alternative "1" counts
/// towards 10 as much as the next token's alternatives begin with "0" when "1" is what was
/// generated; otherwise (the server listing no continuation of it) it counts as 1. `None`
/// when no generated token opens a number or no alternative is an answer.
pub fn from_logprobs(tokens: &[TokenChoice]) -> Option<Vec<f64>> {
    let at = tokens
        .iter()
        .position(|t| t.token.trim_start().starts_with(|c: char| c.is_ascii_digit()))?;
    let here = &tokens[at];
    let mut alternatives: Vec<(String, f64)> = here.top.clone();
    if !alternatives.iter().any(|(t, _)| *t == here.token) {
        alternatives.push((here.token.clone(), here.logprob));
    }
    let mut p = vec![0.0f64; 10];
    let mut one = 0.0f64;
    for (token, logprob) in &alternatives {
        let q = logprob.exp();
        if !q.is_finite() {
            continue;
        }
        match number_of(token) {
            Some(1) if token.trim() == "1" => one += q,
            Some(n) => p[usize::from(n) - 1] += q,
            None => {}
        }
    }
    // How likely "1" goes on to "10", known only when "1" was generated.
    let onward = match tokens.get(at + 1) {
        Some(next) if here.token.trim() == "1" => {
            let mut listed = next.top.clone();
            if !listed.iter().any(|(t, _)| *t == next.token) {
                listed.push((next.token.clone(), next.logprob));
            }
            listed
                .iter()
                .filter(|(t, _)| t.starts_with('0'))
                .map(|(_, l)| l.exp())
                .filter(|q| q.is_finite())
                .sum::<f64>()
                .clamp(0.0, 1.0)
        }
        _ => 0.0,
    };
    p[0] += one * (1.0 - onward);
    p[9] += one * onward;
    let total: f64 = p.iter().sum();
    if !(total.is_finite() && total > 0.0) {
        return None;
    }
    Some(p.into_iter().map(|q| q / total).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn choice(token: &str, top: &[(&str, f64)]) -> TokenChoice {
        let top: Vec<(String, f64)> = top.iter().map(|(t, q)| ((*t).to_owned(), q.ln())).collect();
        let logprob = top.iter().find(|(t, _)| t == token).map_or(f64::NEG_INFINITY, |x| x.1);
        TokenChoice { token: token.to_owned(), logprob, top }
    }

    #[test]
    fn the_rating_is_read_at_the_first_number_and_weighs_every_listed_answer() {
        // {"rating": 7} with 7 at 0.6, 6 at 0.3, 8 at 0.05, and a non-answer at 0.05.
        let tokens = vec![
            choice("{\"", &[("{\"", 1.0)]),
            choice("rating", &[("rating", 1.0)]),
            choice("\":", &[("\":", 1.0)]),
            choice(" 7", &[(" 7", 0.6), (" 6", 0.3), (" 8", 0.05), (" \"", 0.05)]),
            choice("}", &[("}", 1.0)]),
        ];
        let p = from_logprobs(&tokens).unwrap();
        assert!((p[6] - 0.6 / 0.95).abs() < 1e-9, "{p:?}");
        assert!((p[5] - 0.3 / 0.95).abs() < 1e-9);
        assert!((p.iter().sum::<f64>() - 1.0).abs() < 1e-9);
        // 7·0.632 + 6·0.316 + 8·0.053 = 6.74: rounded to 7, shares in ten-thousandths.
        let (rating, shares) = expected_rating(&p);
        assert_eq!(rating, 7);
        assert_eq!(shares[6], 6316);
    }

    #[test]
    fn a_generated_one_goes_on_to_ten_as_the_next_token_says() {
        let tokens =
            vec![choice("1", &[("1", 0.8), ("9", 0.2)]), choice("0", &[("0", 0.75), ("}", 0.25)])];
        let p = from_logprobs(&tokens).unwrap();
        assert!((p[9] - 0.6).abs() < 1e-9, "10 is 0.8 × 0.75: {p:?}");
        assert!((p[0] - 0.2).abs() < 1e-9);
        assert!((p[8] - 0.2).abs() < 1e-9);
        // A whole "10" token counts as 10; "1" not generated counts as 1.
        let p = from_logprobs(&[choice("10", &[("10", 0.5), ("1", 0.25), ("9", 0.25)])]).unwrap();
        let near = |a: f64, b: f64| (a - b).abs() < 1e-9;
        assert!(near(p[9], 0.5) && near(p[0], 0.25) && near(p[8], 0.25), "{p:?}");
    }

    #[test]
    fn no_number_or_no_listed_answer_gives_no_rating() {
        assert_eq!(from_logprobs(&[choice("high", &[("high", 1.0)])]), None);
        assert_eq!(from_logprobs(&[]), None);
        // A number out of range generated, and no answer among the alternatives.
        assert_eq!(from_logprobs(&[choice("42", &[("42", 0.9), ("0", 0.1)])]), None);
    }
}
